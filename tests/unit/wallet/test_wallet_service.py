"""Wallet domain operations called on the service directly, as the GUI and plugins call them.

The RPC wallet modules only parse, call these and format; here the operations run
without the RPC layer: unlock and its relock timer (on a task.Clock), the rescan
reservation and abort, send (recorded, submitted, abandoned when the pool refuses
it), fund and abandon, on a running validation worker over a regtest chain.
"""

from __future__ import annotations

import os

from twisted.internet import reactor
from twisted.internet.defer import Deferred
from twisted.internet.task import Clock
from twisted.trial.unittest import TestCase

from coin.chain.chainstate import ChainState
from coin.chain.service import ValidationService
from coin.chainparams import COIN, REGTEST
from coin.mempool.accept import PoolPolicy
from coin.mempool.policy import FeeRate
from coin.mempool.pool import Mempool
from coin.mempool.service import MempoolService
from coin.primitives.hashes import hash160
from coin.primitives.transaction import Transaction, TxOut
from coin.script.standard import p2pkh_script
from coin.storage.chainstore import ChainStore
from coin.testing.chainbuilder import ChainBuilder
from coin.wallet.errors import WalletError
from coin.wallet.keystore import WalletLocked
from coin.wallet.rescan import RESCANNING
from coin.wallet.service import MAX_SLEEP_TIME, TransactionRejected, WalletService
from coin.wallet.spend import FeePolicy, Recipient, SpendError

NOW = 1_800_000_000
ELSEWHERE = p2pkh_script(b"\x07" * 20)
PASSPHRASE = b"correct horse"


class ServiceTestCase(TestCase):
    """A running validation worker, a mempool and a wallet service with a fake clock."""

    max_tx_fee = 10 * COIN

    def setUp(self) -> Deferred:
        datadir = self.mktemp()
        store = ChainStore(datadir, REGTEST)
        store.open()
        self.validation = ValidationService(ChainState(REGTEST, store), reactor)
        self.validation.startService()
        self.addCleanup(self.validation.stopService)
        self.mempool = MempoolService(self.validation, Mempool(now=lambda: NOW),
                                      PoolPolicy(require_standard=False), now=lambda: NOW,
                                      max_tx_fee=self.max_tx_fee)
        self.clock = Clock()
        self.service = WalletService(self.validation, self.mempool, REGTEST,
                                     os.path.join(datadir, "wallets"), now=lambda: NOW,
                                     keypool_size=5, reactor=reactor, clock=self.clock)
        self.addCleanup(self.service.stopService)
        self.fees = FeePolicy(FeeRate(1000), FeeRate(0), None, 10_000_000)
        return self.validation.ready.addCallback(lambda _: Deferred.fromCoroutine(self._load()))

    async def _load(self) -> None:
        self.wallet = await self.service.load("", create=True)
        self.chainstate = self.validation.chainstate

    def mine_to_wallet(self, count: int) -> None:
        builder = ChainBuilder(self.chainstate)
        builder.script_pubkey = p2pkh_script(hash160(self.wallet.keys.take_from_pool(False)))
        builder.mine(count)

    def assertWalletError(self, failure_or_error, code: int, message: str) -> None:
        self.assertIsInstance(failure_or_error, WalletError)
        self.assertEqual((failure_or_error.rpc_code, failure_or_error.message), (code, message))


class RelockTests(ServiceTestCase):
    async def encrypted(self) -> None:
        await self.service.encrypt(self.wallet, PASSPHRASE)
        self.assertTrue(self.wallet.keys.locked)

    async def test_unlock_relocks_after_the_timeout(self):
        await self.encrypted()
        await self.service.unlock(self.wallet, PASSPHRASE, 60)
        self.assertFalse(self.wallet.keys.locked)
        self.assertEqual(self.wallet.keys.unlocked_until, NOW + 60)
        self.clock.advance(59)
        self.assertFalse(self.wallet.keys.locked)
        self.clock.advance(1)
        self.assertTrue(self.wallet.keys.locked)
        self.assertEqual(self.clock.getDelayedCalls(), [])

    async def test_a_new_unlock_replaces_the_pending_relock(self):
        await self.encrypted()
        await self.service.unlock(self.wallet, PASSPHRASE, 60)
        self.clock.advance(30)
        await self.service.unlock(self.wallet, PASSPHRASE, 100)
        self.assertEqual(len(self.clock.getDelayedCalls()), 1)
        self.clock.advance(31)  # past the first timeout: still unlocked
        self.assertFalse(self.wallet.keys.locked)
        self.clock.advance(69)
        self.assertTrue(self.wallet.keys.locked)

    async def test_lock_and_unload_cancel_the_relock(self):
        await self.encrypted()
        await self.service.unlock(self.wallet, PASSPHRASE, 60)
        await self.service.lock(self.wallet)
        self.assertTrue(self.wallet.keys.locked)
        self.assertEqual(self.clock.getDelayedCalls(), [])
        await self.service.unlock(self.wallet, PASSPHRASE, 60)
        await self.service.remove("")
        self.assertEqual(self.service.wallets, {})
        self.assertEqual(self.clock.getDelayedCalls(), [])

    async def test_timeout_is_capped_and_a_wrong_passphrase_is_refused(self):
        await self.encrypted()
        try:
            await self.service.unlock(self.wallet, b"wrong", 60)
        except WalletError as e:
            self.assertWalletError(e, -14, "Error: The wallet passphrase entered was incorrect.")
        else:
            self.fail("a wrong passphrase unlocked the wallet")
        self.assertTrue(self.wallet.keys.locked)
        self.assertEqual(self.clock.getDelayedCalls(), [])
        await self.service.unlock(self.wallet, PASSPHRASE, MAX_SLEEP_TIME + 5)
        self.assertEqual(self.wallet.keys.unlocked_until, NOW + MAX_SLEEP_TIME)
        self.assertEqual(self.clock.getDelayedCalls()[0].getTime(), MAX_SLEEP_TIME)

    async def test_change_passphrase(self):
        await self.encrypted()
        await self.service.change_passphrase(self.wallet, PASSPHRASE, b"new one")
        try:
            await self.service.change_passphrase(self.wallet, PASSPHRASE, b"other")
        except WalletError as e:
            self.assertWalletError(e, -14, "Error: The wallet passphrase entered was incorrect.")
        else:
            self.fail("the old passphrase still works")
        await self.service.unlock(self.wallet, b"new one", 10)
        self.assertFalse(self.wallet.keys.locked)


class RescanTests(ServiceTestCase):
    def test_one_rescan_per_wallet_and_abort(self):
        rescanner = self.service.rescanner
        self.assertFalse(rescanner.abort(self.wallet))
        with rescanner.reserve(self.wallet) as reservation:
            error = self.assertRaises(WalletError, rescanner.reserve(self.wallet).__enter__)
            self.assertWalletError(error, -4, RESCANNING)
            self.assertTrue(rescanner.abort(self.wallet))
            self.assertTrue(reservation.aborting)
            self.assertFalse(rescanner.abort(self.wallet))  # already stopping
        self.assertFalse(rescanner.abort(self.wallet))
        with rescanner.reserve(self.wallet) as reservation:  # free again
            self.assertFalse(reservation.aborting)

    async def test_rescan_blockchain_checks_heights_and_frees_the_wallet(self):
        self.mine_to_wallet(3)
        for start, stop, message in [(-1, None, "Invalid start_height"),
                                     (4, None, "Invalid start_height"),
                                     (0, 4, "Invalid stop_height"),
                                     (2, 1, "stop_height must be greater than start_height")]:
            try:
                await self.service.rescan_blockchain(self.wallet, start, stop)
            except WalletError as e:
                self.assertWalletError(e, -8, message)
            else:
                self.fail("heights %r..%r accepted" % (start, stop))
        self.assertEqual(await self.service.rescan_blockchain(self.wallet, None, None), (0, 3))
        self.assertEqual(await self.service.rescan_blockchain(self.wallet, 1, 2), (1, 2))

    async def test_abort_stops_a_running_rescan(self):
        self.mine_to_wallet(3)
        scanning = self.service.rescan_blockchain(self.wallet, None, None)
        # Reserved before its first chunk runs on the worker: abort it there.
        self.assertTrue(self.service.rescanner.abort(self.wallet))
        try:
            await scanning
        except WalletError as e:
            self.assertWalletError(e, -1, "Rescan aborted.")
        else:
            self.fail("the aborted rescan finished")
        self.assertFalse(self.service.rescanner.abort(self.wallet))


class SendTests(ServiceTestCase):
    async def test_send_records_then_submits(self):
        self.mine_to_wallet(101)
        created = await self.service.send(self.wallet, [Recipient(ELSEWHERE, COIN)], self.fees)
        txid = created.tx.txid
        self.assertIn(txid, self.mempool.pool.entries)
        self.assertIn(txid, self.wallet.txs)
        self.assertFalse(self.wallet.txs[txid].abandoned)

    async def test_send_needs_the_keys(self):
        self.mine_to_wallet(101)
        await self.service.encrypt(self.wallet, PASSPHRASE)
        with self.assertRaises(WalletLocked):
            await self.service.send(self.wallet, [Recipient(ELSEWHERE, COIN)], self.fees)
        await self.service.unlock(self.wallet, PASSPHRASE, 60)
        with self.assertRaises(SpendError):
            await self.service.send(self.wallet, [Recipient(ELSEWHERE, 10_000 * COIN)],
                                    self.fees)

    async def test_abandon(self):
        self.mine_to_wallet(101)
        created = await self.service.send(self.wallet, [Recipient(ELSEWHERE, COIN)], self.fees)
        unknown = b"\x01" * 32
        for txid, message in [(unknown, "Invalid or non-wallet transaction id"),
                              (created.tx.txid, "Transaction not eligible for abandonment")]:
            try:
                await self.service.abandon(self.wallet, txid)
            except WalletError as e:
                self.assertWalletError(e, -5, message)
            else:
                self.fail("abandoned %s" % txid.hex())

    async def test_fund_adds_inputs_and_change_and_locks_them(self):
        self.mine_to_wallet(101)
        tx = Transaction([], [TxOut(COIN, ELSEWHERE)])
        created = await self.service.fund(self.wallet, tx, [Recipient(ELSEWHERE, COIN)],
                                          self.fees, None, False, True)
        self.assertEqual(len(created.tx.vin), 1)
        self.assertGreaterEqual(created.change_pos, 0)
        self.assertEqual(self.wallet.locked_coins, {(txin.prevout.txid, txin.prevout.n)
                                                    for txin in created.tx.vin})
        self.assertNotIn(created.tx.txid, self.wallet.txs)  # funded, not sent


class RejectedSendTests(ServiceTestCase):
    max_tx_fee = 1  # the pool refuses any fee above one base unit

    async def test_a_send_the_pool_refuses_is_abandoned(self):
        self.mine_to_wallet(101)
        before = self.wallet.balance()
        with self.assertRaises(TransactionRejected) as raised:
            await self.service.send(self.wallet, [Recipient(ELSEWHERE, COIN)], self.fees)
        self.assertEqual(self.mempool.pool.entries, {})
        (wtx,) = [wtx for wtx in self.wallet.txs.values() if not wtx.tx.is_coinbase()]
        self.assertTrue(wtx.abandoned)  # its coins are back
        self.assertEqual(self.wallet.balance(), before)
        self.assertIn("absurdly-high-fee", str(raised.exception))
