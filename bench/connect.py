"""Block connect throughput with signature checks, against the raw coincurve ceiling.

Prints one JSON object: transactions/s and inputs/s connected (spend blocks
only), coincurve verifications/s measured in the same run on the same
signatures, their ratio, peak RSS of the connecting process, and where the
time goes (cProfile, top functions by own time).
"""

from __future__ import annotations

import cProfile
import json
import os
import pstats
import resource
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import coincurve  # noqa: E402

from bench import chaindata  # noqa: E402
from coin.script.sighash import SIGHASH_ALL, signature_hash  # noqa: E402
from coin.testing.chainbuilder import open_chain  # noqa: E402


def coincurve_ceiling(blocks, spent_scripts) -> float:
    """Raw verifications/s of the spend signatures (sighash precomputed), median of 3."""
    jobs = []
    for block in blocks:
        for tx in block.txs[1:]:
            sig_push = tx.vin[0].script_sig
            sig = sig_push[1:1 + sig_push[0]][:-1]
            pub = sig_push[2 + sig_push[0]:]
            digest = signature_hash(spent_scripts, tx, 0, SIGHASH_ALL)
            jobs.append((coincurve.PublicKey(pub), sig, digest))
    rates = []
    for _ in range(3):
        start = time.perf_counter()
        for key, sig, digest in jobs:
            key.verify(sig, digest, hasher=None)
        rates.append(len(jobs) / (time.perf_counter() - start))
    return statistics.median(rates)


def main() -> None:
    workdir = os.environ.get("COIN_BENCH_DIR") or tempfile.mkdtemp(prefix="coin-bench-")
    path = chaindata.build(workdir)
    blocks = chaindata.load(path)
    spend_blocks = [b for b in blocks if len(b.txs) > chaindata.FANOUT_TXS + 1]
    setup_blocks = blocks[:len(blocks) - len(spend_blocks)]

    elapsed = connect(workdir, setup_blocks, spend_blocks)
    profiler = cProfile.Profile() if "--profile" in sys.argv else None
    if profiler is not None:
        connect(workdir, setup_blocks, spend_blocks, profiler)

    txs = sum(len(b.txs) - 1 for b in spend_blocks)
    inputs = sum(len(tx.vin) for b in spend_blocks for tx in b.txs[1:])
    script = blocks[0].txs[0].vout[0].script_pubkey
    ceiling = coincurve_ceiling(spend_blocks, script)
    result = {
        "benchmark": "connect",
        "blocks": len(spend_blocks),
        "transactions": txs,
        "inputs": inputs,
        "seconds": round(elapsed, 3),
        "tx_per_s": round(txs / elapsed, 1),
        "inputs_per_s": round(inputs / elapsed, 1),
        "coincurve_verify_per_s": round(ceiling, 1),
        "ratio_to_ceiling": round(inputs / elapsed / ceiling, 3),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
    if profiler is not None:
        result["profile_top_own_time"] = top_functions(profiler)
    print(json.dumps(result, indent=2))


def connect(workdir, setup_blocks, spend_blocks, profiler=None) -> float:
    """Feed the chain to a fresh node; seconds spent on the spend blocks."""
    chain = open_chain(tempfile.mkdtemp(dir=workdir))
    for block in setup_blocks:
        chain.process_block(block)
    if profiler is not None:
        profiler.enable()
    start = time.perf_counter()
    for block in spend_blocks:
        chain.process_block(block)
    elapsed = time.perf_counter() - start
    if profiler is not None:
        profiler.disable()
    chain.close()
    return elapsed


def top_functions(profiler, count: int = 15) -> list:
    """Functions by own time (cProfile inflates Python code; read as shares)."""
    stats = pstats.Stats(profiler).stats
    total = sum(v[2] for v in stats.values()) or 1.0
    top = sorted(stats.items(), key=lambda kv: kv[1][2], reverse=True)[:count]
    return [{"function": "%s:%d:%s" % (os.path.basename(f), line, name),
             "own_share": round(tt / total, 3), "calls": nc}
            for (f, line, name), (_, nc, tt, _, _) in top]


if __name__ == "__main__":
    main()
