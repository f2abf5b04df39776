"""Wallet load and first-unlock time for a wallet with many keys (in process, no RPC).

    python bench/wallet_load.py [--keypool 2500] [--runs 7]

Creates a wallet whose key pool holds ``--keypool`` keys per chain (2 x keypool keys),
then times opening it (read every row, check every private key against its public key)
``--runs`` times; then the same for a wallet encrypted after creation (twice the keys:
encryption draws a new seed and pool), plus its first unlock (which decrypts and checks
every key). Prints one JSON object with the key counts and the medians in ms.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from twisted.internet import reactor  # noqa: E402

from coin.chain.service import ValidationService  # noqa: E402
from coin.chainparams import REGTEST  # noqa: E402
from coin.mempool.accept import PoolPolicy  # noqa: E402
from coin.mempool.pool import Mempool  # noqa: E402
from coin.mempool.service import MempoolService  # noqa: E402
from coin.testing.chainbuilder import open_chain  # noqa: E402
from coin.wallet.service import WalletService  # noqa: E402

PASSPHRASE = b"bench"


def _median_ms(runs: int, fn: Callable[[], Any]) -> float:
    times: List[float] = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return round(statistics.median(times), 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--keypool", type=int, default=2500)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    datadir = tempfile.mkdtemp(prefix="coin-bench-wallet-load-")
    chainstate = open_chain(os.path.join(datadir, "chain"))
    try:
        validation = ValidationService(chainstate, reactor)
        mempool = MempoolService(validation, Mempool(now=time.time), PoolPolicy(), now=time.time)
        service = WalletService(validation, mempool, REGTEST, os.path.join(datadir, "wallets"),
                                now=time.time, keypool_size=args.keypool)
        result: Dict[str, Any] = {}

        def load(name: str) -> None:
            service.open_wallet(chainstate, name, create=False)
            service.unload(name)

        for name in ("plain", "encrypted"):
            wallet = service.open_wallet(chainstate, name, create=True)
            if name == "encrypted":
                wallet.keys.encrypt(PASSPHRASE)
            result["%s_keys" % name] = len(wallet.keys.keys)
            service.unload(name)
            result["load_%s_ms" % name] = _median_ms(args.runs, lambda: load(name))

        def first_unlock() -> None:
            wallet = service.open_wallet(chainstate, "encrypted", create=False)
            start = time.perf_counter()
            wallet.keys.unlock(PASSPHRASE)
            unlock_times.append((time.perf_counter() - start) * 1000)
            service.unload("encrypted")

        unlock_times: List[float] = []
        for _ in range(args.runs):
            first_unlock()
        result["first_unlock_ms"] = round(statistics.median(unlock_times), 1)
        print(json.dumps(result))
    finally:
        chainstate.close()
        shutil.rmtree(datadir, ignore_errors=True)


if __name__ == "__main__":
    main()
