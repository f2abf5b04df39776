"""BIP125 in the wallet on real nodes: -walletrbf, the replaceable argument of sends and
fundrawtransaction, bip125-replaceable in listings, and a wallet transaction replaced
through the pool."""

from __future__ import annotations

from typing import Any, List

from tests.functional.test_wallet_tx import ARGS, EXTERNAL, FundedCase, call, decoded, fund
from tests.nodeharness import NodeClient

#: The nSequence a replaceable wallet input has (Core's MAX_BIP125_RBF_SEQUENCE).
RBF_SEQUENCE = 0xFFFFFFFD
#: The wallet's non-replaceable inputs.
FINAL_SEQUENCE = 0xFFFFFFFF


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
