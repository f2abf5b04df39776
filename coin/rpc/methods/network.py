"""Network methods (Core 0.17's "== Network ==") from the node's real P2P state.

Registered through the ``coin.rpc`` entry point ``network``. There is no P2P
layer yet, so there are no peers, no local addresses and no services offered;
the answers say exactly that, in Core's shapes (rpcm_01). When the P2P layer
lands, :func:`connection_count` and the ``localservices``/``networks`` values
come from it, and the relay fees from the mempool's configured policy.
"""

from __future__ import annotations

from typing import Any, Dict

from coin import __version__
from coin.rpc.context import RPCContext
from coin.rpc.registry import example_cli, example_rpc, rpc_method
from coin.views.amounts import amount_to_json

#: The user agent's name (the reference's "/coin:2.3.0/").
CLIENT_NAME = "coin"
#: The P2P protocol version this node will speak (Dash 0.12.3's).
PROTOCOL_VERSION = 70208
#: Networks getnetworkinfo reports, and whether each is limited without a proxy (Core).
_NETWORKS = (("ipv4", False), ("ipv6", False), ("onion", True))


def client_version() -> int:
    """Core's CLIENT_VERSION: 1000000 * major + 10000 * minor + 100 * revision + build."""
    parts = [int(p) for p in __version__.split(".")] + [0, 0, 0]
    major, minor, revision, build = parts[:4]
    return 1000000 * major + 10000 * minor + 100 * revision + build


def connection_count(ctx: RPCContext) -> int:
    """Peers connected: none, as no P2P layer exists yet."""
    return 0


@rpc_method(
    "getconnectioncount", category="network",
    help="Returns the number of connections to other nodes.",
    result="n          (numeric) The connection count",
    examples=example_cli("getconnectioncount") + example_rpc("getconnectioncount"))
def getconnectioncount(ctx: RPCContext) -> int:
    return connection_count(ctx)


@rpc_method(
    "getnetworkinfo", category="network",
    help="Returns an object containing various state info regarding P2P networking.",
    result=(
        "{\n"
        '  "version": xxxxx,                      (numeric) the server version\n'
        '  "subversion": "/coin:x.x.x/",          (string) the server subversion string\n'
        '  "protocolversion": xxxxx,              (numeric) the protocol version\n'
        '  "localservices": "xxxxxxxxxxxxxxxx",   (string) the services we offer to the network\n'
        '  "localrelay": true|false,              (bool) true if transaction relay is requested '
        "from peers\n"
        '  "timeoffset": xxxxx,                   (numeric) the time offset\n'
        '  "connections": xxxxx,                  (numeric) the number of connections\n'
        '  "networkactive": true|false,           (bool) whether p2p networking is enabled\n'
        '  "networks": [                          (array) information per network\n'
        "  {\n"
        '    "name": "xxx",                       (string) network (ipv4, ipv6 or onion)\n'
        '    "limited": true|false,               (boolean) is the network limited using '
        "-onlynet?\n"
        '    "reachable": true|false,             (boolean) is the network reachable?\n'
        '    "proxy": "host:port"                 (string) the proxy that is used for this '
        "network, or empty if none\n"
        '    "proxy_randomize_credentials": true|false,  (string) Whether randomized '
        "credentials are used\n"
        "  }\n"
        "  ,...\n"
        "  ],\n"
        '  "relayfee": x.xxxxxxxx,                (numeric) minimum relay fee for transactions '
        "in COIN/kB\n"
        '  "incrementalfee": x.xxxxxxxx,          (numeric) minimum fee increment for mempool '
        "limiting or BIP 125 replacement in COIN/kB\n"
        '  "localaddresses": [                    (array) list of local addresses\n'
        "  {\n"
        '    "address": "xxxx",                   (string) network address\n'
        '    "port": xxx,                         (numeric) network port\n'
        '    "score": xxx                         (numeric) relative score\n'
        "  }\n"
        "  ,...\n"
        "  ]\n"
        '  "warnings": "..."                      (string) any network and blockchain warnings\n'
        "}"),
    examples=example_cli("getnetworkinfo") + example_rpc("getnetworkinfo"))
def getnetworkinfo(ctx: RPCContext) -> Dict[str, Any]:
    policy = ctx.node.mempool.policy
    return {
        "version": client_version(),
        "subversion": "/%s:%s/" % (CLIENT_NAME, __version__),
        "protocolversion": PROTOCOL_VERSION,
        "localservices": "%016x" % 0,  # no P2P server: no services offered
        "localrelay": True,
        "timeoffset": ctx.node.chain.state.time_offset,
        "networkactive": True,
        "connections": connection_count(ctx),
        "networks": [{"name": name, "limited": limited, "reachable": not limited, "proxy": "",
                      "proxy_randomize_credentials": False} for name, limited in _NETWORKS],
        "relayfee": amount_to_json(policy.min_relay_fee.sat_per_kb),
        "incrementalfee": amount_to_json(policy.incremental_relay_fee.sat_per_kb),
        "localaddresses": [],
        "warnings": "",
    }


#: What the ``network`` entry point registers.
METHODS = [getconnectioncount, getnetworkinfo]
