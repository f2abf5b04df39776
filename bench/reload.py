"""A front end's reload after one new block: full index read vs incremental (changed rows).

Writes a synthetic block index of N entries (one chain) with a ChainStore, then times, in
process on the same SQLite file, what a front end does per commit: before, a full load into
a fresh ChainState (``read_committed()`` + ``load_committed``, with the cyclic GC paused as a
front end does); now, after one more block was flushed, ``read_committed(seq)`` +
``apply_committed``.  Prints medians in ms as JSON (wall time, and the full load's CPU time).

    python3 bench/reload.py 10000 100000
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from typing import Dict, List

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.timing import median_seconds  # noqa: E402
from coin.chain.chainstate import ChainState  # noqa: E402
from coin.chain.index import BLOCK_HAVE_DATA, BLOCK_VALID_SCRIPTS, BlockIndexEntry  # noqa: E402
from coin.chainparams import REGTEST  # noqa: E402
from coin.frontend.chain import gc_paused  # noqa: E402
from coin.primitives.hashes import sha256d  # noqa: E402
from coin.storage.chainstore import ChainStore  # noqa: E402

FULL_RUNS = 5
INCREMENTAL_RUNS = 25


def synthetic_entry(prev: BlockIndexEntry | None) -> BlockIndexEntry:
    height = prev.height + 1 if prev is not None else 0
    entry = BlockIndexEntry(sha256d(b"bench%d" % height), height, prev, 0x20000000,
                            sha256d(b"merkle%d" % height), 1_700_000_000 + height, 0x207FFFFF,
                            height, 2 * (height + 1))
    entry.status = BLOCK_VALID_SCRIPTS | BLOCK_HAVE_DATA
    entry.tx_count = 1
    entry.file_no, entry.data_pos = height // 1000, 8 + 300 * (height % 1000)
    entry.sequence_id = height
    return entry


def measure(size: int, workdir: str) -> Dict[str, float]:
    datadir = tempfile.mkdtemp(dir=workdir)
    writer = ChainStore(datadir, REGTEST)
    writer.open()
    entries = [synthetic_entry(None)]
    for _ in range(size - 1):
        entries.append(synthetic_entry(entries[-1]))
    writer.flush(entries, entries[-1].hash)
    reader = ChainStore(datadir, REGTEST)
    reader.open_read_only()

    def full() -> None:
        with gc_paused():  # as a front end loads (coin/frontend/chain.py)
            ChainState(REGTEST, reader).load_committed(reader.read_committed())

    follower = ChainState(REGTEST, reader)
    committed = reader.read_committed()
    follower.load_committed(committed)
    seq = committed.seq
    incremental: List[float] = []
    for _ in range(INCREMENTAL_RUNS):
        entries.append(synthetic_entry(entries[-1]))
        writer.flush([entries[-1]], entries[-1].hash)
        start = time.perf_counter()
        with gc_paused():
            committed = reader.read_committed(seq)
            follower.apply_committed(committed)
        incremental.append((time.perf_counter() - start) * 1000)
        seq = committed.seq
        assert follower.tip.hash == entries[-1].hash and len(committed.rows) == 1
    result = {"entries": size, "full_ms": round(median_seconds(full, FULL_RUNS) * 1000, 2),
              "full_cpu_ms": round(median_seconds(full, FULL_RUNS, time.process_time) * 1000, 2),
              "incremental_ms": round(statistics.median(incremental), 2)}
    reader.close()
    writer.close()
    return result


def main() -> None:
    sizes = [int(arg) for arg in sys.argv[1:]] or [10_000, 100_000]
    with tempfile.TemporaryDirectory(prefix="coin-bench-") as workdir:
        for size in sizes:
            print(json.dumps(measure(size, workdir)), flush=True)


if __name__ == "__main__":
    main()
