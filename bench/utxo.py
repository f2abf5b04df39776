"""Micro-benchmark of the UTXO cache and table; prints JSON.

    python bench/utxo.py [--coins 200000] [--lookups 20000]

Besides the chosen paths it times the alternatives they were chosen over:
SQLAlchemy Core executing the same lookup, and the row-value ``IN`` query.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import time
import tracemalloc
from typing import Callable, Dict, List, Tuple

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from sqlalchemy import bindparam, select, tuple_  # noqa: E402

from coin.chainparams import REGTEST  # noqa: E402
from coin.primitives.coin import Coin  # noqa: E402
from coin.storage import utxodb  # noqa: E402
from coin.storage.chainstore import ChainStore  # noqa: E402
from coin.storage.coins import CoinsCache  # noqa: E402
from coin.storage.compiled import RawStatement  # noqa: E402
from coin.storage.schema import utxo  # noqa: E402

Key = Tuple[bytes, int]
BATCH = utxodb.MAX_FETCH_BATCH


def make_coins(count: int, rng: random.Random) -> Dict[Key, Coin]:
    return {(rng.randbytes(32), rng.randrange(3)):
            Coin(rng.randrange(1, 10**10), b"\x76\xa9\x14" + rng.randbytes(20) + b"\x88\xac",
                 rng.randrange(1, 500_000), rng.random() < 0.01, 1)
            for _ in range(count)}


def rate(count: int, run: Callable[[], object]) -> float:
    started = time.perf_counter()
    run()
    return round(count / (time.perf_counter() - started))


def batches(keys: List[Key]) -> List[List[Key]]:
    return [keys[i:i + BATCH] for i in range(0, len(keys), BATCH)]


def bench_core_lookup(store: ChainStore, keys: List[Key]) -> float:
    """The same lookup executed by SQLAlchemy Core instead of on the DBAPI cursor."""
    query = utxodb.lookup_query(BATCH)
    names = utxodb.lookup_param_names(BATCH)

    def run() -> None:
        with store.engine.connect() as conn:
            for batch in batches(keys):
                params = dict(zip(names, [p for key in batch for p in key], strict=True))
                [Coin(r.value, r.script_pubkey, r.height, r.coinbase, r.tx_version)
                 for r in conn.execute(query, params)]
    return rate(len(keys), run)


def bench_row_value_in(store: ChainStore, keys: List[Key]) -> float:
    """``(txid, n) IN (...)``: SQLite answers it with a full table scan."""
    query = select(utxo).where(tuple_(utxo.c.txid, utxo.c.n).in_(
        [tuple_(bindparam("t%d" % i), bindparam("n%d" % i)) for i in range(BATCH)]))
    stmt = RawStatement(query, store.engine.dialect, utxodb.lookup_param_names(BATCH))
    raw = store.engine.raw_connection()
    cursor = raw.cursor()
    try:
        return rate(len(keys), lambda: [stmt.execute(cursor, [p for k in batch for p in k])
                                        for batch in batches(keys)])
    finally:
        cursor.close()
        raw.close()


def bench_memory(coins: Dict[Key, Coin]) -> float:
    """Measured bytes of cache entries divided by ``usage_bytes()`` (1.0 = exact estimate)."""
    sample = list(coins.items())[:50_000]
    tracemalloc.start()
    copies = [((bytes(bytearray(k[0])), k[1]),
               Coin(c.value, bytes(bytearray(c.script_pubkey)), c.height, c.coinbase, 1))
              for k, c in sample]
    cache = CoinsCache(lambda keys: {}, 1 << 40)
    for key, coin in copies:
        cache.add(key, coin)
    del copies
    used = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return round(used / cache.usage_bytes(), 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--coins", type=int, default=200_000)
    parser.add_argument("--lookups", type=int, default=20_000)
    args = parser.parse_args()
    rng = random.Random(1)
    coins = make_coins(args.coins, rng)
    keys = list(coins)
    datadir = tempfile.mkdtemp(prefix="coin-bench-")
    results: Dict[str, object] = {"coins": len(coins), "lookups": args.lookups}
    try:
        store = ChainStore(datadir, REGTEST, dbcache_mib=4096)
        store.open()
        results["cache_add_per_s"] = rate(len(coins), lambda: [
            store.coins.add(k, c) for k, c in coins.items()])
        results["flush_inserts_per_s"] = rate(len(coins), lambda: store.flush([], b"\x01" * 32))
        sample = rng.sample(keys, args.lookups)
        results["cached_get_per_s"] = rate(len(sample), lambda: [
            store.coins.get(k) for k in sample])
        store.close()

        store.open()                                   # cold cache, warm OS page cache
        results["uncached_fetch_batched_per_s"] = rate(len(sample), lambda: [
            store.coins.fetch(batch) for batch in batches(sample)])
        store.coins.clear()
        single = sample[:5000]
        results["uncached_get_single_row_per_s"] = rate(len(single), lambda: [
            store.coins.get(k) for k in single])
        results["alt_core_batched_per_s"] = bench_core_lookup(store, sample)
        results["alt_row_value_in_batched_per_s"] = bench_row_value_in(store, sample[:2000])
        store.coins.clear()
        for k in sample[:BATCH]:
            store.coins.spend(k)
        results["flush_deletes_per_s"] = rate(BATCH, lambda: store.flush([], b"\x02" * 32))
        store.close()
        results["db_bytes_per_coin"] = round(
            os.path.getsize(os.path.join(datadir, "chainstate.sqlite")) / len(coins), 1)
        results["memory_measured_over_estimate"] = bench_memory(coins)
    finally:
        shutil.rmtree(datadir)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
