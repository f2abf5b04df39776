"""JSON-RPC server throughput and latency of a real coind, against two constant servers.

Usage: ``python bench/rpc.py [--duration S] [--runs N] [--client wrk|asyncio] [--against URL]
[--against-pid PID] [--coind-arg ARG]... [--rpcworkers N] [--ids repeated_id|fresh_ids|both]
[--skip-constants]``

Starts, through the test harness, a regtest coind with a 1,000-block chain
(``generatetoaddress``; if the node does not have that method yet, the chain is
prepared with ``ChainBuilder`` before start-up and the JSON says so), and in
subprocesses ``bench/constant_servers.py web`` (a bare twisted.web resource returning a
constant) and ``raw`` (a bare Twisted protocol with minimal HTTP/1.1 framing). Then, for
``getbestblockhash`` and ``getblockhash`` (heights cycling 0..999) at 1, 8 and 64
keep-alive connections, it measures requests/s, p50 and p99 latency and non-200
answers on each server; every point is the median of ``--runs`` runs (non-200 counts
are summed), each run after ``--warmup`` seconds (default 1) of the same load, not
counted. The constant servers answer the same bytes whatever is asked; they get the same
requests. Last, one 1,000-request batch (getblockhash 0..999) is timed on
coind (median of 5).

Every row is measured twice (``--ids both``, the default): ``repeated_id``, the same
request bytes again and again (id 1: what a plain wrk run sends, and what a server may
answer from the bytes alone), and ``fresh_ids``, a new id in every request (and in every
batch), as real clients send (python-bitcoinrpc, bitcoin-core on npm).

Load generator: ``wrk`` when installed (Debian: ``apt-get install -y wrk``), one
thread, driven by ``bench/wrk_post.lua``; otherwise a Python asyncio keep-alive client
in a separate process (slower: on the constant servers it may be the bottleneck, the
JSON says which was used). Prints one JSON object; about 2 minutes with the defaults on 2 cores.

``--against http://USER:PASS@HOST:PORT/`` also measures another node (the reference node of
``../shared/anchor/``, say) with the same requests, interleaved run by run with coind so both
see the same machine load (``getblockhash`` heights cycle over the blocks both chains have),
times the batch on it too, and prints coind/other ratios (requests/s; batch time other/coind,
so above 1 means coind is faster everywhere).

Each point also gives ``cpu_us``: CPU microseconds per request of the server's processes
(coind with its ``-rpcworkers``; the other node's with ``--against-pid PID``), read from
/proc around each run: a figure the machine's other load disturbs far less than requests/s.

``--rpcworkers N`` runs coind with ``-rpcworkers=N`` (N read-only front-end processes on its
RPC port, doc/frontend.md) and measures once they all answer.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import functools
import http.client
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from typing import Any, Dict, List, NamedTuple, Optional

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from tests.frontendharness import wait_for_workers  # noqa: E402
from tests.nodeharness import MINER_ADDRESS, PASSWORD, USER, NodeProcess  # noqa: E402

BLOCKS = 1000
CONNECTIONS = (1, 8, 64)
METHODS = ("getbestblockhash", "getblockhash")
AUTHORIZATION = "Basic " + base64.b64encode(("%s:%s" % (USER, PASSWORD)).encode()).decode()
WRK_SCRIPT = os.path.join(REPO, "bench", "wrk_post.lua")
INSTALL_WRK = "apt-get install -y wrk"


# ------------------------------------------------------------------ servers


class Target(NamedTuple):
    """One server under load: where it listens, what credentials it takes, how high its chain
    is, and the process whose CPU time (with its children's, coind's workers) is counted."""

    port: int
    authorization: str = AUTHORIZATION
    top: int = BLOCKS - 1
    host: str = "127.0.0.1"
    pid: Optional[int] = None


def cpu_seconds(pid: Optional[int]) -> Optional[float]:
    """User + system CPU seconds of ``pid`` and its child processes so far (Linux /proc)."""
    if pid is None:
        return None
    total = 0
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            pids = [pid] + [int(child) for child in f.read().split()]
        for each in pids:
            with open("/proc/%d/stat" % each) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
    except OSError:
        return None
    return total / os.sysconf("SC_CLK_TCK")


#: Seconds of the same load, not counted, just before each measured run. A server's first
#: requests after it idled through the other servers' runs are slow on this kind of machine
#: (a new connection after 2 s idle: several ms), and wrk corrects its latencies for
#: coordinated omission, so one such stall at a run's start weighs in the p99 like a
#: percent of the run. ``--warmup 0`` measures from cold.
WARMUP_S = 1


def measured(load: Any, target: Target, method: str, connections: int,
             duration: float, warmup: float = WARMUP_S) -> Dict[str, Any]:
    """One run of ``load`` after ``warmup`` seconds of it, with the target's CPU microseconds
    per request when known: a figure the machine's other load disturbs far less than
    requests/s."""
    if warmup:
        load(target, method, connections, warmup)
    before = cpu_seconds(target.pid)
    point = load(target, method, connections, duration)
    after = cpu_seconds(target.pid)
    if before is not None and after is not None and point["requests"]:
        point["cpu_us"] = (after - before) / point["requests"] * 1e6
    return point


def parse_against(url: str) -> Target:
    """``http://user:pass@host:port/`` -> a Target (the top height is filled in later)."""
    parts = urllib.parse.urlsplit(url)
    credentials = "%s:%s" % (urllib.parse.unquote(parts.username or ""),
                             urllib.parse.unquote(parts.password or ""))
    return Target(parts.port or 80, "Basic " + base64.b64encode(credentials.encode()).decode(),
                  host=parts.hostname or "127.0.0.1")


def rpc_call(target: Target, method: str, *params: Any) -> Any:
    connection = http.client.HTTPConnection(target.host, target.port, timeout=60)
    try:
        connection.request("POST", "/", body=json.dumps({"method": method, "params": params,
                                                          "id": 1}),
                           headers={"Authorization": target.authorization})
        return json.loads(connection.getresponse().read())["result"]
    finally:
        connection.close()


def start_coind(workdir: str, extra_args: List[str], workers: int = 0
                ) -> tuple[NodeProcess, Dict[str, Any]]:
    """A node with BLOCKS blocks: mined over RPC if it can, else prepared on disk; with
    ``workers`` -rpcworkers, once they answer."""
    datadir = os.path.join(workdir, "coind")
    args = list(extra_args) + (["-rpcworkers=%d" % workers] if workers else [])
    node = NodeProcess.start(datadir, args)
    chain: Dict[str, Any] = {"blocks": BLOCKS}
    if not node.rpc("help", "generatetoaddress").startswith("help: unknown command"):
        started = time.perf_counter()
        for _ in range(0, BLOCKS, 100):  # in steps: each call within the client's timeout
            node.rpc("generatetoaddress", 100, MINER_ADDRESS)
        chain["mined_with"] = "generatetoaddress"
        chain["mining_s"] = round(time.perf_counter() - started, 2)
    else:
        node.stop()
        shutil.rmtree(datadir)
        from coin.testing.chainbuilder import ChainBuilder, open_chain
        state = open_chain(os.path.join(datadir, "regtest"))
        ChainBuilder(state).mine(BLOCKS)
        state.close()
        node = NodeProcess.start(datadir, args)
        chain["mined_with"] = "ChainBuilder before start-up"
        chain["missing"] = "generatetoaddress is not registered on this node"
    try:
        assert node.rpc("getblockcount") == BLOCKS
        wait_for_workers(node, workers, lambda: node.rpc("getblockcount") == BLOCKS)
    except BaseException:
        node.kill()  # the caller has no node to stop yet (nor its workers, which die with it)
        raise
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


#: The two kinds of load: the same request bytes again and again (id 1), and a new id on
#: every request, as real clients send (python-bitcoinrpc, bitcoin-core on npm).
ID_MODES = ("repeated_id", "fresh_ids")


def request_bodies(method: str, top: int = BLOCKS - 1) -> List[bytes]:
    """Each request's body up to its id: ``body + b"1}"`` is a request."""
    if method == "getblockhash":
        return [b'{"method":"getblockhash","params":[%d],"id":' % h for h in range(top + 1)]
    return [b'{"method":"%s","params":[],"id":' % method.encode()]


def run_wrk(target: Target, method: str, connections: int, duration: float,
            fresh: bool = False) -> Dict[str, Any]:
    command = ["wrk", "-t1", "-c%d" % connections, "-d%ds" % max(1, round(duration)),
               "--timeout", "10s", "-s", WRK_SCRIPT, "http://%s:%d/" % (target.host, target.port),
               "--", target.authorization, method, str(target.top)] + (["fresh"] if fresh else [])
    output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    line = [ln for ln in output.splitlines() if ln.startswith("WRKJSON ")][-1]
    raw = json.loads(line[len("WRKJSON "):])
    errors = raw["connect_errors"] + raw["read_errors"] + raw["write_errors"] + raw["timeouts"]
    return {"rps": raw["requests"] / (raw["duration_us"] / 1e6), "requests": raw["requests"],
            "p50_ms": raw["p50_us"] / 1000, "p99_ms": raw["p99_us"] / 1000,
            "non200": raw["status_errors"], "socket_errors": errors}


async def _asyncio_load(host: str, port: int, authorization: str, bodies: List[bytes],
                        connections: int, duration: float, fresh: bool = False
                        ) -> Dict[str, Any]:
    head = b"POST / HTTP/1.1\r\nHost: %s\r\nAuthorization: %s\r\n" \
        b"Content-Type: text/plain\r\nContent-Length: %%d\r\n\r\n" % (host.encode(),
                                                                     authorization.encode())
    requests = [head % (len(body) + 2) + body + b"1}" for body in bodies]
    sent = [0]

    def request(i: int) -> bytes:
        if not fresh:
            return requests[i % len(requests)]
        sent[0] += 1
        body = bodies[i % len(bodies)] + b"%d}" % sent[0]
        return head % len(body) + body
    latencies: List[float] = []
    counts = {"non200": 0, "socket_errors": 0}
    deadline = time.perf_counter() + duration

    async def client(offset: int) -> None:
        try:
            reader, writer = await asyncio.open_connection(host, port)
        except OSError:
            counts["socket_errors"] += 1
            return
        i = offset
        try:
            while time.perf_counter() < deadline:
                started = time.perf_counter()
                writer.write(request(i))
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

    return {"rps": len(latencies) / elapsed, "requests": len(latencies),
            "p50_ms": percentile(50), "p99_ms": percentile(99),
            **counts}


def run_asyncio(target: Target, method: str, connections: int, duration: float,
                fresh: bool = False) -> Dict[str, Any]:
    """The asyncio client in its own process, so it has a core to itself like wrk."""
    code = ("import asyncio, json, sys; sys.path.insert(0, %r); from bench.rpc import "
            "_asyncio_load, request_bodies; print(json.dumps(asyncio.run(_asyncio_load("
            "%r, %d, %r, request_bodies(%r, %d), %d, %r, %r))))"
            % (REPO, target.host, target.port, target.authorization, method, target.top,
               connections, duration, fresh))
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True).stdout
    return json.loads(output)


def median_point(runs: List[Dict[str, Any]]) -> Dict[str, Any]:
    return {"rps": round(statistics.median(r["rps"] for r in runs)),
            "p50_ms": round(statistics.median(r["p50_ms"] for r in runs), 3),
            "p99_ms": round(statistics.median(r["p99_ms"] for r in runs), 3),
            "non200": sum(r["non200"] for r in runs),
            "socket_errors": sum(r["socket_errors"] for r in runs),
            "rps_runs": [round(r["rps"]) for r in runs],
            **({"cpu_us": round(statistics.median(r["cpu_us"] for r in runs), 1)}
               if all("cpu_us" in r for r in runs) else {})}


# ------------------------------------------------------------------ batch


def batch_body(top: int, first_id: int) -> bytes:
    """BLOCKS getblockhash calls (heights cycling over 0..top), ids first_id, first_id + 1..."""
    return json.dumps([{"method": "getblockhash", "params": [h % (top + 1)], "id": first_id + h}
                       for h in range(BLOCKS)]).encode()


def time_batches(targets: Dict[str, Target], fresh: bool, repeats: int = 5
                 ) -> Dict[str, Dict[str, Any]]:
    """A BLOCKS-call batch timed on each target, interleaved (one keep-alive connection
    each): the same body every time, or with ``fresh`` new ids in every batch."""
    connections = {name: http.client.HTTPConnection(target.host, target.port, timeout=120)
                   for name, target in targets.items()}
    times: Dict[str, List[float]] = {name: [] for name in targets}
    try:
        for repeat in range(repeats):
            first_id = (repeat + 1) * BLOCKS if fresh else 0
            for name, target in targets.items():
                body = batch_body(target.top, first_id)
                connection = connections[name]
                started = time.perf_counter()
                connection.request("POST", "/", body=body,
                                   headers={"Authorization": target.authorization})
                response = connection.getresponse()
                replies = json.loads(response.read())
                times[name].append(time.perf_counter() - started)
                assert response.status == 200 and len(replies) == BLOCKS
                assert all(r["error"] is None and r["id"] == first_id + n
                           for n, r in enumerate(replies))
    finally:
        for connection in connections.values():
            connection.close()
    results = {}
    for name, runs in times.items():
        median = statistics.median(runs)
        results[name] = {"requests": BLOCKS, "median_ms": round(median * 1000, 1),
                         "calls_per_s": round(BLOCKS / median),
                         "runs_ms": [round(t * 1000, 1) for t in runs]}
    return results


# ------------------------------------------------------------------ main


def wrk_version() -> Optional[str]:
    if shutil.which("wrk") is None:
        return None
    result = subprocess.run(["wrk", "--version"], capture_output=True, text=True)
    return (result.stdout + result.stderr).splitlines()[0].strip()


def add_warmup_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--warmup", type=float, default=WARMUP_S, metavar="S",
                        help="seconds of the same load before each measured run, not counted "
                             "(default: %(default)s; 0: none)")


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
    parser.add_argument("--against", metavar="URL", default=None,
                        help="also measure this node, http://USER:PASS@HOST:PORT/, interleaved")
    parser.add_argument("--against-pid", type=int, default=None, metavar="PID",
                        help="the other node's process, to count its CPU time per request too")
    parser.add_argument("--coind-arg", action="append", default=[], metavar="ARG",
                        help="an extra coind option (e.g. --coind-arg=-metricsbind=127.0.0.1:"
                             "PORT); repeatable")
    parser.add_argument("--rpcworkers", type=int, default=0, metavar="N",
                        help="run coind with -rpcworkers=N (default: 0)")
    parser.add_argument("--ids", choices=ID_MODES + ("both",), default="both",
                        help="repeated_id: the same bytes every time; fresh_ids: a new id in "
                             "every request (and batch); both (default): both, side by side")
    parser.add_argument("--skip-constants", action="store_true",
                        help="do not run the two constant servers")
    add_warmup_option(parser)
    args = parser.parse_args(argv)
    client = pick_client(parser, args.client, "asyncio")
    load = run_wrk if client == "wrk" else run_asyncio
    modes = ID_MODES if args.ids == "both" else (args.ids,)

    started = time.perf_counter()
    workdir = tempfile.mkdtemp(prefix="coin-bench-rpc-")
    node: Optional[NodeProcess] = None
    constants: List[subprocess.Popen] = []
    try:
        node, chain = start_coind(workdir, args.coind_arg, args.rpcworkers)
        servers = {"coind": Target(node.rpcport, pid=node.process.pid)}
        if not args.skip_constants:
            web, web_port = start_constant("web")
            raw, raw_port = start_constant("raw")
            constants += [web, raw]
            servers["twisted_web_constant"] = Target(web_port, pid=web.pid)
            servers["raw_protocol_constant"] = Target(raw_port, pid=raw.pid)
        if args.against:
            other = parse_against(args.against)
            top = min(BLOCKS, rpc_call(other, "getblockcount")) - 1
            servers = {name: target._replace(top=top) for name, target in servers.items()}
            servers["against"] = other._replace(top=top, pid=args.against_pid)
        results: Dict[str, Any] = {name: {} for name in servers}
        for mode in modes:
            mode_load = functools.partial(load, fresh=mode == "fresh_ids")
            for method in METHODS:
                for connections in CONNECTIONS:
                    runs: Dict[str, List[Dict[str, Any]]] = {name: [] for name in servers}
                    for _ in range(args.runs):
                        for name, target in servers.items():
                            runs[name].append(measured(mode_load, target, method, connections,
                                                       args.duration, args.warmup))
                    for name in servers:
                        results[name].setdefault(mode, {}).setdefault(method, {})[
                            str(connections)] = median_point(runs[name])
        batched = {name: servers[name] for name in ("coind", "against") if name in servers}
        batches = {mode: time_batches(batched, mode == "fresh_ids") for mode in modes}
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
        "rpcworkers": args.rpcworkers,
        "duration_s_per_run": args.duration,
        "runs_per_point": args.runs,
        "warmup_s_before_each_run": args.warmup,
        "point": "median of runs: requests/s, p50/p99 latency (ms), CPU microseconds per request "
                 "of the server's processes (coind: with its workers); non200 and socket_errors "
                 "summed over runs (wrk counts statuses > 399)",
        "ids": "repeated_id: the same request bytes every time (id 1); fresh_ids: a new id in "
               "every request, and in every batch",
        "chain": chain,
        "coind_args": args.coind_arg,
        "results": results,
        "batch_1000_getblockhash": {mode: batch["coind"] for mode, batch in batches.items()},
        **(against_report(args.against, results, batches) if args.against else {}),
        "coind_alive_after": still_up,
        "total_s": round(time.perf_counter() - started, 1),
    }
    sys.stdout.write(dump(report) + "\n")
    return 0


def against_report(url: str, results: Dict[str, Any], batches: Dict[str, Dict[str, Any]]
                   ) -> Dict[str, Any]:
    """The other node's batches and coind/other ratios (rps; p99 and batch time other/coind),
    per kind of ids."""
    ratios = {mode: {method: {connections: {
        "rps": round(point["rps"] / results["against"][mode][method][connections]["rps"], 2),
        "p99": round(results["against"][mode][method][connections]["p99_ms"] / point["p99_ms"],
                     2)}
        for connections, point in points.items()} for method, points in rows.items()}
        for mode, rows in results["coind"].items()}
    for mode, batch in batches.items():
        ratios[mode]["batch_time"] = round(batch["against"]["median_ms"]
                                           / batch["coind"]["median_ms"], 2)
    return {"against": urllib.parse.urlsplit(url)._replace(netloc=urllib.parse.urlsplit(
                url).netloc.rpartition("@")[2]).geturl(),
            "against_batch_1000_getblockhash": {mode: batch["against"]
                                                for mode, batch in batches.items()},
            "ratio_coind_to_against": ratios}


def dump(value: Any, indent: str = "") -> str:
    """JSON, indented down to the measured points, each point on one line."""
    if isinstance(value, dict) and value and not {"rps", "median_ms", "p99"} & set(value):
        inner = indent + "  "
        return "{\n" + ",\n".join("%s%s: %s" % (inner, json.dumps(key), dump(item, inner))
                                   for key, item in value.items()) + "\n" + indent + "}"
    return json.dumps(value)


if __name__ == "__main__":
    sys.exit(main())
