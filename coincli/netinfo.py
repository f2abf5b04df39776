"""``coin-cli -netinfo [level]``: Core 0.21's peer connections dashboard.

One batch (getpeerinfo, getnetworkinfo) and a text report in Core 0.21's layout: peer
counts by network (ipv4, ipv6, onion) and direction with block-relay peers, the local
addresses, and for levels 1-4 a peer listing before it (2: with addresses, 3: with
versions, 4: with both).
"""

from __future__ import annotations

import coin

ID_PEERINFO = 0
ID_NETWORKINFO = 1
BATCH = [{"method": "getpeerinfo", "params": None, "id": ID_PEERINFO},
         {"method": "getnetworkinfo", "params": None, "id": ID_NETWORKINFO}]

NETWORKS = ("ipv4", "ipv6", "onion")
MAX_LEVEL = 4
_SUFFIX = {"main": "", "test": " testnet", "regtest": " regtest"}


def parse_level(args: list[str]) -> int:
    """The first argument as Core's ParseUInt8 reads it (0 if absent or not one)."""
    if not args:
        return 0
    text = args[0]
    if not text.isascii() or not text.isdigit() or int(text) > 255:
        return 0
    return int(text)


def _network(peer: dict) -> str:
    """getpeerinfo's ``network`` (Core 0.21), or what the address says where it is absent."""
    network = peer.get("network")
    if network:
        return network
    addr = peer.get("addr") or ""
    if addr.startswith("["):
        return "ipv6"
    if ".onion" in addr:
        return "onion"
    return "ipv4"


def _number(value: object, default: float = 0) -> float:
    return float(value) if value is not None else default


def _ping(seconds: float) -> str:
    if seconds < 0:
        return ""
    milliseconds = round(1000 * seconds)
    return "-" if milliseconds > 999999 else str(milliseconds)


def _ago(now: int, then: float, unit: int = 1) -> str:
    return str(int((now - then) // unit)) if then else ""


def _peer_listing(peers: list[dict], level: int, now: int) -> str:
    """The levels 1-4 table, outbound after inbound, each by minimum ping."""
    with_addr, with_version = level in (2, 4), level in (3, 4)
    rows = sorted(peers, key=lambda p: (not p["inbound"], _number(p.get("minping"), -1)))
    id_width = max([2] + [len(str(p["id"])) for p in rows])
    addr_width = max(len(p["addr"]) + 1 for p in rows) if with_addr else 0
    text = "Peer connections sorted by direction and min ping\n"
    text += "<-> relay   net  mping   ping send recv  txn  blk  age "
    text += "%*s %-*s%s\n" % (id_width, "id", addr_width, "address" if with_addr else "",
                              "version" if with_version else "")
    for peer in rows:
        version = "%s%s" % (peer.get("version", 0), peer.get("subver", ""))
        text += "%3s %5s %5s%7s%7s%5s%5s%5s%5s%5s %*s %-*s%s\n" % (
            "in" if peer["inbound"] else "out",
            "full" if peer.get("relaytxes", True) else "block",
            _network(peer),
            _ping(_number(peer.get("minping"), -1)),
            _ping(_number(peer.get("pingtime"), -1)),
            _ago(now, _number(peer.get("lastsend"))),
            _ago(now, _number(peer.get("lastrecv"))),
            _ago(now, _number(peer.get("last_transaction")), 60),
            _ago(now, _number(peer.get("last_block")), 60),
            _ago(now, _number(peer.get("conntime")), 60),
            id_width, peer["id"],
            addr_width, peer["addr"] if with_addr else "",
            version if with_version and version != "0" else "")
    return text + "                    ms     ms  sec  sec  min  min  min\n\n"


def report(peers: list[dict], networkinfo: dict, level: int, chain: str, now: int) -> str:
    """The dashboard text (Core 0.21's NetinfoRequestHandler::ProcessReply)."""
    # counts[in/out/total][ipv4, ipv6, onion, total, block-relay]
    counts = [[0] * (len(NETWORKS) + 2) for _ in range(3)]
    known = []
    for peer in peers:
        network = _network(peer)
        if network not in NETWORKS:
            continue
        known.append(peer)
        outbound = 0 if peer["inbound"] else 1
        columns = [NETWORKS.index(network), len(NETWORKS)]
        if not peer.get("relaytxes", True):
            columns.append(len(NETWORKS) + 1)
        for row in (outbound, 2):
            for column in columns:
                counts[row][column] += 1
    text = "Coin Core v%s%s - %s%s\n\n" % (coin.__version__, _SUFFIX.get(chain, ""),
                                           networkinfo.get("protocolversion"),
                                           networkinfo.get("subversion", ""))
    if 0 < level <= MAX_LEVEL and known:
        text += _peer_listing(known, level, now)
    text += "        ipv4    ipv6   onion   total  block-relay\n"
    for name, row in zip(("in", "out", "total"), counts):
        text += "%-5s  %5i   %5i   %5i   %5i   %5i\n" % (name, *row)
    text += "\nLocal addresses"
    local = networkinfo.get("localaddresses") or []
    if not local:
        return text + ": n/a\n"
    width = max(len(entry["address"]) + 1 for entry in local)
    for entry in local:
        text += "\n%-*s    port %6i    score %6i" % (width, entry["address"], int(entry["port"]),
                                                     int(entry["score"]))
    return text


def process(peerinfo: dict, networkinfo: dict, level: int, chain: str, now: int) -> dict:
    """The two replies as one reply object holding the report (or the first error)."""
    for reply in (peerinfo, networkinfo):
        if reply.get("error") is not None:
            return reply
    text = report(peerinfo["result"], networkinfo["result"], level, chain, now)
    return {"result": text, "error": None, "id": 1}
