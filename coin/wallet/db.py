"""A wallet's database: one SQLite file per wallet, through SQLAlchemy Core.

The wallet keeps its state in memory and writes every change through here in
one transaction per operation (:meth:`WalletDB.batch`), so the file is always a
consistent snapshot and can be copied or backed up (``backupwallet`` uses
SQLite's online backup).  The file and its WAL are created 0600.  Only a file
created here is ever initialised: an existing file that is not a coin wallet is
refused unwritten.  A loaded wallet holds an exclusive ``flock`` on its file, so
no other wallet or node can open it meanwhile.

Tables: ``meta`` (format version, HD seed and chain counters, master key, best
block), ``keys`` (public key -> secret, encrypted secret, HD path), ``scripts``
(redeem scripts for P2SH), ``watch`` (watch-only output scripts), ``names``
(address book: label and purpose), ``keypool`` and ``txs`` (every wallet
transaction with where it was mined and, when a conflicting spend is mined, that block:
Core's MarkConflicted stores it with the transaction too).

A wallet closed cleanly also leaves in ``meta`` a snapshot of what loading would
otherwise compute from every transaction (coin.wallet.wallet: spends, conflict
marks, the coin index), so a large wallet loads without parsing its history.
The snapshot is valid only while the file is as it was written: it records the
file's *write epoch*, and the first write of every session through this class
bumps that epoch in the same transaction, so a later change, a crash after one,
or a writer using this class on an unloaded wallet all leave a snapshot that is
never used (the next load computes everything and the next close writes a new one).
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
import stat
import tempfile
from contextlib import contextmanager
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

from sqlalchemy import (
    BigInteger, Boolean, Column, Index, Integer, LargeBinary, MetaData, String, Table, delete,
    event, inspect, select,
)
from sqlalchemy.engine import Connection, Engine

from coin.storage.database import create_engine
from coin.storage.dialect import upsert_statements

#: Bumped when the schema changes; a newer file is refused, never rewritten.  Format 2 adds
#: the write epoch that keeps the load snapshot honest: a format-1 program would write without
#: bumping it, so a file gets format 2 (refused by those) when its first snapshot is written.
WALLET_FORMAT_VERSION = 2
#: Meta rows of the load snapshot and of the write epoch it must match.
SNAPSHOT_NAME = "load_snapshot"
EPOCH_NAME = "write_epoch"
#: Meta row of the next transaction order number (Core's "orderposnext"): not reused after
#: removeprunedfunds of the newest transaction; zapping the whole history starts it at 0.
ORDER_NAME = "order_pos_next"
#: What ``getwalletinfo`` reports as ``walletversion``: the reference node's FEATURE_LATEST
#: (159900, FEATURE_NO_DEFAULT_KEY; transcripts mwallet_02, rpcm_00), not Core 0.17's 169900.
WALLET_VERSION = 159900

metadata = MetaData()

meta = Table("meta", metadata,
             Column("name", String(64), primary_key=True),
             Column("value", LargeBinary, nullable=False))

keys = Table("keys", metadata,
             Column("pubkey", LargeBinary(65), primary_key=True),
             Column("secret", LargeBinary(32), nullable=True),
             Column("crypted", LargeBinary, nullable=True),
             Column("hd_path", String(64), nullable=True),
             Column("created", BigInteger, nullable=False))

scripts = Table("scripts", metadata,
                Column("script_hash", LargeBinary(20), primary_key=True),
                Column("script", LargeBinary, nullable=False))

watch = Table("watch", metadata,
              Column("script_pubkey", LargeBinary, primary_key=True),
              Column("created", BigInteger, nullable=False))

names = Table("names", metadata,
              Column("address", String(64), primary_key=True),
              Column("label", String, nullable=False),
              Column("purpose", String(16), nullable=False))

keypool = Table("keypool", metadata,
                Column("idx", BigInteger, primary_key=True, autoincrement=False),
                Column("pubkey", LargeBinary(65), nullable=False),
                Column("internal", Boolean, nullable=False),
                Column("time", BigInteger, nullable=False))

txs = Table("txs", metadata,
            Column("txid", LargeBinary(32), primary_key=True),
            Column("raw", LargeBinary, nullable=False),
            Column("block_hash", LargeBinary(32), nullable=True),
            Column("block_height", Integer, nullable=True),
            Column("block_index", Integer, nullable=True),
            Column("time_received", BigInteger, nullable=False),
            Column("order_pos", BigInteger, nullable=False),
            Column("abandoned", Boolean, nullable=False),
            Column("from_me", Boolean, nullable=False),
            # The block that mined a spend conflicting with this one (WalletTx.conflict_block).
            Column("conflict_hash", LargeBinary(32), nullable=True),
            Column("conflict_height", Integer, nullable=True),
            Column("conflict_index", Integer, nullable=True))
#: Columns of ``txs`` that older files lack: added at their first open (nullable; an older
#: program still reads and writes the file, naming its own columns).
_ADDED_TX_COLUMNS = ("conflict_hash", "conflict_height", "conflict_index")
#: Meta row present from the open that added the mark columns until the wallet stored the
#: marks it computes (a crash in between leaves it: the next load computes them again).
MARKS_PENDING_NAME = "conflict_marks_pending"
#: listtransactions reads the newest transactions without loading the others (files made
#: before it get it at their first open: SQLite ignores it in older programs).
txs_order = Index("txs_order", txs.c.order_pos)
#: Rows read from ``txs`` (all columns) per statement when several are fetched by txid.
FETCH_CHUNK = 500


_TX_COLUMNS = ", ".join(column.name for column in txs.columns)
#: Where order_pos is in a row of :meth:`WalletDB.load_txs` / :meth:`WalletDB.fetch_txs`.
TX_ORDER_POS = list(txs.columns.keys()).index(txs.c.order_pos.key)


def _secure_delete(dbapi_connection: Any, connection_record: Any) -> None:
    """Deleted or overwritten content is zeroed on disk (no stale clear keys)."""
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute("PRAGMA secure_delete=ON")
    finally:
        cursor.close()


def _file_size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except FileNotFoundError:
        return 0


def _add_tx_columns(conn: Connection) -> None:
    """Give a file made before them the columns of ``txs`` it lacks (SQLite's ADD COLUMN
    rewrites nothing: old rows read NULL, no mark), and note that its marks are still to be
    computed and stored (:attr:`WalletDB.marks_pending`)."""
    present = {column["name"] for column in inspect(conn).get_columns(txs.name)}
    missing = [name for name in _ADDED_TX_COLUMNS if name not in present]
    for name in missing:
        conn.exec_driver_sql("ALTER TABLE %s ADD COLUMN %s %s" % (
            txs.name, name, txs.c[name].type.compile(conn.dialect)))
    if missing:
        conn.execute(delete(meta).where(meta.c.name == MARKS_PENDING_NAME))
        conn.execute(meta.insert(), [{"name": MARKS_PENDING_NAME, "value": b"1"}])


class WalletFileError(Exception):
    """The file is not a wallet, is damaged, is in use, or is from a newer version."""


#: What every wallet file starts with: SQLite's magic; bytes 18 and 19 are 2 in WAL mode.
_SQLITE_MAGIC = b"SQLite format 3\x00"
_HEADER_SIZE = 100
#: The files SQLite keeps beside a database (a backup must never land on one of a wallet's).
COMPANION_SUFFIXES = ("", "-wal", "-shm", "-journal")
#: Pages copied per step of a backup; a stop request is honoured between steps.
BACKUP_STEP_PAGES = 256


def _opened_regular(path: str) -> int:
    """A read-only descriptor of the regular file ``path`` (not a symlink, FIFO or device)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise WalletFileError("%s is not a regular file" % path)
    return fd


class WalletDB:
    """The open database of one wallet; ``path`` is the file's real path."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._engine: Optional[Engine] = None
        self._conn: Optional[Connection] = None
        self._statements: Dict[str, Any] = {}
        #: Held open with an exclusive flock while the wallet is loaded (one owner per file).
        self._lock_fd: Optional[int] = None
        #: The open file's (device, inode): the same file under any other path or link.
        self.identity: Optional[tuple] = None
        #: The write epoch read at open, and whether this session has bumped it yet.
        self.epoch = 0
        self._bumped = False
        self._bump_pending = False

    # ------------------------------------------------------------------ life cycle

    def open(self, create: bool) -> bool:
        """Open the file, or create it when ``create`` and it does not exist; True if created.

        Only a file created here gets a schema; an existing file must already be a
        coin wallet (SQLite in WAL mode with our tables), else it is refused before
        SQLite touches it (opening an empty file in WAL mode would write to it).
        Raises :class:`WalletFileError`, also for a file another process has loaded.
        """
        created = False
        # A WAL left behind (a crash; a clean close removes it) may hold frames of pages as
        # they were before encryptwallet: rewrite the file before anything else.
        stale_wal = _file_size(self.path + "-wal") > 0
        if create and not os.path.lexists(self.path):
            self._create()
            created = True
        self._lock()
        try:
            self._engine = self._checked_engine()
        except BaseException:
            self._unlock()
            raise
        self.epoch = int(self._meta_value(EPOCH_NAME) or b"0")
        if stale_wal:
            try:
                self.scrub()
            except Exception:
                self.close()
                raise
        return created

    def _create(self) -> None:
        """Build an empty wallet beside ``path`` and link it in: never half-made, never over a file."""
        directory = os.path.dirname(self.path)
        fd, temporary = tempfile.mkstemp(prefix=".new-wallet-", dir=directory)  # 0600
        os.close(fd)
        try:
            engine = create_engine(temporary)
            try:
                with engine.begin() as conn:
                    metadata.create_all(conn)
                    conn.execute(meta.insert(), [{"name": "format",
                                                  "value": b"%d" % WALLET_FORMAT_VERSION}])
            finally:
                engine.dispose()  # checkpoints and removes the temporary -wal and -shm
            try:
                os.link(temporary, self.path)  # fails if anything appeared at path meanwhile
            except FileExistsError:
                raise WalletFileError("%s already exists" % self.path) from None
        finally:
            os.unlink(temporary)

    def _lock(self) -> None:
        try:
            fd = _opened_regular(self.path)
        except OSError as e:
            raise WalletFileError("%s cannot be opened: %s" % (self.path, e.strerror)) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise WalletFileError("%s is in use by another wallet or process" % self.path) from None
        self._lock_fd = fd
        info = os.fstat(fd)
        self.identity = (info.st_dev, info.st_ino)
        header = os.pread(fd, _HEADER_SIZE, 0)
        if len(header) < _HEADER_SIZE or not header.startswith(_SQLITE_MAGIC) \
                or header[18:20] != b"\x02\x02":
            self._unlock()
            raise WalletFileError("%s is not a coin wallet" % self.path)

    def _unlock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # after the engine: closing drops this process's locks
            self._lock_fd = None

    def _checked_engine(self) -> Engine:
        engine = create_engine(self.path)
        event.listen(engine, "connect", _secure_delete)
        try:
            with engine.begin() as conn:
                tables = set(inspect(conn).get_table_names())
                if not {t.name for t in metadata.sorted_tables} <= tables:
                    raise WalletFileError("%s is not a coin wallet" % self.path)
                version = conn.execute(select(meta.c.value).where(meta.c.name == "format")
                                       ).scalar()
                if version is None or int(version) > WALLET_FORMAT_VERSION:
                    raise WalletFileError("%s needs a newer version of coin" % self.path)
            with engine.begin() as conn:
                txs_order.create(conn, checkfirst=True)
                _add_tx_columns(conn)
        except WalletFileError:
            engine.dispose()
            raise
        except Exception as e:
            engine.dispose()
            raise WalletFileError("%s is not a readable wallet: %s" % (self.path, e)) from None
        return engine

    def close(self) -> None:
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None
        self._unlock()

    def _meta_value(self, name: str) -> Optional[bytes]:
        with self.batch() as conn:
            return conn.execute(select(meta.c.value).where(meta.c.name == name)).scalar()

    @contextmanager
    def batch(self) -> Iterator[Connection]:
        """One transaction: every write in the block commits together or not at all."""
        assert self._engine is not None, "wallet database is closed"
        if self._conn is not None:  # nested: join the outer transaction
            yield self._conn
            return
        try:
            with self._engine.begin() as conn:
                self._conn = conn
                try:
                    yield conn
                finally:
                    self._conn = None
        except BaseException:
            self._bump_pending = False
            raise
        if self._bump_pending:  # committed
            self._bump_pending = False
            self._bumped = True
            self.epoch += 1

    def scrub(self) -> None:
        """Rewrite the file so no freed page or WAL frame keeps old (clear) data.

        Raises WalletFileError when the WAL could not be emptied (a reader held it).
        """
        assert self._engine is not None
        raw = self._engine.raw_connection()  # autocommit: VACUUM cannot run in a transaction
        try:
            cursor = raw.cursor()
            for statement in ("PRAGMA wal_checkpoint(TRUNCATE)", "VACUUM",
                              "PRAGMA wal_checkpoint(TRUNCATE)"):
                busy = cursor.execute(statement).fetchone()
            cursor.close()
        finally:
            raw.close()
        if busy is None or busy[0] or _file_size(self.path + "-wal"):
            raise WalletFileError("%s: the write-ahead log could not be emptied" % self.path)

    def backup(self, destination: str, stopping: Callable[[], bool]) -> None:
        """A consistent copy of the open database at the file ``destination`` (0600).

        The copy is written to a new file beside ``destination`` and renamed over
        it when complete: nothing else's lock can stall it, and an older backup
        stays whole until then.  ``stopping()`` is asked between steps (shutdown);
        when true the copy is abandoned.  The caller has checked the destination.
        """
        directory, base = os.path.split(destination)
        fd, temporary = tempfile.mkstemp(prefix="." + base[:64] + ".", suffix=".tmp",
                                         dir=directory)  # 0600
        os.close(fd)

        def step(status: int, remaining: int, total: int) -> None:
            if stopping():
                raise OSError("backup abandoned: the node is shutting down")

        try:
            source = sqlite3.connect(self.path)
            try:
                target = sqlite3.connect(temporary)
                try:
                    source.backup(target, pages=BACKUP_STEP_PAGES, progress=step)
                finally:
                    target.close()
            finally:
                source.close()
            os.replace(temporary, destination)
        except BaseException:
            os.unlink(temporary)
            raise

    # ------------------------------------------------------------------ reads

    def load(self) -> Dict[str, List[Dict[str, Any]]]:
        """Every row of every table but ``txs``, as dicts by table name (the wallet lives in
        memory); :meth:`load_txs` reads those, :meth:`snapshot` the load snapshot."""
        queries = {table.name: select(table) for table in metadata.sorted_tables if table is not txs}
        queries[meta.name] = select(meta).where(meta.c.name != SNAPSHOT_NAME)
        with self.batch() as conn:
            return {name: [dict(row._mapping) for row in conn.execute(query)]
                    for name, query in queries.items()}

    def _query(self, sql: str, *params: Any) -> List[Tuple[Any, ...]]:
        """Rows of ``sql`` as plain tuples from the driver (a wallet may hold hundreds of
        thousands of transactions: no per-row SQLAlchemy objects)."""
        with self.batch() as conn:
            cursor = conn.connection.driver_connection.cursor()
            try:
                return cursor.execute(sql, params).fetchall()
            finally:
                cursor.close()

    def load_txs(self) -> List[Tuple[Any, ...]]:
        """Every wallet transaction as a tuple of the table's columns, by order_pos (sorted
        here, as the rows mostly come in that order already)."""
        rows = self._query("SELECT %s FROM %s" % (_TX_COLUMNS, txs.name))
        rows.sort(key=lambda row: row[TX_ORDER_POS])
        return rows

    def fetch_txs(self, txids: List[bytes]) -> List[Tuple[Any, ...]]:
        """The rows (as :meth:`load_txs`, in no order) of those of ``txids`` that are stored."""
        rows: List[Tuple[Any, ...]] = []
        for start in range(0, len(txids), FETCH_CHUNK):
            chunk = txids[start:start + FETCH_CHUNK]
            rows.extend(self._query("SELECT %s FROM %s WHERE txid IN (%s)" % (
                _TX_COLUMNS, txs.name, ", ".join("?" * len(chunk))), *chunk))
        return rows

    def txids_before(self, order_pos: Optional[int], count: int) -> List[Tuple[bytes, int]]:
        """``(txid, order_pos)`` of up to ``count`` transactions before ``order_pos`` (None:
        the newest), newest first (through the order_pos index)."""
        if order_pos is None:
            return self._query("SELECT txid, order_pos FROM txs ORDER BY order_pos DESC LIMIT ?",
                               count)
        return self._query("SELECT txid, order_pos FROM txs WHERE order_pos < ? "
                           "ORDER BY order_pos DESC LIMIT ?", order_pos, count)

    def next_order(self) -> int:
        """The next order_pos: one more than the highest stored (0 without transactions), or
        the number stored when a removal took the highest away (:meth:`put_next_order`)."""
        derived = self._query("SELECT coalesce(max(order_pos) + 1, 0) FROM txs")[0][0]
        return max(derived, int(self._meta_value(ORDER_NAME) or b"0"))

    @property
    def marks_pending(self) -> bool:
        """The file's conflict marks were never stored (its mark columns are new): the load
        computes them from the wallet's transactions, then calls :meth:`marks_stored`."""
        return self._meta_value(MARKS_PENDING_NAME) is not None

    def marks_stored(self) -> None:
        # Not a write the snapshot depends on (no epoch bump): the marks themselves are.
        with self.batch() as conn:
            conn.execute(delete(meta).where(meta.c.name == MARKS_PENDING_NAME))

    def snapshot(self) -> Optional[memoryview]:
        """The load snapshot when it was written in the file's current write epoch, else None
        (a view: it is megabytes for a large wallet, not copied)."""
        value = self._meta_value(SNAPSHOT_NAME)
        prefix = b"%d:" % self.epoch
        if value is None or not value.startswith(prefix):
            return None
        return memoryview(value)[len(prefix):]

    def put_snapshot(self, data: bytes) -> None:
        """Record ``data`` as valid for the file as it is now (the file becomes format 2)."""
        self._upsert(meta, [{"name": SNAPSHOT_NAME, "value": b"%d:" % self._epoch_now() + data},
                            {"name": "format", "value": b"%d" % WALLET_FORMAT_VERSION}],
                     bump=False)

    # ------------------------------------------------------------------ writes

    def _written(self) -> None:
        """Every write calls this in its transaction: the session's first bumps the write
        epoch (any snapshot written before stops being valid)."""
        if not self._bumped and not self._bump_pending:
            self._bump_pending = True
            self._upsert(meta, [{"name": EPOCH_NAME, "value": b"%d" % self._epoch_now()}],
                         bump=False)

    @property
    def changed(self) -> bool:
        """Something was written since the file was opened."""
        return self._bumped

    def _epoch_now(self) -> int:
        """The write epoch the file has once the current transaction commits."""
        return self.epoch + 1 if self._bump_pending else self.epoch

    def _upsert(self, table: Table, rows: List[Dict[str, Any]], bump: bool = True) -> None:
        if not rows:
            return
        with self.batch() as conn:
            if bump:
                self._written()
            statements = self._statements.get(table.name)
            if statements is None:
                # Building an upsert is costly in SQLAlchemy: once per table.
                statements = upsert_statements(table, conn.dialect.name)
                self._statements[table.name] = statements
            for statement in statements:
                conn.execute(statement, rows)

    def put_meta(self, name: str, value: bytes) -> None:
        self._upsert(meta, [{"name": name, "value": value}])

    def put_next_order(self, order_pos: int) -> None:
        """Record the next order_pos (a removed transaction's number is never given again)."""
        self.put_meta(ORDER_NAME, b"%d" % order_pos)

    def put_keys(self, rows: List[Dict[str, Any]]) -> None:
        """Rows of ``pubkey, secret, crypted, hd_path, created``."""
        self._upsert(keys, rows)

    def put_script(self, script_hash: bytes, script: bytes) -> None:
        self._upsert(scripts, [{"script_hash": script_hash, "script": script}])

    def put_watch(self, script_pubkey: bytes, created: int) -> None:
        self._upsert(watch, [{"script_pubkey": script_pubkey, "created": created}])

    def put_name(self, address: str, label: str, purpose: str) -> None:
        self._upsert(names, [{"address": address, "label": label, "purpose": purpose}])

    def put_pools(self, rows: List[Dict[str, Any]]) -> None:
        """Rows of ``idx, pubkey, internal, time``."""
        self._upsert(keypool, rows)

    def delete_pool(self, idx: int) -> None:
        with self.batch() as conn:
            self._written()
            conn.execute(delete(keypool).where(keypool.c.idx == idx))

    def put_tx(self, row: Dict[str, Any]) -> None:
        self._upsert(txs, [row])

    def put_txs(self, rows: List[Dict[str, Any]]) -> None:
        self._upsert(txs, rows)

    def delete_tx(self, txid: bytes) -> None:
        with self.batch() as conn:
            self._written()
            conn.execute(delete(txs).where(txs.c.txid == txid))
