"""Pausing Python's cyclic garbage collector around bulk loads."""

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
