"""The wallet's transactions by txid: the live part in memory, the settled history on use.

A wallet with a long history mostly holds *settled* transactions: mined deep on the active
chain, with no unspent output of the wallet, no conflict and nothing in the pool; no answer
about balances or coins changes with them any more.  A load from the snapshot
(coin.wallet.wallet) keeps only the live transactions in memory and the settled ones'
txids as one packed, sorted byte string (:class:`PackedSet`, marking those with outputs whose
spenders' entries were left in the file too): a settled transaction is read
from the file when it is asked for by txid (then kept), listtransactions walks the
file's order_pos index, and whatever iterates every transaction first has the wallet read
its whole history (``hydrate``: then everything is in memory, as after a full load).
"""

from __future__ import annotations

import sys
from array import array
from bisect import bisect_left
from typing import (
    Any, Callable, Dict, ItemsView, Iterable, Iterator, KeysView, List, Optional, Set, Tuple,
    ValuesView,
)

from coin.wallet.db import WalletDB

#: Transactions read per statement while listtransactions walks the history.
NEWEST_CHUNK = 64


class PackedSet:
    """A fixed set of txids as one sorted byte string of their first WIDTH bytes (no object
    per key; 16 bytes: no two txids share them in practice), each with a mark bit."""

    WIDTH = 16

    def __init__(self, data: bytes = b"", marks: bytes = b"") -> None:
        self.data = data
        self.marks = marks
        self.count = len(data) // self.WIDTH
        #: The keys' first 8 bytes as big-endian integers, in the keys' order, made at the
        #: first lookup (8 bytes a key, no object each): C's bisect finds a key's place in
        #: ~0.3 µs (every input of every block asks whether it spends a wallet transaction;
        #: most miss), where a binary search over ``data`` in Python took ~2.7.
        self._heads: Optional[array] = None

    @classmethod
    def of(cls, keys: Iterable[bytes], marked: Iterable[bytes] = ()) -> "PackedSet":
        """The set of ``keys``, those also in ``marked`` marked (txids or their prefixes)."""
        width = cls.WIDTH
        prefixes = sorted({key[:width] for key in keys})
        position = {prefix: i for i, prefix in enumerate(prefixes)}
        marks = bytearray((len(prefixes) + 7) // 8)
        for key in marked:
            i = position.get(key[:width])
            if i is not None:
                marks[i >> 3] |= 1 << (i & 7)
        return cls(b"".join(prefixes), bytes(marks))

    def position(self, key: bytes) -> Optional[int]:
        heads = self._heads
        if heads is None:
            heads = self._heads = array("Q", memoryview(self.data).cast("Q")[::self.WIDTH // 8].tobytes())
            if sys.byteorder == "little":
                heads.byteswap()
        head = int.from_bytes(key[:8], "big")
        data, width = self.data, self.WIDTH
        key = key[:width]
        # Keys sharing the first 8 bytes are next to each other, in order.
        i, count = bisect_left(heads, head), self.count
        while i < count and heads[i] == head:
            if data[i * width:(i + 1) * width] == key:
                return i
            i += 1
        return None

    def __contains__(self, key: bytes) -> bool:
        return self.position(key) is not None

    def marked(self, key: bytes) -> bool:
        i = self.position(key)
        return i is not None and bool(self.marks[i >> 3] & (1 << (i & 7)))

    def __iter__(self) -> Iterator[bytes]:
        """The keys' prefixes, in order."""
        data, width = self.data, self.WIDTH
        return (data[i * width:(i + 1) * width] for i in range(self.count))

    def marked_keys(self) -> Iterator[bytes]:
        return (prefix for i, prefix in enumerate(self) if self.marks[i >> 3] & (1 << (i & 7)))

    def __len__(self) -> int:
        return self.count


class TxStore:
    """txid -> WalletTx.  ``settled`` is None once every transaction is in memory."""

    def __init__(self, db: WalletDB, make: Callable[[Tuple[Any, ...]], Any],
                 hydrate: Callable[[], None]) -> None:
        self._db = db
        self._make = make
        self._hydrate = hydrate
        self._mem: Dict[bytes, Any] = {}
        #: Settled txids of a lazy load (None: all in memory); ``_unread`` are not read yet.
        self.settled: Optional[PackedSet] = None
        self._unread = 0
        #: Settled transactions read from the file, and those of them made live again
        #: (coin.wallet.coinindex), since the load.
        self._fetched: Set[bytes] = set()
        self.promoted: Set[bytes] = set()

    def lazy(self, rows: List[Tuple[Any, ...]], settled: PackedSet) -> None:
        """Start from the live transactions' rows; the ``settled`` ones stay in the file."""
        self._mem = {row[0]: self._make(row) for row in rows}
        self.settled = settled
        self._unread = len(settled)
        self._fetched = set()
        self.promoted = set()

    def fill(self, rows: List[Tuple[Any, ...]]) -> None:
        """Every transaction, from all rows by order_pos (those in memory are kept, also one
        not written yet)."""
        mem = self._mem
        filled = {row[0]: mem.get(row[0]) or self._make(row) for row in rows}
        if any(txid not in filled for txid in mem):
            filled.update(mem)
            filled = dict(sorted(filled.items(), key=lambda item: item[1].order_pos))
        self._mem = filled
        self.settled = None
        self._unread = 0
        self._fetched = set()
        self.promoted = set()

    def is_settled(self, txid: bytes) -> bool:
        """``txid`` belongs to the settled history of a lazy load (read or not) and was not
        made live again."""
        if self.settled is None or txid in self.promoted:
            return False
        if txid in self._mem:  # live, or read from the file
            return txid in self._fetched
        return txid in self.settled

    def known(self, txid: bytes) -> bool:
        """``txid`` is the wallet's, without reading the file (for a caller off the wallet's
        lock, e.g. an event filter; a settled one is known by its 16-byte prefix)."""
        return txid in self._mem or (self.settled is not None and txid in self.settled)

    def spenders_in_file(self, txid: bytes) -> bool:
        """``txid`` is settled and entries of its outputs' spenders were left in the file
        (marked): what asks whether its outputs are spent must read the history first."""
        return self.is_settled(txid) and self.settled is not None and self.settled.marked(txid)

    def get(self, txid: bytes, default: Any = None) -> Any:
        wtx = self._mem.get(txid)
        if wtx is not None:
            return wtx
        if self.settled is None or txid not in self.settled:
            return default
        self._read([txid])
        return self._mem.get(txid, default)  # (not read: another txid with the same prefix)

    def _read(self, txids: List[bytes]) -> None:
        """Read these settled transactions from the file into memory (one statement)."""
        for row in self._db.fetch_txs(txids):
            self._mem[row[0]] = self._make(row)
            self._fetched.add(row[0])
            self._unread -= 1

    def __getitem__(self, txid: bytes) -> Any:
        wtx = self.get(txid)
        if wtx is None:
            raise KeyError(txid)
        return wtx

    def __contains__(self, txid: bytes) -> bool:
        return self.get(txid) is not None

    def __setitem__(self, txid: bytes, wtx: Any) -> None:
        self._mem[txid] = wtx

    def __len__(self) -> int:
        return len(self._mem) + self._unread

    def loaded(self) -> ValuesView:
        """The transactions in memory (all of them once :attr:`settled` is None)."""
        return self._mem.values()

    def _all(self) -> Dict[bytes, Any]:
        if self.settled is not None:
            self._hydrate()
        return self._mem

    def values(self) -> ValuesView:
        return self._all().values()

    def items(self) -> ItemsView:
        return self._all().items()

    def keys(self) -> KeysView:
        return self._all().keys()

    def __iter__(self) -> Iterator[bytes]:
        return iter(self._all())

    def pop(self, txid: bytes, default: Any = None) -> Any:
        return self._all().pop(txid, default)

    def clear(self) -> None:
        self._mem.clear()
        self.settled = None
        self._unread = 0
        self._fetched = set()
        self.promoted = set()

    def reorder(self) -> None:
        """Put the transactions back in order_pos order (after -zapwallettxes restores it)."""
        self._mem = dict(sorted(self._all().items(), key=lambda item: item[1].order_pos))

    def newest_first(self) -> Iterator[Any]:
        """By descending order_pos, lazily: in memory they are in that order once all are
        there (read sorted, new ones appended); else the file's index gives the order."""
        if self.settled is None:
            yield from reversed(self._mem.values())
            return
        before = None
        while True:
            rows = self._db.txids_before(before, NEWEST_CHUNK)
            if self.settled is not None:  # (the history may have been read meanwhile)
                self._read([txid for txid, _ in rows if txid not in self._mem and txid in self.settled])
            for txid, before in rows:
                yield self[txid]
            if len(rows) < NEWEST_CHUNK:
                return
