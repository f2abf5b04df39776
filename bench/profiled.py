"""Run a module with every thread under cProfile, timed in CPU seconds per thread.

    python -m bench.profiled <stats file> <module> [arguments...]

For bench/sync.py --profile: cProfile alone sees only the thread that enabled it, and a
syncing coind works on two (the reactor, and validation in its pool), with the parsing
of received blocks in a third.  Each thread gets its own profiler from the moment it
starts; at exit they are merged into one pstats file.
"""

from __future__ import annotations

import atexit
import cProfile
import pstats
import runpy
import sys
import threading
import time
from typing import Any, List


def main() -> None:
    out, module = sys.argv[1], sys.argv[2]
    sys.argv = [module] + sys.argv[3:]
    profilers: List[cProfile.Profile] = []

    def start(*_: Any) -> None:
        profiler = cProfile.Profile(time.thread_time)
        profilers.append(profiler)  # list.append is atomic under the GIL
        profiler.enable()  # replaces this hook in this thread

    def dump() -> None:
        stats = pstats.Stats(profilers[0])
        for profiler in profilers[1:]:
            stats.add(profiler)
        stats.dump_stats(out)

    threading.setprofile(start)
    start()
    atexit.register(dump)
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
