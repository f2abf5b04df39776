"""BIP125 replacement in the pool (Core 0.17's rules, reasons, codes and debug texts),
on a real chain state: each rule refused, evictions with descendants, the estimator."""

from __future__ import annotations

from twisted.internet import reactor

from coin.chain.service import ValidationService
from coin.consensus.errors import (
    REJECT_DUPLICATE, REJECT_INSUFFICIENTFEE, REJECT_INVALID, REJECT_NONSTANDARD, ValidationError,
)
from coin.mempool.accept import PoolPolicy
from coin.mempool.pool import REMOVED_REPLACED, AncestorLimits
from coin.mempool.rbf import MAX_BIP125_RBF_SEQUENCE, rbf_state, signals_rbf
from coin.mempool.service import MempoolService
from tests.unit.mempool.test_mempool import PoolTestCase

#: Opts in (the highest nSequence that does).
RBF = MAX_BIP125_RBF_SEQUENCE
#: Does not opt in (the lowest nSequence that does not).
FINAL = MAX_BIP125_RBF_SEQUENCE + 1


class ReplacementTestCase(PoolTestCase):

    def spend(self, coins, fee: int = 10_000, sequence: int = RBF, outputs=None):
        return self.builder.spend(coins, outputs, fee=fee, sequence=sequence)

    def refused(self, tx, reason: str, code: int, debug: str = ""):
        """``tx`` is refused with Core's reason and code, and the pool does not change."""
        before = (dict(self.pool.entries), dict(self.pool.spenders), self.pool.total_usage)
        with self.assertRaises(ValidationError) as caught:
            self.accept(tx)
        self.assertEqual((caught.exception.reason, caught.exception.code), (reason, code))
        if debug:
            self.assertEqual(caught.exception.debug, debug)
        self.assertEqual((dict(self.pool.entries), dict(self.pool.spenders),
                          self.pool.total_usage), before)
        return caught.exception


class SignallingTests(ReplacementTestCase):

    def test_signals_below_0xfffffffe_on_any_input(self):
        coins = self.fan_out(1, 2)
        self.assertFalse(signals_rbf(self.spend(coins, sequence=FINAL)))
        self.assertFalse(signals_rbf(self.spend(coins, sequence=0xFFFFFFFF)))
        self.assertTrue(signals_rbf(self.spend(coins, sequence=RBF)))
        self.assertTrue(signals_rbf(self.spend(coins, sequence=0)))

    def test_inherited_signalling_is_reported_not_enforced(self):
        parent = self.spend(self.coinbase(1))
        self.accept(parent)
        child = self.spend(self.builder.outputs_of(parent)[0], sequence=FINAL)
        self.assertEqual(rbf_state(self.pool, child), "unknown")
        self.accept(child)
        self.assertEqual((rbf_state(self.pool, parent), rbf_state(self.pool, child)),
                         ("yes", "yes"))
        # Core 0.17 replaces only a conflict that signals itself.
        self.refused(self.spend(self.builder.outputs_of(parent)[0], fee=50_000),
                     "txn-mempool-conflict", REJECT_DUPLICATE)
        lone = self.spend(self.coinbase(2), sequence=FINAL)
        self.accept(lone)
        self.assertEqual(rbf_state(self.pool, lone), "no")

    def test_no_signal_no_replacement(self):
        self.accept(self.spend(self.coinbase(1), sequence=FINAL))
        self.refused(self.spend(self.coinbase(1), fee=50_000), "txn-mempool-conflict",
                     REJECT_DUPLICATE)


class DisabledTests(ReplacementTestCase):
    policy = PoolPolicy(replacement=False)

    def test_mempoolreplacement_off_refuses_signalling_conflicts(self):
        self.accept(self.spend(self.coinbase(1)))
        self.refused(self.spend(self.coinbase(1), fee=50_000), "txn-mempool-conflict",
                     REJECT_DUPLICATE)


class RuleTests(ReplacementTestCase):

    def test_replacement_evicts_conflicts_and_descendants(self):
        removed = []
        self.pool.on_removed = lambda entry, reason: removed.append((entry.txid, reason))
        original = self.spend(self.coinbase(1))
        child = self.spend(self.builder.outputs_of(original)[0])
        other = self.spend(self.coinbase(2))
        for tx in (original, child, other):
            self.accept(tx)
        replacement = self.spend(self.coinbase(1), fee=30_000)
        self.assertEqual(self.accept(replacement, test_only=True).replaced, [])
        self.assertEqual(len(self.pool), 3)  # testmempoolaccept evicts nothing
        result = self.accept(replacement)
        self.assertEqual(sorted(e.txid for e in result.replaced), sorted([original.txid, child.txid]))
        self.assertEqual(sorted(removed), sorted([(original.txid, REMOVED_REPLACED),
                                                  (child.txid, REMOVED_REPLACED)]))
        self.assertEqual(set(self.pool.entries), {replacement.txid, other.txid})
        self.assertEqual(self.pool.total_size, replacement.size + other.size)
        self.assertNotIn((original.txid, 0), self.pool.spenders)

    def test_feerate_must_rise_over_each_direct_conflict(self):
        original = self.spend(self.coinbase(1), fee=20_000)
        self.accept(original)
        # More fee in all (enough for its bandwidth too), but a bigger transaction.
        script, value = self.builder.script_pubkey, self.coinbase(1).value
        bigger = self.spend(self.coinbase(1), outputs=[(script, 10 ** 8)] * 3
                            + [(script, value - 3 * 10 ** 8 - 25_000)])
        old, new = 20_000 * 1000 // original.size, 25_000 * 1000 // bigger.size
        self.assertLess(new, old)
        self.refused(bigger, "insufficient fee", REJECT_INSUFFICIENTFEE,
                     "rejecting replacement %s; new feerate 0.%08d COIN/kB <= old feerate "
                     "0.%08d COIN/kB" % (bigger.txid_hex, new, old))

    def test_must_pay_the_fees_of_everything_evicted(self):
        original = self.spend(self.coinbase(1), fee=10_000)
        child = self.spend(self.builder.outputs_of(original)[0], fee=40_000)
        self.accept(original)
        self.accept(child)
        # A higher fee rate than the direct conflict, less than the two together.
        replacement = self.spend(self.coinbase(1), fee=30_000)
        self.refused(replacement, "insufficient fee", REJECT_INSUFFICIENTFEE,
                     "rejecting replacement %s, less fees than conflicting txs; 0.0003 < 0.0005"
                     % replacement.txid_hex)

    def test_must_pay_for_its_own_bandwidth(self):
        original = self.spend(self.coinbase(1), fee=10_000)
        self.accept(original)
        # A higher fee rate and more fees, but less extra than 1000 sat/kB of its own size.
        replacement = self.spend(self.coinbase(1), fee=10_100)
        self.refused(replacement, "insufficient fee", REJECT_INSUFFICIENTFEE,
                     "rejecting replacement %s, not enough additional fees to relay; "
                     "0.000001 < 0.00000%d" % (replacement.txid_hex, replacement.size))
        self.accept(self.spend(self.coinbase(1), fee=10_000 + 200))

    def test_no_new_unconfirmed_inputs(self):
        original = self.spend(self.coinbase(1))
        unrelated = self.spend(self.coinbase(2))
        self.accept(original)
        self.accept(unrelated)
        replacement = self.spend([self.coinbase(1), self.builder.outputs_of(unrelated)[0]],
                                 fee=50_000)
        self.refused(replacement, "replacement-adds-unconfirmed", REJECT_NONSTANDARD,
                     "replacement %s adds unconfirmed input, idx 1" % replacement.txid_hex)
        # A confirmed new input is fine.
        self.accept(self.spend([self.coinbase(1), self.coinbase(3)], fee=50_000))

    def test_unconfirmed_parent_of_a_conflict_may_be_spent(self):
        half = (self.coinbase(1).value - 10_000) // 2
        parent = self.spend(self.coinbase(1), sequence=FINAL,
                            outputs=[(self.builder.script_pubkey, half)] * 2)
        self.accept(parent)
        first, second = self.builder.outputs_of(parent)
        self.accept(self.spend(first))
        self.accept(self.spend([first, second], fee=50_000))

    def test_spending_a_conflict_is_invalid(self):
        original = self.spend(self.coinbase(1))
        self.accept(original)
        replacement = self.spend([self.coinbase(1), self.builder.outputs_of(original)[0]],
                                 fee=50_000)
        error = self.refused(replacement, "bad-txns-spends-conflicting-tx", REJECT_INVALID,
                             "%s spends conflicting transaction %s"
                             % (replacement.txid_hex, original.txid_hex))
        self.assertEqual(error.dos, 10)


class EvictionLimitTests(ReplacementTestCase):
    policy = PoolPolicy(limits=AncestorLimits(200, 10 ** 7, 200, 10 ** 7))

    def test_at_most_100_evicted_descendants_included(self):
        root = self.spend(self.coinbase(1), fee=1000)
        chain = [root] + self.chain_of(self.builder.outputs_of(root)[0], 100, fee=1000)
        for tx in chain:
            self.accept(tx)
        replacement = self.spend(self.coinbase(1), fee=1_000_000)
        self.refused(replacement, "too many potential replacements", REJECT_NONSTANDARD,
                     "rejecting replacement %s; too many potential replacements (101 > 100)\n"
                     % replacement.txid_hex)
        self.pool.remove_recursive(chain[-1], "test")
        self.assertEqual(len(self.accept(replacement).replaced), 100)
        self.assertEqual(list(self.pool.entries), [replacement.txid])


class EstimatorTests(ReplacementTestCase):

    def test_replacements_are_not_fee_samples(self):
        service = MempoolService(ValidationService(self.chainstate, reactor), self.pool,
                                 self.policy, now=lambda: self.now)
        original = self.spend(self.coinbase(1))
        service.accept_on_worker(self.chainstate, original)
        self.assertIn(original.txid, service.estimator._tracked)
        replacement = self.spend(self.coinbase(1), fee=50_000)
        service.accept_on_worker(self.chainstate, replacement)
        self.assertEqual(service.estimator._tracked, {})
