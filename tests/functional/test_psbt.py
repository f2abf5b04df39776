"""PSBT (BIP174) on a real node: two wallets each hold one key of a 2-of-2 multisig
(both learn the script with addmultisigaddress), the spend is created with
walletcreatefundedpsbt, signed by each wallet with walletprocesspsbt, combined,
finalized, broadcast and confirmed; and the methods' errors as Core 0.17 answers them."""

from __future__ import annotations

from decimal import Decimal

from tests.functional.test_wallet_tx import ARGS, EXTERNAL, RPCCase, call
from tests.nodeharness import NodeClient

WALLETS = ("-wallet=a", "-wallet=b")
A = "/wallet/a"
B = "/wallet/b"


def two_wallets(node: NodeClient) -> str:
    """Wallet a mines 101 blocks (one mature coinbase); returns its address."""
    address = call(node, "getnewaddress", path=A)
    call(node, "generatetoaddress", 101, address, path=A)
    return address


def pubkey(node: NodeClient, path: str) -> str:
    return call(node, "getaddressinfo", call(node, "getnewaddress", path=path), path=path)["pubkey"]


class MultisigPSBTTests(RPCCase):

    def test_two_wallets_sign_a_2_of_2_spend(self) -> None:
        node = self.start_node(*ARGS, *WALLETS, chain=two_wallets)
        keys = [pubkey(node, A), pubkey(node, B)]
        multisig = call(node, "addmultisigaddress", 2, keys, path=A)
        self.assertEqual(call(node, "addmultisigaddress", 2, keys, path=B), multisig)
        funding = call(node, "sendtoaddress", multisig["address"], 10, path=A)
        call(node, "generatetoaddress", 1, node.state, path=A)
        vout = next(out["n"] for out in call(node, "getrawtransaction", funding, True)["vout"]
                    if out["value"] == 10)

        created = call(node, "walletcreatefundedpsbt", [{"txid": funding, "vout": vout}],
                       {EXTERNAL: Decimal("9.99")}, 0, {"includeWatching": True}, path=A)
        self.assertEqual(sorted(created), ["changepos", "fee", "psbt"])
        decoded = call(node, "decodepsbt", created["psbt"])
        self.assertEqual(decoded["tx"]["vin"][0]["txid"], funding)
        self.assertEqual(decoded["inputs"][0]["non_witness_utxo"]["txid"], funding)
        self.assertEqual(decoded["inputs"][0]["redeem_script"]["type"], "multisig")
        self.assertEqual(decoded["fee"], created["fee"])

        signed_a = call(node, "walletprocesspsbt", created["psbt"], path=A)
        signed_b = call(node, "walletprocesspsbt", created["psbt"], path=B)
        self.assertEqual((signed_a["complete"], signed_b["complete"]), (False, False))
        for signed, key in ((signed_a, keys[0]), (signed_b, keys[1])):
            sigs = call(node, "decodepsbt", signed["psbt"])["inputs"][0]["partial_signatures"]
            self.assertEqual(list(sigs), [key])
        # One signature is not enough to finalize.
        partial = call(node, "finalizepsbt", signed_a["psbt"])
        self.assertEqual((partial["complete"], partial["psbt"]), (False, signed_a["psbt"]))

        combined = call(node, "combinepsbt", [signed_a["psbt"], signed_b["psbt"]])
        sigs = call(node, "decodepsbt", combined)["inputs"][0]["partial_signatures"]
        self.assertEqual(sorted(sigs), sorted(keys))
        unextracted = call(node, "finalizepsbt", combined, False)
        self.assertIs(unextracted["complete"], True)
        final_input = call(node, "decodepsbt", unextracted["psbt"])["inputs"][0]
        self.assertEqual(sorted(final_input), ["final_scriptSig", "non_witness_utxo"])
        final = call(node, "finalizepsbt", combined)
        self.assertEqual(sorted(final), ["complete", "hex"])
        txid = call(node, "sendrawtransaction", final["hex"])
        call(node, "generatetoaddress", 1, node.state, path=A)
        self.assertEqual(call(node, "getrawtransaction", txid, True)["confirmations"], 1)

    def test_errors(self) -> None:
        node = self.start_node(*ARGS, chain=True)
        raw = call(node, "createrawtransaction", [{"txid": "11" * 32, "vout": 0}], {EXTERNAL: 1})
        psbt = call(node, "createpsbt", [{"txid": "11" * 32, "vout": 0}], {EXTERNAL: 1})
        self.assertEqual(call(node, "converttopsbt", raw), psbt)
        self.assertError(node, -22, "TX decode failed invalid base64", "decodepsbt", "!!")
        self.assertError(node, -22, "TX decode failed Invalid PSBT magic bytes", "decodepsbt",
                         "AAAA")
        self.assertError(node, -8, "Parameter 'txs' cannot be empty", "combinepsbt", [])
        other = call(node, "createpsbt", [{"txid": "11" * 32, "vout": 1}], {EXTERNAL: 1})
        self.assertError(node, -8, "PSBTs do not refer to the same transactions.",
                         "combinepsbt", [psbt, other])
        self.assertEqual(call(node, "finalizepsbt", psbt), {"psbt": psbt, "complete": False})
        self.assertError(node, -8, "all is not a valid sighash parameter.",
                         "walletprocesspsbt", psbt, True, "all")
        # Nothing of the wallet's: the PSBT comes back as it was, incomplete.
        self.assertEqual(call(node, "walletprocesspsbt", psbt, False),
                         {"psbt": psbt, "complete": False})
        # The input's scriptSig (after version, count, outpoint) becomes OP_1.
        with_sig = raw[:82] + "0151" + raw[84:]
        self.assertError(node, -22, "Inputs must not have scriptSigs and scriptWitnesses",
                         "converttopsbt", with_sig)
        self.assertEqual(call(node, "converttopsbt", with_sig, True), psbt)
        signed = call(node, "signrawtransactionwithkey", raw, [])["hex"]
        self.assertEqual(call(node, "converttopsbt", signed), psbt)  # no scriptSig to refuse
