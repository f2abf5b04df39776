"""Superblocks (coin.governance.superblock) and the built-in sentinel's trigger
(coin.governance.sentinel): parsing, choice, payment checks, ranking within the budget."""

from __future__ import annotations

import json

from twisted.trial.unittest import SynchronousTestCase

from coin.chainparams import COIN, REGTEST
from coin.consensus.subsidy import block_subsidy
from coin.governance.object import NULL_HASH, GovernanceObject, data_as_string
from coin.governance.sentinel import funded_proposals, trigger_data
from coin.governance.service import GovernanceService
from coin.governance.superblock import (
    Superblocks, TriggerError, chosen_triggers, pays, trigger_payments,
)
from coin.governance.vote import OUTCOME_NO, OUTCOME_YES, SIGNAL_FUNDING
from coin.primitives.address import Destination, encode_address
from coin.primitives.transaction import OutPoint, Transaction, TxIn, TxOut
from coin.script.standard import p2pkh_script

from tests.govhelpers import NOW, object_hex, proposal_hex
from tests.unit.governance.test_governance_relay import GovernanceCase

A = encode_address(Destination("pubkeyhash", b"\x01" * 20), REGTEST)
B = encode_address(Destination("pubkeyhash", b"\x02" * 20), REGTEST)
SCRIPT_A, SCRIPT_B = p2pkh_script(b"\x01" * 20), p2pkh_script(b"\x02" * 20)
BUDGET_170 = block_subsidy(170, REGTEST)  # 10% of the subsidy x the 10-block cycle


def trigger(height: int = 170, addresses: str = A, amounts: str = "12.5", revision: int = 1
            ) -> GovernanceObject:
    return GovernanceObject(NULL_HASH, revision, NOW, NULL_HASH, object_hex("trigger", {
        "event_block_height": height, "payment_addresses": addresses, "payment_amounts": amounts,
        "type": 2}))


def coinbase(*outputs) -> Transaction:
    return Transaction([TxIn(OutPoint())], [TxOut(value, script) for script, value in outputs])


class TriggerTests(SynchronousTestCase):
    def test_payments(self):
        self.assertEqual(trigger_payments(trigger(addresses=A + "|" + B, amounts="12.5|0.00000001"),
                                          REGTEST),
                         (170, ((SCRIPT_A, 1250000000), (SCRIPT_B, 1))))
        for bad, why in ((trigger(height=171), "not a superblock height"),
                         (trigger(addresses=A + "|" + B), "differ in count"),
                         (trigger(addresses="nope"), "invalid payment address"),
                         (trigger(amounts="0"), "invalid payment amount"),
                         (trigger(amounts="0.000000001"), "invalid payment amount"),
                         (trigger(amounts="x"), "invalid payment amount"),
                         (trigger(amounts=str(BUDGET_170 // COIN + 1)), "exceed the superblock budget")):
            with self.assertRaises(TriggerError) as caught:
                trigger_payments(bad, REGTEST)
            self.assertIn(why, str(caught.exception))

    def test_pays_every_payment_once(self):
        owed = ((SCRIPT_A, 5), (SCRIPT_A, 5))
        self.assertTrue(pays(coinbase((SCRIPT_B, 1), (SCRIPT_A, 5), (SCRIPT_A, 5)), owed))
        self.assertFalse(pays(coinbase((SCRIPT_A, 5)), owed))
        self.assertFalse(pays(coinbase((SCRIPT_A, 6), (SCRIPT_A, 5)), owed))


class VotedCase(GovernanceCase):
    masternodes = 20

    def setUp(self):
        super().setUp()
        self.chain.height = 165
        self.governance.rate_checks = False

    def keep(self, obj: GovernanceObject, yes: int, no: int = 0) -> GovernanceObject:
        self.governance.store.add(obj, self.mns, NOW)
        for n in range(yes + no):
            self.governance.add_vote(self.mns.vote(n, obj.hash, SIGNAL_FUNDING,
                                                   OUTCOME_YES if n < yes else OUTCOME_NO))
        return obj


class ChoiceTests(VotedCase):
    def test_most_net_yes_above_the_threshold_wins(self):
        # 20 enabled masternodes: max(quorum 1, 20 / 10) = 2 net yes votes needed.
        weak = self.keep(trigger(revision=1), yes=3, no=2)
        strong = self.keep(trigger(revision=2, amounts="1"), yes=4, no=1)
        self.keep(trigger(height=180, revision=3), yes=1)
        self.keep(trigger(height=160, revision=4), yes=9)  # past: not owed
        chosen = chosen_triggers(self.governance.store, 165, REGTEST, 1, 20)
        self.assertEqual(list(chosen), [170])
        self.assertEqual(chosen[170], (strong, ((SCRIPT_A, COIN),)))
        self.assertNotEqual(weak, strong)

    def test_a_tie_goes_to_the_lowest_hash(self):
        first, second = (self.keep(trigger(revision=n, amounts=str(n)), yes=2) for n in (1, 2))
        lowest = min((first, second), key=lambda obj: obj.hash[::-1])
        self.assertIs(chosen_triggers(self.governance.store, 165, REGTEST, 1, 20)[170][0], lowest)


class FakeState:
    params = REGTEST
    height = 165
    superblock_check = superblock_payments = None

    def adjusted_time(self) -> int:
        return NOW


class Switch:
    def __init__(self) -> None:
        self.on = True

    def is_active(self, spork_id: int, now: int) -> bool:
        return self.on

    def is_synced(self) -> bool:
        return self.on


class RuleTests(VotedCase):
    def test_the_rule_on_the_chain_state(self):
        state, spork, synced = FakeState(), Switch(), Switch()
        superblocks = Superblocks(self.governance, state, spork, synced)
        self.assertEqual((state.superblock_check, state.superblock_payments),
                         (superblocks.check, superblocks.payments))
        self.keep(trigger(), yes=2)  # the vote hook chose it
        self.assertEqual(tuple(state.superblock_payments(170)), ((SCRIPT_A, 1250000000),))
        self.assertEqual(state.superblock_check(170, coinbase((SCRIPT_A, 1250000000))), 1250000000)
        self.assertIsNone(state.superblock_check(170, coinbase((SCRIPT_A, 1250000001))))
        self.assertEqual(state.superblock_check(169, coinbase()), 0)
        # Restarted, the saved trigger is owed at once (the superblock rule needs no new vote).
        self.governance.store.save(self.governance.datadir)
        again = GovernanceService(self.chain, self.governance.datadir, lambda: NOW, self.clock, self.mns)
        Superblocks(again, state, spork, synced)
        again.startService()
        self.addCleanup(again.stopService)
        self.assertEqual(state.superblock_check(170, coinbase((SCRIPT_A, 1250000000))), 1250000000)
        synced.on = False  # without the votes, anything within the budget
        self.assertEqual(state.superblock_check(170, coinbase()), BUDGET_170)
        spork.on = False  # SPORK_9 off: no superblock is paid nor required
        self.assertEqual(state.superblock_payments(170), ())
        self.assertEqual(state.superblock_check(170, coinbase()), 0)


class SentinelTests(VotedCase):
    def proposal(self, name: str, address: str, amount: float, revision: int = 1) -> GovernanceObject:
        return GovernanceObject(NULL_HASH, revision, NOW, b"\x03" * 32,
                                proposal_hex(address, name=name, payment_amount=amount))

    def test_ranked_by_net_yes_and_cut_to_the_budget(self):
        budget = BUDGET_170 / COIN
        big = self.keep(self.proposal("big", A, budget - 1), yes=3)
        small = self.keep(self.proposal("small", B, 2), yes=5)
        self.keep(self.proposal("bigger", A, budget - 3), yes=4)  # more votes than "big"
        self.keep(self.proposal("unfunded", B, 1), yes=1)  # below 2 net yes
        chosen = funded_proposals(self.governance, 170, NOW)
        # small (5 yes) then bigger (4 yes, fits in what is left); big no longer fits.
        self.assertEqual([(address, amount) for _, address, amount in chosen],
                         [(B, 2 * COIN), (A, int((budget - 3) * COIN))])
        self.assertEqual(chosen[0][0], small.hash)
        self.assertNotIn(big.hash, [h for h, _, _ in chosen])
        data = trigger_data(170, chosen)
        self.assertEqual(json.loads(data_as_string(data))[0][1]["payment_amounts"],
                         "2.00000000|%d.%08d" % divmod(int((budget - 3) * COIN), COIN))
        # Canonical: the same proposals give the same data (every masternode converges),
        # and the data is a payable trigger.
        self.assertEqual(trigger_data(170, list(chosen)), data)
        self.assertEqual(trigger_payments(GovernanceObject(NULL_HASH, 1, NOW, NULL_HASH, data),
                                          REGTEST)[1], ((SCRIPT_B, 2 * COIN),
                                                        (SCRIPT_A, int((budget - 3) * COIN))))

    def test_ended_proposals_are_not_paid(self):
        self.keep(self.proposal("old", A, 1), yes=3)
        self.assertEqual(funded_proposals(self.governance, 170, 1800000001), [])
