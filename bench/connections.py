"""A new connection for every call, as coin-cli and clients without keep-alive make them.

Usage: ``python bench/connections.py [--calls N] [--runs N] [--against URL]
[--against-pid PID]``

Starts a regtest coind with bench/rpc.py's mined chain and, in a separate process (so the
client has a core to itself), opens a TCP connection, sends one ``getbestblockhash`` POST,
reads the answer and closes, ``--calls`` times in a row; then the same on the ``--against``
node (the reference node of ``../shared/anchor/``, say), interleaved run by run. Prints
one JSON object: per server, the median of ``--runs`` runs of calls per second and of the
server's CPU microseconds per call (its processes' user + system time from /proc around
each run: the figure the machine's other load disturbs least), and the per-call latency
percentiles of the median run. The client is Python, so the calls/s it reaches are a floor
for both servers alike; the CPU figure is the server's own.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from bench.rpc import Target, cpu_seconds, dump, parse_against, start_coind  # noqa: E402

BODY = b'{"method":"getbestblockhash","params":[],"id":1}'


def calls(host: str, port: int, authorization: str, count: int) -> Dict[str, Any]:
    """``count`` calls, each on a new connection: calls/s and latency percentiles (ms)."""
    request = (b"POST / HTTP/1.1\r\nHost: %s\r\nAuthorization: %s\r\nContent-Type: text/plain\r\n"
               b"Content-Length: %d\r\n\r\n" % (host.encode(), authorization.encode(), len(BODY))
               + BODY)
    latencies: List[float] = []
    started = time.perf_counter()
    for _ in range(count):
        begun = time.perf_counter()
        with socket.create_connection((host, port)) as connection:
            connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            connection.sendall(request)
            answer = b""
            while b"\r\n\r\n" not in answer:
                answer += _received(connection)
            head, _, body = answer.partition(b"\r\n\r\n")
            length = int(head.lower().split(b"content-length:", 1)[1].split(b"\r\n", 1)[0])
            while len(body) < length:
                body += _received(connection)
            if not head.startswith(b"HTTP/1.1 200"):
                raise RuntimeError("answer: %r" % head[:40])
        latencies.append(time.perf_counter() - begun)
    elapsed = time.perf_counter() - started
    latencies.sort()
    return {"calls_per_s": count / elapsed,
            **{"p%d_ms" % p: latencies[min(count - 1, count * p // 100)] * 1000 for p in (50, 99)}}


def _received(connection: socket.socket) -> bytes:
    data = connection.recv(65536)
    if not data:
        raise RuntimeError("the server closed the connection before its whole answer")
    return data


def run(target: Target, count: int) -> Dict[str, Any]:
    """One run in a child process, with the server's CPU time per call."""
    code = ("import json, sys; sys.path.insert(0, %r); from bench.connections import calls; "
            "print(json.dumps(calls(%r, %d, %r, %d)))"
            % (REPO, target.host, target.port, target.authorization, count))
    before = cpu_seconds(target.pid)
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True).stdout
    after = cpu_seconds(target.pid)
    point = json.loads(output)
    if before is not None and after is not None:
        point["cpu_us_per_call"] = (after - before) / count * 1e6
    return point


def median_of(runs: List[Dict[str, Any]]) -> Dict[str, Any]:
    middle = sorted(runs, key=lambda r: r["calls_per_s"])[len(runs) // 2]
    point = {"calls_per_s": round(statistics.median(r["calls_per_s"] for r in runs)),
             "calls_per_s_runs": [round(r["calls_per_s"]) for r in runs],
             "median_run_p50_ms": round(middle["p50_ms"], 3),
             "median_run_p99_ms": round(middle["p99_ms"], 3)}
    if all("cpu_us_per_call" in r for r in runs):
        point["cpu_us_per_call"] = round(statistics.median(r["cpu_us_per_call"] for r in runs), 1)
    return point


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=3000, help="calls per run")
    parser.add_argument("--runs", type=int, default=5, help="runs per server (median)")
    parser.add_argument("--against", metavar="URL", default=None,
                        help="also measure this node, http://USER:PASS@HOST:PORT/, interleaved")
    parser.add_argument("--against-pid", type=int, default=None, metavar="PID",
                        help="the other node's process, to count its CPU time per call too")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    workdir = tempfile.mkdtemp(prefix="coin-bench-connections-")
    node = None
    try:
        node, chain = start_coind(workdir, [])
        servers = {"coind": Target(node.rpcport, pid=node.process.pid)}
        if args.against:
            servers["against"] = parse_against(args.against)._replace(pid=args.against_pid)
        runs: Dict[str, List[Dict[str, Any]]] = {name: [] for name in servers}
        for name, target in servers.items():
            run(target, min(200, args.calls))  # warm-up, not counted
        for _ in range(args.runs):
            for name, target in servers.items():
                runs[name].append(run(target, args.calls))
    finally:
        if node is not None:
            node.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    results = {name: median_of(points) for name, points in runs.items()}
    report: Dict[str, Any] = {"calls_per_run": args.calls, "runs": args.runs, "chain": chain,
                              "method": "getbestblockhash, a new TCP connection per call",
                              "results": results}
    if "against" in results:
        report["ratio_coind_to_against"] = {
            "calls_per_s": round(results["coind"]["calls_per_s"]
                                 / results["against"]["calls_per_s"], 2)}
    report["total_s"] = round(time.perf_counter() - started, 1)
    sys.stdout.write(dump(report) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
