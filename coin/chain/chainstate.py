"""The chain state machine: block index, active chain, connect/disconnect, reorgs.

``ChainState`` is synchronous and single-writer: the validation service runs
every mutating call on one worker thread.  It owns the in-memory block index
and decides, from the stored blocks, which chain is best.

Durability: a block's data is fsync'd to the block files before any event
about it is published; the database (index, UTXO set, best block) is flushed
atomically when the coins cache outgrows ``-dbcache`` and at shutdown.  On
start, blocks found in the block files beyond what the database knows are
re-accepted, so nothing reported as connected is ever lost.
"""

from __future__ import annotations

import contextlib
import threading
from concurrent.futures import ThreadPoolExecutor
import time as _time
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Set, Tuple

from twisted.logger import Logger

from coin.chain.clock import NodeClock
from coin.chain.events import (
    ChainEvent, BlockConnected, BlockDisconnected, InvalidChainFound, TipChanged,
)
from coin.chain.index import (
    BLOCK_FAILED_CHILD,
    BLOCK_FAILED_MASK,
    BLOCK_FAILED_VALID,
    BLOCK_HAVE_DATA,
    BLOCK_HAVE_UNDO,
    BLOCK_VALID_MASK,
    BLOCK_VALID_SCRIPTS,
    BLOCK_VALID_TRANSACTIONS,
    BLOCK_VALID_TREE,
    BlockIndexEntry,
)
from coin.chainparams import MAX_BLOCK_SIGOPS, ChainParams
from coin.consensus.block_check import check_block, check_block_header
from coin.consensus.errors import ValidationError
from coin.consensus.pow import block_proof
from coin.consensus.softforks import (
    bip34_in_force,
    check_block_contextual,
    check_header_contextual,
    locktime_flags,
    script_flags_for_block,
)
from coin.consensus.subsidy import block_subsidy
from coin.consensus.tx_check import (
    LOCKTIME_VERIFY_SEQUENCE,
    check_tx_inputs,
    legacy_sigops,
    p2sh_sigops,
    sequence_locks,
)
from coin.consensus.versionbits import VersionBitsCache
from coin.primitives.block import Block, BlockHeader
from coin.primitives.coin import BlockUndoWriter, Coin, deserialize_block_undo
from coin.primitives.script import is_unspendable
from coin.primitives.serialize import DeserializationError
from coin.primitives.transaction import Transaction
from coin.script.flags import SCRIPT_VERIFY_P2SH
from coin.chain import pruning
from coin.chain.workers import ScriptCheckPool, ScriptChecks
from coin.chain.snapshot import (
    NOT_ON_DISK_MESSAGE,
    PRUNED_MESSAGE,
    BlockUnavailable,
    ChainSnapshot,
    find_fork,
)
from coin.storage.blockindex import IndexRow
from coin.storage.chainstore import ChainStore, CommittedIndex
from coin.storage.coins import CoinsCache
from coin.storage.errors import CorruptionError
from coin.storage.flatfile import WouldBlock
from coin.storage.utxodb import MAX_FETCH_BATCH
from coin.threads import ThreadRunner

log = Logger()

#: Core: -assumevalid skips scripts only under more than two weeks of proof-equivalent time.
ASSUME_VALID_BURIAL = 60 * 60 * 24 * 7 * 2
#: Serialized bytes of accepted blocks kept in memory until they connect (parsed, they take
#: a few times this); the oldest go first past it.
HELD_BLOCKS_BYTES = 8 << 20
#: -reindex activates the chain read back so far every this many blocks (and before a block
#: that would push the held ones past HELD_BLOCKS_BYTES, so none is dropped unconnected).
REINDEX_ACTIVATE_BLOCKS = 1000
#: Block connect looks up the coins its inputs spend this many at a time (one database
#: query), just before it needs them.
FETCH_INPUTS = MAX_FETCH_BATCH
#: The thread that fsyncs the block file while its blocks connect (activate_best_chain).
_EARLY_SYNC = ThreadPoolExecutor(max_workers=1, thread_name_prefix="block-file-sync")


class ChainState:
    """Block index + active chain + UTXO set, kept consistent with the store."""

    def __init__(self, params: ChainParams, store: ChainStore,
                 clock: Optional[NodeClock] = None,
                 publish: Optional[Callable[[List[ChainEvent]], None]] = None,
                 in_thread: Optional[ThreadRunner] = None) -> None:
        self.params = params
        self.store = store
        #: Runs snapshot block reads off the reactor (the node's pool; see coin.threads).
        self.in_thread = in_thread if in_thread is not None else ThreadRunner()
        self.clock = clock or NodeClock()
        self._publish = publish or self._publish_now
        self.index: Dict[bytes, BlockIndexEntry] = {}
        #: The active chain, by height (the writer's; readers use :attr:`published`).
        self.chain: List[BlockIndexEntry] = []
        #: Whether a published snapshot shares ``chain`` (then it is copied before a pop).
        self._chain_shared = False
        #: Held while a block's position is read and its bytes fetched, and while pruning
        #: takes positions away: a read sees the block or the pruned error, never other bytes.
        self._block_data_lock = threading.Lock()
        self.best_header: Optional[BlockIndexEntry] = None
        self._candidates: Set[BlockIndexEntry] = set()
        #: Blocks with data whose parent has no data yet, keyed by the parent.
        self._unlinked: Dict[BlockIndexEntry, List[BlockIndexEntry]] = {}
        self._dirty: Set[BlockIndexEntry] = set()
        self._next_sequence = 1
        self._precious_sequence = -1
        self._last_precious_work = 0
        self.versionbits = VersionBitsCache()
        self._listeners: List[object] = []
        #: ``(entry, ValidationError)`` for blocks that failed in the last activation.
        self.connect_failures: List[Tuple[BlockIndexEntry, ValidationError]] = []
        #: The most-work block known invalid (Core's pindexBestInvalid): a block that failed
        #: itself, or the tip of a chain that failed to activate. The invalid-chain warning
        #: compares it with the tip (coin.chain.warnings).
        self.best_invalid: Optional[BlockIndexEntry] = None
        #: ``-prune`` mode (manual or automatic) and the automatic target in bytes (0: none).
        self.prune_mode = False
        self.prune_target = 0
        self._prune_checked_file: Optional[int] = None
        self._prune_height_cache: Optional[Tuple[int, int]] = None
        self._prune_generation = 0
        self._marked_pruned = False
        #: The chain as of the last consistent state (see coin.chain.snapshot).
        self.published = ChainSnapshot([], None, self)
        #: Told the seconds each block took to connect (the node's metrics), on this thread.
        self.connect_observer: Optional[Callable[[float], None]] = None
        #: Masternode payments (design.md §6), set by the masternode service so consensus
        #: code imports none of it: ``payee_check(height, coinbase)`` is False for a block
        #: breaking the payee rule (``bad-cb-payee``); ``block_payee(height)`` is the miner's
        #: ``(script, amount)`` for coinbase output 1, or None.  Both run on the worker.
        self.payee_check: Optional[Callable[[int, Transaction], bool]] = None
        self.block_payee: Optional[Callable[[int], Optional[Tuple[bytes, int]]]] = None
        #: Superblocks (design.md §6), set by the governance service: ``superblock_check(
        #: height, coinbase)`` is how much the coinbase may pay above subsidy and fees, None
        #: if it breaks the superblock rule; ``superblock_payments(height)`` the miner's
        #: extra ``(script, amount)`` outputs.  Both run on the worker.
        self.superblock_check: Optional[Callable[[int, Transaction], Optional[int]]] = None
        self.superblock_payments: Optional[Callable[[int], Sequence[Tuple[bytes, int]]]] = None
        #: -par's worker processes (started and stopped by the validation service); None or
        #: no workers: scripts are checked on the writer thread alone.
        self.script_workers: Optional[ScriptCheckPool] = None
        #: -assumevalid: the block whose ancestors' scripts may go unchecked (None: check all).
        self.assume_valid: Optional[bytes] = params.default_assume_valid
        #: Blocks accepted and not connected yet, with their legacy sigop counts, oldest
        #: first: connect takes them from here instead of reading and parsing them back
        #: (a P2P batch or a -reindex run is accepted before one activation connects it).
        self._held_blocks: Dict[BlockIndexEntry, Tuple[Block, List[int]]] = {}
        self._held_bytes = 0
        #: Called with the chain state after each connected block (the IBD progress log,
        #: coin.chain.ibd.ProgressLog); cheap between its lines.
        self.progress: Optional[Callable[["ChainState"], None]] = None

    # ------------------------------------------------------------------ queries

    @property
    def tip(self) -> Optional[BlockIndexEntry]:
        return self.chain[-1] if self.chain else None

    @property
    def height(self) -> int:
        return len(self.chain) - 1

    def contains(self, entry: BlockIndexEntry) -> bool:
        """True when ``entry`` is on the active chain."""
        return entry.height < len(self.chain) and self.chain[entry.height] is entry

    def at_height(self, height: int) -> Optional[BlockIndexEntry]:
        if 0 <= height < len(self.chain):
            return self.chain[height]
        return None

    def next_on_chain(self, entry: BlockIndexEntry) -> Optional[BlockIndexEntry]:
        if self.contains(entry):
            return self.at_height(entry.height + 1)
        return None

    def lookup(self, block_hash: bytes) -> Optional[BlockIndexEntry]:
        return self.index.get(block_hash)

    def read_block(self, entry: BlockIndexEntry) -> Block:
        """The stored block; BlockUnavailable if it has no data or was pruned (any thread)."""
        return Block.deserialize(self.read_raw_block(entry))

    def read_raw_block(self, entry: BlockIndexEntry, wait: bool = True) -> bytes:
        """The serialized block, read under the lock pruning takes to drop positions.

        ``wait=False``: WouldBlock instead of waiting for that lock or the disk (a caller
        on the reactor thread then hops to a thread)."""
        if not self._block_data_lock.acquire(blocking=wait):
            raise WouldBlock("pruning holds the block files")
        try:
            if not entry.have_data():
                raise BlockUnavailable(PRUNED_MESSAGE if self.is_pruned_block(entry)
                                       else NOT_ON_DISK_MESSAGE, entry.hash)
            return self.store.read_block(entry.file_no, entry.data_pos, wait)
        finally:
            self._block_data_lock.release()

    def read_undo(self, entry: BlockIndexEntry) -> List[List[Coin]]:
        """The block's undo data; BlockUnavailable once pruned (any thread)."""
        with self._block_data_lock:
            if not entry.status & BLOCK_HAVE_UNDO:
                raise BlockUnavailable(PRUNED_MESSAGE if self.have_pruned
                                       else NOT_ON_DISK_MESSAGE, entry.hash)
            raw = self.store.read_undo(entry.undo_file, entry.undo_pos, entry.hash)
        return deserialize_block_undo(raw)

    # ----------------------------------------------------------- pruning

    def configure_pruning(self, prune_mode: bool, target_bytes: int = 0) -> None:
        """Enable ``-prune``: manual only (target 0) or automatic to ``target_bytes``."""
        self.prune_mode = prune_mode
        self.prune_target = target_bytes if prune_mode else 0

    @property
    def have_pruned(self) -> bool:
        """Whether block data was ever pruned from this data directory.

        True from the moment entries lose their data (as Core's fHavePruned, set
        before the flush), so a read losing the race to the first prune says "pruned".
        """
        return self._marked_pruned or self.store.have_pruned()

    @property
    def prune_generation(self) -> int:
        """Bumped each time blocks lose their data (after their entries show it): readers
        keeping something that holds only while blocks keep their data compare it."""
        return self._prune_generation

    def is_pruned_block(self, entry: BlockIndexEntry) -> bool:
        """Core's test: data was stored once (``nTx > 0``), is gone, and the node has pruned."""
        return not entry.have_data() and entry.tx_count > 0 and self.have_pruned

    def prune_height(self, view: Optional[ChainSnapshot] = None) -> Optional[int]:
        """Lowest height from which ``view``'s chain (default: the published one) is stored.

        Readers call it (pruneheight): it walks a snapshot, never the list the writer changes.
        """
        view = view or self.published
        tip = view.tip
        if tip is None:
            return None
        if not self.have_pruned:
            return 0
        # Only pruning moves it (new tips have their data): walk the chain once per prune.
        cached = self._prune_height_cache
        if cached is not None and cached[0] == self._prune_generation and cached[1] <= tip.height:
            return cached[1]
        height = pruning.prune_height(view)
        if height is not None:
            self._prune_height_cache = (self._prune_generation, height)
        return height

    def prune_manual(self, height: int) -> int:
        """Prune files holding only blocks at or below ``height`` (pruneblockchain).

        Keeps the last ``MIN_BLOCKS_TO_KEEP`` blocks; returns the height used.
        """
        tip = self.tip
        if tip is None:
            return height
        height = min(height, tip.height - pruning.MIN_BLOCKS_TO_KEEP)
        self._flush(manual_prune_height=height)
        return height

    def _prune_due(self) -> bool:
        """Core checks when a new block file is started: usage over target in a new file."""
        if not self.prune_target:
            return False
        current = self.store.current_files()[0]
        if current == self._prune_checked_file:
            return False
        return self.store.file_usage() >= self.prune_target

    def adjusted_time(self) -> int:
        return self.clock.adjusted_time()

    find_fork = staticmethod(find_fork)

    def chain_tips(self) -> List[BlockIndexEntry]:
        """Entries with no known child (getchaintips), the active tip included."""
        has_child = {e.prev for e in self.index.values() if e.prev is not None}
        tips = [e for e in self.index.values() if e not in has_child]
        if self.tip is not None and self.tip not in tips:
            tips.append(self.tip)
        return tips

    def set_publisher(self, publish: Callable[[List[ChainEvent]], None]) -> None:
        """Route events elsewhere (the service hands them to the reactor thread)."""
        self._publish = publish

    def subscribe(self, listener: object) -> None:
        """Register for ``block_connected``/``block_disconnected``/``tip_changed`` calls."""
        self._listeners.append(listener)

    def unsubscribe(self, listener: object) -> None:
        self._listeners.remove(listener)

    def _publish_now(self, events: List[ChainEvent]) -> None:
        deliver(self._listeners, events)

    # ----------------------------------------------------------- start-up

    def load(self, reindex: bool = False, reindex_chainstate: bool = False) -> None:
        """Load the index, recover from the block files, and activate the best chain."""
        if reindex:
            self.store.wipe_index_and_chainstate()
            self.store.set_reindexing(True)
        elif reindex_chainstate:
            self.store.wipe_chainstate()
        self._load_index()
        if reindex_chainstate:
            self._reset_chainstate_status()
        best = self.store.best_block()
        self._set_tip_from_marker(best)
        resume_reindex = self.store.is_reindexing()
        self._replay_block_files(full=resume_reindex)
        if resume_reindex:
            self.store.set_reindexing(False)
        if self.params.genesis.hash not in self.index:
            self.accept_block(self.params.genesis)
        self.activate_best_chain()
        self.flush()

    def load_committed(self, committed: CommittedIndex) -> None:
        """Read-only start (a front end): the index and tip as the writer last committed
        them (a full read), published as the snapshot; nothing replayed, activated or written."""
        self._load_index(committed.rows)
        self._set_tip_from_marker(committed.best)
        self._publish_snapshot()

    def apply_committed(self, committed: CommittedIndex) -> None:
        """A front end's incremental reload: only the rows the writer changed since the last
        load (new blocks; status, validity or file positions of known ones), so the work
        grows with the change, not with the index.  Gives what a full load would."""
        changed: List[BlockIndexEntry] = []
        failures_changed = False
        for row in committed.rows:
            entry = self.index.get(row.hash)
            if entry is None:
                changed.append(self._entry_from_row(row))
                continue
            failures_changed |= bool((entry.status ^ row.status) & BLOCK_FAILED_MASK)
            pruned = (entry.status ^ row.status) & (BLOCK_HAVE_DATA | BLOCK_HAVE_UNDO)
            self._copy_row(entry, row)
            if pruned:
                # Bumped once the entry has changed: a reader seeing the new generation
                # sees the entry without its data (prune_generation).
                self._prune_generation += 1
            changed.append(entry)
        self._derive_from(changed, rescan=failures_changed)
        self._set_tip_from_marker(committed.best)
        self._prune_candidates()
        self._publish_snapshot()

    def _load_index(self, rows: Optional[List[IndexRow]] = None) -> None:
        """A full load into an empty index: one pass over the rows in height order (what
        :meth:`_entry_from_row` and :meth:`_derive_from` do, without a second sort and
        per-row calls: a front end's first load of a long chain is mostly this loop).
        ``rows`` come parents first (by height), as the store reads them."""
        rows = self.store.load_block_index() if rows is None else rows
        index = self.index
        link, note = self._link_chain_tx, self._note_loaded
        for row in rows:
            height = row.height
            prev = index.get(row.prev_hash) if height > 0 else None
            if height > 0 and prev is None:
                raise CorruptionError("block index is missing the parent of %s"
                                      % row.hash[::-1].hex())
            entry = BlockIndexEntry(row.hash, height, prev, row.version, row.merkle_root,
                                    row.time, row.bits, row.nonce, row.chainwork)
            entry.status = row.status
            entry.tx_count = row.tx_count
            entry.file_no, entry.data_pos = row.file_no, row.data_pos
            entry.undo_file, entry.undo_pos = row.undo_file, row.undo_pos
            entry.sequence_id = row.sequence_id
            index[entry.hash] = entry
            link(entry)
            note(entry)
        if rows:
            self._next_sequence = max(self._next_sequence,
                                      max(row.sequence_id for row in rows) + 1)

    def _entry_from_row(self, row: IndexRow) -> BlockIndexEntry:
        """Add the entry of a stored row (its parent already loaded)."""
        prev = self.index.get(row.prev_hash) if row.height > 0 else None
        if row.height > 0 and prev is None:
            raise CorruptionError("block index is missing the parent of %s"
                                  % row.hash[::-1].hex())
        entry = BlockIndexEntry(row.hash, row.height, prev, row.version, row.merkle_root,
                                row.time, row.bits, row.nonce, row.chainwork)
        self._copy_row(entry, row)
        self._next_sequence = max(self._next_sequence, row.sequence_id + 1)
        self.index[entry.hash] = entry
        return entry

    @staticmethod
    def _copy_row(entry: BlockIndexEntry, row: IndexRow) -> None:
        """The fields a flush can change (chain_tx is derived, not read)."""
        entry.status = row.status
        entry.tx_count = row.tx_count
        entry.file_no, entry.data_pos = row.file_no, row.data_pos
        entry.undo_file, entry.undo_pos = row.undo_file, row.undo_pos
        entry.sequence_id = row.sequence_id

    def _derive_from(self, entries: Iterable[BlockIndexEntry], rescan: bool = False) -> None:
        """Chain tx counts, best header and best invalid block after ``entries`` were loaded;
        ``rescan`` when a block's failure status changed (either may go down: every entry)."""
        if rescan:
            self.best_header = self.best_invalid = None
        for entry in sorted(entries, key=lambda e: e.height):
            self._link_chain_tx(entry)
            if not rescan:
                self._note_loaded(entry)
        if rescan:
            for entry in self.index.values():
                self._note_loaded(entry)

    def _note_loaded(self, entry: BlockIndexEntry) -> None:
        self._update_best_header(entry)
        if entry.status & BLOCK_FAILED_VALID:
            self._note_invalid(entry)

    def _reset_chainstate_status(self) -> None:
        for entry in self.index.values():
            if entry.is_valid(BLOCK_VALID_TRANSACTIONS) and entry.have_data():
                entry.status = ((entry.status & ~(BLOCK_VALID_MASK | BLOCK_HAVE_UNDO))
                                | BLOCK_VALID_TRANSACTIONS)
                self._dirty.add(entry)

    def _set_tip_from_marker(self, best: Optional[bytes]) -> None:
        if best is None:
            self._replace_chain([])
            return
        entry = self.index.get(best)
        if entry is None:
            raise CorruptionError("chainstate best block %s is not in the block index"
                                  % best[::-1].hex())
        self._set_chain(entry)

    def _set_chain(self, tip: BlockIndexEntry) -> None:
        """Make ``tip``'s chain the active one, walking back only to the fork point."""
        added: List[BlockIndexEntry] = []
        walk: Optional[BlockIndexEntry] = tip
        while walk is not None and not self.contains(walk):
            added.append(walk)
            walk = walk.prev
        kept = walk.height + 1 if walk is not None else 0
        if kept == len(self.chain):
            if added:  # one copy: a published snapshot may hold the old list
                self._replace_chain(self.chain + added[::-1])
            return
        self._replace_chain(self.chain[:kept] + added[::-1])

    def _replace_chain(self, chain: List[BlockIndexEntry]) -> None:
        """Give the writer a new list (published snapshots keep theirs)."""
        self.chain = chain
        self._chain_shared = False

    def _publish_snapshot(self) -> None:
        """Let readers see the chain as it is now: call only in a consistent state."""
        published = self.published
        if published.tip is self.tip and published.best_header is self.best_header:
            return
        self._chain_shared = True
        self.published = ChainSnapshot(self.chain, self.best_header, self)

    def _extends_published(self) -> bool:
        """Whether the chain is the published one plus blocks on top (no reorg under way)."""
        published_tip = self.published.tip
        return published_tip is None or self.contains(published_tip)

    def _replay_block_files(self, full: bool) -> None:
        """Re-accept blocks present in the block files but not in the index."""
        start_file, start_pos = 0, 0
        if not full:
            stored = [(e.file_no, e.data_pos) for e in self.index.values() if e.have_data()]
            if stored:
                start_file, start_pos = max(stored)
        waiting: Dict[bytes, List[Tuple[Block, int, int]]] = {}
        total = self.store.block_file_bytes() if full else 0
        started = _time.monotonic()
        count = 0
        for file_no, pos, raw in self.store.scan_blocks(start_file, start_pos):
            try:
                block = Block.deserialize(raw)
            except DeserializationError:
                log.warn("Skipping unreadable block record in file {file} at {pos}",
                         file=file_no, pos=pos)
                continue
            if full and self._held_bytes + len(raw) > HELD_BLOCKS_BYTES:
                self.activate_best_chain()
            existing = self.index.get(block.hash)
            if existing is not None and existing.have_data():
                continue
            if block.header.prev_hash not in self.index and block.hash != self.params.genesis.hash:
                waiting.setdefault(block.header.prev_hash, []).append((block, file_no, pos))
                continue
            pending = [(block, file_no, pos)]
            while pending:
                blk, f, p = pending.pop()
                self._replay_one(blk, f, p)
                count += 1
                pending.extend(waiting.pop(blk.hash, ()))
            if full and count % REINDEX_ACTIVATE_BLOCKS == 0:
                self.activate_best_chain()
                self._log_reindex_progress(file_no, pos, total, count, started)
        if full:
            self.activate_best_chain()
            self._log_reindex_progress(None, 0, total, count, started)

    def _replay_one(self, block: Block, file_no: int, pos: int) -> None:
        try:
            self.accept_block(block, stored_at=(file_no, pos))
        except ValidationError as e:
            log.info("Replayed block {hash} rejected: {reason}",
                     hash=block.hash_hex, reason=str(e))

    def _log_reindex_progress(self, file_no: Optional[int], pos: int, total: int,
                              count: int, started: float) -> None:
        elapsed = max(_time.monotonic() - started, 1e-9)
        done = self.store.bytes_before(file_no, pos) if file_no is not None else total
        percent = 100.0 * done / total if total else 100.0
        log.info("Reindexing: height {height}, {percent:.1f}% of block files, "
                 "{rate:.1f} blocks/s", height=self.height, percent=percent,
                 rate=count / elapsed)

    # ----------------------------------------------------------- accepting

    def accept_header(self, header: BlockHeader) -> BlockIndexEntry:
        """Validate a header and add it to the index (idempotent)."""
        block_hash = header.hash
        entry = self.index.get(block_hash)
        if entry is not None:
            if entry.failed():
                raise ValidationError("duplicate", "block is marked invalid", dos=0)
            return entry
        check_block_header(header, self.params)
        if block_hash == self.params.genesis.hash:
            prev = None
        else:
            prev = self.index.get(header.prev_hash)
            if prev is None:
                raise ValidationError("prev-blk-not-found", "previous block is unknown", dos=10)
            if prev.failed():
                raise ValidationError("bad-prevblk", "previous block is invalid", dos=100)
            check_header_contextual(header, prev, self.params, self.adjusted_time())
        work = (prev.chainwork if prev is not None else 0) + block_proof(header.bits)
        entry = BlockIndexEntry(block_hash, prev.height + 1 if prev is not None else 0, prev,
                                header.version, header.merkle_root, header.time, header.bits,
                                header.nonce, work)
        entry.raise_validity(BLOCK_VALID_TREE)
        self.index[block_hash] = entry
        self._dirty.add(entry)
        self._update_best_header(entry)
        if self.best_header is entry and self._extends_published():
            self._publish_snapshot()
        return entry

    def accept_headers(self, headers: Sequence[BlockHeader]) -> List[BlockIndexEntry]:
        """Accept a run of headers (a P2P ``headers`` message) in one worker turn.

        Stops at the first invalid one: the ValidationError gets ``index`` (its
        position) and ``accepted`` (the entries before it) attributes.
        """
        accepted: List[BlockIndexEntry] = []
        for index, header in enumerate(headers):
            try:
                accepted.append(self.accept_header(header))
            except ValidationError as error:
                error.index = index
                error.accepted = accepted
                raise
        return accepted

    def accept_block(self, block: Block,
                     stored_at: Optional[Tuple[int, int]] = None) -> BlockIndexEntry:
        """Check and store a block; it becomes a candidate for the best chain.

        Invalid blocks are never written.  Call :meth:`activate_best_chain`
        afterwards (``process_block`` does both).
        """
        entry = self.accept_header(block.header)
        if entry.have_data():
            return entry
        try:
            legacy_sigop_counts = check_block(block, self.params)
            if entry.prev is not None:
                check_block_contextual(block, entry.prev, self.params, self.versionbits)
        except ValidationError as e:
            if not e.corruption_possible:
                self._mark_failed(entry)
            raise
        if stored_at is None:
            stored_at = self.store.write_block(block.serialize(), entry.height, entry.time)
        entry.file_no, entry.data_pos = stored_at
        entry.tx_count = len(block.txs)
        entry.status |= BLOCK_HAVE_DATA
        entry.raise_validity(BLOCK_VALID_TRANSACTIONS)
        entry.sequence_id = self._next_sequence
        self._next_sequence += 1
        self._dirty.add(entry)
        self._link_chain_tx(entry)
        self._hold(entry, block, legacy_sigop_counts)
        return entry

    def _hold(self, entry: BlockIndexEntry, block: Block, legacy_sigop_counts: List[int]) -> None:
        """Keep an accepted block for its connect, within HELD_BLOCKS_BYTES."""
        self._held_blocks[entry] = (block, legacy_sigop_counts)
        self._held_bytes += block.size
        while self._held_bytes > HELD_BLOCKS_BYTES and len(self._held_blocks) > 1:
            self._release(next(iter(self._held_blocks)))

    def _release(self, entry: BlockIndexEntry) -> Optional[Tuple[Block, List[int]]]:
        held = self._held_blocks.pop(entry, None)
        if held is not None:
            self._held_bytes -= held[0].size
        return held

    def process_block(self, block: Block) -> BlockIndexEntry:
        """Accept a block and make the most-work chain active (submitblock's path)."""
        entry = self.accept_block(block)
        self.activate_best_chain()
        for failed, error in self.connect_failures:
            if failed is entry:
                raise error
        if entry.failed():
            raise ValidationError("bad-prevblk", "previous block failed to connect", dos=100)
        return entry

    def _update_best_header(self, entry: BlockIndexEntry) -> None:
        if entry.failed():
            return
        if self.best_header is None or entry.chainwork > self.best_header.chainwork:
            self.best_header = entry

    def _link_chain_tx(self, entry: BlockIndexEntry) -> None:
        """Give ``entry`` (and waiting descendants) a chain tx count once its parent has one.

        ``tx_count`` says the block was stored once: pruned blocks keep their counts.
        """
        if not entry.tx_count or entry.chain_tx:
            if entry.chain_tx and entry.have_data() and entry.is_valid(BLOCK_VALID_TRANSACTIONS):
                # Data stored again after pruning: a candidate once more.
                tip = self.tip
                if tip is None or entry.chainwork >= tip.chainwork:
                    self._candidates.add(entry)
            return
        prev = entry.prev
        if prev is not None and not prev.chain_tx:
            self._unlinked.setdefault(prev, []).append(entry)
            return
        queue = [entry]
        while queue:
            e = queue.pop()
            e.chain_tx = (e.prev.chain_tx if e.prev is not None else 0) + e.tx_count
            if e.is_valid(BLOCK_VALID_TRANSACTIONS):
                tip = self.tip
                if tip is None or e.chainwork >= tip.chainwork:
                    self._candidates.add(e)
            queue.extend(self._unlinked.pop(e, ()))

    # ----------------------------------------------------------- activation

    def _best_candidate(self) -> Optional[BlockIndexEntry]:
        while True:
            best = None
            for e in self._candidates:
                if best is None or (e.chainwork, -e.sequence_id) > (best.chainwork,
                                                                    -best.sequence_id):
                    best = e
            if best is None or best is self.tip or self._reachable(best):
                return best
            self._candidates.discard(best)

    def _reachable(self, best: BlockIndexEntry) -> bool:
        """Whether the data to reorganise to ``best`` is stored (pruning may have removed it).

        Core skips candidates whose path lacks data; disconnecting needs blocks and undo.
        """
        tip = self.tip
        fork = self.find_fork(tip, best) if tip is not None else None
        walk: Optional[BlockIndexEntry] = best
        while walk is not None and walk is not fork:
            if not walk.have_data():
                log.warn("Cannot activate block {hash}: block {missing} at height {height} "
                         "is not available (pruned data)", hash=best.hash[::-1].hex(),
                         missing=walk.hash[::-1].hex(), height=walk.height)
                return False
            walk = walk.prev
        walk = tip
        while walk is not None and walk is not fork:
            if not walk.have_data() or (walk.prev is not None
                                        and not walk.status & BLOCK_HAVE_UNDO):
                log.error("Cannot reorganise to {hash}: disconnecting block {missing} at height "
                          "{height} needs data that is not available (pruned data)",
                          hash=best.hash[::-1].hex(), missing=walk.hash[::-1].hex(),
                          height=walk.height)
                return False
            walk = walk.prev
        return True

    def activate_best_chain(self) -> List[ChainEvent]:
        """Reorganise to the most-work valid chain; publish and return the events."""
        events: List[ChainEvent] = []
        self.connect_failures = []
        old_tip = self.tip
        # The blocks accepted since the last activation are fsync'd while they connect (the
        # scripts verify meanwhile), the undo file with what is written of it so far: the
        # sync before the events then has only the rest (syncing the block file alone early
        # made -par 2 connect ~5% slower, bench/connect.py, interleaved runs).
        early_sync = (_EARLY_SYNC.submit(self.store.sync)
                      if self._best_candidate() not in (None, old_tip) else None)
        try:
            self._activate(events)
        finally:
            if early_sync is not None:
                early_sync.result()  # a failed fsync may not fail again: report this one
        if self.tip is not old_tip and self.tip is not None:
            events.append(TipChanged(self.tip))
        self._publish_snapshot()
        if events:
            self.store.sync()
            self._publish(events)
        return events

    def _activate(self, events: List[ChainEvent]) -> None:
        """activate_best_chain's reorganisation: its events go to ``events``."""
        while True:
            best = self._best_candidate()
            tip = self.tip
            if best is None or best is tip:
                break
            fork = self.find_fork(tip, best) if tip is not None else None
            while self.tip is not None and self.tip is not fork:
                events.append(self._disconnect_tip())
            path = []
            walk = best
            while walk is not fork:
                path.append(walk)
                walk = walk.prev
            for entry in reversed(path):
                try:
                    events.append(self._connect_tip(entry))
                except ValidationError as e:
                    log.info("Block {hash} at height {height} failed to connect: {reason}",
                             hash=entry.hash[::-1].hex(), height=entry.height, reason=str(e))
                    self.connect_failures.append((entry, e))
                    if not e.corruption_possible:
                        self._mark_failed(entry)
                        self._note_invalid(best)
                        events.append(InvalidChainFound(self.best_invalid))
                    else:
                        self._candidates.discard(entry)
                    self._rebuild_candidates()
                    break
                if self.progress is not None:
                    self.progress(self)
                if self._extends_published():
                    self._publish_snapshot()
                if self.store.needs_flush() or self._prune_due():
                    self.flush()
            self._prune_candidates()

    def _prune_candidates(self) -> None:
        tip = self.tip
        if tip is None:
            return
        self._candidates = {e for e in self._candidates
                            if e is tip or (e.chainwork >= tip.chainwork and not self.contains(e))}
        self._candidates.add(tip)

    def _rebuild_candidates(self) -> None:
        tip = self.tip
        work = tip.chainwork if tip is not None else 0
        self._candidates = {
            e for e in self.index.values()
            if e.is_valid(BLOCK_VALID_TRANSACTIONS) and e.chain_tx and e.chainwork >= work}
        if tip is not None:
            self._candidates.add(tip)

    def _mark_failed(self, entry: BlockIndexEntry) -> None:
        """Mark ``entry`` invalid and every known descendant as a failed child."""
        entry.status |= BLOCK_FAILED_VALID
        self._dirty.add(entry)
        self._note_invalid(entry)
        for e in self.index.values():
            if e.height > entry.height and not e.failed() and e.get_ancestor(entry.height) is entry:
                e.status |= BLOCK_FAILED_CHILD
                self._dirty.add(e)
        self._candidates = {e for e in self._candidates if not e.failed()}
        if self.best_header is not None and self.best_header.failed():
            self.best_header = None
            for e in self.index.values():
                self._update_best_header(e)

    def _note_invalid(self, entry: BlockIndexEntry) -> None:
        """Keep :attr:`best_invalid` the most-work of the blocks found invalid."""
        if self.best_invalid is None or entry.chainwork > self.best_invalid.chainwork:
            self.best_invalid = entry

    # ----------------------------------------------------------- connect

    def _connect_tip(self, entry: BlockIndexEntry) -> BlockConnected:
        started = _time.perf_counter()
        legacy_sigop_counts = None
        held = self._release(entry)
        if held is not None:
            block, legacy_sigop_counts = held
        else:
            block = self.read_block(entry)
        if entry.prev is None:
            # The genesis coinbase is not spendable (as in Bitcoin); nothing to apply.
            entry.raise_validity(BLOCK_VALID_SCRIPTS)
        else:
            checks = ScriptChecks(self.script_workers) if self._scripts_to_check(entry) else None
            with checks or contextlib.nullcontext():
                undo = self._connect_block(entry, block, checks, legacy_sigop_counts)
            entry.undo_file, entry.undo_pos = self.store.write_undo(
                undo, entry.hash, entry.height)
            entry.status |= BLOCK_HAVE_UNDO
            entry.raise_validity(BLOCK_VALID_SCRIPTS)
        self._dirty.add(entry)
        self.chain.append(entry)
        if self.connect_observer is not None:
            self.connect_observer(_time.perf_counter() - started)
        return BlockConnected(entry, block)

    def _scripts_to_check(self, entry: BlockIndexEntry) -> bool:
        """Core's fScriptChecks: False only for an ancestor of the -assumevalid block that the
        best header also descends from, buried under more than two weeks' worth of work.

        The two weeks (in proof-equivalent time) keep a miner from getting an invalid block
        accepted by asking users to set -assumevalid to it.  Core also wants the best header
        to reach nMinimumChainWork; these chains set none (0).
        """
        assumed = self.index.get(self.assume_valid) if self.assume_valid else None
        best = self.best_header
        if assumed is None or best is None:
            return True
        if (assumed.get_ancestor(entry.height) is not entry
                or best.get_ancestor(entry.height) is not entry):
            return True
        buried = ((best.chainwork - entry.chainwork) * self.params.target_spacing
                  // max(1, block_proof(best.bits)))
        return buried <= ASSUME_VALID_BURIAL

    def _connect_block(self, entry: BlockIndexEntry, block: Block,
                       checks: Optional[ScriptChecks],
                       legacy_sigop_counts: Optional[List[int]] = None) -> bytes:
        """Validate ``block`` against the UTXO set and apply it; returns its undo record.

        Nothing is changed unless every check passes.  Scripts go to ``checks`` (None:
        assumed valid); the caller holds it open, so a script failure found late still
        wins over a later transaction's error, as when checking one input at a time.
        ``legacy_sigop_counts`` are check_block's (None: counted here).
        """
        prev = entry.prev
        params = self.params
        height = entry.height
        coins = self.store.coins
        flags = script_flags_for_block(entry, prev, params, self.versionbits)
        lock_flags = locktime_flags(prev, params, self.versionbits)
        txs = block.txs

        block_txids = {tx.txid for tx in txs}
        # BIP30: without BIP34's unique coinbases, no tx may overwrite an unspent one.
        if not bip34_in_force(prev, params) and any(c is not None for c in coins.fetch(
                [(tx.txid, n) for tx in txs for n in range(len(tx.vout))])):
            raise ValidationError("bad-txns-BIP30", "tried to overwrite transaction", dos=100)
        earlier = _earlier_coins(coins, txs, block_txids)

        created: Dict[Tuple[bytes, int], Coin] = {}
        spent_keys: Set[Tuple[bytes, int]] = set()
        undo = BlockUndoWriter(len(txs) - 1)
        fees = 0
        sigops = 0
        check_sequence = bool(lock_flags & LOCKTIME_VERIFY_SEQUENCE)
        if legacy_sigop_counts is None:
            legacy_sigop_counts = [legacy_sigops(tx) for tx in txs]
        for tx_index, tx in enumerate(txs):
            sigops += legacy_sigop_counts[tx_index]
            if sigops > MAX_BLOCK_SIGOPS:
                raise ValidationError("bad-blk-sigops", "too many sigops", dos=100)
            txid = tx.txid
            if tx_index:  # check_block: the coinbase is first, and only there
                spent: List[Coin] = []
                for txin in tx.vin:
                    prevout = txin.prevout
                    key = (prevout.txid, prevout.n)
                    if key in spent_keys:
                        raise ValidationError("bad-txns-inputs-missingorspent",
                                              "input spent twice in block", dos=100)
                    if prevout.txid in block_txids:
                        coin = created.get(key)
                        if coin is None:
                            coin = coins.get(key)
                    else:
                        coin = next(earlier)
                    if coin is None:
                        raise ValidationError("bad-txns-inputs-missingorspent",
                                              "inputs missing/spent", dos=100)
                    spent.append(coin)
                    spent_keys.add(key)
                fees += check_tx_inputs(tx, spent, height)
                undo.add_tx(spent)
                if check_sequence and not sequence_locks(
                        tx, lock_flags, [c.height for c in spent], entry):
                    raise ValidationError("bad-txns-nonfinal",
                                          "contains a non-BIP68-final transaction", dos=100)
                if flags & SCRIPT_VERIFY_P2SH:
                    sigops += p2sh_sigops(tx, spent)
                    if sigops > MAX_BLOCK_SIGOPS:
                        raise ValidationError("bad-blk-sigops", "too many sigops", dos=100)
                if checks is not None:
                    checks.add(tx_index, tx, spent, flags)
            version = tx.version
            coinbase = not tx_index
            for n, out in enumerate(tx.vout):
                if not is_unspendable(out.script_pubkey):
                    created[(txid, n)] = Coin(out.value, out.script_pubkey, height, coinbase,
                                              version)

        reward = txs[0].total_out()
        superblock = 0
        if self.superblock_check is not None:
            allowed = self.superblock_check(height, txs[0])
            if allowed is None:
                # As the reference (IsBlockPayeeValid): DoS 0, the peer may see other votes.
                raise ValidationError("bad-cb-payee", "invalid superblock detected", dos=0)
            superblock = allowed
        limit = fees + block_subsidy(height, params) + superblock
        if reward > limit:
            raise ValidationError("bad-cb-amount",
                                  "coinbase pays too much (actual=%d vs limit=%d)" % (reward, limit),
                                  dos=100)
        if self.payee_check is not None and not self.payee_check(height, txs[0]):
            # The reference's DoS score 0: a node with another view of the votes is no attacker.
            raise ValidationError("bad-cb-payee", "couldn't find masternode payment", dos=0)
        spent_here: List[Tuple[Tuple[bytes, int], Coin]] = []
        for key in spent_keys:
            if created.pop(key, None) is None:
                coin = coins.spend(key)
                assert coin is not None  # the loop found it unspent
                spent_here.append((key, coin))
        for key, coin in created.items():
            coins.add(key, coin)
        if checks is not None:
            # Collected last, after the coins changed: the workers verified meanwhile.  A
            # script failure puts the coins back as they were.
            try:
                checks.raise_failure()
            except BaseException:
                for key in created:
                    coins.spend(key)
                for key, coin in spent_here:
                    coins.add(key, coin)
                raise
        return undo.record()

    # ----------------------------------------------------------- disconnect

    def _disconnect_tip(self) -> BlockDisconnected:
        entry = self.chain[-1]
        block = self.read_block(entry)
        undo = self.read_undo(entry)
        coins = self.store.coins
        if len(undo) != len(block.txs) - 1:
            raise CorruptionError("undo data does not match block %s" % entry.hash[::-1].hex())
        for i in range(len(block.txs) - 1, -1, -1):
            tx = block.txs[i]
            txid = tx.txid
            for n, out in enumerate(tx.vout):
                if not is_unspendable(out.script_pubkey):
                    if coins.spend((txid, n)) is None:
                        raise CorruptionError("output %s:%d missing while disconnecting"
                                              % (tx.txid_hex, n))
            if i:
                for txin, coin in zip(tx.vin, undo[i - 1]):
                    coins.add((txin.prevout.txid, txin.prevout.n), coin)
        if self._chain_shared:
            self._replace_chain(list(self.chain))
        self.chain.pop()
        self._candidates.add(entry)
        return BlockDisconnected(entry, block)

    # ----------------------------------------------------------- flush

    def flush(self) -> None:
        """Write the index, the UTXO changes and the best block in one transaction.

        In automatic prune mode, files to prune are chosen first and their
        removal is committed in the same transaction (``coin.chain.pruning``).
        """
        self._flush()

    def _flush(self, manual_prune_height: Optional[int] = None) -> None:
        tip = self.tip
        if tip is None:
            return
        prune_blk: List[int] = []
        prune_rev: List[int] = []
        if self.prune_mode and (self.prune_target or manual_prune_height is not None):
            prune_blk, prune_rev = pruning.find_files_to_prune(
                self, self.prune_target, manual_prune_height)
            self._prune_checked_file = self.store.current_files()[0]
            if prune_blk or prune_rev:
                log.info("Pruning block files {blk} and undo files {rev}",
                         blk=prune_blk, rev=prune_rev)
                with self._block_data_lock:
                    self._dirty.update(pruning.mark_entries_pruned(self, prune_blk, prune_rev))
                    self._marked_pruned = True
                self._prune_generation += 1
        self.store.flush(list(self._dirty), tip.hash, prune_blk, prune_rev)
        self._dirty.clear()

    # ----------------------------------------------------------- manual control

    def invalidate_block(self, block_hash: bytes) -> None:
        """Mark a block invalid and leave its chain (invalidateblock)."""
        entry = self._require(block_hash)
        events: List[ChainEvent] = []
        old_tip = self.tip
        walk = old_tip
        while walk is not None and self.contains(entry) and walk.height >= entry.height:
            if not walk.have_data() or (walk.prev is not None
                                        and not walk.status & BLOCK_HAVE_UNDO):
                raise CorruptionError("block %s at height %d is not available (pruned data): "
                                      "cannot disconnect it" % (walk.hash[::-1].hex(),
                                                                walk.height))
            walk = walk.prev
        while self.contains(entry):
            events.append(self._disconnect_tip())
        self._mark_failed(entry)
        self._rebuild_candidates()
        if events:
            if self.tip is not old_tip:
                events.append(TipChanged(self.tip))
            self.store.sync()
            self._publish(events)
        self.activate_best_chain()

    def reconsider_block(self, block_hash: bytes) -> None:
        """Clear failure flags of a block, its ancestors and descendants (reconsiderblock)."""
        entry = self._require(block_hash)
        for e in self.index.values():
            if not e.failed():
                continue
            if (e.height >= entry.height and e.get_ancestor(entry.height) is entry) or \
                    entry.get_ancestor(e.height) is e:
                e.status &= ~BLOCK_FAILED_MASK
                self._dirty.add(e)
                self._update_best_header(e)
                if e is self.best_invalid:
                    self.best_invalid = None
        self._rebuild_candidates()
        self.activate_best_chain()

    def precious_block(self, block_hash: bytes) -> None:
        """Prefer this block over others of equal work (preciousblock)."""
        entry = self._require(block_hash)
        tip = self.tip
        if tip is None or entry.chainwork < tip.chainwork:
            return
        if tip.chainwork > self._last_precious_work:
            self._precious_sequence = -1
        self._last_precious_work = tip.chainwork
        entry.sequence_id = self._precious_sequence
        self._precious_sequence -= 1
        self._dirty.add(entry)
        if entry.is_valid(BLOCK_VALID_TRANSACTIONS) and entry.chain_tx:
            self._candidates.add(entry)
        self.activate_best_chain()

    def _require(self, block_hash: bytes) -> BlockIndexEntry:
        entry = self.index.get(block_hash)
        if entry is None:
            raise KeyError(block_hash)
        return entry

    def close(self) -> None:
        """Flush everything and close the store."""
        self.flush()
        self.store.close()


def deliver(listeners: Iterable[object], events: Iterable[ChainEvent]) -> None:
    """Call each listener's handler for each event, isolating listener failures."""
    for event in events:
        for listener in list(listeners):
            handler = getattr(listener, event.handler_name, None)
            if handler is None:
                continue
            try:
                event.dispatch(handler)
            except Exception:
                log.failure("Chain listener {listener!r} failed on {event!r}",
                            listener=listener, event=event)


def _earlier_coins(coins: CoinsCache, txs: Sequence[Transaction],
                   block_txids: Set[bytes]) -> Iterator[Optional[Coin]]:
    """The coins (None: missing) that the block's inputs spend from earlier blocks, in
    block order, looked up :data:`FETCH_INPUTS` at a time as the connect loop comes to
    them: it starts on the first transactions (and the workers on their scripts) while
    the rest of the block is not looked up yet."""
    keys: List[Tuple[bytes, int]] = []
    for tx in txs[1:]:
        for txin in tx.vin:
            prevout = txin.prevout
            if prevout.txid not in block_txids:
                keys.append((prevout.txid, prevout.n))
        while len(keys) >= FETCH_INPUTS:
            yield from coins.fetch(keys[:FETCH_INPUTS])
            del keys[:FETCH_INPUTS]
    yield from coins.fetch(keys)
