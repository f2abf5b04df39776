"""Wallet RPC speed on a real regtest coind: addresses, sends, listings, rescans.

    python bench/wallet.py [--addresses 500] [--runs 3] [--utxos 10000] [--sends 200]
                           [--txs 10000] [--repeats 5] [--rescans 3] [--quick]
                           [--py-spy DIR]

Starts, through tests/nodeharness.py, a regtest ``coind -listen=0 -wallet=bench``
(default key pool, 1,000 keys per chain) and, for the key pool comparison, a second
one with ``-keypool=1``.  Every call goes over HTTP JSON-RPC on one keep-alive
connection to ``/wallet/bench``; ``overhead_getblockcount`` times that call on the
keep-alive connection and with a new connection per request (as ``NodeProcess.rpc``
does), so the transport's share of each figure is known.  Prints one JSON object:

* ``createwallet``: a new wallet filling its key pool (2 x -keypool keys), then unloaded;
* ``getnewaddress``: ``--runs`` runs of ``--addresses`` calls on each node (the pool
  refills one key per call); rate per run, the median, and per-call latencies;
* ``setup_utxos``: 110 blocks mined to the wallet, then ``sendmany`` from the wallet to
  500 of its own addresses per call (a block every 5 calls) until it holds ``--utxos``
  coins of 0.01-0.02 (10 mature coinbases fund up to ~30,000); the time of each step.
  The new coins are locked (``lockunspent``) until the setup ends, else each sendmany
  would spend ~500 of the previous one's coins;
* ``at_utxos``: ``getbalance``, ``getbalance "*" 1`` and ``listunspent`` (median of
  ``--repeats``) with those coins and few transactions;
* ``sendtoaddress``: ``--sends`` calls, each paying 0.001-0.005 to an address outside
  the wallet; each spends a coin and adds a change output (the coin count stays about
  the same; the pool grows to ``--sends`` transactions, mined afterwards);
* ``grow_txs``: blocks mined to the wallet (``generatetoaddress`` in chunks of 1,000,
  one wallet transaction each, the cheapest way measured) until the wallet has
  ``--txs`` transactions;
* ``listtransactions``: ``"*" 10``, ``"*" 1000`` and ``"*" <--txs>`` (median of ``--repeats``);
* ``at_txs``: the balance and unspent calls again, now with ``--txs`` transactions
  (the matured coinbases add coins too: the count is in the JSON);
* ``rescan``: ``rescanblockchain`` over the whole chain (median of ``--rescans``) and
  ``importprivkey`` of the key the sends paid, with its rescan.

``--quick`` is a smoke run (smaller sizes, about 15 s); the defaults take about 1.5
minutes on 2 cores.  With ``--py-spy DIR`` (and py-spy on PATH) the node is sampled
during getnewaddress, the sends, listtransactions, the balance and unspent calls and the
rescans; the raw profiles go to DIR and the JSON lists each phase's heaviest functions
(shares of all samples).
"""

from __future__ import annotations

import argparse
import base64
import collections
import http.client
import json
import os
import platform
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from decimal import Decimal
from typing import Any, Dict, Iterator, List, Optional

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from coin.chainparams import REGTEST  # noqa: E402
from coin.primitives.address import Destination, encode_address, encode_wif  # noqa: E402
from coin.primitives.hashes import hash160  # noqa: E402
from coin.testing.chainbuilder import deterministic_key  # noqa: E402
from tests.nodeharness import MINER_ADDRESS, PASSWORD, USER, NodeProcess, RPCFailure  # noqa: E402

WALLET = "bench"
WALLET_PATH = "/wallet/" + WALLET
NODE_ARGS = ["-listen=0", "-wallet=" + WALLET]
AUTHORIZATION = "Basic " + base64.b64encode(("%s:%s" % (USER, PASSWORD)).encode()).decode()
#: Outputs per sendmany while making coins, and sendmany calls per mined block.
BATCH = 500
BATCHES_PER_BLOCK = 5
#: Blocks per generatetoaddress call when growing the transaction count.
MINE_CHUNK = 1000
#: The key the sends pay (outside the wallet until importprivkey imports it).
EXTERNAL_KEY = deterministic_key("wallet bench: external payee")
EXTERNAL_ADDRESS = encode_address(
    Destination("pubkeyhash", hash160(EXTERNAL_KEY.public_key.format())), REGTEST)
EXTERNAL_WIF = encode_wif(EXTERNAL_KEY.secret, REGTEST)
DEFAULTS = {"addresses": 500, "runs": 3, "utxos": 10_000, "sends": 200, "txs": 10_000,
            "repeats": 5, "rescans": 3}
QUICK = {"addresses": 100, "runs": 2, "utxos": 1_000, "sends": 20, "txs": 1_000,
         "repeats": 3, "rescans": 2}


# ------------------------------------------------------------------ transport


class Client:
    """JSON-RPC over one keep-alive HTTP/1.1 connection (reopened if the server closes it)."""

    def __init__(self, node: NodeProcess, path: str = WALLET_PATH) -> None:
        self.port = node.rpcport
        self.path = path
        self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=900)
        #: TCP connections opened: 1 means every request went over the same one.
        self.connects = 0

    def call(self, method: str, *params: Any, path: Optional[str] = None) -> Any:
        body = json.dumps({"method": method, "params": list(params), "id": 1}).encode()
        if self.connection.sock is None:
            self.connects += 1
        self.connection.request("POST", path or self.path, body=body,
                                headers={"Authorization": AUTHORIZATION,
                                         "Content-Type": "application/json"})
        response = self.connection.getresponse()
        reply = json.loads(response.read(), parse_float=Decimal)
        if reply.get("error"):
            raise RPCFailure(response.status, reply["error"]["code"], reply["error"]["message"])
        return reply["result"]

    def close(self) -> None:
        self.connection.close()


def coins(value: float) -> str:
    return "%.8f" % value


# ------------------------------------------------------------------ figures


def ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


def latencies(times: List[float]) -> Dict[str, Any]:
    """Per-call latencies (ms) and the rate of calls made back to back."""
    ordered = sorted(times)

    def pct(p: float) -> float:
        return ms(ordered[min(len(ordered) - 1, int(len(ordered) * p / 100))])

    return {"calls": len(times), "per_s": round(len(times) / sum(times), 1),
            "median_ms": ms(statistics.median(times)), "p90_ms": pct(90), "p99_ms": pct(99),
            "max_ms": ms(ordered[-1])}


def timed(client: Client, method: str, *params: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    result = client.call(method, *params)
    return time.perf_counter() - started, result


def repeated(client: Client, repeats: int, method: str, *params: Any) -> Dict[str, Any]:
    """Median of ``repeats`` calls; the size of the answer when it is a list."""
    times, result = [], None
    for _ in range(repeats):
        elapsed, result = timed(client, method, *params)
        times.append(elapsed)
    figure: Dict[str, Any] = {"median_ms": ms(statistics.median(times)),
                              "runs_ms": [ms(t) for t in times]}
    if isinstance(result, list):
        figure["entries"] = len(result)
    return figure


# ------------------------------------------------------------------ profiling


class Profiler:
    """py-spy sampling the node for named phases (a no-op without ``--py-spy``)."""

    def __init__(self, directory: Optional[str], pid: int) -> None:
        self.directory = directory
        self.pid = pid
        self.binary = shutil.which("py-spy")
        self.summaries: Dict[str, Any] = {}

    @property
    def enabled(self) -> bool:
        return self.directory is not None and self.binary is not None

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        if not self.enabled:
            yield
            return
        output = os.path.join(self.directory, name + ".txt")
        process = subprocess.Popen([self.binary, "record", "--pid", str(self.pid), "--rate", "250",
                                    "--format", "raw", "--output", output, "--nonblocking"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                   stdin=subprocess.DEVNULL)
        time.sleep(0.5)  # attached before the phase starts
        try:
            yield
        finally:
            process.send_signal(signal.SIGINT)
            try:
                _, err = process.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                _, err = process.communicate()
            self.summaries[name] = summarize(output) if os.path.exists(output) else {
                "error": err.decode(errors="replace").strip()[-300:]}


#: Frames every RPC passes through, left out of the inclusive list.
DISPATCH = ("coin/tap.py", "coin/rpc/resource.py", "coin/rpc/jsonrpc.py",
            "coin/wallet/access.py:in_wallet", "coin/wallet/access.py:_locked_call")


def summarize(path: str, top: int = 10) -> Dict[str, Any]:
    """Share of samples in each function (inclusive, coin/ code only) and at the leaf."""
    inclusive: collections.Counter = collections.Counter()
    leaf: collections.Counter = collections.Counter()
    total = 0
    with open(path) as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            if not stack or not count.isdigit():
                continue
            samples = int(count)
            total += samples
            frames = [_short(frame) for frame in stack.split(";")]
            leaf[frames[-1]] += samples
            for frame in set(frames):
                if frame.startswith("coin/") and not frame.startswith(DISPATCH):
                    inclusive[frame] += samples
    if not total:
        return {"samples": 0}

    def shares(counter: collections.Counter) -> List[str]:
        return ["%5.1f%% %s" % (100 * n / total, name) for name, n in counter.most_common(top)]

    return {"samples": total, "inclusive_coin": shares(inclusive), "leaf": shares(leaf)}


def _short(frame: str) -> str:
    """``func (/abs/path/coin/x.py:12)`` -> ``coin/x.py:func``."""
    name, _, where = frame.partition(" (")
    where = where.rstrip(")").rsplit(":", 1)[0]
    for marker in ("/coin/", "/site-packages/", "/lib/python"):
        if marker in where:
            where = where[where.index(marker) + 1:]
            break
    return "%s:%s" % (where, name)


# ------------------------------------------------------------------ phases


def overhead(node: NodeProcess, client: Client, count: int) -> Dict[str, Any]:
    """getblockcount on the keep-alive connection and with a new connection per call."""
    kept, fresh = [], []
    for _ in range(count):
        kept.append(timed(client, "getblockcount")[0])
    for _ in range(count):
        started = time.perf_counter()
        node.rpc("getblockcount")
        fresh.append(time.perf_counter() - started)
    return {"keepalive": latencies(kept), "new_connection": latencies(fresh)}


def create_wallet(client: Client) -> float:
    """Seconds for createwallet (the key pool is filled); the wallet is unloaded again."""
    started = time.perf_counter()
    client.call("createwallet", "keypool-probe", path="/")
    elapsed = time.perf_counter() - started
    client.call("unloadwallet", "keypool-probe", path="/")
    return elapsed


def new_addresses(client: Client, runs: int, count: int) -> tuple[Dict[str, Any], List[str]]:
    rates, times, addresses = [], [], []
    for _ in range(runs):
        started = time.perf_counter()
        for _ in range(count):
            begun = time.perf_counter()
            addresses.append(client.call("getnewaddress"))
            times.append(time.perf_counter() - begun)
        rates.append(count / (time.perf_counter() - started))
    info = client.call("getwalletinfo")
    return ({"calls_per_run": count, "median_per_s": round(statistics.median(rates), 1),
             "runs_per_s": [round(r, 1) for r in rates], "latency": latencies(times),
             "keypoolsize_after": info["keypoolsize"]}, addresses)


def make_utxos(client: Client, addresses: List[str], target: int,
               rng: random.Random) -> Dict[str, Any]:
    """110 blocks to the wallet, then sendmany to own addresses until ``target`` coins."""
    while len(addresses) < BATCH:
        addresses.append(client.call("getnewaddress"))
    started = time.perf_counter()
    mine_s, _ = timed(client, "generatetoaddress", 110, addresses[0])
    batches = -(-target // BATCH)
    send_times, mined = [], 0
    for i in range(batches):
        size = min(BATCH, target - i * BATCH)
        first = i * BATCH % len(addresses)
        chosen = (addresses + addresses)[first:first + size]
        amounts = {address: coins(rng.uniform(0.01, 0.02)) for address in chosen}
        elapsed, txid = timed(client, "sendmany", "", amounts)
        send_times.append(elapsed)
        lock_outputs(client, txid, set(amounts))
        if (i + 1) % BATCHES_PER_BLOCK == 0 or i == batches - 1:
            client.call("generatetoaddress", 1, MINER_ADDRESS)
            mined += 1
    client.call("lockunspent", True)
    total = time.perf_counter() - started
    return {"blocks_to_wallet": 110, "generatetoaddress_110_s": round(mine_s, 2),
            "sendmany_outputs": BATCH, "sendmany_calls": batches,
            "sendmany": latencies(send_times), "blocks_confirming": mined,
            "own_addresses_used": min(len(addresses), target), "total_s": round(total, 1)}


def lock_outputs(client: Client, txid: str, addresses: set) -> None:
    """Lock the new coins until the setup ends: coin selection would otherwise spend
    hundreds of them in the next sendmany (the smallest coin covering the target, a
    50-coin coinbase, loses to a run of small coins summing closer to it)."""
    tx = client.call("decoderawtransaction", client.call("gettransaction", txid)["hex"])
    outpoints = [{"txid": txid, "vout": out["n"]} for out in tx["vout"]
                 if set(out["scriptPubKey"].get("addresses", ())) & addresses]
    client.call("lockunspent", False, outpoints)


def balances(client: Client, repeats: int) -> Dict[str, Any]:
    info = client.call("getwalletinfo")
    return {"wallet_txs": info["txcount"],
            "getbalance": repeated(client, repeats, "getbalance"),
            "getbalance_star_1": repeated(client, repeats, "getbalance", "*", 1),
            "listunspent": repeated(client, repeats, "listunspent")}


def send_many_times(client: Client, count: int, rng: random.Random) -> Dict[str, Any]:
    before = len(client.call("listunspent", 0))
    times = []
    for _ in range(count):
        times.append(timed(client, "sendtoaddress", EXTERNAL_ADDRESS,
                           coins(rng.uniform(0.001, 0.005)))[0])
    pooled = client.call("getmempoolinfo", path="/")["size"]
    after = len(client.call("listunspent", 0))
    client.call("generatetoaddress", 1, MINER_ADDRESS)
    return {"payee": "outside the wallet", "latency": latencies(times),
            "wallet_coins_before": before, "wallet_coins_after_incl_unconfirmed": after,
            "mempool_size_after": pooled}


def grow_txs(client: Client, target: int, address: str) -> Dict[str, Any]:
    """Blocks mined to the wallet until it has ``target`` transactions."""
    have = client.call("getwalletinfo")["txcount"]
    needed = max(0, target - have)
    chunks, started = [], time.perf_counter()
    while needed > 0:
        blocks = min(MINE_CHUNK, needed)
        elapsed, _ = timed(client, "generatetoaddress", blocks, address)
        chunks.append(round(blocks / elapsed, 1))
        needed -= blocks
    total = time.perf_counter() - started
    mined = max(0, target - have)
    info = client.call("getwalletinfo")
    return {"method": "generatetoaddress to a wallet address, %d blocks per call" % MINE_CHUNK,
            "wallet_txs_before": have, "blocks_mined": mined, "seconds": round(total, 1),
            "blocks_per_s": round(mined / total, 1) if mined else None,
            "chunk_blocks_per_s": chunks, "wallet_txs_after": info["txcount"],
            "chain_height": client.call("getblockcount")}


def list_transactions(client: Client, count: int, repeats: int) -> Dict[str, Any]:
    result = {}
    for n in sorted({10, 1000, count}):
        result["count_%d" % n] = repeated(client, repeats, "listtransactions", "*", n)
    return result


def rescans(client: Client, repeats: int, profiler: Profiler) -> Dict[str, Any]:
    height = client.call("getblockcount")
    times = []
    with profiler.phase("rescanblockchain"):
        for _ in range(repeats):
            times.append(timed(client, "rescanblockchain")[0])
    median = statistics.median(times)
    txs_before = client.call("getwalletinfo")["txcount"]
    with profiler.phase("importprivkey"):
        import_s, _ = timed(client, "importprivkey", EXTERNAL_WIF, "imported", True)
    received = client.call("getreceivedbyaddress", EXTERNAL_ADDRESS, 1)
    return {"blocks": height + 1,
            "rescanblockchain": {"median_s": round(median, 2),
                                 "blocks_per_s": round((height + 1) / median, 1),
                                 "runs_s": [round(t, 2) for t in times]},
            "importprivkey_rescan": {"seconds": round(import_s, 2),
                                     "blocks_per_s": round((height + 1) / import_s, 1),
                                     "wallet_txs_before": txs_before,
                                     "received_by_imported_key": str(received)}}


# ------------------------------------------------------------------ main


def machine() -> Dict[str, Any]:
    model = None
    try:
        with open("/proc/cpuinfo") as f:
            model = next((line.split(":", 1)[1].strip() for line in f
                          if line.startswith("model name")), None)
    except OSError:
        pass
    return {"cpu_count": os.cpu_count(), "cpu_model": model,
            "python": platform.python_version(),
            "implementation": platform.python_implementation(), "platform": platform.platform()}


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for name, default in DEFAULTS.items():
        parser.add_argument("--" + name, type=int, default=None,
                            help="default %d (--quick: %d)" % (default, QUICK[name]))
    parser.add_argument("--quick", action="store_true", help="a smoke run with small sizes")
    parser.add_argument("--py-spy", metavar="DIR", default=None,
                        help="sample the node with py-spy into DIR during the slow phases")
    args = parser.parse_args(argv)
    sizes = {name: getattr(args, name) if getattr(args, name) is not None
             else (QUICK if args.quick else DEFAULTS)[name] for name in DEFAULTS}
    if args.py_spy:
        os.makedirs(args.py_spy, exist_ok=True)
    rng = random.Random(20181003)

    started = time.perf_counter()
    workdir = tempfile.mkdtemp(prefix="coin-bench-wallet-")
    nodes: List[NodeProcess] = []
    clients: List[Client] = []
    report: Dict[str, Any] = {"benchmark": "wallet RPCs on regtest coind", "machine": machine(),
                              "sizes": sizes, "quick": args.quick}
    try:
        # Key pool comparison first, on a node of its own.
        begun = time.perf_counter()
        small = NodeProcess.start(os.path.join(workdir, "keypool1"), NODE_ARGS + ["-keypool=1"])
        nodes.append(small)
        small_start = time.perf_counter() - begun
        begun = time.perf_counter()
        node = NodeProcess.start(os.path.join(workdir, "main"), NODE_ARGS)
        nodes.append(node)
        node_start = time.perf_counter() - begun
        small_client, client = Client(small), Client(node)
        clients += [small_client, client]
        profiler = Profiler(args.py_spy, node.process.pid)

        report["overhead_getblockcount"] = overhead(node, client, 200)
        report["createwallet"] = {
            "keypool_1000_s": round(create_wallet(client), 3),
            "keypool_1_s": round(create_wallet(small_client), 3),
            "node_start_s": {"keypool_1000": round(node_start, 2),
                             "keypool_1": round(small_start, 2)}}
        with profiler.phase("getnewaddress"):
            addresses_default, addresses = new_addresses(client, sizes["runs"],
                                                         sizes["addresses"])
        addresses_small, _ = new_addresses(small_client, sizes["runs"], sizes["addresses"])
        report["getnewaddress"] = {"keypool_1000": addresses_default,
                                   "keypool_1": addresses_small}
        small_client.close()
        small.stop()
        nodes.remove(small)

        report["setup_utxos"] = make_utxos(client, addresses, sizes["utxos"], rng)
        report["at_utxos"] = balances(client, sizes["repeats"])
        with profiler.phase("sendtoaddress"):
            report["sendtoaddress"] = send_many_times(client, sizes["sends"], rng)
        report["grow_txs"] = grow_txs(client, sizes["txs"], addresses[1])
        grown = report["grow_txs"]
        grown["compare_ms_per_wallet_tx"] = {
            "generatetoaddress": round(1000 / grown["blocks_per_s"], 2)
            if grown["blocks_per_s"] else None,
            "sendtoaddress": round(1000 / report["sendtoaddress"]["latency"]["per_s"], 2)}
        if grown["blocks_per_s"]:
            grown["projected_10000_blocks_s"] = round(10_000 / grown["blocks_per_s"], 1)
        with profiler.phase("listtransactions"):
            report["listtransactions"] = list_transactions(client, sizes["txs"], sizes["repeats"])
        with profiler.phase("balances_listunspent"):
            report["at_txs"] = balances(client, sizes["repeats"])
        report["rescan"] = rescans(client, sizes["rescans"], profiler)
        report["keepalive_connections_opened"] = client.connects
        if args.py_spy:
            report["py_spy"] = profiler.summaries if profiler.enabled else (
                "py-spy not found on PATH: pip install py-spy")
        report["node_alive_after"] = isinstance(client.call("getblockcount"), int)
    finally:
        for c in clients:
            c.close()
        for n in nodes:
            try:
                n.stop()
            except Exception:
                n.kill()
        shutil.rmtree(workdir, ignore_errors=True)
    report["total_s"] = round(time.perf_counter() - started, 1)
    print(json.dumps(report, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
