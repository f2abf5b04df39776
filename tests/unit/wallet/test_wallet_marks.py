"""What the wallet keeps in its file across a load that computes everything (after a crash,
without a usable snapshot, after an upgrade): the conflict marks a mined double spend that is
not the wallet's sets (Core stores MarkConflicted's block with the transaction), and the
next order number after removeprunedfunds of the newest transaction (Core's orderposnext).
"""

from __future__ import annotations

import random
import sqlite3
from typing import List, Tuple

from coin.chainparams import COIN
from coin.primitives.transaction import Transaction
from coin.wallet.db import ORDER_NAME, SNAPSHOT_NAME
from coin.wallet.keystore import ISMINE_SPENDABLE
from coin.wallet.wallet import BlockRef, WalletTx
from tests.unit.wallet import test_wallet_snapshot
from tests.unit.wallet.test_wallet_snapshot import SnapshotTestCase

#: The columns a file made before the marks were stored lacks.
MARK_COLUMNS = ("conflict_hash", "conflict_height", "conflict_index")


def double_spent_payment(case: SnapshotTestCase) -> Tuple[Transaction, Transaction]:
    """``(payment, double)``: a payment from outside to the wallet, seen unconfirmed, then
    double-spent by a transaction paying only outside (not the wallet's), mined."""
    coin = case.outside.coinbase_outputs.pop(0)
    payment = case.outside.spend(coin, outputs=[
        (case.own_script(), 2 * COIN), (case.outside.script_pubkey, coin.value - 2 * COIN - 10_000)])
    case.assertTrue(case.wallet.sync_transaction(payment, None))
    double = case.outside.spend(coin, fee=20_000)
    case.outside.mine(1, txs=[double])
    case.assertNotIn(double.txid, case.wallet.txs)
    return payment, double


class ConflictMarkTests(SnapshotTestCase):

    async def conflicted_payment(self) -> WalletTx:
        """:func:`double_spent_payment` after the history, then two blocks."""
        await self.history()
        self.mine(1)
        payment, _ = double_spent_payment(self)
        # A block the wallet stores as its best (a payment to it): a load does not scan the
        # conflicting block again.
        self.receive_in_block(random.Random(2))
        self.assertEqual(self.meta("best_block"), self.chainstate.tip.hash)
        self.mine(1)
        wtx = self.wallet.txs[payment.txid]
        tip = self.chainstate.tip
        self.assertEqual(wtx.conflict_block, BlockRef(tip.prev.prev.hash, tip.height - 2, 1))
        self.assertEqual(self.wallet.depth(wtx), -3)
        return wtx

    async def crash_and_load(self) -> None:
        """kill -9: no clean close (no new snapshot), a load that computes everything."""
        self.crash()
        self.wallet = await self.service.load("")
        self.assertFalse(self.wallet.loaded_from_snapshot)

    def mark_columns(self, txid: bytes) -> tuple:
        connection = sqlite3.connect(self.path)
        try:
            return connection.execute("SELECT %s FROM txs WHERE txid = ?" % ", ".join(MARK_COLUMNS),
                                      (txid,)).fetchone()
        finally:
            connection.close()

    async def test_a_mark_by_a_spend_not_the_wallets_survives_a_computed_load(self):
        wtx = await self.conflicted_payment()
        before, balance = self.state(), self.wallet.balance(ISMINE_SPENDABLE, 0)
        await self.crash_and_load()
        self.assertEqual(self.wallet.depth(self.wallet.txs[wtx.txid]), -3)
        self.assertEqual(self.wallet.balance(ISMINE_SPENDABLE, 0), balance)
        self.assertEqual(self.state(), before)
        self.assertConsistent("a computed load")
        self.assertEqual(self.mark_columns(wtx.txid), tuple(wtx.conflict_block))

    async def test_a_mark_cleared_by_a_disconnect_stays_cleared(self):
        wtx = await self.conflicted_payment()
        await self.validation.invalidate_block(wtx.conflict_block.hash)
        wtx = self.wallet.txs[wtx.txid]
        self.assertIsNone(wtx.conflict_block)
        self.assertEqual(self.wallet.depth(wtx), 0)
        self.assertEqual(self.mark_columns(wtx.txid), (None, None, None))
        before = self.state()
        await self.crash_and_load()
        self.assertIsNone(self.wallet.txs[wtx.txid].conflict_block)
        self.assertEqual(self.state(), before)

    def downgrade(self, keep_snapshot: bool) -> None:
        """The unloaded wallet's file as the version before stored marks left it: ``txs``
        without the mark columns (and without its load snapshot unless ``keep_snapshot``)."""
        connection = sqlite3.connect(self.path)
        with connection:
            for name in MARK_COLUMNS:
                connection.execute("ALTER TABLE txs DROP COLUMN %s" % name)
            if not keep_snapshot:
                connection.execute("DELETE FROM meta WHERE name = ?", (SNAPSHOT_NAME,))
        connection.close()

    async def test_an_old_file_gets_the_columns_and_its_snapshots_marks(self):
        """At its first open an older file gets the columns; a load from its snapshot stores
        the snapshot's marks in them, so a crash after that computes them back."""
        wtx = await self.conflicted_payment()
        before = self.state()
        await self.service.remove("")
        self.downgrade(keep_snapshot=True)
        self.wallet = await self.service.load("")
        self.assertTrue(self.wallet.loaded_from_snapshot)
        self.assertEqual(self.mark_columns(wtx.txid), tuple(wtx.conflict_block))
        self.assertEqual(self.state(), before)
        await self.crash_and_load()
        self.assertEqual(self.state(), before)

    async def test_a_mark_only_an_older_coinds_snapshot_has_is_stored_at_load(self):
        """An older coind opens a new file (it names its columns) and writes a mark into its
        snapshot only: the next load stores it, so a crash after that keeps it."""
        wtx = await self.conflicted_payment()
        before = self.state()
        await self.service.remove("")
        connection = sqlite3.connect(self.path)
        with connection:  # what the older coind's writes of that row leave
            connection.execute("UPDATE txs SET %s WHERE txid = ?" % ", ".join(
                "%s = NULL" % name for name in MARK_COLUMNS), (wtx.txid,))
        connection.close()
        self.wallet = await self.service.load("")
        self.assertTrue(self.wallet.loaded_from_snapshot)
        self.assertEqual(self.state(), before)
        self.assertEqual(self.mark_columns(wtx.txid), tuple(wtx.conflict_block))
        self.receive_in_block(random.Random(3))  # one more write, then kill -9
        written = self.state()
        await self.crash_and_load()
        self.assertEqual(self.wallet.depth(self.wallet.txs[wtx.txid]), -4)
        self.assertEqual(self.state(), written)

    async def test_an_old_file_without_a_snapshot_gets_the_marks_of_wallet_spends(self):
        """Without a snapshot the marks set by wallet transactions are computed and stored
        (a mark by a spend that is not the wallet's was never in such a file)."""
        await self.history()
        both, one, _ = self.mined_double_spend()
        self.assertLess(self.wallet.depth(self.wallet.txs[both.txid]), 0)
        before = self.state()
        await self.service.remove("")
        self.downgrade(keep_snapshot=False)
        self.wallet = await self.service.load("")
        self.assertFalse(self.wallet.loaded_from_snapshot)
        self.assertEqual(self.state(), before)
        self.assertEqual(self.mark_columns(both.txid), tuple(self.wallet.txs[one.txid].block))


class OrderTests(SnapshotTestCase):

    async def test_removeprunedfunds_of_the_newest_does_not_reuse_its_number(self):
        await self.history()
        newest = max(self.wallet.txs.values(), key=lambda w: w.order_pos)
        next_order = self.wallet._next_order
        self.assertEqual(next_order, newest.order_pos + 1)
        self.assertTrue(self.wallet.remove_transaction(newest.txid))
        for from_snapshot in (True, False):
            await self.reopen(from_snapshot=from_snapshot, write_between=not from_snapshot)
            self.assertEqual(self.wallet._next_order, next_order)
        self.receive_in_block(random.Random(1))
        (received,) = [w for w in self.wallet.txs.values() if w.order_pos >= newest.order_pos]
        self.assertEqual(received.order_pos, next_order)
        self.assertEqual(self.meta(ORDER_NAME), b"%d" % next_order)  # (as Core's orderposnext)


class ComputedLoadWalkTests(test_wallet_snapshot.SnapshotWalkTests):
    """The random walk with reloads on seeds 5-12, where a computed load used to answer
    otherwise than the load from the snapshot (the next order number after a removal), with
    one more step: a payment to the wallet double-spent by a mined spend that is not the
    wallet's.  Each reload compares a load from the snapshot and a computed one with the
    state before."""

    timeout = 1800
    steps = test_wallet_snapshot.SnapshotWalkTests.steps + ("double_spent",)

    async def do(self, step: str, rng: random.Random, sent: List[bytes],
                 removed: List[tuple]) -> None:
        if step == "double_spent":
            double_spent_payment(self)
        else:
            await super().do(step, rng, sent, removed)

    async def test_random_walks_with_reloads(self):
        for seed in range(5, 13):
            done = await self.walk(seed, 40)
            self.assertIn("reload", done)
