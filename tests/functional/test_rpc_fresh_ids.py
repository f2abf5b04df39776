"""Chain-only calls with a new id on every request (as python-bitcoinrpc and bitcoin-core on
npm send them), over kept-alive connections to a real ``coind``: each answer carries its own
id, byte for byte as written, different parameters never share an answer, and answers follow
new blocks, invalidateblock and a reorg at once; with ``-rpcworkers=1`` too, where a front
end must never give an answer older than the node's last block."""

from __future__ import annotations

import base64
import http.client
import itertools
import json
from typing import Any, List

from twisted.trial.unittest import SynchronousTestCase

from tests.frontendharness import wait_for_workers
from tests.nodeharness import MINER_ADDRESS, PASSWORD, USER, NodeProcess

AUTHORIZATION = "Basic " + base64.b64encode(("%s:%s" % (USER, PASSWORD)).encode()).decode()
#: Ids as clients write them, and as the answer prints them (as Core: the same text, but an
#: escape of printable text is printed as UTF-8).
IDS = [("1", "1"), ("-7", "-7"), ("0", "0"), ('"abc"', '"abc"'), ('"a b-c_1"', '"a b-c_1"'),
       ("123456789012345678", "123456789012345678"), ('"\\u00e9"', '"\u00e9"'),
       ("1.50", "1.50"), ("null", "null"), ('{"k":[1,"x"]}', '{"k":[1,"x"]}')]


class Client:
    """Kept-alive connections that send each request with a new id, in turn."""

    def __init__(self, node: NodeProcess, connections: int = 1) -> None:
        self._connections = [http.client.HTTPConnection("127.0.0.1", node.rpcport, timeout=60)
                             for _ in range(connections)]
        self._turn = itertools.cycle(self._connections)
        self._ids = itertools.count(1)

    def close(self) -> None:
        for connection in self._connections:
            connection.close()

    def raw(self, method: str, params: List[Any], request_id: str | None = None) -> bytes:
        """The answer's bytes; ``request_id`` (JSON text) or the next number as the id."""
        request_id = request_id if request_id is not None else str(next(self._ids))
        body = '{"method":"%s","params":%s,"id":%s}' % (method, json.dumps(params), request_id)
        connection = next(self._turn)
        connection.request("POST", "/", body=body.encode(),
                           headers={"Authorization": AUTHORIZATION})
        response = connection.getresponse()
        return response.read()

    def result(self, method: str, *params: Any) -> Any:
        return json.loads(self.raw(method, list(params)))["result"]


class FreshIdTestCase(SynchronousTestCase):
    workers = 0

    def setUp(self) -> None:
        args = ["-listen=0"] + (["-rpcworkers=%d" % self.workers] if self.workers else [])
        self.node = NodeProcess.start(self.mktemp(), args)
        self.addCleanup(self.node.kill)
        self.node.rpc("generatetoaddress", 5, MINER_ADDRESS)
        wait_for_workers(self.node, self.workers, lambda: self.node.rpc("getblockcount") == 5)
        self.client = Client(self.node, connections=4)
        self.addCleanup(self.client.close)

    def test_each_answer_carries_its_own_id(self) -> None:
        expected = self.node.rpc("getblockhash", 3)
        for _ in range(3):  # the first asks, the second keeps, the third on answer kept ones
            for request_id, printed in IDS:
                body = self.client.raw("getblockhash", [3], request_id)
                self.assertEqual(body, b'{"result":"%s","error":null,"id":%s}\n'
                                 % (expected.encode(), printed.encode("utf-8")))

    def test_different_params_do_not_share_answers(self) -> None:
        hashes = [self.node.rpc("getblockhash", height) for height in range(6)]
        for _ in range(4):
            self.assertEqual([self.client.result("getblockhash", h) for h in range(6)], hashes)
        out_of_range = json.loads(self.client.raw("getblockhash", [6]))
        self.assertEqual(out_of_range["error"], {"code": -8, "message": "Block height out of range"})
        self.assertEqual(json.loads(self.client.raw("getblockhash", ["3"]))["error"]["code"], -1)

    def test_answers_follow_new_blocks_invalidateblock_and_a_reorg(self) -> None:
        for _ in range(3):
            tip = self.node.rpc("generatetoaddress", 1, MINER_ADDRESS)[0]
            # Every connection (each process on the port, with workers) asked several times.
            for _ in range(12):
                self.assertEqual(self.client.result("getbestblockhash"), tip)
                self.assertEqual(self.client.result("getblockcount"), self.node.rpc("getblockcount"))
        height = self.node.rpc("getblockcount")
        parent = self.node.rpc("getblockhash", height - 1)
        self.node.rpc("invalidateblock", tip)
        for _ in range(12):
            self.assertEqual(self.client.result("getbestblockhash"), parent)
            self.assertIsNone(self.client.result("getblockhash", height))
        # A reorg: another branch, longer than the invalidated one.
        branch = self.node.rpc("generatetoaddress", 2, self.node.rpc("getnewaddress"))
        for _ in range(12):
            self.assertEqual(self.client.result("getbestblockhash"), branch[-1])
            self.assertEqual(self.client.result("getblockhash", height), branch[0])


class FreshIdWorkerTests(FreshIdTestCase):
    """The same through ``-rpcworkers=1``: the node and its front end share the port."""

    workers = 1
