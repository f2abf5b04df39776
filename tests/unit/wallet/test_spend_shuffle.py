"""Where the wallet puts the change output and in which order it spends the coins it selected,
as Core 0.17's CWallet::CreateTransaction (a random position, GetRandInt(vout.size() + 1), and
the selected coins shuffled before signing), with an injected random source."""

from __future__ import annotations

import random
from collections import Counter
from typing import List

from coin.chainparams import COIN
from coin.script.standard import p2pkh_script
from coin.wallet.spend import Created, Recipient, create_transaction

from tests.unit.wallet.test_spend_locktime import ScriptedRandom
from tests.unit.wallet.test_wallet import ELSEWHERE, WalletTestCase

#: A second payee, so a send has two recipients and the change three places to go.
OTHER = p2pkh_script(b"\x08" * 20)


class ChangePositionTests(WalletTestCase):

    def setUp(self) -> None:
        super().setUp()
        self.mine_to_wallet(105)  # five mature coinbases of 50

    def create(self, recipients: List[Recipient], rng: random.Random, **options) -> Created:
        return create_transaction(self.wallet, recipients, self.fees, rng=rng, **options)

    def assertChangeAt(self, created: Created, recipients: List[Recipient]) -> None:
        """The change is the wallet's own output at ``change_pos``; the recipients' outputs
        keep their order around it."""
        outputs = list(created.tx.vout)
        change = outputs.pop(created.change_pos)
        self.assertTrue(self.wallet.is_change(change))
        self.assertEqual([out.script_pubkey for out in outputs],
                         [r.script_pubkey for r in recipients])

    def test_every_position_occurs_with_a_seeded_source(self):
        rng = random.Random(21)
        for recipients, places in (([Recipient(ELSEWHERE, COIN)], 2),
                                   ([Recipient(ELSEWHERE, COIN), Recipient(OTHER, 2 * COIN)], 3)):
            positions: Counter = Counter()
            for _ in range(40):
                created = self.create(recipients, rng)
                self.assertChangeAt(created, recipients)
                positions[created.change_pos] += 1
            self.assertEqual(set(positions), set(range(places)), positions)

    def test_the_same_seed_gives_the_same_order(self):
        """Deterministic with a seeded source (each build takes a new change key, whose
        signatures' sizes move the change by a few units: the order and lock time are kept)."""
        recipients = [Recipient(ELSEWHERE, 120 * COIN), Recipient(OTHER, COIN)]

        def shape(created: Created) -> tuple:
            return (created.change_pos, created.tx.locktime,
                    [(i.prevout.txid, i.prevout.n) for i in created.tx.vin])

        self.assertEqual(shape(self.create(recipients, random.Random(7))),
                         shape(self.create(recipients, random.Random(7))))

    def test_the_position_drawn_is_among_the_recipients_and_after_them(self):
        """Each pass of the fee loop draws a position among len(recipients) + 1, after the
        lock time's draw (Core's GetRandInt(vout.size() + 1) in each pass)."""
        recipients = [Recipient(ELSEWHERE, COIN), Recipient(OTHER, COIN)]
        for position in range(3):
            rng = ScriptedRandom(5, *[position] * 20)  # lock time at the tip, then the places
            created = self.create(recipients, rng)
            self.assertEqual(rng.asked[0], 10)
            self.assertEqual(set(rng.asked[1:]), {3})
            self.assertEqual(created.change_pos, position)
            self.assertChangeAt(created, recipients)

    def test_fee_from_a_recipient_after_the_change(self):
        """With the change first, the fee settled on the signed size comes off the recipient
        paying it, not the change (which is the inputs less the amount asked)."""
        rate = self.fees.rate(self.wallet.pay_tx_fee)
        for n in range(12):
            amount = COIN + n * 7919
            created = self.create([Recipient(ELSEWHERE, amount, True)], ScriptedRandom(5, *[0] * 20))
            change, paid = created.tx.vout
            value_in = sum(self.wallet.txs[i.prevout.txid].tx.vout[i.prevout.n].value
                           for i in created.tx.vin)
            self.assertEqual((created.change_pos, paid.script_pubkey), (0, ELSEWHERE))
            self.assertEqual(change.value, value_in - amount)
            self.assertEqual(paid.value, amount - created.fee)
            self.assertEqual(created.fee, rate.get_fee(created.tx.size))


class InputOrderTests(WalletTestCase):

    def setUp(self) -> None:
        super().setUp()
        self.mine_to_wallet(106)  # six mature coinbases of 50

    def test_selected_coins_are_shuffled_and_the_transaction_is_mined(self):
        orders = set()
        spent = set()
        rng = random.Random(2117)
        for _ in range(12):
            created = create_transaction(self.wallet, [Recipient(ELSEWHERE, 220 * COIN)],
                                         self.fees, rng=rng)
            outpoints = tuple((i.prevout.txid, i.prevout.n) for i in created.tx.vin)
            self.assertEqual(len(outpoints), 5)
            spent.add(frozenset(outpoints))
            orders.add(outpoints)
        self.assertEqual(len(spent), 1)  # the same coins, in several orders
        self.assertGreater(len(orders), 6)
        self.wallet.sync_transaction(created.tx, None)
        self.mempool.accept_on_worker(self.chainstate, created.tx)
        self.builder.mine(1, txs=[created.tx])
        self.assertEqual(self.wallet.depth(self.wallet.txs[created.tx.txid]), 1)
        self.assertEqual(len(self.mempool.pool), 0)

    def test_funding_keeps_the_given_inputs_first(self):
        """fundrawtransaction's own inputs keep their place; only the added ones are shuffled
        (Core's FundTransaction appends the new inputs in the shuffled order)."""
        coins = sorted(self.wallet.available_coins(), key=lambda c: c.outpoint)
        given = [coins[-1], coins[0]]
        orders = set()
        rng = random.Random(3)
        for _ in range(10):  # 280 needs every coin: the two given and the four others
            created = create_transaction(self.wallet, [Recipient(ELSEWHERE, 280 * COIN)],
                                         self.fees, preset=given, sign=False, rng=rng)
            outpoints = [(i.prevout.txid, i.prevout.n) for i in created.tx.vin]
            self.assertEqual(outpoints[:2], [c.outpoint for c in given])
            self.assertEqual(sorted(outpoints[2:]), [c.outpoint for c in coins[1:-1]])
            orders.add(tuple(outpoints[2:]))
        self.assertGreater(len(orders), 1)
