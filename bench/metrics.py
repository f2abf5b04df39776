"""What the metrics instrumentation adds to each JSON-RPC call, measured in-process.

Usage: ``python bench/metrics.py [--calls N] [--runs N]``

One ``JSONRPCCore`` without an observer and one reporting to ``Instruments.rpc_call`` (what
``-metricsbind`` wires) answer the same batch of ``getblockhash`` calls, alternately, with
no HTTP and no sockets, so machine load affects both alike. Prints one JSON object: the
median and fastest batch time of each and the added microseconds per call (the fastest
runs are the least disturbed by other processes); plus the cost of one ``rpc_call``
recording on its own.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from typing import Any, List, Optional

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from prometheus_client import CollectorRegistry  # noqa: E402
from twisted.internet.task import Clock  # noqa: E402

from coin.metrics import Instruments  # noqa: E402
from coin.rpc.auth import Whitelist  # noqa: E402
from coin.rpc.jsonrpc import JSONRPCCore, Warmup  # noqa: E402
from coin.rpc.registry import INT, Arg, MethodTable, rpc_method  # noqa: E402


@rpc_method("getblockhash", category="blockchain", args=[Arg("height", INT)])
def getblockhash(ctx: Any, height: int) -> str:
    return "%064x" % height


def make_core(observe: Any) -> JSONRPCCore:
    warmup = Warmup(None)
    return JSONRPCCore(MethodTable([getblockhash]), None, whitelist=Whitelist(), warmup=warmup,
                       clock=Clock(), observe=observe)


def time_batch(core: JSONRPCCore, body: bytes) -> float:
    started = time.perf_counter()
    reply = []
    core.handle(body, "u").addCallback(reply.append)
    elapsed = time.perf_counter() - started
    assert reply and reply[0].status == 200
    return elapsed


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=1000, help="calls per batch")
    parser.add_argument("--runs", type=int, default=30, help="batches per server (median)")
    args = parser.parse_args(argv)
    body = json.dumps([{"method": "getblockhash", "params": [i], "id": i}
                       for i in range(args.calls)]).encode()
    instruments = Instruments(CollectorRegistry(), {"getblockhash"})
    plain, observed = make_core(None), make_core(instruments.rpc_call)
    times: dict = {"off": [], "on": []}
    for _ in range(args.runs):
        times["off"].append(time_batch(plain, body))
        times["on"].append(time_batch(observed, body))
    off, on = statistics.median(times["off"]), statistics.median(times["on"])
    fastest = {name: min(values) for name, values in times.items()}
    started = time.perf_counter()
    for _ in range(100_000):
        instruments.rpc_call("getblockhash", 200, 0.0001)
    recording = (time.perf_counter() - started) / 100_000
    print(json.dumps({
        "calls_per_batch": args.calls, "runs": args.runs,
        "batch_ms_median": {"off": round(off * 1e3, 2), "on": round(on * 1e3, 2)},
        "batch_ms_fastest": {name: round(t * 1e3, 2) for name, t in fastest.items()},
        "added_us_per_call": round((on - off) / args.calls * 1e6, 2),
        "added_us_per_call_fastest": round((fastest["on"] - fastest["off"]) / args.calls * 1e6,
                                           2),
        "rpc_call_recording_us": round(recording * 1e6, 2),
    }, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
