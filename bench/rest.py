"""REST throughput and latency of a real coind, and what REST load does to RPC latency.

Usage: ``python bench/rest.py [--duration S] [--runs N] [--client wrk|python] [--against URL]
[--against-pid PID] [--against-only] [--rpcworkers N] [--txindex]``

Builds (or reuses, under ``--workdir``) the chain of ``bench/chaindata.py`` (blocks of
2,000 P2PKH spends), feeds it to a fresh regtest coind with ``submitblock``, then at 8
keep-alive connections measures requests/s and p50/p99 latency of
``chaininfo.json``, ``headers/2000/<genesis>.json``, ``tx/<txid>.json`` (a spend in the big
block), ``getutxos/<outpoint>.json`` and ``block/<big>.json|.hex|.bin``; the median time of
one request for the big block's JSON and hex (sequential, one connection); and the
latency of the ``uptime`` RPC (one client, sequential) idle and while 8 connections load
``block/<big>.json``. Each point is the median of ``--runs`` runs.

Load generator: ``wrk`` (GET requests; a Lua script written to the work directory prints
one JSON line) when installed, else a Python keep-alive client in a separate process.
Prints one JSON object.

``--against http://USER:PASS@HOST:PORT/`` (a node with ``-rest``, credentials for its
RPC; the reference node of ``../shared/anchor/``, say) also measures, on both nodes,
interleaved run by run at 1, 8 and 64 connections, ``chaininfo.json``, the JSON and
hex of the block at height 1 (a coinbase-only block on both chains) and the hex and JSON of
its coinbase transaction (``/tx``: the reference serves confirmed transactions with
``-txindex``, or without it while an output is unspent; ``--txindex`` starts coind with
``-txindex`` too), and prints coind/other ratios.  Each point of the comparison also gives
``cpu_us``, CPU microseconds per request of coind's processes (its ``-rpcworkers`` included)
and of the other node's with ``--against-pid PID`` (bench/rpc.py's figure).  With ``--against-only`` only that
comparison runs, on bench/rpc.py's mined chain instead of the big blocks (minutes faster).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from typing import Any, Dict, Iterator, List, Optional, Tuple

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from bench import chaindata  # noqa: E402
from bench.rpc import (AUTHORIZATION, CONNECTIONS as AGAINST_CONNECTIONS, Target,  # noqa: E402
                       add_warmup_option, dump, measured, median_point, parse_against, pick_client, rpc_call,
                       start_coind, wrk_version)
from tests.frontendharness import wait_for_workers  # noqa: E402
from tests.nodeharness import NodeProcess  # noqa: E402

CONNECTIONS = 8

WRK_GET = r'''
local path = nil
function init(args) path = args[1] end
function request() return wrk.format("GET", path) end
function done(summary, latency, per_thread)
  local e = summary.errors
  io.write(string.format(
    'WRKJSON {"requests":%d,"duration_us":%d,"p50_us":%d,"p99_us":%d,"status_errors":%d,' ..
    '"connect_errors":%d,"read_errors":%d,"write_errors":%d,"timeouts":%d}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    e.status, e.connect, e.read, e.write, e.timeout))
end
'''


def wrk_get_script(workdir: str) -> str:
    """Writes the wrk script of GET requests (WRK_GET) to ``workdir``; its path."""
    script = os.path.join(workdir, "wrk_get.lua")
    with open(script, "w") as f:
        f.write(WRK_GET)
    return script


def run_wrk(script: str, port: int, path: str, connections: int,
            duration: float, host: str = "127.0.0.1") -> Dict[str, Any]:
    command = ["wrk", "-t1", "-c%d" % connections, "-d%ds" % max(1, round(duration)),
               "--timeout", "30s", "-s", script, "http://%s:%d%s" % (host, port, path), "--",
               path]
    output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    line = [ln for ln in output.splitlines() if ln.startswith("WRKJSON ")][-1]
    raw = json.loads(line[len("WRKJSON "):])
    errors = raw["connect_errors"] + raw["read_errors"] + raw["write_errors"] + raw["timeouts"]
    return {"rps": raw["requests"] / (raw["duration_us"] / 1e6), "requests": raw["requests"],
            "p50_ms": raw["p50_us"] / 1000, "p99_ms": raw["p99_us"] / 1000,
            "non200": raw["status_errors"], "socket_errors": errors}


def _python_load(port: int, path: str, connections: int, duration: float,
                 host: str = "127.0.0.1") -> Dict[str, Any]:
    latencies: List[float] = []
    counts = {"non200": 0, "socket_errors": 0}
    deadline = time.perf_counter() + duration

    def client() -> None:
        conn = http.client.HTTPConnection(host, port, timeout=60)
        try:
            while time.perf_counter() < deadline:
                started = time.perf_counter()
                conn.request("GET", path)
                response = conn.getresponse()
                response.read()
                latencies.append(time.perf_counter() - started)
                if response.status != 200:
                    counts["non200"] += 1
        except OSError:
            counts["socket_errors"] += 1
        finally:
            conn.close()

    started = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(connections)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - started
    latencies.sort()
    return {"rps": len(latencies) / elapsed, "requests": len(latencies),
            "p50_ms": _pct(latencies, 50),
            "p99_ms": _pct(latencies, 99), **counts}


def run_python(script: str, port: int, path: str, connections: int,
               duration: float, host: str = "127.0.0.1") -> Dict[str, Any]:
    code = ("import json, sys; sys.path.insert(0, %r); from bench.rest import _python_load; "
            "print(json.dumps(_python_load(%d, %r, %d, %r, %r)))"
            % (REPO, port, path, connections, duration, host))
    return json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True,
                                     text=True, check=True).stdout)


def _pct(sorted_values: List[float], p: float) -> float:
    if not sorted_values:
        return 0.0
    return sorted_values[min(len(sorted_values) - 1, int(len(sorted_values) * p / 100))] * 1000


def get(port: int, path: str, host: str = "127.0.0.1") -> tuple[int, bytes]:
    conn = http.client.HTTPConnection(host, port, timeout=120)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def single_request_ms(port: int, path: str, repeats: int = 7) -> Dict[str, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    times, size = [], 0
    try:
        for _ in range(repeats):
            started = time.perf_counter()
            conn.request("GET", path)
            response = conn.getresponse()
            body = response.read()
            times.append(time.perf_counter() - started)
            assert response.status == 200, (path, response.status, body[:200])
            size = len(body)
    finally:
        conn.close()
    return {"median_ms": round(statistics.median(times) * 1000, 2), "bytes": size,
            "runs_ms": [round(t * 1000, 2) for t in times]}


def rpc_latency(port: int, duration: float) -> Dict[str, Any]:
    """``uptime`` RPCs back to back on one connection for ``duration`` seconds."""
    body = b'{"method":"uptime","params":[],"id":1}'
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    latencies: List[float] = []
    deadline = time.perf_counter() + duration
    try:
        while time.perf_counter() < deadline:
            started = time.perf_counter()
            conn.request("POST", "/", body=body, headers={"Authorization": AUTHORIZATION})
            response = conn.getresponse()
            response.read()
            assert response.status == 200
            latencies.append(time.perf_counter() - started)
    finally:
        conn.close()
    latencies.sort()
    return {"calls": len(latencies), "p50_ms": round(_pct(latencies, 50), 3),
            "p99_ms": round(_pct(latencies, 99), 3), "max_ms": round(latencies[-1] * 1000, 3)}


def against_paths(target: Target) -> Dict[str, str]:
    """The REST rows of the comparison, on one node: its chain state and its block at height 1."""
    one = rpc_call(target, "getblockhash", 1)
    coinbase = rpc_call(target, "getblock", one)["tx"][0]
    return {"chaininfo.json": "/rest/chaininfo.json", "block.json (height 1)":
            "/rest/block/%s.json" % one, "block.hex (height 1)": "/rest/block/%s.hex" % one,
            "tx.hex (height 1 coinbase)": "/rest/tx/%s.hex" % coinbase,
            "tx.json (height 1 coinbase)": "/rest/tx/%s.json" % coinbase}


def ratios(coind: Dict[str, Any], other: Dict[str, Any]) -> Dict[str, float]:
    """Above 1 where coind does better: requests/s, p99 and (when both are known) CPU time
    per request."""
    result = {"rps": round(coind["rps"] / other["rps"], 2),
              "p99": round(other["p99_ms"] / coind["p99_ms"], 2)}
    if "cpu_us" in coind and "cpu_us" in other:
        result["cpu"] = round(other["cpu_us"] / coind["cpu_us"], 2)
    return result


def compare(load: Any, script: str, targets: Dict[str, Target], runs: int,
            duration: float, warmup: float) -> Dict[str, Any]:
    """Each row on each node at 1, 8 and 64 connections, interleaved run by run; with ratios."""
    paths = {name: against_paths(target) for name, target in targets.items()}
    for name, target in targets.items():
        for path in paths[name].values():
            status, body = get(target.port, path, target.host)
            assert status == 200, (name, path, status, body[:200])
    results: Dict[str, Any] = {name: {} for name in targets}
    for row in paths["coind"]:
        for connections in AGAINST_CONNECTIONS:
            points: Dict[str, List[Dict[str, Any]]] = {name: [] for name in targets}
            for _ in range(runs):
                for name, target in targets.items():
                    points[name].append(measured(
                        lambda t, path, c, d: load(script, t.port, path, c, d, t.host),
                        target, paths[name][row], connections, duration, warmup))
            for name in targets:
                results[name].setdefault(row, {})[str(connections)] = median_point(points[name])
    results["ratio_coind_to_against"] = {row: {c: ratios(point, results["against"][row][c])
                                              for c, point in per.items()}
                                          for row, per in results["coind"].items()}
    return results


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--duration", type=float, default=3.0, help="seconds per run")
    parser.add_argument("--runs", type=int, default=3, help="runs per point (median)")
    parser.add_argument("--client", choices=("wrk", "python"), default=None)
    parser.add_argument("--workdir", default=None,
                        help="keep the built chain here between runs (default: a temp dir)")
    parser.add_argument("--against", metavar="URL", default=None,
                        help="also measure this node's REST, http://USER:PASS@HOST:PORT/, interleaved")
    parser.add_argument("--against-pid", type=int, default=None, metavar="PID",
                        help="the --against node's process, for its CPU time per request")
    parser.add_argument("--rpcworkers", type=int, default=0, metavar="N",
                        help="run coind with -rpcworkers=N (default: 0)")
    parser.add_argument("--txindex", action="store_true",
                        help="run coind with -txindex (the /tx rows then use the index)")
    parser.add_argument("--against-only", action="store_true",
                        help="with --against: only the comparison, on a mined chain (no big blocks)")
    add_warmup_option(parser)
    args = parser.parse_args(argv)
    client = pick_client(parser, args.client, "python")
    load = run_wrk if client == "wrk" else run_python
    if args.against_only:
        if not args.against:
            parser.error("--against-only needs --against")
        return against_only(load, args)

    started = time.perf_counter()
    workdir = args.workdir or tempfile.mkdtemp(prefix="coin-bench-rest-")
    os.makedirs(workdir, exist_ok=True)
    script = wrk_get_script(workdir)
    node: Optional[NodeProcess] = None
    try:
        blocks = chaindata.load(chaindata.build(workdir))
        node_dir = tempfile.mkdtemp(dir=workdir, prefix="node-")
        node = NodeProcess.start(node_dir, (["-rpcworkers=%d" % args.rpcworkers]
                                            if args.rpcworkers else []) + txindex_args(args))
        fed = time.perf_counter()
        for block in blocks:
            result = node.rpc("submitblock", block.serialize().hex())
            assert result is None, result
        feed_s = time.perf_counter() - fed
        tip = node.rpc("getbestblockhash")
        wait_for_workers(node, args.rpcworkers,
                         lambda: get(node.rpcport, "/rest/chaininfo.json")[1].find(
                             tip.encode()) >= 0)
        big = max(blocks, key=lambda b: len(b.txs))
        spend = big.txs[1]
        spent_and_unspent = "%s-0/%s-0" % (spend.vin[0].prevout.txid[::-1].hex(),
                                            spend.txid_hex)
        genesis = node.rpc("getblockhash", 0)
        paths = {
            "chaininfo.json": "/rest/chaininfo.json",
            "headers/2000.json": "/rest/headers/2000/%s.json" % genesis,
            "tx.json": "/rest/tx/%s.json" % spend.txid_hex,
            "getutxos.json (2 outpoints)": "/rest/getutxos/%s.json" % spent_and_unspent,
            "block.json (%d txs)" % len(big.txs): "/rest/block/%s.json" % big.hash_hex,
            "block.hex": "/rest/block/%s.hex" % big.hash_hex,
            "block.bin": "/rest/block/%s.bin" % big.hash_hex,
        }
        for path in paths.values():
            status, body = get(node.rpcport, path)
            assert status == 200, (path, status, body[:200])
        results: Dict[str, Any] = {}
        for name, path in paths.items():
            runs = [load(script, node.rpcport, path, CONNECTIONS, args.duration)
                    for _ in range(args.runs)]
            results[name] = median_point(runs)
        single = {"block.json": single_request_ms(node.rpcport, paths[
                      "block.json (%d txs)" % len(big.txs)]),
                  "block.hex": single_request_ms(node.rpcport, paths["block.hex"])}
        idle = rpc_latency(node.rpcport, args.duration)
        under_load: Dict[str, Any] = {}
        loader = threading.Thread(target=lambda: under_load.update(load(
            script, node.rpcport, paths["block.json (%d txs)" % len(big.txs)], CONNECTIONS,
            args.duration + 1)))
        loader.start()
        time.sleep(0.5)
        busy = rpc_latency(node.rpcport, args.duration)
        loader.join()
        height = node.rpc("getblockcount")
        against = (compare(load, script, {"coind": Target(node.rpcport, pid=node.process.pid),
                                          "against": against_target(args)},
                           args.runs, args.duration, args.warmup) if args.against else None)
    finally:
        if node is not None:
            node.stop()
            shutil.rmtree(node.datadir, ignore_errors=True)
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)

    report = {
        "load_generator": ("wrk (%s), 1 thread, GET" % wrk_version() if client == "wrk"
                           else "python keep-alive client threads, 1 process"),
        "cpus": os.cpu_count(),
        "rpcworkers": args.rpcworkers,
        "connections": CONNECTIONS,
        "duration_s_per_run": args.duration,
        "runs_per_point": args.runs,
        "warmup_s_before_each_run": args.warmup,
        "chain": {"blocks": height, "big_block_txs": len(big.txs),
                  "big_block_bytes": len(big.serialize()), "submitblock_feed_s": round(feed_s, 1)},
        "rest_8_connections": results,
        "big_block_single_request": single,
        "rpc_uptime_idle": idle,
        "rpc_uptime_during_block_json_load": busy,
        "block_json_load_during_rpc_test": {k: round(v, 3) if isinstance(v, float) else v
                                            for k, v in under_load.items()},
        **({"against": args.against, "against_comparison": against} if against else {}),
        "total_s": round(time.perf_counter() - started, 1),
    }
    sys.stdout.write(json.dumps(report, indent=2) + "\n")
    return 0


def against_target(args: argparse.Namespace) -> Target:
    """The --against node, with its process when --against-pid names it."""
    return parse_against(args.against)._replace(pid=args.against_pid)


def txindex_args(args: argparse.Namespace) -> List[str]:
    """``-txindex`` for coind when ``--txindex`` is given."""
    return ["-txindex"] if args.txindex else []


@contextmanager
def mined_rest_node(args: argparse.Namespace) -> Iterator[Tuple[NodeProcess, Dict[str, Any], str]]:
    """``(node, chain, wrk script)``: a coind with -rest (and the options of ``args``) on
    bench/rpc.py's mined chain, and the wrk GET script; stopped and removed afterwards."""
    workdir = tempfile.mkdtemp(prefix="coin-bench-rest-")
    node: Optional[NodeProcess] = None
    try:
        script = wrk_get_script(workdir)
        node, chain = start_coind(workdir, ["-rest"] + txindex_args(args), args.rpcworkers)
        yield node, chain, script
    finally:
        if node is not None:
            node.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def against_only(load: Any, args: argparse.Namespace) -> int:
    """The comparison alone, on a node with bench/rpc.py's mined chain: minutes less."""
    started = time.perf_counter()
    with mined_rest_node(args) as (node, chain, script):
        against = compare(load, script, {"coind": Target(node.rpcport, pid=node.process.pid),
                                         "against": against_target(args)},
                          args.runs, args.duration, args.warmup)
    report = {"rpcworkers": args.rpcworkers, "txindex": args.txindex, "cpus": os.cpu_count(),
              "chain": chain,
              "duration_s_per_run": args.duration, "runs_per_point": args.runs,
              "warmup_s_before_each_run": args.warmup,
              "against_comparison": against, "total_s": round(time.perf_counter() - started, 1)}
    sys.stdout.write(dump(report) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
