"""BIP125 in the wallet on real nodes: -walletrbf, the replaceable argument of sends and
fundrawtransaction, bip125-replaceable in listings, and a wallet transaction replaced
through the pool."""

from __future__ import annotations

from decimal import Decimal
from typing import Any, List

from tests.functional.test_wallet_tx import (
    ARGS, EXTERNAL, OTHER_WIF, UNLOCK_FIRST, FundedCase, call, decoded, fund, paid_fee, sat,
    tx_size,
)
from tests.nodeharness import NodeClient

#: The nSequence a replaceable wallet input has (Core's MAX_BIP125_RBF_SEQUENCE).
RBF_SEQUENCE = 0xFFFFFFFD
#: The wallet's non-replaceable inputs (Core's SEQUENCE_FINAL - 1: the lock time applies).
FINAL_SEQUENCE = 0xFFFFFFFE


def sequences(node: NodeClient, txid: str) -> List[int]:
    return [txin["sequence"] for txin in decoded(node, txid)["vin"]]


def listed(node: NodeClient, txid: str) -> Any:
    return next(e for e in call(node, "listtransactions", "*", 100) if e["txid"] == txid)


class SignallingTests(FundedCase):

    def test_replaceable_argument_of_sends(self) -> None:
        node = self.shared.node
        plain = call(node, "sendtoaddress", EXTERNAL, 1)
        self.assertEqual(sequences(node, plain), [FINAL_SEQUENCE])
        self.assertEqual(call(node, "gettransaction", plain)["bip125-replaceable"], "no")
        opted = call(node, "sendtoaddress", EXTERNAL, 1, "", "", False, True)
        self.assertEqual(sequences(node, opted), [RBF_SEQUENCE])
        self.assertEqual(listed(node, opted)["bip125-replaceable"], "yes")
        many = call(node, "sendmany", "", {EXTERNAL: 1}, 1, "", [], True)
        self.assertEqual(sequences(node, many), [RBF_SEQUENCE])
        raw = call(node, "createrawtransaction", [], {EXTERNAL: 1})
        funded = call(node, "fundrawtransaction", raw, {"replaceable": True})
        self.assertEqual({i["sequence"] for i in call(node, "decoderawtransaction",
                                                      funded["hex"])["vin"]}, {RBF_SEQUENCE})

    def test_walletrbf_default(self) -> None:
        node = self.start_node(*ARGS, "-walletrbf=1", chain=fund)
        opted = call(node, "sendtoaddress", EXTERNAL, 1)
        self.assertEqual(sequences(node, opted), [RBF_SEQUENCE])
        plain = call(node, "sendtoaddress", EXTERNAL, 1, "", "", False, False)
        self.assertEqual(sequences(node, plain), [FINAL_SEQUENCE])


def mempool(node: NodeClient) -> List[str]:
    return call(node, "getrawmempool")


class BumpFeeTests(FundedCase):

    def send(self, replaceable: bool = True, address: str = EXTERNAL) -> str:
        return call(self.shared.node, "sendtoaddress", address, 1, "", "", False, replaceable)

    def test_bump_with_change(self) -> None:
        node = self.shared.node
        original = self.send()
        old_fee = paid_fee(node, original)
        result = call(node, "bumpfee", original)
        self.assertEqual(list(result), ["txid", "origfee", "fee", "errors"])
        bumped = result["txid"]
        self.assertEqual((sat(result["origfee"]), result["errors"]), (old_fee, []))
        # The wallet's rate (-fallbackfee, 0.0002/kB) is below the old rate plus Core's
        # wallet increment (5000/kB) and one satoshi: the fee is that on the signed size.
        old_rate = old_fee * 1000 // tx_size(node, original)
        new_fee = sat(result["fee"])
        self.assertEqual(new_fee, paid_fee(node, bumped))
        self.assertGreaterEqual(new_fee * 1000 // tx_size(node, bumped), old_rate + 5001 - 1)
        self.assertEqual(mempool(node), [bumped])
        self.assertEqual(sequences(node, bumped), [RBF_SEQUENCE])
        # Same inputs, same payment; only the change is lower.
        before, after = decoded(node, original), decoded(node, bumped)
        self.assertEqual([i["txid"] for i in before["vin"]], [i["txid"] for i in after["vin"]])
        self.assertIn(EXTERNAL, [o["scriptPubKey"]["addresses"][0] for o in after["vout"]])
        old = call(node, "gettransaction", original)
        self.assertEqual((old["replaced_by_txid"], old["confirmations"], old["trusted"],
                          old["walletconflicts"]), (bumped, 0, False, [bumped]))
        self.assertEqual(call(node, "gettransaction", bumped)["replaces_txid"], original)
        entry = listed(node, original)
        self.assertEqual((entry["replaced_by_txid"], entry["trusted"], entry["confirmations"]),
                         (bumped, False, 0))
        self.assertEqual(listed(node, bumped)["replaces_txid"], original)
        self.assertError(node, -4, "Cannot bump transaction %s which was already bumped by "
                         "transaction %s" % (original, bumped), "bumpfee", original)
        # Mined: the original is conflicted.
        call(node, "generatetoaddress", 1, call(node, "getnewaddress"))
        self.assertEqual(call(node, "gettransaction", original)["confirmations"], -1)
        self.assertError(node, -4, "Transaction has been mined, or is conflicted with a mined "
                         "transaction", "bumpfee", bumped)

    def test_total_fee_and_not_replaceable(self) -> None:
        node = self.shared.node
        original = self.send()
        old_fee = paid_fee(node, original)
        self.assertErrorStarts(node, -8, "Insufficient totalFee, must be at least ", "bumpfee",
                               original, {"totalFee": old_fee + 1})
        result = call(node, "bumpfee", original, {"totalFee": 2 * old_fee,
                                                  "replaceable": False})
        self.assertEqual(sat(result["fee"]), 2 * old_fee)
        self.assertEqual(sequences(node, result["txid"]), [0xFFFFFFFE])
        self.assertEqual(call(node, "gettransaction", result["txid"])["bip125-replaceable"], "no")

    def test_refusals(self) -> None:
        node = self.shared.node
        plain = self.send(replaceable=False)
        self.assertError(node, -4, "Transaction is not BIP 125 replaceable", "bumpfee", plain)
        self.assertError(node, -5, "Invalid or non-wallet transaction id", "bumpfee", "00" * 32)
        opted = self.send()
        self.assertError(node, -8, "confTarget and totalFee options should not both be set. "
                         "Please provide either a confirmation target for fee estimation or an "
                         "explicit total fee for the transaction.", "bumpfee", opted,
                         {"confTarget": 2, "totalFee": 10000})
        self.assertError(node, -8, "Invalid totalFee 0.00 (must be greater than 0)", "bumpfee",
                         opted, {"totalFee": 0})
        self.assertError(node, -3, "Expected type number for confTarget, got string", "bumpfee",
                         opted, {"confTarget": "2"})
        self.assertError(node, -8, "Invalid estimate_mode parameter", "bumpfee", opted,
                         {"estimate_mode": "FAST"})
        # No change output: one wallet coin paid out whole to someone else.
        coin = next(u for u in call(node, "listunspent") if u["confirmations"] > 0)
        raw = call(node, "createrawtransaction", [{"txid": coin["txid"], "vout": coin["vout"]}],
                   {EXTERNAL: coin["amount"] - Decimal("0.001")}, 0, True)
        whole = call(node, "sendrawtransaction",
                     call(node, "signrawtransactionwithwallet", raw)["hex"])
        self.assertError(node, -4, "Transaction does not have a change output", "bumpfee", whole)

    def test_with_a_child(self) -> None:
        node = self.shared.node
        mine = call(node, "getnewaddress")
        parent = self.send(address=mine)
        vout = next(o["n"] for o in decoded(node, parent)["vout"]
                    if o["scriptPubKey"]["addresses"] == [mine])
        raw = call(node, "createrawtransaction", [{"txid": parent, "vout": vout}],
                   {EXTERNAL: Decimal("0.999")})
        call(node, "sendrawtransaction", call(node, "signrawtransactionwithwallet", raw)["hex"])
        self.assertError(node, -8, "Transaction has descendants in the wallet", "bumpfee", parent)
        # A child outside the wallet: spending the payment to someone else.
        other = self.send()
        vout = next(o["n"] for o in decoded(node, other)["vout"]
                    if o["scriptPubKey"]["addresses"] == [EXTERNAL])
        script = decoded(node, other)["vout"][vout]["scriptPubKey"]["hex"]
        raw = call(node, "createrawtransaction", [{"txid": other, "vout": vout}],
                   {EXTERNAL: Decimal("0.999")})
        signed = call(node, "signrawtransactionwithkey", raw, [OTHER_WIF], [
            {"txid": other, "vout": vout, "scriptPubKey": script, "amount": 1}])
        call(node, "sendrawtransaction", signed["hex"])
        self.assertError(node, -8, "Transaction has descendants in the mempool", "bumpfee", other)

    def test_locked_wallet(self) -> None:
        node = self.shared.node
        opted = self.send()
        call(node, "encryptwallet", "secret")
        self.assertError(node, -13, UNLOCK_FIRST, "bumpfee", opted)
        call(node, "walletpassphrase", "secret", 60)
        self.assertEqual(call(node, "bumpfee", opted)["errors"], [])

    def test_marks_survive_a_restart(self) -> None:
        node = self.shared.node
        original = self.send()
        bumped = call(node, "bumpfee", original)["txid"]
        node.restart()
        self.assertEqual(call(node, "gettransaction", original)["replaced_by_txid"], bumped)
        self.assertEqual(call(node, "gettransaction", bumped)["replaces_txid"], original)
