"""Headers-first sync throughput over loopback, against the same node's -reindex.

    python bench/sync.py [--blocks 2000] [--txs-per-block 10] [--quick] [--keep]

1. Builds a regtest chain in-process with ChainBuilder straight into a data directory
   (block times end shortly before now, so the node serving it is out of initial block
   download and answers getheaders): after 100 blocks for coinbase maturity, every block
   carries a fan-out of one matured coinbase into ``txs-per-block`` outputs plus
   ``txs-per-block`` one-input one-output P2PKH spends of earlier fan-out outputs.
2. Starts a ``coind`` on that directory as the source, and a fresh ``coind`` connected
   to it with ``-connect`` (both ``-disablewallet``, so only the node's own work is
   measured).  From the moment the fresh node's RPC is up, polls
   ``getblockchaininfo`` until its headers and then its blocks reach the source's tip;
   the polls' round trips (median, p90, max) show how long its reactor stalls.
3. Stops the fresh node and rebuilds its chain state in-process with ``-reindex``
   (``open_chain(..., reindex=True)``, as bench/reindex.py does) from the block files
   the sync wrote.

Prints one JSON object: chain shape, build time, sync (headers time, blocks/s and
tx/s), reindex (blocks/s and tx/s), and sync/reindex ratios.  ``--quick`` builds 600
blocks with 4 spends each and finishes in well under a minute.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from typing import Any, Dict, List

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from coin.chainparams import COINBASE_MATURITY  # noqa: E402
from coin.testing.chainbuilder import ChainBuilder, Spendable, open_chain  # noqa: E402
from tests.nodeharness import NodeProcess, free_port  # noqa: E402

#: Seconds between polls of the syncing node (the timing resolution).
POLL = 0.02


def build_chain(datadir: str, blocks: int, per_block: int) -> Dict[str, Any]:
    """The benchmark chain, written into ``<datadir>/regtest``."""
    started = time.perf_counter()
    chain = open_chain(os.path.join(datadir, "regtest"))
    builder = ChainBuilder(chain, start_time=int(time.time()) - 2 * blocks - 600)
    builder.mine(COINBASE_MATURITY)
    unspent: List[Spendable] = []
    next_coinbase = 0
    while chain.height < blocks:
        txs = []
        source = builder.coinbase_outputs[next_coinbase]
        next_coinbase += 1
        each = (source.value - 100_000) // per_block
        fanout = builder.spend(source, outputs=[(builder.script_pubkey, each)] * per_block,
                               fee=source.value - each * per_block)
        txs.append(fanout)
        spendable, unspent = unspent[:per_block], unspent[per_block:]
        txs.extend(builder.spend(coin, fee=1_000) for coin in spendable)
        builder.mine(1, txs=txs)
        unspent.extend(ChainBuilder.outputs_of(fanout))
    tip = chain.tip
    shape = {"blocks": tip.height, "transactions": tip.chain_tx,
             "build_seconds": round(time.perf_counter() - started, 2),
             "tip": tip.hash[::-1].hex()}
    chain.close()
    return shape


def rate(count: int, seconds: float) -> float:
    return round(count / seconds, 1) if seconds > 0 else 0.0


def latency_summary(seconds: List[float]) -> Dict[str, float]:
    """Median, 90th percentile and maximum of round trips, in milliseconds."""
    ordered = sorted(seconds)
    return {"median": round(statistics.median(ordered) * 1000, 1),
            "p90": round(ordered[int(len(ordered) * 0.9)] * 1000, 1),
            "max": round(ordered[-1] * 1000, 1)}


def measure_sync(source_dir: str, sink_dir: str, shape: Dict[str, Any]) -> Dict[str, Any]:
    port = free_port()
    source = NodeProcess.start(source_dir, ["-port=%d" % port, "-listen=1", "-connect=0",
                                            "-disablewallet"])
    sink = None
    try:
        if source.rpc("getblockcount") != shape["blocks"]:
            raise RuntimeError("the source node did not load the benchmark chain")
        sink = NodeProcess.start(sink_dir, ["-connect=127.0.0.1:%d" % port, "-disablewallet"])
        started = time.perf_counter()
        headers_at = None
        deadline = started + 3600
        latencies: List[float] = []
        while time.perf_counter() < deadline:
            asked = time.perf_counter()
            info = sink.rpc("getblockchaininfo")
            now = time.perf_counter()
            latencies.append(now - asked)
            if headers_at is None and info["headers"] >= shape["blocks"]:
                headers_at = now - started
            if info["blocks"] >= shape["blocks"]:
                break
            time.sleep(POLL)
        else:
            raise RuntimeError("sync did not finish within an hour")
        elapsed = time.perf_counter() - started
        if sink.rpc("getbestblockhash") != shape["tip"]:
            raise RuntimeError("the synced node ended on another tip")
        peer = sink.rpc("getpeerinfo")[0]
        result = {
            "seconds": round(elapsed, 3),
            "headers_seconds": round(headers_at or elapsed, 3),
            "blocks_per_s": rate(shape["blocks"], elapsed),
            "tx_per_s": rate(shape["transactions"], elapsed),
            "bytes_received": peer["bytesrecv"],
            # The syncing node's reactor answers these: its stalls show here.
            "rpc_latency_ms": latency_summary(latencies),
            "banscore": peer["banscore"],
        }
        if sink.stop() != 0:
            raise RuntimeError("the synced node did not stop cleanly")
        return result
    finally:
        if sink is not None:
            sink.kill()
        source.stop()
        source.kill()


def measure_reindex(sink_dir: str, shape: Dict[str, Any]) -> Dict[str, Any]:
    started = time.perf_counter()
    chain = open_chain(os.path.join(sink_dir, "regtest"), reindex=True)
    elapsed = time.perf_counter() - started
    tip = chain.tip
    chain.close()
    if tip.hash[::-1].hex() != shape["tip"]:
        raise RuntimeError("reindex ended on another tip")
    return {"seconds": round(elapsed, 3), "blocks_per_s": rate(shape["blocks"], elapsed),
            "tx_per_s": rate(shape["transactions"], elapsed)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--blocks", type=int, default=2000)
    parser.add_argument("--txs-per-block", type=int, default=10)
    parser.add_argument("--quick", action="store_true",
                        help="600 blocks with 4 spends each (under a minute)")
    parser.add_argument("--keep", action="store_true", help="keep the data directories")
    args = parser.parse_args()
    if args.quick:
        args.blocks, args.txs_per_block = 600, 4
    if args.blocks <= COINBASE_MATURITY:
        parser.error("--blocks must exceed %d" % COINBASE_MATURITY)
    workdir = os.environ.get("COIN_BENCH_DIR") or tempfile.mkdtemp(prefix="coin-bench-sync-")
    source_dir = tempfile.mkdtemp(prefix="source-", dir=workdir)
    sink_dir = tempfile.mkdtemp(prefix="sink-", dir=workdir)
    try:
        shape = build_chain(source_dir, args.blocks, args.txs_per_block)
        sync = measure_sync(source_dir, sink_dir, shape)
        reindex = measure_reindex(sink_dir, shape)
    finally:
        if not args.keep:
            shutil.rmtree(source_dir, ignore_errors=True)
            shutil.rmtree(sink_dir, ignore_errors=True)
    result = {
        "benchmark": "sync",
        "chain": {k: v for k, v in shape.items() if k != "tip"}
        | {"txs_per_block": args.txs_per_block},
        "sync": sync,
        "reindex": reindex,
        "sync_vs_reindex": round(reindex["seconds"] / sync["seconds"], 3),
        "peak_rss_mib_bench_process": round(
            resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
