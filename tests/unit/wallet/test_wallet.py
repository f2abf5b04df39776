"""The wallet core on a real chain state and mempool (no RPC, no reactor running):
keys and key pool, following blocks, reorgs and the pool, balances, spending,
persistence and encryption."""

from __future__ import annotations

import glob
import os
import shutil
import sqlite3

from twisted.internet import reactor
from twisted.trial.unittest import SynchronousTestCase

from coin.chain.service import ValidationService
from coin.chainparams import COIN, REGTEST
from coin.mempool.accept import PoolPolicy
from coin.mempool.policy import FeeRate
from coin.mempool.pool import Mempool
from coin.mempool.service import MempoolService
from coin.primitives.address import Destination, decode_address, encode_address
from coin.primitives.hashes import hash160
from coin.script.standard import p2pkh_script
from coin.testing.chainbuilder import ChainBuilder, open_chain
from coin.wallet.crypter import WrongPassphrase
from coin.wallet import keystore
from coin.wallet.db import WalletDB
from coin.wallet.keystore import WalletLocked
from coin.wallet.service import WalletLoadError, WalletService
from coin.wallet.spend import FeePolicy, Recipient, SpendError, create_transaction
from coin.wallet.wallet import WalletCorrupt

NOW = 1_800_000_000
ELSEWHERE = p2pkh_script(b"\x07" * 20)


class WalletTestCase(SynchronousTestCase):
    def setUp(self) -> None:
        datadir = self.mktemp()
        self.chainstate = open_chain(datadir)
        self.addCleanup(self.chainstate.close)
        self.validation = ValidationService(self.chainstate, reactor)
        self.mempool = MempoolService(self.validation, Mempool(now=lambda: NOW), PoolPolicy(),
                                      now=lambda: NOW)
        self.walletdir = os.path.join(datadir, "wallets")
        self.service = WalletService(self.validation, self.mempool, REGTEST, self.walletdir,
                                     now=lambda: NOW, keypool_size=5)
        self.wallet = self.service.open_wallet(self.chainstate, "", create=True)
        self.addCleanup(self.service.stopService)
        self.builder = ChainBuilder(self.chainstate)
        self.fees = FeePolicy(FeeRate(1000), FeeRate(0), None, 10_000_000)

    def mine_to_wallet(self, count: int) -> None:
        address_script = self.receive_script()
        self.builder.script_pubkey = address_script
        self.builder.mine(count)

    def receive_script(self) -> bytes:
        pubkey = self.wallet.keys.take_from_pool(internal=False)
        return p2pkh_script(hash160(pubkey))

    def send(self, amount: int, **options):
        created = create_transaction(self.wallet, [Recipient(ELSEWHERE, amount, **options)],
                                     self.fees)
        self.wallet.sync_transaction(created.tx, None)
        self.mempool.accept_on_worker(self.chainstate, created.tx)
        return created


class KeyTests(WalletTestCase):
    def test_new_wallet_has_a_seed_and_a_full_pool(self):
        external, internal, oldest = self.wallet.keys.pool_counts()
        self.assertEqual((external, internal), (5, 5))
        self.assertEqual(len(self.wallet.keys.keys), 10)
        self.assertEqual(len(self.wallet.keys.hd_master_key_id), 20)
        paths = sorted(r.hd_path for r in self.wallet.keys.keys.values())
        self.assertEqual(paths[:2], ["m/0'/0'/0'", "m/0'/0'/1'"])
        address = self.wallet.new_address("salary")
        self.assertEqual(self.wallet.names[address], ("salary", "receive"))
        self.assertEqual(self.wallet.keys.pool_counts()[:2], (5, 5))  # refilled

    def test_file_is_private_and_reopens_identically(self):
        path = os.path.join(self.walletdir, "wallet.dat")
        self.assertEqual(os.stat(path).st_mode & 0o777, 0o600)
        address = self.wallet.new_address("x")
        keys = set(self.wallet.keys.keys)
        self.service.unload("")
        again = self.service.open_wallet(self.chainstate, "", create=False)
        self.assertEqual(set(again.keys.keys), keys)
        self.assertEqual(again.names[address], ("x", "receive"))

    def test_load_errors(self):
        with self.assertRaises(WalletLoadError) as caught:
            self.service.open_wallet(self.chainstate, "", create=False)
        self.assertEqual(caught.exception.rpc_code, -4)
        with self.assertRaises(WalletLoadError) as caught:
            self.service.open_wallet(self.chainstate, "missing", create=False)
        self.assertEqual((caught.exception.rpc_code, caught.exception.message),
                         (-18, "Wallet missing not found."))
        for bad in ("../escape", "/abs/../x", "a//b"):
            with self.assertRaises(WalletLoadError) as caught:
                self.service.open_wallet(self.chainstate, bad, create=True)
            self.assertEqual(caught.exception.rpc_code, -4)
        garbage = os.path.join(self.walletdir, "junk", "wallet.dat")
        os.makedirs(os.path.dirname(garbage))
        with open(garbage, "wb") as f:
            f.write(b"not a database" * 100)
        with self.assertRaises(WalletLoadError):
            self.service.open_wallet(self.chainstate, "junk", create=False)
        with open(garbage, "rb") as f:
            self.assertEqual(f.read(), b"not a database" * 100)  # untouched


class TrackingTests(WalletTestCase):
    def test_coinbase_maturity_and_balances(self):
        self.mine_to_wallet(101)
        self.assertEqual(self.wallet.balance(), 50 * COIN)
        self.assertEqual(self.wallet.immature_balance(), 100 * 50 * COIN)
        self.assertEqual(len(self.wallet.txs), 101)

    def test_spend_confirm_reorg_and_reload(self):
        self.mine_to_wallet(101)
        created = self.send(10 * COIN)
        fee = created.fee
        self.assertEqual(fee, FeeRate(20_000).get_fee(created.tx.size))  # the fallback rate
        wtx = self.wallet.txs[created.tx.txid]
        self.assertEqual((self.wallet.depth(wtx), self.wallet.is_trusted(wtx)), (0, True))
        self.assertEqual(self.wallet.balance(), 40 * COIN - fee)
        received, sent, paid = self.wallet.amounts(wtx, 3)
        self.assertEqual(([(v, n) for _, v, n in sent], paid), ([(10 * COIN, 1 - created.change_pos)],
                                                                 fee))
        block = self.builder.mine(1, txs=[created.tx])[0]
        self.assertEqual(self.wallet.depth(wtx), 1)
        self.assertEqual(len(self.mempool.pool), 0)
        self.chainstate.invalidate_block(block.hash)
        self.assertEqual(self.wallet.depth(wtx), 0)
        self.assertIn(created.tx.txid, self.mempool.pool)
        self.chainstate.reconsider_block(block.hash)
        self.assertEqual(self.wallet.depth(wtx), 1)
        self.service.unload("")
        again = self.service.open_wallet(self.chainstate, "", create=False)
        self.assertEqual(again.depth(again.txs[created.tx.txid]), 1)
        self.assertEqual(again.balance(), 40 * COIN - fee + 50 * COIN)

    def test_insufficient_funds_and_dust(self):
        self.mine_to_wallet(101)
        with self.assertRaises(SpendError) as caught:
            self.send(51 * COIN)
        self.assertEqual((caught.exception.rpc_code, caught.exception.message),
                         (-6, "Insufficient funds"))
        with self.assertRaises(SpendError) as caught:
            self.send(100)
        self.assertEqual(caught.exception.message, "Transaction amount too small")

    def test_subtract_fee_from_amount(self):
        self.mine_to_wallet(101)
        created = self.send(50 * COIN, subtract_fee=True)
        self.assertEqual(len(created.tx.vout), 1)
        self.assertEqual(created.tx.vout[0].value, 50 * COIN - created.fee)
        self.assertEqual(self.wallet.balance(), 0)

    def test_abandon_returns_the_coins(self):
        self.mine_to_wallet(101)
        created = create_transaction(self.wallet, [Recipient(ELSEWHERE, COIN)], self.fees)
        self.wallet.sync_transaction(created.tx, None)  # signed, never broadcast
        self.assertEqual(self.wallet.balance(), 0)  # untrusted: not in the pool
        self.wallet.abandon(created.tx.txid)
        self.assertEqual(self.wallet.balance(), 50 * COIN)

    def test_abandoned_transaction_back_in_the_pool_is_not_abandoned(self):
        self.mine_to_wallet(101)
        created = create_transaction(self.wallet, [Recipient(ELSEWHERE, COIN)], self.fees)
        txid = created.tx.txid
        self.wallet.sync_transaction(created.tx, None)
        self.wallet.abandon(txid)
        self.assertEqual(self.wallet.balance(), 50 * COIN)
        # sendrawtransaction's path: the pool takes it, the wallet hears of it.
        self.mempool.accept_on_worker(self.chainstate, created.tx)
        self.assertFalse(self.wallet.txs[txid].abandoned)
        change = 49 * COIN - created.fee
        self.assertEqual(self.wallet.balance(), change)  # the change, not the input as well
        self.assertEqual([c.outpoint for c in self.wallet.available_coins()],
                         [(txid, n) for n, out in enumerate(created.tx.vout) if out.value == change])
        self.service.unload("")
        again = self.service.open_wallet(self.chainstate, "", create=False)
        self.assertFalse(again.txs[txid].abandoned)


class EncryptionTests(WalletTestCase):
    def test_encrypt_lock_unlock(self):
        self.mine_to_wallet(101)
        secrets = [r.secret for r in self.wallet.keys.keys.values()]
        self.wallet.keys.encrypt(b"correct horse")
        self.assertTrue(self.wallet.keys.locked)
        data = b"".join(open(p, "rb").read()
                        for p in glob.glob(os.path.join(self.walletdir, "wallet.dat*")))
        for secret in secrets:
            self.assertNotIn(secret, data)
        self.assertRaises(WalletLocked, self.send, COIN)
        self.assertRaises(WrongPassphrase, self.wallet.keys.unlock, b"wrong")
        self.wallet.keys.unlock(b"correct horse")
        self.send(COIN)
        self.wallet.keys.change_passphrase(b"correct horse", b"new one")
        self.wallet.keys.lock()
        self.assertRaises(WrongPassphrase, self.wallet.keys.unlock, b"correct horse")
        self.wallet.keys.unlock(b"new one")


class OwnershipTests(WalletTestCase):
    def test_p2pkh_fast_path_and_bounded_cache(self):
        keys = self.wallet.keys
        mine = self.receive_script()
        watched = p2pkh_script(b"\x09" * 20)
        keys.add_watch(watched)
        self.assertEqual([keys.is_mine(s) for s in (mine, watched, ELSEWHERE)], [2, 1, 0])
        self.patch(keystore, "MAX_NOT_MINE_CACHE", 3)
        for i in range(10):
            self.assertEqual(keys.is_mine(p2pkh_script(bytes((0x40 + i,)) * 20)), 0)
            self.assertLessEqual(len(keys._not_mine_cache), 3)
        self.assertEqual(keys.is_mine(mine), 2)


class BestBlockTests(WalletTestCase):
    def saved_best(self) -> bytes:
        meta = {row["name"]: row["value"] for row in self.wallet.db.load()["meta"]}
        return meta["best_block"]

    def test_unrelated_blocks_are_saved_lazily_and_at_close(self):
        start = self.saved_best()
        self.builder.mine(5)  # pays the builder's key, not the wallet
        self.assertEqual(self.wallet.best_block, self.chainstate.tip.hash)
        self.assertEqual(self.saved_best(), start)
        self.mine_to_wallet(1)  # a block that concerns the wallet is saved at once
        self.assertEqual(self.saved_best(), self.chainstate.tip.hash)
        self.builder.script_pubkey = ELSEWHERE
        self.builder.mine(2)
        self.service.unload("")
        again = self.service.open_wallet(self.chainstate, "", create=False)
        self.assertEqual(again.best_block, self.chainstate.tip.hash)


def rewrite(path: str, statement: str, *params) -> None:
    """Change a closed wallet file behind the wallet's back (a damaged disk, an attacker)."""
    conn = sqlite3.connect(path)
    try:
        with conn:
            conn.execute(statement, params)
    finally:
        conn.close()


class IntegrityTests(WalletTestCase):
    """Core's "CPrivKey corrupt": a private key that is not its public key's is never used."""

    def setUp(self) -> None:
        super().setUp()
        self.path = os.path.realpath(os.path.join(self.walletdir, "wallet.dat"))
        self.address = self.wallet.new_address("mine")
        self.pubkey = self.wallet.keys.by_hash[decode_address(self.address, REGTEST).hash160]

    def assertRefused(self, pubkey: bytes) -> None:
        with self.assertRaises(WalletLoadError) as caught:
            self.service.open_wallet(self.chainstate, "", create=False)
        address = encode_address(Destination("pubkeyhash", hash160(pubkey)), REGTEST)
        self.assertEqual((caught.exception.rpc_code, caught.exception.message), (
            -4, "Wallet loading failed: Error loading %s: Wallet corrupted: the private key of "
                "%s (public key %s) does not match it (CPrivKey corrupt)"
                % (self.path, address, pubkey.hex())))
        self.assertNotIn("", self.service.wallets)

    def test_a_damaged_clear_key_refuses_the_wallet(self):
        secret = self.wallet.keys.secret_of(self.pubkey)
        self.service.unload("")
        for damaged in (bytes((secret[0] ^ 1,)) + secret[1:], b"\0" * 32, secret[:31]):
            rewrite(self.path, "UPDATE keys SET secret = ? WHERE pubkey = ?", damaged, self.pubkey)
            self.assertRefused(self.pubkey)
        rewrite(self.path, "UPDATE keys SET secret = ? WHERE pubkey = ?", secret, self.pubkey)
        self.assertEqual(self.service.open_wallet(self.chainstate, "", create=False)
                         .keys.secret_of(self.pubkey), secret)

    def test_a_damaged_seed_refuses_the_wallet(self):
        seed_pubkey = self.wallet.keys.seed_pubkey
        self.service.unload("")
        rewrite(self.path, "UPDATE meta SET value = ? WHERE name = 'hd_seed'", b"\x01" * 32)
        self.assertRefused(seed_pubkey)

    def test_a_damaged_encrypted_key_is_found_at_the_first_unlock(self):
        keys = self.wallet.keys
        secret = keys.secret_of(self.pubkey)
        keys.encrypt(b"pass")
        records = [r for r in keys.keys.values() if r.crypted is not None]
        victim, other = records[-1], records[0]
        self.service.unload("")
        # Another key's ciphertext: it decrypts (the padding holds) to a key that is not this one.
        rewrite(self.path, "UPDATE keys SET crypted = ? WHERE pubkey = ?", other.crypted,
                victim.pubkey)
        wallet = self.service.open_wallet(self.chainstate, "", create=False)  # locked: loads
        address = encode_address(Destination("pubkeyhash", hash160(victim.pubkey)), REGTEST)
        with self.assertRaises(WalletCorrupt) as caught:
            wallet.unlock(b"pass")
        self.assertEqual(caught.exception.message, (
            "Error: Wallet corrupted: the private key of %s (public key %s) does not match it; "
            "it stays locked" % (address, victim.pubkey.hex())))
        self.assertTrue(wallet.keys.locked)
        self.assertRaises(WrongPassphrase, wallet.unlock, b"wrong")
        self.service.unload("")
        rewrite(self.path, "UPDATE keys SET crypted = ? WHERE pubkey = ?", victim.crypted,
                victim.pubkey)
        wallet = self.service.open_wallet(self.chainstate, "", create=False)
        wallet.unlock(b"pass")
        self.assertEqual(wallet.keys.secret_of(self.pubkey), secret)


def read_all(path: str) -> bytes:
    """The file and its -wal and -shm companions, as they are on disk."""
    return b"".join(open(p, "rb").read() for p in sorted(glob.glob(glob.escape(path) + "*")))


class StaleWalTests(SynchronousTestCase):
    """A wallet reopened after a crash rewrites its file before anything else."""

    def test_frames_left_in_the_wal_are_scrubbed_at_open(self):
        directory = os.path.abspath(self.mktemp())
        os.makedirs(directory)
        live = os.path.join(directory, "wallet.dat")
        db = WalletDB(live)
        db.open(create=True)
        self.addCleanup(db.close)
        pubkey, secret = b"\x02" + b"\x11" * 32, os.urandom(32)
        db.put_keys([{"pubkey": pubkey, "secret": secret, "crypted": None, "hd_path": None,
                      "created": 1}])
        db.put_keys([{"pubkey": pubkey, "secret": None, "crypted": b"\x22" * 48,
                      "hd_path": None, "created": 1}])  # encryptwallet's write, then a crash:
        crashed = os.path.join(os.path.abspath(self.mktemp()), "wallet.dat")
        os.makedirs(os.path.dirname(crashed))
        for suffix in ("", "-wal"):  # the files as kill -9 leaves them (the WAL not emptied)
            shutil.copyfile(live + suffix, crashed + suffix)
        self.assertTrue(secret in read_all(crashed + "-wal"), "the crash image holds the key")

        reopened = WalletDB(crashed)
        self.assertFalse(reopened.open(create=False))
        self.addCleanup(reopened.close)
        self.assertFalse(secret in read_all(crashed), "a clear key is still on disk")
        self.assertEqual(os.path.getsize(crashed + "-wal"), 0)
        [row] = reopened.load()["keys"]
        self.assertEqual((row["secret"], row["crypted"]), (None, b"\x22" * 48))
