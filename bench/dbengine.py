"""The writer's connect rate on each chain-storage engine; prints JSON.

    python bench/dbengine.py [--blocks 300] [--txs 10] [--rounds 3]

The same pre-built chain (101 blocks, then ``--blocks`` blocks of ``--txs`` chained
P2PKH spends) is connected by a fresh chain state on SQLite, on PostgreSQL with the
test server's settings (``fsync=off``) and on PostgreSQL with the server's durable
defaults (fsync, synchronous commit), one flush at the end; blocks/s, median of the
rounds.  Small blocks on purpose: the per-block storage cost (block and undo records,
index rows) is what differs between engines, not signature checks.  The PostgreSQL
servers are started by ``tests/pgserver.py`` (Debian's ``postgresql`` package).
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import statistics
import sys
import tempfile
import time
from typing import Dict, List

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from coin.primitives.block import Block  # noqa: E402
from coin.testing.chainbuilder import ChainBuilder, open_chain  # noqa: E402
from tests import pgserver  # noqa: E402


def build(blocks: int, txs: int) -> List[Block]:
    chain = open_chain(tempfile.mkdtemp(prefix="coin-bench-"))
    builder = ChainBuilder(chain, start_time=1_700_000_000)
    builder.mine(101)
    for i in range(blocks):
        spends = []
        if i < len(builder.coinbase_outputs) - 100:
            source = builder.coinbase_outputs[i]
            for _ in range(txs):
                tx = builder.spend(source)
                spends.append(tx)
                source = ChainBuilder.outputs_of(tx)[0]
        builder.mine(1, txs=spends)
    result = [chain.read_block(chain.at_height(h)) for h in range(1, chain.height + 1)]
    chain.close()
    return result


def connect(blocks: List[Block], dbengine: str) -> float:
    """Blocks/s connecting ``blocks`` on a fresh chain state, the final flush included."""
    chain = open_chain(tempfile.mkdtemp(prefix="coin-bench-"), dbengine=dbengine)
    start = time.perf_counter()
    for block in blocks:
        chain.process_block(block)
    chain.flush()
    elapsed = time.perf_counter() - start
    chain.close()
    return len(blocks) / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--blocks", type=int, default=300)
    parser.add_argument("--txs", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    reason = pgserver.skip_reason()
    if reason is not None:
        raise SystemExit(reason)
    servers = {}
    for name, durable in (("postgresql_fsync_off", False), ("postgresql_durable", True)):
        server = servers[name] = pgserver.PostgresServer(durable=durable)
        server.start()
        atexit.register(server.stop)
    blocks = build(options.blocks, options.txs)
    rates: Dict[str, List[float]] = {"sqlite": [], **{name: [] for name in servers}}
    for round_no in range(options.rounds):
        rates["sqlite"].append(connect(blocks, "sqlite"))
        for name, server in servers.items():
            database = "bench%d" % round_no
            server.execute("CREATE DATABASE %s" % database)
            rates[name].append(connect(blocks, server.url(database)))
    print(json.dumps({
        "benchmark": "dbengine",
        "blocks": len(blocks),
        "spends_per_block": options.txs,
        "blocks_per_s_median": {k: round(statistics.median(v), 1) for k, v in rates.items()},
        "blocks_per_s_rounds": {k: [round(x, 1) for x in v] for k, v in rates.items()},
        "load_average": os.getloadavg()[0],
    }, indent=2))


if __name__ == "__main__":
    main()
