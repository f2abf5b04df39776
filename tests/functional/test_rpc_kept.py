"""Kept answers of chain-only calls never outlive the chain they were computed from.

A call of ``getbestblockhash``, ``getblockcount``, ``getblockhash`` or ``getdifficulty`` is
answered from the core's answer cache once seen (the same method and parameters, whatever
the id), and a repeat on a kept-alive connection, of the very same request bytes or of the
same call with a new id, from the channel's kept answers, unparsed (doc/rpc.md, "Kept
answers"). They must give what the general path gives at every moment: after a new block,
``invalidateblock``, ``reconsiderblock`` and a reorg to another branch, on the node itself
and on a front end right after the writer answered (its freshness rule, doc/frontend.md).
Each answer is compared with the same call with named parameters (never kept, so answered
the general way).
"""

from __future__ import annotations

import base64
import itertools
import json
import socket
from typing import Any, Tuple

from twisted.trial.unittest import SynchronousTestCase

from coin.chainparams import REGTEST
from coin.primitives.address import Destination, encode_address
from coin.primitives.hashes import hash160
from coin.testing.chainbuilder import deterministic_key
from tests.frontendharness import FrontendProcess
from tests.nodeharness import MINER_ADDRESS, PASSWORD, USER, NodeProcess

#: Another address: blocks mined to it differ from MINER_ADDRESS's at the same heights.
OTHER_ADDRESS = encode_address(Destination("pubkeyhash", hash160(
    deterministic_key("kept answers branch").public_key.format())), REGTEST)
CHAIN_ONLY = ("getbestblockhash", "getblockcount", "getdifficulty")


class KeepAliveClient:
    """One kept-alive HTTP/1.1 connection sending raw JSON-RPC POSTs, as a poller does."""

    def __init__(self, port: int) -> None:
        self._socket = socket.create_connection(("127.0.0.1", port), timeout=30)
        self._buffer = b""
        credential = base64.b64encode(("%s:%s" % (USER, PASSWORD)).encode())
        self._head = (b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Basic " + credential
                      + b"\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n")

    def close(self) -> None:
        self._socket.close()

    def raw(self, body: bytes) -> Tuple[bytes, bytes]:
        """The response's head (without its Date and Content-Length lines) and body to
        ``body``."""
        return self._exchange(self._head % len(body) + body)

    def get(self, path: str, extra: bytes = b"") -> Tuple[bytes, bytes]:
        """The same for a GET of ``/rest/<path>`` (``extra``: header lines)."""
        return self._exchange(b"GET /rest/%s HTTP/1.1\r\nHost: 127.0.0.1\r\n%s\r\n"
                              % (path.encode(), extra))

    def _exchange(self, request: bytes) -> Tuple[bytes, bytes]:
        self._socket.sendall(request)
        while b"\r\n\r\n" not in self._buffer:
            self._read()
        head, self._buffer = self._buffer.split(b"\r\n\r\n", 1)
        lines = head.split(b"\r\n")
        length = next(int(line.split(b":")[1]) for line in lines
                      if line.lower().startswith(b"content-length:"))
        while len(self._buffer) < length:
            self._read()
        body, self._buffer = self._buffer[:length], self._buffer[length:]
        return b"\r\n".join(line for line in lines
                           if not line.startswith((b"Date: ", b"Content-Length: "))), body

    def _read(self) -> None:
        data = self._socket.recv(65536)
        if not data:
            raise ConnectionError("the server closed the connection")
        self._buffer += data


def body(method: str, params: Any, request_id: Any = 1) -> bytes:
    return json.dumps({"method": method, "params": params, "id": request_id}).encode()


class KeptAnswerTestCase(SynchronousTestCase):
    _ids = itertools.count(100)

    def start_writer(self) -> NodeProcess:
        writer = NodeProcess.start(self.mktemp(), ("-listen=0", "-servefrontends=1", "-rest"))
        self.addCleanup(writer.kill)
        writer.rpc("generatetoaddress", 5, MINER_ADDRESS)
        return writer

    def connect(self, node: NodeProcess) -> KeepAliveClient:
        client = KeepAliveClient(node.rpcport)
        self.addCleanup(client.close)
        return client

    def assert_current(self, client: KeepAliveClient, other: KeepAliveClient,
                       heights: range, expected_tip: str) -> None:
        """REST first (:meth:`assert_rest_current`: right after the writer answered, as a
        client would ask), then each chain-only call, sent three times with the same bytes
        (the first may be new to the node; the others are repeats), then three times with
        new ids, answers what the same call with named parameters (the general path)
        answers."""
        self.assert_rest_current(client, other, heights, expected_tip)
        calls = [(method, []) for method in CHAIN_ONLY] + [
            ("getblockhash", [height]) for height in heights]
        for method, params in calls:
            request = body(method, params)
            answers = {client.raw(request) for _ in range(3)}
            self.assertEqual(len(answers), 1, (method, params, answers))
            (head, answer), = answers
            named = {"height": params[0]} if params else {}
            general_head, general = other.raw(body(method, named, "general"))
            self.assertEqual(head, general_head)
            expected = json.loads(general)
            self.assertEqual(json.loads(answer), {**expected, "id": 1}, (method, params))
            for request_id in (next(self._ids), "new-%d" % next(self._ids), next(self._ids)):
                new_head, new = client.raw(body(method, params, request_id))
                self.assertEqual(new_head, head)
                self.assertEqual(new, answer.replace(b'"id":1}', b'"id":%s}' % json.dumps(
                    request_id).encode()), (method, params, request_id))
        tip = json.loads(client.raw(body("getbestblockhash", []))[1])["result"]
        self.assertEqual(tip, expected_tip)

    def assert_rest_current(self, client: KeepAliveClient, other: KeepAliveClient,
                            heights: range, expected_tip: str) -> None:
        """The same for REST paths that read the chain (and the node's status): each sent
        three times with the same bytes answers what the same path with other bytes (a new
        header line each time: never a repeat) answers."""
        genesis = REGTEST.genesis.hash_hex
        paths = ["chaininfo.json", "headers/20/%s.json" % genesis] + [
            "blockhashbyheight/%d.json" % height for height in heights]
        for path in paths:
            answers = {_without_lag(client.get(path)) for _ in range(3)}
            self.assertEqual(len(answers), 1, (path, answers))
            general = _without_lag(other.get(path, b"X-General: %d\r\n" % next(self._ids)))
            self.assertEqual(answers, {general}, path)
        info = json.loads(client.get("chaininfo.json")[1])
        self.assertEqual(info["bestblockhash"], expected_tip)

    def follow_the_chain(self, writer: NodeProcess, reader: NodeProcess) -> None:
        """New blocks, invalidateblock, reconsiderblock and a reorg at the writer; after each,
        with no delay, ``reader``'s repeated requests answer the chain the writer answered."""
        client, other = self.connect(reader), self.connect(reader)
        self.assert_current(client, other, range(0, 8), writer.rpc("getbestblockhash"))
        new = writer.rpc("generatetoaddress", 1, MINER_ADDRESS)[0]
        self.assert_current(client, other, range(0, 8), new)
        parent = writer.rpc("getblockhash", 5)
        writer.rpc("invalidateblock", new)
        self.assert_current(client, other, range(0, 8), parent)
        writer.rpc("reconsiderblock", new)
        self.assert_current(client, other, range(0, 8), new)
        # A reorg: blocks 4.. replaced by a longer branch mined to another address.
        old_four = writer.rpc("getblockhash", 4)
        writer.rpc("invalidateblock", old_four)
        branch = writer.rpc("generatetoaddress", 4, OTHER_ADDRESS)
        self.assertNotEqual(branch[0], old_four)
        self.assert_current(client, other, range(0, 9), branch[-1])
        self.assertEqual(json.loads(client.raw(body("getblockhash", [4]))[1])["result"], branch[0])


def _without_lag(answer: Tuple[bytes, bytes]) -> Tuple[bytes, str]:
    """A REST answer's head and body, without a front end's lag (it moves with the clock)
    nor, then, the body's length."""
    head, data = answer
    if not data.startswith(b"{"):
        return head, data.decode()
    shown = json.loads(data)
    shown.pop("frontend_lag", None)
    return head, json.dumps(shown, sort_keys=True)


class WriterKeptAnswerTests(KeptAnswerTestCase):
    def test_repeated_requests_follow_the_chain(self) -> None:
        writer = self.start_writer()
        self.follow_the_chain(writer, writer)


class FrontendKeptAnswerTests(KeptAnswerTestCase):
    def test_a_front_end_never_repeats_an_answer_older_than_the_writers_commit(self) -> None:
        writer = self.start_writer()
        frontend = FrontendProcess.start_for(writer, ["-rest"])
        self.addCleanup(frontend.kill)
        tip = writer.rpc("getbestblockhash")
        for _ in range(200):
            if frontend.rpc("getbestblockhash") == tip:
                break
        self.follow_the_chain(writer, frontend)
