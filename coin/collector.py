"""How the node runs Python's cyclic garbage collector: paused around bulk loads, and once
start-up is over, the heap built so far frozen and the young generation collected less
often (coind; bench/connect.py runs the same policy)."""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for a bulk load (the front end's index, a large
    wallet): a load allocating hundreds of thousands of objects triggers collections that
    each walk every tracked object (a third to a half of its time).  What it allocates is
    kept, not garbage; the collector runs again afterwards."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


#: The collector's generation thresholds once start-up is over: a young generation of
#: 700 objects (CPython's default) is collected every few hundred allocations, several times
#: per block connected or batch answered; most of what the node allocates is freed by
#: reference counting, so collections that rarely find a cycle cost CPU for nothing.
GC_THRESHOLDS = (20_000, 20, 20)


def freeze_heap() -> None:
    """Start-up is over: what it built (the block index, above all) lives as long as the
    process, so the collector stops scanning it. A full collection walked all of it, a
    pause of 100+ ms in the middle of answering requests (doc/rpc.md, "Latency")."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
