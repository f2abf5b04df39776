"""What RPC and REST see of the chain: reads, submissions and mining, as Deferreds.

Handlers never touch the chain state's writer directly: anything that reads
the UTXO set or changes state goes through the validation service's single
worker thread; block reads from disk run in the reactor's thread pool.  Pure
index reads (tip, heights, entries) are served from memory in the caller's
thread, from one :class:`~coin.chain.snapshot.ChainSnapshot` per request
(:meth:`ChainAccess.snapshot`), so they never see a reorg half done.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, List, NamedTuple, Optional, Tuple

from twisted.internet.defer import Deferred, inlineCallbacks

from coin.chain.chainstate import ChainState
from coin.chain.clock import NodeClock
from coin.chain.ibd import in_initial_download
from coin.chain.index import BlockIndexEntry
from coin.chain.service import ValidationService
from coin.chain.snapshot import BlockUnavailable, ChainSnapshot
from coin.chain.warnings import NodeWarnings
from coin.chainparams import ChainParams
from coin.primitives.block import HEADER_SIZE as BLOCK_HEADER_SIZE, Block
from coin.primitives.serialize import ByteReader, DeserializationError
from coin.primitives.transaction import Transaction
from coin.threads import ThreadRunner


class TipWaiters:
    """Deferreds waiting for the tip to satisfy a condition (waitfor* RPCs)."""

    def __init__(self) -> None:
        self._waiting: List[Tuple[Callable[[BlockIndexEntry], bool], Deferred]] = []

    def wait(self, condition: Callable[[BlockIndexEntry], bool]) -> Deferred:
        d: Deferred = Deferred(lambda d: self._cancel(d))
        self._waiting.append((condition, d))
        return d

    def _cancel(self, d: Deferred) -> None:
        self._waiting = [(c, w) for c, w in self._waiting if w is not d]

    def tip_changed(self, entry: BlockIndexEntry) -> None:
        ready = [(c, d) for c, d in self._waiting if c(entry)]
        self._waiting = [(c, d) for c, d in self._waiting if not c(entry)]
        for _, d in ready:
            d.callback(entry)


class TxPlace(NamedTuple):
    """A transaction of the active chain as stored: its block and its serialized bytes."""

    entry: BlockIndexEntry
    raw: bytes
    #: Found through -txindex: while the block stays on the active chain, the index keeps
    #: finding it there (its rows are removed only with the block), whatever is spent.
    indexed: bool
    #: Found through the UTXO set: the tip it was the set of (the same answer while that
    #: tip stays: only connecting or disconnecting a block changes the set).
    utxo_tip: Optional[bytes] = None


@dataclass(frozen=True)
class ChainStatus:
    """The node's state around a chain snapshot, as the chain-info object shows it."""

    initial_block_download: bool
    #: Bytes of block and undo files on disk (Core's CalculateCurrentUsage).
    size_on_disk: int
    #: -prune is on (manual or automatic); then the lowest height with block data.
    pruned: bool
    prune_height: Optional[int]
    #: The automatic pruning target in bytes; None with -prune=1 (manual only) or no pruning.
    prune_target: Optional[int]
    warnings: str


class ChainAccess:
    """The chain facade handed to RPC methods and the REST resource."""

    def __init__(self, service: ValidationService, clock: NodeClock, reactor: Any,
                 in_thread: Optional[ThreadRunner] = None) -> None:
        self._service = service
        #: Runs blocking reads off the reactor (the node's pool; see coin.threads).
        self.in_thread = in_thread if in_thread is not None else ThreadRunner()
        self.clock = clock
        self._reactor = reactor
        self.tip_waiters = TipWaiters()
        service.subscribe(self.tip_waiters)
        #: The transaction index (coin.index.txindex.TxIndex) when -txindex is on.
        self.txindex: Any = None
        #: The memory pool (coin.mempool.pool.Mempool) blocks are filled from, if any.
        self.mempool: Any = None
        #: -printpriority: block assembly logs each selected transaction's fee rate.
        self.print_priority = False
        #: The node's warnings (getblockchaininfo, getnetworkinfo, getmininginfo, REST).
        self.warnings = NodeWarnings()
        #: Whether the node is in initial block download: the node sets the block sync's
        #: latched test; without one, the test itself on the published chain.
        self.is_initial_block_download: Callable[[], bool] = self._initial_download

    def status(self, view: ChainSnapshot) -> ChainStatus:
        """What getblockchaininfo and REST /chaininfo show beyond ``view`` itself."""
        state = self.state
        pruned = state.prune_mode
        return ChainStatus(
            initial_block_download=self.is_initial_block_download(),
            size_on_disk=state.store.file_usage(), pruned=pruned,
            prune_height=state.prune_height(view) if pruned else None,
            prune_target=state.prune_target if pruned and state.prune_target else None,
            warnings=self.warnings.text())

    def status_inputs(self) -> Tuple[Any, ...]:
        """What :meth:`status` reads besides the snapshot and the settings fixed at start,
        in a few calls: with the same snapshot, equal inputs give an equal status."""
        state = self.state
        return (self.is_initial_block_download(), state.store.file_usage(),
                state.prune_generation, self.warnings.text())

    def _initial_download(self) -> bool:
        view = self.snapshot()
        return in_initial_download(view.tip, view.best_header, self.clock.now())

    @property
    def state(self) -> ChainState:
        """The in-memory index and active chain (read only from here)."""
        return self._service.chainstate

    def snapshot(self) -> ChainSnapshot:
        """The chain as of the writer's last consistent state: take one per request."""
        return self._service.chainstate.published

    @property
    def reactor(self) -> Any:
        """The reactor: handlers use it as their clock (timeouts, delays)."""
        return self._reactor

    @property
    def params(self) -> ChainParams:
        return self.state.params

    def read_block(self, entry: BlockIndexEntry) -> Deferred:
        """Fires with the :class:`Block` stored for ``entry``."""
        return self.in_thread(self.state.read_block, entry)

    def read_undo(self, entry: BlockIndexEntry) -> Deferred:
        return self.in_thread(self.state.read_undo, entry)

    def get_coins(self, keys: List[Tuple[bytes, int]]) -> Deferred:
        """Fires with ``[Coin | None]`` for ``(txid, n)`` keys, from the UTXO set."""
        return self._service.call(lambda cs: cs.store.coins.fetch(keys))

    @inlineCallbacks
    def get_transaction(self, txid: bytes):
        """Fires with ``(Transaction, entry)`` for ``txid``, or None.

        The mempool answers first (entry None), as Core's GetTransaction; then
        :meth:`locate_transaction`.
        """
        pool = self.mempool
        if pool is not None:
            entry = pool.get(txid)
            if entry is not None:
                return (entry.tx, None)
        place = yield self.locate_transaction(txid)
        if place is None:
            return None
        return (Transaction.deserialize(place.raw), place.entry)

    @inlineCallbacks
    def locate_transaction(self, txid: bytes):
        """Fires with the :class:`TxPlace` of ``txid`` in a block of the active chain, or
        None (the mempool is not looked at).

        The transaction index when -txindex is on; otherwise (or while the index has
        not reached the block yet) the transaction is found through an unspent output
        of it in the UTXO set, as Core 0.17 does without -txindex.  The bytes are the
        stored ones, cut out of the block (REST sends them as they are).
        """
        state = self.state
        if self.txindex is not None:
            pos = yield self.in_thread(state.store.txindex_lookup, txid)
            if pos is not None:
                view = self.snapshot()
                entry = view.lookup(pos.block_hash)
                if entry is not None and view.contains(entry):
                    raw = yield self.in_thread(_raw_tx_at, state, entry, pos.tx_offset, txid)
                    if raw is not None:
                        return TxPlace(entry, raw, True)
        tip, found = yield self._service.call(_unspent_at_tip, txid)
        if found is None:
            return None
        raw = yield self.in_thread(_raw_tx_in, state, found, txid)
        return TxPlace(found, raw, False, tip) if raw is not None else None

    def block_of_unspent(self, txid: bytes) -> Deferred:
        """Fires with the active-chain entry of the block holding ``txid`` when an output of
        it is unspent (Core's AccessByTxid), else None."""
        return self._service.call(_entry_of_unspent, txid)

    def submit_block(self, block: Block) -> Deferred:
        return self._service.submit_block(block)

    def submit_header(self, header) -> Deferred:
        return self._service.submit_header(header)

    def submit_headers(self, headers: List[Any]) -> Deferred:
        return self._service.submit_headers(headers)

    def invalidate_block(self, block_hash: bytes) -> Deferred:
        return self._service.invalidate_block(block_hash)

    def reconsider_block(self, block_hash: bytes) -> Deferred:
        return self._service.reconsider_block(block_hash)

    def precious_block(self, block_hash: bytes) -> Deferred:
        return self._service.precious_block(block_hash)

    def call(self, f: Callable[..., Any], *args: Any) -> Deferred:
        """Run ``f(chainstate, *args)`` on the writer thread."""
        return self._service.call(f, *args)

    def sync_listeners(self) -> Deferred:
        """Fires once chain events published so far reached every listener."""
        return self._service.sync_listeners()

    def wait_for_tip(self, condition: Callable[[BlockIndexEntry], bool]) -> Deferred:
        """Fires with the tip once ``condition(tip)`` holds (at once if it already does)."""
        tip = self.snapshot().tip
        if tip is not None and condition(tip):
            d: Deferred = Deferred()
            d.callback(tip)
            return d
        return self.tip_waiters.wait(condition)


def _entry_of_unspent(chainstate: ChainState, txid: bytes) -> Optional[BlockIndexEntry]:
    """Active-chain block holding ``txid``, found via an unspent output of it."""
    found = chainstate.store.unspent_output_of(txid)
    if found is None:
        return None
    return chainstate.at_height(found[1].height)


def _unspent_at_tip(chainstate: ChainState,
                    txid: bytes) -> Tuple[Optional[bytes], Optional[BlockIndexEntry]]:
    """The tip's hash and :func:`_entry_of_unspent`, in one step of the chain's thread."""
    tip = chainstate.tip
    return (tip.hash if tip is not None else None), _entry_of_unspent(chainstate, txid)


def _raw_tx_at(state: ChainState, entry: BlockIndexEntry, offset: int,
               txid: bytes) -> Optional[bytes]:
    """The bytes of the transaction at ``offset`` inside ``entry``'s block, if it is ``txid``
    (read to find where it ends and check its id; nothing is re-serialized).  None too
    when the block cannot be read (pruned): Core's GetTransaction then finds nothing."""
    try:
        reader = ByteReader(state.read_raw_block(entry), offset)
        return _next_tx_bytes(reader, txid)
    except (BlockUnavailable, DeserializationError):
        return None


def _raw_tx_in(state: ChainState, entry: BlockIndexEntry, txid: bytes) -> Optional[bytes]:
    """The bytes of transaction ``txid`` in ``entry``'s block (a walk from its first one);
    None as :func:`_raw_tx_at`."""
    try:
        reader = ByteReader(state.read_raw_block(entry), BLOCK_HEADER_SIZE)
        for _ in range(reader.read_compact_size()):
            raw = _next_tx_bytes(reader, txid)
            if raw is not None:
                return raw
    except (BlockUnavailable, DeserializationError):
        pass
    return None


def _next_tx_bytes(reader: ByteReader, txid: bytes) -> Optional[bytes]:
    """The stored bytes of the transaction at ``reader``'s offset (the reader moves past
    it) when it is ``txid``: a slice of the block, not a re-serialization."""
    start = reader.offset
    tx = Transaction.read(reader)
    return reader.data[start:reader.offset] if tx.txid == txid else None
