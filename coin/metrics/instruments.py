"""The instrumented metrics: fed by RPC/REST dispatch and block connection as they run.

Each recording is one counter increment and at most one histogram observation, so the
cost per call stays in the microseconds (doc/metrics.md has the measured figure).
Label values come from bounded sets: RPC methods the registry knows (any other name
is ``unknown``), REST route patterns (never raw paths) and HTTP statuses.
"""

from __future__ import annotations

from typing import Any, Container, Dict, Tuple

from prometheus_client import CollectorRegistry, Counter, Histogram

#: The label for RPC method names the node does not have (any client can send any name).
UNKNOWN_METHOD = "unknown"

#: Seconds: RPC calls range from microseconds (getblockcount) to minutes (rescans).
RPC_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
               10.0, 30.0, 60.0)
#: Seconds: an empty regtest block connects in a millisecond, a full one in seconds.
CONNECT_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
                   30.0)


class Instruments:
    """One node's counters and histograms, in its own registry.

    ``block_connect``: whether the process connects blocks (a front end does not: it has
    no block-connection histogram)."""

    def __init__(self, registry: CollectorRegistry, methods: Container[str],
                 block_connect: bool = True) -> None:
        self.registry = registry
        #: Known RPC method names: other names are counted as :data:`UNKNOWN_METHOD`.
        self._methods = methods
        #: (method label, status) -> its counter and histogram children; bounded, as the
        #: labels are.
        self._rpc_children: Dict[Tuple[str, int], Tuple[Any, Any]] = {}
        self.block_connect = Histogram(
            "coin_block_connect_seconds", "Time to connect a block to the active chain",
            buckets=CONNECT_BUCKETS, registry=registry) if block_connect else None
        self.rpc_requests = Counter(
            "coin_rpc_requests", "JSON-RPC calls by method and HTTP status (batch entries "
            "count one each)", ("method", "status"), registry=registry)
        self.rpc_seconds = Histogram(
            "coin_rpc_request_seconds", "JSON-RPC call latency by method", ("method",),
            buckets=RPC_BUCKETS, registry=registry)
        self.rest_requests = Counter(
            "coin_rest_requests", "REST requests by endpoint (route pattern) and HTTP status",
            ("endpoint", "status"), registry=registry)

    @classmethod
    def in_own_registry(cls, methods: Container[str], block_connect: bool = True
                        ) -> "Instruments":
        """Instruments in a new registry (nothing goes to the library's global one)."""
        return cls(CollectorRegistry(), methods, block_connect)

    def rpc_call(self, method: str, status: int, seconds: float) -> None:
        """One JSON-RPC call answered (the hook of coin.rpc.jsonrpc.JSONRPCCore)."""
        if method not in self._methods:
            method = UNKNOWN_METHOD
        key = (method, status)
        children = self._rpc_children.get(key)
        if children is None:
            # labels() validates and locks on every call: done once per (method, status).
            children = self._rpc_children[key] = (
                self.rpc_requests.labels(method, str(status)), self.rpc_seconds.labels(method))
        children[0].inc()
        children[1].observe(seconds)

    def rest_request(self, endpoint: str, status: int) -> None:
        """One REST reply sent (the hook of coin.rest.resource.RESTResource)."""
        self.rest_requests.labels(endpoint, str(status)).inc()

    def block_connected(self, seconds: float) -> None:
        """One block connected (called on the validation thread; prometheus-client locks)."""
        self.block_connect.observe(seconds)
