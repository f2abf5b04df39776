"""``/metrics`` on its own listener (``-metricsbind``; coin.service binds it as a child).

Addresses follow Core's rule for -rpcbind: loopback unless the operator also says who
may connect (-rpcallowip); a non-loopback -metricsbind without it stops start-up, and
with it clients outside -rpcallowip get 403.  No RPC authentication, as Prometheus
scrapes without credentials.
"""

from __future__ import annotations

import ipaddress
from typing import List, Sequence, Tuple

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from twisted.web import resource, server

from coin.config.hostport import split_host_port
from coin.rpc.auth import AllowList

#: The default port: the RPC port plus this (regtest 19332 -> 19334, ...).
PORT_OFFSET = 2


class MetricsConfigError(Exception):
    """A -metricsbind value the node refuses (the message is shown to the user)."""


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def metrics_bind_addresses(specs: Sequence[str], rpcallowip: Sequence[str],
                           rpc_port: int) -> List[Tuple[str, int]]:
    """``(host, port)`` for each -metricsbind (port: RPC port + :data:`PORT_OFFSET`).

    Raises :class:`MetricsConfigError` for an address that is not loopback when no
    -rpcallowip says which clients may use it.
    """
    addresses = [split_host_port(spec, rpc_port + PORT_OFFSET) for spec in specs]
    for host, _ in addresses:
        if not rpcallowip and not _is_loopback(host):
            raise MetricsConfigError(
                "-metricsbind=%s is not a loopback address; set -rpcallowip as well to say "
                "which clients may scrape it" % host)
    return [("127.0.0.1" if host == "localhost" else host, port) for host, port in addresses]


class MetricsResource(resource.Resource):
    """The Prometheus text format of one registry, rendered on the reactor thread (the
    collectors read live node state, which only the reactor thread may touch)."""

    isLeaf = True

    def __init__(self, registry: CollectorRegistry, allow: AllowList) -> None:
        super().__init__()
        self._registry = registry
        self._allow = allow

    def render_GET(self, request: server.Request) -> bytes:
        if not self._allow.allows(request.getClientAddress()):
            request.setResponseCode(403)
            return b""
        request.setHeader(b"Content-Type", CONTENT_TYPE_LATEST.encode("ascii"))
        return generate_latest(self._registry)


def metrics_site(registry: CollectorRegistry, allow: AllowList) -> server.Site:
    """A site answering ``/metrics`` (anything else is 404)."""
    root = resource.Resource()
    root.putChild(b"metrics", MetricsResource(registry, allow))
    site = server.Site(root)
    site.displayTracebacks = False
    site.noisy = False
    return site
