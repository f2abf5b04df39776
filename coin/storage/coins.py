"""The in-memory UTXO cache in front of the ``utxo`` table.

Entries are ``key -> Coin`` (unspent) or ``key -> None`` (spent, delete pending).
Two flags per key, as in Core's CCoinsViewCache:

* *dirty*: differs from the database; written by the next flush.
* *fresh*: the database has no row for it (created since the last flush), so a
  fresh coin that is spent again is simply forgotten and never touches the
  database, and a fresh coin is written with a plain INSERT.

Keys are ``(txid, n)`` tuples with the txid in internal byte order.
"""

from __future__ import annotations

from typing import Callable, Dict, List, NamedTuple, Optional, Sequence, Set, Tuple

from coin.primitives.coin import Coin

Key = Tuple[bytes, int]
Loader = Callable[[Sequence[Key]], Dict[Key, Coin]]

#: Estimated bytes per cached entry besides its script (key tuple, txid, Coin
#: object, ints, dict slot, share of the flag sets); calibrated with tracemalloc
#: on CPython 3.11, see ``bench/utxo.py``.
ENTRY_OVERHEAD = 360
#: A spent entry: key, txid and dict slot only.
SPENT_ENTRY_OVERHEAD = 200
#: After a flush of an over-full cache, clean entries are evicted down to this share.
EVICT_TO = 0.5


def _entry_size(coin: Optional[Coin]) -> int:
    return SPENT_ENTRY_OVERHEAD if coin is None else ENTRY_OVERHEAD + len(coin.script_pubkey)


class CoinChanges(NamedTuple):
    """Keys a flush must write: coins new to the database, replaced ones, spent ones.

    Keys only (the coins are :meth:`CoinsCache.cached`): a flush of many coins
    then allocates one object per row, not two.
    """

    inserts: List[Key]
    upserts: List[Key]
    deletes: List[Key]


class CoinsCache:
    """UTXO cache: reads through to ``loader``, holds changes until the next flush.

    ``loader`` fetches at most ``batch_size`` keys per call in one query.
    Used by the single chain-state writer only; not thread-safe.
    """

    def __init__(self, loader: Loader, budget_bytes: int, batch_size: int = 500) -> None:
        self._loader = loader
        self.budget_bytes = budget_bytes
        self._batch_size = batch_size
        self._entries: Dict[Key, Optional[Coin]] = {}
        self._dirty: Set[Key] = set()
        self._fresh: Set[Key] = set()
        self._usage = 0

    # -- reading ----------------------------------------------------------------

    def fetch(self, keys: Sequence[Key]) -> List[Optional[Coin]]:
        """The unspent coin for each key, or None; misses are loaded in batched queries."""
        entries = self._entries
        missing = list(dict.fromkeys(k for k in keys if k not in entries))
        for start in range(0, len(missing), self._batch_size):
            for key, coin in self._loader(missing[start:start + self._batch_size]).items():
                entries[key] = coin
                self._usage += _entry_size(coin)
        return [entries.get(k) for k in keys]

    def get(self, key: Key) -> Optional[Coin]:
        if key in self._entries:
            return self._entries[key]
        return self.fetch([key])[0]

    def changed_outputs_of(self, txid: bytes) -> List[int]:
        """Output numbers of ``txid`` changed since the last flush (a scan of those changes)."""
        return sorted(n for t, n in self._dirty if t == txid)

    def cached(self, key: Key) -> Optional[Coin]:
        """The cached entry for ``key`` without loading (KeyError if not cached)."""
        return self._entries[key]

    # -- changing ---------------------------------------------------------------

    def add(self, key: Key, coin: Coin, overwrite: bool = False) -> None:
        """Add an unspent coin.

        Adding over an unspent coin needs ``overwrite=True`` (the BIP30 case).
        Pass ``overwrite=True`` too whenever the database might still hold a row
        for ``key`` that this cache has not seen (e.g. restoring undo data
        without having looked the key up): such a coin is then upserted
        instead of inserted.
        """
        entries = self._entries
        if key in entries:
            old = entries[key]
            if old is not None and not overwrite:
                raise ValueError("coin %s:%d is unspent; adding it again needs overwrite=True"
                                 % (key[0][::-1].hex(), key[1]))
            self._usage -= _entry_size(old)
            # A spent-but-unflushed entry still has a database row: not fresh.
            fresh = key in self._fresh
        else:
            fresh = not overwrite
        entries[key] = coin
        self._usage += _entry_size(coin)
        self._dirty.add(key)
        if fresh:
            self._fresh.add(key)

    def spend(self, key: Key) -> Optional[Coin]:
        """Spend and return the coin at ``key``; None if there is no unspent coin there."""
        coin = self.get(key)
        if coin is None:
            return None
        if key in self._fresh:
            del self._entries[key]
            self._fresh.discard(key)
            self._dirty.discard(key)
            self._usage -= _entry_size(coin)
        else:
            self._entries[key] = None
            self._dirty.add(key)
            self._usage += _entry_size(None) - _entry_size(coin)
        return coin

    # -- accounting and flushing ------------------------------------------------

    def usage_bytes(self) -> int:
        """Estimated memory held by cached entries."""
        return self._usage

    def dirty_count(self) -> int:
        return len(self._dirty)

    def over_budget(self) -> bool:
        return self._usage > self.budget_bytes

    def __len__(self) -> int:
        return len(self._entries)

    def changes(self) -> CoinChanges:
        """The writes the next flush must make (the cache is unchanged until :meth:`flushed`)."""
        inserts: List[Key] = []
        upserts: List[Key] = []
        deletes: List[Key] = []
        entries, fresh = self._entries, self._fresh
        for key in self._dirty:
            if entries[key] is None:
                deletes.append(key)
            elif key in fresh:
                inserts.append(key)
            else:
                upserts.append(key)
        return CoinChanges(inserts, upserts, deletes)

    def flushed(self, changes: CoinChanges) -> None:
        """Record that ``changes`` are committed; evict clean entries if over budget."""
        entries = self._entries
        for key in changes.deletes:
            del entries[key]
            self._usage -= _entry_size(None)
        self._dirty.clear()
        self._fresh.clear()
        if self.over_budget():
            self._evict(int(self.budget_bytes * EVICT_TO))

    def clear(self) -> None:
        """Forget everything, including unflushed changes (the table was wiped)."""
        self._entries.clear()
        self._dirty.clear()
        self._fresh.clear()
        self._usage = 0

    def _evict(self, target: int) -> None:
        """Drop the oldest entries until usage is at most ``target`` (all are clean now)."""
        entries = self._entries
        victims: List[Key] = []
        usage = self._usage
        for key, coin in entries.items():
            if usage <= target:
                break
            usage -= _entry_size(coin)
            victims.append(key)
        for key in victims:
            del entries[key]
        self._usage = usage
