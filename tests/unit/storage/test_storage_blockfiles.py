"""Block and undo files: round trips, roll-over, torn tails, checksums, statistics."""

from __future__ import annotations

import os
import stat
import struct
import threading
from typing import Callable, List, Tuple

from twisted.trial.unittest import SkipTest, SynchronousTestCase

from coin.chainparams import REGTEST
from coin.primitives.hashes import sha256d
from coin.storage import fileinfo
from coin.storage.chainstore import ChainStore
from coin.storage.database import SQLITE
from coin.storage.errors import CorruptionError
from coin.storage.flatfile import WouldBlock
from tests import pgserver
from tests.pgserver import OnPostgreSQL, dbengine_for

MAGIC = REGTEST.message_start


def fake_block(i: int, size: int = 200) -> bytes:
    """Deterministic bytes shaped like a block: header time at offset 68 is ``1000 + i``."""
    body = sha256d(b"block%d" % i) * (size // 32 + 1)
    return body[:68] + struct.pack("<I", 1000 + i) + body[72:size]


def open_store(test: SynchronousTestCase, path: str, **options) -> ChainStore:
    """An open store in ``path`` on the test's engine (see ``engines``), closed at clean-up."""
    store = ChainStore(path, REGTEST, dbengine=dbengine_for(test, path), **options)
    store.open()
    test.addCleanup(store.close)
    return store


def file_only(test: Callable) -> Callable:
    """Mark a test that tears, truncates or corrupts a file: not for records kept in rows."""
    test.file_only = True    # type: ignore[attr-defined]
    return test


class BlockFileTests(SynchronousTestCase):
    """Block and undo records; on PostgreSQL (the twin below) rows of ``block_record``."""

    dbengine = SQLITE

    def setUp(self) -> None:
        self.path = self.mktemp()
        self.files = self.dbengine == SQLITE
        if not self.files and getattr(getattr(self, self._testMethodName), "file_only", False):
            raise SkipTest("records in a database table have no file to tear or corrupt")

    def blk(self, file_no: int) -> str:
        return os.path.join(self.path, "blocks", "blk%05d.dat" % file_no)

    def write_blocks(self, store: ChainStore, first: int, count: int,
                     size: int = 200) -> List[Tuple[int, int]]:
        return [store.write_block(fake_block(i, size), i, 1000 + i)
                for i in range(first, first + count)]

    def test_round_trip(self) -> None:
        store = open_store(self, self.path)
        positions = self.write_blocks(store, 0, 20)
        self.assertEqual(positions[0], (0, 8))
        for i, (file_no, pos) in enumerate(positions):
            self.assertEqual(store.read_block(file_no, pos), fake_block(i))
        store.close()
        store = open_store(self, self.path)
        self.assertEqual([store.read_block(*p) for p in positions],
                         [fake_block(i) for i in range(20)])
        if self.files:
            with open(self.blk(0), "rb") as f:
                self.assertEqual(f.read(8), MAGIC + struct.pack("<I", 200))

    def test_roll_over(self) -> None:
        store = open_store(self, self.path, max_blockfile_size=1000)
        positions = self.write_blocks(store, 0, 10)
        store.sync()
        # 208-byte records: four fit in 1000 bytes.
        self.assertEqual([p[0] for p in positions], [0] * 4 + [1] * 4 + [2] * 2)
        for file_no in range(3 if self.files else 0):
            self.assertLessEqual(os.path.getsize(self.blk(file_no)), 1000)
        self.assertEqual([(f, p) for f, p, _ in store.scan_blocks()], positions)

    def test_record_larger_than_a_file_gets_its_own(self) -> None:
        store = open_store(self, self.path, max_blockfile_size=1000)
        small = store.write_block(fake_block(0), 0, 1000)
        big = store.write_block(fake_block(1, 3000), 1, 1001)
        after = store.write_block(fake_block(2), 2, 1002)
        self.assertEqual([small[0], big[0], after[0]], [0, 1, 2])
        self.assertEqual(store.read_block(*big), fake_block(1, 3000))

    def test_read_from_another_thread_sees_buffered_writes(self) -> None:
        store = open_store(self, self.path)
        position = store.write_block(fake_block(7), 7, 1007)
        result = []
        reader = threading.Thread(target=lambda: result.append(store.read_block(*position)))
        reader.start()
        reader.join()
        self.assertEqual(result, [fake_block(7)])

    @file_only
    def test_torn_record_is_cut_off_and_overwritten(self) -> None:
        store = open_store(self, self.path)
        positions = self.write_blocks(store, 0, 5)
        store.close()
        last_pos = positions[-1][1]
        with open(self.blk(0), "r+b") as f:
            f.truncate(last_pos + 50)          # the last record lost its end
        store = open_store(self, self.path)
        self.assertEqual([p for _, p, _ in store.scan_blocks()], [p for _, p in positions[:4]])
        new = store.write_block(fake_block(99), 99, 1099)
        self.assertEqual(new, positions[-1])   # written where the torn record began
        self.assertEqual([raw for _, _, raw in store.scan_blocks()],
                         [fake_block(i) for i in range(4)] + [fake_block(99)])

    @file_only
    def test_garbage_tail_is_ignored_and_replaced(self) -> None:
        store = open_store(self, self.path)
        positions = self.write_blocks(store, 0, 3)
        store.close()
        size = os.path.getsize(self.blk(0))
        with open(self.blk(0), "ab") as f:
            f.write(MAGIC + b"\xff\xff\xff\x00" + os.urandom(100))   # absurd length
        store = open_store(self, self.path)
        self.assertEqual(len(list(store.scan_blocks())), 3)
        store.write_block(fake_block(3), 3, 1003)
        store.sync()
        self.assertEqual(os.path.getsize(self.blk(0)), size + 208)
        self.assertEqual([raw for _, _, raw in store.scan_blocks()],
                         [fake_block(i) for i in range(4)])
        self.assertEqual(store.read_block(*positions[2]), fake_block(2))

    @file_only
    def test_scan_stops_at_garbage_then_continues_with_next_file(self) -> None:
        store = open_store(self, self.path, max_blockfile_size=1000)
        positions = self.write_blocks(store, 0, 6)
        store.close()
        with open(self.blk(0), "r+b") as f:
            f.seek(positions[1][1] - 8)
            f.write(b"junk")
        store = open_store(self, self.path, max_blockfile_size=1000)
        self.assertEqual([(f, p) for f, p, _ in store.scan_blocks()],
                         [positions[0]] + positions[4:])

    def test_scan_from_a_block_position_or_boundary(self) -> None:
        store = open_store(self, self.path, max_blockfile_size=1000)
        positions = self.write_blocks(store, 0, 10)
        file_no, pos = positions[5]
        self.assertEqual([(f, p) for f, p, _ in store.scan_blocks(file_no, pos)],
                         positions[5:])
        self.assertEqual([(f, p) for f, p, _ in store.scan_blocks(file_no, pos - 8)],
                         positions[5:])
        self.assertEqual([(f, p) for f, p, _ in store.scan_blocks(file_no, pos + 1)],
                         positions[6:])
        self.assertEqual(list(store.scan_blocks(7, 0)), [])

    def test_records_after_last_flush_are_adopted(self) -> None:
        store = open_store(self, self.path)
        self.write_blocks(store, 0, 2)
        store.flush([], b"\x01" * 32)
        self.write_blocks(store, 2, 3)
        store.close()                           # not flushed: the database knows 2 blocks
        store = open_store(self, self.path)
        self.assertEqual(store.block_file_bytes(), 5 * 208)
        position = store.write_block(fake_block(5), 5, 1005)
        self.assertEqual(position, (0, 5 * 208 + 8))
        self.assertEqual(len(list(store.scan_blocks())), 6)
        store.flush([], b"\x01" * 32)
        with store.engine.connect() as conn:
            info = fileinfo.load_file_info_txn(conn)[0]
        self.assertEqual((info.blocks, info.size), (6, 6 * 208))
        self.assertEqual((info.time_first, info.time_last), (1000, 1005))

    @file_only
    def test_file_shorter_than_recorded_is_rescanned(self) -> None:
        store = open_store(self, self.path)
        positions = self.write_blocks(store, 0, 4)
        store.flush([], b"\x01" * 32)
        store.close()
        with open(self.blk(0), "r+b") as f:
            f.truncate(positions[2][1] - 8)
        store = open_store(self, self.path)
        self.assertEqual(len(list(store.scan_blocks())), 2)
        self.assertEqual(store.write_block(fake_block(9), 9, 1009), positions[2])
        self.assertEqual(store.block_file_bytes(), 3 * 208)

    def test_file_statistics_are_flushed(self) -> None:
        store = open_store(self, self.path, max_blockfile_size=1000)
        self.write_blocks(store, 10, 6)
        store.write_undo(b"u" * 40, b"\x02" * 32, 10)
        store.flush([], b"\x01" * 32)
        with store.engine.connect() as conn:
            infos = fileinfo.load_file_info_txn(conn)
        self.assertEqual(sorted(infos), [0, 1])
        self.assertEqual((infos[0].blocks, infos[0].size, infos[0].undo_size),
                         (4, 4 * 208, 8 + 40 + 32))
        self.assertEqual((infos[0].height_first, infos[0].height_last), (10, 13))
        self.assertEqual((infos[1].time_first, infos[1].time_last), (1014, 1015))
        if self.files:
            self.assertEqual(infos[1].size, os.path.getsize(self.blk(1)))
        self.assertEqual(store.bytes_before(1, 100), 4 * 208 + 100)

    def test_usage_follows_every_change(self) -> None:
        """file_usage sums the files once per change: after each kind of change it is the
        sum of the statistics again."""
        store = open_store(self, self.path, max_blockfile_size=1000)

        def summed() -> int:
            return sum(i.size + i.undo_size for i in store.file_infos().values())

        self.assertEqual(store.file_usage(), 0)
        self.write_blocks(store, 0, 6)
        self.assertEqual(store.file_usage(), summed())
        self.assertEqual(store.file_usage(), 6 * 208)
        store.write_undo(b"u" * 40, b"\x02" * 32, 1)
        self.assertEqual(store.file_usage(), 6 * 208 + 80)
        store.flush([], b"\x01" * 32, [0], [])  # block file 0 pruned
        self.assertEqual(store.file_usage(), summed())
        self.assertEqual(store.file_usage(), 2 * 208 + 80)
        store.wipe_index_and_chainstate()  # -reindex: undo data dropped
        self.assertEqual(store.file_usage(), 2 * 208)

    def test_undo_round_trip(self) -> None:
        store = open_store(self, self.path)
        block_hash = sha256d(b"some block")
        position = store.write_undo(b"undo data", block_hash, 1)
        self.assertEqual(store.read_undo(*position, block_hash), b"undo data")
        store.close()
        store = open_store(self, self.path)
        self.assertEqual(store.read_undo(*position, block_hash), b"undo data")

    @file_only
    def test_undo_checksum_mismatch(self) -> None:
        store = open_store(self, self.path)
        block_hash = sha256d(b"some block")
        file_no, pos = store.write_undo(b"undo data", block_hash, 1)
        self.assertRaises(CorruptionError, store.read_undo, file_no, pos, b"\x00" * 32)
        store.close()
        rev = os.path.join(self.path, "blocks", "rev00000.dat")
        with open(rev, "r+b") as f:
            f.seek(pos + 2)
            f.write(b"X")
        store = open_store(self, self.path)
        error = self.assertRaises(CorruptionError, store.read_undo, file_no, pos, block_hash)
        self.assertIn("checksum", str(error))

    def test_bad_positions_raise_corruption(self) -> None:
        store = open_store(self, self.path)
        file_no, pos = store.write_block(fake_block(0), 0, 1000)
        self.assertRaises(CorruptionError, store.read_block, file_no, pos + 1)
        self.assertRaises(CorruptionError, store.read_block, file_no, 0)
        self.assertRaises(CorruptionError, store.read_block, 5, pos)
        self.assertRaises(CorruptionError, store.read_block, file_no, pos + 10_000)

    @file_only
    def test_modes(self) -> None:
        store = open_store(self, self.path)
        store.write_block(fake_block(0), 0, 1000)
        store.sync()
        self.assertEqual(stat.S_IMODE(os.stat(os.path.join(self.path, "blocks")).st_mode), 0o700)
        self.assertEqual(stat.S_IMODE(os.stat(self.blk(0)).st_mode), 0o600)
        self.assertEqual(stat.S_IMODE(os.stat(store.db_path).st_mode), 0o600)


class NoWaitReadTests(SynchronousTestCase):
    """``wait=False`` reads serve cached records on the caller's thread and never wait."""

    def setUp(self) -> None:
        self.store = open_store(self, self.mktemp())
        self.raw = fake_block(1, 5000)
        self.position = self.store.write_block(self.raw, 1, 1001)

    def test_a_cached_record_is_read_without_waiting(self) -> None:
        self.store.sync()
        self.assertEqual(self.store.read_block(*self.position, wait=False), self.raw)

    def test_a_record_still_in_the_writers_buffer_would_need_a_flush(self) -> None:
        with self.assertRaises(WouldBlock):
            self.store.read_block(*self.position, wait=False)
        self.assertEqual(self.store.read_block(*self.position), self.raw)  # flushes

    def test_a_held_file_lock_is_not_waited_for(self) -> None:
        self.store.sync()
        files = self.store._open_files()._blocks
        with files._lock:
            with self.assertRaises(WouldBlock):
                self.store.read_block(*self.position, wait=False)

    def test_a_record_out_of_the_page_cache_is_left_to_a_thread(self) -> None:
        self.store.sync()
        path = os.path.join(self.store.blocks_dir, "blk%05d.dat" % self.position[0])
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
        try:
            cached = self.store.read_block(*self.position, wait=False)
        except WouldBlock:
            pass
        else:  # tmpfs and some others keep every page: nothing to evict there
            self.assertEqual(cached, self.raw)
            raise SkipTest("this filesystem keeps the pages cached after POSIX_FADV_DONTNEED")
        self.assertEqual(self.store.read_block(*self.position), self.raw)

    def test_a_read_only_store_serves_cached_records_of_the_writers_current_file(self) -> None:
        """A front end never opens the files for writing: a record the writer flushed is
        read without waiting, even in the file the writer appends to (no flush to wait for)."""
        self.store.sync()
        reader = ChainStore(os.path.dirname(self.store.blocks_dir), REGTEST)
        reader.open_read_only()
        self.addCleanup(reader.close)
        self.assertEqual(reader.read_block(*self.position, wait=False), self.raw)


class BlockFileTestsOnPostgreSQL(OnPostgreSQL, BlockFileTests):
    """The records are rows of ``block_record``, with the positions and sizes files give."""

    def test_nothing_is_written_to_the_data_directory(self) -> None:
        store = open_store(self, self.path)
        self.write_blocks(store, 0, 3)
        store.write_undo(b"undo", b"\x05" * 32, 0)
        store.flush([], b"\x01" * 32)
        self.assertFalse(os.path.exists(self.path))

    def test_a_second_store_on_the_database_reads_the_records(self) -> None:
        # What a front end does: nothing but the database, another data directory.
        store = open_store(self, self.path)
        positions = self.write_blocks(store, 0, 3)
        undo = store.write_undo(b"undo", b"\x05" * 32, 0)
        reader = ChainStore(self.mktemp(), REGTEST, dbengine=dbengine_for(self, self.path))
        reader.open()
        self.addCleanup(reader.close)
        self.assertEqual([reader.read_block(*p) for p in positions],
                         [fake_block(i) for i in range(3)])
        self.assertEqual(reader.read_undo(*undo, b"\x05" * 32), b"undo")

    def test_reads_that_must_not_wait_are_left_to_a_thread(self) -> None:
        store = open_store(self, self.path)
        position = store.write_block(fake_block(0), 0, 1000)
        self.assertRaises(WouldBlock, store.read_block, *position, wait=False)

    def test_a_lost_connection_costs_no_append(self) -> None:
        # The server ended the appending session (as a restart does): the insert never ran
        # on it, and is made on a new connection.
        store = open_store(self, self.path)
        first = store.write_block(fake_block(0), 0, 1000)
        database = dbengine_for(self, self.path).rsplit("/", 1)[1]
        pgserver.server().execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                  "WHERE datname = '%s'" % database)
        second = store.write_block(fake_block(1), 1, 1001)
        self.assertEqual([store.read_block(*p) for p in (first, second)],
                         [fake_block(0), fake_block(1)])
