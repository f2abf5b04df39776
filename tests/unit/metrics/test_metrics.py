"""The metrics pieces without a node: bind addresses, bounded labels, the resource."""

from __future__ import annotations

from prometheus_client import CollectorRegistry
from twisted.internet.address import IPv4Address
from twisted.internet.defer import Deferred
from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase
from twisted.web.test.requesthelper import DummyRequest

from coin.metrics import Instruments
from coin.metrics.instruments import UNKNOWN_METHOD
from coin.metrics.service import (
    PORT_OFFSET, MetricsConfigError, MetricsResource, metrics_bind_addresses,
)
from coin.rest.resource import ENDPOINTS, endpoint, endpoint_label
from coin.rpc.auth import AllowList, Whitelist
from coin.rpc.jsonrpc import JSONRPCCore, Warmup
from coin.rpc.registry import MethodTable, rpc_method


class BindAddressTests(SynchronousTestCase):

    def test_default_port_is_rpc_port_plus_two(self) -> None:
        self.assertEqual(metrics_bind_addresses(["127.0.0.1"], [], 31931),
                         [("127.0.0.1", 31931 + PORT_OFFSET)])
        self.assertEqual(PORT_OFFSET, 2)

    def test_port_and_ipv6(self) -> None:
        self.assertEqual(metrics_bind_addresses(["[::1]:9000", "localhost:9001"], [], 1),
                         [("::1", 9000), ("127.0.0.1", 9001)])

    def test_non_loopback_needs_rpcallowip(self) -> None:
        for host in ("0.0.0.0", "192.0.2.1", "::", "example.com"):
            self.assertRaises(MetricsConfigError, metrics_bind_addresses, [host], [], 1)
        self.assertEqual(metrics_bind_addresses(["0.0.0.0:9000"], ["10.0.0.0/8"], 1),
                         [("0.0.0.0", 9000)])


class InstrumentTests(SynchronousTestCase):

    def setUp(self) -> None:
        self.registry = CollectorRegistry()
        self.instruments = Instruments(self.registry, {"getblockcount"})

    def test_unknown_methods_share_one_label(self) -> None:
        self.instruments.rpc_call("getblockcount", 200, 0.001)
        for i in range(100):
            self.instruments.rpc_call("nonsense%d" % i, 404, 0.001)
        methods = {sample.labels["method"] for family in self.registry.collect()
                   if family.name == "coin_rpc_requests" for sample in family.samples}
        self.assertEqual(methods, {"getblockcount", UNKNOWN_METHOD})
        self.assertEqual(self.registry.get_sample_value(
            "coin_rpc_requests_total", {"method": UNKNOWN_METHOD, "status": "404"}), 100)

    def test_block_connect_histogram(self) -> None:
        self.instruments.block_connected(0.003)
        self.assertEqual(self.registry.get_sample_value("coin_block_connect_seconds_count"), 1)
        self.assertEqual(self.registry.get_sample_value(
            "coin_block_connect_seconds_bucket", {"le": "0.0025"}), 0)
        self.assertEqual(self.registry.get_sample_value(
            "coin_block_connect_seconds_bucket", {"le": "0.005"}), 1)


class ResourceTests(SynchronousTestCase):

    def _get(self, client: str) -> DummyRequest:
        registry = CollectorRegistry()
        Instruments(registry, ()).block_connected(0.1)
        request = DummyRequest([b""])
        request.client = IPv4Address("TCP", client, 5000)
        body = MetricsResource(registry, AllowList(["10.1.0.0/16"])).render_GET(request)
        request.written.append(body)
        return request

    def test_allowed_clients_get_the_text_format(self) -> None:
        for client in ("127.0.0.1", "10.1.2.3"):
            request = self._get(client)
            self.assertIn(b"coin_block_connect_seconds_count 1.0", b"".join(request.written))

    def test_others_get_403(self) -> None:
        request = self._get("10.2.0.1")
        self.assertEqual(request.responseCode, 403)
        self.assertEqual(b"".join(request.written), b"")


class EndpointLabelTests(SynchronousTestCase):
    """REST metrics are labelled by endpoint, never by the raw path."""

    def test_labels(self) -> None:
        h = "ab" * 32
        cases = {
            "/rest/block/%s.json" % h: "block",
            "/rest/block/notxdetails/%s.bin" % h: "block/notxdetails",
            "/rest/headers/5/%s.hex" % h: "headers",
            "/rest/tx/%s.json?x=y" % h: "tx",
            "/rest/getutxos/checkmempool/%s-0.json" % h: "getutxos",
            "/rest/getutxos.bin": "getutxos",
            "/rest/blockhashbyheight/7.json": "blockhashbyheight",
            "/rest/chaininfo.json": "chaininfo",
            "/rest/mempool/info.json": "mempool/info",
            "/rest/mempool/contents.json": "mempool/contents",
            "/rest/openapi.json": "openapi",
            "/rest/chaininfoXYZ.json": "unknown",
            "/rest/%s" % h: "unknown",
            "/other": "unknown",
        }
        for uri, label in cases.items():
            self.assertEqual(endpoint_label(uri.encode()), label, uri)
        self.assertEqual({label for label in cases.values()} - {"unknown"}, set(ENDPOINTS))

    def test_handler_part(self) -> None:
        self.assertEqual(endpoint("mempool/info.json?a/b"), ("mempool/info", "info.json?a/b"))
        self.assertEqual(endpoint("getutxos/x-1.json"), ("getutxos", "/x-1.json"))


class RPCHookTests(SynchronousTestCase):
    """JSONRPCCore reports each answered call: at once, or when its Deferred fires."""

    def test_immediate_deferred_and_failed_calls(self) -> None:
        waiting: Deferred = Deferred()

        @rpc_method("now", category="test")
        def now(ctx):
            return 1

        @rpc_method("later", category="test")
        def later(ctx):
            return waiting

        seen = []
        core = JSONRPCCore(MethodTable([now, later]), None, whitelist=Whitelist(),
                           warmup=Warmup(None), clock=Clock(),
                           observe=lambda *call: seen.append(call[:2]))
        self.successResultOf(core.handle(b'[{"method":"now"},{"method":"nope"}]', "u"))
        self.assertEqual(seen, [("now", 200), ("nope", 404)])
        reply = core.handle(b'{"method":"later"}', "u")
        self.assertEqual(len(seen), 2)
        waiting.callback(2)
        self.assertEqual(self.successResultOf(reply).status, 200)
        self.assertEqual(seen[2:], [("later", 200)])
