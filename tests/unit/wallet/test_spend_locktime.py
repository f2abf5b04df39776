"""Core 0.17's nSequence and anti-fee-sniping lock time in the transactions the wallet
builds (CWallet::CreateTransaction), with an injected random source."""

from __future__ import annotations

import random
from collections import Counter
from typing import List

from coin.chainparams import COIN
from coin.consensus.tx_check import is_final_tx
from coin.mempool.policy import FeeRate
from coin.wallet.spend import (
    ANTI_SNIPING_MAX_AGE, FeePolicy, Recipient, anti_fee_sniping_locktime, create_transaction,
)

from tests.unit.wallet.test_wallet import ELSEWHERE, WalletTestCase


class ScriptedRandom(random.Random):
    """Answers randrange with the given values in turn (and records the bounds asked), then
    as a generator seeded with 0 (the change position, drawn after the lock time)."""

    def __init__(self, *answers: int) -> None:
        super().__init__(0)
        self.answers: List[int] = list(answers)
        self.asked: List[int] = []

    def randrange(self, stop, *rest):  # type: ignore[override]
        self.asked.append(stop)
        return self.answers.pop(0) if self.answers else super().randrange(stop, *rest)


class LockTimeRuleTests(WalletTestCase):
    """The rule alone: the height, or one time in ten up to 99 blocks back, never below 0."""

    def test_nine_draws_in_ten_keep_the_height(self):
        for draw in range(1, 10):
            rng = ScriptedRandom(draw)
            self.assertEqual(anti_fee_sniping_locktime(500, rng), 500)
            self.assertEqual(rng.asked, [10])

    def test_the_tenth_goes_back_up_to_99_blocks(self):
        for back in (0, 1, 57, 99):
            rng = ScriptedRandom(0, back)
            self.assertEqual(anti_fee_sniping_locktime(500, rng), 500 - back)
            self.assertEqual(rng.asked, [10, ANTI_SNIPING_MAX_AGE])

    def test_never_below_zero(self):
        self.assertEqual(anti_fee_sniping_locktime(30, ScriptedRandom(0, 99)), 0)
        self.assertEqual(anti_fee_sniping_locktime(0, ScriptedRandom(0, 5)), 0)

    def test_distribution_from_a_seeded_source(self):
        rng = random.Random(2117)
        draws = Counter(1000 - anti_fee_sniping_locktime(1000, rng) for _ in range(20_000))
        self.assertEqual(set(draws), set(range(100)))  # every age from 0 to 99, none older
        at_height = draws[0] / 20_000  # 0.9 + 0.1 / 100 expected
        self.assertTrue(0.89 < at_height < 0.92, at_height)
        self.assertEqual(draws.most_common(1)[0][0], 0)


class WalletTransactionTests(WalletTestCase):
    """What create_transaction builds, and that the pool takes it at once."""

    def setUp(self) -> None:
        super().setUp()
        self.mine_to_wallet(101)
        self.rbf_fees = self.fees._replace(signal_rbf=True)

    def create(self, fees: FeePolicy, rng: random.Random, amount: int = COIN):
        return create_transaction(self.wallet, [Recipient(ELSEWHERE, amount)], fees, rng=rng)

    def assertAccepted(self, tx) -> None:
        tip = self.chainstate.tip
        self.assertTrue(is_final_tx(tx, tip.height + 1, tip.median_time_past()))
        self.wallet.sync_transaction(tx, None)
        self.mempool.accept_on_worker(self.chainstate, tx)
        self.assertIn(tx.txid, self.mempool.pool.entries)

    def test_not_replaceable_sequence_and_the_tip_height(self):
        created = self.create(self.fees, ScriptedRandom(3))
        self.assertEqual(created.tx.locktime, self.chainstate.tip.height)
        self.assertEqual({i.sequence for i in created.tx.vin}, {0xFFFFFFFE})
        self.assertAccepted(created.tx)

    def test_replaceable_sequence(self):
        created = self.create(self.rbf_fees, ScriptedRandom(7))
        self.assertEqual(created.tx.locktime, self.chainstate.tip.height)
        self.assertEqual({i.sequence for i in created.tx.vin}, {0xFFFFFFFD})
        self.assertAccepted(created.tx)

    def test_a_lock_time_gone_back_is_accepted(self):
        created = self.create(self.fees, ScriptedRandom(0, 42))
        self.assertEqual(created.tx.locktime, self.chainstate.tip.height - 42)
        self.assertAccepted(created.tx)

    def test_many_sends_are_final_in_the_next_block(self):
        """Whatever the signatures' sizes make the fee settlement try, the lock time never
        passes the tip (a later one would be refused as non-final)."""
        rng = random.Random(5)
        height = self.chainstate.tip.height
        for n in range(20):  # an unconfirmed chain: the pool takes 25
            fees = self.rbf_fees if n % 2 else self.fees
            created = self.create(fees, rng, COIN // 7 + n * 12_345)
            self.assertTrue(height - ANTI_SNIPING_MAX_AGE < created.tx.locktime <= height)
            self.assertAccepted(created.tx)

    def test_fee_settlement_keeps_the_lock_time(self):
        """A new signature may be a byte longer or shorter, so settling the fee on the signed
        size can go back and forth; it re-signs with nonce entropy, never moving the lock
        time off the height (it did in about a quarter of sends)."""
        height = self.chainstate.tip.height
        rate = self.fees.rate(self.wallet.pay_tx_fee)
        for n in range(60):
            created = self.create(self.fees, ScriptedRandom(1), COIN + n * 7919)
            self.assertEqual(created.tx.locktime, height)
            self.assertEqual(created.fee, rate.get_fee(created.tx.size))

    def test_unsigned_funding_uses_the_same_sequences(self):
        created = create_transaction(self.wallet, [Recipient(ELSEWHERE, COIN)],
                                     self.fees._replace(fixed=FeeRate(2000)), sign=False,
                                     rng=ScriptedRandom(1))
        self.assertEqual({i.sequence for i in created.tx.vin}, {0xFFFFFFFE})
        self.assertEqual({i.script_sig for i in created.tx.vin}, {b""})
