"""Front ends on PostgreSQL: a writer and two ``coind -frontend`` processes, each with a data
directory of its own (as on other machines), reading one PostgreSQL database.  Answers
byte-identical to the writer's, a reorg seen by both, tips never backwards, and the
database stopped and restarted while they serve."""

from __future__ import annotations

import json
import threading
from typing import List, Tuple

from twisted.trial.unittest import SynchronousTestCase

from tests import pgserver
from tests.frontendharness import FrontendProcess, wait_for
from tests.functional.test_frontend import (
    WRITER_ARGS, call, rest, rpc_raw, without_frontend_field, without_frontend_fields,
)
from tests.nodeharness import MINER_ADDRESS, NodeProcess


class FrontendsOnPostgreSQLTests(SynchronousTestCase):
    skip = pgserver.skip_reason()

    def start(self, blocks: int = 0):
        """A writer on a fresh database of the test server, and two front ends of it."""
        url = pgserver.fresh_database()
        writer = NodeProcess.start(self.mktemp(), WRITER_ARGS + ("-dbengine=%s" % url,))
        self.addCleanup(writer.kill)
        if blocks:
            writer.rpc("generatetoaddress", blocks, MINER_ADDRESS)
        frontends = []
        for _ in range(2):
            frontend = FrontendProcess.start_for(writer, ("-txindex", "-dbengine=%s" % url),
                                                 datadir=self.mktemp())
            self.addCleanup(frontend.kill)
            frontends.append(frontend)
        return writer, frontends

    def test_two_front_ends_answer_as_the_writer_through_a_reorg(self) -> None:
        writer, frontends = self.start()
        writer.rpc("generatetoaddress", 101, writer.rpc("getnewaddress"))
        pooled = writer.rpc("sendtoaddress", MINER_ADDRESS, 1)
        writer.rpc("generatetoaddress", 1, MINER_ADDRESS)
        self.assert_same_answers(writer, frontends, pooled)
        # A reorg in the middle: the tip invalidated, a longer branch mined on its parent.
        old_tip = writer.rpc("getbestblockhash")
        writer.rpc("invalidateblock", old_tip)
        branch = writer.rpc("generatetoaddress", 3, writer.rpc("getnewaddress"))
        for frontend in frontends:
            self.assertEqual(frontend.rpc("getbestblockhash"), branch[-1])
            self.assertEqual(frontend.rpc("getblockheader", old_tip)["confirmations"], -1)
            self.assertEqual([t["status"] for t in frontend.rpc("getchaintips")
                              if t["hash"] == old_tip], ["invalid"])
        self.assert_same_answers(writer, frontends, pooled)

    def assert_same_answers(self, writer: NodeProcess, frontends: List[FrontendProcess],
                            txid: str) -> None:
        tip = writer.rpc("getbestblockhash")
        h2 = writer.rpc("getblockhash", 2)
        bodies = [call("getbestblockhash"), call("getblockcount"), call("getblock", tip),
                  call("getblock", h2, 0), call("getblock", tip, 2), call("getblockheader", tip),
                  call("getchaintips"), call("getdifficulty"), call("getrawtransaction", txid),
                  call("getrawtransaction", txid, True), call("getblockhash", 102),
                  call("getblock", "00" * 32)]
        paths = ["/rest/block/%s.json" % tip, "/rest/block/%s.bin" % h2,
                 "/rest/headers/5/%s.json" % h2, "/rest/tx/%s.hex" % txid,
                 "/rest/blockhashbyheight/1.json", "/rest/getutxos/%s-0.json" % txid]
        info = call("getblockchaininfo")
        for frontend in frontends:
            for body in bodies:
                self.assertEqual(rpc_raw(frontend, body), rpc_raw(writer, body), body)
            for path in paths:
                self.assertEqual(rest(frontend, path), rest(writer, path), path)
            self.assertEqual(without_frontend_field(rpc_raw(frontend, info)[1]),
                             json.loads(rpc_raw(writer, info)[1]))
            self.assertEqual(without_frontend_fields(json.loads(rest(
                frontend, "/rest/chaininfo.json")[2])),
                json.loads(rest(writer, "/rest/chaininfo.json")[2]))

    def test_tips_never_go_backwards_while_the_writer_mines(self) -> None:
        writer, frontends = self.start(blocks=1)
        heights: List[List[int]] = [[], []]
        done = threading.Event()

        def watch(i: int) -> None:
            while not done.is_set():
                heights[i].append(frontends[i].rpc("getblockcount"))

        threads = [threading.Thread(target=watch, args=(i,)) for i in range(2)]
        for thread in threads:
            thread.start()
        try:
            for _ in range(15):
                writer.rpc("generatetoaddress", 1, MINER_ADDRESS)
        finally:
            done.set()
            for thread in threads:
                thread.join()
        for seen in heights:
            self.assertEqual(seen, sorted(seen))
            self.assertLessEqual(seen[-1], 16)
        for frontend in frontends:
            self.assertEqual(frontend.rpc("getblockcount"), 16)


class DatabaseRestartTests(SynchronousTestCase):
    """A server of the test's own, stopped and started again while front ends serve."""

    skip = pgserver.skip_reason()

    def start_writer(self) -> Tuple[pgserver.PostgresServer, str, NodeProcess]:
        server = pgserver.own_server(self)
        url = server.url("chain")
        writer = NodeProcess.start(self.mktemp(), WRITER_ARGS + ("-dbengine=%s" % url,))
        self.addCleanup(writer.kill)
        writer.rpc("generatetoaddress", 3, MINER_ADDRESS)
        return server, url, writer

    def test_front_ends_answer_28_and_503_until_the_database_returns(self) -> None:
        server, url, writer = self.start_writer()
        frontends = [FrontendProcess.start_for(writer, ("-dbengine=%s" % url,),
                                               datadir=self.mktemp()) for _ in range(2)]
        for frontend in frontends:
            self.addCleanup(frontend.kill)
        block = writer.rpc("getblockhash", 2)
        answers = {f.rpcport: (rpc_raw(f, call("getblock", block)),
                               rest(f, "/rest/block/%s.json" % block)) for f in frontends}
        server.pause()
        for frontend in frontends:
            for body in (call("getblock", block), call("getblockcount")):
                status, data = rpc_raw(frontend, body)
                self.assertEqual((status, json.loads(data)["error"]["code"]), (500, -28), body)
            status, content_type, data = rest(frontend, "/rest/block/%s.json" % block)
            self.assertEqual((status, content_type), (503, "text/plain"))
            self.assertEqual(data, b"Service temporarily unavailable: chain database unreachable"
                                   b"\r\n")
        server.resume()
        for frontend in frontends:
            wait_for(lambda: rpc_raw(frontend, call("getblockcount"))[0] == 200,
                     what="the front end serving again")
            self.assertEqual((rpc_raw(frontend, call("getblock", block)),
                              rest(frontend, "/rest/block/%s.json" % block)),
                             answers[frontend.rpcport])
            self.assertIsNone(frontend.process.poll())

    def test_the_writer_fails_without_the_database_and_carries_on_once_it_returns(self) -> None:
        server, url, writer = self.start_writer()
        utxos = writer.rpc("gettxoutsetinfo")
        server.pause()
        status, data = rpc_raw(writer, call("generatetoaddress", 1, MINER_ADDRESS))
        self.assertEqual(status, 500, data)
        server.resume()
        # Its lookup, record and lock connections were ended by the restart: new ones.
        mined = writer.rpc("generatetoaddress", 2, MINER_ADDRESS)
        self.assertEqual(writer.rpc("getblockcount"), 5)
        self.assertNotEqual(writer.rpc("gettxoutsetinfo")["hash_serialized_2"],
                            utxos["hash_serialized_2"])
        # It holds the writer's lock again: a second writer on the database is refused.
        second = NodeProcess.start(self.mktemp(), ("-dbengine=%s" % url, "-listen=0"), wait=False)
        self.addCleanup(second.kill)
        self.assertEqual(second.process.wait(60), 1)
        self.assertIn("Cannot obtain a lock on PostgreSQL database", second.stderr_text())
        # What it committed is consistent: the same chain and UTXO set after a restart.
        utxos = writer.rpc("gettxoutsetinfo")
        utxos.pop("disk_size")  # the server's own bookkeeping may differ
        self.assertEqual(writer.stop(), 0)
        writer = NodeProcess.start(writer.datadir, WRITER_ARGS + ("-dbengine=%s" % url,))
        self.addCleanup(writer.kill)
        self.assertEqual(writer.rpc("getbestblockhash"), mined[-1])
        after = writer.rpc("gettxoutsetinfo")
        after.pop("disk_size")
        self.assertEqual(after, utxos)


class ReplicaTests(SynchronousTestCase):
    """A front end on a streaming replica: never ahead of the writer, its lag reported."""

    skip = pgserver.skip_reason()

    def test_front_end_on_a_lagging_replica_reports_its_lag(self) -> None:
        primary = pgserver.own_server(self)
        writer = NodeProcess.start(self.mktemp(), WRITER_ARGS + (
            "-dbengine=%s" % primary.url("chain"),))
        self.addCleanup(writer.kill)
        writer.rpc("generatetoaddress", 2, MINER_ADDRESS)
        replica = pgserver.PostgresServer()
        replica.start_replica_of(primary)
        self.addCleanup(replica.stop)
        on_primary, on_replica = [
            FrontendProcess.start_for(writer, ("-dbengine=%s" % server.url("chain"),),
                                      datadir=self.mktemp()) for server in (primary, replica)]
        for frontend in (on_primary, on_replica):
            self.addCleanup(frontend.kill)

        def info(frontend: FrontendProcess) -> dict:
            return frontend.rpc("getblockchaininfo")

        # A commit streamed and replayed (the lag is measured from the last one replayed).
        writer.rpc("generatetoaddress", 1, MINER_ADDRESS)
        wait_for(lambda: info(on_replica)["blocks"] == 3, what="the replica's copy")
        self.assertEqual(info(on_replica)["frontend_lag"], 0)
        replica.execute("SELECT pg_wal_replay_pause()")
        mined = writer.rpc("generatetoaddress", 2, MINER_ADDRESS)
        wait_for(lambda: info(on_replica)["frontend_lag"] > 0, what="a lag")
        chaininfo = json.loads(rest(on_replica, "/rest/chaininfo.json")[2])
        self.assertGreater(chaininfo["frontend_lag"], 0)
        self.assertEqual(chaininfo["blocks"], 3)  # the replica's commit, never the writer's
        self.assertEqual(info(on_primary)["frontend_lag"], 0)
        self.assertEqual(on_primary.rpc("getbestblockhash"), mined[-1])
        replica.execute("SELECT pg_wal_replay_resume()")
        wait_for(lambda: on_replica.rpc("getbestblockhash") == mined[-1], what="replay")
        wait_for(lambda: info(on_replica)["frontend_lag"] == 0, what="no lag")
