"""Mempool throughput, block-template time and memory, on a real chain state.

    python bench/mempool.py [--txs 2000] [--chains 80] [--chain-length 25]
                            [--pool-size 10000] [--replacements 100] [--runs 5] [--quick]
                            [--no-profile]

Builds a regtest chain with ChainBuilder whose confirmed fan-out transactions
fund every spend, then calls ``accept_to_mempool`` directly on this thread (what
the validation worker runs), signature checks included.  Prints one JSON object:

* ``accept_independent``: one-input one-output P2PKH spends of confirmed coins,
  first with a cold UTXO cache (the chain was just reopened, each input is a
  SQLite lookup), then the same transactions (fresh objects) into a fresh pool
  with the coins cached;
* ``accept_chains``: parent->child chains at the default ancestor limits;
* ``template``: ``select_transactions`` and ``create_block_from_pool`` on a pool
  mixing independent transactions and chains (median of ``--runs``);
* ``memory``: the pool's ``total_usage`` against tracemalloc and RSS growth,
  measured in a fresh child process so earlier phases' freed memory does not
  hide growth;
* ``replacement``: BIP125 replacements per second, each evicting a signalling chain of
  25 (``--replacements`` of them, median of ``--runs`` passes), and the cost of the
  replacement checks on ordinary acceptance: the time ``find_conflicts`` and
  ``check_replacement`` take per independent spend, against the warm accept time of the
  same transactions in the same run (medians of ``--runs``);
* ``profile_accept``: cProfile of the warm accept loop (cProfile inflates Python
  code; read the numbers as shares).

Transactions are signed before anything is timed, and reach the pool as objects
freshly parsed from their serialization, as from the network.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import os
import platform
import pstats
import random
import resource
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import tracemalloc
from typing import Dict, List, Optional, Sequence, Tuple

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.chaindata import fan_out  # noqa: E402
from coin.chain.chainstate import ChainState  # noqa: E402
from coin.chainparams import MAX_BLOCK_SIGOPS, MAX_BLOCK_SIZE  # noqa: E402
from coin.mempool.accept import PoolPolicy, accept_to_mempool  # noqa: E402
from coin.mempool.pool import Mempool  # noqa: E402
from coin.mempool.rbf import MAX_BIP125_RBF_SEQUENCE, check_replacement, find_conflicts  # noqa: E402
from coin.mining.assembler import create_block_from_pool  # noqa: E402
from coin.mining.selection import select_transactions  # noqa: E402
from coin.primitives.transaction import Transaction  # noqa: E402
from coin.testing.chainbuilder import ChainBuilder, Spendable, open_chain  # noqa: E402

FANOUT_OUTPUTS = 1_000   # outputs per confirmed fan-out transaction (one coinbase each)
START_TIME = 1_700_000_000
QUICK = {"txs": 200, "chains": 8, "pool_size": 1_000, "replacements": 20}
#: A replacement's fee: above any chain of 25 (at most 20,000 each) plus its relay fee.
REPLACEMENT_FEE = 1_000_000


# ---------------------------------------------------------------- preparation

def fund(builder: ChainBuilder, count: int) -> List[Spendable]:
    """``count`` mature P2PKH outputs: coinbases split by fan-out transactions, confirmed."""
    fanouts_needed = -(-count // FANOUT_OUTPUTS)
    builder.mine(100 + fanouts_needed)
    return fan_out(builder, builder.coinbase_outputs[:fanouts_needed], FANOUT_OUTPUTS)[:count]


def independent_spends(builder: ChainBuilder, coins: Sequence[Spendable],
                       rng: random.Random) -> List[Transaction]:
    return [builder.spend(coin, fee=rng.randrange(1_000, 20_000)) for coin in coins]


def chains_of(builder: ChainBuilder, roots: Sequence[Spendable], length: int,
              rng: random.Random) -> List[Transaction]:
    """For each root a chain of ``length`` spends, each of the previous one's output; chain-major."""
    txs = []
    for spendable in roots:
        for _ in range(length):
            tx = builder.spend(spendable, fee=rng.randrange(1_000, 20_000))
            txs.append(tx)
            spendable = ChainBuilder.outputs_of(tx)[0]
    return txs


def replaceable_chains(builder: ChainBuilder, roots: Sequence[Spendable], length: int,
                       rng: random.Random) -> Tuple[List[Transaction], List[Transaction]]:
    """For each root a chain of ``length`` whose first transaction signals BIP125, and a
    replacement of that first transaction paying more than the whole chain."""
    chains, replacements = [], []
    for root in roots:
        first = builder.spend(root, fee=rng.randrange(1_000, 20_000),
                              sequence=MAX_BIP125_RBF_SEQUENCE)
        chains += [first] + chains_of(builder, ChainBuilder.outputs_of(first)[:1], length - 1, rng)
        replacements.append(builder.spend(root, fee=REPLACEMENT_FEE))
    return chains, replacements


def replacement_rate(chain: ChainState, chain_raws: Sequence[bytes],
                     replacement_raws: Sequence[bytes], policy: PoolPolicy, now: int,
                     runs: int) -> Dict[str, object]:
    """Replacements per second, each evicting a chain (pool filled before the clock starts)."""
    times = []
    for _ in range(runs):
        pool = new_pool(policy, now)
        accept_all(chain, pool, fresh(chain_raws), policy, now)
        replacements = fresh(replacement_raws)
        gc.collect()
        elapsed = accept_one_by_one(chain, pool, replacements, policy, now)
        if len(pool) != len(replacements):
            raise RuntimeError("replacements left %d transactions in the pool" % len(pool))
        times.append(elapsed)
    seconds = statistics.median(times)
    return dict({"replacements": len(replacement_raws), "evicted_each": len(chain_raws)
                 // len(replacement_raws), "runs_seconds": [round(t, 3) for t in times]},
                **rate(len(replacement_raws), seconds))


def rbf_check_share(chain: ChainState, raws: Sequence[bytes], policy: PoolPolicy, now: int,
                    runs: int) -> Dict[str, object]:
    """The replacement checks' time per ordinary transaction against its whole acceptance."""
    accept_times, check_times = [], []
    for _ in range(runs):
        pool = new_pool(policy, now)
        gc.collect()
        accept_times.append(accept_all(chain, pool, fresh(raws), policy, now))
        txs = fresh(raws)
        other = new_pool(policy, now)  # the same pool state acceptance saw: no conflicts
        start = time.perf_counter()
        for tx in txs:
            conflicts = find_conflicts(other, tx, policy.replacement)
            check_replacement(other, tx, conflicts, set(), 10_000, tx.size,
                              policy.incremental_relay_fee)
        check_times.append(time.perf_counter() - start)
    accept_us = statistics.median(accept_times) / len(raws) * 1e6
    check_us = statistics.median(check_times) / len(raws) * 1e6
    return {"transactions": len(raws), "accept_us_per_tx_median": round(accept_us, 1),
            "rbf_checks_us_per_tx_median": round(check_us, 2),
            "rbf_checks_share_of_accept": round(check_us / accept_us, 4)}


def order_parents_first(txs: List[Transaction]) -> List[Transaction]:
    """``txs`` in their given order except that each waits for its in-list parents."""
    ids = {tx.txid for tx in txs}
    done: set = set()
    waiting: Dict[bytes, List[Transaction]] = {}
    ordered: List[Transaction] = []

    def release(tx: Transaction) -> None:
        stack = [tx]
        while stack:
            tx = stack.pop()
            ordered.append(tx)
            done.add(tx.txid)
            stack.extend(reversed(waiting.pop(tx.txid, [])))

    for tx in txs:
        parent = next((i.prevout.txid for i in tx.vin
                       if i.prevout.txid in ids and i.prevout.txid not in done), None)
        if parent is None:
            release(tx)
        else:
            waiting.setdefault(parent, []).append(tx)
    return ordered


def fresh(raws: Sequence[bytes]) -> List[Transaction]:
    """New Transaction objects, as parsed off the wire (nothing cached but the raw bytes)."""
    return [Transaction.deserialize(raw) for raw in raws]


def new_pool(policy: PoolPolicy, now: int) -> Mempool:
    return Mempool(max_usage=policy.max_usage, min_relay_fee=policy.min_relay_fee,
                   incremental_relay_fee=policy.incremental_relay_fee, now=lambda: now)


def accept_one_by_one(chain: ChainState, pool: Mempool, txs: Sequence[Transaction],
                      policy: PoolPolicy, now: int) -> float:
    start = time.perf_counter()
    for tx in txs:
        accept_to_mempool(chain, pool, tx, policy, now=now)
    return time.perf_counter() - start


def accept_all(chain: ChainState, pool: Mempool, txs: Sequence[Transaction], policy: PoolPolicy,
               now: int, profiler: Optional[cProfile.Profile] = None) -> float:
    """Seconds to accept ``txs`` in order; every one must be accepted."""
    if profiler is not None:
        profiler.enable()
    elapsed = accept_one_by_one(chain, pool, txs, policy, now)
    if profiler is not None:
        profiler.disable()
    if len(pool) != len(txs):
        raise RuntimeError("only %d of %d transactions entered the pool" % (len(pool), len(txs)))
    return elapsed


def rate(count: int, seconds: float) -> Dict[str, float]:
    return {"seconds": round(seconds, 3), "tx_per_s": round(count / seconds, 1),
            "us_per_tx": round(seconds / count * 1e6, 1)}


def median_ms(runs: int, call) -> Tuple[float, List[float], object]:
    times, result = [], None
    for _ in range(runs):
        gc.collect()
        start = time.perf_counter()
        result = call()
        times.append((time.perf_counter() - start) * 1000)
    return round(statistics.median(times), 2), [round(t, 2) for t in times], result


def profile_top(profiler: cProfile.Profile, count: int = 8) -> Dict[str, list]:
    stats = pstats.Stats(profiler).stats
    total = sum(v[2] for v in stats.values()) or 1.0

    def rows(index: int) -> list:
        top = sorted(stats.items(), key=lambda kv: kv[1][index], reverse=True)[:count]
        return [{"function": "%s:%d:%s" % (os.path.basename(f), line, name),
                 "tottime_s": round(tt, 4), "cumtime_s": round(ct, 4),
                 "own_share": round(tt / total, 3), "calls": nc}
                for (f, line, name), (_, nc, tt, ct, _) in top]
    return {"by_tottime": rows(2), "by_cumtime": rows(3)}


def template(chain: ChainState, raws: Sequence[bytes], policy: PoolPolicy, now: int,
             script_pubkey: bytes, runs: int) -> Dict[str, object]:
    """Fill a pool with ``raws``; time selection and the whole template on it."""
    pool = new_pool(policy, now)
    txs = fresh(raws)
    tenth = max(1, len(txs) // 10)
    segments = []
    for start in range(0, len(txs), tenth):
        segments.append(accept_one_by_one(chain, pool, txs[start:start + tenth], policy, now))
    fill = sum(segments)
    if len(pool) != len(txs):
        raise RuntimeError("only %d of %d transactions entered the pool" % (len(pool), len(txs)))
    del txs
    gc.collect()
    select_ms, select_runs, selection = median_ms(
        runs, lambda: select_transactions(pool, MAX_BLOCK_SIZE, MAX_BLOCK_SIGOPS))
    create_ms, create_runs, (block, _) = median_ms(
        runs, lambda: create_block_from_pool(chain, pool, script_pubkey))
    return {
        "pool_serialized_bytes": pool.total_size, "pool_usage_bytes": pool.total_usage,
        "fill": rate(len(raws), fill),
        # Accept rate as the pool grows: each tenth of the fill, first to last.
        "fill_tx_per_s_by_tenth": [round(tenth / t) for t in segments[:10]],
        "selected_transactions": len(selection.txs),
        "selected_bytes": sum(tx.size for tx in selection.txs),
        "block_bytes": len(block.serialize()),
        "select_transactions_ms_median": select_ms, "select_transactions_ms_runs": select_runs,
        "create_block_from_pool_ms_median": create_ms,
        "create_block_from_pool_ms_runs": create_runs,
    }


# ---------------------------------------------------------------- memory (child process)

def write_raws(path: str, raws: Sequence[bytes]) -> None:
    with open(path, "wb") as out:
        for raw in raws:
            out.write(struct.pack("<I", len(raw)) + raw)


def read_raws(path: str) -> List[bytes]:
    raws = []
    with open(path, "rb") as f:
        while head := f.read(4):
            raws.append(f.read(struct.unpack("<I", head)[0]))
    return raws


def vmrss() -> int:
    """Current resident set in bytes (peak RSS where /proc is missing)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def parse_copies(raws: Sequence[bytes]) -> List[Transaction]:
    """Transactions whose every byte string was allocated here, ids computed (as on receipt)."""
    txs = [Transaction.deserialize(bytes(bytearray(raw))) for raw in raws]
    for tx in txs:
        tx.txid
    return txs


def memory_child(datadir: str, txfile: str) -> Dict[str, object]:
    """Fill a pool with the transactions of ``txfile``; the pool's usage against measured growth."""
    chain = open_chain(datadir)
    policy = PoolPolicy()
    now = chain.tip.time + 600
    raws = read_raws(txfile)
    # Parsed one at a time: no heap of freed objects for the measured phases to reuse.
    ids = {Transaction.deserialize(raw).txid for raw in raws}
    # Warm the UTXO cache and SQLite's page cache, so neither grows while the pool fills.
    chain.store.coins.fetch([(i.prevout.txid, i.prevout.n) for raw in raws
                             for i in Transaction.deserialize(raw).vin if i.prevout.txid not in ids])
    accept_all(chain, new_pool(policy, now), fresh(raws[:50]), policy, now)  # warm code paths

    gc.collect()
    rss0 = vmrss()
    txs = parse_copies(raws)
    gc.collect()
    rss1 = vmrss()
    pool = new_pool(policy, now)
    accept_all(chain, pool, txs, policy, now)
    gc.collect()
    rss2 = vmrss()

    tracemalloc.start()
    gc.collect()
    t0 = tracemalloc.get_traced_memory()[0]
    traced_txs = parse_copies(raws)
    gc.collect()
    t1 = tracemalloc.get_traced_memory()[0]
    traced_pool = new_pool(policy, now)
    accept_all(chain, traced_pool, traced_txs, policy, now)
    gc.collect()
    t2, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    chain.close()

    n = len(raws)
    usage = pool.total_usage
    assert traced_pool.total_usage == usage
    tx_bytes, insert_bytes = t1 - t0, t2 - t1
    rss_txs, rss_insert = rss1 - rss0, rss2 - rss1

    def block(tx_part: int, insert_part: int) -> Dict[str, object]:
        total = tx_part + insert_part
        return {"transactions_bytes": tx_part, "pool_insertion_bytes": insert_part,
                "total_bytes": total, "per_entry_bytes": round(total / n, 1),
                "transactions_per_entry": round(tx_part / n, 1),
                "insertion_per_entry": round(insert_part / n, 1),
                "usage_over_measured": round(usage / total, 3) if total > 0 else None}

    return {
        "entries": n,
        "serialized_bytes": pool.total_size,
        "pool_usage_bytes": usage,
        "pool_usage_per_entry": round(usage / n, 1),
        "tracemalloc": dict(block(tx_bytes, insert_bytes),
                            insertion_peak_over_final=round((peak - t1) / insert_bytes, 3)),
        "rss": block(rss_txs, rss_insert),
    }


def run_memory_child(datadir: str, raws: Sequence[bytes], workdir: str) -> Dict[str, object]:
    txfile = os.path.join(workdir, "pool-txs.bin")
    write_raws(txfile, raws)
    done = subprocess.run([sys.executable, os.path.abspath(__file__), "--memory-child", datadir, txfile],
                          capture_output=True, text=True)
    if done.returncode != 0:
        sys.stderr.write(done.stderr)
        raise RuntimeError("the memory child process failed (exit status %d)" % done.returncode)
    return json.loads(done.stdout)


# ---------------------------------------------------------------- main

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--txs", type=int, default=2_000, help="independent spends accepted")
    parser.add_argument("--chains", type=int, default=80, help="parent->child chains accepted")
    parser.add_argument("--chain-length", type=int, default=25,
                        help="transactions per chain (default: the ancestor limit)")
    parser.add_argument("--pool-size", type=int, default=10_000,
                        help="transactions in the template/memory pool (half of them in chains)")
    parser.add_argument("--replacements", type=int, default=100,
                        help="BIP125 replacements timed, each evicting a chain of 25")
    parser.add_argument("--runs", type=int, default=5, help="template runs (median reported)")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: --txs %(txs)d --chains %(chains)d --pool-size %(pool_size)d"
                             % QUICK)
    parser.add_argument("--no-profile", action="store_true", help="skip the cProfile run")
    parser.add_argument("--memory-child", nargs=2, metavar=("DATADIR", "TXFILE"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_child:
        print(json.dumps(memory_child(*args.memory_child)))
        return
    if args.quick:
        for name, value in QUICK.items():
            setattr(args, name, value)

    length = args.chain_length
    pool_chains = (args.pool_size // 2) // length
    pool_independent = args.pool_size - pool_chains * length
    workdir = os.environ.get("COIN_BENCH_DIR") or tempfile.mkdtemp(prefix="coin-bench-")
    datadir = tempfile.mkdtemp(dir=workdir)
    rng = random.Random(1)
    result: Dict[str, object] = {
        "benchmark": "mempool",
        "machine": {"cpu_count": os.cpu_count(), "python": platform.python_version(),
                    "implementation": platform.python_implementation(),
                    "platform": platform.platform()},
    }
    try:
        # -- preparation: funding, then every transaction signed up front
        started = time.perf_counter()
        chain = open_chain(datadir)
        builder = ChainBuilder(chain, start_time=START_TIME)
        coins = fund(builder, args.txs + args.chains + pool_independent + pool_chains
                     + args.replacements)
        replaceable, replacements = replaceable_chains(builder, coins[-args.replacements:], 25,
                                                       rng)
        coins = coins[:-args.replacements]
        spends = independent_spends(builder, coins[:args.txs], rng)
        chained = chains_of(builder, coins[args.txs:args.txs + args.chains], length, rng)
        rest = coins[args.txs + args.chains:]
        pool_txs = chains_of(builder, rest[:pool_chains], length, rng) + \
            independent_spends(builder, rest[pool_chains:], rng)
        rng.shuffle(pool_txs)                # chains interleaved with the rest, as they arrive
        pool_txs = order_parents_first(pool_txs)
        spend_raws = [tx.serialize() for tx in spends]
        chain_raws = [tx.serialize() for tx in chained]
        pool_raws = [tx.serialize() for tx in pool_txs]
        replaceable_raws = [tx.serialize() for tx in replaceable]
        replacement_raws = [tx.serialize() for tx in replacements]
        chain.close()
        chain = open_chain(datadir)          # cold UTXO cache: funding coins only in SQLite
        policy = PoolPolicy()
        now = chain.tip.time + 600
        result["setup"] = {"height": chain.height, "funding_outputs": len(coins),
                           "seconds": round(time.perf_counter() - started, 2)}

        # -- 1. independent spends
        cold = accept_all(chain, new_pool(policy, now), fresh(spend_raws), policy, now)
        gc.collect()
        warm = accept_all(chain, new_pool(policy, now), fresh(spend_raws), policy, now)
        result["accept_independent"] = {"transactions": len(spend_raws),
                                        "cold_coins_cache": rate(len(spend_raws), cold),
                                        "warm_coins_cache": rate(len(spend_raws), warm)}

        # -- 2. chains at the default limits
        pool = new_pool(policy, now)
        elapsed = accept_all(chain, pool, fresh(chain_raws), policy, now)
        result["accept_chains"] = dict({"chains": args.chains, "chain_length": length,
                                        "transactions": len(chain_raws)},
                                       **rate(len(chain_raws), elapsed))
        del pool
        gc.collect()

        # -- 3. block template from a full pool
        result["template"] = dict({"pool_transactions": len(pool_raws), "independent": pool_independent,
                                   "chains": pool_chains, "chain_length": length},
                                  **template(chain, pool_raws, policy, now, builder.script_pubkey,
                                             args.runs))
        gc.collect()

        # -- 5. BIP125: replacements, and the checks' cost on ordinary acceptance
        result["replacement"] = {
            "chain_of_25_replaced": replacement_rate(chain, replaceable_raws, replacement_raws,
                                                     policy, now, args.runs),
            "checks_on_ordinary_accept": rbf_check_share(chain, spend_raws, policy, now,
                                                         args.runs)}
        gc.collect()

        # -- profile of the warm accept loop
        if not args.no_profile:
            profiler = cProfile.Profile()
            accept_all(chain, new_pool(policy, now), fresh(spend_raws), policy, now, profiler)
            result["profile_accept"] = dict({"transactions": len(spend_raws)},
                                            **profile_top(profiler))
        chain.close()

        # -- 4. memory, in a fresh process on the same chain
        result["memory"] = run_memory_child(datadir, pool_raws, workdir)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        result["peak_rss_mib_main_process"] = round(peak / 1024, 1)
    finally:
        if not os.environ.get("COIN_BENCH_DIR"):
            shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
