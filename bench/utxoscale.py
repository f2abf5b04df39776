"""Block connect rate as the UTXO set grows past -dbcache, and a whole-set walk's memory.

    python bench/utxoscale.py [--utxos 2000000] [--dbcache 300] [--per-block 30000]
                              [--probe-blocks 3] [--probe-txs 1000] [--keep]

1. Builds a regtest chain in-process (ChainBuilder, ``-dbcache`` as given): 101 blocks
   for coinbase maturity, then blocks each carrying one fan-out of a matured coinbase into
   ``per-block`` P2PKH outputs, until the UTXO set holds ``utxos`` coins.
2. At 20,000 coins and then at each doubling (and at the end) it times the connection
   (``ChainState.process_block``) of ``probe-blocks`` blocks of ``probe-txs`` signed
   one-input P2PKH spends of coins picked at random over the whole set, so the lookups
   miss the cache once the set has outgrown it; the blocks are built before the clock
   starts.  The process RSS is sampled after every block.
3. Starts a ``coind -dbcache=<n>`` on the chain and calls ``gettxoutsetinfo``, sampling
   the node's RSS every 20 ms during the call (the walk streams through a cursor: its RSS
   stays flat).

Prints one JSON object: per checkpoint the set size, inputs/s (the median block's, per
wall and per CPU second; over all blocks; how many blocks flushed the cache) and RSS; the
ratio of the rate at the largest set to the rate at 20,000; the build's peak RSS; the
node's RSS before and during gettxoutsetinfo; and ``targets``: issue #20's targets with
the figures they are judged on.  ``--utxos 200000`` finishes in a few minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from typing import Any, Dict, List, Set, Tuple

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from coin.chain.chainstate import ChainState  # noqa: E402
from coin.chainparams import COINBASE_MATURITY  # noqa: E402
from coin.primitives.transaction import OutPoint  # noqa: E402
from coin.testing.chainbuilder import ChainBuilder, Spendable, open_chain  # noqa: E402
from tests.nodeharness import NodeProcess  # noqa: E402

#: Satoshis per fan-out output (a spend pays 1,000 of it as fee).
OUTPUT_VALUE = 10_000
FIRST_CHECKPOINT = 20_000


def rss_mib(pid: str = "self") -> float:
    """Resident set size of a process, from /proc (Linux)."""
    with open("/proc/%s/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    return 0.0


class Growth:
    """The chain under construction and the unspent fan-out outputs, kept compactly
    (txid and output count per fan-out, the spent ones in a set)."""

    def __init__(self, chain: ChainState) -> None:
        self.chain = chain
        self.builder = ChainBuilder(chain, start_time=int(time.time()) - 10_000_000)
        self.fanouts: List[Tuple[bytes, int]] = []
        self.spent: Set[Tuple[int, int]] = set()
        self.unspent = 0
        self.next_coinbase = 0
        self.peak_rss = 0.0

    def _after_block(self) -> None:
        self.peak_rss = max(self.peak_rss, rss_mib())

    def fan_out(self, outputs: int) -> None:
        builder = self.builder
        source = builder.coinbase_outputs[self.next_coinbase]
        self.next_coinbase += 1
        tx = builder.spend(source, outputs=[(builder.script_pubkey, OUTPUT_VALUE)] * outputs,
                           fee=source.value - OUTPUT_VALUE * outputs)
        builder.mine(1, txs=[tx])
        self.fanouts.append((tx.txid, outputs))
        self.unspent += outputs
        self._after_block()

    def _pick(self, rng: random.Random) -> Spendable:
        while True:
            index = rng.randrange(len(self.fanouts))
            txid, count = self.fanouts[index]
            n = rng.randrange(count)
            if (index, n) not in self.spent:
                self.spent.add((index, n))
                self.unspent -= 1
                return Spendable(OutPoint(txid, n), OUTPUT_VALUE, self.builder.script_pubkey)

    def probe(self, blocks: int, txs: int, rng: random.Random) -> Dict[str, Any]:
        """Connect ``blocks`` blocks of ``txs`` random spends; the connect time only.

        The rates are the median block's (wall and CPU): a block that happens to fill the
        cache pays for a whole flush, which the other rates leave out and ``flushes``
        counts; ``inputs_per_s_all`` is over every block, flushes included."""
        builder = self.builder
        coins = self.chain.store.coins
        size = self.unspent
        seconds: List[float] = []
        cpu: List[float] = []
        flushes = 0
        for _ in range(blocks):
            spends = [builder.spend(self._pick(rng), fee=1_000) for _ in range(txs)]
            block = builder.build(spends)
            dirty = coins.dirty_count()
            started, started_cpu = time.perf_counter(), time.process_time()
            self.chain.process_block(block)
            seconds.append(time.perf_counter() - started)
            cpu.append(time.process_time() - started_cpu)
            flushes += coins.dirty_count() < dirty
            builder._remember_coinbase(block)
            self._after_block()
        return {"utxos": size, "inputs_per_s": round(txs / statistics.median(seconds), 1),
                "inputs_per_cpu_s": round(txs / statistics.median(cpu), 1),
                "inputs_per_s_all": round(blocks * txs / sum(seconds), 1), "flushes": flushes,
                "rss_mib": rss_mib(), "cache_mib": round(coins.usage_bytes() / (1 << 20), 1),
                "cached_coins": len(coins)}


def build_and_probe(datadir: str, args: argparse.Namespace) -> Dict[str, Any]:
    started = time.perf_counter()
    chain = open_chain(os.path.join(datadir, "regtest"), dbcache_mib=args.dbcache)
    growth = Growth(chain)
    growth.builder.mine(COINBASE_MATURITY + 1)
    rng = random.Random(20)
    checkpoints = []
    target = FIRST_CHECKPOINT
    while True:
        while growth.unspent < target:
            growth.fan_out(min(args.per_block, target - growth.unspent))
        checkpoints.append(growth.probe(args.probe_blocks, args.probe_txs, rng))
        print(json.dumps(checkpoints[-1]), file=sys.stderr)
        if target >= args.utxos:
            break
        target = min(target * 2, args.utxos)
    tip = chain.tip
    shape = {"blocks": tip.height, "transactions": tip.chain_tx, "utxos": growth.unspent,
             "build_seconds": round(time.perf_counter() - started, 1)}
    chain.close()
    first, last = checkpoints[0], checkpoints[-1]
    return {"chain": shape, "checkpoints": checkpoints,
            "rate_largest_vs_first": round(last["inputs_per_s"] / first["inputs_per_s"], 3),
            "cpu_rate_largest_vs_first": round(
                last["inputs_per_cpu_s"] / first["inputs_per_cpu_s"], 3),
            "build_peak_rss_mib": growth.peak_rss}


def measure_txoutsetinfo(datadir: str, dbcache: int) -> Dict[str, Any]:
    node = NodeProcess.start(datadir, ["-connect=0", "-listen=0", "-disablewallet",
                                       "-dbcache=%d" % dbcache])
    try:
        pid = str(node.process.pid)
        before = rss_mib(pid)
        samples: List[float] = []
        done = threading.Event()

        def sample() -> None:
            while not done.is_set():
                samples.append(rss_mib(pid))
                done.wait(0.02)

        sampler = threading.Thread(target=sample)
        sampler.start()
        started = time.perf_counter()
        try:
            _, _, body = node.post(b'{"method":"gettxoutsetinfo","params":[],"id":1}',
                                   timeout=3600)
            info = json.loads(body)["result"]
        finally:
            done.set()
            sampler.join()
        elapsed = time.perf_counter() - started
        return {"txouts": info["txouts"], "seconds": round(elapsed, 2),
                "node_rss_before_mib": before, "node_rss_peak_during_mib": max(samples),
                "node_rss_after_mib": rss_mib(pid)}
    finally:
        node.stop()
        node.kill()


def targets(result: Dict[str, Any], dbcache: int) -> Dict[str, Any]:
    """Issue #20's targets, each with the figure it is judged on: the rate at the largest
    set at least 0.6 of the rate at 20,000 (wall and CPU), RSS at most -dbcache + 200 MiB
    (the build and the node during gettxoutsetinfo)."""
    limit = dbcache + 200
    rss = result["build_peak_rss_mib"]
    node_rss = result["gettxoutsetinfo"]["node_rss_peak_during_mib"]
    return {
        "rate_ratio_wall": result["rate_largest_vs_first"],
        "rate_ratio_wall_met": result["rate_largest_vs_first"] >= 0.6,
        "rate_ratio_cpu": result["cpu_rate_largest_vs_first"],
        "rate_ratio_cpu_met": result["cpu_rate_largest_vs_first"] >= 0.6,
        "rss_limit_mib": limit,
        "build_peak_rss_mib": rss, "build_rss_met": rss <= limit,
        "node_rss_during_walk_mib": node_rss, "node_rss_met": node_rss <= limit,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--utxos", type=int, default=2_000_000)
    parser.add_argument("--dbcache", type=int, default=300)
    parser.add_argument("--per-block", type=int, default=30_000,
                        help="fan-out outputs per block (1 sigop each: at most ~39,000)")
    parser.add_argument("--probe-blocks", type=int, default=3)
    parser.add_argument("--probe-txs", type=int, default=1000)
    parser.add_argument("--keep", action="store_true", help="keep the data directory")
    args = parser.parse_args()
    workdir = os.environ.get("COIN_BENCH_DIR") or tempfile.gettempdir()
    datadir = tempfile.mkdtemp(prefix="coin-bench-utxoscale-", dir=workdir)
    try:
        result: Dict[str, Any] = {"benchmark": "utxoscale", "dbcache_mib": args.dbcache}
        result.update(build_and_probe(datadir, args))
        result["gettxoutsetinfo"] = measure_txoutsetinfo(datadir, args.dbcache)
        result["load_average"] = os.getloadavg()
        result["targets"] = targets(result, args.dbcache)
    finally:
        if not args.keep:
            shutil.rmtree(datadir, ignore_errors=True)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
