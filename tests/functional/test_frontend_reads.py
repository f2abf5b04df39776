"""Reads a front end serves from the writer's files and state, as real processes: REST
.hex/.bin of blocks (the stored bytes, through a reorg and after pruning), the block JSON
cache across a reorg, the writer's initial-block-download latch and warnings, and a
forwarded call meeting a writer connection that has just closed."""

from __future__ import annotations

import json
import socket
import socketserver
import struct
import threading
import time
from typing import List, Tuple

from coin.consensus.versionbits import VERSIONBITS_TOP_BITS
from tests.frontendharness import FrontendProcess, wait_for
from tests.functional.test_frontend import FrontendTestCase, rest
from tests.functional.test_notify import submit_versioned_block
from tests.nodeharness import MINER_ADDRESS, NodeClient, NodeProcess, RPCFailure

def raw_of(node: NodeClient, block_hash: str) -> bytes:
    return bytes.fromhex(node.rpc("getblock", block_hash, 0))


class RawBlockTests(FrontendTestCase):
    """.hex/.bin are the block file's bytes: Core's serialization, on the writer and on a
    front end, for blocks of the active chain and of a branch a reorg left behind."""

    def assert_raw(self, nodes: List[NodeClient], hashes: List[str], expected: dict) -> None:
        for node in nodes:
            for block_hash in hashes:
                raw = expected[block_hash]
                for _ in range(2):  # read, then (kept per hash) again
                    self.assertEqual(rest(node, "/rest/block/%s.bin" % block_hash),
                                     (200, "application/octet-stream", raw))
                    self.assertEqual(rest(node, "/rest/block/notxdetails/%s.hex" % block_hash),
                                     (200, "text/plain", raw.hex().encode() + b"\n"))

    def test_raw_blocks_and_json_through_a_reorg(self) -> None:
        writer = self.start_writer()
        writer.rpc("generatetoaddress", 101, writer.rpc("getnewaddress"))
        for _ in range(3):  # blocks with spends, not only coinbases
            writer.rpc("sendtoaddress", MINER_ADDRESS, 1)
            writer.rpc("generatetoaddress", 2, MINER_ADDRESS)
        frontend = self.start_frontend(writer)
        wait_for(lambda: frontend.rpc("getbestblockhash") == writer.rpc("getbestblockhash"))
        height = writer.rpc("getblockcount")
        old = [writer.rpc("getblockhash", h) for h in range(height + 1)]
        expected = {h: raw_of(writer, h) for h in old}
        self.assertEqual(len(writer.rpc("getblock", old[-2])["tx"]), 2)  # a spend
        self.assert_raw([writer, frontend], old, expected)
        # The block below the fork point: its JSON is kept for the tip, then must change.
        below = old[height - 3]
        before = [json.loads(rest(node, "/rest/block/%s.json" % below)[2])
                  for node in (writer, frontend)]
        self.assertEqual([info["nextblockhash"] for info in before], [old[height - 2]] * 2)

        writer.rpc("invalidateblock", old[height - 2])
        # Another miner's coinbases: the new branch's blocks differ from the old one's.
        new = writer.rpc("generatetoaddress", 4, writer.rpc("getnewaddress"))
        wait_for(lambda: frontend.rpc("getbestblockhash") == new[-1])
        expected.update({h: raw_of(writer, h) for h in new})
        # Blocks of the branch left behind stay readable, as in Core.
        self.assert_raw([writer, frontend], old + new, expected)
        for node in (writer, frontend):
            status, _, body = rest(node, "/rest/block/%s.json" % below)
            after = json.loads(body)
            self.assertEqual((status, after["nextblockhash"], after["confirmations"]),
                             (200, new[0], 5))
            self.assertEqual(after, writer.rpc("getblock", below, 2))

    def test_a_pruned_block_answers_cores_error_after_being_served(self) -> None:
        # No -txindex with -prune: the writer and front end are started here, not by
        # FrontendTestCase.
        writer = NodeProcess.start(self.mktemp(), ("-servefrontends=1", "-listen=0",
                                                   "-prune=1", "-blockfilesize=4000"))
        self.addCleanup(writer.kill)
        writer.rpc("generatetoaddress", 400, MINER_ADDRESS)  # the last 288 stay
        frontend = FrontendProcess.start_for(writer, ("-prune=1",))
        self.addCleanup(frontend.kill)
        wait_for(lambda: frontend.rpc("getblockcount") == 400)
        first = writer.rpc("getblockhash", 1)
        raw = raw_of(writer, first)
        for node in (writer, frontend):
            self.assertEqual(rest(node, "/rest/block/%s.bin" % first)[2], raw)
            self.assertEqual(rest(node, "/rest/block/%s.hex" % first)[2],
                             raw.hex().encode() + b"\n")
        self.assertEqual(writer.rpc("pruneblockchain", 100), 100)
        gone = (404, "text/plain", b"%s not available (pruned data)\r\n" % first.encode())
        wait_for(lambda: rest(frontend, "/rest/block/%s.bin" % first) == gone)
        for node in (writer, frontend):
            for fmt in ("bin", "hex", "json"):
                self.assertEqual(rest(node, "/rest/block/%s.%s" % (first, fmt)), gone)


class WriterStateTests(FrontendTestCase):
    """getblockchaininfo and chaininfo.json on a front end show the writer's latch and
    warnings, which the committed chain alone does not tell."""

    def chain_infos(self, frontend: NodeClient) -> List[dict]:
        return [frontend.rpc("getblockchaininfo"),
                json.loads(rest(frontend, "/rest/chaininfo.json")[2])]

    def test_initial_block_download_is_the_writers_latch(self) -> None:
        # The writer's clock ten days back: its new tip is recent to it (out of initial
        # download), ten days old to the front end's clock.
        writer = self.start_writer("-mocktime=%d" % (time.time() - 10 * 86400), blocks=2)
        self.assertIs(writer.rpc("getblockchaininfo")["initialblockdownload"], False)
        frontend = self.start_frontend(writer)
        wait_for(lambda: all(info["initialblockdownload"] is False
                             for info in self.chain_infos(frontend)), 10, "the writer's latch")

    def test_warnings_follow_the_writer(self) -> None:
        writer = self.start_writer(blocks=1)
        frontend = self.start_frontend(writer)
        self.assertEqual([info["warnings"] for info in self.chain_infos(frontend)], ["", ""])
        for _ in range(51):
            submit_versioned_block(writer, VERSIONBITS_TOP_BITS | 1 << 12)
        warning = writer.rpc("getblockchaininfo")["warnings"]
        self.assertIn("Unknown block versions being mined", warning)
        wait_for(lambda: [info["warnings"] for info in self.chain_infos(frontend)]
                 == [warning, warning], 10, "the writer's warnings")


class DroppingProxy(socketserver.ThreadingTCPServer):
    """Between a front end and its writer: passes requests on, except the first one that
    names ``method``, whose connection it resets unanswered, as a writer closing a kept-alive
    connection just as the request arrives does.  Counts the requests naming ``method``."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, writer_port: int, method: str) -> None:
        super().__init__(("127.0.0.1", 0), _ProxyHandler)
        self.writer_port = writer_port
        self.marker = b'"method": "%s"' % method.encode()
        self.seen = 0
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return "http://127.0.0.1:%d/" % self.server_address[1]


def _read_message(sock: socket.socket, buffered: bytes) -> Tuple[bytes, bytes]:
    """One HTTP message with a Content-Length body (or none): ``(message, rest)``."""
    data = buffered
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return b"", b""
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            return b"", b""
        body += chunk
    return head + b"\r\n\r\n" + body[:length], body[length:]


class _ProxyHandler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        proxy: DroppingProxy = self.server  # type: ignore[assignment]
        upstream = socket.create_connection(("127.0.0.1", proxy.writer_port))
        try:
            rest_of_client = rest_of_writer = b""
            while True:
                request, rest_of_client = _read_message(self.request, rest_of_client)
                if not request:
                    return
                if proxy.marker in request:
                    with proxy.lock:
                        proxy.seen += 1
                        drop = proxy.seen == 1
                    if drop:
                        self.request.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                                struct.pack("ii", 1, 0))
                        return  # closed with a reset, unanswered
                upstream.sendall(request)
                response, rest_of_writer = _read_message(upstream, rest_of_writer)
                self.request.sendall(response)
        finally:
            upstream.close()


class ForwardRetryTests(FrontendTestCase):
    """A forwarded call whose connection to the writer is reset before the answer: sent
    again on a new connection if it only reads, never if it may have run."""

    def proxied_frontend(self, writer: NodeClient, method: str) -> Tuple[NodeClient, DroppingProxy]:
        proxy = DroppingProxy(writer.rpcport, method)
        threading.Thread(target=proxy.serve_forever, daemon=True).start()
        self.addCleanup(proxy.server_close)
        self.addCleanup(proxy.shutdown)
        return self.start_frontend(writer, writer_url=proxy.url), proxy

    def test_a_read_only_call_is_sent_again(self) -> None:
        writer = self.start_writer(blocks=1)
        frontend, proxy = self.proxied_frontend(writer, "getmempoolinfo")
        self.assertEqual(frontend.rpc("getmempoolinfo"), writer.rpc("getmempoolinfo"))
        self.assertEqual(proxy.seen, 2)

    def test_a_call_that_may_have_run_is_not_sent_again(self) -> None:
        writer = self.start_writer(blocks=1)
        frontend, proxy = self.proxied_frontend(writer, "getnewaddress")
        with self.assertRaises(RPCFailure) as cm:
            frontend.rpc("getnewaddress")
        self.assertEqual(cm.exception.code, -28)
        self.assertIn("unreachable", cm.exception.message)
        self.assertEqual(proxy.seen, 1)
        frontend.rpc("getnewaddress")  # the next one goes through
        self.assertEqual(proxy.seen, 2)
