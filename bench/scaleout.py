"""Front ends on PostgreSQL against one SQLite node, same machine, same run; prints JSON.

    python bench/scaleout.py [--blocks 200] [--duration 3] [--connections 8] [--rounds 3]

One SQLite node, and one writer on PostgreSQL (``tests/pgserver.py``'s server, test settings)
with 1, 2 and 4 stand-alone front ends (``coind -frontend``, each with a data directory of
its own), all with the same ``--blocks`` mined.  Load: ``wrk`` (one thread per process
under load, ``--connections`` each, all started together so the totals are concurrent):
read-only RPC (``getblockhash`` over every height, ``bench/wrk_post.lua``) and REST
(``/rest/block/notxdetails/<tip>.json``).  Requests/s summed over the processes, median of
the rounds.  Then the writer's connect rate on each engine (``bench/dbengine.py``'s chain
and timing, one round).
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from typing import Dict, List, Tuple

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import dbengine  # noqa: E402
from bench.rpc import AUTHORIZATION, WRK_SCRIPT, wrk_version  # noqa: E402
from tests import pgserver  # noqa: E402
from tests.frontendharness import FrontendProcess, wait_for  # noqa: E402
from tests.nodeharness import MINER_ADDRESS, NodeProcess  # noqa: E402

FRONTEND_COUNTS = (1, 2, 4)
NODE_ARGS = ("-txindex", "-listen=0", "-servefrontends=1")


def wrk_command(port: int, kind: str, tip: str, top: int, connections: int,
                duration: int) -> List[str]:
    base = ["wrk", "-t1", "-c%d" % connections, "-d%ds" % duration, "--timeout", "10s"]
    if kind == "rpc":
        return base + ["-s", WRK_SCRIPT, "http://127.0.0.1:%d/" % port, "--", AUTHORIZATION,
                       "getblockhash", str(top)]
    return base + ["http://127.0.0.1:%d/rest/block/notxdetails/%s.json" % (port, tip)]


def requests_per_s(output: str) -> float:
    """wrk's total (its Lua script's JSON line, or the plain report's Requests/sec); an
    error if any answer was not 200 (a refused request would count as a fast one)."""
    for line in output.splitlines():
        if line.startswith("WRKJSON "):
            raw = json.loads(line[len("WRKJSON "):])
            if raw["status_errors"]:
                raise RuntimeError("non-200 answers: %s" % line)
            return raw["requests"] / (raw["duration_us"] / 1e6)
    if "Non-2xx" in output:
        raise RuntimeError("non-200 answers: %s" % output)
    return float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))


def load(ports: List[int], kind: str, tip: str, top: int, connections: int,
         duration: int) -> float:
    """Requests/s summed over one wrk per port, all running at once."""
    processes = [subprocess.Popen(wrk_command(port, kind, tip, top, connections, duration),
                                  stdout=subprocess.PIPE, text=True) for port in ports]
    return sum(requests_per_s(p.communicate()[0]) for p in processes)


def mined(node: NodeProcess, blocks: int) -> str:
    for _ in range(0, blocks, 100):
        node.rpc("generatetoaddress", min(100, blocks), MINER_ADDRESS)
    return node.rpc("getbestblockhash")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--blocks", type=int, default=200)
    parser.add_argument("--duration", type=int, default=3)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    reason = pgserver.skip_reason() or (None if wrk_version() else "wrk is not installed")
    if reason is not None:
        raise SystemExit(reason)
    work = tempfile.mkdtemp(prefix="coin-scaleout-")
    server = pgserver.PostgresServer()
    server.start()
    atexit.register(server.stop)
    server.execute("CREATE DATABASE chain")
    url = server.url("chain")
    processes: List[NodeProcess] = []
    atexit.register(lambda: [p.kill() for p in processes])
    sqlite_node = NodeProcess.start(os.path.join(work, "sqlite"), NODE_ARGS)
    writer = NodeProcess.start(os.path.join(work, "writer"), NODE_ARGS + ("-dbengine=%s" % url,))
    processes += [sqlite_node, writer]
    sqlite_tip = mined(sqlite_node, options.blocks)
    tip = mined(writer, options.blocks)  # the same heights (block times differ)
    frontends = [FrontendProcess.start_for(writer, ("-txindex", "-dbengine=%s" % url),
                                           datadir=os.path.join(work, "fe%d" % i))
                 for i in range(max(FRONTEND_COUNTS))]
    processes += frontends
    for frontend in frontends:
        wait_for(lambda: frontend.rpc("getbestblockhash") == tip, what="front end at the tip")
    setups: Dict[str, Tuple[List[int], str]] = {"sqlite_node": ([sqlite_node.rpcport], sqlite_tip)}
    setups.update({"frontends_%d" % n: ([f.rpcport for f in frontends[:n]], tip)
                   for n in FRONTEND_COUNTS})
    rounds: Dict[str, Dict[str, List[float]]] = {kind: {name: [] for name in setups}
                                                 for kind in ("rpc", "rest")}
    for _ in range(options.rounds):
        for kind in rounds:
            for name, (ports, setup_tip) in setups.items():
                rounds[kind][name].append(load(ports, kind, setup_tip, options.blocks,
                                               options.connections, options.duration))
    for process in processes:
        process.stop()
    processes.clear()
    blocks = dbengine.build(100, 10)
    server.execute("CREATE DATABASE connect")
    connect_rate = {"sqlite": dbengine.connect(blocks, "sqlite"),
                    "postgresql_fsync_off": dbengine.connect(blocks, server.url("connect"))}
    print(json.dumps({
        "benchmark": "scaleout",
        "cpus": os.cpu_count(),
        "blocks": options.blocks,
        "load_generator": "%s, 1 thread and %d connections per process under load, %d s"
                          % (wrk_version(), options.connections, options.duration),
        "rpc": "getblockhash over every height",
        "rest": "/rest/block/notxdetails/<tip>.json",
        "requests_per_s_median": {kind: {name: round(statistics.median(v))
                                         for name, v in by_setup.items()}
                                  for kind, by_setup in rounds.items()},
        "requests_per_s_rounds": {kind: {name: [round(x) for x in v]
                                         for name, v in by_setup.items()}
                                  for kind, by_setup in rounds.items()},
        "writer_connect_blocks_per_s": {k: round(v, 1) for k, v in connect_rate.items()},
        "connect_chain": "%d blocks, the last 100 with 10 chained spends each" % len(blocks),
        "load_average": os.getloadavg()[0],
    }, indent=2))


if __name__ == "__main__":
    main()
