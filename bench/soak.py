"""A long run at many connections: errors and memory of every coind process under load.

Usage: ``python bench/soak.py [--duration 60] [--connections 256] [--rpcworkers N]``

Starts a regtest coind with ``-rest`` (and ``-rpcworkers=N``) on bench/rpc.py's mined chain,
then, one after the other, loads it with wrk (one thread, keep-alive) for ``--duration``
seconds at ``--connections`` connections with the RPC ``getbestblockhash`` and with REST
``block/<height 1>.json``, sampling the resident memory (``VmRSS``) of the node and of each
of its front-end workers every second.  Prints one JSON object: per load, requests/s,
p50/p99, errors, and per process the RSS in MiB at the start, after the first tenth of the
run, at the end and at most, with the growth over the last nine tenths ("flat": near 0).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from typing import Any, Dict, List, Optional

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from bench.rest import mined_rest_node, run_wrk as run_wrk_get  # noqa: E402
from bench.rpc import Target, run_wrk as run_wrk_rpc, wrk_version  # noqa: E402
from tests.frontendharness import children  # noqa: E402
from tests.nodeharness import NodeProcess  # noqa: E402


def rss_mib(pid: int) -> Optional[float]:
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def coind_processes(node: NodeProcess) -> Dict[int, str]:
    """The node and its front-end workers (not its script-check helpers), by pid."""
    found = {node.process.pid: "node"}
    for pid in children(node.process.pid):
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                if b"-frontend" in f.read():
                    found[pid] = "worker"
        except OSError:
            pass
    return found


def sample_memory(processes: Dict[int, str], stop: threading.Event,
                  samples: Dict[int, List[float]]) -> None:
    while not stop.is_set():
        for pid in processes:
            value = rss_mib(pid)
            if value is not None:
                samples.setdefault(pid, []).append(value)
        stop.wait(1.0)


def memory_report(processes: Dict[int, str], samples: Dict[int, List[float]]) -> Dict[str, Any]:
    report = {}
    for pid, kind in processes.items():
        values = samples.get(pid, [])
        if not values:
            report["%s %d" % (kind, pid)] = "gone"
            continue
        settled = values[len(values) // 10]
        report["%s %d" % (kind, pid)] = {
            "samples": len(values), "start_mib": round(values[0], 1),
            "after_first_tenth_mib": round(settled, 1), "end_mib": round(values[-1], 1),
            "max_mib": round(max(values), 1), "growth_last_nine_tenths_mib":
                round(values[-1] - settled, 1)}
    return report


def soak(node: NodeProcess, name: str, load: Any) -> Dict[str, Any]:
    processes = coind_processes(node)
    samples: Dict[int, List[float]] = {}
    stop = threading.Event()
    sampler = threading.Thread(target=sample_memory, args=(processes, stop, samples))
    sampler.start()
    try:
        result = load()
    finally:
        stop.set()
        sampler.join()
    still = coind_processes(node)
    return {"load": name, **{k: round(v, 3) if isinstance(v, float) else v
                             for k, v in result.items()},
            "rss": memory_report(processes, samples),
            "same_processes_after": sorted(still) == sorted(processes)}


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--duration", type=float, default=60.0, help="seconds per load")
    parser.add_argument("--connections", type=int, default=256)
    parser.add_argument("--rpcworkers", type=int, default=0, metavar="N")
    parser.add_argument("--txindex", action="store_true", help="run coind with -txindex")
    args = parser.parse_args(argv)
    if wrk_version() is None:
        parser.error("needs wrk")
    started = time.perf_counter()
    with mined_rest_node(args) as (node, chain, script):
        target = Target(node.rpcport)
        block = "/rest/block/%s.json" % node.rpc("getblockhash", 1)
        runs = [
            soak(node, "RPC getbestblockhash", lambda: run_wrk_rpc(
                target, "getbestblockhash", args.connections, args.duration)),
            soak(node, "REST block.json (height 1)", lambda: run_wrk_get(
                script, node.rpcport, block, args.connections, args.duration)),
        ]
        alive = node.rpc("getblockcount") == chain["blocks"]
    report = {"load_generator": "wrk (%s), 1 thread, keep-alive" % wrk_version(),
              "cpus": os.cpu_count(), "rpcworkers": args.rpcworkers,
              "connections": args.connections, "duration_s": args.duration,
              "rss_sampled": "VmRSS of each coind process every second", "runs": runs,
              "node_answers_after": alive, "total_s": round(time.perf_counter() - started, 1)}
    sys.stdout.write(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
