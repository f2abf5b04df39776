"""-reindex throughput: blocks/s and transactions/s rebuilding index and chain state.

    python3 bench/reindex.py [--par 1 --par 2]

Builds the benchmark chain of bench/connect.py into a node, closes it, then
times ``-reindex`` (and ``-reindex-chainstate``) of that node's block files, checking
scripts as ``-par`` does for each ``--par`` (default: 1 and the node's default, 0).
"""

from __future__ import annotations

import json
import os
import resource
import sys
import tempfile
import time
from typing import Any, Dict

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import chaindata  # noqa: E402
from bench.connect import option_values  # noqa: E402
from coin.chain.chainstate import ChainState  # noqa: E402
from coin.chain.workers import ScriptCheckPool, script_check_threads  # noqa: E402
from coin.chainparams import REGTEST  # noqa: E402
from coin.storage.chainstore import ChainStore  # noqa: E402
from coin.testing.chainbuilder import open_chain  # noqa: E402


def timed_reindex(datadir: str, par: int, mode: str = "reindex") -> Dict[str, Any]:
    """Rebuild ``datadir``'s regtest chain state in-process (``mode``: "reindex" or
    "reindex_chainstate") with ``-par=par``'s script-check workers; wall and CPU seconds
    of the node process (workers excluded), blocks, transactions and the tip's hash."""
    pool = ScriptCheckPool(script_check_threads(par) - 1)
    pool.start()
    try:
        start, cpu = time.perf_counter(), time.process_time()
        store = ChainStore(datadir, REGTEST)
        store.open()
        chain = ChainState(REGTEST, store)
        chain.script_workers = pool
        chain.load(**{mode: True})
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
        tip = chain.tip
        chain.close()
    finally:
        pool.stop()
    return {"par": par, "blocks": tip.height + 1, "transactions": tip.chain_tx,
            "seconds": round(elapsed, 3), "node_cpu_seconds": round(cpu, 3),
            "blocks_per_s": round((tip.height + 1) / elapsed, 1),
            "tx_per_s": round(tip.chain_tx / elapsed, 1), "tip": tip.hash[::-1].hex()}


def main() -> None:
    workdir = os.environ.get("COIN_BENCH_DIR") or tempfile.mkdtemp(prefix="coin-bench-")
    blocks = chaindata.load(chaindata.build(workdir))
    datadir = tempfile.mkdtemp(dir=workdir)
    chain = open_chain(datadir)
    for block in blocks:
        chain.process_block(block)
    tip = chain.tip.hash[::-1].hex()
    chain.close()
    del blocks
    result: Dict[str, Any] = {"benchmark": "reindex"}
    for par in option_values("--par", [1, 0]):
        for mode in ("reindex", "reindex_chainstate"):
            run = timed_reindex(datadir, par, mode)
            assert run.pop("tip") == tip, "reindex ended on another tip"
            result["%s_par%d" % (mode, par)] = run
    result["peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
