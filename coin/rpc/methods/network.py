"""Network methods (Core 0.17's "== Network ==") from the node's real P2P state.

Registered through the ``coin.rpc`` entry point ``network``.  The P2P service
(:class:`coin.p2p.connman.P2PService`) is ``ctx.node.p2p``; a node facade
without one (unit tests of other method families) answers getconnectioncount
and getnetworkinfo with no peers and no services, and the other methods with
Core's -31 "Error: Peer-to-peer functionality missing or disabled".
"""

from __future__ import annotations

import time
from typing import Any, Dict, List, Optional

from coin import __version__
from coin.p2p.banman import REASON_MANUALLY_ADDED, parse_subnet
from coin.p2p.connman import P2PService, format_user_agent
from coin.p2p.messages import PROTOCOL_VERSION
from coin.p2p.netaddr import NetAddress
from coin.p2p.peer import PeerProtocol
from coin.rpc.context import RPCContext
from coin.rpc.errors import (
    RPC_CLIENT_INVALID_IP_OR_SUBNET,
    RPC_CLIENT_NODE_ALREADY_ADDED,
    RPC_CLIENT_NODE_NOT_ADDED,
    RPC_CLIENT_NODE_NOT_CONNECTED,
    RPC_CLIENT_P2P_DISABLED,
    RPC_INVALID_PARAMS,
    RPC_MISC_ERROR,
    RPCError,
)
from coin.rpc.registry import (
    ANY, BOOL, INT64, STR, Arg, ReadByHandler, example_cli, example_rpc, rpc_method,
)
from coin.views.amounts import amount_to_json

#: The user agent's name: "/Coin:<version>/" (issue #7).
CLIENT_NAME = "Coin"
#: Networks getnetworkinfo reports, and whether each is limited without a proxy (Core).
_NETWORKS = (("ipv4", False), ("ipv6", False), ("onion", True))


def client_version() -> int:
    """Core's CLIENT_VERSION: 1000000 * major + 10000 * minor + 100 * revision + build."""
    parts = [int(p) for p in __version__.split(".")] + [0, 0, 0]
    major, minor, revision, build = parts[:4]
    return 1000000 * major + 10000 * minor + 100 * revision + build


def _p2p_or_none(ctx: RPCContext) -> Optional[P2PService]:
    return ctx.node.p2p


def _p2p(ctx: RPCContext) -> P2PService:
    p2p = _p2p_or_none(ctx)
    if p2p is None:
        raise RPCError(RPC_CLIENT_P2P_DISABLED,
                       "Error: Peer-to-peer functionality missing or disabled")
    return p2p


def connection_count(ctx: RPCContext) -> int:
    """Open P2P connections (0 without a P2P service)."""
    p2p = _p2p_or_none(ctx)
    return p2p.connection_count() if p2p is not None else 0


def _help_error(method: Any) -> RPCError:
    return RPCError(RPC_MISC_ERROR, method.help_text)


# ---------------------------------------------------------------- getconnectioncount

@rpc_method(
    "getconnectioncount", category="network",
    help="Returns the number of connections to other nodes.",
    result="n          (numeric) The connection count",
    examples=example_cli("getconnectioncount") + example_rpc("getconnectioncount"))
def getconnectioncount(ctx: RPCContext) -> int:
    return connection_count(ctx)


# ---------------------------------------------------------------- ping

@rpc_method(
    "ping", category="network",
    help=("Requests that a ping be sent to all other nodes, to measure ping time.\n"
          "Results provided in getpeerinfo, pingtime and pingwait fields are decimal "
          "seconds.\nPing command is handled in queue with all other commands, so it "
          "measures processing backlog, not just network ping."),
    examples=example_cli("ping") + example_rpc("ping"))
def ping(ctx: RPCContext) -> None:
    _p2p(ctx).ping_all()
    return None


# ---------------------------------------------------------------- getpeerinfo

def _seconds(value: Optional[float]) -> float:
    """Core reports latencies in seconds with microsecond resolution."""
    return round(value or 0.0, 6)


def peer_json(p2p: P2PService, peer: PeerProtocol) -> Dict[str, Any]:
    """One getpeerinfo entry, Core 0.17's fields and order."""
    obj: Dict[str, Any] = {"id": peer.id, "addr": peer.addr}
    if peer.local_address is not None:
        obj["addrbind"] = str(peer.local_address)
    if peer.addr_local:
        obj["addrlocal"] = peer.addr_local
    obj.update({
        "services": "%016x" % peer.services,
        "relaytxes": peer.relay,
        "lastsend": int(peer.last_send),
        "lastrecv": int(peer.last_recv),
        "bytessent": peer.bytes_sent,
        "bytesrecv": peer.bytes_recv,
        "conntime": int(peer.conn_time),
        "timeoffset": peer.time_offset,
    })
    if peer.ping_time is not None:
        obj["pingtime"] = _seconds(peer.ping_time)
    if peer.min_ping is not None:
        obj["minping"] = _seconds(peer.min_ping)
    if peer.ping_nonce_sent:
        obj["pingwait"] = _seconds(max(0.0, p2p.now() - peer.ping_start))
    obj.update({
        "version": peer.version,
        "subver": peer.subver,
        "inbound": peer.inbound,
        "addnode": peer.manual,
        "startingheight": peer.starting_height,
        "banscore": peer.ban_score,
        "synced_headers": peer.synced_headers,
        "synced_blocks": peer.synced_blocks,
        "inflight": sorted(peer.inflight.values()),
        "whitelisted": False,
        "bytessent_per_msg": {k: v for k, v in sorted(peer.bytes_sent_per_msg.items()) if v},
        "bytesrecv_per_msg": {k: v for k, v in sorted(peer.bytes_recv_per_msg.items()) if v},
    })
    return obj


@rpc_method(
    "getpeerinfo", category="network",
    help="Returns data about each connected network node as a json array of objects.",
    result=(
        "[\n"
        "  {\n"
        '    "id": n,                   (numeric) Peer index\n'
        '    "addr":"host:port",      (string) The IP address and port of the peer\n'
        '    "addrbind":"ip:port",    (string) Bind address of the connection to the peer\n'
        '    "addrlocal":"ip:port",   (string) Local address as reported by the peer\n'
        '    "services":"xxxxxxxxxxxxxxxx",   (string) The services offered\n'
        '    "relaytxes":true|false,    (boolean) Whether peer has asked us to relay '
        "transactions to it\n"
        '    "lastsend": ttt,           (numeric) The time in seconds since epoch (Jan 1 1970 '
        "GMT) of the last send\n"
        '    "lastrecv": ttt,           (numeric) The time in seconds since epoch (Jan 1 1970 '
        "GMT) of the last receive\n"
        '    "bytessent": n,            (numeric) The total bytes sent\n'
        '    "bytesrecv": n,            (numeric) The total bytes received\n'
        '    "conntime": ttt,           (numeric) The connection time in seconds since epoch '
        "(Jan 1 1970 GMT)\n"
        '    "timeoffset": ttt,         (numeric) The time offset in seconds\n'
        '    "pingtime": n,             (numeric) ping time (if available)\n'
        '    "minping": n,              (numeric) minimum observed ping time (if any at all)\n'
        '    "pingwait": n,             (numeric) ping wait (if non-zero)\n'
        '    "version": v,              (numeric) The peer version, such as 70001\n'
        '    "subver": "/Coin:x.x.x/",  (string) The string version\n'
        '    "inbound": true|false,     (boolean) Inbound (true) or Outbound (false)\n'
        '    "addnode": true|false,     (boolean) Whether connection was due to addnode/-connect '
        "or if it was an automatic/inbound connection\n"
        '    "startingheight": n,       (numeric) The starting height (block) of the peer\n'
        '    "banscore": n,             (numeric) The ban score\n'
        '    "synced_headers": n,       (numeric) The last header we have in common with this '
        "peer\n"
        '    "synced_blocks": n,        (numeric) The last block we have in common with this '
        "peer\n"
        '    "inflight": [\n'
        "       n,                        (numeric) The heights of blocks we're currently asking "
        "from this peer\n"
        "       ...\n"
        "    ],\n"
        '    "whitelisted": true|false, (boolean) Whether the peer is whitelisted\n'
        '    "bytessent_per_msg": {\n'
        '       "addr": n,              (numeric) The total bytes sent aggregated by message '
        "type\n"
        "       ...\n"
        "    },\n"
        '    "bytesrecv_per_msg": {\n'
        '       "addr": n,              (numeric) The total bytes received aggregated by message '
        "type\n"
        "       ...\n"
        "    }\n"
        "  }\n"
        "  ,...\n"
        "]"),
    examples=example_cli("getpeerinfo") + example_rpc("getpeerinfo"))
def getpeerinfo(ctx: RPCContext) -> List[Dict[str, Any]]:
    p2p = _p2p(ctx)
    return [peer_json(p2p, p2p.peers[i]) for i in sorted(p2p.peers)]


# ---------------------------------------------------------------- addnode

@rpc_method(
    "addnode", category="network", signature='addnode "node" "add|remove|onetry"',
    args=[Arg("node", STR, help="The node (see getpeerinfo for nodes)"),
          Arg("command", STR, help="'add' to add a node to the list, 'remove' to remove a "
                                   "node from the list, 'onetry' to try a connection to the "
                                   "node once")],
    help=("Attempts to add or remove a node from the addnode list.\n"
          "Or try a connection to a node once.\n"
          "Nodes added using addnode (or -connect) are protected from DoS disconnection and "
          "are not required to be\nfull nodes as other outbound peers are (though such peers "
          "will not be synced from)."),
    examples=example_cli("addnode", '"192.168.0.6:31932" "onetry"')
    + example_rpc("addnode", '"192.168.0.6:31932", "onetry"'))
def addnode(ctx: RPCContext, node: str, command: str) -> None:
    if command not in ("onetry", "add", "remove"):
        raise _help_error(addnode)
    p2p = _p2p(ctx)
    if command == "onetry":
        p2p.connect_to(node, manual=True)
        return None
    if command == "add":
        if not p2p.add_node(node):
            raise RPCError(RPC_CLIENT_NODE_ALREADY_ADDED, "Error: Node already added")
    elif not p2p.remove_added_node(node):
        raise RPCError(RPC_CLIENT_NODE_NOT_ADDED, "Error: Node has not been added.")
    return None


# ---------------------------------------------------------------- disconnectnode

_NODEID = ReadByHandler("nodeid", INT64, default=None,
                         help="The node ID (see getpeerinfo for node IDs)")


@rpc_method(
    "disconnectnode", category="network", signature='disconnectnode "[address]" [nodeid]',
    args=[Arg("address", ANY, help="The IP address/port of the node"), _NODEID],
    help=("Immediately disconnects from the specified peer node.\n\n"
          "Strictly one out of 'address' and 'nodeid' can be provided to identify the node.\n\n"
          "To disconnect by nodeid, either set 'address' to the empty string, or call using "
          "the named 'nodeid' argument only."),
    examples=example_cli("disconnectnode", '"192.168.0.6:31932"')
    + example_cli("disconnectnode", '"" 1')
    + example_rpc("disconnectnode", '"192.168.0.6:31932"')
    + example_rpc("disconnectnode", '"", 1'))
def disconnectnode(ctx: RPCContext, address: Any, nodeid: Any) -> None:
    p2p = _p2p(ctx)
    if address is not None and nodeid is None:
        if not isinstance(address, str):
            raise RPCError(RPC_MISC_ERROR, "JSON value is not a string as expected")
        success = p2p.disconnect_by_name(address)
    elif nodeid is not None and (address is None or address == ""):
        success = p2p.disconnect_by_id(_NODEID.read(nodeid))
    else:
        raise RPCError(RPC_INVALID_PARAMS, "Only one of address and nodeid should be provided.")
    if not success:
        raise RPCError(RPC_CLIENT_NODE_NOT_CONNECTED, "Node not found in connected nodes")
    return None


# ---------------------------------------------------------------- getaddednodeinfo

_ADDED_NODE = ReadByHandler("node", STR, default=None,
                            help="If provided, return information about this specific node, "
                                 "otherwise all nodes are returned.")


@rpc_method(
    "getaddednodeinfo", category="network",
    args=[_ADDED_NODE],
    help="Returns information about the given added node, or all added nodes\n(note that "
         "onetry addnodes are not listed here)",
    result=(
        "[\n"
        "  {\n"
        '    "addednode" : "192.168.0.201",   (string) The node IP address or name (as '
        "provided to addnode)\n"
        '    "connected" : true|false,          (boolean) If connected\n'
        '    "addresses" : [                    (list of objects) Only when connected = true\n'
        "       {\n"
        '         "address" : "192.168.0.201:31932",  (string) The coin server IP and port '
        "we're connected to\n"
        '         "connected" : "outbound"           (string) connection, inbound or outbound\n'
        "       }\n"
        "     ]\n"
        "  }\n"
        "  ,...\n"
        "]"),
    examples=example_cli("getaddednodeinfo", '"192.168.0.201"')
    + example_rpc("getaddednodeinfo", '"192.168.0.201"'))
def getaddednodeinfo(ctx: RPCContext, node: Any) -> List[Dict[str, Any]]:
    infos = _p2p(ctx).added_node_info()
    if node is not None:
        # Core reads the name while comparing it with each added node: with none added,
        # any value is simply not found.
        infos = [info for info in infos if info["added"] == _ADDED_NODE.read(node)][:1]
        if not infos:
            raise RPCError(RPC_CLIENT_NODE_NOT_ADDED, "Error: Node has not been added.")
    result = []
    for info in infos:
        addresses = []
        if info["connected"]:
            addresses.append({"address": info["resolved"],
                              "connected": "inbound" if info["inbound"] else "outbound"})
        result.append({"addednode": info["added"], "connected": info["connected"],
                       "addresses": addresses})
    return result


# ---------------------------------------------------------------- getnettotals

@rpc_method(
    "getnettotals", category="network",
    help=("Returns information about network traffic, including bytes in, bytes out,\n"
          "and current time."),
    result=(
        "{\n"
        '  "totalbytesrecv": n,   (numeric) Total bytes received\n'
        '  "totalbytessent": n,   (numeric) Total bytes sent\n'
        '  "timemillis": t,       (numeric) Current UNIX time in milliseconds\n'
        '  "uploadtarget":\n'
        "  {\n"
        '    "timeframe": n,                         (numeric) Length of the measuring '
        "timeframe in seconds\n"
        '    "target": n,                            (numeric) Target in bytes\n'
        '    "target_reached": true|false,           (boolean) True if target is reached\n'
        '    "serve_historical_blocks": true|false,  (boolean) True if serving historical '
        "blocks\n"
        '    "bytes_left_in_cycle": t,               (numeric) Bytes left in current time '
        "cycle\n"
        '    "time_left_in_cycle": t                 (numeric) Seconds left in current time '
        "cycle\n"
        "  }\n"
        "}"),
    examples=example_cli("getnettotals") + example_rpc("getnettotals"))
def getnettotals(ctx: RPCContext) -> Dict[str, Any]:
    p2p = _p2p(ctx)
    return {
        "totalbytesrecv": p2p.total_bytes_recv,
        "totalbytessent": p2p.total_bytes_sent,
        "timemillis": int(time.time() * 1000),
        "uploadtarget": p2p.upload.summary(),
    }


# ---------------------------------------------------------------- getnetworkinfo

@rpc_method(
    "getnetworkinfo", category="network",
    help="Returns an object containing various state info regarding P2P networking.",
    result=(
        "{\n"
        '  "version": xxxxx,                      (numeric) the server version\n'
        '  "subversion": "/Coin:x.x.x/",          (string) the server subversion string\n'
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
    p2p = _p2p_or_none(ctx)
    offset = ctx.node.chain.clock.time_offset
    if p2p is not None:
        subversion = p2p.user_agent
        services = p2p.local_services
        active = p2p.network_active
    else:
        subversion = format_user_agent(CLIENT_NAME, __version__, [])
        services = 0
        active = True
    return {
        "version": client_version(),
        "subversion": subversion,
        "protocolversion": PROTOCOL_VERSION,
        "localservices": "%016x" % services,
        "localrelay": True,
        "timeoffset": offset,
        "networkactive": active,
        "connections": connection_count(ctx),
        "networks": [{"name": name, "limited": limited, "reachable": not limited, "proxy": "",
                      "proxy_randomize_credentials": False} for name, limited in _NETWORKS],
        "relayfee": amount_to_json(policy.min_relay_fee.sat_per_kb),
        "incrementalfee": amount_to_json(policy.incremental_relay_fee.sat_per_kb),
        # No -externalip / discovery: no local addresses are advertised.
        "localaddresses": [],
        "warnings": ctx.node.chain.warnings.text(),
    }


# ---------------------------------------------------------------- bans

def _parse_ban_target(text: str):
    """setban's subject: a subnet when it has a '/', else one IP (no name lookups)."""
    try:
        net = parse_subnet(text)
        if "/" not in text:
            # Core's CNetAddr::IsValid: no unspecified, broadcast or documentation address.
            if not NetAddress(0, str(net.network_address), 0).is_valid():
                raise ValueError("invalid address")
        return net
    except ValueError:
        raise RPCError(RPC_CLIENT_INVALID_IP_OR_SUBNET, "Error: Invalid IP/Subnet") from None


@rpc_method(
    "setban", category="network", signature='setban "subnet" "add|remove" (bantime) (absolute)',
    args=[Arg("subnet", STR, help="The IP/Subnet (see getpeerinfo for nodes IP) with an "
                                  "optional netmask (default is /32 = single IP)"),
          Arg("command", STR, help="'add' to add an IP/Subnet to the list, 'remove' to remove "
                                   "an IP/Subnet from the list"),
          Arg("bantime", INT64, default=None, help="time in seconds how long (or until when "
                                                   "if [absolute] is set) the IP is banned (0 or "
                                                   "empty means using the default time of 24h "
                                                   "which can also be overwritten by the "
                                                   "-bantime startup argument)"),
          Arg("absolute", ANY, default=None, help="If set, the bantime must be an absolute "
                                                  "timestamp in seconds since epoch (Jan 1 1970 "
                                                  "GMT)")],
    help="Attempts to add or remove an IP/Subnet from the banned list.",
    examples=example_cli("setban", '"192.168.0.6" "add" 86400')
    + example_cli("setban", '"192.168.0.0/24" "add"')
    + example_rpc("setban", '"192.168.0.6", "add", 86400'))
def setban(ctx: RPCContext, subnet: str, command: str, bantime: Optional[int],
           absolute: Any) -> None:
    if command not in ("add", "remove"):
        raise _help_error(setban)
    p2p = _p2p(ctx)
    is_subnet = "/" in subnet
    net = _parse_ban_target(subnet)
    if command == "add":
        banned = p2p.banman.is_subnet_banned(net) if is_subnet else \
            p2p.banman.is_banned(net.network_address)
        if banned:
            raise RPCError(RPC_CLIENT_NODE_ALREADY_ADDED, "Error: IP/Subnet already banned")
        p2p.ban(net, REASON_MANUALLY_ADDED, bantime or 0, absolute is True)
    elif not p2p.unban(net):
        raise RPCError(RPC_CLIENT_INVALID_IP_OR_SUBNET, "Error: Unban failed. Requested "
                       "address/subnet was not previously banned.")
    return None


@rpc_method(
    "listbanned", category="network",
    help="List all banned IPs/Subnets.",
    examples=example_cli("listbanned") + example_rpc("listbanned"))
def listbanned(ctx: RPCContext) -> List[Dict[str, Any]]:
    return _p2p(ctx).banman.banned()


@rpc_method(
    "clearbanned", category="network",
    help="Clear all banned IPs.",
    examples=example_cli("clearbanned") + example_rpc("clearbanned"))
def clearbanned(ctx: RPCContext) -> None:
    _p2p(ctx).clear_banned()
    return None


# ---------------------------------------------------------------- setnetworkactive

@rpc_method(
    "setnetworkactive", category="network", signature="setnetworkactive true|false",
    args=[Arg("state", BOOL, help="true to enable networking, false to disable")],
    help="Disable/enable all p2p network activity.")
def setnetworkactive(ctx: RPCContext, state: bool) -> bool:
    p2p = _p2p(ctx)
    p2p.set_network_active(state)
    return p2p.network_active


#: What the ``network`` entry point registers.
METHODS = [getconnectioncount, ping, getpeerinfo, addnode, disconnectnode, getaddednodeinfo,
           getnettotals, getnetworkinfo, setban, listbanned, clearbanned, setnetworkactive]
