"""One wallet: its keys (coin.wallet.keystore), its transactions, what it owns.

The wallet follows the chain and the mempool: every transaction that pays one
of its scripts or spends one of its outputs is kept (``txs``) with the block
that confirms it, if any.  Balances, unspent outputs and transaction lists
are computed from that record the way Core 0.17's CWallet does (trusted
transactions, maturity, change = an own output without an address-book
entry).

Threading: the validation worker calls the chain and mempool handlers; RPC
reads and small changes come from the reactor thread.  Every public method
holds :attr:`Wallet.lock`.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import marshal
import threading
from typing import Any, Callable, Dict, Iterable, Iterator, List, NamedTuple, Optional, Set, Tuple

from twisted.logger import Logger

from coin.chainparams import ChainParams
from coin.collector import gc_paused
from coin.consensus.tx_check import is_final_tx
from coin.primitives.address import Destination, encode_address
from coin.primitives.block import Block
from coin.primitives.transaction import Transaction, TxOut
from coin.primitives.hashes import hash160
from coin.script.standard import extract_destinations, p2pkh_script
from coin.threads import ThreadRunner
from coin.wallet.coinindex import CoinIndex
from coin.wallet.db import TX_ORDER_POS, WALLET_VERSION, WalletDB
from coin.wallet.keystore import (
    ISMINE_ALL, ISMINE_NO, ISMINE_SPENDABLE, ISMINE_WATCH_ONLY, CorruptKey, KeyStore,
)
from coin.wallet.txstore import PackedSet, TxStore

Outpoint = Tuple[bytes, int]

log = Logger()

#: Blocks that do not concern the wallet are recorded as its best block every this many.
BEST_BLOCK_SAVE_INTERVAL = 144
#: Layout of the load snapshot (marshal of plain containers; another value is not used).
#: Version 2 holds only the live part (coin.wallet.txstore): version 1 ones are not used.
SNAPSHOT_VERSION = 2
#: Transactions mined this many blocks below the tip or more may be left in the file at load
#: (settled); those above are always in memory.  At least the coinbase maturity: the
#: balances' running totals start that deep (coin.wallet.coinindex).
LIVE_DEPTH = 144
#: The snapshot is stored after its sha256: a damaged blob is never decoded, so a flipped
#: bit on disk cannot become a wrong balance (the load computes everything instead).
_DIGEST_SIZE = 32
#: Address-book purposes (Core's).
PURPOSE_RECEIVE = "receive"
PURPOSE_SEND = "send"


class WalletCorrupt(Exception):
    """A private key of the wallet does not belong to its public key (Core: "Wallet corrupted").

    Loading refuses the wallet; walletpassphrase refuses to unlock it (-4).
    """

    rpc_code = -4

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class BlockRef(NamedTuple):
    """Where a wallet transaction was mined: block hash, height, position in the block."""

    hash: bytes
    height: int
    index: int


#: Meta-table name prefixes of bumpfee's marks (names stay within 64 characters).
_TX_VALUE_KEYS = {"replaced_by": "replaced_by_txid", "replaces": "replaces_txid"}

class WalletTx:
    """A transaction the wallet cares about.

    One loaded from the file keeps its serialization and is parsed on first use
    (``tx``): a wallet with a long history mostly never looks at its old transactions.
    """

    __slots__ = ("_tx", "_raw", "txid", "block", "time_received", "order_pos", "abandoned",
                 "from_me", "conflict_block")

    def __init__(self, tx: Optional[Transaction], block: Optional[BlockRef], time_received: int,
                 order_pos: int, abandoned: bool = False, from_me: bool = False,
                 stored: Optional[Tuple[bytes, bytes]] = None) -> None:
        """``tx``, or None and ``stored``: the txid and serialization of a stored one."""
        self._tx = tx
        if tx is not None:
            self._raw = None
            self.txid = tx.txid
        else:
            self.txid, self._raw = stored
        self.block = block
        self.time_received = time_received
        self.order_pos = order_pos
        self.abandoned = abandoned
        self.from_me = from_me
        #: A block that confirmed a conflicting spend (the wallet tx can no longer confirm).
        self.conflict_block: Optional[BlockRef] = None

    @property
    def tx(self) -> Transaction:
        if self._tx is None:
            self.parse()
        return self._tx

    def parse(self) -> None:
        """Parse the stored serialization now (no-op once parsed)."""
        if self._tx is None:
            self._tx = Transaction.deserialize(self._raw)
            self._raw = None

    def row(self) -> Dict[str, Any]:
        block, conflict = self.block, self.conflict_block
        raw = self._raw if self._tx is None else self._tx.serialize()
        return {"txid": self.txid, "raw": raw,
                "block_hash": block.hash if block else None,
                "block_height": block.height if block else None,
                "block_index": block.index if block else None,
                "time_received": self.time_received, "order_pos": self.order_pos,
                "abandoned": self.abandoned, "from_me": self.from_me,
                "conflict_hash": conflict.hash if conflict else None,
                "conflict_height": conflict.height if conflict else None,
                "conflict_index": conflict.index if conflict else None}


class Output(NamedTuple):
    """An unspent output of the wallet (Core's COutput)."""

    wtx: WalletTx
    n: int
    depth: int
    spendable: bool
    solvable: bool
    safe: bool

    @property
    def txout(self) -> TxOut:
        return self.wtx.tx.vout[self.n]

    @property
    def outpoint(self) -> Outpoint:
        return (self.wtx.txid, self.n)


class Wallet:
    """A loaded wallet."""

    def __init__(self, name: str, db: WalletDB, params: ChainParams, chain: Any,  # ChainState
                 in_mempool: Callable[[bytes], bool], now: Callable[[], float],
                 keypool_size: int) -> None:
        self.name = name
        self.db = db
        self.params = params
        self.chain = chain
        self._in_mempool = in_mempool
        self._now = now
        self.lock = threading.RLock()
        #: Where slow or contended work under the lock runs (coin.wallet.access.in_wallet);
        #: the wallet service gives its node's pool.
        self.in_thread = ThreadRunner()
        self.keys = KeyStore(db, now, keypool_size)
        #: txid -> WalletTx; after a load from the snapshot the settled history stays in the
        #: file until asked for (coin.wallet.txstore).
        self.txs = TxStore(db, self._stored_tx, self.hydrate)
        #: Outpoint -> wallet txids spending it (several when they conflict); while the history
        #: is in the file, only the entries the live transactions need (see _save_snapshot).
        self.spends: Dict[Outpoint, Set[bytes]] = {}
        self._blocks: Dict[Tuple[bytes, int, int], BlockRef] = {}
        #: Address -> (label, purpose).
        self.names: Dict[str, Tuple[str, str]] = {}
        self.locked_coins: Set[Outpoint] = set()
        #: bumpfee's marks (Core's mapValue ``replaced_by_txid``/``replaces_txid``):
        #: txid -> {key: other txid}, kept in the meta table.
        self.tx_values: Dict[bytes, Dict[str, bytes]] = {}
        #: settxfee's rate in base units per kB (0: estimate).
        self.pay_tx_fee = 0
        #: -spendzeroconfchange: coin selection may fall back to own unconfirmed change.
        self.spend_zero_conf_change = True
        self.best_block: Optional[bytes] = None
        #: Called with (wallet name, txid) on the worker for each transaction new to the
        #: wallet or changed (Core's AddToWallet notification: -walletnotify).
        self.tx_listeners: List[Callable[[str, bytes], None]] = []
        self._unsaved_blocks = 0
        self._next_order = 0
        self._addresses: Dict[bytes, Optional[str]] = {}
        #: Unspent outputs and running balances (kept in step with ``txs``).
        self.coins = CoinIndex(self)
        #: The last open took what it computes from the transactions from the snapshot.
        self.loaded_from_snapshot = False

    # ------------------------------------------------------------------ opening

    def open(self, created: bool, disable_private_keys: bool = False) -> None:
        """Load the file; a new wallet gets its HD seed and key pool (none when
        ``disable_private_keys``: a watch-only wallet)."""
        with self.lock:
            rows = self.db.load()
            try:
                self.keys.load(rows)
            except CorruptKey as e:
                raise WalletCorrupt("Error loading %s: Wallet corrupted: %s (CPrivKey corrupt)"
                                    % (self.db.path, self._corrupt_key_text(e))) from None
            meta = {row["name"]: row["value"] for row in rows["meta"]}
            self.best_block = meta.get("best_block") or None
            for name, value in meta.items():
                key, _, encoded = name.partition(":")
                if key in _TX_VALUE_KEYS and encoded:
                    txid = base64.urlsafe_b64decode(encoded.encode())
                    self.tx_values.setdefault(txid, {})[_TX_VALUE_KEYS[key]] = value
            for row in rows["names"]:
                self.names[row["address"]] = (row["label"], row["purpose"])
            with gc_paused():
                self._load_txs()
            if created:
                if disable_private_keys:
                    self.keys.disable_private_keys()
                else:
                    self.keys.new_seed()

    def _stored_tx(self, row: Tuple[Any, ...]) -> WalletTx:
        """A WalletTx of a ``txs`` row (parsed when first used), with its stored conflict mark."""
        (txid, raw, block_hash, height, index, time_received, order_pos, abandoned, from_me,
         conflict_hash, conflict_height, conflict_index) = row
        wtx = WalletTx(None, self._block_ref(block_hash, height, index), time_received, order_pos,
                       bool(abandoned), bool(from_me), (txid, raw))
        if conflict_hash is not None:  # (rare: no call for the others)
            wtx.conflict_block = self._block_ref(conflict_hash, conflict_height, conflict_index)
        return wtx

    def _block_ref(self, block_hash: Optional[bytes], height: Optional[int],
                   index: Optional[int]) -> Optional[BlockRef]:
        """The BlockRef of stored columns (None without a hash): one object per block
        position (memory)."""
        if block_hash is None:
            return None
        where = (block_hash, height, index)
        block = self._blocks.get(where)
        if block is None:
            block = self._blocks[where] = BlockRef(*where)
        return block

    def _load_txs(self) -> None:
        """The transactions, then what is computed from them: the live part from the
        snapshot the last clean close left when it is still valid, else everything from
        every transaction."""
        self._next_order = self.db.next_order()
        self.loaded_from_snapshot = self._restore_snapshot()
        if not self.loaded_from_snapshot:
            self._compute(self.db.load_txs())

    def _compute(self, rows: List[Tuple[Any, ...]]) -> None:
        """Every transaction from ``rows`` (by order_pos) with its stored conflict mark, and
        ``spends`` and the coin index computed from them.

        The marks are stored with each change, as Core's MarkConflicted does (also those of a
        conflicting spend that is not the wallet's), and taken as stored.  A file from before
        that has none: each confirmed transaction marks the wallet transactions
        double-spending it, once, and they are stored."""
        self._read_all(rows)
        if self.db.marks_pending:
            with self.db.batch():
                for wtx in list(self.txs.values()):
                    if wtx.block is not None:
                        self._mark_conflicts(wtx.tx, wtx.block)
                self.db.marks_stored()
        self.coins.rebuild()

    def hydrate(self) -> None:
        """Read the settled history a load from the snapshot left in the file: from now on
        the wallet is as a full load makes it (what iterates every transaction, a deep reorg,
        a key import need it).  The conflict marks in memory are kept: every marked
        transaction is in memory."""
        if self.txs.settled is None:
            return
        log.info("Wallet {name!r}: reading its settled history", name=self.name)
        with gc_paused():
            self._read_all(self.db.load_txs())
            self.coins.rebuild()

    def _read_all(self, rows: List[Tuple[Any, ...]]) -> None:
        """Every transaction from ``rows`` (by order_pos) in memory, with all of ``spends``."""
        self.txs.fill(rows)
        self.spends = {}
        for wtx in self.txs.values():
            self._index_spends(wtx)

    def _restore_snapshot(self) -> bool:
        """Take the live transactions, their ``spends``, the conflict marks and the coin index
        from the snapshot when it fits: written in the file's current write epoch (nothing
        changed since), at the wallet's best block, which is still on the active chain (so
        every block active then still is; what was off it is placed again)."""
        data = self.db.snapshot()
        if data is None:
            return False
        digest, blob = data[:_DIGEST_SIZE], data[_DIGEST_SIZE:]
        if hashlib.sha256(blob).digest() != digest:
            log.warn("Wallet load snapshot damaged (checksum mismatch); computing from the transactions")
            return False
        try:
            (version, count, tip, live, settled, marks, horizon, spends, conflicts,
             coins) = marshal.loads(blob)
        except (EOFError, ValueError, TypeError):
            return False
        entry = self.chain.lookup(tip) if tip == self.best_block else None
        if version != SNAPSHOT_VERSION or entry is None or not self.chain.contains(entry):
            return False
        rows = self.db.fetch_txs(live)
        if len(rows) != len(live) or count != len(live) + len(settled) // PackedSet.WIDTH:
            return False
        if settled:
            self.txs.lazy(rows, PackedSet(settled, marks))
        else:
            self.txs.fill(sorted(rows, key=lambda row: row[TX_ORDER_POS]))
        self.spends = spends
        # The rows hold the marks, but a file whose mark columns are new, or one an older
        # coind wrote (it does not fill them), may lack some the snapshot has: stored now.
        with self.db.batch():
            for txid, where in conflicts.items():
                wtx = self.txs[txid]
                if wtx.conflict_block != where:
                    wtx.conflict_block = self._block_ref(*where)
                    self.db.put_tx(wtx.row())
            if self.db.marks_pending:
                self.db.marks_stored()
        self.coins.restore(coins, horizon if settled else None)
        for txid in list(self.coins.other):
            self.coins.refresh(txid)
        return True

    def _save_snapshot(self) -> None:
        """At a clean close: the snapshot the next load starts from, when the coin index
        follows the chain's tip (locked coins are unlocked first: locks are not kept).
        The wallet's writes include its best block, so a file unchanged since the snapshot
        was read has the same transactions, keys, names and best block: it is kept.

        It holds the *live* transactions (with an indexed output, not placed by the index,
        conflicted, mined less than LIVE_DEPTH deep, or with change the address book could
        affect), the ``spends`` entries of their inputs and outputs and of their parents'
        outputs, and the coin index without the others' placements; the others (settled)
        are listed by txid only, with the txids whose outputs' ``spends`` entries stay out."""
        tip = self.chain.tip
        if tip is None or self.best_block != tip.hash:
            return
        if self.loaded_from_snapshot and not self.db.changed:
            return  # still valid: nothing was written since it was
        if self.locked_coins:
            self.lock_coins(list(self.locked_coins), lock=False)
        if self.coins.generation != self.keys.generation:
            self.coins.rebuild()
        conflicts = {wtx.txid: tuple(wtx.conflict_block) for wtx in self.txs.loaded()
                     if wtx.conflict_block is not None}
        horizon = tip.height - LIVE_DEPTH
        if self.coins.horizon is not None:
            horizon = max(horizon, self.coins.horizon)  # only those above are all in memory
        live = self.coins.live_txids(horizon) | conflicts.keys()
        parents = {txin.prevout.txid for txid in live for txin in self.txs[txid].tx.vin}
        old = self.txs.settled or PackedSet()
        spends: Dict[Outpoint, Set[bytes]] = {}
        left = set(old.marked_keys())  # settled, with spenders of its outputs left in the file
        for outpoint, spenders in self.spends.items():
            if outpoint[0] in live or outpoint[0] in parents or not spenders.isdisjoint(live):
                spends[outpoint] = spenders
            else:
                left.add(outpoint[0])
        width = PackedSet.WIDTH
        live_prefixes = {txid[:width] for txid in live}
        settled = PackedSet.of((txid for txid in itertools.chain(
            old, (wtx.txid for wtx in self.txs.loaded())) if txid[:width] not in live_prefixes),
            left)
        blob = marshal.dumps((SNAPSHOT_VERSION, len(self.txs), tip.hash, sorted(live),
                              settled.data, settled.marks, horizon, spends, conflicts,
                              self.coins.state(live)))
        self.db.put_snapshot(hashlib.sha256(blob).digest() + blob)

    def zap_transactions(self) -> List[WalletTx]:
        """-zapwallettxes: forget every transaction, in the file and in memory (the caller
        rescans); returns them for :meth:`restore_metadata`."""
        with self.lock:
            zapped = list(self.txs.values())
            for wtx in zapped:
                self.db.delete_tx(wtx.txid)
            self.txs.clear()
            self.spends.clear()
            self._next_order = 0
            self.db.put_next_order(0)
            self.coins.rebuild()
            return zapped

    def restore_metadata(self, zapped: List[WalletTx]) -> None:
        """-zapwallettxes=1: what Core keeps of a zapped transaction the rescan found again
        (time received, order, from-me)."""
        with self.lock:
            for old in zapped:
                wtx = self.txs.get(old.txid)
                if wtx is None:
                    continue
                wtx.time_received, wtx.order_pos, wtx.from_me = (old.time_received,
                                                                 old.order_pos, old.from_me)
                self._next_order = max(self._next_order, wtx.order_pos + 1)
                self.db.put_tx(wtx.row())
            # ``txs`` stays in order_pos order (listtransactions reads it newest first).
            self.txs.reorder()
            self.coins.rebuild()

    def _corrupt_key_text(self, error: CorruptKey) -> str:
        address = encode_address(Destination("pubkeyhash", hash160(error.pubkey)), self.params)
        return "the private key of %s (public key %s) does not match it" % (
            address, error.pubkey.hex())

    def unlock(self, passphrase: bytes) -> None:
        """walletpassphrase: WrongPassphrase, or WalletCorrupt naming a key that does not
        decrypt to its public key (Core asserts there; the wallet stays locked here)."""
        with self.lock:
            try:
                self.keys.unlock(passphrase)
            except CorruptKey as e:
                raise WalletCorrupt("Error: Wallet corrupted: %s; it stays locked"
                                    % self._corrupt_key_text(e)) from None

    def _index(self, wtx: WalletTx) -> None:
        self.txs[wtx.txid] = wtx
        self._next_order = max(self._next_order, wtx.order_pos + 1)
        self._index_spends(wtx)

    def _index_spends(self, wtx: WalletTx) -> None:
        if not wtx.tx.is_coinbase():
            for txin in wtx.tx.vin:
                self.spends.setdefault((txin.prevout.txid, txin.prevout.n), set()).add(wtx.txid)

    def close(self) -> None:
        with self.lock:
            try:
                if self._unsaved_blocks:
                    self._save_best_block()
                try:
                    self._save_snapshot()
                except Exception:  # only a cache: the next load computes everything
                    log.failure("Wallet {name!r}: the load snapshot was not written",
                                name=self.name)
            finally:
                self.db.close()

    # ------------------------------------------------------------------ ownership

    def is_mine(self, script_pubkey: bytes) -> int:
        return self.keys.is_mine(script_pubkey)

    def address_of(self, script_pubkey: bytes) -> Optional[str]:
        """The script's address when it has exactly one (P2PKH or P2SH); cached."""
        try:
            return self._addresses[script_pubkey]
        except KeyError:
            pass
        kind, destinations, _ = extract_destinations(script_pubkey)
        address = None
        if kind in ("pubkeyhash", "scripthash", "pubkey") and len(destinations) == 1:
            address = encode_address(destinations[0], self.params)
        if len(self._addresses) > 200_000:
            self._addresses.clear()
        self._addresses[script_pubkey] = address
        return address

    def is_change(self, txout: TxOut) -> bool:
        """Core's IsChange: an own output whose address is not in the address book."""
        if self.is_mine(txout.script_pubkey) == ISMINE_NO:
            return False
        address = self.address_of(txout.script_pubkey)
        return address is None or address not in self.names

    def label_of(self, address: str) -> Optional[str]:
        entry = self.names.get(address)
        return entry[0] if entry is not None else None

    def set_name(self, address: str, label: str, purpose: str) -> None:
        with self.lock:
            self.db.put_name(address, label, purpose)  # first: a refused write changes nothing
            new = address not in self.names
            self.names[address] = (label, purpose)
            if new:  # its outputs are no longer change
                self.coins.name_added(address)

    # ------------------------------------------------------------------ tracking

    def _involves_me(self, tx: Transaction) -> bool:
        if any(self.is_mine(out.script_pubkey) != ISMINE_NO for out in tx.vout):
            return True
        return any(self._debit_of_input(txin.prevout.txid, txin.prevout.n, ISMINE_ALL) > 0
                   for txin in tx.vin)

    def _debit_of_input(self, txid: bytes, n: int, filter_: int) -> int:
        prev = self.txs.get(txid)
        if prev is None or n >= len(prev.tx.vout):
            return 0
        out = prev.tx.vout[n]
        return out.value if self.is_mine(out.script_pubkey) & filter_ else 0

    def sync_transaction(self, tx: Transaction, block: Optional[BlockRef],
                         time_received: Optional[int] = None) -> bool:
        """Record ``tx`` if it concerns the wallet (Core's AddToWalletIfInvolvingMe)."""
        with self.lock:
            wtx = self.txs.get(tx.txid)
            if wtx is None:
                if not self._involves_me(tx):
                    return False
                wtx = WalletTx(tx, block, time_received if time_received is not None
                               else int(self._now()), self._next_order,
                               from_me=self.debit(tx, ISMINE_ALL) > 0)
                self._index(wtx)
            elif block is not None and (block != wtx.block or wtx.abandoned):
                self.coins.promote(wtx)
                wtx.block = block
                wtx.abandoned = False
            elif block is None and wtx.abandoned:
                # Back in the mempool (sendrawtransaction, a peer): it may confirm again, so its
                # inputs are spent and its outputs count (Core's AddToWallet). Descendants stay.
                self.coins.promote(wtx)
                wtx.abandoned = False
            else:
                return True  # nothing new (a rescan meeting a known transaction)
            self.db.put_tx(wtx.row())
            self.coins.changed(wtx)
            for listener in self.tx_listeners:
                listener(self.name, wtx.txid)
            return True

    def block_connected(self, height: int, block: Block) -> None:
        """A block joined the active chain (called on the validation worker)."""
        block_hash = block.hash
        with self.lock, self.db.batch():
            involved = False
            for index, tx in enumerate(block.txs):
                involved |= self.sync_transaction(tx, BlockRef(block_hash, height, index))
                self._mark_conflicts(tx, BlockRef(block_hash, height, index))
            self.best_block = block_hash
            # Blocks that do not concern the wallet need no write each: a wallet reopened
            # behind the chain rescans from the block it saved (close() saves the last one).
            self._unsaved_blocks += 1
            if involved or self._unsaved_blocks >= BEST_BLOCK_SAVE_INTERVAL:
                self._save_best_block()

    def _mark_conflicts(self, tx: Transaction, where: BlockRef) -> None:
        """Wallet transactions double-spending ``tx``'s inputs, and their descendants, in
        memory and in the file."""
        if tx.is_coinbase():
            return
        todo = [other for txin in tx.vin
                for other in self.spends.get((txin.prevout.txid, txin.prevout.n), ())
                if other != tx.txid]
        seen: Set[bytes] = set()
        while todo:
            txid = todo.pop()
            if txid in seen or txid not in self.txs:
                continue
            seen.add(txid)
            wtx = self.txs[txid]
            self._set_conflict(wtx, where)
            for n in range(len(self.txs[txid].tx.vout)):
                todo.extend(self.spends.get((txid, n), ()))

    def block_disconnected(self, block: Block) -> None:
        """A block left the active chain: its transactions are unconfirmed again."""
        block_hash = block.hash
        with self.lock, self.db.batch():
            for tx in block.txs:
                wtx = self.txs.get(tx.txid)
                if wtx is not None and wtx.block is not None and wtx.block.hash == block_hash:
                    self.coins.promote(wtx)
                    wtx.block = None
                    self.db.put_tx(wtx.row())
                    self.coins.changed(wtx)
            marked = [wtx for wtx in self.txs.loaded()  # every marked transaction is in memory
                      if wtx.conflict_block is not None and wtx.conflict_block.hash == block_hash]
            for wtx in marked:
                self._set_conflict(wtx, None)
            entry = self.chain.lookup(block_hash)
            if entry is not None:
                self.coins.height_changed(entry.height)
            self.best_block = block.header.prev_hash
            self._save_best_block()

    def _set_conflict(self, wtx: WalletTx, where: Optional[BlockRef]) -> None:
        """Mark (or clear, None) ``wtx`` conflicted by a spend mined at ``where``, in memory
        and in the file (in the caller's batch)."""
        if wtx.conflict_block != where:
            wtx.conflict_block = where
            self.db.put_tx(wtx.row())
            self.coins.changed(wtx)

    def mark_best_block(self, block_hash: bytes) -> None:
        with self.lock:
            self.best_block = block_hash
            self._save_best_block()

    def _save_best_block(self) -> None:
        if self.best_block is not None:
            self.db.put_meta("best_block", self.best_block)
        self._unsaved_blocks = 0

    def mark_replaced(self, original: bytes, replacement: bytes) -> None:
        """bumpfee: ``replacement`` replaces ``original`` (Core's MarkReplaced and the
        replacement's ``replaces_txid``), in the file and in memory."""
        with self.lock, self.db.batch():
            for txid, key, other in ((original, "replaced_by_txid", replacement),
                                     (replacement, "replaces_txid", original)):
                short = next(k for k, v in _TX_VALUE_KEYS.items() if v == key)
                self.db.put_meta("%s:%s" % (short, base64.urlsafe_b64encode(txid).decode()),
                                 other)
                self.tx_values.setdefault(txid, {})[key] = other

    def import_pruned(self, tx: Transaction, block: BlockRef) -> bool:
        """importprunedfunds: record ``tx`` as mined in ``block`` when an output of it is the
        wallet's (Core's IsMine of the transaction, then AddToWallet); False otherwise."""
        with self.lock:
            if not any(self.is_mine(out.script_pubkey) for out in tx.vout):
                return False
            return self.sync_transaction(tx, block)

    def remove_transaction(self, txid: bytes) -> bool:
        """removeprunedfunds: forget one transaction (Core's ZapSelectTx); False if unknown."""
        with self.lock:
            wtx = self.txs.pop(txid, None)
            if wtx is None:
                return False
            with self.db.batch():
                self.db.delete_tx(txid)
                self.db.put_next_order(self._next_order)  # (its number is not given again)
            if not wtx.tx.is_coinbase():
                for txin in wtx.tx.vin:
                    key = (txin.prevout.txid, txin.prevout.n)
                    spenders = self.spends.get(key, set())
                    spenders.discard(txid)
                    if not spenders:
                        self.spends.pop(key, None)
            self.coins.changed(wtx)
            return True

    def transaction_added_to_mempool(self, tx: Transaction) -> None:
        self.sync_transaction(tx, None)

    def abandon(self, txid: bytes) -> None:
        """abandontransaction: an unconfirmed, not pooled tx gives its inputs back.

        Raises KeyError (unknown) or ValueError (confirmed or in the mempool).
        """
        with self.lock:
            wtx = self.txs[txid]
            if self.depth(wtx) != 0 or self._in_mempool(txid):
                raise ValueError("Transaction not eligible for abandonment")
            todo, seen = [wtx], set()
            with self.db.batch():
                while todo:
                    current = todo.pop()
                    if current.txid in seen:
                        continue
                    seen.add(current.txid)
                    if self.depth(current) == 0 and not current.abandoned:
                        current.abandoned = True
                        self.db.put_tx(current.row())
                        self.coins.changed(current)
                    for n in range(len(current.tx.vout)):
                        todo.extend(self.txs[t] for t in self.spends.get((current.txid, n), ())
                                    if t in self.txs)

    # ------------------------------------------------------------------ depth and trust

    def depth(self, wtx: WalletTx) -> int:
        """Confirmations; 0 unconfirmed; negative when a conflicting spend is mined."""
        tip = self.chain.tip
        entry = self._active_entry(wtx.block)
        if entry is not None:
            return tip.height - entry.height + 1
        entry = self._active_entry(wtx.conflict_block)
        if entry is not None:
            return -(tip.height - entry.height + 1)
        return 0

    def _active_entry(self, block: Optional[BlockRef]) -> Any:
        """The chain entry of ``block`` when it is on the active chain, else None."""
        if block is None:
            return None
        entry = self.chain.lookup(block.hash)
        return entry if entry is not None and self.chain.contains(entry) else None

    def in_mempool(self, wtx: WalletTx) -> bool:
        return self._in_mempool(wtx.txid)

    def blocks_to_maturity(self, wtx: WalletTx) -> int:
        if not wtx.tx.is_coinbase():
            return 0
        return max(0, self.params.coinbase_maturity + 1 - self.depth(wtx))

    def is_trusted(self, wtx: WalletTx) -> bool:
        """Core's IsTrusted: confirmed, or our own pooled spend of trusted coins."""
        tip = self.chain.tip
        if not is_final_tx(wtx.tx, tip.height + 1, tip.median_time_past()):
            return False
        depth = self.depth(wtx)
        if depth >= 1:
            return True
        if depth < 0 or not wtx.from_me or not self.in_mempool(wtx):
            return False
        for txin in wtx.tx.vin:
            parent = self.txs.get(txin.prevout.txid)
            if parent is None:
                return False
            if self.is_mine(parent.tx.vout[txin.prevout.n].script_pubkey) != ISMINE_SPENDABLE:
                return False
        return True

    def conflicts(self, wtx: WalletTx) -> List[bytes]:
        """Core's GetConflicts: other wallet transactions spending one of ``wtx``'s inputs."""
        with self.lock:
            found: Set[bytes] = set()
            if not wtx.tx.is_coinbase():
                for txin in wtx.tx.vin:
                    found.update(self.spends.get((txin.prevout.txid, txin.prevout.n), ()))
            found.discard(wtx.txid)
            return sorted(found)

    def is_spent(self, outpoint: Outpoint) -> bool:
        """Spent by a wallet transaction that is not abandoned or conflicted."""
        if self.txs.spenders_in_file(outpoint[0]):
            self.hydrate()  # its outputs' spenders are in the file only
        for txid in self.spends.get(outpoint, ()):
            spender = self.txs.get(txid)
            if spender is not None and not spender.abandoned and self.depth(spender) >= 0:
                return True
        return False

    # ------------------------------------------------------------------ amounts

    def credit(self, tx: Transaction, filter_: int) -> int:
        return sum(out.value for out in tx.vout if self.is_mine(out.script_pubkey) & filter_)

    def debit(self, tx: Transaction, filter_: int) -> int:
        if tx.is_coinbase():
            return 0
        return sum(self._debit_of_input(i.prevout.txid, i.prevout.n, filter_) for i in tx.vin)

    def is_all_from_me(self, tx: Transaction, filter_: int) -> bool:
        """Core's IsAllFromMe: every input spends a wallet output matching ``filter_``."""
        return all(self._debit_of_input(i.prevout.txid, i.prevout.n, filter_) > 0 for i in tx.vin)

    def change(self, tx: Transaction) -> int:
        return sum(out.value for out in tx.vout if self.is_change(out))

    def amounts(self, wtx: WalletTx, filter_: int
                ) -> Tuple[List[Tuple[Optional[str], int, int]], List[Tuple[Optional[str], int, int]], int]:
        """Core's GetAmounts: ``(received, sent, fee)`` as (address, value, vout) lists."""
        tx = wtx.tx
        debit = self.debit(tx, filter_)
        fee = debit - tx.total_out() if debit > 0 else 0
        received: List[Tuple[Optional[str], int, int]] = []
        sent: List[Tuple[Optional[str], int, int]] = []
        for n, out in enumerate(tx.vout):
            mine = self.is_mine(out.script_pubkey)
            if debit > 0:
                if self.is_change(out):
                    continue
            elif not mine & filter_:
                continue
            entry = (self.address_of(out.script_pubkey), out.value, n)
            if debit > 0:
                sent.append(entry)
            if mine & filter_:
                received.append(entry)
        return received, sent, fee

    def available_credit(self, wtx: WalletTx, filter_: int) -> int:
        """Unspent own outputs of ``wtx`` (nothing while a coinbase is immature)."""
        if self.blocks_to_maturity(wtx) > 0:
            return 0
        return sum(out.value for n, out in enumerate(wtx.tx.vout)
                   if self.is_mine(out.script_pubkey) & filter_
                   and not self.is_spent((wtx.txid, n)))

    def _recent(self, min_depth: int = 0) -> Tuple[Optional[Tuple[int, int]], Iterable[WalletTx]]:
        """``(floors, transactions to check in full)``: with the index usable, those mined
        at their lane's floor or below count from its running totals; else (floors None)
        every transaction is checked."""
        if self.coins.usable():
            floors = self.coins.floors(min_depth)
            return floors, self.coins.recent(floors)
        return None, list(self.txs.values())

    def _deep_sum(self, floors: Optional[Tuple[int, int]], filter_: int) -> int:
        return self.coins.deep_sum(floors, filter_) if floors is not None else 0

    def balance(self, filter_: int = ISMINE_SPENDABLE, min_depth: int = 0) -> int:
        """Core 0.17's GetBalance: available credit of trusted transactions at least
        ``min_depth`` deep (deep ones from the index's running totals)."""
        with self.lock:
            floors, recent = self._recent(min_depth)
            return self._deep_sum(floors, filter_) + sum(
                self.available_credit(w, filter_) for w in recent
                if self.is_trusted(w) and self.depth(w) >= min_depth)

    def unconfirmed_balance(self, filter_: int = ISMINE_SPENDABLE) -> int:
        with self.lock:
            _, recent = self._recent()
            return sum(self.available_credit(w, filter_) for w in recent
                       if not self.is_trusted(w) and self.depth(w) == 0 and self.in_mempool(w))

    def immature_balance(self, filter_: int = ISMINE_SPENDABLE) -> int:
        with self.lock:
            total = 0
            _, recent = self._recent()
            for wtx in recent:
                if self.blocks_to_maturity(wtx) > 0 and self.depth(wtx) > 0:
                    total += self.credit(wtx.tx, filter_)
            return total

    def legacy_balance(self, filter_: int, min_depth: int) -> int:
        """Core 0.17's GetLegacyBalance (sendmany's funds check); deep transactions from the
        index's running totals."""
        with self.lock:
            tip = self.chain.tip
            floors, recent = self._recent(min_depth)
            total = self.coins.deep_legacy(floors, filter_) if floors is not None else 0
            for wtx in recent:
                depth = self.depth(wtx)
                if depth < 0 or self.blocks_to_maturity(wtx) > 0 or not is_final_tx(
                        wtx.tx, tip.height + 1, tip.median_time_past()):
                    continue
                total += self.legacy_amounts(wtx.tx, (filter_,), depth >= min_depth)[0]
            return total

    def debits_by_mine(self, tx: Transaction) -> Dict[int, int]:
        """What ``tx`` spends of the wallet's outputs, by their is_mine value."""
        debits = {ISMINE_SPENDABLE: 0, ISMINE_WATCH_ONLY: 0}
        if not tx.is_coinbase():
            txs = self.txs
            for txin in tx.vin:
                prev = txs.get(txin.prevout.txid)
                if prev is not None and txin.prevout.n < len(prev.tx.vout):
                    out = prev.tx.vout[txin.prevout.n]
                    mine = self.is_mine(out.script_pubkey)
                    if mine != ISMINE_NO:
                        debits[mine] += out.value
        return debits

    def legacy_amounts(self, tx: Transaction, filters: Iterable[int], counted: bool,
                       debits: Optional[Dict[int, int]] = None) -> List[int]:
        """``tx``'s share of the legacy balance for each filter: its own outputs other than
        change (when ``counted``: deep enough) less what it spends of ours beyond its change."""
        if debits is None:
            debits = self.debits_by_mine(tx)
        outputs = [(self.is_mine(out.script_pubkey), out) for out in tx.vout]
        shares = []
        for filter_ in filters:
            debit = sum(value for mine, value in debits.items() if mine & filter_)
            outgoing = debit > 0
            total = 0
            for mine, out in outputs:
                if outgoing and mine != ISMINE_NO and self.is_change(out):
                    debit -= out.value
                elif mine & filter_ and counted:
                    total += out.value
            shares.append(total - debit if outgoing else total)
        return shares

    def available_coins(self, only_safe: bool = True, min_depth: int = 0,
                        max_depth: int = 9999999, include_watch_only: bool = False) -> List[Output]:
        """Core's AvailableCoins: unspent, unlocked, mature outputs of the wallet (of the
        transactions the index holds outputs of)."""
        with self.lock:
            coins: List[Output] = []
            if self.coins.generation != self.keys.generation:
                self.coins.rebuild()
            for wtx in self.coins.live():
                coins.extend(self.coins_of(wtx, self.coins.by_tx[wtx.txid], only_safe, min_depth,
                                           max_depth))
            return coins

    def coins_of(self, wtx: WalletTx, outputs: Iterable[int], only_safe: bool = True,
                 min_depth: int = 0, max_depth: int = 9999999) -> List[Output]:
        """The available coins among ``wtx``'s ``outputs`` (Core's AvailableCoins' rules)."""
        tip = self.chain.tip
        if not is_final_tx(wtx.tx, tip.height + 1, tip.median_time_past()):
            return []
        if self.blocks_to_maturity(wtx) > 0:
            return []
        depth = self.depth(wtx)
        if depth < 0 or (depth == 0 and not self.in_mempool(wtx)):
            return []
        safe = self.is_trusted(wtx)
        if only_safe and not safe:
            return []
        if not min_depth <= depth <= max_depth:
            return []
        coins: List[Output] = []
        for n in sorted(outputs):
            outpoint = (wtx.txid, n)
            if outpoint in self.locked_coins or self.is_spent(outpoint):
                continue
            mine = self.is_mine(wtx.tx.vout[n].script_pubkey)
            if mine == ISMINE_NO:
                continue
            spendable = bool(mine & ISMINE_SPENDABLE)
            coins.append(Output(wtx, n, depth, spendable, spendable, safe))
        return coins

    def coins_by_outpoint(self, only_safe: bool = True, min_depth: int = 0,
                          max_depth: int = 9999999) -> Iterator[Output]:
        """:meth:`available_coins` in outpoint order, lazily (listunspent stops at its count).

        The caller holds :attr:`lock` while it iterates.
        """
        if self.coins.generation != self.keys.generation:
            self.coins.rebuild()
        txid, group = None, []
        for outpoint in self.coins.by_outpoint:  # not changed while the caller holds the lock
            if outpoint[0] != txid:
                if group:
                    yield from self.coins_of(self.txs[txid], group, only_safe, min_depth,
                                             max_depth)
                txid, group = outpoint[0], []
            group.append(outpoint[1])
        if group:
            yield from self.coins_of(self.txs[txid], group, only_safe, min_depth, max_depth)

    def lock_coins(self, outpoints: Iterable[Outpoint], lock: bool = True) -> None:
        """lockunspent: lock (or unlock) coins for coin selection."""
        with self.lock:
            outpoints = list(outpoints)
            if lock:
                self.locked_coins.update(outpoints)
            else:
                self.locked_coins.difference_update(outpoints)
            self.coins.lock_changed(outpoints)

    def unlock_all_coins(self) -> None:
        with self.lock:
            self.lock_coins(list(self.locked_coins), lock=False)

    # ------------------------------------------------------------------ addresses

    def new_address(self, label: str = "") -> str:
        """getnewaddress: the next receiving key of the pool, labelled."""
        with self.lock:
            pubkey = self.keys.take_from_pool(internal=False)
            address = encode_address(Destination("pubkeyhash", hash160(pubkey)), self.params)
            self.set_name(address, label, PURPOSE_RECEIVE)
            return address

    def new_change_script(self) -> bytes:
        """A fresh change key's P2PKH script (getrawchangeaddress, transaction change)."""
        with self.lock:
            pubkey = self.keys.take_from_pool(internal=True)
            return p2pkh_script(hash160(pubkey))

    def tx_count(self) -> int:
        return len(self.txs)

    def info(self) -> Dict[str, Any]:
        """The figures getwalletinfo reports (amounts in base units)."""
        with self.lock:
            external, internal, oldest = self.keys.pool_counts()
            return {"walletname": self.name, "walletversion": WALLET_VERSION,
                    "balance": self.balance(), "unconfirmed_balance": self.unconfirmed_balance(),
                    "immature_balance": self.immature_balance(), "txcount": len(self.txs),
                    "keypoololdest": oldest, "keypoolsize": external,
                    "keypoolsize_hd_internal": internal,
                    "unlocked_until": self.keys.unlocked_until if self.keys.encrypted else None,
                    "paytxfee": self.pay_tx_fee,
                    "hdmasterkeyid": self.keys.hd_master_key_id}

    def ordered_txs(self) -> Iterable[WalletTx]:
        return sorted(self.txs.values(), key=lambda w: w.order_pos)

    def maybe_unconfirmed(self) -> List[WalletTx]:
        """By order_pos, the transactions that may be unconfirmed: with the coin index
        usable, those it does not place (it places every one mined on the active chain)."""
        with self.lock:
            if not self.coins.usable():
                return list(self.ordered_txs())
            return sorted((self.txs[txid] for txid in self.coins.other),
                          key=lambda w: w.order_pos)

    def newest_first(self) -> Iterator[WalletTx]:
        """Transactions by descending order_pos, lazily (coin.wallet.txstore)."""
        return self.txs.newest_first()

