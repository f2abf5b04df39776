"""Read-only front ends (``coind -frontend``) and a node's -rpcworkers, as real processes:
answers byte-identical to the writer's, commits followed (never ahead, reorgs seen),
calls forwarded after the front end's own credential check, the writer down, and the
workers' life cycle (restarted when killed, none left after kill -9 or ``stop``)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import tempfile
import time
from typing import List, Tuple

from twisted.trial.unittest import SynchronousTestCase

from tests.frontendharness import (
    FRONTEND_MARK, FrontendProcess, alive, children, wait_for, wait_for_workers,
)
from tests.functional import test_rest, test_rpc
from tests.inprocess import NodeTestCase, prepared
from tests.nodeharness import MINER_ADDRESS, NodeProcess, shared_fixture
from tests.prepared import copy_datadir

#: The writer's options: a transaction index, and a commit at every new tip.
WRITER_ARGS = ("-txindex", "-servefrontends=1", "-listen=0")


def rest(node, path: str) -> Tuple[int, str, bytes]:
    status, headers, body = node.post(b"", path=path, method="GET", auth=False)
    return status, headers.get("content-type", ""), body


def rpc_raw(node, body: bytes, path: str = "/") -> Tuple[int, bytes]:
    status, _, data = node.post(body, path=path)
    return status, data


def call(method: str, *params) -> bytes:
    return json.dumps({"method": method, "params": list(params), "id": 7}).encode()


def without_frontend_fields(info: dict) -> dict:
    """getblockchaininfo (or chaininfo.json) of a front end of a primary, as its writer's."""
    assert info.pop("frontend") is True
    assert info.pop("frontend_lag") == 0
    return info


def without_frontend_field(body: bytes) -> dict:
    reply = json.loads(body)
    without_frontend_fields(reply["result"])
    return reply


class FrontendTestCase(SynchronousTestCase):
    def start_writer(self, *args: str, blocks: int = 0) -> NodeProcess:
        writer = NodeProcess.start(self.mktemp(), WRITER_ARGS + args)
        self.addCleanup(writer.kill)
        if blocks:
            writer.rpc("generatetoaddress", blocks, MINER_ADDRESS)
        return writer

    def start_frontend(self, writer: NodeProcess, *args: str, **kwargs) -> FrontendProcess:
        frontend = FrontendProcess.start_for(writer, ("-txindex",) + args, **kwargs)
        self.addCleanup(frontend.kill)
        return frontend


class AnswersTests(FrontendTestCase):
    """The same requests, byte for byte the same answers (the writer's own, or forwarded)."""

    def test_rpc_and_rest_match_the_writer(self) -> None:
        writer = self.start_writer()
        writer.rpc("generatetoaddress", 101, writer.rpc("getnewaddress"))
        pooled = writer.rpc("sendtoaddress", MINER_ADDRESS, 1)  # stays in the mempool
        frontend = self.start_frontend(writer)
        tip = writer.rpc("getbestblockhash")
        wait_for(lambda: frontend.rpc("getbestblockhash") == tip)
        h2 = writer.rpc("getblockhash", 2)
        coinbase = writer.rpc("getblock", h2)["tx"][0]
        bodies: List[bytes] = [
            call("getbestblockhash"), call("getblockcount"), call("getblockhash", 2),
            call("getblockhash", 999), call("getblock", h2), call("getblock", h2, 0),
            call("getblock", h2, 2), call("getblock", "00" * 32), call("getblockheader", h2),
            call("getblockheader", h2, False), call("getchaintips"), call("getdifficulty"),
            call("getrawtransaction", coinbase), call("getrawtransaction", coinbase, True),
            call("getrawtransaction", pooled, True), call("getrawtransaction", "11" * 32),
            call("getmempoolinfo"), call("getrawmempool"), call("getblockcount", "x"),
            b'[' + call("getblockcount") + b',' + call("getblockhash", 1) + b']',
            b'[' + call("getblockcount") + b',' + call("getmempoolinfo") + b']',
            b'{"method": "nosuchmethod"}', b'{"method":', b'[]',
        ]
        for body in bodies:
            self.assertEqual(rpc_raw(frontend, body), rpc_raw(writer, body), body)
        paths = ["/rest/block/%s.json" % h2, "/rest/block/%s.hex" % h2,
                 "/rest/block/%s.bin" % h2, "/rest/block/notxdetails/%s.json" % tip,
                 "/rest/block/%s.json" % ("00" * 32), "/rest/block/xyz.json",
                 "/rest/headers/5/%s.json" % h2, "/rest/headers/1/%s.hex" % h2,
                 "/rest/tx/%s.json" % coinbase, "/rest/tx/%s.hex" % pooled,
                 "/rest/tx/%s.json" % ("11" * 32), "/rest/blockhashbyheight/2.json",
                 "/rest/blockhashbyheight/9999.json",
                 "/rest/getutxos/%s-0.json" % coinbase,
                 "/rest/getutxos/checkmempool/%s-0.json" % pooled,
                 "/rest/mempool/info.json", "/rest/mempool/contents.json", "/rest/nosuchpath"]
        for path in paths:
            self.assertEqual(rest(frontend, path), rest(writer, path), path)
        info = call("getblockchaininfo")
        self.assertEqual(without_frontend_field(rpc_raw(frontend, info)[1]),
                         json.loads(rpc_raw(writer, info)[1]))
        frontend_info = json.loads(rest(frontend, "/rest/chaininfo.json")[2])
        self.assertEqual(without_frontend_fields(frontend_info),
                         json.loads(rest(writer, "/rest/chaininfo.json")[2]))


class CommitTests(FrontendTestCase):
    def test_new_blocks_and_a_reorg_as_the_writer_commits_them(self) -> None:
        writer = self.start_writer(blocks=3)
        frontend = self.start_frontend(writer)
        self.assertEqual(frontend.rpc("getblockcount"), 3)
        seen = []
        for _ in range(10):
            new = writer.rpc("generatetoaddress", 1, MINER_ADDRESS)[0]
            # The writer answered once the block was committed: from then on the front end
            # answers with it (each request looks for a newer commit first).
            self.assertEqual(frontend.rpc("getbestblockhash"), new)
            self.assertIn(new.encode(), rest(frontend, "/rest/chaininfo.json")[2])
            seen.append(frontend.rpc("getblockcount"))
        self.assertEqual(seen, list(range(4, 14)))
        tip = writer.rpc("getbestblockhash")
        parent = writer.rpc("getblockhash", 12)
        writer.rpc("invalidateblock", tip)
        self.assertEqual(frontend.rpc("getbestblockhash"), parent)
        header = frontend.rpc("getblockheader", tip)
        self.assertEqual(header["confirmations"], -1)
        self.assertEqual([t["status"] for t in frontend.rpc("getchaintips")
                          if t["hash"] == tip], ["invalid"])
        writer.rpc("reconsiderblock", tip)
        self.assertEqual(frontend.rpc("getbestblockhash"), tip)
        self.assertEqual(frontend.rpc("getblockheader", tip)["confirmations"], 1)

    def test_a_tip_the_writer_has_not_committed_is_not_shown(self) -> None:
        # Without -servefrontends the writer commits at its periodic flush only: the front
        # end keeps showing the last commit.
        writer = NodeProcess.start(self.mktemp(), ("-listen=0",))
        self.addCleanup(writer.kill)
        frontend = self.start_frontend(writer)
        writer.rpc("generatetoaddress", 2, MINER_ADDRESS)
        time.sleep(0.3)  # many polls of the database
        self.assertEqual(frontend.rpc("getblockcount"), 0)
        self.assertEqual(writer.rpc("getblockcount"), 2)


class ForwardingTests(FrontendTestCase):
    def test_wallet_call_forwarded_after_the_front_ends_own_check(self) -> None:
        writer = self.start_writer()
        frontend = self.start_frontend(writer)
        address = frontend.rpc("getnewaddress", path="/wallet/")
        self.assertTrue(writer.rpc("getaddressinfo", address)["ismine"])
        self.assertEqual(frontend.rpc("listwallets"), [""])
        started = time.monotonic()
        bad = {"Authorization": "Basic dTp3cm9uZw=="}  # u:wrong
        status, headers, body = frontend.post(call("getwalletinfo"), headers=bad, auth=False)
        self.assertEqual((status, body), (401, b""))
        self.assertGreaterEqual(time.monotonic() - started, 0.25)
        self.assertIn("www-authenticate", headers)
        with open(os.path.join(writer.net_datadir, "debug.log")) as f:
            self.assertNotIn("Incorrect RPC password", f.read())

    def test_writer_down(self) -> None:
        writer = self.start_writer(blocks=2)
        frontend = self.start_frontend(writer)
        writer.stop()
        self.assertEqual(frontend.rpc("getblockcount"), 2)  # local: still answered
        status, body = rpc_raw(frontend, call("getmempoolinfo"))
        error = json.loads(body)["error"]
        self.assertEqual((status, error["code"]), (500, -28))
        self.assertIn("unreachable", error["message"])
        status, content_type, body = rest(frontend, "/rest/mempool/info.json")
        self.assertEqual((status, content_type), (503, "text/plain"))
        self.assertTrue(body.startswith(b"Service temporarily unavailable: "), body)

    def test_stop_on_a_stand_alone_front_end_stops_it_not_the_writer(self) -> None:
        writer = self.start_writer()
        frontend = self.start_frontend(writer)
        self.assertEqual(frontend.stop(), 0)
        self.assertEqual(writer.rpc("getblockcount"), 0)

    def test_cookie_authentication(self) -> None:
        writer = NodeProcess.start(self.mktemp(), WRITER_ARGS, credentials=None)
        self.addCleanup(writer.kill)
        frontend = self.start_frontend(writer, credentials=None)
        self.assertEqual(frontend.rpc("getblockcount"), 0)
        self.assertEqual(frontend.rpc("listwallets"), [""])


class WorkerTests(SynchronousTestCase):
    def start_node(self, workers: int = 2, *args: str) -> Tuple[NodeProcess, List[int]]:
        node = NodeProcess.start(self.mktemp(), ("-rpcworkers=%d" % workers, "-listen=0",
                                                 "-txindex") + args)
        self.addCleanup(node.kill)
        wait_for_workers(node, workers, lambda: True)
        return node, children(node.process.pid)

    def test_shared_port_answers_and_restart_and_stop(self) -> None:
        node, workers = self.start_node()
        for pid in workers:
            self.addCleanup(lambda pid=pid: alive(pid) and os.kill(pid, signal.SIGKILL))
        hashes = node.rpc("generatetoaddress", 2, MINER_ADDRESS)
        # Every process on the port answers the same (fresh connections spread over them).
        answers = [json.loads(rest(node, "/rest/chaininfo.json")[2]) for _ in range(40)]
        self.assertEqual({answer.pop("frontend", False) for answer in answers}, {True, False})
        self.assertEqual({answer.pop("frontend_lag", 0) for answer in answers}, {0})
        self.assertEqual({json.dumps(answer) for answer in answers}, {json.dumps(answers[0])})
        self.assertEqual(answers[0]["bestblockhash"], hashes[-1])
        self.assertEqual({node.rpc("getbestblockhash") for _ in range(40)}, {hashes[-1]})
        # Forwarded calls reach the node itself (its own loopback socket: through the shared
        # port a worker's call could land on a worker, which refuses the internal credential).
        self.assertEqual({node.rpc("getmempoolinfo")["size"] for _ in range(40)}, {0})
        os.kill(workers[0], signal.SIGKILL)
        wait_for(lambda: len(children(node.process.pid)) == 2
                 and workers[0] not in children(node.process.pid), what="restart")
        current = children(node.process.pid)
        self.assertEqual(node.stop(), 0)
        wait_for(lambda: not any(alive(pid) for pid in current), 15, "workers stopped")

    def test_whitelisted_users_through_workers(self) -> None:
        # The workers check the caller's whitelist; the node lets their credential through.
        node, _ = self.start_node(1, "-rpcwhitelist=u:uptime,getmempoolinfo,stop")
        for _ in range(30):  # fresh connections: the node and the worker both answer
            self.assertEqual(node.rpc("getmempoolinfo")["size"], 0)
            self.assertEqual(node.post(call("getnetworkinfo"))[0], 403)
            self.assertEqual(node.post(call("getblockcount"))[0], 403)

    def test_kill_9_of_the_node_leaves_no_worker(self) -> None:
        node, workers = self.start_node()
        node.process.send_signal(signal.SIGKILL)
        node.process.wait()
        wait_for(lambda: not any(alive(pid) for pid in workers), 15, "workers gone")


# ------------------------------------------------------------------ the recordings, again


class FrontendReplayTests(test_rpc.RecordingReplayTests):
    """The reference recordings replayed on a front end of the replay tests' node: local
    calls, forwarded ones (help, uptime, wallets) and the HTTP and credential rules."""

    def replayer(self) -> test_rpc.Replayer:
        if self._replayer is None:
            frontend = FrontendProcess.start_for(self.main_node(), test_rpc.MAIN_ARGS)
            self.addCleanup(frontend.kill)
            self._replayer = test_rpc.Replayer(frontend)
        return self._replayer


#: The REST tests' writer options (its prepared chain is built with them).
REST_WRITER_ARGS = ("-servefrontends=1",)


def _rest_frontend(source: str) -> Tuple[NodeProcess, FrontendProcess]:
    """A writer (coind) on a copy of the prepared datadir ``source``, and its front end."""
    datadir = tempfile.mkdtemp(prefix="coin-frontend-rest-")
    copy_datadir(source, datadir)
    writer = NodeProcess.start(datadir, REST_WRITER_ARGS)
    try:
        return writer, FrontendProcess.start_for(writer)
    except BaseException:
        writer.kill()
        raise


def _stop_rest_frontend(started: Tuple[NodeProcess, FrontendProcess]) -> None:
    for node in started:
        node.kill()
    shutil.rmtree(started[0].datadir, True)


class FrontendRESTTests(test_rest.RESTNodeTests):
    """The REST integration tests, each request sent to a front end of their node.

    The tests only read: one writer on a copy of their chain, and its front end, serve the
    whole class in each test process (two process starts, not two per test)."""

    def setUp(self) -> None:
        source, s = prepared(test_rest.chain, REST_WRITER_ARGS)
        _, frontend = shared_fixture(FrontendRESTTests, lambda: _rest_frontend(source),
                                     _stop_rest_frontend)
        self.spend, self.spent, self.block = s["spend"], s["spent"], s["block"]
        self.hashes = s["hashes"]
        self.pooled, self.pool_spent = s["pooled"], s["pool_spent"]
        self.node = frontend


class InProcessWorkerTests(NodeTestCase):
    def test_workers_of_a_node_on_port_0_share_the_port_it_got(self) -> None:
        before = set(children(os.getpid()))
        node = self.start_node("-rpcworkers=1", chain=True)
        wait_for(lambda: set(children(os.getpid())) - before, what="worker")
        worker = sorted(set(children(os.getpid())) - before)
        # The worker answers on the node's port once it is up (its answers carry the mark):
        # some fresh connections reach it, some the node, all with the node's tip.
        tip = node.rpc("getbestblockhash").encode()
        answers: List[bytes] = []
        wait_for(lambda: answers.append(rest(node, "/rest/chaininfo.json")[2])
                 or FRONTEND_MARK in answers[-1], 60, "an answer from the worker")
        answers += [rest(node, "/rest/chaininfo.json")[2] for _ in range(60)]
        self.assertEqual({FRONTEND_MARK in body for body in answers}, {True, False})
        self.assertTrue(all(tip in body for body in answers))
        self.assertEqual({node.rpc("getmempoolinfo")["size"] for _ in range(30)}, {0})
        self.assertEqual(node.stop(), 0)
        wait_for(lambda: not any(alive(p) for p in worker), 15, "worker stopped")
