"""A list of 5,000 synthetic, signed masternodes: ``masternode list`` latency per mode,
memory per entry, ``mnb`` verification rate against the raw signature rate, and the payee
election per block.

Usage::

    python bench/masternode.py [--count N] [--runs R]

In-process (no coind): the broadcasts are really signed (collateral key and masternode
key, as ``masternode start-alias`` makes them) and go through the manager's checks; list
modes run the RPC handler itself.  Each figure is the median of ``--runs`` runs.  Prints
one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import tracemalloc
from types import SimpleNamespace
from typing import Any, List

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

import coincurve  # noqa: E402

from coin.chainparams import COIN, REGTEST  # noqa: E402
from coin.masternode import signing  # noqa: E402
from coin.masternode.manager import MasternodeManager  # noqa: E402
from coin.masternode.params import MIN_MNP_SECONDS, masternode_params  # noqa: E402
from coin.masternode.payments import PaymentVotes  # noqa: E402
from coin.p2p.messages import MasternodeBroadcastMessage  # noqa: E402
from coin.primitives.coin import Coin  # noqa: E402
from coin.primitives.hashes import hash160, sha256d  # noqa: E402
from coin.primitives.message import recover_message_pubkey  # noqa: E402
from coin.primitives.transaction import OutPoint  # noqa: E402
from coin.rpc.methods.masternode import _LIST_MODES, _masternode_list  # noqa: E402
from coin.script.standard import p2pkh_script  # noqa: E402
from bench.timing import median_seconds  # noqa: E402

T0 = 1_700_000_000
TIP = 10_000
PARAMS = masternode_params("regtest")


def block_hash_at(height: int) -> Any:
    return sha256d(height.to_bytes(8, "little")) if 0 <= height <= TIP else None


def signed_broadcasts(count: int) -> List[Any]:
    """``count`` broadcasts, each with its own collateral and masternode keys."""
    broadcasts = []
    for n in range(count):
        collateral = coincurve.PrivateKey(sha256d(b"c%d" % n))
        key = coincurve.PrivateKey(sha256d(b"m%d" % n))
        outpoint = OutPoint(sha256d(b"tx%d" % n), n % 4)
        ping = signing.make_ping(outpoint, block_hash_at(TIP - 1), T0 + MIN_MNP_SECONDS, key,
                                 False)
        broadcasts.append(signing.make_broadcast(
            outpoint, "10.%d.%d.%d" % (n >> 16 & 255, n >> 8 & 255, n & 255), 20000, (collateral, True),
            (key, False), T0, ping))
    return broadcasts


def coin_of(mnb: Any) -> Coin:
    return Coin(1000 * COIN, p2pkh_script(hash160(mnb.collateral_pubkey)), 10, False, 2)


def filled(broadcasts: List[Any]) -> MasternodeManager:
    manager = MasternodeManager(PARAMS, REGTEST.p2p_port)
    for mnb in broadcasts:
        manager.add_broadcast(mnb, coin_of(mnb), TIP, block_hash_at, T0 + MIN_MNP_SECONDS)
    return manager


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=3)
    options = parser.parse_args()
    count, runs = options.count, options.runs

    start = time.perf_counter()
    broadcasts = signed_broadcasts(count)
    signing_s = time.perf_counter() - start

    # mnb verification (both signatures and every check) vs one raw signature recovery.
    manager = MasternodeManager(PARAMS, REGTEST.p2p_port)
    check = median_seconds(lambda: [manager.check_broadcast(m, T0 + 60) for m in broadcasts], runs)
    texts = [signing.broadcast_string(m) for m in broadcasts]
    raw = median_seconds(lambda: [recover_message_pubkey(m.signature, t)
                               for m, t in zip(broadcasts, texts)], runs)

    # Memory a node holds per entry: its broadcast (fresh copies), ping, record and key.
    wire = [m.serialize() for m in broadcasts]
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    manager = filled([MasternodeBroadcastMessage.deserialize(raw) for raw in wire])
    memory = (tracemalloc.get_traced_memory()[0] - before) / count
    tracemalloc.stop()

    service = SimpleNamespace(manager=manager, tip_height=TIP, block_hash_at=block_hash_at)
    ctx = SimpleNamespace(node=SimpleNamespace(masternodes=service,
                                               chain=SimpleNamespace(params=REGTEST)))
    list_ms = {mode: round(median_seconds(lambda: _masternode_list(ctx, mode, ""), runs) * 1e3, 1)
               for mode in _LIST_MODES}

    payments = PaymentVotes(manager, PARAMS)
    now = T0 + MIN_MNP_SECONDS + 3600 + count * 156
    election = median_seconds(lambda: payments.next_in_queue(TIP + 10, TIP, now, block_hash_at),
                           runs)

    print(json.dumps({
        "masternodes": count, "runs": runs,
        "create_and_sign_per_mnb_us": round(signing_s / count * 1e6, 1),
        "list_latency_ms": list_ms,
        "memory_per_entry_bytes": round(memory),
        "mnb_verify_per_s": round(count / check),
        "raw_signature_recover_per_s": round(count / raw),
        "payee_election_per_block_ms": round(election * 1e3, 1),
    }, indent=1))


if __name__ == "__main__":
    main()
