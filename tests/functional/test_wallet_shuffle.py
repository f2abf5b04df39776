"""The change output's position and the inputs' order in wallet-built transactions on real
nodes, as the reference node (Core 0.17's CreateTransaction, FundTransaction and feebumper)
makes them: change at a random position unless fundrawtransaction's ``changePosition`` fixes
it, the selected coins spent in a random order after the caller's own inputs, and bumpfee
keeping the original's order whatever the change's place."""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Dict, List, Tuple

from tests.functional.test_wallet_tx import EXTERNAL, FundedCase, call, decoded, sat
from tests.nodeharness import NodeClient

#: With the system's random source, one position out of two is missed by 20 sends with
#: probability 2**-19; a fixed order of 3 added inputs survives 8 fundings with (1/6)**7.
SENDS = 20
FUNDINGS = 8


def addresses(tx: Dict[str, Any]) -> List[str]:
    return [out["scriptPubKey"]["addresses"][0] for out in tx["vout"]]


def outpoints(tx: Dict[str, Any]) -> List[Tuple[str, int]]:
    return [(txin["txid"], txin["vout"]) for txin in tx["vin"]]


class ChangePositionTests(FundedCase):

    def change_position(self, node: NodeClient, tx: Dict[str, Any]) -> int:
        """The one output the wallet calls change (gettransaction lists the others)."""
        listed = {d["vout"] for d in call(node, "gettransaction", tx["txid"])["details"]}
        [position] = set(range(len(tx["vout"]))) - listed
        return position

    def test_sends_put_the_change_anywhere(self) -> None:
        node = self.shared.node
        positions = set()
        for n in range(SENDS):
            tx = decoded(node, call(node, "sendtoaddress", EXTERNAL, 1))
            position = self.change_position(node, tx)
            self.assertEqual(addresses(tx)[1 - position], EXTERNAL)
            positions.add(position)
            if n % 10 == 9:  # unconfirmed chains of change stay short
                call(node, "generatetoaddress", 1, EXTERNAL)
        self.assertEqual(positions, {0, 1})
        other = call(node, "getnewaddress")
        positions = set()
        for _ in range(SENDS):
            tx = decoded(node, call(node, "sendmany", "", {EXTERNAL: 1, other: 2}))
            positions.add(self.change_position(node, tx))
        self.assertGreater(len(positions), 1)
        self.assertLessEqual(positions, {0, 1, 2})

    def test_fundrawtransaction_change_position(self) -> None:
        node = self.shared.node
        other = call(node, "getnewaddress")
        raw = call(node, "createrawtransaction", [], [{EXTERNAL: 1}, {other: 2}])
        change = call(node, "getrawchangeaddress")
        for position in range(3):
            funded = call(node, "fundrawtransaction", raw, {"changePosition": position,
                                                            "changeAddress": change})
            self.assertEqual(funded["changepos"], position)
            listed = addresses(call(node, "decoderawtransaction", funded["hex"]))
            self.assertEqual(listed.pop(position), change)
            self.assertEqual(listed, [EXTERNAL, other])
        positions = set()
        for _ in range(SENDS):
            funded = call(node, "fundrawtransaction", raw, {"changePosition": -1,
                                                            "changeAddress": change})
            listed = addresses(call(node, "decoderawtransaction", funded["hex"]))
            self.assertEqual(listed[funded["changepos"]], change)
            positions.add(funded["changepos"])
        self.assertGreater(len(positions), 1)
        for position in (3, -2):
            self.assertError(node, -8, "changePosition out of bounds", "fundrawtransaction",
                             raw, {"changePosition": position})
        psbt = call(node, "walletcreatefundedpsbt", [], [{EXTERNAL: 1}, {other: 2}], 0,
                    {"changePosition": 0, "changeAddress": change})
        self.assertEqual(psbt["changepos"], 0)
        self.assertEqual(addresses(call(node, "decodepsbt", psbt["psbt"])["tx"]),
                         [change, EXTERNAL, other])
        self.assertError(node, -8, "changePosition out of bounds", "walletcreatefundedpsbt",
                         [], [{EXTERNAL: 1}], 0, {"changePosition": 2})

    def test_bumpfee_with_the_change_first(self) -> None:
        """bumpfee finds the change by its address, lowers it where it is and keeps the
        order of the inputs and outputs."""
        node = self.shared.node
        raw = call(node, "createrawtransaction", [], {EXTERNAL: 1})
        funded = call(node, "fundrawtransaction", raw, {"changePosition": 0, "replaceable": True})
        signed = call(node, "signrawtransactionwithwallet", funded["hex"])["hex"]
        original = decoded(node, call(node, "sendrawtransaction", signed))
        self.assertEqual(addresses(original)[1], EXTERNAL)
        bump = call(node, "bumpfee", original["txid"])
        bumped = decoded(node, bump["txid"])
        self.assertEqual(outpoints(bumped), outpoints(original))
        self.assertEqual(addresses(bumped), addresses(original))
        self.assertEqual(bumped["vout"][1]["value"], Decimal(1))
        self.assertEqual(sat(original["vout"][0]["value"]) - sat(bumped["vout"][0]["value"]),
                         sat(bump["fee"]) - sat(bump["origfee"]))
        call(node, "generatetoaddress", 1, EXTERNAL)
        self.assertEqual(call(node, "gettransaction", bump["txid"])["confirmations"], 1)


class InputOrderTests(FundedCase):

    def test_added_inputs_in_random_order_after_the_given_one(self) -> None:
        node = self.shared.node
        coin = call(node, "listunspent")[0]
        given = (coin["txid"], coin["vout"])
        raw = call(node, "createrawtransaction", [{"txid": given[0], "vout": given[1]}],
                   {EXTERNAL: 180})  # the given 50 and three more coins of 50
        orders = set()
        for _ in range(FUNDINGS):
            tx = call(node, "decoderawtransaction", call(node, "fundrawtransaction", raw)["hex"])
            self.assertEqual(outpoints(tx)[0], given)
            self.assertEqual(len(tx["vin"]), 4)
            orders.add(tuple(outpoints(tx)[1:]))
        self.assertGreater(len(orders), 1)

    def test_a_send_of_many_coins_is_mined(self) -> None:
        node = self.shared.node
        txid = call(node, "sendtoaddress", EXTERNAL, 420)  # nine coins of 50
        self.assertEqual(len(decoded(node, txid)["vin"]), 9)
        call(node, "generatetoaddress", 1, EXTERNAL)
        self.assertEqual(call(node, "gettransaction", txid)["confirmations"], 1)
        self.assertEqual(call(node, "getrawmempool"), [])
