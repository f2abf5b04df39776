"""Timing helpers shared by the in-process benchmarks."""

from __future__ import annotations

import statistics
import time
from typing import Any, Callable


def median_seconds(f: Callable[[], Any], runs: int) -> float:
    """Median wall time of ``runs`` calls of ``f`` (these machines are noisy: never one run)."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return statistics.median(times)
