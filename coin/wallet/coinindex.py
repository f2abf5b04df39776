"""The wallet's index of unspent outputs and running balances (issue #21).

A wallet with a long history holds few coins compared with its transactions,
and most of its transactions are buried deep in the chain where nothing about
them changes any more.  The index keeps, updated with every change to a wallet
transaction (so with each block, reorg, pool change, abandon, replacement,
lock and removal):

* ``outputs``: the wallet's own outputs that no settled spender spends (a wallet
  transaction that is neither abandoned nor marked conflicting); those with a
  spender marked conflicting are ``uncertain`` (spent or not depends on the
  chain) and always checked in full;
* per block height, the wallet transactions mined there (``by_height``) and the
  sum of their clean unspent outputs by ownership (``height_sums``, ``totals``),
  in two lanes: ordinary transactions and coinbases (which mature later); every
  other transaction (unconfirmed, abandoned, conflicted, with an uncertain output
  or a block off the active chain) is in ``other``;
* the clean, unlocked, spendable coins of mined transactions sorted by value
  (``by_value``, for coin selection) and every indexed output sorted by outpoint
  (``by_outpoint``, for listunspent).

Mined transactions at least ``min_depth`` deep (coinbases: also mature, the
coinbase maturity plus one) are trusted, final and mature: their unspent credit
is summed from the running totals.  The few above them and ``other`` are
evaluated in full with the wallet's own rules, so every answer is the one a full
scan gives.  Coin selection takes coins from the value-sorted list except those
of the last blocks that a tier could refuse (others' coins under 6
confirmations, immature coinbases), which it checks in full.
The index is only used while the wallet has seen every block of the active
chain (its best block is the tip) and no key was imported since it was built.
"""

from __future__ import annotations

import marshal
from typing import TYPE_CHECKING, Dict, Iterable, Iterator, List, Optional, Set, Tuple

from sortedcontainers import SortedList

from coin.collector import gc_paused

from coin.wallet.keystore import ISMINE_ALL, ISMINE_NO, ISMINE_SPENDABLE, ISMINE_WATCH_ONLY

if TYPE_CHECKING:  # pragma: no cover
    from coin.wallet.wallet import Wallet, WalletTx

Outpoint = Tuple[bytes, int]
#: A coin selection key: value, then the order the full scan listed coins in.
ValueKey = Tuple[int, int, int, bytes]
#: Lanes of mined transactions: ordinary ones, coinbases.
ORDINARY, COINBASE = 0, 1
#: Coin selection's first tier takes others' coins from this many confirmations (Core).
SELECTION_DEPTH = 6


#: Sums kept per height: clean unspent spendable and watch-only outputs, then the legacy
#: balance's share (Wallet.legacy_amount) for each ismine filter (1, 2, 3).
SPENDABLE_SLOT, WATCH_SLOT = 0, 1
LEGACY_SLOTS = {ISMINE_SPENDABLE: 2, ISMINE_WATCH_ONLY: 3, ISMINE_ALL: 4}
SLOTS = 5


class Lane:
    """Mined transactions of one kind by height, with their sums."""

    def __init__(self) -> None:
        self.by_height: Dict[int, Set[bytes]] = {}
        self.height_sums: Dict[int, List[int]] = {}
        self.totals = [0] * SLOTS

    def add(self, height: int, txid: bytes, sums: Tuple[int, ...]) -> None:
        self.by_height.setdefault(height, set()).add(txid)
        at = self.height_sums.setdefault(height, [0] * SLOTS)
        for slot, value in enumerate(sums):
            at[slot] += value
            self.totals[slot] += value

    def remove(self, height: int, txid: bytes, sums: Tuple[int, ...]) -> None:
        self.by_height[height].discard(txid)
        at = self.height_sums[height]
        for slot, value in enumerate(sums):
            at[slot] -= value
            self.totals[slot] -= value
        if not self.by_height[height]:
            del self.by_height[height]
            del self.height_sums[height]

    def heights_above(self, floor: int, tip: int) -> List[int]:
        if tip - floor <= len(self.by_height):
            return [h for h in range(floor + 1, tip + 1) if h in self.by_height]
        return [h for h in self.by_height if h > floor]

    def txids_above(self, floor: int, tip: int) -> Iterator[bytes]:
        return (txid for h in self.heights_above(floor, tip) for txid in self.by_height[h])

    def sum_upto(self, floor: int, tip: int, slot: int) -> int:
        return self.totals[slot] - sum(self.height_sums[h][slot]
                                       for h in self.heights_above(floor, tip))

    def state(self) -> tuple:
        return self.by_height, self.height_sums, self.totals

    def restore(self, state: tuple) -> None:
        self.by_height, self.height_sums, self.totals = state


class _PerCoin:
    """An attribute of the index's per-coin part, which a load from the wallet's snapshot
    decodes when first used (:meth:`CoinIndex.restore`)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = "_" + name

    def __get__(self, index: "CoinIndex", owner: type) -> object:
        if index._pending is not None:
            index._decode()
        return getattr(index, self.slot)

    def __set__(self, index: "CoinIndex", value: object) -> None:
        setattr(index, self.slot, value)


class CoinIndex:
    """Unspent outputs and running balances of one wallet (guarded by the wallet's lock)."""

    outputs = _PerCoin()
    uncertain = _PerCoin()
    by_tx = _PerCoin()
    by_outpoint = _PerCoin()
    by_value = _PerCoin()
    selectable = _PerCoin()

    def __init__(self, wallet: "Wallet") -> None:
        self.wallet = wallet
        #: Coinbases count from the running totals from this depth on (mature).
        self.mature = wallet.params.coinbase_maturity + 1
        self.clear()

    def clear(self) -> None:
        #: The per-coin part of a restored index, not decoded yet (see :meth:`restore`).
        self._pending: Optional[bytes] = None
        #: Own outpoint -> is_mine value, for outputs without a settled spender.
        self.outputs: Dict[Outpoint, int] = {}
        self.uncertain: Set[Outpoint] = set()
        self.by_tx: Dict[bytes, Set[int]] = {}
        self.by_outpoint = SortedList()
        #: Mined transactions: txid -> (lane, height, sums by slot, addresses in change_paid).
        self.placed: Dict[bytes, Tuple[int, int, Tuple[int, ...], Set[str]]] = {}
        #: Address -> mined outgoing transactions paying it an own output (change unless
        #: the address gets a name: their legacy share changes then).
        self.change_paid: Dict[str, Set[bytes]] = {}
        self.lanes = (Lane(), Lane())
        self.other: Set[bytes] = set()
        self.by_value = SortedList()
        self.selectable: Dict[Outpoint, ValueKey] = {}
        self.generation = self.wallet.keys.generation
        #: While the wallet's settled history is in the file (coin.wallet.txstore): every
        #: transaction placed above this height is here; those at or below it may not be.
        self.horizon: Optional[int] = None

    # ------------------------------------------------------------------ building

    def rebuild(self) -> None:
        """Everything from the wallet's transactions (load, key imports, reordering)."""
        if self.wallet.txs.settled is not None:
            self.wallet.hydrate()  # which rebuilds the index once every transaction is read
            return
        self.clear()
        wallet = self.wallet
        outpoints = []
        for txid, wtx in wallet.txs.items():
            kept = set()
            for n in range(len(wtx.tx.vout)):
                state = self._state(wtx, n)
                if state is not None:
                    self.outputs[(txid, n)] = state[0]
                    if not state[1]:
                        self.uncertain.add((txid, n))
                    kept.add(n)
                    outpoints.append((txid, n))
            if kept:
                self.by_tx[txid] = kept
        self.by_outpoint = SortedList(outpoints)
        keys = []
        for wtx in wallet.txs.values():
            keys.extend(self._place(wtx, bulk=True))
        self.by_value = SortedList(keys)

    def live_txids(self, horizon: int) -> Set[bytes]:
        """Transactions the index needs in memory: with an indexed output, in ``other``,
        placed above ``horizon``, or paying change the address book could affect."""
        live = set(self.by_tx) | self.other
        for lane in self.lanes:
            for height, txids in lane.by_height.items():
                if height > horizon:
                    live.update(txids)
        for paid in self.change_paid.values():
            live.update(paid)
        return live

    def state(self, live: Set[bytes]) -> tuple:
        """What :meth:`restore` takes back: the index in plain containers, the placements of
        the ``live`` transactions only (for the wallet's load snapshot; the sorted lists
        are made again from ``outputs`` and ``by_value``'s keys, already in order)."""
        placed = {txid: placement for txid, placement in self.placed.items() if txid in live}
        lanes = []
        for lane in self.lanes:
            by_height: Dict[int, Set[bytes]] = {}
            for height, txids in lane.by_height.items():
                kept = txids & live
                if kept:
                    by_height[height] = kept
            lanes.append((by_height, lane.height_sums, lane.totals))
        per_coin = marshal.dumps((self.outputs, self.uncertain, self.by_tx,
                                  list(self.by_outpoint), list(self.by_value)))
        return placed, self.change_paid, tuple(lanes), self.other, per_coin

    def restore(self, state: tuple, horizon: Optional[int]) -> None:
        """The index as :meth:`state` gave it, for the wallet's current keys; placements at
        ``horizon`` or below may be missing (None: none is).  The per-coin part (outputs and
        the sorted lists, in proportion to the coins) is decoded when a call first needs it:
        the balances do not (they read the running totals and the live transactions)."""
        self.placed, self.change_paid, lanes, self.other, self._pending = state
        for lane, saved in zip(self.lanes, lanes):
            lane.restore(saved)
        self.generation = self.wallet.keys.generation
        self.horizon = horizon

    def _decode(self) -> None:
        with gc_paused():  # hundreds of thousands of objects, all kept
            outputs, uncertain, by_tx, by_outpoint, by_value = marshal.loads(self._pending)
            self._pending = None
            self.outputs, self.uncertain, self.by_tx = outputs, uncertain, by_tx
            self.by_outpoint = SortedList(by_outpoint)
            self.by_value = SortedList(by_value)
            self.selectable = {(key[3], key[2]): key for key in by_value}

    def _lazy(self) -> bool:
        return self.horizon is not None and self.wallet.txs.settled is not None

    def _reach(self, floor: int) -> None:
        """Placements above ``floor`` are about to be read: all must be here."""
        if self._lazy() and floor < self.horizon:
            self.wallet.hydrate()

    def promote(self, wtx: "WalletTx") -> None:
        """Before a settled transaction left in the file at load changes (or what spends its
        outputs does): put it back among the live ones, placed as it is (a settled
        transaction has no indexed output, so its placement adds nothing to the spendable
        sums, and its legacy share is what its inputs and outputs give: both are in the
        running totals already), with the ``spends`` entries of its inputs.  When entries
        of its outputs' spenders were left in the file, the whole history is read instead."""
        wallet = self.wallet
        txid = wtx.txid
        if not wallet.txs.is_settled(txid):
            return
        if wallet.txs.spenders_in_file(txid):
            wallet.hydrate()
            return
        lane = COINBASE if wtx.tx.is_coinbase() else ORDINARY
        debits = wallet.debits_by_mine(wtx.tx)
        sums = (0, 0) + tuple(wallet.legacy_amounts(wtx.tx, LEGACY_SLOTS, True, debits))
        self.placed[txid] = (lane, wtx.block.height, sums, set())
        self.lanes[lane].by_height.setdefault(wtx.block.height, set()).add(txid)
        wallet.txs.promoted.add(txid)
        wallet._index_spends(wtx)

    def _state(self, wtx: "WalletTx", n: int) -> Optional[Tuple[int, bool]]:
        """``(is_mine, clean)`` of an own output not spent by a settled spender, else None."""
        wallet = self.wallet
        mine = wallet.is_mine(wtx.tx.vout[n].script_pubkey)
        if mine == ISMINE_NO:
            return None
        clean = True
        for txid in wallet.spends.get((wtx.txid, n), ()):
            spender = wallet.txs.get(txid)
            if spender is None or spender.abandoned:
                continue
            if spender.conflict_block is None:
                return None  # depth >= 0: spent whatever the chain does
            clean = False
        return mine, clean

    def changed(self, wtx: "WalletTx") -> None:
        """``wtx`` was added, changed (block, abandoned, conflict mark) or removed: it and
        the transactions whose outputs it spends are indexed again."""
        self.refresh(wtx.txid, len(wtx.tx.vout))
        if not wtx.tx.is_coinbase():
            spent: Dict[bytes, List[int]] = {}
            for txin in wtx.tx.vin:
                spent.setdefault(txin.prevout.txid, []).append(txin.prevout.n)
            for txid, ns in spent.items():
                if txid != wtx.txid and not self._unaffected(txid, ns):
                    self.refresh(txid)

    def _unaffected(self, txid: bytes, ns: List[int]) -> bool:
        """``txid`` is settled and left in the file, and none of its outputs ``ns`` is the
        wallet's: a spend of them changes nothing of it (so it need not be read)."""
        wallet = self.wallet
        if not wallet.txs.is_settled(txid):
            return False
        wtx = wallet.txs.get(txid)
        if wtx is None:
            return True  # not the wallet's (another txid with the same prefix)
        vout = wtx.tx.vout
        return all(n >= len(vout) or wallet.is_mine(vout[n].script_pubkey) == ISMINE_NO
                   for n in ns)

    def refresh(self, txid: bytes, outputs: int = 0) -> None:
        """Index ``txid``'s outputs and placement again (or drop it when it is gone: then
        its spenders, of its ``outputs`` first outputs, are placed again)."""
        wtx = self.wallet.txs.get(txid)
        if wtx is not None:
            self.promote(wtx)
        known = txid in self.placed or txid in self.other
        old = self.by_tx.pop(txid, set())
        kept: Set[int] = set()
        if wtx is not None:
            for n in range(len(wtx.tx.vout)):
                outpoint = (txid, n)
                state = self._state(wtx, n)
                if state is None:
                    continue
                kept.add(n)
                if outpoint not in self.outputs:
                    self.by_outpoint.add(outpoint)
                self.outputs[outpoint] = state[0]
                if state[1]:
                    self.uncertain.discard(outpoint)
                else:
                    self.uncertain.add(outpoint)
        for n in old - kept:
            outpoint = (txid, n)
            self._set_selectable(outpoint, None)
            del self.outputs[outpoint]
            self.uncertain.discard(outpoint)
            self.by_outpoint.remove(outpoint)
        if kept:
            self.by_tx[txid] = kept
        self._unplace(txid)
        if wtx is not None:
            self._place(wtx)
        if known != (wtx is not None):
            self._children_changed(txid, range(len(wtx.tx.vout) if wtx is not None else outputs))

    def _children_changed(self, txid: bytes, outputs: Iterable[int]) -> None:
        """``txid`` came or went: what its spenders debit changed (their legacy share)."""
        wallet = self.wallet
        wtx = wallet.txs.get(txid)
        if (self._lazy() and wtx is not None and wtx.block is not None
                and wtx.block.height <= self.horizon):
            # New and mined deep: settled transactions may spend its outputs (their spends
            # entries are in the file only). Newer or unconfirmed, none can.
            wallet.hydrate()
        children = {child for n in outputs for child in wallet.spends.get((txid, n), ())}
        if self._lazy() and any(wallet.txs.is_settled(child) for child in children):
            wallet.hydrate()  # their placements are to change from what the totals hold
        for child in children - {txid}:
            wtx = wallet.txs.get(child)
            if wtx is not None:
                self._unplace(child)
                self._place(wtx)

    def _unplace(self, txid: bytes) -> None:
        placed = self.placed.pop(txid, None)
        if placed is not None:
            lane, height, sums, addresses = placed
            self.lanes[lane].remove(height, txid, sums)
            for address in addresses:
                paid = self.change_paid[address]
                paid.discard(txid)
                if not paid:
                    del self.change_paid[address]
        self.other.discard(txid)

    def _place(self, wtx: "WalletTx", bulk: bool = False) -> List[ValueKey]:
        """Put ``wtx`` with its height or in ``other``; update its selectable coins.

        With ``bulk`` the selection keys are returned for the caller to sort at once.
        """
        txid = wtx.txid
        ns = self.by_tx.get(txid, ())
        keys: Dict[Outpoint, ValueKey] = {}
        if self._active(wtx) and not any((txid, n) in self.uncertain for n in ns):
            height = wtx.block.height
            spendable = watch = 0
            locked = self.wallet.locked_coins
            for n in ns:
                mine = self.outputs[(txid, n)]
                value = wtx.tx.vout[n].value
                if mine == ISMINE_SPENDABLE:
                    spendable += value
                    if (txid, n) not in locked:
                        keys[(txid, n)] = (value, wtx.order_pos, n, txid)
                elif mine == ISMINE_WATCH_ONLY:
                    watch += value
            lane = COINBASE if wtx.tx.is_coinbase() else ORDINARY
            debits = self.wallet.debits_by_mine(wtx.tx)
            sums = (spendable, watch) + tuple(self.wallet.legacy_amounts(wtx.tx, LEGACY_SLOTS,
                                                                         True, debits))
            addresses = self._paid_addresses(wtx, debits)
            self.placed[txid] = (lane, height, sums, addresses)
            self.lanes[lane].add(height, txid, sums)
            for address in addresses:
                self.change_paid.setdefault(address, set()).add(txid)
        else:
            self.other.add(txid)
        if bulk:
            self.selectable.update(keys)
            return list(keys.values())
        for n in range(len(wtx.tx.vout)):
            self._set_selectable((txid, n), keys.get((txid, n)))
        return []

    def _paid_addresses(self, wtx: "WalletTx", debits: Dict[int, int]) -> Set[str]:
        """Addresses whose naming would change ``wtx``'s legacy shares: own outputs that a
        filter it debits does not match (change for it, else not counted); none in a
        wallet without watch-only coins."""
        wallet = self.wallet
        debited = [mine for mine, value in debits.items() if value]
        if not debited:
            return set()
        found = set()
        for out in wtx.tx.vout:
            mine = wallet.is_mine(out.script_pubkey)
            if mine != ISMINE_NO and any(not mine & f for f in debited):
                address = wallet.address_of(out.script_pubkey)
                if address is not None:
                    found.add(address)
        return found

    def name_added(self, address: str) -> None:
        """An address got an address-book entry: its outputs stopped being change."""
        for txid in list(self.change_paid.get(address, ())):
            self.refresh(txid)

    def _set_selectable(self, outpoint: Outpoint, key: Optional[ValueKey]) -> None:
        old = self.selectable.get(outpoint)
        if old == key:
            return
        if old is not None:
            self.by_value.remove(old)
            del self.selectable[outpoint]
        if key is not None:
            self.by_value.add(key)
            self.selectable[outpoint] = key

    def _active(self, wtx: "WalletTx") -> bool:
        if wtx.block is None:
            return False
        chain = self.wallet.chain
        entry = chain.lookup(wtx.block.hash)
        return entry is not None and chain.contains(entry)

    def lock_changed(self, outpoints: Iterable[Outpoint]) -> None:
        """lockunspent: locked coins leave coin selection, unlocked ones come back."""
        for txid in {txid for txid, _ in outpoints}:
            wtx = self.wallet.txs.get(txid)
            if wtx is not None and txid in self.placed:
                self._unplace(txid)
                self._place(wtx)

    def height_changed(self, height: int) -> None:
        """A block at ``height`` left the chain: what is placed there or above is placed again."""
        self._reach(height - 1)
        for lane in self.lanes:
            for txid in list(lane.txids_above(height - 1, max(lane.by_height, default=0))):
                self.refresh(txid)

    # ------------------------------------------------------------------ queries

    def usable(self) -> bool:
        """The index answers only for the chain it follows and the keys it was built with."""
        wallet = self.wallet
        if self.generation != wallet.keys.generation:
            self.rebuild()
        tip = wallet.chain.tip
        return tip is not None and wallet.best_block == tip.hash

    def floors(self, min_depth: int) -> Tuple[int, int]:
        """Per lane, the highest height whose transactions count from the running totals:
        confirmed and ``min_depth`` deep; coinbases also mature."""
        tip = self.wallet.chain.tip.height
        return tip - max(1, min_depth) + 1, tip - max(self.mature, min_depth) + 1

    def deep_sum(self, floors: Tuple[int, int], filter_: int) -> int:
        """Clean unspent outputs matching ``filter_`` of transactions at their lane's floor
        or below."""
        return sum(self._deep(floors, slot) for slot, flag in
                   ((SPENDABLE_SLOT, ISMINE_SPENDABLE), (WATCH_SLOT, ISMINE_WATCH_ONLY))
                   if filter_ & flag)

    def deep_legacy(self, floors: Tuple[int, int], filter_: int) -> int:
        """The legacy balance's share of transactions at their lane's floor or below."""
        return self._deep(floors, LEGACY_SLOTS[filter_]) if filter_ in LEGACY_SLOTS else 0

    def _deep(self, floors: Tuple[int, int], slot: int) -> int:
        tip = self.wallet.chain.tip.height
        return sum(lane.sum_upto(floor, tip, slot) for lane, floor in zip(self.lanes, floors))

    def recent(self, floors: Tuple[int, int]) -> List["WalletTx"]:
        """Every wallet transaction :meth:`deep_sum` leaves out (above its floor, or other)."""
        for floor in floors:
            self._reach(floor)
        tip = self.wallet.chain.tip.height
        txs = self.wallet.txs
        found = [txs[txid] for lane, floor in zip(self.lanes, floors)
                 for txid in lane.txids_above(floor, tip)]
        found.extend(txs[txid] for txid in self.other)
        return found

    def live(self) -> List["WalletTx"]:
        """Transactions with an indexed output, in the wallet's order."""
        txs = self.wallet.txs
        return sorted((txs[txid] for txid in self.by_tx), key=lambda w: w.order_pos)

    def selection(self) -> Tuple[SortedList, Set[Outpoint], List["WalletTx"]]:
        """The value-sorted coins, those of them a selection tier could refuse, and the
        transactions whose coins are to be checked in full (those and ``other``)."""
        tip = self.wallet.chain.tip.height
        self._reach(tip - max(SELECTION_DEPTH, self.mature))
        txs = self.wallet.txs
        doubtful = [txs[txid] for txid in self.lanes[ORDINARY].txids_above(
            tip - SELECTION_DEPTH + 1, tip) if not txs[txid].from_me]
        doubtful.extend(txs[txid] for txid in self.lanes[COINBASE].txids_above(
            tip - self.mature + 1, tip))
        shallow = {(wtx.txid, n) for wtx in doubtful for n in self.by_tx.get(wtx.txid, ())
                   if (wtx.txid, n) in self.selectable}
        doubtful.extend(txs[txid] for txid in self.other)
        return self.by_value, shallow, doubtful

    def check(self) -> None:
        """Raise AssertionError unless the index equals one rebuilt from scratch (tests)."""
        self.wallet.hydrate()
        if self.generation != self.wallet.keys.generation:
            self.rebuild()  # as any query would
        fresh = CoinIndex(self.wallet)
        fresh.rebuild()
        for name in ("outputs", "uncertain", "by_tx", "placed", "other", "selectable",
                     "change_paid"):
            assert getattr(self, name) == getattr(fresh, name), name
        for lane, other in zip(self.lanes, fresh.lanes):
            assert lane.state() == other.state(), "lanes"
        assert list(self.by_outpoint) == list(fresh.by_outpoint), "by_outpoint"
        assert list(self.by_value) == list(fresh.by_value), "by_value"
