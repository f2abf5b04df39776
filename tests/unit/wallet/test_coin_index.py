"""The wallet's coin index (coin.wallet.coinindex) against full recomputation.

A seeded random walk drives a wallet on a running validation worker through
receives, sends (to itself and outside), blocks, reorgs (invalidate and
reconsider), abandons, fee bumps, locks, removeprunedfunds/importprunedfunds
and key imports; after every step the incremental index must equal one rebuilt
from the wallet's transactions, and every answer read from it (balances,
available coins, listunspent's order, coin selection) must equal a full scan of
every transaction.  The walk mines past the coinbase maturity so that most
transactions are deep enough to be summed from the running totals.
"""

from __future__ import annotations

import random
from typing import Any, Dict, List, Tuple

from coin.chainparams import COIN
from coin.primitives.hashes import hash160
from coin.primitives.transaction import Transaction
from coin.script.standard import p2pkh_script
from coin.testing.chainbuilder import ChainBuilder, deterministic_key
from coin.wallet.keystore import ISMINE_ALL, ISMINE_SPENDABLE, ISMINE_WATCH_ONLY
from coin.wallet.service import TransactionRejected
from coin.wallet import spend
from coin.wallet.spend import (
    Recipient, SpendError, _indexed_tiers, _listed_tiers, _select, create_transaction,
)
from coin.wallet.wallet import BlockRef
from tests.unit.wallet.test_wallet_service import ELSEWHERE, ServiceTestCase

OUTSIDE_KEY = deterministic_key("coin index test: outside")


class IndexTestCase(ServiceTestCase):
    """A wallet with an outside miner whose coins pay the wallet."""

    #: What a random walk's step may be (:meth:`do`).
    steps = ("receive", "send", "send_self", "send_rbf", "mine", "mine_deep", "reorg", "abandon",
             "bump", "lock", "unlock", "prune", "unprune", "mine_wallet", "label", "watch")

    async def _load(self) -> None:
        await super()._load()
        self.outside = ChainBuilder(self.chainstate, OUTSIDE_KEY)
        self.rbf_fees = self.fees._replace(signal_rbf=True)
        #: A script outside the wallet until the walk watches it.
        self.watched = p2pkh_script(hash160(
            deterministic_key("coin index test: watched").public_key.format()))

    def own_script(self) -> bytes:
        return p2pkh_script(hash160(self.wallet.keys.take_from_pool(False)))

    def mine(self, count: int, to_wallet: bool = False) -> None:
        """``count`` blocks; the first takes the whole mempool."""
        builder = ChainBuilder(self.chainstate) if to_wallet else self.outside
        if to_wallet:
            builder.script_pubkey = self.own_script()
        with self.mempool.pool.lock:
            pooled = [entry.tx for entry in self.mempool.pool.entries.values()]
        pooled.sort(key=self._ancestors)
        builder.mine(1, txs=pooled)
        if count > 1:
            builder.mine(count - 1)

    def _ancestors(self, tx: Transaction) -> int:
        """How many pooled ancestors ``tx`` has (blocks list parents first)."""
        with self.mempool.pool.lock:
            entry = self.mempool.pool.get(tx.txid)
            return entry.count_with_ancestors if entry is not None else 0

    def receive_in_block(self, rng: random.Random) -> None:
        """A payment from outside straight in a block (to one to three own scripts), from
        the outside miner's oldest coinbase (mature, and below any reorg of the walk)."""
        coin = self.outside.coinbase_outputs.pop(0)
        outputs = [(self.own_script(), rng.randrange(COIN // 100, COIN))
                   for _ in range(rng.randrange(1, 4))]
        outputs.append((self.outside.script_pubkey,
                        coin.value - sum(value for _, value in outputs) - 10_000))
        self.outside.mine(1, txs=[self.outside.spend(coin, outputs=outputs)])

    def mined_double_spend(self) -> Tuple[Transaction, Transaction, List[Any]]:
        """``(both, one, coins)``: a wallet spend of two coins recorded unconfirmed, then
        ``one`` spending the first of them mined (another wallet transaction). The two largest
        coins: a random history's smallest may not cover the amounts."""
        coins = sorted(self.wallet.available_coins(),
                       key=lambda c: (-c.txout.value, c.outpoint))[:2]
        total = sum(c.txout.value for c in coins)
        both = create_transaction(self.wallet, [Recipient(ELSEWHERE, total - COIN)], self.fees,
                                  coins=[], preset=coins).tx
        self.assertTrue(self.wallet.sync_transaction(both, None))
        one = create_transaction(self.wallet, [Recipient(ELSEWHERE, COIN)], self.fees, coins=[],
                                 preset=coins[:1]).tx
        self.outside.mine(1, txs=[one])
        return both, one, coins

    # ------------------------------------------------------------------ the referee

    def full_scan(self) -> Dict[str, Any]:
        """The answers with the index's running totals out of the way (every transaction
        checked in full, as before the index)."""
        wallet = self.wallet
        wallet.coins.usable = lambda: False
        try:
            return self.answers(full=True)
        finally:
            del wallet.coins.usable

    def answers(self, full: bool = False, depths: Tuple[int, ...] = (0, 1, 6, 101, 102, 150, 10_000),
                legacy_depths: Tuple[int, ...] = (0, 1, 6, 101, 150)) -> Dict[str, Any]:
        wallet = self.wallet
        with wallet.lock:
            result: Dict[str, Any] = {
                "balance": [wallet.balance(f, d) for f in (ISMINE_SPENDABLE, ISMINE_ALL)
                            for d in depths],
                "legacy": [wallet.legacy_balance(f, d) for f in (ISMINE_SPENDABLE, ISMINE_WATCH_ONLY,
                                                                 ISMINE_ALL)
                           for d in legacy_depths],
                "unconfirmed": wallet.unconfirmed_balance(),
                "immature": wallet.immature_balance(),
                "info": {k: v for k, v in wallet.info().items() if k != "unlocked_until"}}
            if full:
                every = [c for w in wallet.ordered_txs()
                         for c in wallet.coins_of(w, range(len(w.tx.vout)))]
                result["available"] = every
                result["by_outpoint"] = sorted(every, key=lambda c: c.outpoint)
                tiers = _listed_tiers(every)
            else:
                result["available"] = wallet.available_coins()
                result["by_outpoint"] = list(wallet.coins_by_outpoint())
                tiers = _indexed_tiers(wallet, set()) or _listed_tiers(wallet.available_coins())
            result["selected"] = [
                [c.outpoint for c in _select(tiers, target, zero_conf) or ()]
                for target in (COIN // 1000, COIN // 7, COIN, 3 * COIN, 49 * COIN, 400 * COIN)
                for zero_conf in (True, False)]
        return result

    def assertConsistent(self, step: str) -> None:
        self.wallet.coins.check()
        fast, full = self.answers(), self.full_scan()
        for key in full:
            self.assertEqual(fast[key], full[key], "%s after %s" % (key, step))

    async def walk(self, seed: int, steps: int) -> List[str]:
        rng = random.Random(seed)
        # The wallet's own draws (lock time, change position, input order) from the seed too,
        # so a walk that fails is the same walk when run again.
        self.patch(spend, "DEFAULT_RNG", random.Random(seed))
        self.mine(110)
        self.mine(101, to_wallet=True)
        self.assertConsistent("setup")
        done: List[str] = []
        sent: List[bytes] = []
        removed: List[tuple] = []
        for _ in range(steps):
            step = rng.choice(self.steps)
            try:
                await self.do(step, rng, sent, removed)
            except (SpendError, TransactionRejected):
                step += " (refused)"
            done.append(step)
            self.assertConsistent(" > ".join(done[-6:]))
        return done

    async def do(self, step: str, rng: random.Random, sent: List[bytes],
                 removed: List[tuple]) -> None:
        wallet = self.wallet
        if step == "receive":
            self.receive_in_block(rng)
        elif step in ("send", "send_self", "send_rbf"):
            to = {"send_self": self.own_script(), "send_rbf": self.watched}.get(step, ELSEWHERE)
            created = await self.service.send(
                wallet, [Recipient(to, rng.randrange(COIN // 1000, 3 * COIN))],
                self.rbf_fees if step == "send_rbf" else self.fees)
            sent.append(created.tx.txid)
        elif step == "mine":
            self.mine(rng.randrange(1, 4))
        elif step == "mine_deep":
            self.mine(rng.randrange(95, 110))
        elif step == "mine_wallet":
            self.mine(rng.randrange(1, 3), to_wallet=True)
        elif step == "reorg":
            depth = rng.randrange(1, 4)
            target = self.chainstate.tip
            for _ in range(depth - 1):
                target = target.prev
            await self.validation.invalidate_block(target.hash)
            self.assertConsistent("invalidateblock")
            if rng.random() < 0.5:
                await self.validation.reconsider_block(target.hash)
            else:
                self.mine(depth + 1)
        elif step == "abandon":
            pending = [t for t in sent if t in wallet.txs and wallet.depth(wallet.txs[t]) == 0]
            if pending:
                txid = rng.choice(pending)
                with self.mempool.pool.lock:
                    self.mempool.pool.remove_recursive(wallet.txs[txid].tx, "expiry")
                await self.service.abandon(wallet, txid)
        elif step == "bump":
            pending = [t for t in sent if t in wallet.txs and wallet.depth(wallet.txs[t]) == 0
                       and self.mempool.pool.get(t) is not None]
            if pending:
                await self.service.bump(wallet, rng.choice(pending), self.rbf_fees, 0)
        elif step == "lock":
            coins = wallet.available_coins()
            if coins:
                wallet.lock_coins([c.outpoint for c in rng.sample(coins, min(3, len(coins)))])
        elif step == "unlock":
            if rng.random() < 0.3:
                wallet.unlock_all_coins()
            elif wallet.locked_coins:
                wallet.lock_coins([rng.choice(sorted(wallet.locked_coins))], lock=False)
        elif step == "prune":
            confirmed = [w for w in wallet.txs.values() if wallet.depth(w) > 0
                         and not w.tx.is_coinbase()]
            if confirmed:
                wtx = rng.choice(confirmed)
                removed.append((wtx.tx, wtx.block))
                wallet.remove_transaction(wtx.txid)
        elif step == "label":
            scripts = [out.script_pubkey for w in wallet.txs.values() for out in w.tx.vout
                       if wallet.is_mine(out.script_pubkey)]
            if scripts:
                address = wallet.address_of(rng.choice(scripts))
                wallet.set_name(address, "label %d" % rng.randrange(3), "receive")
        elif step == "watch":
            # importaddress of a script the walk's sends paid: watch-only coins and change.
            wallet.keys.add_watch(self.watched)
        elif step == "unprune":
            if removed:
                tx, block = removed.pop(rng.randrange(len(removed)))
                wallet.import_pruned(tx, BlockRef(*block))


class RandomWalkTests(IndexTestCase):
    timeout = 600

    async def test_random_walks(self):
        for seed in (1, 2):
            await self.walk(seed, 40)


class UpdatePathTests(IndexTestCase):
    """Each update path on a wallet whose coins are deep (summed from the totals)."""

    async def deep_wallet(self) -> None:
        self.mine(110)
        self.mine(101, to_wallet=True)
        self.mine(105)

    async def test_maturity_without_any_wallet_change(self):
        self.mine(110)
        self.mine(101, to_wallet=True)
        self.mine(99)  # the wallet's last coinbase is one block short of maturity
        before, immature = self.wallet.balance(), self.wallet.immature_balance()
        self.assertGreater(immature, 0)
        self.mine(1)
        self.assertEqual(self.wallet.immature_balance(), 0)
        self.assertEqual(self.wallet.balance(), before + immature)
        self.assertConsistent("maturity")

    async def test_reorg_of_a_deep_block(self):
        await self.deep_wallet()
        deep = self.chainstate.tip
        for _ in range(104):
            deep = deep.prev
        await self.validation.invalidate_block(deep.hash)
        self.assertConsistent("invalidate a block 105 deep")
        await self.validation.reconsider_block(deep.hash)
        self.assertConsistent("reconsider it")

    async def test_lockunspent(self):
        await self.deep_wallet()
        coin = self.wallet.available_coins()[0]
        self.wallet.lock_coins([coin.outpoint])
        self.assertNotIn(coin.outpoint, [c.outpoint for c in self.wallet.available_coins()])
        tiers = _indexed_tiers(self.wallet, set())
        self.assertNotIn(coin.outpoint, [c.outpoint for c in _select(tiers, 50 * COIN, True)])
        self.assertConsistent("lockunspent")

    async def test_spend_abandon_and_removeprunedfunds(self):
        await self.deep_wallet()
        created = await self.service.send(self.wallet, [Recipient(ELSEWHERE, COIN)],
                                          self.rbf_fees)
        self.assertConsistent("send")
        await self.service.bump(self.wallet, created.tx.txid, self.rbf_fees, 0)
        self.assertConsistent("bumpfee")
        (bumped,) = [t for t in self.wallet.txs if t != created.tx.txid
                     and self.mempool.pool.get(t) is not None]
        with self.mempool.pool.lock:
            self.mempool.pool.remove_recursive(self.wallet.txs[bumped].tx, "expiry")
        await self.service.abandon(self.wallet, bumped)
        self.assertConsistent("abandon")
        coinbase = next(w for w in self.wallet.txs.values() if w.tx.is_coinbase())
        before = self.wallet.balance()
        self.wallet.remove_transaction(coinbase.txid)
        self.assertEqual(self.wallet.balance(), before - 50 * COIN)
        self.assertConsistent("removeprunedfunds")

    async def test_key_imports(self):
        """Outputs of known transactions that an import makes the wallet's count at once."""
        await self.deep_wallet()
        payee = deterministic_key("coin index test: imported")
        script = p2pkh_script(hash160(payee.public_key.format()))
        await self.service.send(self.wallet, [Recipient(script, 2 * COIN)], self.fees)
        self.mine(10)
        spendable, watched = self.wallet.balance(), self.wallet.balance(ISMINE_ALL)
        self.wallet.keys.add_watch(script)
        self.assertEqual(self.wallet.balance(ISMINE_ALL), watched + 2 * COIN)
        self.assertConsistent("importaddress")
        self.wallet.keys.add_key(payee.secret, True)
        self.assertEqual(self.wallet.balance(), spendable + 2 * COIN)
        self.assertConsistent("importprivkey")

    async def test_a_mined_conflict_gives_the_other_input_back(self):
        """A wallet spend of two coins, one of them then spent by a mined transaction: the
        spend is conflicted and its other coin is the wallet's again."""
        await self.deep_wallet()
        before = self.wallet.balance()
        both, one, coins = self.mined_double_spend()
        self.assertLess(self.wallet.depth(self.wallet.txs[both.txid]), 0)
        change = self.wallet.credit(one, ISMINE_SPENDABLE)
        self.assertEqual(self.wallet.balance(), before - coins[0].txout.value + change)
        self.assertConsistent("a conflicting spend mined")

    async def test_naming_a_watched_change_address(self):
        """sendmany's legacy balance counts an unnamed own output of an outgoing transaction
        as change; once named, a watch-only one no longer offsets the spend."""
        await self.deep_wallet()
        self.wallet.keys.add_watch(self.watched)
        await self.service.send(self.wallet, [Recipient(self.watched, 2 * COIN)], self.fees)
        self.mine(10)
        before = self.wallet.legacy_balance(ISMINE_SPENDABLE, 1)
        self.wallet.set_name(self.wallet.address_of(self.watched), "cold", "send")
        self.assertEqual(self.wallet.legacy_balance(ISMINE_SPENDABLE, 1), before - 2 * COIN)
        self.assertConsistent("setlabel")
