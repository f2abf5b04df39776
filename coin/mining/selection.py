"""Choose pool transactions for a block by ancestor fee rate (Core's addPackageTxs).

A transaction is only worth as much as the package it needs: itself plus its
not-yet-included ancestors.  Packages go in best modified fee rate first;
once a package is in the block its descendants are re-scored without it.  A
heap with lazy invalidation keeps this at O(n log n) for a full pool.
"""

from __future__ import annotations

import heapq
from typing import Dict, List, NamedTuple, Set, Tuple

from twisted.logger import Logger

from coin.mempool.policy import FeeRate
from coin.mempool.pool import Mempool, MempoolEntry
from coin.primitives.transaction import Transaction

log = Logger()

#: Bytes and sigops kept for the coinbase (Core reserves the same).
COINBASE_RESERVED_SIZE = 1000
COINBASE_RESERVED_SIGOPS = 100
#: Core's DEFAULT_BLOCK_MIN_TX_FEE: packages paying less per kB are left out.
DEFAULT_BLOCK_MIN_TX_FEE = 1000


class Selection(NamedTuple):
    txs: List[Transaction]
    #: Base fees of ``txs`` (what the coinbase may claim), aligned with ``txs``.
    fees: List[int]
    sigops: List[int]
    #: In-block indexes (1-based, after the coinbase) of each transaction's pool parents.
    depends: List[List[int]]


def select_transactions(pool: Mempool, max_size: int, max_sigops: int,
                        min_fee_rate: FeeRate = FeeRate(DEFAULT_BLOCK_MIN_TX_FEE),
                        print_priority: bool = False) -> Selection:
    """Transactions for a block of at most ``max_size`` bytes, parents before children.

    ``print_priority`` (-printpriority) logs each chosen transaction's modified fee rate,
    as Core's BlockAssembler does, to see why a transaction was (not) mined.
    """
    with pool.lock:
        chosen = _select(pool, max_size - COINBASE_RESERVED_SIZE,
                         max_sigops - COINBASE_RESERVED_SIGOPS, min_fee_rate)
        if print_priority:
            for entry in chosen:
                log.info("fee {rate} txid {txid}",
                         rate=FeeRate.from_fee(entry.modified_fee, entry.size).to_string(),
                         txid=entry.tx.txid[::-1].hex())
    position = {e: i + 1 for i, e in enumerate(chosen)}
    return Selection([e.tx for e in chosen], [e.fee for e in chosen], [e.sigops for e in chosen],
                     [sorted(position[p] for p in e.parents) for e in chosen])


def _select(pool: Mempool, size_left: int, sigops_left: int,
            min_fee_rate: FeeRate) -> List[MempoolEntry]:
    # Ancestor totals of each entry not counting ancestors already in the block.
    package: Dict[MempoolEntry, Tuple[int, int, int]] = {
        e: (e.fees_with_ancestors, e.size_with_ancestors, e.sigops_with_ancestors)
        for e in pool.entries.values()}
    heap: List[Tuple[float, int, int, MempoolEntry]] = []
    version: Dict[MempoolEntry, int] = {}

    def push(entry: MempoolEntry) -> None:
        fee, size, _ = package[entry]
        version[entry] = version.get(entry, 0) + 1
        heapq.heappush(heap, (-fee / size, entry.sequence, version[entry], entry))

    for entry in package:
        push(entry)
    chosen: List[MempoolEntry] = []
    in_block: Set[MempoolEntry] = set()
    failed: Set[MempoolEntry] = set()
    while heap:
        _, _, ver, entry = heapq.heappop(heap)
        if entry in in_block or entry in failed or version[entry] != ver:
            continue
        fee, size, sigops = package[entry]
        if fee < min_fee_rate.get_fee(size):
            break  # every remaining package pays less
        if size > size_left or sigops > sigops_left:
            failed.add(entry)
            continue
        members = [a for a in pool.ancestors_of(entry) if a not in in_block] + [entry]
        members.sort(key=lambda e: (e.count_with_ancestors, e.sequence))
        for member in members:
            in_block.add(member)
            chosen.append(member)
        size_left -= size
        sigops_left -= sigops
        for member in members:
            for descendant in pool.calculate_descendants(member):
                if descendant in in_block:
                    continue
                d_fee, d_size, d_sigops = package[descendant]
                package[descendant] = (d_fee - member.modified_fee, d_size - member.size,
                                       d_sigops - member.sigops)
                push(descendant)
    return chosen
