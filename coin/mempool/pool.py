"""The transaction memory pool: entries, their in-pool family, limits and eviction.

The pool is a graph: an entry's parents are the pool transactions it spends,
its children the pool transactions spending it.  Every entry carries running
totals over its ancestors and its descendants (count, size, modified fees),
as Core's CTxMemPoolEntry does, so limit checks, ``getrawmempool`` and block
assembly never walk the whole pool.

Only the validation worker thread changes the pool (acceptance, block
connection, reorgs, trimming); RPC and REST read it from the reactor thread.
Every public method takes :attr:`Mempool.lock`, so a reader sees either the
state before or after a change, never half of one.
"""

from __future__ import annotations

import heapq
import threading
import time as _time
from typing import Callable, Dict, Iterable, List, Optional, Set, Tuple

from coin.mempool.policy import FeeRate
from coin.primitives.transaction import Transaction, TxOut

Outpoint = Tuple[bytes, int]

#: Core's ROLLING_FEE_HALFLIFE: the evicted-package fee floor halves every 12 hours.
ROLLING_FEE_HALFLIFE = 60 * 60 * 12
#: Core's DEFAULT_INCREMENTAL_RELAY_FEE (satoshis per kB).
DEFAULT_INCREMENTAL_RELAY_FEE = 1000

# Reasons an entry leaves the pool (Core's MemPoolRemovalReason), for the estimator and logs.
REMOVED_EXPIRY = "expiry"
REMOVED_SIZELIMIT = "sizelimit"
REMOVED_REORG = "reorg"
REMOVED_BLOCK = "block"
REMOVED_CONFLICT = "conflict"
REMOVED_REPLACED = "replaced"

# Estimated bytes of Python heap per entry beyond the transaction's own bytes: the
# entry object, its sets, the index dicts and the parsed Transaction objects.
# Calibrated with tracemalloc (tests/unit/mempool/test_mempool.py checks it stays within 25%).
_ENTRY_OVERHEAD = 1240
_PER_INPUT_OVERHEAD = 420
_PER_OUTPUT_OVERHEAD = 200


def entry_usage(tx: Transaction, size: int) -> int:
    """Estimated memory an entry holds (the pool's ``usage``; Core's DynamicMemoryUsage)."""
    return (_ENTRY_OVERHEAD + size + _PER_INPUT_OVERHEAD * len(tx.vin)
            + _PER_OUTPUT_OVERHEAD * len(tx.vout))


class LimitError(Exception):
    """An ancestor or descendant limit would be broken (Core's too-long-mempool-chain)."""


class AncestorLimits:
    """``-limitancestorcount/size`` and ``-limitdescendantcount/size`` (sizes in bytes)."""

    __slots__ = ("ancestor_count", "ancestor_size", "descendant_count", "descendant_size")

    def __init__(self, ancestor_count: int = 25, ancestor_size: int = 101_000,
                 descendant_count: int = 25, descendant_size: int = 101_000) -> None:
        self.ancestor_count = ancestor_count
        self.ancestor_size = ancestor_size
        self.descendant_count = descendant_count
        self.descendant_size = descendant_size


#: No limits: transactions coming back from disconnected blocks (Core's bypass).
UNLIMITED = AncestorLimits(1 << 62, 1 << 62, 1 << 62, 1 << 62)


class MempoolEntry:
    """One pool transaction and its family totals (all fees in satoshis)."""

    __slots__ = (
        "tx", "txid", "fee", "fee_delta", "size", "time", "height", "starting_priority",
        "in_chain_value", "mod_size", "sigops", "spends_coinbase", "usage",
        "parents", "children",
        "count_with_descendants", "size_with_descendants", "fees_with_descendants",
        "count_with_ancestors", "size_with_ancestors", "fees_with_ancestors",
        "sigops_with_ancestors", "sequence",
    )

    def __init__(self, tx: Transaction, fee: int, time: int, height: int, *,
                 starting_priority: float = 0.0, in_chain_value: int = 0, mod_size: int = 0,
                 sigops: int = 0, spends_coinbase: bool = False, fee_delta: int = 0) -> None:
        self.tx = tx
        self.txid = tx.txid
        self.fee = fee
        self.fee_delta = fee_delta
        self.size = tx.size
        self.time = time
        self.height = height
        self.starting_priority = starting_priority
        self.in_chain_value = in_chain_value
        self.mod_size = mod_size
        self.sigops = sigops
        self.spends_coinbase = spends_coinbase
        self.usage = entry_usage(tx, self.size)
        self.parents: Set[MempoolEntry] = set()
        self.children: Set[MempoolEntry] = set()
        self.count_with_descendants = 1
        self.size_with_descendants = self.size
        self.fees_with_descendants = self.modified_fee
        self.count_with_ancestors = 1
        self.size_with_ancestors = self.size
        self.fees_with_ancestors = self.modified_fee
        self.sigops_with_ancestors = sigops
        #: Order of entry into the pool (ties in eviction and mining go to the older).
        self.sequence = 0

    @property
    def modified_fee(self) -> int:
        """The fee plus prioritisetransaction's delta: what mining and eviction rank by."""
        return self.fee + self.fee_delta

    def current_priority(self, height: int) -> float:
        """Core 0.12's GetPriority: starting priority plus input age gained since entry."""
        if not self.mod_size:
            return self.starting_priority
        result = self.starting_priority + (height - self.height) * self.in_chain_value \
            / self.mod_size
        return max(result, 0.0)

    def descendant_score(self) -> Tuple[int, int]:
        """Core's descendant score as a fraction ``(fee, size)``: the better of the
        transaction alone and with its descendants (eviction removes the lowest)."""
        own = (self.modified_fee, self.size)
        package = (self.fees_with_descendants, self.size_with_descendants)
        return own if own[0] * package[1] > package[0] * own[1] else package

    def __repr__(self) -> str:
        return "MempoolEntry(%s)" % self.txid[::-1].hex()

    def __lt__(self, other: "MempoolEntry") -> bool:
        return self.sequence < other.sequence


class Mempool:
    """The pool itself; see the module docstring for threading."""

    def __init__(self, max_usage: int = 300_000_000,
                 min_relay_fee: FeeRate = FeeRate(1000),
                 incremental_relay_fee: FeeRate = FeeRate(DEFAULT_INCREMENTAL_RELAY_FEE),
                 now: Callable[[], float] = _time.time) -> None:
        self.lock = threading.RLock()
        self.max_usage = max_usage
        self.min_relay_fee = min_relay_fee
        self.incremental_relay_fee = incremental_relay_fee
        self._now = now
        self.entries: Dict[bytes, MempoolEntry] = {}
        #: Outpoint -> the pool entry spending it (Core's mapNextTx).
        self.spenders: Dict[Outpoint, MempoolEntry] = {}
        #: prioritisetransaction deltas, kept for transactions not (yet) in the pool too.
        self.deltas: Dict[bytes, int] = {}
        self.total_size = 0
        self.total_usage = 0
        self._rolling_min_fee = 0.0
        self._last_rolling_update = 0
        self._block_since_bump = False
        self._sequence = 0
        #: ``(time, sequence, entry)`` min-heap for expiry; removed entries are skipped lazily.
        self._by_time: List[Tuple[int, int, MempoolEntry]] = []
        #: Bumped on every change: block templates and long polls compare it.
        self.transactions_updated = 0
        #: Called as ``f(entry, reason)`` for every entry that leaves other than by a block.
        self.on_removed: Optional[Callable[[MempoolEntry, str], None]] = None

    # ------------------------------------------------------------------ reads

    def __len__(self) -> int:
        return len(self.entries)

    def __contains__(self, txid: bytes) -> bool:
        return txid in self.entries

    def get(self, txid: bytes) -> Optional[MempoolEntry]:
        return self.entries.get(txid)

    def get_output(self, txid: bytes, n: int) -> Optional[Tuple[TxOut, int]]:
        """``(output, tx version)`` of a pool transaction's output ``n``, if it exists."""
        with self.lock:
            entry = self.entries.get(txid)
            if entry is None or n >= len(entry.tx.vout):
                return None
            return entry.tx.vout[n], entry.tx.version

    def spender_of(self, outpoint: Outpoint) -> Optional[bytes]:
        """The txid of the pool transaction spending ``outpoint``, if any."""
        with self.lock:
            entry = self.spenders.get(outpoint)
            return entry.txid if entry is not None else None

    def txids(self) -> List[bytes]:
        """Pool txids, parents first (Core leaves getrawmempool's order undefined)."""
        with self.lock:
            return [e.txid for e in self.sorted_entries()]

    def sorted_entries(self) -> List[MempoolEntry]:
        """Entries with parents before children (fewer ancestors first), then by arrival.

        Arrival alone is not enough: a transaction returning from a disconnected
        block arrives after its pool children.  mempool.dat is written in this order.
        """
        with self.lock:
            return sorted(self.entries.values(), key=lambda e: (e.count_with_ancestors, e.sequence))

    def calculate_descendants(self, entry: MempoolEntry) -> Set[MempoolEntry]:
        """``entry`` and everything below it in the pool."""
        found = {entry}
        stack = [entry]
        while stack:
            for child in stack.pop().children:
                if child not in found:
                    found.add(child)
                    stack.append(child)
        return found

    def ancestors_of(self, entry: MempoolEntry) -> Set[MempoolEntry]:
        """Every in-pool ancestor of ``entry`` (not ``entry`` itself)."""
        found: Set[MempoolEntry] = set()
        stack = list(entry.parents)
        while stack:
            parent = stack.pop()
            if parent not in found:
                found.add(parent)
                stack.extend(parent.parents)
        return found

    def calculate_ancestors(self, tx: Transaction, size: int,
                            limits: AncestorLimits) -> Set[MempoolEntry]:
        """In-pool ancestors a new ``tx`` would have; :class:`LimitError` past a limit.

        Messages are Core's CalculateMemPoolAncestors texts, checked in its order.
        """
        with self.lock:
            parents = {self.entries[i.prevout.txid] for i in tx.vin
                       if i.prevout.txid in self.entries}
            if len(parents) + 1 > limits.ancestor_count:
                raise LimitError("too many unconfirmed parents [limit: %d]" % limits.ancestor_count)
            ancestors: Set[MempoolEntry] = set()
            total_size = size
            staged = set(parents)
            while staged:
                entry = staged.pop()
                ancestors.add(entry)
                total_size += entry.size
                if entry.size_with_descendants + size > limits.descendant_size:
                    raise LimitError("exceeds descendant size limit for tx %s [limit: %d]"
                                     % (entry.txid[::-1].hex(), limits.descendant_size))
                if entry.count_with_descendants + 1 > limits.descendant_count:
                    raise LimitError("too many descendants for tx %s [limit: %d]"
                                     % (entry.txid[::-1].hex(), limits.descendant_count))
                if total_size > limits.ancestor_size:
                    raise LimitError("exceeds ancestor size limit [limit: %d]"
                                     % limits.ancestor_size)
                for parent in entry.parents:
                    if parent not in ancestors:
                        staged.add(parent)
                    if len(staged) + len(ancestors) + 1 > limits.ancestor_count:
                        raise LimitError("too many unconfirmed ancestors [limit: %d]"
                                         % limits.ancestor_count)
            return ancestors

    # ------------------------------------------------------------------ changes

    def add(self, entry: MempoolEntry, ancestors: Optional[Set[MempoolEntry]] = None) -> None:
        """Insert ``entry`` (checks done by the caller) and update its family's totals.

        Pool transactions already spending ``entry``'s outputs (possible only when
        ``entry`` returns from a disconnected block) become its children.
        """
        with self.lock:
            if ancestors is None:
                ancestors = self.calculate_ancestors(entry.tx, entry.size, UNLIMITED)
            txid = entry.txid
            self._sequence += 1
            entry.sequence = self._sequence
            entry.fee_delta = self.deltas.get(txid, 0)
            self.entries[txid] = entry
            heapq.heappush(self._by_time, (entry.time, entry.sequence, entry))
            for txin in entry.tx.vin:
                key = (txin.prevout.txid, txin.prevout.n)
                self.spenders[key] = entry
                parent = self.entries.get(key[0])
                if parent is not None:
                    entry.parents.add(parent)
                    parent.children.add(entry)
            for n in range(len(entry.tx.vout)):
                child = self.spenders.get((txid, n))
                if child is not None:
                    entry.children.add(child)
                    child.parents.add(entry)
            self.total_size += entry.size
            self.total_usage += entry.usage
            self.transactions_updated += 1
            if entry.children:
                self._recompute_family(self.calculate_descendants(entry) | ancestors)
                return
            fee = entry.modified_fee
            for ancestor in ancestors:
                ancestor.count_with_descendants += 1
                ancestor.size_with_descendants += entry.size
                ancestor.fees_with_descendants += fee
            entry.count_with_ancestors = 1 + len(ancestors)
            entry.size_with_ancestors = entry.size + sum(a.size for a in ancestors)
            entry.fees_with_ancestors = fee + sum(a.modified_fee for a in ancestors)
            entry.sigops_with_ancestors = entry.sigops + sum(a.sigops for a in ancestors)
            entry.count_with_descendants = 1
            entry.size_with_descendants = entry.size
            entry.fees_with_descendants = fee

    def _recompute_family(self, entries: Iterable[MempoolEntry]) -> None:
        """Recount ancestor and descendant totals of ``entries`` from the graph."""
        for entry in entries:
            if entry.txid not in self.entries:
                continue
            below = self.calculate_descendants(entry)
            entry.count_with_descendants = len(below)
            entry.size_with_descendants = sum(e.size for e in below)
            entry.fees_with_descendants = sum(e.modified_fee for e in below)
            above = self.ancestors_of(entry)
            entry.count_with_ancestors = 1 + len(above)
            entry.size_with_ancestors = entry.size + sum(e.size for e in above)
            entry.fees_with_ancestors = entry.modified_fee + sum(e.modified_fee for e in above)
            entry.sigops_with_ancestors = entry.sigops + sum(e.sigops for e in above)

    def _unlink(self, entry: MempoolEntry) -> None:
        """Drop one entry from the indexes (family totals are the caller's job)."""
        del self.entries[entry.txid]
        for txin in entry.tx.vin:
            key = (txin.prevout.txid, txin.prevout.n)
            if self.spenders.get(key) is entry:
                del self.spenders[key]
        for parent in entry.parents:
            parent.children.discard(entry)
        for child in entry.children:
            child.parents.discard(entry)
        self.total_size -= entry.size
        self.total_usage -= entry.usage
        self.transactions_updated += 1

    def remove_staged(self, stage: Set[MempoolEntry], reason: str) -> None:
        """Remove ``stage``, which must contain every pool descendant of its members."""
        with self.lock:
            for entry in stage:
                # Ancestors outside the stage lose these descendants from their totals.
                for ancestor in self.ancestors_of(entry):
                    if ancestor not in stage:
                        ancestor.count_with_descendants -= 1
                        ancestor.size_with_descendants -= entry.size
                        ancestor.fees_with_descendants -= entry.modified_fee
            for entry in stage:
                self._unlink(entry)
            if self.on_removed is not None:
                for entry in stage:
                    self.on_removed(entry, reason)

    def remove_recursive(self, tx: Transaction, reason: str) -> Set[MempoolEntry]:
        """Remove ``tx`` (if pooled) and every pool transaction descending from it."""
        with self.lock:
            roots: Set[MempoolEntry] = set()
            entry = self.entries.get(tx.txid)
            if entry is not None:
                roots.add(entry)
            else:
                for n in range(len(tx.vout)):
                    child = self.spenders.get((tx.txid, n))
                    if child is not None:
                        roots.add(child)
            stage: Set[MempoolEntry] = set()
            for root in roots:
                stage |= self.calculate_descendants(root)
            if stage:
                self.remove_staged(stage, reason)
            return stage

    def remove_conflicts(self, tx: Transaction) -> Set[MempoolEntry]:
        """Remove pool transactions spending any input of ``tx`` (other than ``tx``)."""
        with self.lock:
            removed: Set[MempoolEntry] = set()
            for txin in tx.vin:
                spender = self.spenders.get((txin.prevout.txid, txin.prevout.n))
                if spender is not None and spender.txid != tx.txid:
                    removed |= self.remove_recursive(spender.tx, REMOVED_CONFLICT)
            return removed

    def remove_for_block(self, txs: Iterable[Transaction]) -> List[MempoolEntry]:
        """A block confirmed ``txs``: they leave, and so do pool double-spends of them.

        Descendants of a confirmed transaction stay: their ancestors shrink.
        Returns the confirmed entries that were in the pool.
        """
        with self.lock:
            confirmed: List[MempoolEntry] = []
            # An empty pool without prioritisations (initial block download) has nothing
            # to look up per transaction.
            for tx in txs if self.entries or self.deltas else ():
                entry = self.entries.get(tx.txid)
                if entry is not None:
                    # Confirmed transactions have no pool ancestors left (parents come first).
                    for descendant in self.calculate_descendants(entry):
                        if descendant is not entry:
                            descendant.count_with_ancestors -= 1
                            descendant.size_with_ancestors -= entry.size
                            descendant.fees_with_ancestors -= entry.modified_fee
                            descendant.sigops_with_ancestors -= entry.sigops
                    for ancestor in self.ancestors_of(entry):
                        ancestor.count_with_descendants -= 1
                        ancestor.size_with_descendants -= entry.size
                        ancestor.fees_with_descendants -= entry.modified_fee
                    self._unlink(entry)
                    confirmed.append(entry)
                self.remove_conflicts(tx)
                self.deltas.pop(tx.txid, None)
            self._last_rolling_update = int(self._now())
            self._block_since_bump = True
            return confirmed

    def prioritise(self, txid: bytes, delta: int) -> None:
        """Add ``delta`` satoshis to the fee mining and eviction see (prioritisetransaction)."""
        with self.lock:
            # Saturated to 64 bits (Core 25's SaturatingAdd): mempool.dat stores an int64,
            # and repeated calls must not make saving the pool fail.
            previous = self.deltas.get(txid, 0)
            total = max(-(1 << 63), min((1 << 63) - 1, previous + delta))
            delta = total - previous
            if total:
                self.deltas[txid] = total
            else:
                self.deltas.pop(txid, None)
            entry = self.entries.get(txid)
            if entry is None:
                return
            entry.fee_delta += delta
            entry.fees_with_descendants += delta
            entry.fees_with_ancestors += delta
            for ancestor in self.ancestors_of(entry):
                ancestor.fees_with_descendants += delta
            for descendant in self.calculate_descendants(entry):
                if descendant is not entry:
                    descendant.fees_with_ancestors += delta
            self.transactions_updated += 1

    def recompute_all(self) -> None:
        """Recount every family total (after a reorg re-inserted transactions)."""
        with self.lock:
            self._recompute_family(list(self.entries.values()))

    # ------------------------------------------------------------------ limits

    def expire(self, cutoff: float) -> int:
        """Remove entries (and their descendants) that entered before ``cutoff``.

        Runs after every acceptance, so it looks only at the oldest entries (a heap).
        """
        with self.lock:
            heap = self._by_time
            stage: Set[MempoolEntry] = set()
            while heap and heap[0][0] < cutoff:
                entry = heapq.heappop(heap)[2]
                if self.entries.get(entry.txid) is entry and entry not in stage:
                    stage |= self.calculate_descendants(entry)
            if stage:
                self.remove_staged(stage, REMOVED_EXPIRY)
            if len(heap) > 2 * len(self.entries) + 64:
                # Drop the stale items left by removals.
                self._by_time = [item for item in heap if self.entries.get(item[2].txid) is item[2]]
                heapq.heapify(self._by_time)
            return len(stage)

    def trim_to_size(self, limit: int) -> List[MempoolEntry]:
        """Evict lowest descendant-score packages until ``usage <= limit``.

        Each eviction raises the rolling minimum fee to the evicted package's
        fee rate plus the incremental relay fee, as Core's TrimToSize does.
        """
        with self.lock:
            removed: List[MempoolEntry] = []
            while self.entries and self.total_usage > limit:
                worst = min(self.entries.values(), key=_eviction_key)
                fee, size = worst.fees_with_descendants, worst.size_with_descendants
                rate = FeeRate.from_fee(fee, size).sat_per_kb + self.incremental_relay_fee.sat_per_kb
                self._track_package_removed(rate)
                stage = self.calculate_descendants(worst)
                self.remove_staged(stage, REMOVED_SIZELIMIT)
                removed.extend(stage)
            return removed

    def _track_package_removed(self, rate: int) -> None:
        if rate > self._rolling_min_fee:
            self._rolling_min_fee = float(rate)
            self._block_since_bump = False

    def get_min_fee(self, limit: Optional[int] = None) -> FeeRate:
        """The rolling fee floor after evictions, decaying once blocks arrive (Core's GetMinFee)."""
        with self.lock:
            limit = self.max_usage if limit is None else limit
            if not self._block_since_bump or self._rolling_min_fee == 0:
                return FeeRate(int(round(self._rolling_min_fee)))
            now = int(self._now())
            if now > self._last_rolling_update + 10:
                halflife = float(ROLLING_FEE_HALFLIFE)
                if self.total_usage < limit / 4:
                    halflife /= 4
                elif self.total_usage < limit / 2:
                    halflife /= 2
                self._rolling_min_fee /= 2.0 ** ((now - self._last_rolling_update) / halflife)
                self._last_rolling_update = now
                if self._rolling_min_fee < self.incremental_relay_fee.sat_per_kb / 2:
                    self._rolling_min_fee = 0.0
                    return FeeRate(0)
            return max(FeeRate(int(round(self._rolling_min_fee))), self.incremental_relay_fee)

    def relay_floor(self) -> int:
        """Satoshis per kB a transaction must pay to enter now: the rolling floor or the
        minimum relay fee, whichever is higher (Core's mempoolminfee and feefilter)."""
        return max(self.get_min_fee().sat_per_kb, self.min_relay_fee.sat_per_kb)

    def clear(self) -> None:
        with self.lock:
            self.entries.clear()
            self.spenders.clear()
            self._by_time.clear()
            self.total_size = 0
            self.total_usage = 0
            self.transactions_updated += 1


def _eviction_key(entry: MempoolEntry) -> Tuple[float, int]:
    """Lowest descendant score first; among equals the newest entry goes first."""
    fee, size = entry.descendant_score()
    return (fee / size if size else 0.0, -entry.sequence)
