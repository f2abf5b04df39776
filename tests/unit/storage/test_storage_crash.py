"""kill -9 during flushes: every reopen finds the database at exactly one flush.

A child process (``python -m tests.unit.storage.test_storage_crash DATADIR [DBENGINE]``) runs rounds
forever.  Round r spends round r-1's coins, creates round r's, creates and
spends a few transient coins, writes block and undo records, and flushes with
best block = round_hash(r).  Everything is derived from r, so the parent can
check that the UTXO table, the index and the marker belong to one round.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

from twisted.trial.unittest import SynchronousTestCase

from coin.chain.index import (
    BLOCK_HAVE_DATA,
    BLOCK_HAVE_UNDO,
    BLOCK_VALID_SCRIPTS,
    BlockIndexEntry,
)
from coin.chainparams import REGTEST
from coin.primitives.coin import Coin, deserialize_block_undo, serialize_block_undo
from coin.primitives.hashes import sha256d
from coin.storage import fileinfo
from coin.storage.chainstore import ChainStore
from coin.storage.database import SQLITE
from tests import ROOT
from tests.pgserver import OnPostgreSQL, dbengine_for

COINS_PER_ROUND = 40
MAX_FILE = 256 << 10


def round_hash(r: int) -> bytes:
    return r.to_bytes(8, "big") + sha256d(b"round%d" % r)[:24]


def round_of(block_hash: bytes) -> int:
    return int.from_bytes(block_hash[:8], "big")


def round_key(r: int, i: int):
    return (sha256d(b"tx%d" % r), i)


def round_coin(r: int, i: int) -> Coin:
    return Coin(r * 1000 + i, bytes([i]) * (1 + (r + i) % 30), r, i == 0, 1)


def round_block(r: int) -> bytes:
    """Self-describing record: round number, checksum, pseudo-random body of random length."""
    rng = random.Random(r)
    body = rng.randbytes(rng.randrange(100, 30_000))
    return r.to_bytes(4, "little") + sha256d(body) + body


def round_undo(r: int) -> bytes:
    return serialize_block_undo([[round_coin(r - 1, i) for i in range(COINS_PER_ROUND)]])


def open_crash_store(datadir: str, dbengine: str = SQLITE) -> ChainStore:
    store = ChainStore(datadir, REGTEST, dbcache_mib=1, max_blockfile_size=MAX_FILE,
                       dbengine=dbengine)
    store.open()
    return store


def child_main(datadir: str, dbengine: str) -> None:
    store = open_crash_store(datadir, dbengine)
    best = store.best_block()
    r = round_of(best) if best is not None else 0
    print("ready %d" % r, flush=True)
    coins = store.coins
    while True:
        r += 1
        if r > 1:
            for i in range(COINS_PER_ROUND):
                if coins.spend(round_key(r - 1, i)) != round_coin(r - 1, i):
                    raise SystemExit("round %d: coin %d of the previous round missing" % (r, i))
        for i in range(COINS_PER_ROUND):
            coins.add(round_key(r, i), round_coin(r, i))
        for i in range(3):
            transient = (sha256d(b"transient%d" % r), i)
            coins.add(transient, round_coin(r, i))
            coins.spend(transient)
        entry = BlockIndexEntry(round_hash(r), r, None, 1, bytes(32), 1000 + r, 0x207FFFFF, r,
                                r << 200)
        entry.file_no, entry.data_pos = store.write_block(round_block(r), r, 1000 + r)
        entry.undo_file, entry.undo_pos = store.write_undo(round_undo(r), entry.hash, r)
        entry.status = BLOCK_VALID_SCRIPTS | BLOCK_HAVE_DATA | BLOCK_HAVE_UNDO
        store.flush([entry], entry.hash)


class KillNineTests(SynchronousTestCase):

    kills = 6

    def run_and_kill(self, datadir: str, rng: random.Random) -> int:
        env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
        child = subprocess.Popen([sys.executable, "-m", "tests.unit.storage.test_storage_crash", datadir,
                                  dbengine_for(self, datadir)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
                                 env=env)
        try:
            ready = child.stdout.readline()
            if not ready.startswith(b"ready"):
                child.kill()
                self.fail("child did not start: %r" % child.communicate()[1][-2000:])
            time.sleep(rng.uniform(0.05, 0.6))
            if child.poll() is not None:
                self.fail("child died by itself: %r" % child.communicate()[1][-2000:])
            os.kill(child.pid, signal.SIGKILL)
            child.wait()
        finally:
            child.stdout.close()
            child.stderr.close()
            if child.poll() is None:
                child.kill()
                child.wait()
        return int(ready.split()[1])

    def check_consistent(self, datadir: str) -> int:
        """Assert the store is exactly at one round; returns that round."""
        store = open_crash_store(datadir, dbengine_for(self, datadir))
        try:
            best = store.best_block()
            r = round_of(best) if best is not None else 0
            if best is not None:
                self.assertEqual(best, round_hash(r))
            rows = store.load_block_index()
            self.assertEqual([row.height for row in rows], list(range(1, r + 1)))
            for row in rows:
                self.assertEqual((row.hash, row.chainwork), (round_hash(row.height),
                                                              row.height << 200))
                self.assertEqual(store.read_block(row.file_no, row.data_pos),
                                 round_block(row.height))
                undo = store.read_undo(row.undo_file, row.undo_pos, row.hash)
                self.assertEqual(deserialize_block_undo(undo),
                                 [[round_coin(row.height - 1, i) for i in range(COINS_PER_ROUND)]])
            with store.engine.connect() as conn:
                stored = {(t, n): v for t, n, v in conn.exec_driver_sql(
                    "SELECT txid, n, value FROM utxo")}
                infos = fileinfo.load_file_info_txn(conn)
            expected = {round_key(r, i): round_coin(r, i).value
                        for i in range(COINS_PER_ROUND)} if r else {}
            self.assertEqual(stored, expected)
            keys = list(expected)
            self.assertEqual(store.coins.fetch(keys), [round_coin(r, k[1]) for k in keys])
            scanned = set()
            for file_no, pos, raw in store.scan_blocks():
                self.assertEqual(raw, round_block(int.from_bytes(raw[:4], "little")))
                scanned.add((file_no, pos))
            for row in rows:
                self.assertIn((row.file_no, row.data_pos), scanned)
                self.assertGreaterEqual(infos[row.file_no].size,
                                        row.data_pos + len(round_block(row.height)))
            return r
        finally:
            store.close()

    def test_kill_nine_during_flushes(self) -> None:
        seed = int.from_bytes(os.urandom(4), "big")
        rng = random.Random(seed)
        datadir = os.path.abspath(self.mktemp())
        rounds = []
        for _ in range(self.kills):
            started_at = self.run_and_kill(datadir, rng)
            try:
                rounds.append(self.check_consistent(datadir))
            except Exception as e:
                raise AssertionError("inconsistent after kill (seed %d): %s" % (seed, e)) from e
            self.assertGreaterEqual(rounds[-1], started_at)
        self.assertGreater(rounds[-1], self.kills, "the child hardly ran (rounds %r)" % rounds)


class KillNineTestsOnPostgreSQL(OnPostgreSQL, KillNineTests):
    """The same rounds with the index, coins and marker in PostgreSQL."""


if __name__ == "__main__":
    child_main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else SQLITE)
