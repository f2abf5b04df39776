"""The chain-state database: schema and revision check, index rows, atomic flush, wipes, pool."""

from __future__ import annotations

import os
import sqlite3
from typing import Any, Callable, List

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import func, inspect, select, text
from sqlalchemy.exc import DBAPIError, OperationalError
from twisted.internet import reactor
from twisted.internet.defer import Deferred
from twisted.trial.unittest import SynchronousTestCase, TestCase

from coin.chain.index import BLOCK_HAVE_DATA, BLOCK_VALID_SCRIPTS, BlockIndexEntry
from coin.chainparams import REGTEST
from coin.primitives.coin import Coin
from coin.primitives.hashes import sha256d
from coin.storage import blockindex, chainmeta, compiled, database, fileinfo
from coin.storage.chainstore import DB_FILENAME, ChainStore
from coin.storage.database import SQLITE
from coin.storage.dbpool import DBPool
from coin.storage.errors import SchemaError, StorageError
from coin.storage.schema import block_index, chain_state, metadata, utxo
from tests.nodeharness import free_port
from tests.pgserver import OnPostgreSQL, dbengine_for
from tests.unit.storage.test_storage_blockfiles import fake_block, open_store


def make_entry(height: int, prev: BlockIndexEntry = None, chainwork: int = 0) -> BlockIndexEntry:
    entry = BlockIndexEntry(sha256d(b"hdr%d" % height), height, prev, 0x20000000 | height,
                            sha256d(b"merkle%d" % height), 1_700_000_000 + height,
                            0x207FFFFF, 0xFFFFFFFF - height, chainwork)
    entry.status = BLOCK_VALID_SCRIPTS | BLOCK_HAVE_DATA
    entry.tx_count = height + 1
    entry.chain_tx = (height + 1) * (height + 2) // 2
    entry.file_no, entry.data_pos = height // 3, 8 + 100 * height
    entry.undo_file, entry.undo_pos = height // 5, 8 + 50 * height
    entry.sequence_id = height * 7
    return entry


def coin_key(i: int):
    return (sha256d(b"tx%d" % i), i % 3)


def coin_value(i: int, round_: int = 0) -> Coin:
    return Coin(1000 * i + round_, b"\x76\xa9\x14" + bytes(20) + b"\x88\xac", i, i % 2 == 0, 2)


def execute_sql(test: Any, path: str, sql: str) -> None:
    """Run ``sql`` on the database of the test's store in ``path``, around the storage layer."""
    url = database.server_url(dbengine_for(test, path))
    if url is None:
        engine = database.create_engine(os.path.join(path, DB_FILENAME))
    else:
        engine = database.create_server_engine(url)
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql(sql)
    finally:
        engine.dispose()


def utxo_rows(store: ChainStore) -> dict:
    with store.engine.connect() as conn:
        return {(r.txid, r.n): r.value for r in conn.execute(select(utxo))}


class SchemaTests(SynchronousTestCase):

    dbengine = SQLITE

    def test_created_at_head_matching_schema_module(self) -> None:
        store = open_store(self, self.mktemp())
        config = Config()
        config.set_main_option("script_location", database.MIGRATIONS_DIR)
        self.assertEqual(ScriptDirectory.from_config(config).get_current_head(),
                         database.HEAD_REVISION)
        with store.engine.connect() as conn:
            context = MigrationContext.configure(conn)
            self.assertEqual(context.get_current_revision(), database.HEAD_REVISION)
            self.assertEqual(compare_metadata(context, metadata), [])

    def test_every_revision_goes_down_and_up_again(self) -> None:
        # The same revision scripts serve both engines, downgrades included.
        store = open_store(self, self.mktemp())
        config = Config()
        config.set_main_option("script_location", database.MIGRATIONS_DIR)
        with store.engine.begin() as conn:
            config.attributes["connection"] = conn
            command.downgrade(config, "base")
            self.assertEqual(inspect(conn).get_table_names(), ["alembic_version"])
            command.upgrade(config, "head")
            context = MigrationContext.configure(conn)
            self.assertEqual(context.get_current_revision(), database.HEAD_REVISION)
            self.assertEqual(compare_metadata(context, metadata), [])

    def test_older_revision_is_upgraded_in_place(self) -> None:
        # A node upgraded from the release before the newest migration keeps its chain state.
        path = self.mktemp()
        store = open_store(self, path)
        config = Config()
        config.set_main_option("script_location", database.MIGRATIONS_DIR)
        with store.engine.begin() as conn:
            config.attributes["connection"] = conn
            command.downgrade(config, "-1")
            older = MigrationContext.configure(conn).get_current_revision()
        store.close()
        self.assertNotEqual(older, database.HEAD_REVISION)
        store = ChainStore(path, REGTEST, dbengine=dbengine_for(self, path))
        store.open()
        self.addCleanup(store.close)
        with store.engine.connect() as conn:
            context = MigrationContext.configure(conn)
            self.assertEqual(context.get_current_revision(), database.HEAD_REVISION)
            self.assertEqual(compare_metadata(context, metadata), [])

    def test_index_at_0003_is_upgraded_with_its_rows(self) -> None:
        # Rows written before change sequences exist come back (seq 0: only a full load
        # reads them) and the first flush after the upgrade is read alone.
        path = self.mktemp()
        store = open_store(self, path)
        entries = [make_entry(0)]
        entries.append(make_entry(1, entries[0]))
        store.flush(entries, entries[-1].hash)
        before = store.load_block_index()
        config = Config()
        config.set_main_option("script_location", database.MIGRATIONS_DIR)
        with store.engine.begin() as conn:
            config.attributes["connection"] = conn
            command.downgrade(config, "0003")
            conn.execute(chain_state.delete())
        store.close()
        store = open_store(self, path)
        self.assertEqual(store.load_block_index(), before)
        committed = store.read_committed(0)
        self.assertEqual((committed.full, committed.rows, committed.seq), (False, [], 0))
        added = make_entry(2, entries[-1])
        store.flush([added], added.hash)
        committed = store.read_committed(0)
        self.assertEqual([row.hash for row in committed.rows], [added.hash])
        self.assertEqual(len(store.read_committed().rows), 3)

    def test_unknown_revision_is_refused(self) -> None:
        path = self.mktemp()
        open_store(self, path).close()
        execute_sql(self, path, "UPDATE alembic_version SET version_num = 'ffff'")
        store = ChainStore(path, REGTEST, dbengine=dbengine_for(self, path))
        error = self.assertRaises(SchemaError, store.open)
        self.assertIn("'ffff'", str(error))
        self.assertIn(repr(database.HEAD_REVISION), str(error))
        self.assertIn("-reindex" if self.dbengine == SQLITE else "empty database", str(error))

    def test_foreign_database_is_refused(self) -> None:
        path = self.mktemp()
        os.makedirs(path)
        execute_sql(self, path, "CREATE TABLE something (x INTEGER)")
        store = ChainStore(path, REGTEST, dbengine=dbengine_for(self, path))
        error = self.assertRaises(SchemaError, store.open)
        self.assertIn("not a coin chain-state database", str(error))


class SQLiteFileTests(SynchronousTestCase):
    """What only the embedded engine has: per-connection pragmas, a file in the data directory."""

    def test_pragmas_on_every_connection(self) -> None:
        store = open_store(self, self.mktemp())
        connections = [store.engine.connect() for _ in range(3)]
        try:
            for conn in connections:
                self.assertEqual(conn.exec_driver_sql("PRAGMA journal_mode").scalar(), "wal")
                self.assertEqual(conn.exec_driver_sql("PRAGMA foreign_keys").scalar(), 1)
                self.assertEqual(conn.exec_driver_sql("PRAGMA synchronous").scalar(), 1)
        finally:
            for conn in connections:
                conn.close()

    def test_datadir_is_used_literally(self) -> None:
        # A "sqlite:///" URL string would percent-decode the path and cut it at "?":
        # -datadir=/x/pct%41 used to open /x/pctA/chainstate.sqlite.
        base = os.path.abspath(self.mktemp())
        for name in ("pct%41", "q?uery=1", "frag#ment", "%2e%2e"):
            path = os.path.join(base, name, "d")
            store = open_store(self, path)
            with store.engine.connect() as conn:
                files = [row[2] for row in conn.exec_driver_sql("PRAGMA database_list")]
            self.assertEqual(files, [store.db_path])
            self.assertTrue(os.path.isfile(store.db_path))
        self.assertEqual(sorted(os.listdir(base)), ["%2e%2e", "frag#ment", "pct%41", "q?uery=1"])
        self.assertEqual(os.listdir(os.path.dirname(base)), [os.path.basename(base)])


class IndexAndStateTests(SynchronousTestCase):

    def setUp(self) -> None:
        self.path = self.mktemp()
        self.store = open_store(self, self.path)

    def reopen(self) -> ChainStore:
        self.store.close()
        self.store = open_store(self, self.path)
        return self.store

    def test_index_rows_round_trip(self) -> None:
        works = [0, 1, 2**64 + 5, 2**255 + 12345, 2**256 - 1]
        entries: List[BlockIndexEntry] = []
        for height, work in enumerate(works):
            entries.append(make_entry(height, entries[-1] if entries else None, work))
        self.store.flush(reversed(entries), entries[-1].hash)
        rows = self.reopen().load_block_index()
        self.assertEqual([r.height for r in rows], list(range(len(works))))
        for row, entry in zip(rows, entries, strict=True):
            for field in blockindex.IndexRow._fields:
                self.assertEqual(getattr(row, field), getattr(entry, field), field)
        self.assertEqual(self.store.best_block(), entries[-1].hash)

    def test_index_rows_are_updated_in_place(self) -> None:
        entry = make_entry(1)
        self.store.flush([entry], entry.hash)
        entry.status |= 16
        entry.undo_file, entry.undo_pos = 9, 999
        self.store.flush([entry], entry.hash)
        [row] = self.store.load_block_index()
        self.assertEqual((row.status, row.undo_file, row.undo_pos), (entry.status, 9, 999))

    def test_each_flush_stamps_its_rows_with_a_new_sequence(self) -> None:
        first, second = make_entry(1), make_entry(2)
        self.store.flush([first, second], second.hash)
        seq = self.store.read_committed().seq
        self.store.flush([], second.hash)
        self.assertEqual(self.store.read_committed(seq).seq, seq)
        first.status |= 16
        self.store.flush([first], second.hash)
        committed = self.reopen().read_committed(seq)
        self.assertEqual((committed.full, [row.hash for row in committed.rows]),
                         (False, [first.hash]))
        self.assertEqual(committed.rows[0].status, first.status)
        self.assertGreater(committed.seq, seq)

    def test_a_flush_of_index_rows_alone_is_a_commit_front_ends_notice(self) -> None:
        # Pruning or reconsiderblock may change rows without moving the best block.
        entry = make_entry(1)
        self.store.flush([entry], entry.hash)
        watch = self.store.commit_watch()
        self.addCleanup(watch.close)
        self.assertTrue(watch.changed())
        self.assertFalse(watch.changed())
        entry.status |= 16
        self.store.flush([entry], entry.hash)
        self.assertTrue(watch.changed())

    def test_chainwork_sorts_as_a_number(self) -> None:
        entries = [make_entry(h, chainwork=w) for h, w in enumerate([2**200, 255, 2**8, 2**255])]
        self.store.flush(entries, entries[0].hash)
        with self.store.engine.connect() as conn:
            ordered = conn.execute(select(block_index.c.height)
                                   .order_by(block_index.c.chainwork)).scalars().all()
        self.assertEqual(ordered, [1, 2, 0, 3])

    def test_chainwork_overflow_is_an_error(self) -> None:
        self.assertRaises(StorageError, self.store.flush, [make_entry(0, chainwork=2**256)],
                          b"\x00" * 32)

    def test_best_block_and_reindex_flag_persist(self) -> None:
        self.assertIsNone(self.store.best_block())
        self.assertFalse(self.store.is_reindexing())
        self.store.set_reindexing(True)
        self.store.flush([], b"\x07" * 32)
        self.assertTrue(self.reopen().is_reindexing())
        self.assertEqual(self.store.best_block(), b"\x07" * 32)
        self.store.set_reindexing(False)
        self.assertFalse(self.reopen().is_reindexing())

    def test_wipe_chainstate_keeps_index_and_files(self) -> None:
        position = self.store.write_block(fake_block(0), 0, 1000)
        undo = self.store.write_undo(b"undo", b"\x05" * 32, 0)
        self.store.coins.add(coin_key(1), coin_value(1))
        self.store.flush([make_entry(0)], b"\x05" * 32)
        self.store.wipe_chainstate()
        self.assertEqual(utxo_rows(self.store), {})
        self.assertIsNone(self.store.coins.get(coin_key(1)))
        self.assertIsNone(self.store.best_block())
        self.assertEqual(len(self.reopen().load_block_index()), 1)
        self.assertEqual(self.store.read_block(*position), fake_block(0))
        self.assertEqual(self.store.read_undo(*undo, b"\x05" * 32), b"undo")

    def test_wipe_index_and_chainstate_keeps_block_files_only(self) -> None:
        positions = [self.store.write_block(fake_block(i), i, 1000 + i) for i in range(3)]
        self.store.write_undo(b"undo", b"\x05" * 32, 0)
        self.store.coins.add(coin_key(1), coin_value(1))
        self.store.flush([make_entry(0)], b"\x05" * 32)
        self.store.wipe_index_and_chainstate()
        if self.store.db_url is None:
            blocks_dir = os.path.join(self.path, "blocks")
            self.assertEqual(sorted(os.listdir(blocks_dir)), ["blk00000.dat", "rev00000.dat"])
            self.assertEqual(os.path.getsize(os.path.join(blocks_dir, "rev00000.dat")), 0)
        self.reopen()
        self.assertEqual(self.store.load_block_index(), [])
        self.assertIsNone(self.store.best_block())
        self.assertEqual(utxo_rows(self.store), {})
        self.assertEqual([(f, p) for f, p, _ in self.store.scan_blocks()], positions)
        undo = self.store.write_undo(b"new undo", b"\x06" * 32, 0)
        self.assertEqual(undo, (0, 8))
        self.assertEqual(self.store.read_undo(*undo, b"\x06" * 32), b"new undo")


class FlushAtomicityTests(SynchronousTestCase):
    """A failure anywhere inside the flush transaction leaves the previous flush intact."""

    def setUp(self) -> None:
        self.path = self.mktemp()
        self.store = open_store(self, self.path)
        for i in range(10):
            self.store.coins.add(coin_key(i), coin_value(i))
        self.first = make_entry(0)
        self.store.write_block(fake_block(0), 0, 1000)
        self.store.flush([self.first], self.first.hash)
        self.before = utxo_rows(self.store)
        # The second flush spends 0-4, adds 10-19 and a new index row.
        for i in range(5):
            self.store.coins.spend(coin_key(i))
        for i in range(10, 20):
            self.store.coins.add(coin_key(i), coin_value(i))
        self.store.write_block(fake_block(1), 1, 1001)
        self.second = make_entry(1, self.first)

    def assert_first_flush_state(self) -> None:
        other = open_store(self, self.path)    # a second, independent view of the files
        self.assertEqual(other.best_block(), self.first.hash)
        self.assertEqual([r.hash for r in other.load_block_index()], [self.first.hash])
        self.assertEqual(utxo_rows(other), self.before)
        with other.engine.connect() as conn:
            self.assertEqual(fileinfo.load_file_info_txn(conn)[0].blocks, 1)
        other.close()

    def fail_flush_and_retry(self) -> None:
        self.assertRaises(StorageError, self.store.flush, [self.second], self.second.hash)
        self.assert_first_flush_state()
        self.assertEqual(self.store.coins.dirty_count(), 15)

    def test_failure_after_all_writes(self) -> None:
        def failing_save(conn: Any, infos: Any) -> None:
            conn.execute(text("SELECT 1"))
            raise OperationalError("INSERT INTO block_file", {},
                                   sqlite3.OperationalError("disk I/O error"))
        patch = self.patch(fileinfo, "save_file_info_txn", failing_save)
        self.fail_flush_and_retry()
        patch.restore()
        self.store.flush([self.second], self.second.hash)
        self.assertEqual(self.store.best_block(), self.second.hash)
        rows = utxo_rows(self.store)
        self.assertEqual(sorted(rows), sorted(coin_key(i) for i in range(5, 20)))

    def test_failure_inside_the_coin_writes(self) -> None:
        calls: List[str] = []
        original: Callable = compiled.RawStatement.executemany

        def executemany(statement: compiled.RawStatement, cursor: Any, rows: Any) -> None:
            calls.append(" ".join(statement.sql.split()[:3]))
            if calls[-1] == "INSERT INTO utxo":    # index rows and deletes ran already
                raise self.store.engine.dialect.loaded_dbapi.OperationalError("disk is full")
            original(statement, cursor, rows)
        self.patch(compiled.RawStatement, "executemany", executemany)
        self.fail_flush_and_retry()
        self.assertEqual(calls, ["INSERT INTO block_index", "DELETE FROM utxo",
                                 "INSERT INTO utxo"])


class SynchronousPool:
    """Thread-pool stand-in that runs each call at once (for SynchronousTestCase)."""

    def callInThreadWithCallback(self, on_result: Callable, f: Callable, *a: Any,
                                 **kw: Any) -> None:
        try:
            result = f(*a, **kw)
        except BaseException as e:
            on_result(False, e)
        else:
            on_result(True, result)


class ImmediateReactor:
    def callFromThread(self, f: Callable, *a: Any, **kw: Any) -> None:
        f(*a, **kw)


def live_result_txn(conn: Any) -> Any:
    return conn.execute(select(utxo))


def count_utxos_txn(conn: Any) -> int:
    return conn.execute(select(func.count()).select_from(utxo)).scalar_one()


class DBPoolTests(SynchronousTestCase):

    def setUp(self) -> None:
        self.store = open_store(self, self.mktemp())
        self.store.coins.add(coin_key(1), coin_value(1))
        self.entry = make_entry(3)
        self.store.flush([self.entry], self.entry.hash)
        self.pool = DBPool(self.store.engine, ImmediateReactor(), threadpool=SynchronousPool())

    def test_runs_txn_functions(self) -> None:
        self.assertEqual(self.successResultOf(self.pool.run(chainmeta.get_best_block_txn)),
                         self.entry.hash)
        rows = self.successResultOf(self.pool.run(blockindex.load_block_index_txn))
        self.assertEqual(rows, self.store.load_block_index())
        self.assertEqual(self.successResultOf(self.pool.run(count_utxos_txn)), 1)

    def test_live_results_are_refused(self) -> None:
        self.failureResultOf(self.pool.run(live_result_txn), TypeError)

    def test_database_errors_fail_the_deferred(self) -> None:
        def broken_txn(conn: Any) -> None:
            conn.execute(text("SELECT * FROM no_such_table"))
        self.failureResultOf(self.pool.run(broken_txn), DBAPIError)


class DBPoolThreadTests(TestCase):
    """The default pool really runs on another thread and reports back through the reactor."""

    def test_real_thread_pool(self) -> Deferred:
        store = open_store(self, self.mktemp())
        store.flush([], b"\x09" * 32)
        pool = DBPool(store.engine, reactor, max_threads=2)
        pool.start()
        self.addCleanup(pool.stop)
        d = pool.run(chainmeta.get_best_block_txn)
        d.addCallback(self.assertEqual, b"\x09" * 32)
        return d


class SchemaTestsOnPostgreSQL(OnPostgreSQL, SchemaTests):
    pass


class IndexAndStateTestsOnPostgreSQL(OnPostgreSQL, IndexAndStateTests):
    pass


class FlushAtomicityTestsOnPostgreSQL(OnPostgreSQL, FlushAtomicityTests):
    pass


class DBPoolTestsOnPostgreSQL(OnPostgreSQL, DBPoolTests):
    pass


class DBPoolThreadTestsOnPostgreSQL(OnPostgreSQL, DBPoolThreadTests):
    pass


class ServerEngineTests(SynchronousTestCase):
    """What only a database server brings: a URL to check, a server to reach, other writers."""

    def test_dbengine_values(self) -> None:
        self.assertIsNone(database.server_url("sqlite"))
        url = database.server_url("postgresql://u:secret@127.0.0.1:5432/chain")
        self.assertEqual((url.drivername, url.host, url.port, url.database),
                         ("postgresql+psycopg", "127.0.0.1", 5432, "chain"))
        self.assertEqual(database.describe(url), "postgresql://u:***@127.0.0.1:5432/chain")
        for bad in ("mysql://u@h/db", "postgresql://u@h", "nonsense", "sqlite:///x"):
            error = self.assertRaises(StorageError, database.server_url, bad)
            self.assertIn("-dbengine must be", str(error))

    def test_unreachable_server_is_a_clear_error(self) -> None:
        port = free_port()    # claimed and not listening
        store = ChainStore(self.mktemp(), REGTEST,
                           dbengine="postgresql://u:secret@127.0.0.1:%d/chain" % port)
        error = str(self.assertRaises(StorageError, store.open))
        self.assertIn("cannot connect to the PostgreSQL database "
                      "postgresql://u:***@127.0.0.1:%d/chain" % port, error)
        self.assertIn("refused", error)
        self.assertNotIn("secret", error)


class SharedDatabaseTests(OnPostgreSQL, SynchronousTestCase):

    def test_lookups_see_flushes_committed_after_them(self) -> None:
        # The UTXO reader runs outside transactions: a psycopg connection left in one
        # would keep reading its first snapshot (REPEATABLE READ) and miss later flushes.
        url = dbengine_for(self, self.mktemp())
        reader = ChainStore(self.mktemp(), REGTEST, dbengine=url)
        reader.open()
        self.addCleanup(reader.close)
        self.assertIsNone(reader.coins.get(coin_key(1)))
        writer = ChainStore(self.mktemp(), REGTEST, dbengine=url)
        writer.open()
        self.addCleanup(writer.close)
        writer.coins.add(coin_key(1), coin_value(1))
        writer.flush([], b"\x01" * 32)
        reader.coins.clear()
        self.assertEqual(reader.coins.get(coin_key(1)), coin_value(1))
        self.assertEqual(reader.best_block(), b"\x01" * 32)

    def test_one_writer_per_database(self) -> None:
        url = dbengine_for(self, self.mktemp())
        first, second = (ChainStore(self.mktemp(), REGTEST, dbengine=url) for _ in range(2))
        for store in (first, second):
            store.open()
            self.addCleanup(store.close)
        first.claim_writer()
        error = self.assertRaises(StorageError, second.claim_writer)
        self.assertIn("Cannot obtain a lock on PostgreSQL database", str(error))
        self.assertEqual(second.best_block(), None)    # readers need no lock
        first.close()
        second.claim_writer()
