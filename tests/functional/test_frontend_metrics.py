"""``-metricsbind`` on a front end: ``/metrics`` scraped from a real ``coind -frontend`` and
parsed with the Prometheus client's parser; local calls counted by method, REST replies by
endpoint, the committed height, the database's reachability and the replica lag."""

from __future__ import annotations

from twisted.trial.unittest import SynchronousTestCase

from tests import pgserver
from tests.frontendharness import FrontendProcess, wait_for
from tests.functional.test_frontend import WRITER_ARGS, call, rest, rpc_raw
from tests.functional.test_metrics import scrape, value
from tests.nodeharness import MINER_ADDRESS, NodeProcess, free_port


class FrontendMetricsTests(SynchronousTestCase):
    def start(self, writer_args=(), frontend_args=()):
        writer = NodeProcess.start(self.mktemp(), WRITER_ARGS + tuple(writer_args))
        self.addCleanup(writer.kill)
        port = free_port()
        frontend = FrontendProcess.start_for(writer, ("-rest", "-metricsbind=127.0.0.1:%d" % port)
                                             + tuple(frontend_args))
        self.addCleanup(frontend.kill)
        return writer, frontend, port

    def test_requests_height_and_lag_on_sqlite(self) -> None:
        writer, frontend, port = self.start()
        writer.rpc("generatetoaddress", 3, MINER_ADDRESS)
        wait_for(lambda: frontend.rpc("getblockcount") == 3, what="the front end's tip")
        tip = frontend.rpc("getbestblockhash")
        frontend.rpc("getblockhash", 1)
        rpc_raw(frontend, call("getblock", "00" * 32))  # -5: HTTP 500
        frontend.rpc("getnetworkinfo")  # forwarded: the writer counts it
        self.assertEqual(rest(frontend, "/rest/block/%s.json" % tip)[0], 200)
        self.assertEqual(rest(frontend, "/rest/nothing")[0], 404)
        status, content_type, samples = scrape(port)
        self.assertEqual(status, 200)
        self.assertTrue(content_type.startswith("text/plain; version="), content_type)
        requests = "coin_rpc_requests_total"
        self.assertGreaterEqual(value(samples, requests, method="getblockcount", status="200"), 1)
        self.assertEqual(value(samples, requests, method="getbestblockhash", status="200"), 1)
        self.assertEqual(value(samples, requests, method="getblockhash", status="200"), 1)
        self.assertEqual(value(samples, requests, method="getblock", status="500"), 1)
        self.assertNotIn(("coin_rpc_requests_total", (("method", "getnetworkinfo"),
                                                      ("status", "200"))), samples)
        self.assertEqual(value(samples, "coin_rpc_request_seconds_count", method="getblockhash"),
                         1)
        self.assertEqual(value(samples, "coin_rest_requests_total", endpoint="block",
                               status="200"), 1)
        self.assertEqual(value(samples, "coin_rest_requests_total", endpoint="unknown",
                               status="404"), 1)
        self.assertEqual(value(samples, "coin_blocks"), 3)
        self.assertEqual(value(samples, "coin_frontend_lag_seconds"), 0)
        self.assertEqual(value(samples, "coin_database_reachable"), 1)
        self.assertGreaterEqual(value(samples, "coin_frontend_reloads_total"), 1)
        self.assertFalse(any(name.startswith("coin_block_connect") for name, _ in samples))
        self.assertFalse(any(name.startswith("coin_mempool") for name, _ in samples))

    def test_database_unreachable_on_postgresql(self) -> None:
        if pgserver.skip_reason():
            self.skipTest(pgserver.skip_reason())
        server = pgserver.own_server(self)
        url = "-dbengine=%s" % server.url("chain")
        writer, frontend, port = self.start((url,), (url,))
        writer.rpc("generatetoaddress", 2, MINER_ADDRESS)
        wait_for(lambda: value(scrape(port)[2], "coin_blocks") == 2, what="the new tip")
        server.pause()
        self.assertEqual(rpc_raw(frontend, call("getblockcount"))[0], 500)
        samples = scrape(port)[2]
        self.assertEqual(value(samples, "coin_database_reachable"), 0)
        server.resume()
        wait_for(lambda: rpc_raw(frontend, call("getblockcount"))[0] == 200,
                 what="the front end serving again")
        self.assertEqual(value(scrape(port)[2], "coin_database_reachable"), 1)
