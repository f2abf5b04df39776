"""The wallet's load snapshot (coin.wallet.wallet, coin.wallet.db) against a full load.

A wallet closed cleanly leaves a snapshot of the live part of what loading computes
from every transaction (spends, conflict marks, the coin index); the settled history
stays in the file until asked for (coin.wallet.txstore) and transactions are parsed
only when used.  A seeded random walk (the coin index's, with reloads) checks that a
load from the snapshot answers exactly as a load that parses and computes everything,
also after a few steps taken with the history still in the file (then read: the
answers must not change); the other tests check when the snapshot must not be used:
an old-format file, a write after it was taken (a key import making old outputs
the wallet's, a crash before the next clean close, a writer using the storage
directly on an unloaded wallet) and a chain that left its best block.
"""

from __future__ import annotations

import marshal
import random
import sqlite3
from typing import Any, Dict, List

from coin.chainparams import COIN
from coin.primitives.hashes import hash160
from coin.script.standard import p2pkh_script
from coin.testing.chainbuilder import deterministic_key
from coin.wallet.db import EPOCH_NAME, SNAPSHOT_NAME, WALLET_FORMAT_VERSION, WalletDB
from coin.wallet.errors import WalletError
from coin.wallet.keystore import ISMINE_ALL, ISMINE_SPENDABLE
from coin.wallet.spend import Recipient
from coin.wallet.txstore import NEWEST_CHUNK
from coin.wallet.wallet import LIVE_DEPTH
from tests.unit.wallet.test_coin_index import IndexTestCase
from tests.unit.wallet.test_wallet_service import ELSEWHERE

#: The payee a send pays, imported later (its outputs become the wallet's).
PAYEE = deterministic_key("wallet snapshot test: payee")
PAYEE_SCRIPT = p2pkh_script(hash160(PAYEE.public_key.format()))


class SnapshotTestCase(IndexTestCase):
    #: Reloads come about every sixth step.
    steps = IndexTestCase.steps + ("reload",) * 3

    @property
    def path(self) -> str:
        return self.wallet.db.path

    @property
    def lazy(self) -> bool:
        """The wallet's settled history is (partly) still in the file."""
        return self.wallet.txs.settled is not None

    def listings(self) -> Dict[str, Any]:
        """What the hot calls answer, read without the settled history (asserted, unless a
        key was imported since the load): the balances whose running totals start above it,
        the coins, coin selection, and every transaction newest first as listtransactions
        and gettransaction see it."""
        wallet = self.wallet
        # A key import since the coin index was built has it rebuilt: that reads the history.
        lazy = self.lazy and wallet.coins.generation == wallet.keys.generation
        with wallet.lock:
            answers = self.answers(depths=(0, 1, 6, 101, 102), legacy_depths=(0, 1, 6, 101))
            for name in ("available", "by_outpoint"):  # Output holds its WalletTx object
                answers[name] = [(c.outpoint, c.txout, c.depth, c.spendable, c.solvable, c.safe)
                                 for c in answers[name]]
            answers["newest"] = [
                (w.txid, w.tx.serialize(), w.block, w.order_pos, w.time_received, w.abandoned,
                 w.from_me, wallet.depth(w), wallet.is_trusted(w), wallet.conflicts(w),
                 wallet.amounts(w, ISMINE_ALL), wallet.credit(w.tx, ISMINE_ALL),
                 wallet.debit(w.tx, ISMINE_ALL)) for w in wallet.newest_first()]
            answers["count"] = wallet.tx_count()
        if lazy:
            self.assertTrue(self.lazy, "the hot calls read the settled history")
        return answers

    def state(self) -> Dict[str, Any]:
        """Everything a load computes from the transactions, and the answers."""
        wallet = self.wallet
        with wallet.lock:
            answers = self.answers()
            for name in ("available", "by_outpoint"):  # Output holds its WalletTx object
                answers[name] = [(c.outpoint, c.txout, c.depth, c.spendable, c.solvable, c.safe)
                                 for c in answers[name]]
            return {"answers": answers,
                    "txs": [(w.txid, w.tx.serialize(), w.block, w.time_received, w.order_pos,
                             w.abandoned, w.from_me, w.conflict_block)
                            for w in wallet.txs.values()],
                    "spends": wallet.spends, "coins": self.coin_state(),
                    "next_order": wallet._next_order}

    def coin_state(self) -> tuple:
        """The coin index as the snapshot holds it, its per-coin part decoded (its bytes
        depend on the order of sets)."""
        *placements, per_coin = self.wallet.coins.state(set(self.wallet.txs))
        return tuple(placements) + (marshal.loads(per_coin),)

    async def reopen(self, from_snapshot: bool, write_between: bool = False) -> None:
        """Unload and load the wallet (``write_between``: with a write to the file between);
        assert where the load took its state from."""
        await self.service.remove("")
        if write_between:
            self.write_directly()
        self.wallet = await self.service.load("")
        self.assertEqual(self.wallet.loaded_from_snapshot, from_snapshot)

    def crash(self) -> None:
        """The node dies: the file is closed without the wallet's close (no new snapshot)."""
        wallet = self.service.wallets.pop("")
        wallet.db.close()

    def write_directly(self) -> None:
        """A write through the storage on the unloaded wallet (as bench/wallet.py does)."""
        db = WalletDB(self.path)
        db.open(create=False)
        try:
            db.put_meta("unrelated", b"1")
        finally:
            db.close()

    def meta(self, name: str) -> Any:
        connection = sqlite3.connect(self.path)
        try:
            row = connection.execute("SELECT value FROM meta WHERE name = ?", (name,)).fetchone()
        finally:
            connection.close()
        return row[0] if row is not None else None

    async def history(self) -> None:
        """Coinbases, receives, a spend to outside and one to PAYEE, all deep."""
        self.mine(110)
        self.mine(101, to_wallet=True)
        rng = random.Random(7)
        for _ in range(3):
            self.receive_in_block(rng)
        await self.service.send(self.wallet, [Recipient(ELSEWHERE, 3 * COIN)], self.fees)
        await self.service.send(self.wallet, [Recipient(PAYEE_SCRIPT, 2 * COIN)], self.fees)
        self.mine(10)


class SnapshotWalkTests(SnapshotTestCase):
    """Reloads in the middle of the coin index's random walk; after one from the snapshot
    the walk goes on for up to three steps with the settled history still in the file."""

    timeout = 900

    def setUp(self):
        self.lazy_steps = 0
        self.lazy_loads = 0
        return super().setUp()

    def assertConsistent(self, step: str) -> None:
        if self.lazy_steps > 0 and self.lazy:
            self.lazy_steps -= 1
            return  # compared once the history is read
        if self.lazy:
            # Read what the lazy wallet answers, then the history: nothing may change.
            lazy = self.listings()
            self.wallet.hydrate()
            self.assertEqual(self.listings(), lazy, "after reading the history: %s" % step)
        super().assertConsistent(step)

    async def do(self, step: str, rng: random.Random, sent: List[bytes],
                 removed: List[tuple]) -> None:
        if step != "reload":
            return await super().do(step, rng, sent, removed)
        # Locks are not kept across loads (as in Core): drop them so the answers compare.
        self.wallet.unlock_all_coins()
        # A load offers the unconfirmed transactions to the pool again (Core's
        # ReacceptWalletTransactions): one a reorg left out (its anti-fee-sniping lock time was
        # above the shorter chain) comes back, and its outputs become trusted. Do it first.
        await self.service.reaccept(self.wallet)
        listed, before = self.listings(), self.state()
        await self.reopen(from_snapshot=True)
        self.lazy_loads += self.lazy
        self.assertEqual(self.listings(), listed, "a load from the snapshot")
        snapshot = self.state()
        self.assertEqual(snapshot, before)
        self.assertConsistent("reload from the snapshot")
        await self.reopen(from_snapshot=False, write_between=True)
        self.assertEqual(self.state(), snapshot, "a full load answers as the snapshot's")
        await self.reopen(from_snapshot=True)
        self.assertEqual(self.listings(), listed, "a load from the snapshot after a full one")
        self.lazy_steps = rng.randrange(4)

    async def test_random_walks_with_reloads(self):
        for seed in (3, 4):
            done = await self.walk(seed, 30)
            self.assertIn("reload", done)
        self.assertGreater(self.lazy_loads, 0)


class SnapshotValidityTests(SnapshotTestCase):

    async def test_a_clean_close_leaves_a_snapshot_the_next_load_uses(self):
        await self.history()
        self.mine(LIVE_DEPTH)  # the spent coinbases settle
        listed, before = self.listings(), self.state()
        await self.reopen(from_snapshot=True)
        # Read at load: only the live transactions (none parsed); the settled ones stay in
        # the file (read one by one for the listings).
        loaded = list(self.wallet.txs.loaded())
        self.assertEqual([w for w in loaded if w._tx is not None], [])
        self.assertTrue(self.lazy)
        self.assertLess(len(loaded), len(self.wallet.txs))
        self.assertEqual(self.listings(), listed)
        self.assertEqual(self.state(), before)

    async def test_is_spent_reads_the_history_only_for_spenders_left_in_the_file(self):
        """Whether a settled transaction's output is spent (lockunspent, signing, labels ask)
        is answered from memory unless its spenders' entries were left in the file."""
        await self.history()
        self.mine(LIVE_DEPTH)
        await self.reopen(from_snapshot=True)
        wallet = self.wallet
        txids = [row[0] for row in wallet.db.load_txs()]
        in_memory = [txid for txid in txids
                     if wallet.txs.is_settled(txid) and not wallet.txs.spenders_in_file(txid)]
        self.assertTrue(in_memory)
        outpoints = [(txid, n) for txid in in_memory for n in range(len(wallet.txs[txid].tx.vout))]
        lazy_answers = [wallet.is_spent(outpoint) for outpoint in outpoints]
        self.assertTrue(self.lazy)
        self.assertIn(True, lazy_answers)
        wallet.hydrate()
        self.assertEqual([wallet.is_spent(outpoint) for outpoint in outpoints], lazy_answers)

    async def test_the_history_is_read_newest_first_a_chunk_per_statement(self):
        """listtransactions over the settled history reads it a chunk of the order index at
        a time, each chunk's transactions in one statement, not one statement each."""
        await self.history()
        # One send spending most of the coinbases: each of them settles.
        spendable = self.wallet.balance(ISMINE_SPENDABLE, 1)
        await self.service.send(self.wallet, [Recipient(ELSEWHERE, spendable * 9 // 10)], self.fees)
        self.mine(LIVE_DEPTH)
        listed = [w.txid for w in self.wallet.newest_first()]
        await self.reopen(from_snapshot=True)
        wallet = self.wallet
        in_memory = len(list(wallet.txs.loaded()))
        reads: List[int] = []
        fetch = wallet.db.fetch_txs
        self.patch(wallet.db, "fetch_txs", lambda txids: reads.append(len(txids)) or fetch(txids))
        self.assertEqual([w.txid for w in wallet.newest_first()], listed)
        self.assertTrue(self.lazy)
        self.assertEqual(sum(reads), len(listed) - in_memory)  # each settled one read, once
        chunks = -(-len(listed) // NEWEST_CHUNK)
        self.assertGreater(sum(reads), 2 * chunks)  # (one statement each would be more)
        self.assertLessEqual(len(reads), chunks)

    async def test_a_settled_transaction_is_known_without_a_read_and_abandoned_on_the_worker(self):
        """An event filter off the wallet's lock knows a settled txid without reading the
        file; abandontransaction reads it on the worker, under the lock, and answers -5."""
        await self.history()
        self.mine(LIVE_DEPTH)
        await self.reopen(from_snapshot=True)
        wallet = self.wallet
        settled = [row[0] for row in wallet.db.load_txs() if wallet.txs.is_settled(row[0])]
        self.assertTrue(settled)
        reads: List[List[bytes]] = []
        fetch = wallet.db.fetch_txs
        self.patch(wallet.db, "fetch_txs", lambda txids: reads.append(txids) or fetch(txids))
        self.assertTrue(all(wallet.txs.known(txid) for txid in settled))
        self.assertFalse(wallet.txs.known(b"\x01" * 32))
        self.assertEqual(reads, [])
        for txid, message in [(settled[0], "Transaction not eligible for abandonment"),
                              (b"\x01" * 32, "Invalid or non-wallet transaction id")]:
            with self.assertRaises(WalletError) as caught:
                await self.service.abandon(wallet, txid)
            self.assertEqual((caught.exception.rpc_code, caught.exception.message), (-5, message))
        self.assertEqual(reads, [[settled[0]]])

    async def test_an_old_format_wallet_is_upgraded_and_answers_the_same(self):
        await self.history()
        before = self.state()
        await self.service.remove("")
        connection = sqlite3.connect(self.path)  # as format 1 left it: no epoch, no snapshot
        with connection:
            connection.execute("DELETE FROM meta WHERE name IN (?, ?)", (SNAPSHOT_NAME, EPOCH_NAME))
            connection.execute("UPDATE meta SET value = ? WHERE name = 'format'", (b"1",))
        connection.close()
        self.wallet = await self.service.load("")
        self.assertFalse(self.wallet.loaded_from_snapshot)
        self.assertEqual(self.state(), before)
        await self.reopen(from_snapshot=True)
        self.assertEqual(self.meta("format"), b"%d" % WALLET_FORMAT_VERSION)
        self.assertEqual(self.state(), before)

    async def test_an_import_after_the_snapshot_is_seen_at_the_next_load(self):
        """importaddress, then importprivkey, make old outputs the wallet's; the snapshot
        taken before either is never used again, even when the node dies before a clean
        close could write a new one."""
        await self.history()
        await self.reopen(from_snapshot=True)
        watched = self.wallet.balance(ISMINE_ALL)
        for add, field in ((lambda: self.wallet.keys.add_watch(PAYEE_SCRIPT), "watch-only"),
                           (lambda: self.wallet.keys.add_key(PAYEE.secret, True), "spendable")):
            add()
            self.assertEqual(self.wallet.balance(ISMINE_ALL), watched + 2 * COIN, field)
            expected = self.state()
            self.crash()
            self.wallet = await self.service.load("")
            self.assertFalse(self.wallet.loaded_from_snapshot, field)
            self.assertEqual(self.state(), expected, field)
            self.assertConsistent("load after a %s import" % field)

    async def test_a_crash_after_a_write_leaves_the_snapshot_unused(self):
        """A write that keeps the count of transactions and the best block: naming a watched
        address an outgoing transaction paid (sendmany's legacy balance no longer counts that
        output as change)."""
        await self.history()
        self.wallet.keys.add_watch(self.watched)
        await self.service.send(self.wallet, [Recipient(self.watched, 2 * COIN)], self.fees)
        self.mine(10)
        await self.reopen(from_snapshot=True)
        wallet = self.wallet
        before = wallet.legacy_balance(ISMINE_SPENDABLE, 1)
        wallet.set_name(wallet.address_of(self.watched), "cold", "send")
        self.assertEqual(wallet.legacy_balance(ISMINE_SPENDABLE, 1), before - 2 * COIN)
        expected = self.state()
        self.crash()
        self.wallet = await self.service.load("")
        self.assertFalse(self.wallet.loaded_from_snapshot)
        self.assertEqual(self.state(), expected)

    async def test_a_direct_write_to_an_unloaded_wallet_leaves_the_snapshot_unused(self):
        await self.history()
        before = self.state()
        await self.reopen(from_snapshot=False, write_between=True)
        self.assertEqual(self.state(), before)

    async def test_a_damaged_snapshot_is_unused(self):
        """One flipped byte in the stored snapshot (a bad sector, say): its checksum no longer
        matches, so the load computes everything rather than decode it."""
        await self.history()
        before = self.state()
        await self.service.remove("")
        value = bytearray(self.meta(SNAPSHOT_NAME))
        value[-100] ^= 0x01
        connection = sqlite3.connect(self.path)
        with connection:
            connection.execute("UPDATE meta SET value = ? WHERE name = ?", (bytes(value), SNAPSHOT_NAME))
        connection.close()
        self.wallet = await self.service.load("")
        self.assertFalse(self.wallet.loaded_from_snapshot)
        self.assertEqual(self.state(), before)

    async def test_a_snapshot_of_a_block_no_longer_active_is_unused(self):
        """The chain moved off the wallet's best block while the wallet was unloaded."""
        await self.history()
        tip = self.chainstate.tip
        await self.service.remove("")
        await self.validation.invalidate_block(tip.hash)
        self.mine(2)
        self.wallet = await self.service.load("")
        self.assertFalse(self.wallet.loaded_from_snapshot)
        self.assertConsistent("load after a reorg while unloaded")

    async def test_a_snapshot_that_cannot_be_written_does_not_fail_the_unload(self):
        await self.history()
        before = self.state()

        def refused(data: bytes) -> None:
            raise OSError("disk full")

        self.wallet.db.put_snapshot = refused
        await self.reopen(from_snapshot=False)
        self.assertEqual(len(self.flushLoggedErrors(OSError)), 1)
        self.assertEqual(self.state(), before)
