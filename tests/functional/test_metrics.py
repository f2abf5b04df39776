"""``-metricsbind``: ``/metrics`` scraped from a real ``coind`` and parsed with the
Prometheus client's own parser; values checked against the RPC's answers."""

from __future__ import annotations

import http.client
import os
import time
from typing import Dict, Set, Tuple

from prometheus_client.parser import text_string_to_metric_families
from twisted.trial.unittest import TestCase

from tests.nodeharness import NodeProcess, free_port

#: Sample name and sorted label items -> value.
Samples = Dict[Tuple[str, Tuple[Tuple[str, str], ...]], float]


def scrape(port: int) -> Tuple[int, str, Samples]:
    """GET /metrics: status, Content-Type and the parsed samples."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", "/metrics")
        response = conn.getresponse()
        text = response.read().decode("utf-8")
        content_type = response.getheader("Content-Type", "")
    finally:
        conn.close()
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return response.status, content_type, samples


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples[(name, tuple(sorted(labels.items())))]


class MetricsTests(TestCase):
    """One node with a wallet, a mined chain, a pool transaction and an inbound peer."""

    def setUp(self) -> None:
        self.metrics_port = free_port()
        self.node = NodeProcess.start(self.mktemp(), [
            "-metricsbind=127.0.0.1:%d" % self.metrics_port, "-connect=0", "-listen=1"])
        self.addCleanup(self.node.stop)

    def _peer(self) -> NodeProcess:
        peer = NodeProcess.start(self.mktemp(), [
            "-listen=0", "-connect=127.0.0.1:%d" % self.node.p2p_port])
        self.addCleanup(peer.stop)
        deadline = time.monotonic() + 30
        # Connected and its first message counted (a peer listed before it has sent a byte
        # made the traffic counters read 0 on a busy machine).
        while not any(info["bytesrecv"] > 0 for info in self.node.rpc("getpeerinfo")):
            self.assertLess(time.monotonic(), deadline, "the peer did not connect")
            time.sleep(0.1)
        return peer

    def test_values_match_the_rpc(self) -> None:
        node = self.node
        address = node.rpc("getnewaddress")
        node.rpc("generatetoaddress", 101, address)
        node.rpc("sendtoaddress", node.rpc("getnewaddress"), 1)
        self._peer()
        status, content_type, samples = scrape(self.metrics_port)
        self.assertEqual(status, 200)
        self.assertTrue(content_type.startswith("text/plain; version="), content_type)
        chain = node.rpc("getblockchaininfo")
        pool = node.rpc("getmempoolinfo")
        peers = node.rpc("getpeerinfo")
        totals = node.rpc("getnettotals")
        self.assertEqual(value(samples, "coin_blocks"), chain["blocks"])
        self.assertEqual(value(samples, "coin_blocks"), 101)
        self.assertEqual(value(samples, "coin_headers"), chain["headers"])
        self.assertAlmostEqual(value(samples, "coin_verification_progress"),
                               chain["verificationprogress"])
        self.assertEqual(value(samples, "coin_mempool_transactions"), pool["size"])
        self.assertEqual(pool["size"], 1)
        self.assertEqual(value(samples, "coin_mempool_bytes"), pool["bytes"])
        self.assertEqual(value(samples, "coin_mempool_usage_bytes"), pool["usage"])
        self.assertAlmostEqual(value(samples, "coin_mempool_min_fee"), pool["mempoolminfee"])
        inbound = sum(1 for peer in peers if peer["inbound"])
        self.assertEqual(inbound, 1)
        self.assertEqual(value(samples, "coin_peers", direction="inbound"), inbound)
        self.assertEqual(value(samples, "coin_peers", direction="outbound"), len(peers) - inbound)
        # Traffic only grows: the scrape came before getnettotals.
        self.assertGreater(value(samples, "coin_network_received_bytes_total"), 0)
        self.assertLessEqual(value(samples, "coin_network_received_bytes_total"),
                             totals["totalbytesrecv"])
        self.assertLessEqual(value(samples, "coin_network_sent_bytes_total"),
                             totals["totalbytessent"])
        self.assertGreater(value(samples, "coin_utxo_cache_entries"), 0)
        self.assertGreater(value(samples, "coin_utxo_cache_bytes"), 0)
        self.assertEqual(value(samples, "coin_wallets"), len(node.rpc("listwallets")))
        self.assertEqual(value(samples, "coin_masternodes", state="all"), 0)
        # 101 mined blocks (and genesis, connected on first start) in the histogram.
        self.assertGreaterEqual(value(samples, "coin_block_connect_seconds_count"), 101)
        self.assertGreater(value(samples, "coin_block_connect_seconds_sum"), 0)

    def test_rpc_calls_by_method_and_status(self) -> None:
        for _ in range(3):
            self.node.rpc("getblockcount")
        # A batch counts each entry.
        self.node.post(b'[{"method":"getblockcount","id":1},{"method":"getbestblockhash"}]')
        _, _, samples = scrape(self.metrics_port)
        self.assertEqual(value(samples, "coin_rpc_requests_total", method="getblockcount",
                               status="200"), 4)
        self.assertEqual(value(samples, "coin_rpc_requests_total", method="getbestblockhash",
                               status="200"), 1)
        self.assertEqual(value(samples, "coin_rpc_request_seconds_count",
                               method="getblockcount"), 4)
        self.assertEqual(value(samples, "coin_rpc_request_seconds_bucket",
                               method="getblockcount", le="+Inf"), 4)

    def test_unknown_method_names_stay_bounded(self) -> None:
        for i in range(40):
            self.node.post(b'{"method":"no_such_method_%d","id":1}' % i)
        _, _, samples = scrape(self.metrics_port)
        methods = {dict(labels).get("method") for name, labels in samples
                   if name == "coin_rpc_requests_total"}
        self.assertNotIn("no_such_method_0", methods)
        self.assertEqual(value(samples, "coin_rpc_requests_total", method="unknown",
                               status="404"), 40)
        help_text = self.node.rpc("help")
        for method in methods - {"unknown"}:
            self.assertIn(method, help_text)

    def test_rest_requests_by_route_pattern(self) -> None:
        best = self.node.rpc("getbestblockhash")
        for path in ("/rest/chaininfo.json", "/rest/block/%s.json" % best,
                     "/rest/block/%s.hex" % best, "/rest/block/%s.json" % ("00" * 32),
                     "/rest/no/such/path/%d" % time.time_ns()):
            self.node.post(b"", path=path, method="GET", auth=False)
        _, _, samples = scrape(self.metrics_port)
        rest = {dict(labels)["endpoint"]: v for (name, labels), v in samples.items()
                if name == "coin_rest_requests_total"}
        self.assertEqual(value(samples, "coin_rest_requests_total", endpoint="chaininfo",
                               status="200"), 1)
        self.assertEqual(value(samples, "coin_rest_requests_total", endpoint="block",
                               status="200"), 2)
        self.assertEqual(value(samples, "coin_rest_requests_total", endpoint="block",
                               status="404"), 1)
        self.assertEqual(value(samples, "coin_rest_requests_total", endpoint="unknown",
                               status="404"), 1)
        self.assertEqual(set(rest), {"chaininfo", "block", "unknown"})

    def test_other_paths_are_404(self) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self.metrics_port, timeout=30)
        try:
            conn.request("GET", "/")
            self.assertEqual(conn.getresponse().status, 404)
        finally:
            conn.close()


def listening_ports(pid: int) -> Set[int]:
    """The TCP ports process ``pid`` listens on (its socket inodes in /proc/net/tcp*)."""
    inodes = set()
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            target = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                    ports.add(int(fields[1].rpartition(":")[2], 16))
    return ports


class MetricsOffTests(TestCase):

    def test_off_by_default(self) -> None:
        """Without -metricsbind the node listens on its RPC port only (-listen=0)."""
        node = NodeProcess.start(self.mktemp(), ["-connect=0", "-listen=0"])
        self.addCleanup(node.stop)
        with open(node.net_datadir + "/debug.log") as f:
            self.assertNotIn("Binding metrics", f.read())
        self.assertEqual(listening_ports(node.process.pid), {node.rpcport})
        with_metrics = NodeProcess.start(self.mktemp(), ["-connect=0", "-listen=0",
                                                         "-metricsbind=127.0.0.1"])
        self.addCleanup(with_metrics.stop)
        self.assertEqual(listening_ports(with_metrics.process.pid),
                         {with_metrics.rpcport, with_metrics.rpcport + 2})

    def test_non_loopback_refused(self) -> None:
        node = NodeProcess.start(self.mktemp(), ["-connect=0", "-listen=0",
                                                 "-metricsbind=192.0.2.1"], wait=False)
        self.assertNotEqual(node.wait(), 0)
        self.assertIn("-metricsbind=192.0.2.1 is not a loopback address", node.stderr_text())
