"""Run a module with the block sync's steps timed: a timeline of one sync, per batch.

    python -m bench.timeline <events file> <module> [arguments...]

For bench/sync.py --timeline: both nodes of a sync run under it.  Each call of the steps
below is recorded as ``[step, start, end, count]`` (wall-clock seconds, so the two nodes'
events line up) and written as JSON at exit:

- ``request``: a ``getdata`` for blocks sent (count: blocks), ``arrival``: a block received;
- ``validate``: one :func:`coin.p2p.sync.process_blocks` batch (count: blocks), on the
  validation thread, of which ``fsync``: the block and undo files made durable
  (``ChainStore.sync``) and ``commit``: the chain state database flushed;
- ``serve``: a ``getdata`` handled by the serving node (count: items), and ``read``: one
  trip to the thread pool reading blocks for it (count: blocks).

:func:`batches` reads the two files back into one row per validation batch.
"""

from __future__ import annotations

import atexit
import json
import runpy
import sys
import time
from typing import Any, Callable, Dict, List

#: What each step counts, from the wrapped function's arguments (or its result).
Counter = Callable[..., int]


def _record(events: List[list], owner: Any, name: str, step: str,
            count: Counter = lambda *a: 1, of_result: bool = False) -> None:
    original = getattr(owner, name)

    def timed(*args: Any) -> Any:
        started = time.time()
        result = original(*args)
        events.append([step, started, time.time(),
                       count(result) if of_result else count(*args)])
        return result

    setattr(owner, name, timed)


def instrument(events: List[list]) -> None:
    """Wrap the sync's steps (before the node imports them by name: call first)."""
    from coin.p2p import sync
    from coin.storage.chainstore import ChainStore
    _record(events, sync.BlockSync, "_fetch", "request", lambda self, peer, st, blocks: len(blocks))
    _record(events, sync.BlockSync, "_on_block", "arrival")
    _record(events, sync, "process_blocks", "validate", lambda state, blocks: len(blocks))
    _record(events, ChainStore, "sync", "fsync")
    _record(events, ChainStore, "flush", "commit")
    _record(events, sync.BlockSync, "_on_getdata", "serve", lambda self, peer, m: len(m.items))
    _record(events, sync.BlockSync, "_stored_blocks", "read", len, of_result=True)


def batches(sink_events: List[list], source_events: List[list]) -> Dict[str, Any]:
    """Per validation batch of the syncing node: when it started (ms after the first
    request), how long it took, its blocks, and what happened meanwhile (blocks that
    arrived, were requested and were served; ms in fsync); plus the totals."""
    validations = [e for e in sink_events if e[0] == "validate"]
    requests = [e for e in sink_events if e[0] == "request"]
    if not validations or not requests:
        return {}
    origin = min(e[1] for e in requests)

    def during(events: List[list], step: str, start: float, end: float) -> List[list]:
        return [e for e in events if e[0] == step and start <= e[1] < end]

    rows = []
    for _, start, end, count in validations:
        rows.append({
            "start_ms": round((start - origin) * 1000, 1),
            "ms": round((end - start) * 1000, 1), "blocks": count,
            "arrived": len(during(sink_events, "arrival", start, end)),
            "requested": sum(e[3] for e in during(sink_events, "request", start, end)),
            "served": sum(e[3] for e in during(source_events, "read", start, end)),
            "fsync_ms": round(sum(e[2] - e[1] for e in during(sink_events, "fsync", start, end))
                              * 1000, 1)})
    busy = sum(e[2] - e[1] for e in validations)
    span = validations[-1][2] - origin
    return {"batches": rows, "first_request_to_last_batch_s": round(span, 3),
            "validating_share": round(busy / span, 3) if span > 0 else 0.0,
            "getdata_messages": len(requests),
            "source_reads": len([e for e in source_events if e[0] == "read"])}


def main() -> None:
    out, module = sys.argv[1], sys.argv[2]
    sys.argv = [module] + sys.argv[3:]
    events: List[list] = []
    instrument(events)

    def dump() -> None:
        with open(out, "w") as f:
            json.dump(events, f)

    atexit.register(dump)
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
