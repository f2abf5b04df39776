"""Address book insert cost by book size, and RPC latency under an ``addr`` flood.

Usage::

    python bench/addrman.py [--runs N]                  # insert cost (in-process)
    python bench/addrman.py --flood [--root DIR] [--seconds S] [--runs N] [-- coind args]

Insert cost: a book with a fixed key is filled to 100, 2,000 and 20,000 addresses
(distinct /16 groups, many sources), then one 1,000-address ``addr`` message worth of
new addresses is added; the time per address is the median of ``--runs`` runs.  Flat
figures mean a constant-time insert.

Flood: a regtest coind (``-connect=0 -listen=1``, from the repository ``--root``, by
default this one, so the code before a change can be measured too) is flooded by one
raw peer sending 1,000-address ``addr`` messages as fast as the socket takes them,
while ``getnetworkinfo`` is called back to back for ``--seconds``; the latencies
before and during the flood, how long until the node dropped the flooder and whether
it banned it.  Arguments after ``--`` go to coind (e.g. ``-banscore=1000000`` to keep
the flooder connected for the whole measurement).  Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from typing import Any, Dict, List

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from coin.p2p.addrman import AddrMan  # noqa: E402
from coin.p2p.netaddr import NetAddress  # noqa: E402
from tests import nodeharness  # noqa: E402
from tests.addrflood import Flooder, addr_frames, percentile, rpc_latencies  # noqa: E402
from tests.p2pclient import RawPeer  # noqa: E402

NOW = 1_700_000_000
SIZES = (100, 2_000, 20_000)
BATCH = 1_000


def _address(n: int) -> NetAddress:
    """The n-th distinct routable address, each /16 group its own."""
    return NetAddress(1, "%d.%d.%d.%d" % (11 + n // 65_536 % 80, n // 256 % 256, n % 256, 1),
                      8333, NOW - 60)


def _filled(size: int) -> AddrMan:
    book = AddrMan(None, lambda: NOW, key=bytes(32), rng=random.Random(1))
    n = 0
    while len(book) < size:
        book.add([_address(n)], source=_address(n + 7_777_777))
        n += 1
    return book


def insert_cost(runs: int) -> Dict[str, Any]:
    result: Dict[str, Any] = {}
    for size in SIZES:
        per_address = []
        for run in range(runs):
            book = _filled(size)
            batch = [_address(10_000_000 + run * BATCH + i) for i in range(BATCH)]
            source = _address(20_000_000 + run)
            start = time.perf_counter()
            book.add(batch, source=source)
            per_address.append((time.perf_counter() - start) / BATCH)
        result[str(size)] = {"us_per_address": round(statistics.median(per_address) * 1e6, 2),
                             "ms_per_1000_address_message":
                                 round(statistics.median(per_address) * BATCH * 1e3, 2)}
    return result


def flood_once(seconds: float, coind_args: List[str]) -> Dict[str, Any]:
    node = nodeharness.NodeProcess.start(tempfile.mkdtemp(prefix="coin-addrflood-"),
                                         ["-connect=0", "-listen=1"] + coind_args)
    try:
        idle = rpc_latencies(node, 2.0)
        flooder = Flooder(RawPeer(node.p2p_port), addr_frames(50))
        flooder.start()
        flooder.ready.wait(30)
        started = time.monotonic()
        busy = rpc_latencies(node, seconds)
        dropped_after = flooder.closed_at - started if flooder.closed_at else None
        flooder.stop()
        banned = [b["address"] for b in node.rpc("listbanned")]
        return {"idle_p50_ms": percentile(idle, 50) * 1e3,
                "idle_p99_ms": percentile(idle, 99) * 1e3,
                "flood_p50_ms": percentile(busy, 50) * 1e3,
                "flood_p99_ms": percentile(busy, 99) * 1e3,
                "flood_max_ms": max(busy) * 1e3, "rpc_calls": len(busy),
                "addr_messages_sent": flooder.sent,
                "flooder_dropped_after_s": dropped_after, "banned": banned}
    finally:
        node.stop()


def flood(runs: int, seconds: float, coind_args: List[str]) -> Dict[str, Any]:
    results = [flood_once(seconds, coind_args) for _ in range(runs)]
    summary = {key: statistics.median(r[key] for r in results)
               for key in ("idle_p50_ms", "idle_p99_ms", "flood_p50_ms", "flood_p99_ms",
                           "flood_max_ms")}
    return {"median": {k: round(v, 2) for k, v in summary.items()}, "runs": results}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--flood", action="store_true")
    parser.add_argument("--root", default=REPO, help="repository whose coind is flooded")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("coind_args", nargs="*")
    args = parser.parse_args()
    if args.flood:
        # The harness starts coind from its ROOT, with PYTHONPATH set to it.
        nodeharness.ROOT = os.path.abspath(args.root)
        out = {"root": nodeharness.ROOT, "coind_args": args.coind_args,
               "seconds": args.seconds, **flood(args.runs, args.seconds, args.coind_args)}
    else:
        out = {"batch": BATCH, "insert_cost": insert_cost(args.runs)}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
