"""-reindex throughput: blocks/s and transactions/s rebuilding index and chain state.

Builds the benchmark chain of bench/connect.py into a node, closes it, then
times ``-reindex`` (and ``-reindex-chainstate``) of that node's block files.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import chaindata  # noqa: E402
from coin.testing.chainbuilder import open_chain  # noqa: E402


def main() -> None:
    workdir = os.environ.get("COIN_BENCH_DIR") or tempfile.mkdtemp(prefix="coin-bench-")
    blocks = chaindata.load(chaindata.build(workdir))
    datadir = tempfile.mkdtemp(dir=workdir)
    chain = open_chain(datadir)
    for block in blocks:
        chain.process_block(block)
    height, tip = chain.height, chain.tip.hash
    chain.close()
    del blocks
    txs = None
    result = {"benchmark": "reindex"}
    for mode in ("reindex", "reindex_chainstate"):
        start = time.perf_counter()
        chain = open_chain(datadir, **{mode: True})
        elapsed = time.perf_counter() - start
        assert chain.tip.hash == tip, "reindex ended on another tip"
        txs = chain.tip.chain_tx
        chain.close()
        result[mode] = {
            "blocks": height + 1,
            "transactions": txs,
            "seconds": round(elapsed, 3),
            "blocks_per_s": round((height + 1) / elapsed, 1),
            "tx_per_s": round(txs / elapsed, 1),
        }
    result["peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
