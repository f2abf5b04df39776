"""combinerawtransaction and the deprecated signrawtransaction (Core 0.17), against a node in
this process: a 2-of-2 P2SH multisig spend signed by each key apart, then combined."""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Dict

from coin.chainparams import REGTEST
from coin.primitives.address import encode_wif
from coin.testing.chainbuilder import deterministic_key
from tests.inprocess import InProcessNode, NodeTestCase, mine_chain
from tests.nodeharness import MINER_ADDRESS, NodeClient, RPCFailure

MINER_KEY = deterministic_key("coin test chain")
MINER_WIF = encode_wif(MINER_KEY.secret, REGTEST)
OTHER_KEY = deterministic_key("combinerawtransaction test: second signer")
OTHER_WIF = encode_wif(OTHER_KEY.secret, REGTEST)
FEE = Decimal("0.001")
DEPRECATED = ("signrawtransaction is deprecated and will be fully removed in v0.18. To use "
              "signrawtransaction in v0.17, restart coind with -deprecatedrpc=signrawtransaction.\n"
              "Projects should transition to using signrawtransactionwithkey and "
              "signrawtransactionwithwallet before upgrading to v0.18")


def _coinbase(node: NodeClient, height: int) -> Dict[str, Any]:
    txid = node.rpc("getblock", node.rpc("getblockhash", height))["tx"][0]
    return {"txid": txid, "vout": 0, "amount": Decimal(str(node.rpc("gettxout", txid, 0)["value"]))}


def fund_multisig(node: InProcessNode) -> Dict[str, Any]:
    """The test chain and a confirmed output paying a 2-of-2 of MINER_KEY and OTHER_KEY."""
    mine_chain(node)
    multisig = node.rpc("createmultisig", 2, [MINER_KEY.public_key.format().hex(),
                                              OTHER_KEY.public_key.format().hex()])
    coin = _coinbase(node, 1)
    raw = node.rpc("createrawtransaction", [{"txid": coin["txid"], "vout": 0}],
                   {multisig["address"]: str(coin["amount"] - FEE)})
    txid = node.rpc("sendrawtransaction",
                    node.rpc("signrawtransactionwithkey", raw, [MINER_WIF])["hex"])
    node.rpc("generatetoaddress", 1, MINER_ADDRESS)
    out = node.rpc("gettxout", txid, 0)
    return {"txid": txid, "amount": str(out["value"]), "redeemScript": multisig["redeemScript"],
            "scriptPubKey": out["scriptPubKey"]["hex"]}


class RawTxTests(NodeTestCase):
    def rpc_error(self, node: NodeClient, method: str, *params: Any):
        try:
            node.rpc(method, *params)
        except RPCFailure as e:
            return e.code, e.message
        self.fail("%s succeeded" % method)

    def test_combine_multisig_signatures(self) -> None:
        node = self.start_node("-disablewallet", chain=fund_multisig)
        funded = node.state
        prevtxs = [{"txid": funded["txid"], "vout": 0, "scriptPubKey": funded["scriptPubKey"],
                    "redeemScript": funded["redeemScript"], "amount": funded["amount"]}]
        raw = node.rpc("createrawtransaction", [{"txid": funded["txid"], "vout": 0}],
                       {MINER_ADDRESS: str(Decimal(funded["amount"]) - FEE)})
        halves = [node.rpc("signrawtransactionwithkey", raw, [wif], prevtxs) for wif in
                  (MINER_WIF, OTHER_WIF)]
        self.assertEqual([half["complete"] for half in halves], [False, False])
        # One half alone stays incomplete; the unsigned copy adds nothing.
        alone = node.rpc("combinerawtransaction", [halves[0]["hex"], raw])
        self.assertFalse(node.rpc("testmempoolaccept", [alone])[0]["allowed"])
        # Either order gives the same complete transaction, which the pool accepts.
        both = node.rpc("combinerawtransaction", [halves[0]["hex"], halves[1]["hex"]])
        self.assertEqual(node.rpc("combinerawtransaction", [halves[1]["hex"], raw, halves[0]["hex"]]),
                         both)
        self.assertEqual(node.rpc("combinerawtransaction", [halves[0]["hex"], both]), both)
        txid = node.rpc("sendrawtransaction", both)
        self.assertIn(txid, node.rpc("getrawmempool"))
        # A pool spend does not hide the output (Core's CCoinsViewMemPool); a mined one does.
        self.assertEqual(node.rpc("combinerawtransaction", [both]), both)
        node.rpc("generatetoaddress", 1, MINER_ADDRESS)
        self.assertEqual(self.rpc_error(node, "combinerawtransaction", [both]),
                         (-25, "Input not found or already spent"))

    def test_combine_errors(self) -> None:
        node = self.start_node("-disablewallet", chain=True)
        coin = _coinbase(node, 2)
        raw = node.rpc("createrawtransaction", [{"txid": coin["txid"], "vout": 0}],
                       {MINER_ADDRESS: "1"})
        self.assertEqual(self.rpc_error(node, "combinerawtransaction", []),
                         (-22, "Missing transactions"))
        self.assertEqual(self.rpc_error(node, "combinerawtransaction", ["zz"]),
                         (-22, "TX decode failed for tx 0"))
        self.assertEqual(self.rpc_error(node, "combinerawtransaction", [raw, raw + "00"]),
                         (-22, "TX decode failed for tx 1"))
        self.assertEqual(self.rpc_error(node, "combinerawtransaction", [raw, 1]),
                         (-1, "JSON value is not a string as expected"))
        self.assertEqual(self.rpc_error(node, "combinerawtransaction", raw),
                         (-1, "JSON value is not an array as expected"))
        missing = node.rpc("createrawtransaction", [{"txid": "11" * 32, "vout": 0}],
                           {MINER_ADDRESS: "1"})
        self.assertEqual(self.rpc_error(node, "combinerawtransaction", [missing]),
                         (-25, "Input not found or already spent"))
        # A P2PKH input no copy signs keeps an empty scriptSig.
        self.assertEqual(node.rpc("combinerawtransaction", [raw]), raw)

    def test_signrawtransaction_deprecated(self) -> None:
        node = self.start_node(chain=True)
        coin = _coinbase(node, 3)
        raw = node.rpc("createrawtransaction", [{"txid": coin["txid"], "vout": 0}],
                       {MINER_ADDRESS: str(coin["amount"] - FEE)})
        self.assertEqual(self.rpc_error(node, "signrawtransaction", raw, None, [MINER_WIF]),
                         (-32, DEPRECATED))
        node.stop()
        node.restart("-deprecatedrpc=signrawtransaction")
        with_key = node.rpc("signrawtransaction", raw, None, [MINER_WIF])
        self.assertEqual(with_key, node.rpc("signrawtransactionwithkey", raw, [MINER_WIF]))
        self.assertTrue(with_key["complete"])
        # Without keys: the wallet signs (it has none for this coin).
        by_wallet = node.rpc("signrawtransaction", raw)
        self.assertEqual(by_wallet, node.rpc("signrawtransactionwithwallet", raw))
        self.assertFalse(by_wallet["complete"])
        self.assertEqual(self.rpc_error(node, "signrawtransaction", raw, None, "key"),
                         (-3, "Expected type array, got string"))
        self.assertEqual(self.rpc_error(node, "signrawtransaction", raw, None, None, "ALL|SOME"),
                         (-1, "ALL|SOME is not a valid sighash parameter."))

    def test_signrawtransaction_without_wallet(self) -> None:
        node = self.start_node("-disablewallet", "-deprecatedrpc=signrawtransaction", chain=True)
        coin = _coinbase(node, 4)
        raw = node.rpc("createrawtransaction", [{"txid": coin["txid"], "vout": 0}],
                       {MINER_ADDRESS: str(coin["amount"] - FEE)})
        self.assertTrue(node.rpc("signrawtransaction", raw, [], [MINER_WIF], "ALL")["complete"])
        self.assertEqual(self.rpc_error(node, "signrawtransaction", raw),
                         (-32601, "Method not found (wallet method is disabled because no wallet "
                                  "is loaded)"))
