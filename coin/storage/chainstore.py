"""The one entry point to chain persistence: block files, block index, UTXO set, chain state.

Layout under the (network-specific) data directory::

    blocks/blkNNNNN.dat   raw blocks, append-only
    blocks/revNNNNN.dat   undo data, append-only, checksummed
    chainstate.sqlite     block index, UTXO set, file statistics, best block

With ``dbengine`` a PostgreSQL URL, the tables live in that database instead
(same schema and revisions), and so do the block and undo records (the
``block_record`` table, see ``recordtable``): the data directory holds no
``blocks/`` and no ``chainstate.sqlite``.

Crash safety: :meth:`ChainStore.flush` fsyncs the files first, then writes
every change (index rows, coins, file statistics, best-block marker) in one
database transaction, so after a crash the database is exactly at some flush
and never points at file data the OS did not have.  Blocks written after that
flush are still in the files; :meth:`ChainStore.scan_blocks` from the
position of the last indexed block finds them for replay.

Synchronous and meant for one writer thread; :meth:`ChainStore.read_block`
and :meth:`ChainStore.read_undo` may also be called from other threads.
"""

from __future__ import annotations

import functools
import os
from typing import (
    Any,
    Callable,
    Dict,
    Iterable,
    Iterator,
    List,
    NamedTuple,
    Optional,
    Sequence,
    Tuple,
    TypeVar,
)

from sqlalchemy.engine import Engine
from twisted.logger import Logger
from sqlalchemy.exc import SQLAlchemyError

from coin.chain.index import BlockIndexEntry
from coin.chainparams import ChainParams
from coin.primitives.coin import Coin
from coin.storage import blockindex, chainmeta, fileinfo, txindex, utxodb
from coin.storage.blockfiles import BlockFiles
from coin.storage.fileinfo import BlockFileInfo
from coin.storage.blockindex import IndexRow
from coin.storage.coins import CoinsCache, Key
from coin.storage.commits import CommitWatch
from coin.storage.database import (
    SQLITE,
    claim_server_writer,
    release_server_writer,
    create_engine,
    create_server_engine,
    describe,
    ensure_schema,
    open_database,
    open_server_database,
    server_url,
)
from coin.storage.dialect import close_connection, connection_lost, unreachable
from coin.storage.errors import DatabaseUnreachable, StorageError
from coin.storage.replication import REPLICA_STATE_SQL, ReplicaLag
from coin.storage.utxodb import MAX_FETCH_BATCH, UtxoTable, coin_row

DB_FILENAME = "chainstate.sqlite"
BLOCKS_DIRNAME = "blocks"
DIR_MODE = 0o700
DEFAULT_MAX_BLOCKFILE_SIZE = 128 << 20

_T = TypeVar("_T")
log = Logger()


class CommittedIndex(NamedTuple):
    """What :meth:`ChainStore.read_committed` read in one transaction."""

    #: The rows read: all of them when ``full``, else those changed since the reader's seq.
    rows: List[IndexRow]
    best: Optional[bytes]
    #: The writer's change sequence as of this commit (give it back to read only what follows).
    seq: int
    full: bool


def _storage_errors(method: Callable[..., _T]) -> Callable[..., _T]:
    """Report database and OS failures as :class:`StorageError` (the caller's only concern),
    a server that cannot be reached as :class:`DatabaseUnreachable` (and tell
    :attr:`ChainStore.on_unreachable`)."""
    @functools.wraps(method)
    def wrapper(self: "ChainStore", *args: Any, **kwargs: Any) -> _T:
        try:
            return method(self, *args, **kwargs)
        except StorageError:
            raise
        except self._backend_errors as e:
            if unreachable(e):
                if self.on_unreachable is not None:
                    self.on_unreachable()
                raise DatabaseUnreachable("%s failed" % method.__name__) from e
            raise StorageError("%s failed: %s" % (method.__name__, e)) from e
    return wrapper


class ChainStore:
    """Block and undo files plus the chain-state database of one network."""

    def __init__(self, datadir: str, params: ChainParams, dbcache_mib: int = 300,
                 max_blockfile_size: int = DEFAULT_MAX_BLOCKFILE_SIZE,
                 dbengine: str = SQLITE) -> None:
        self.datadir = datadir
        self.params = params
        self.dbcache_bytes = dbcache_mib << 20
        self.max_blockfile_size = max_blockfile_size
        self.blocks_dir = os.path.join(datadir, BLOCKS_DIRNAME)
        self.db_path = os.path.join(datadir, DB_FILENAME)
        #: None for the SQLite file at ``db_path``; else the PostgreSQL database's URL.
        self.db_url = server_url(dbengine)
        self._backend_errors: Tuple[type, ...] = (SQLAlchemyError, OSError)
        self._engine: Optional[Engine] = None
        self._writer_lock: Optional[Any] = None
        self._files: Optional[BlockFiles] = None
        self._utxos: Optional[UtxoTable] = None
        self._have_pruned: Optional[bool] = None
        self.coins: CoinsCache = CoinsCache(self._load_coins, self.dbcache_bytes,
                                            MAX_FETCH_BATCH)
        #: Called (from whichever thread failed) when a statement finds the database server
        #: unreachable: the node's :class:`~coin.storage.outage.DatabaseOutage`, if any.
        self.on_unreachable: Optional[Callable[[], None]] = None
        self._replica_lag = ReplicaLag()

    # -- life cycle -------------------------------------------------------------

    @_storage_errors
    def open(self) -> None:
        """Create or open the data directory, check the schema, recover the file tails."""
        if self._engine is not None:
            raise StorageError("chain store is already open")
        if self.db_url is None:
            os.makedirs(self.blocks_dir, mode=DIR_MODE, exist_ok=True)
            engine = open_database(self.db_path)
        else:
            engine = open_server_database(self.db_url)
            log.info("Chain state, blocks and undo data in {url}", url=describe(self.db_url))
        try:
            self._backend_errors = (SQLAlchemyError, OSError, engine.dialect.loaded_dbapi.Error)
            with engine.connect() as conn:
                infos = fileinfo.load_file_info_txn(conn)
            files = BlockFiles(self.blocks_dir, self.params.message_start,
                               self.max_blockfile_size,
                               engine=None if self.db_url is None else engine)
            files.open(infos)
            try:
                self._utxos = UtxoTable(engine)
            except BaseException:
                files.close()
                raise
        except BaseException:
            engine.dispose()
            raise
        self._engine, self._files = engine, files
        self._have_pruned = None
        self.coins.clear()
        if self.have_pruned():
            self._remove_pruned_leftovers()

    @_storage_errors
    def claim_writer(self) -> None:
        """Be the only writer of the database until :meth:`close` (StorageError if taken).

        For the node that validates; read-only processes never call it.  On SQLite the
        data directory's lock already does this.
        """
        if self.db_url is not None and self._writer_lock is None:
            self._writer_lock = claim_server_writer(self.engine, self.db_url)

    def _keep_writer_lock(self) -> None:
        """Before a flush: if the server ended the session holding the writer's lock (it
        restarted), take the lock again, or fail the flush if another writer has it now."""
        lock = self._writer_lock
        if lock is None:
            return
        cursor = lock.cursor()
        try:
            cursor.execute("SELECT 1")
        except self._backend_errors:
            if not connection_lost(lock):
                raise
            self._writer_lock = None
            close_connection(lock)
            log.warn("The connection holding the writer's lock was lost: taking it again")
            self.claim_writer()
            return
        cursor.close()
    def open_read_only(self) -> None:
        """Open a writer's data directory to read only (a front end): nothing is created,
        recovered or migrated; :meth:`read_committed` then loads what the writer committed."""
        if self._engine is not None:
            raise StorageError("chain store is already open")
        if self.db_url is None:
            if not os.path.exists(self.db_path):
                raise StorageError("no chain database at %s (start the writer first)" % self.db_path)
            engine, where = create_engine(self.db_path), self.db_path
        else:
            engine, where = create_server_engine(self.db_url), describe(self.db_url)
        try:
            self._backend_errors = (SQLAlchemyError, OSError, engine.dialect.loaded_dbapi.Error)
            ensure_schema(engine, where, read_only=True)
            self._utxos = UtxoTable(engine)
        except BaseException:
            engine.dispose()
            raise
        self._engine = engine
        self._files = BlockFiles(self.blocks_dir, self.params.message_start,
                                 self.max_blockfile_size,
                                 engine=None if self.db_url is None else engine)

    @_storage_errors
    def read_committed(self, since: Optional[int] = None) -> CommittedIndex:
        """The block index and best block as of the writer's last commit, read in one
        transaction (so the marker always names a loaded row); file statistics refreshed.

        ``since``, the ``seq`` of an earlier result, reads only the rows written after it;
        all rows are read instead (``full``) when it is None or no longer valid: the index
        was wiped after it (-reindex) or the counter is behind it (another database).
        """
        with self.engine.begin() as conn:
            seq = chainmeta.get_index_seq_txn(conn)
            if since is None or since > seq or chainmeta.get_index_wiped_txn(conn) > since:
                since = -1
            rows = blockindex.load_block_index_txn(conn, since)
            best = chainmeta.get_best_block_txn(conn)
            infos = fileinfo.load_file_info_txn(conn)
            self._have_pruned = chainmeta.get_have_pruned_txn(conn)
        self._open_files().adopt_infos(infos)
        self.coins.clear()
        return CommittedIndex(rows, best, seq, full=since < 0)

    def commit_watch(self) -> CommitWatch:
        """A cheap test of whether another process committed since the last look."""
        return CommitWatch(self.engine)

    @_storage_errors
    def close(self) -> None:
        """Sync the files and release everything; unflushed cache changes are dropped."""
        if self._files is not None:
            self._files.close()
            self._files = None
        self._release_database()

    def abandon(self) -> None:
        """Let go of everything as a crash would: no sync, unflushed writes and cache lost.

        For tests of crash recovery inside one process.
        """
        if self._files is not None:
            self._files.abandon()
            self._files = None
        self._release_database()
        self.coins.clear()

    @property
    def engine(self) -> Engine:
        """The database engine, for read-only work on other threads (see ``dbpool``)."""
        if self._engine is None:
            raise StorageError("chain store is not open")
        return self._engine

    @_storage_errors
    def replica_lag(self, now: float) -> float:
        """Seconds the database is behind its primary (coin.storage.replication): 0 on
        SQLite and on a PostgreSQL primary, UNKNOWN_LAG when it cannot be told."""
        if self.db_url is None:
            return 0.0
        with self.engine.connect() as conn:
            row = conn.exec_driver_sql(REPLICA_STATE_SQL).one()
        return self._replica_lag.measure(row, now)

    @_storage_errors
    def ping(self) -> None:
        """One round trip to the database (DatabaseUnreachable while the server is away)."""
        with self.engine.connect() as conn:
            conn.exec_driver_sql("SELECT 1")

    @_storage_errors
    def database_bytes(self) -> int:
        """Bytes the chain-state database takes (SQLite file plus its log, or the server's)."""
        if self.db_url is None:
            path = self.db_path
            return sum(os.path.getsize(p) for p in (path, path + "-wal") if os.path.exists(p))
        with self.engine.connect() as conn:
            return conn.exec_driver_sql("SELECT pg_database_size(current_database())").scalar()

    # -- block and undo files ---------------------------------------------------

    @_storage_errors
    def write_block(self, raw: bytes, height: int, time: int) -> Tuple[int, int]:
        """Append a serialized block; ``(file_no, pos)`` to record in its index entry."""
        return self._open_files().write_block(raw, height, time)

    @_storage_errors
    def read_block(self, file_no: int, pos: int, wait: bool = True) -> bytes:
        """The stored block; with ``wait=False``, WouldBlock rather than wait (see flatfile)."""
        return self._open_files().read_block(file_no, pos, wait)

    @_storage_errors
    def write_undo(self, raw: bytes, block_hash: bytes, height: int) -> Tuple[int, int]:
        """Append a block's undo data; ``height`` is unused (pruning reads heights off the index)."""
        return self._open_files().write_undo(raw, block_hash)

    @_storage_errors
    def read_undo(self, file_no: int, pos: int, block_hash: bytes) -> bytes:
        """Undo data of ``block_hash``; CorruptionError if the checksum does not match."""
        return self._open_files().read_undo(file_no, pos, block_hash)

    @_storage_errors
    def sync(self) -> None:
        """Flush and fsync the current block and undo files."""
        self._open_files().sync()

    def scan_blocks(self, from_file: int = 0,
                    from_pos: int = 0) -> Iterator[Tuple[int, int, bytes]]:
        """``(file_no, pos, raw_block)`` for each intact record at or after the position.

        ``from_pos`` may be a block position (that block is included) or any
        record boundary; ``pos`` in the results is what ``write_block`` returned.
        A torn or garbage tail ends a file's records.
        """
        records = self._open_files().scan_blocks(from_file, from_pos)
        while True:
            try:
                record = next(records)
            except StopIteration:
                return
            except OSError as e:
                raise StorageError("scan_blocks failed: %s" % e) from e
            yield record

    def block_file_bytes(self) -> int:
        """Total bytes of valid block records (the denominator of reindex progress)."""
        return self._open_files().total_block_bytes()

    def bytes_before(self, file_no: int, pos: int) -> int:
        """Bytes of block records before ``(file_no, pos)`` (reindex progress)."""
        return self._open_files().block_bytes_before(file_no, pos)

    # -- database ---------------------------------------------------------------

    @_storage_errors
    def load_block_index(self) -> List[IndexRow]:
        """Every stored index row, parents before children."""
        with self.engine.connect() as conn:
            return blockindex.load_block_index_txn(conn)

    @_storage_errors
    def best_block(self) -> Optional[bytes]:
        """The block the stored UTXO set is at, or None for an empty chain state."""
        with self.engine.connect() as conn:
            return chainmeta.get_best_block_txn(conn)

    @_storage_errors
    def utxo_snapshot(self) -> List[Tuple[Key, Coin]]:
        """The whole current UTXO set, stored coins overlaid with unflushed changes, by key.

        Holds every coin in memory: for tests and audits, not for big chains.
        """
        with self.engine.connect() as conn:
            coins = dict(utxodb.iter_coins_txn(conn))
        changes = self.coins.changes()
        for key in changes.inserts + changes.upserts:
            coins[key] = self.coins.cached(key)
        for key in changes.deletes:
            coins.pop(key, None)
        return sorted(coins.items(), key=lambda item: item[0])

    @_storage_errors
    def utxo_cursor(self) -> Iterator[Tuple[Key, Coin]]:
        """The stored UTXO set, streamed in key order from a read transaction begun now.

        Unflushed changes are not seen: flush first (Core's gettxoutsetinfo does).  The
        first row is read before returning, which pins the transaction's snapshot, so
        the rest may be read from another thread while the writer goes on; memory stays
        at one fetch batch however large the set.  The connection is released when the
        iterator is exhausted or closed.
        """
        return utxodb.stream_coins(self.engine)

    def needs_flush(self) -> bool:
        """True when the UTXO cache has outgrown ``dbcache``."""
        return self.coins.over_budget()

    @_storage_errors
    def flush(self, dirty_entries: Iterable[BlockIndexEntry], best_block: bytes,
              prune_blk: Iterable[int] = (), prune_rev: Iterable[int] = ()) -> None:
        """Persist everything up to now atomically: after a crash, all of it or none.

        Fsyncs the block and undo files, then in one transaction upserts
        ``dirty_entries``, applies the cached coin changes, saves the file
        statistics and sets the best-block marker.  On failure nothing is
        committed and the cache keeps its changes, so the flush can be retried.

        ``prune_blk``/``prune_rev`` name block and undo files to delete: their
        statistics are zeroed and the have-pruned flag set in the same
        transaction (the caller has already taken the data flags off the
        entries in them), and the files are unlinked only after the commit, so
        the database never references a missing file.  A crash between commit
        and unlink leaves files that :meth:`open` deletes.
        """
        files = self._open_files()
        files.sync()
        self._keep_writer_lock()
        prune_blk, prune_rev = sorted(set(prune_blk)), sorted(set(prune_rev))
        pruning = bool(prune_blk or prune_rev)
        if pruning:
            files.mark_pruned(prune_blk, prune_rev)
        entries = list(dirty_entries)
        infos = files.dirty_infos()
        changes = self.coins.changes()
        assert self._utxos is not None
        with self.engine.begin() as conn:
            if entries:
                blockindex.upsert_block_index_txn(conn, entries, chainmeta.next_index_seq_txn(conn))
            cached = self.coins.cached
            self._utxos.write_txn(conn,
                                  [coin_row(key, cached(key)) for key in changes.inserts],
                                  [coin_row(key, cached(key)) for key in changes.upserts],
                                  changes.deletes)
            fileinfo.save_file_info_txn(conn, infos)
            chainmeta.set_best_block_txn(conn, best_block)
            if pruning:
                chainmeta.set_have_pruned_txn(conn)
        self.coins.flushed(changes)
        files.mark_clean(infos)
        if pruning:
            self._have_pruned = True
            files.remove_files(prune_blk, prune_rev)

    @_storage_errors
    def wipe_chainstate(self) -> None:
        """Drop the UTXO set and best block, keeping index and files (-reindex-chainstate)."""
        with self.engine.begin() as conn:
            utxodb.delete_all_txn(conn)
            chainmeta.delete_value_txn(conn, chainmeta.BEST_BLOCK)
        self.coins.clear()

    @_storage_errors
    def wipe_index_and_chainstate(self) -> None:
        """Keep only the block files (-reindex): drop index, UTXO set, best block, undo data."""
        with self.engine.begin() as conn:
            blockindex.delete_block_index_txn(conn)
            chainmeta.note_index_wiped_txn(conn)
            utxodb.delete_all_txn(conn)
            chainmeta.delete_value_txn(conn, chainmeta.BEST_BLOCK)
            fileinfo.reset_undo_sizes_txn(conn)
        self.coins.clear()
        self._open_files().remove_undo_files()

    @_storage_errors
    def is_reindexing(self) -> bool:
        """Whether a reindex was started and has not finished (so it must resume)."""
        with self.engine.connect() as conn:
            return chainmeta.get_reindexing_txn(conn)

    @_storage_errors
    def set_reindexing(self, reindexing: bool) -> None:
        """Persist the reindex flag at once."""
        with self.engine.begin() as conn:
            chainmeta.set_reindexing_txn(conn, reindexing)

    # -- transaction index (-txindex) ------------------------------------------

    @_storage_errors
    def txindex_best(self) -> Optional[bytes]:
        """The last block the transaction index has committed, or None."""
        with self.engine.connect() as conn:
            return txindex.get_best_txn(conn)

    @_storage_errors
    def txindex_apply(self, removed: Sequence[tuple], added: Sequence[txindex.TxRow],
                      best: bytes) -> None:
        """Commit index changes and the new marker atomically (see ``storage.txindex``)."""
        with self.engine.begin() as conn:
            txindex.apply_txn(conn, removed, added, best)

    @_storage_errors
    def txindex_has_data(self) -> bool:
        with self.engine.connect() as conn:
            return txindex.has_data_txn(conn)

    @_storage_errors
    def txindex_wipe(self) -> None:
        with self.engine.begin() as conn:
            txindex.wipe_txn(conn)

    @_storage_errors
    def txindex_lookup(self, txid: bytes) -> Optional[txindex.TxPos]:
        """Where ``txid`` is stored per the index; safe from any thread."""
        with self.engine.connect() as conn:
            return txindex.lookup_txn(conn, txid)

    @_storage_errors
    def unspent_output_of(self, txid: bytes) -> Optional[Tuple[int, Coin]]:
        """Some unspent output ``(n, coin)`` of ``txid`` in the current UTXO set, or None.

        Stored coins overlaid with the cache's unflushed changes: writer thread only.
        """
        with self.engine.connect() as conn:
            stored = utxodb.output_numbers_txn(conn, txid)
        numbers = sorted(set(stored) | set(self.coins.changed_outputs_of(txid)))
        for start in range(0, len(numbers), MAX_FETCH_BATCH):
            chunk = numbers[start:start + MAX_FETCH_BATCH]
            for n, coin in zip(chunk, self.coins.fetch([(txid, n) for n in chunk])):
                if coin is not None:
                    return n, coin
        return None

    # -- pruning ----------------------------------------------------------------

    @_storage_errors
    def have_pruned(self) -> bool:
        """Whether any block or undo file was ever pruned (persisted; Core's fHavePruned)."""
        if self._have_pruned is None:
            with self.engine.connect() as conn:
                self._have_pruned = chainmeta.get_have_pruned_txn(conn)
        return self._have_pruned

    def current_files(self) -> Tuple[int, int]:
        """``(blk, rev)`` numbers of the files being written: never pruned."""
        return self._open_files().current_files()

    def file_usage(self) -> int:
        """Bytes of block plus undo records on disk (compared with the prune target)."""
        return self._open_files().usage()

    def file_infos(self) -> Dict[int, BlockFileInfo]:
        """Copies of the per-file statistics."""
        return self._open_files().infos()

    def _remove_pruned_leftovers(self) -> None:
        files = self._open_files()
        blk, rev = files.pruned_leftovers()
        if blk or rev:
            log.info("Removing pruned files left by an interrupted prune: blk {blk} rev {rev}",
                     blk=blk, rev=rev)
            files.remove_files(blk, rev)

    # -- internals --------------------------------------------------------------

    def _release_database(self) -> None:
        """Close the UTXO reader, give up the writer's lock, dispose of the engine."""
        if self._utxos is not None:
            self._utxos.close()
            self._utxos = None
        if self._writer_lock is not None:
            release_server_writer(self._writer_lock)
            self._writer_lock = None
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None

    def _open_files(self) -> BlockFiles:
        if self._files is None:
            raise StorageError("chain store is not open")
        return self._files

    @_storage_errors
    def _load_coins(self, keys: Sequence[Key]) -> Dict[Key, Coin]:
        if self._utxos is None:
            raise StorageError("chain store is not open")
        return self._utxos.fetch(keys)
