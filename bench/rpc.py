"""JSON-RPC server throughput and latency of a real coind, against two constant servers.

Usage: ``python bench/rpc.py [--duration S] [--runs N] [--client wrk|asyncio]``

Starts, through the test harness, a regtest coind with a 1,000-block chain
(``generatetoaddress``; if the node does not have that method yet, the chain is
prepared with ``ChainBuilder`` before start-up and the JSON says so), and in
subprocesses ``bench/constant_servers.py web`` (a bare twisted.web resource returning a
constant) and ``raw`` (a bare Twisted protocol with minimal HTTP/1.1 framing). Then, for
``getbestblockhash`` and ``getblockhash`` (heights cycling 0..999) at 1, 8 and 64
keep-alive connections, it measures requests/s, p50 and p99 latency and non-200
answers on each server; every point is the median of ``--runs`` runs (non-200 counts
are summed). The constant servers answer the same bytes whatever is asked; they get
the same requests. Last, one 1,000-request batch (getblockhash 0..999) is timed on
coind (median of 5).

Load generator: ``wrk`` when installed (Debian: ``apt-get install -y wrk``), one
thread, driven by ``bench/wrk_post.lua``; otherwise a Python asyncio keep-alive client
in a separate process (slower: on the constant servers it may be the bottleneck, the
JSON says which was used). Prints one JSON object; about 2 minutes with the defaults on 2 cores.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import http.client
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from tests.nodeharness import MINER_ADDRESS, PASSWORD, USER, NodeProcess  # noqa: E402

BLOCKS = 1000
CONNECTIONS = (1, 8, 64)
METHODS = ("getbestblockhash", "getblockhash")
AUTHORIZATION = "Basic " + base64.b64encode(("%s:%s" % (USER, PASSWORD)).encode()).decode()
WRK_SCRIPT = os.path.join(REPO, "bench", "wrk_post.lua")
INSTALL_WRK = "apt-get install -y wrk"


# ------------------------------------------------------------------ servers


def start_coind(workdir: str) -> tuple[NodeProcess, Dict[str, Any]]:
    """A node with BLOCKS blocks: mined over RPC if it can, else prepared on disk."""
    datadir = os.path.join(workdir, "coind")
    node = NodeProcess.start(datadir)
    chain: Dict[str, Any] = {"blocks": BLOCKS}
    if not node.rpc("help", "generatetoaddress").startswith("help: unknown command"):
        started = time.perf_counter()
        node.rpc("generatetoaddress", BLOCKS, MINER_ADDRESS)
        chain["mined_with"] = "generatetoaddress"
        chain["mining_s"] = round(time.perf_counter() - started, 2)
    else:
        node.stop()
        shutil.rmtree(datadir)
        from coin.testing.chainbuilder import ChainBuilder, open_chain
        state = open_chain(os.path.join(datadir, "regtest"))
        ChainBuilder(state).mine(BLOCKS)
        state.close()
        node = NodeProcess.start(datadir)
        chain["mined_with"] = "ChainBuilder before start-up"
        chain["missing"] = "generatetoaddress is not registered on this node"
    assert node.rpc("getblockcount") == BLOCKS
    return node, chain


def start_constant(kind: str) -> tuple[subprocess.Popen, int]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [REPO, os.environ.get(
        "PYTHONPATH")])))
    process = subprocess.Popen([sys.executable, os.path.join(REPO, "bench", "constant_servers.py"),
                                kind], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL,
                               text=True, env=env)
    line = process.stdout.readline()
    if not line.startswith("PORT "):
        process.kill()
        raise RuntimeError("constant server %s did not start: %r" % (kind, line))
    return process, int(line.split()[1])


# ------------------------------------------------------------------ load generators


def request_bodies(method: str) -> List[bytes]:
    if method == "getblockhash":
        return [b'{"method":"getblockhash","params":[%d],"id":1}' % h for h in range(BLOCKS)]
    return [b'{"method":"%s","params":[],"id":1}' % method.encode()]


def run_wrk(port: int, method: str, connections: int, duration: float) -> Dict[str, Any]:
    command = ["wrk", "-t1", "-c%d" % connections, "-d%ds" % max(1, round(duration)),
               "--timeout", "10s", "-s", WRK_SCRIPT, "http://127.0.0.1:%d/" % port, "--",
               AUTHORIZATION, method, str(BLOCKS - 1)]
    output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    line = [ln for ln in output.splitlines() if ln.startswith("WRKJSON ")][-1]
    raw = json.loads(line[len("WRKJSON "):])
    errors = raw["connect_errors"] + raw["read_errors"] + raw["write_errors"] + raw["timeouts"]
    return {"rps": raw["requests"] / (raw["duration_us"] / 1e6),
            "p50_ms": raw["p50_us"] / 1000, "p99_ms": raw["p99_us"] / 1000,
            "non200": raw["status_errors"], "socket_errors": errors}


async def _asyncio_load(port: int, bodies: List[bytes], connections: int,
                        duration: float) -> Dict[str, Any]:
    requests = [b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: %s\r\n"
                b"Content-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s"
                % (AUTHORIZATION.encode(), len(body), body) for body in bodies]
    latencies: List[float] = []
    counts = {"non200": 0, "socket_errors": 0}
    deadline = time.perf_counter() + duration

    async def client(offset: int) -> None:
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            counts["socket_errors"] += 1
            return
        i = offset
        try:
            while time.perf_counter() < deadline:
                started = time.perf_counter()
                writer.write(requests[i % len(requests)])
                i += 1
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.lower() == b"content-length":
                        length = int(value)
                await reader.readexactly(length)
                latencies.append(time.perf_counter() - started)
                if head[9:12] != b"200":
                    counts["non200"] += 1
        except (OSError, asyncio.IncompleteReadError):
            counts["socket_errors"] += 1
        finally:
            writer.close()

    started = time.perf_counter()
    await asyncio.gather(*(client(n * 37) for n in range(connections)))
    elapsed = time.perf_counter() - started
    latencies.sort()

    def percentile(p: float) -> float:
        return latencies[min(len(latencies) - 1, int(len(latencies) * p / 100))] * 1000

    return {"rps": len(latencies) / elapsed, "p50_ms": percentile(50), "p99_ms": percentile(99),
            **counts}


def run_asyncio(port: int, method: str, connections: int, duration: float) -> Dict[str, Any]:
    """The asyncio client in its own process, so it has a core to itself like wrk."""
    code = ("import asyncio, json, sys; sys.path.insert(0, %r); from bench.rpc import "
            "_asyncio_load, request_bodies; print(json.dumps(asyncio.run(_asyncio_load("
            "%d, request_bodies(%r), %d, %r))))" % (REPO, port, method, connections, duration))
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True).stdout
    return json.loads(output)


def median_point(runs: List[Dict[str, Any]]) -> Dict[str, Any]:
    return {"rps": round(statistics.median(r["rps"] for r in runs)),
            "p50_ms": round(statistics.median(r["p50_ms"] for r in runs), 3),
            "p99_ms": round(statistics.median(r["p99_ms"] for r in runs), 3),
            "non200": sum(r["non200"] for r in runs),
            "socket_errors": sum(r["socket_errors"] for r in runs),
            "rps_runs": [round(r["rps"]) for r in runs]}


# ------------------------------------------------------------------ batch


def time_batch(port: int, repeats: int = 5) -> Dict[str, Any]:
    body = json.dumps([{"method": "getblockhash", "params": [h], "id": h}
                       for h in range(BLOCKS)]).encode()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    times = []
    try:
        for _ in range(repeats):
            started = time.perf_counter()
            connection.request("POST", "/", body=body, headers={"Authorization": AUTHORIZATION})
            response = connection.getresponse()
            replies = json.loads(response.read())
            times.append(time.perf_counter() - started)
            assert response.status == 200 and len(replies) == BLOCKS
            assert all(r["error"] is None and r["id"] == n for n, r in enumerate(replies))
    finally:
        connection.close()
    median = statistics.median(times)
    return {"requests": BLOCKS, "median_ms": round(median * 1000, 1),
            "calls_per_s": round(BLOCKS / median), "runs_ms": [round(t * 1000, 1) for t in times]}


# ------------------------------------------------------------------ main


def wrk_version() -> Optional[str]:
    if shutil.which("wrk") is None:
        return None
    result = subprocess.run(["wrk", "--version"], capture_output=True, text=True)
    return (result.stdout + result.stderr).splitlines()[0].strip()


def pick_client(parser: argparse.ArgumentParser, requested: Optional[str], fallback: str) -> str:
    """wrk when installed (or asked for), else ``fallback``; a clear error if wrk is missing."""
    client = requested or ("wrk" if wrk_version() else fallback)
    if client == "wrk" and wrk_version() is None:
        parser.error("wrk is not installed (%s)" % INSTALL_WRK)
    return client


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--duration", type=float, default=2.0, help="seconds per run")
    parser.add_argument("--runs", type=int, default=3, help="runs per point (median)")
    parser.add_argument("--client", choices=("wrk", "asyncio"), default=None,
                        help="load generator (default: wrk if installed)")
    args = parser.parse_args(argv)
    client = pick_client(parser, args.client, "asyncio")
    load = run_wrk if client == "wrk" else run_asyncio

    started = time.perf_counter()
    workdir = tempfile.mkdtemp(prefix="coin-bench-rpc-")
    node: Optional[NodeProcess] = None
    constants: List[subprocess.Popen] = []
    try:
        node, chain = start_coind(workdir)
        web, web_port = start_constant("web")
        raw, raw_port = start_constant("raw")
        constants += [web, raw]
        servers = {"coind": node.rpcport, "twisted_web_constant": web_port,
                   "raw_protocol_constant": raw_port}
        results: Dict[str, Any] = {}
        for name, port in servers.items():
            results[name] = {}
            for method in METHODS:
                results[name][method] = {}
                for connections in CONNECTIONS:
                    runs = [load(port, method, connections, args.duration)
                            for _ in range(args.runs)]
                    results[name][method][str(connections)] = median_point(runs)
        batch = time_batch(node.rpcport)
        still_up = node.rpc("getblockcount") == BLOCKS
    finally:
        for process in constants:
            process.kill()
            process.wait()
        if node is not None:
            node.stop()
        shutil.rmtree(workdir, ignore_errors=True)

    report = {
        "load_generator": ("wrk (%s), 1 thread, bench/wrk_post.lua" % wrk_version() if client == "wrk"
                           else "python asyncio keep-alive client, 1 process (wrk not used; "
                                "install it with: %s)" % INSTALL_WRK),
        "install_wrk": INSTALL_WRK,
        "cpus": os.cpu_count(),
        "duration_s_per_run": args.duration,
        "runs_per_point": args.runs,
        "point": "median of runs: requests/s, p50/p99 latency (ms); non200 and socket_errors "
                 "summed over runs (wrk counts statuses > 399)",
        "chain": chain,
        "results": results,
        "batch_1000_getblockhash": batch,
        "coind_alive_after": still_up,
        "total_s": round(time.perf_counter() - started, 1),
    }
    sys.stdout.write(dump(report) + "\n")
    return 0


def dump(value: Any, indent: str = "") -> str:
    """JSON, indented down to the measured points, each point on one line."""
    if isinstance(value, dict) and value and not {"rps", "median_ms"} & set(value):
        inner = indent + "  "
        return "{\n" + ",\n".join("%s%s: %s" % (inner, json.dumps(key), dump(item, inner))
                                   for key, item in value.items()) + "\n" + indent + "}"
    return json.dumps(value)


if __name__ == "__main__":
    sys.exit(main())
