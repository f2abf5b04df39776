"""Timing helpers shared by the in-process benchmarks."""

from __future__ import annotations

import statistics
import time
from typing import Any, Callable


def median_seconds(f: Callable[[], Any], runs: int,
                   clock: Callable[[], float] = time.perf_counter) -> float:
    """Median wall time of ``runs`` calls of ``f`` (these machines are noisy: never one run);
    ``clock=time.process_time``: the process's CPU time instead (what other processes on a
    shared machine change least)."""
    times = []
    for _ in range(runs):
        start = clock()
        f()
        times.append(clock() - start)
    return statistics.median(times)
