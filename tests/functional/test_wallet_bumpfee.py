"""bumpfee's refusals and dust rule on a real node, as Core 0.17's feebumper: several change
outputs, change too small for the new fee, a fee above -maxtxfee, and change that would
fall to its spending cost at the discard rate given to the fee."""

from __future__ import annotations

from decimal import Decimal
from typing import Dict

from tests.functional.test_wallet_tx import EXTERNAL, FundedCase, call, paid_fee, sat

#: What a P2PKH change output and the input spending it cost at the discard rate
#: (DEFAULT_DISCARD_FEE 10,000/kB, no estimate on a fresh chain): 182 bytes.
SPEND_COST = 1820


class BumpFeeChangeTests(FundedCase):

    def raw_send(self, change: Dict[str, Decimal], fee: Decimal = Decimal("0.001")) -> str:
        """A replaceable transaction of one wallet coin: the given change, the rest paid out."""
        node = self.shared.node
        coin = next(u for u in call(node, "listunspent") if u["confirmations"] > 0)
        outputs = {EXTERNAL: coin["amount"] - fee - sum(change.values())}
        outputs.update(change)
        raw = call(node, "createrawtransaction", [{"txid": coin["txid"], "vout": coin["vout"]}],
                   outputs, 0, True)
        return call(node, "sendrawtransaction", call(node, "signrawtransactionwithwallet", raw)["hex"])

    def change_address(self) -> str:
        return call(self.shared.node, "getrawchangeaddress")

    def test_multiple_change_outputs(self) -> None:
        txid = self.raw_send({self.change_address(): Decimal("0.004"),
                              self.change_address(): Decimal("0.005")})
        self.assertError(self.shared.node, -4, "Transaction has multiple change outputs",
                         "bumpfee", txid)

    def test_change_too_small(self) -> None:
        node = self.shared.node
        txid = self.raw_send({self.change_address(): Decimal("0.0001")})
        self.assertError(node, -4, "Change output is too small to bump the fee", "bumpfee", txid,
                         {"totalFee": paid_fee(node, txid) + 20_000})

    def test_fee_above_maxtxfee(self) -> None:
        node = self.shared.node
        txid = self.raw_send({self.change_address(): Decimal("1")})
        self.assertError(node, -4, "Specified or calculated fee 0.20 is too high (cannot be "
                         "higher than maxTxFee 0.10)", "bumpfee", txid, {"totalFee": 20_000_000})

    def test_change_at_its_spending_cost_goes_to_the_fee(self) -> None:
        node = self.shared.node
        for left, kept in ((SPEND_COST + 1, True), (SPEND_COST, False)):
            change = self.change_address()
            txid = self.raw_send({change: Decimal("0.0001")})
            old_fee = paid_fee(node, txid)
            result = call(node, "bumpfee", txid, {"totalFee": old_fee + 10_000 - left})
            outputs = call(node, "decoderawtransaction", call(
                node, "gettransaction", result["txid"])["hex"])["vout"]
            to_change = [out for out in outputs if out["scriptPubKey"].get("addresses") == [change]]
            if kept:
                self.assertEqual([sat(out["value"]) for out in to_change], [left])
                self.assertEqual(sat(result["fee"]), old_fee + 10_000 - left)
            else:
                self.assertEqual((to_change, len(outputs)), ([], 1))
                self.assertEqual(sat(result["fee"]), old_fee + 10_000)
