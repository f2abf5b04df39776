"""A writer on PostgreSQL whose server stops and starts again under it: its reads answer -28 /
503 meanwhile, its P2P intake pauses (one log line, no peer penalised) and resumes once the
server is back, and its transaction index carries on.  Real coind processes, a server of
the test's own, a peer node on loopback."""

from __future__ import annotations

import json
import os
import re
from typing import Tuple

from twisted.trial.unittest import SynchronousTestCase

from tests import pgserver
from tests.functional.test_frontend import WRITER_ARGS, call, rest, rpc_raw
from tests.functional.test_metrics import scrape, value
from tests.frontendharness import FrontendProcess
from tests.functional.test_p2p_base import debug_log, handshaked, wait_until
from tests.nodeharness import MINER_ADDRESS, NodeProcess, free_port

UNREACHABLE_BODY = b"Service temporarily unavailable: chain database unreachable\r\n"
LOST_LINE = re.compile(r"The chain database \S+ is unreachable")
BACK_LINE = re.compile(r"The chain database \S+ is reachable again")


def error_of(node: NodeProcess, body: bytes) -> Tuple[int, int, str]:
    status, data = rpc_raw(node, body)
    error = json.loads(data)["error"]
    return status, error["code"], error["message"]


def start_writer(test: SynchronousTestCase, *args: str
                 ) -> Tuple[pgserver.PostgresServer, NodeProcess]:
    """A writer (with REST) on an empty database of a server of ``test``'s own."""
    server = pgserver.own_server(test)
    writer = NodeProcess.start(test.mktemp(), WRITER_ARGS + (
        "-rest", "-dbengine=%s" % server.url("chain")) + args)
    test.addCleanup(writer.kill)
    return server, writer


class WriterOutageTests(SynchronousTestCase):
    skip = pgserver.skip_reason()

    def test_reads_answer_28_and_503_until_the_database_returns(self) -> None:
        metrics_port = free_port()
        server, writer = start_writer(self, "-metricsbind=127.0.0.1:%d" % metrics_port)
        self.assertEqual(value(scrape(metrics_port)[2], "coin_database_reachable"), 1)
        tip = writer.rpc("generatetoaddress", 3, MINER_ADDRESS)[-1]
        txid = writer.rpc("getblock", tip)["tx"][0]
        bodies = [call("getblock", tip), call("getblock", tip, 0),
                  call("getrawtransaction", txid, True)]
        paths = ["/rest/block/%s.json" % tip, "/rest/block/%s.hex" % tip,
                 "/rest/tx/%s.json" % txid]
        before = [rpc_raw(writer, b) for b in bodies]
        server.pause()
        for body in bodies:
            self.assertEqual(error_of(writer, body), (500, -28, "chain database unreachable"),
                             body)
        for path in paths:
            self.assertEqual(rest(writer, path), (503, "text/plain", UNREACHABLE_BODY), path)
        # What the writer holds in memory is still served.
        self.assertEqual(writer.rpc("getblockcount"), 3)
        self.assertEqual(value(scrape(metrics_port)[2], "coin_database_reachable"), 0)
        server.resume()
        wait_until(lambda: rpc_raw(writer, bodies[0])[0] == 200, "the writer serving again")
        wait_until(lambda: value(scrape(metrics_port)[2], "coin_database_reachable") == 1,
                   "the probe finding the database back")
        self.assertEqual([rpc_raw(writer, b) for b in bodies], before)
        for path in paths:
            self.assertEqual(rest(writer, path)[0], 200, path)

    def test_p2p_intake_pauses_while_the_database_is_away_and_resumes(self) -> None:
        peer_port = free_port()
        source = NodeProcess.start(self.mktemp(), ("-port=%d" % peer_port, "-listen=1",
                                                   "-connect=0", "-txindex"))
        self.addCleanup(source.kill)
        server, writer = start_writer(self, "-connect=127.0.0.1:%d" % peer_port)
        wait_until(lambda: handshaked(writer), "the writer connected to its peer")
        source.rpc("generatetoaddress", 2, MINER_ADDRESS)
        wait_until(lambda: writer.rpc("getblockcount") == 2, "the writer in sync")
        server.pause()
        mined = source.rpc("generatetoaddress", 3, MINER_ADDRESS)
        wait_until(lambda: LOST_LINE.search(debug_log(writer)), "the outage noticed")
        self.assertEqual(writer.rpc("getblockcount"), 2)
        server.resume()
        # Resumed by the probe (at most 8 s after the server is back), nothing restarted.
        wait_until(lambda: writer.rpc("getbestblockhash") == mined[-1], "the writer resuming",
                   timeout=60)
        log = debug_log(writer)
        self.assertEqual((len(LOST_LINE.findall(log)), len(BACK_LINE.findall(log))), (1, 1), log)
        self.assertNotIn("processing block", log)
        self.assertNotIn("Traceback", log[LOST_LINE.search(log).start():])
        # The peer was neither penalised nor dropped, on either side.
        (peer,) = handshaked(writer)
        self.assertEqual(peer["banscore"], 0)
        self.assertEqual(len(handshaked(source)), 1)
        self.assertEqual(source.rpc("listbanned"), [])
        # The transaction index went on from where the outage stopped it.
        txid = source.rpc("getblock", mined[-1])["tx"][0]
        wait_until(lambda: rpc_raw(writer, call("getrawtransaction", txid))[0] == 200,
                   "the new block's transaction indexed")
        self.assertEqual(writer.rpc("getrawtransaction", txid),
                         source.rpc("getrawtransaction", txid))
        self.assertTrue(os.path.exists(writer.net_datadir))


class FrontendReadTests(SynchronousTestCase):
    """A front end whose commit look succeeds but whose read then cannot get a connection."""

    skip = pgserver.skip_reason()

    def test_a_read_failing_after_the_commit_look_answers_28_and_503(self) -> None:
        server, writer = start_writer(self)
        tip = writer.rpc("generatetoaddress", 2, MINER_ADDRESS)[-1]
        # The front end reads as a role of its own, whose sessions the test can limit.
        server.execute("CREATE ROLE reader LOGIN")
        server.execute("GRANT SELECT ON ALL TABLES IN SCHEMA public TO reader", "chain")
        url = server.url("chain").replace("://%s@" % pgserver.SUPERUSER, "://reader@")
        frontend = FrontendProcess.start_for(writer, ("-rest", "-dbengine=%s" % url),
                                             datadir=self.mktemp())
        self.addCleanup(frontend.kill)
        self.assertEqual(frontend.rpc("getblockcount"), 2)
        # Only its commit-watch session stays (one role session allowed): every other read
        # finds its pooled session ended and cannot open another.
        server.execute("ALTER ROLE reader CONNECTION LIMIT 1")
        server.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = "
                       "'reader' AND query NOT LIKE 'SELECT key, value FROM chain_state%'")
        self.assertEqual(error_of(frontend, call("getblock", tip)),
                         (500, -28, "chain database unreachable"))
        self.assertEqual(rest(frontend, "/rest/block/%s.json" % tip),
                         (503, "text/plain", UNREACHABLE_BODY))
        self.assertEqual(frontend.rpc("getblockcount"), 2)  # the look itself still works
        server.execute("ALTER ROLE reader CONNECTION LIMIT -1")
        self.assertEqual(rpc_raw(frontend, call("getblock", tip)),
                         rpc_raw(writer, call("getblock", tip)))
