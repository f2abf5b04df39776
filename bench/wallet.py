"""Wallet RPC speed on a real regtest coind: addresses, sends, listings, rescans, at two scales.

    python bench/wallet.py [--addresses 500] [--runs 3] [--utxos 10000,100000]
                           [--txs 20000,200000] [--sends 30] [--repeats 5] [--rescans 3]
                           [--quick] [--py-spy DIR]

Starts, through tests/nodeharness.py, a regtest ``coind -listen=0 -wallet=bench``
(default key pool, 1,000 keys per chain) and, for the key pool comparison, a second
one with ``-keypool=1``.  Every call goes over HTTP JSON-RPC on one keep-alive
connection to ``/wallet/bench``; ``overhead_getblockcount`` times that call on the
keep-alive connection and with a new connection per request (as ``NodeProcess.rpc``
does), so the transport's share of each figure is known.  Prints one JSON object:

* ``createwallet``: a new wallet filling its key pool (2 x -keypool keys), then unloaded;
* ``getnewaddress``: ``--runs`` runs of ``--addresses`` calls on each node (the pool
  refills one key per call); rate per run, the median, and per-call latencies;
* ``points``: one entry per scale (``--utxos`` and ``--txs`` pair up, smallest first,
  all in the same run and on the same node):

  - ``setup_utxos``: (first point) 110 blocks mined to the wallet; then ``sendmany``
    from the wallet to 500 of its own addresses per call (a block every 5 calls) until it
    holds that many coins of 0.01-0.02.  The new coins are locked (``lockunspent``) until
    the setup ends, else each sendmany would spend ~500 of the previous one's coins;
  - ``history``: the wallet is unloaded and history written straight into its file
    through its own storage (``WalletDB.put_txs``) until it holds that many transactions:
    pairs of a receive from outside and its spend to outside, mined (as the wallet
    records it) in blocks at least 200 deep, so they leave no coin behind; then
    ``loadwallet_computed`` (the write left the load snapshot unused: the load parses and
    computes everything, as after a crash), ``unload_writing_snapshot``, and
    ``loadwallet`` (median of 3 unload/load rounds, from the snapshot), then
    ``first_listunspent_after_load`` (1,000 entries: it decodes the coin index's per-coin
    part, which the load leaves for the first call needing it) and
    ``first_getreceivedbyaddress_after_load`` (it reads the settled history the load left
    in the file, as any call going through every transaction does first; the calls
    timed after it run with the whole history in memory);
  - ``getbalance``, ``getbalance "*" 1``, ``getwalletinfo``, ``listunspent 0 9999999 []
    true {maximumCount: 1000}`` (1,000 entries), ``listtransactions "*" 10`` (median of
    ``--repeats``);
  - ``sendtoaddress``: ``--sends`` calls, each paying 0.001-0.005 outside the wallet
    (median latency); the pool is mined afterwards;

  and ``growth``: each figure at the largest point over the same figure at the smallest;
* ``rescan``: ``rescanblockchain`` over the whole chain (median of ``--rescans``) and
  ``importprivkey`` of the key the sends paid, with its rescan.

``--quick`` is a smoke run (1,000 and 5,000 coins, about 40 s); the defaults take about
10 minutes on 2 cores, most of it sendmany making 100,000 real coins.  Each call's figure
has the median wall clock and the node's mean CPU per call (``cpu_ms``, from /proc, 10 ms
ticks over ``--repeats`` calls): on a shared machine the CPU figure is the steadier one.
With ``--py-spy DIR`` (and py-spy on PATH) the node is sampled during getnewaddress, each
point's calls and the rescans; the raw profiles go to DIR and the JSON lists each phase's heaviest functions
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
from coin.primitives.transaction import OutPoint, Transaction, TxIn, TxOut  # noqa: E402
from coin.script.standard import p2pkh_script  # noqa: E402
from coin.wallet.db import WalletDB  # noqa: E402
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
DEFAULTS: Dict[str, Any] = {"addresses": 500, "runs": 3, "utxos": "10000,100000", "sends": 30,
                            "txs": "20000,200000", "repeats": 20, "rescans": 3}
QUICK: Dict[str, Any] = {"addresses": 100, "runs": 2, "utxos": "1000,5000", "sends": 10,
                         "txs": "2000,10000", "repeats": 3, "rescans": 2}
#: listunspent's page and the listtransactions page the points measure.
UNSPENT_PAGE = 1000
TX_PAGE = 10
#: Synthetic history is recorded in blocks at least this deep (settled, mature).
HISTORY_DEPTH = 200
#: Options listing one size per point.
SCALES = ("utxos", "txs")
#: unloadwallet/loadwallet rounds timed per point.
REPEATS_LOAD = 3
#: Where the synthetic history's spends go (outside the wallet, never imported).
HISTORY_PAYEE = p2pkh_script(hash160(
    deterministic_key("wallet bench: history payee").public_key.format()))


# ------------------------------------------------------------------ transport


class Client:
    """JSON-RPC over one keep-alive HTTP/1.1 connection (reopened if the server closes it)."""

    def __init__(self, node: NodeProcess, path: str = WALLET_PATH) -> None:
        self.port = node.rpcport
        self.pid = node.process.pid
        self.path = path
        self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=900)
        #: TCP connections opened: 1 means every request went over the same one.
        self.connects = 0

    def call(self, method: str, *params: Any, path: Optional[str] = None) -> Any:
        body = json.dumps({"method": method, "params": list(params), "id": 1}).encode()
        try:
            response = self._post(path or self.path, body)
        except (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected):
            self.connection.close()  # the server closed an idle keep-alive connection
            response = self._post(path or self.path, body)
        reply = json.loads(response.read(), parse_float=Decimal)
        if reply.get("error"):
            raise RPCFailure(response.status, reply["error"]["code"], reply["error"]["message"])
        return reply["result"]

    def cpu(self) -> float:
        """Seconds of CPU the node has used (all threads; 10 ms ticks): on a shared machine
        a fairer figure than the wall clock."""
        with open("/proc/%d/stat" % self.pid) as f:
            fields = f.read().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def _post(self, path: str, body: bytes) -> http.client.HTTPResponse:
        if self.connection.sock is None:
            self.connects += 1
        self.connection.request("POST", path, body=body,
                                headers={"Authorization": AUTHORIZATION,
                                         "Content-Type": "application/json"})
        return self.connection.getresponse()

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
    """Median of ``repeats`` calls and the node's mean CPU per call; the size of the answer
    when it is a list."""
    times, result = [], None
    cpu = client.cpu()
    for _ in range(repeats):
        elapsed, result = timed(client, method, *params)
        times.append(elapsed)
    figure: Dict[str, Any] = {"median_ms": ms(statistics.median(times)),
                              "cpu_ms": ms((client.cpu() - cpu) / repeats),
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


def make_utxos(client: Client, addresses: List[str], target: int, have: int,
               rng: random.Random) -> Dict[str, Any]:
    """sendmany to own addresses until the wallet holds ``target`` made coins (``have``
    so far); 110 blocks to the wallet first when there are none yet."""
    while len(addresses) < BATCH:
        addresses.append(client.call("getnewaddress"))
    started = time.perf_counter()
    report: Dict[str, Any] = {}
    if not have:
        report["generatetoaddress_110_s"] = round(timed(client, "generatetoaddress", 110,
                                                        addresses[0])[0], 2)
    else:  # the coins made so far stay out of the way (loadwallet forgot their locks)
        client.call("lockunspent", False, [
            {"txid": coin["txid"], "vout": coin["vout"]} for coin in client.call("listunspent", 0)
            if Decimal(coin["amount"]) <= Decimal("0.02")])
    send_times, mined, made = [], 0, have
    while made < target:
        size = min(BATCH, target - made)
        first = made % len(addresses)
        chosen = (addresses + addresses)[first:first + size]
        amounts = {address: coins(rng.uniform(0.01, 0.02)) for address in chosen}
        elapsed, txid = timed(client, "sendmany", "", amounts)
        send_times.append(elapsed)
        lock_outputs(client, txid, set(amounts))
        made += size
        if len(send_times) % BATCHES_PER_BLOCK == 0 or made >= target:
            client.call("generatetoaddress", 1, MINER_ADDRESS)
            mined += 1
    client.call("lockunspent", True)
    report.update({"sendmany_outputs": BATCH, "sendmany": latencies(send_times),
                   "blocks_confirming": mined, "total_s": round(time.perf_counter() - started, 1)})
    return report


def lock_outputs(client: Client, txid: str, addresses: set) -> None:
    """Lock the new coins until the setup ends: coin selection would otherwise spend
    hundreds of them in the next sendmany (the smallest coin covering the target, a
    50-coin coinbase, loses to a run of small coins summing closer to it)."""
    tx = client.call("decoderawtransaction", client.call("gettransaction", txid)["hex"])
    outpoints = [{"txid": txid, "vout": out["n"]} for out in tx["vout"]
                 if set(out["scriptPubKey"].get("addresses", ())) & addresses]
    client.call("lockunspent", False, outpoints)


def write_history(node: NodeProcess, client: Client, target: int,
                  rng: random.Random) -> Dict[str, Any]:
    """Unload the wallet, add settled history to its file until it holds ``target``
    transactions (pairs: a receive from outside, its spend to outside, in blocks at least
    HISTORY_DEPTH deep), load it again."""
    height = client.call("getblockcount")
    if height < HISTORY_DEPTH + 10:
        client.call("generatetoaddress", HISTORY_DEPTH + 10 - height, MINER_ADDRESS)
        height = HISTORY_DEPTH + 10
    blocks = [bytes.fromhex(client.call("getblockhash", h))[::-1]
              for h in range(1, height - HISTORY_DEPTH + 1)]
    address = client.call("getnewaddress")
    script = bytes.fromhex(client.call("getaddressinfo", address)["scriptPubKey"])
    have = client.call("getwalletinfo")["txcount"]
    client.call("unloadwallet", WALLET, path="/")
    started = time.perf_counter()
    db = WalletDB(os.path.join(node.net_datadir, "wallets", WALLET, "wallet.dat"))
    db.open(create=False)
    try:
        order = db.next_order()
        rows = []
        for i in range(max(0, target - have) // 2):
            height_index = i % len(blocks)
            funding = OutPoint(rng.getrandbits(256).to_bytes(32, "little"), 0)
            received = Transaction([TxIn(funding, b"\x00" * 107)],
                                   [TxOut(rng.randrange(100_000, 10_000_000), script)])
            spent = Transaction([TxIn(OutPoint(received.txid, 0), b"\x00" * 107)],
                                [TxOut(received.vout[0].value - 1_000, HISTORY_PAYEE)])
            for tx, from_me in ((received, False), (spent, True)):
                rows.append({"txid": tx.txid, "raw": tx.serialize(),
                             "block_hash": blocks[height_index], "block_height": height_index + 1,
                             "block_index": 1 + len(rows) % 1000, "time_received": 1_500_000_000,
                             "order_pos": order, "abandoned": False, "from_me": from_me})
                order += 1
            if len(rows) >= 20_000:
                db.put_txs(rows)
                rows = []
        db.put_txs(rows)
    finally:
        db.close()
    written_s = time.perf_counter() - started
    # The write above left the wallet's load snapshot unused: this load computes everything
    # (as after a crash or an upgrade), its unload writes a new snapshot, the next ones use it.
    cpu = client.cpu()
    computed_s = timed(client, "loadwallet", WALLET)[0]
    computed_cpu = client.cpu() - cpu
    cpu, begun = client.cpu(), time.perf_counter()
    client.call("unloadwallet", WALLET, path="/")
    unload_s, unload_cpu = time.perf_counter() - begun, client.cpu() - cpu
    loads, cpus = [], []
    for i in range(REPEATS_LOAD):
        if i:
            client.call("unloadwallet", WALLET, path="/")
        cpu = client.cpu()
        loads.append(timed(client, "loadwallet", WALLET)[0])
        cpus.append(client.cpu() - cpu)
    # The coin index's per-coin part is decoded at the first call needing it, not at load.
    cpu = client.cpu()
    first_unspent = timed(client, "listunspent", 0, 9999999, [], True,
                          {"maximumCount": UNSPENT_PAGE})[0]
    first_unspent_cpu = client.cpu() - cpu
    # A call that goes through every transaction (as Core's do) first reads the settled
    # history the load left in the file; the calls timed after it find it all in memory.
    cpu = client.cpu()
    first_scan = timed(client, "getreceivedbyaddress", address, 0)[0]
    first_scan_cpu = client.cpu() - cpu
    return {"wallet_txs": client.call("getwalletinfo")["txcount"], "write_s": round(written_s, 1),
            "loadwallet": {"median_s": round(statistics.median(loads), 3),
                           "cpu_median_s": round(statistics.median(cpus), 3),
                           "runs_s": [round(t, 3) for t in loads]},
            "loadwallet_computed": {"s": round(computed_s, 3), "cpu_s": round(computed_cpu, 3)},
            "unload_writing_snapshot": {"s": round(unload_s, 3), "cpu_s": round(unload_cpu, 3)},
            "first_listunspent_after_load": {"ms": ms(first_unspent), "cpu_ms": ms(first_unspent_cpu)},
            "first_getreceivedbyaddress_after_load": {"ms": ms(first_scan),
                                                      "cpu_ms": ms(first_scan_cpu)}}


def send_many_times(client: Client, count: int, rng: random.Random) -> Dict[str, Any]:
    times = []
    cpu = client.cpu()
    for _ in range(count):
        times.append(timed(client, "sendtoaddress", EXTERNAL_ADDRESS,
                           coins(rng.uniform(0.001, 0.005)))[0])
    cpu = client.cpu() - cpu
    pooled = client.call("getmempoolinfo", path="/")["size"]
    client.call("generatetoaddress", 1, MINER_ADDRESS)
    return {"payee": "outside the wallet", "latency": latencies(times),
            "cpu_ms": ms(cpu / count), "mempool_size_after": pooled}


def measure_point(client: Client, sizes: Dict[str, Any], rng: random.Random,
                  profiler: Profiler, name: str) -> Dict[str, Any]:
    repeats = sizes["repeats"]
    with profiler.phase(name):
        figures: Dict[str, Any] = {
            "getbalance": repeated(client, repeats, "getbalance"),
            "getbalance_star_1": repeated(client, repeats, "getbalance", "*", 1),
            "getwalletinfo": repeated(client, repeats, "getwalletinfo"),
            "listunspent_%d" % UNSPENT_PAGE: repeated(
                client, repeats, "listunspent", 0, 9999999, [], True,
                {"maximumCount": UNSPENT_PAGE}),
            "listtransactions_%d" % TX_PAGE: repeated(client, repeats, "listtransactions", "*",
                                                      TX_PAGE),
            "sendtoaddress": send_many_times(client, sizes["sends"], rng)}
    figures["unspent_coins"] = len(client.call("listunspent", 0))
    return figures


#: Figures compared between the smallest and the largest point (median ms).
GROWTH = ("getbalance", "getbalance_star_1", "getwalletinfo", "listunspent_%d" % UNSPENT_PAGE,
          "listtransactions_%d" % TX_PAGE)


def growth(first: Dict[str, Any], last: Dict[str, Any]) -> Dict[str, float]:
    """Largest point over smallest: median wall clock, and CPU (``cpu_*``)."""
    ratios = {name: round(last[name]["median_ms"] / first[name]["median_ms"], 2)
              for name in GROWTH}
    ratios.update({"cpu_" + name: round(last[name]["cpu_ms"] / first[name]["cpu_ms"], 2)
                   for name in GROWTH if first[name]["cpu_ms"]})
    ratios["sendtoaddress"] = round(last["sendtoaddress"]["latency"]["median_ms"]
                                    / first["sendtoaddress"]["latency"]["median_ms"], 2)
    ratios["loadwallet"] = round(last["history"]["loadwallet"]["median_s"]
                                 / first["history"]["loadwallet"]["median_s"], 2)
    return ratios


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


def progress(text: str) -> None:
    print("%s %s" % (time.strftime("%H:%M:%S"), text), file=sys.stderr, flush=True)


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
        parser.add_argument("--" + name, type=str if name in SCALES else int, default=None,
                            help="default %s (--quick: %s)" % (default, QUICK[name]))
    parser.add_argument("--quick", action="store_true", help="a smoke run with small sizes")
    parser.add_argument("--py-spy", metavar="DIR", default=None,
                        help="sample the node with py-spy into DIR during the slow phases")
    args = parser.parse_args(argv)
    sizes = {name: getattr(args, name) if getattr(args, name) is not None
             else (QUICK if args.quick else DEFAULTS)[name] for name in DEFAULTS}
    for name in SCALES:
        sizes[name] = sorted(int(v) for v in str(sizes[name]).split(","))
    if len(sizes["utxos"]) != len(sizes["txs"]):
        parser.error("--utxos and --txs need as many points each")
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

        points, made = [], 0
        for utxos, txs in zip(sizes["utxos"], sizes["txs"]):
            point: Dict[str, Any] = {"utxos": utxos, "txs": txs}
            progress("point %d/%d: making coins" % (utxos, txs))
            point["setup_utxos"] = make_utxos(client, addresses, utxos, made, rng)
            made = utxos
            progress("writing history")
            point["history"] = write_history(node, client, txs, rng)
            progress("measuring")
            point.update(measure_point(client, sizes, rng, profiler, "point_%d" % utxos))
            progress("load %ss (cpu %ss; computed %ss, cpu %ss), send %sms (cpu %sms), %s" % (
                point["history"]["loadwallet"]["median_s"],
                point["history"]["loadwallet"]["cpu_median_s"],
                point["history"]["loadwallet_computed"]["s"],
                point["history"]["loadwallet_computed"]["cpu_s"],
                point["sendtoaddress"]["latency"]["median_ms"], point["sendtoaddress"]["cpu_ms"],
                ", ".join("%s %sms (cpu %sms)" % (name, point[name]["median_ms"],
                                                  point[name]["cpu_ms"]) for name in GROWTH)))
            points.append(point)
        report["points"] = points
        report["growth"] = growth(points[0], points[-1])
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
