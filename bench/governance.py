"""Governance at scale, in-process: proposals x masternodes' votes.

Usage::

    python bench/governance.py [--proposals 1000] [--masternodes 100] [--runs 5]

Builds ``--proposals`` proposals and one signed funding vote from each of ``--masternodes``
masternodes on each (a fake masternode list of generated keys), then measures:

- vote acceptance rate (``GovernanceStore.add_vote``: checks, signature recovery,
  bookkeeping; the objects added first) against the raw rate of signature recoveries alone;
- ``gobject list`` and ``gobject getcurrentvotes`` latency through the RPC handlers
  (median of ``--runs``);
- ``governance.dat`` size, save and load time (median of ``--runs``);
- memory: the peak traced while a second store is built (tracemalloc);
- the built-in sentinel's ranking of the proposals (``funded_proposals``, run every few
  seconds on a masternode) and the superblock trigger choice (``chosen_triggers``, run on
  every vote), median of ``--runs``.

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import sys
import tempfile
import time
import tracemalloc
from types import SimpleNamespace
from typing import Any, Dict, List

import coincurve

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from coin.chain.clock import NodeClock  # noqa: E402
from coin.chainparams import REGTEST  # noqa: E402
from coin.governance.object import NULL_HASH, GovernanceObject  # noqa: E402
from coin.governance.params import governance_params  # noqa: E402
from coin.governance.sentinel import funded_proposals  # noqa: E402
from coin.governance.superblock import chosen_triggers  # noqa: E402
from coin.governance.store import GovernanceStore  # noqa: E402
from coin.governance.vote import OUTCOME_YES, SIGNAL_FUNDING, Vote  # noqa: E402
from coin.primitives.hashes import hash160, hash_to_hex  # noqa: E402
from coin.primitives.message import recover_message_pubkey, sign_message  # noqa: E402
from coin.primitives.transaction import OutPoint  # noqa: E402
from coin.rpc.methods.governance import _gobject_getcurrentvotes, _gobject_list_all  # noqa: E402
from tests.govhelpers import proposal_hex  # noqa: E402
from bench.timing import median_seconds  # noqa: E402

ADDRESS = "mipcBbFg9gMiCh81Kj8tqqdgoZub1ZJRfn"
NOW = 1_800_000_000


class Masternodes:
    def __init__(self, count: int) -> None:
        self.keys = {OutPoint(n.to_bytes(32, "little"), 0): coincurve.PrivateKey() for n in range(count)}
        self.ids = {o: hash160(k.public_key.format()) for o, k in self.keys.items()}

    def key_id(self, outpoint: OutPoint) -> Any:
        return self.ids.get(outpoint)

    def enabled_count(self) -> int:
        return len(self.keys)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--proposals", type=int, default=1000)
    parser.add_argument("--masternodes", type=int, default=100)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    mns = Masternodes(args.masternodes)
    objects = [GovernanceObject(NULL_HASH, 1, NOW + i, NULL_HASH, proposal_hex(ADDRESS, name="p%d" % i))
               for i in range(args.proposals)]
    votes: List[Vote] = []
    for obj in objects:
        for outpoint, key in mns.keys.items():
            vote = Vote(outpoint, obj.hash, SIGNAL_FUNDING, OUTCOME_YES, NOW)
            vote.signature = base64.b64decode(sign_message(key, vote.signature_message()))
            votes.append(vote)

    start = time.perf_counter()
    for vote in votes:
        recover_message_pubkey(vote.signature, vote.signature_message())
    raw = time.perf_counter() - start

    def build() -> GovernanceStore:
        store = GovernanceStore()
        for obj in objects:
            store.add(obj, mns, NOW)
        for vote in votes:
            store.add_vote(vote, mns, NOW)
        for entry in store:
            entry.flags = entry.book.flags(1, mns.enabled_count(), entry.flags)
        return store

    start = time.perf_counter()
    store = build()
    accepted = time.perf_counter() - start
    tracemalloc.start()
    build()  # again, traced: tracing slows allocation, so it is not timed
    memory = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()

    node = SimpleNamespace(governance=SimpleNamespace(store=store, local_validity=lambda obj: ""),
                           chain=SimpleNamespace(clock=NodeClock()))
    ctx: Any = SimpleNamespace(node=node)
    listed = _gobject_list_all(ctx, "all")
    assert len(listed) == args.proposals
    one = hash_to_hex(objects[0].hash)
    assert len(_gobject_getcurrentvotes(ctx, one)) == args.masternodes

    governance: Any = SimpleNamespace(store=store, keys=mns, local_validity=lambda obj: "",
                                      params=governance_params(REGTEST),
                                      chain=SimpleNamespace(params=REGTEST))
    assert funded_proposals(governance, 170, NOW)  # 12.5-coin proposals within a 25-coin budget

    with tempfile.TemporaryDirectory() as datadir:
        save = median_seconds(lambda: store.save(datadir), args.runs)
        size = os.path.getsize(os.path.join(datadir, "governance.dat"))
        load = median_seconds(lambda: GovernanceStore.load(datadir), args.runs)
        assert len(GovernanceStore.load(datadir).entries) == args.proposals

    result: Dict[str, Any] = {
        "proposals": args.proposals, "masternodes": args.masternodes, "votes": len(votes),
        "raw_signature_recoveries_per_s": round(len(votes) / raw),
        "votes_accepted_per_s": round(len(votes) / accepted),
        "gobject_list_ms": round(median_seconds(lambda: _gobject_list_all(ctx, "all"), args.runs) * 1e3, 1),
        "gobject_getcurrentvotes_ms": round(
            median_seconds(lambda: _gobject_getcurrentvotes(ctx, one), args.runs) * 1e3, 3),
        "governance_dat_bytes": size,
        "governance_dat_save_s": round(save, 3),
        "governance_dat_load_s": round(load, 3),
        "store_memory_mb": round(memory / 2**20, 1),
        "sentinel_ranking_ms": round(
            median_seconds(lambda: funded_proposals(governance, 170, NOW), args.runs) * 1e3, 1),
        "superblock_choice_ms": round(median_seconds(
            lambda: chosen_triggers(store, 165, REGTEST, 1, args.masternodes), args.runs) * 1e3, 3),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
