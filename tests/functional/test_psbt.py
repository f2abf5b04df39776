"""PSBT (BIP174) on a real node: two wallets each hold one key of a 2-of-2 multisig
(both learn the script with addmultisigaddress), the spend is created with
walletcreatefundedpsbt, signed by each wallet with walletprocesspsbt, combined,
finalized, broadcast and confirmed; and the methods' errors as Core 0.17 answers them."""

from __future__ import annotations

import base64
import os
import re
from decimal import Decimal
from typing import Any, Dict, List

from coincurve import PrivateKey

from coin.chainparams import REGTEST
from coin.primitives.address import encode_wif
from coin.primitives.hashes import hash160
from coin.wallet.hd import ExtKey
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
        self.assertNotIn("hex", decoded["inputs"][0]["non_witness_utxo"])  # TxToUniv without hex
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
        # The reference node's texts: its stream's exceptions, base64 read leniently.
        for text in ("!!", "AAAA", ""):
            self.assertError(node, -22, "TX decode failed CDataStream::read(): end of data: "
                             "iostream error", "decodepsbt", text)
        self.assertError(node, -22, "TX decode failed Invalid PSBT magic bytes: iostream error",
                         "decodepsbt", "cHNidP4A")
        self.assertError(node, -22, "TX decode failed No unsigned transcation was provided: "
                         "iostream error", "decodepsbt", "cHNidP8A!!")
        extra = base64.b64encode(base64.b64decode(psbt) + b"\x00").decode()
        self.assertError(node, -22, "TX decode failed extra data after PSBT", "decodepsbt", extra)
        self.assertError(node, -8, "Parameter 'txs' cannot be empty", "combinepsbt", [])
        other = call(node, "createpsbt", [{"txid": "11" * 32, "vout": 1}], {EXTERNAL: 1})
        self.assertError(node, -8, "PSBTs do not refer to the same transactions.",
                         "combinepsbt", [psbt, other])
        self.assertEqual(call(node, "finalizepsbt", psbt), {"psbt": psbt, "complete": False})
        self.assertError(node, -1, "all is not a valid sighash parameter.",
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


def master_fingerprint(case: RPCCase, node: NodeClient, path: str) -> str:
    """The wallet's HD master key fingerprint, from the xprv dumpwallet prints."""
    dump = os.path.abspath(case.mktemp())
    call(node, "dumpwallet", dump, path=path)
    with open(dump) as f:
        xprv = re.search(r"# extended private masterkey: (\S+)", f.read()).group(1)
    return ExtKey.parse(xprv, REGTEST.xprv_prefix).fingerprint.hex()


def derivs(entry: Dict[str, Any]) -> List[Dict[str, str]]:
    return entry.get("bip32_derivs", [])


class KeyOriginTests(RPCCase):
    """``bip32derivs``: the origins of the wallet's keys, as Core 0.17's FillPSBT adds them."""

    def test_inputs_change_and_signed_inputs(self) -> None:
        node = self.start_node(*ARGS, *WALLETS, chain=two_wallets)
        fingerprint = master_fingerprint(self, node, A)
        created = call(node, "walletcreatefundedpsbt", [], {EXTERNAL: 1}, 0, {}, True, path=A)
        decoded = call(node, "decodepsbt", created["psbt"])
        mined = call(node, "getaddressinfo", node.state, path=A)
        self.assertEqual(derivs(decoded["inputs"][0]), [
            {"pubkey": mined["pubkey"], "master_fingerprint": fingerprint,
             "path": mined["hdkeypath"]}])
        change = decoded["outputs"][created["changepos"]]
        [entry] = derivs(change)
        self.assertEqual(entry["master_fingerprint"], fingerprint)
        self.assertTrue(entry["path"].startswith("m/0'/1'/"), entry)
        self.assertEqual(derivs(decoded["outputs"][1 - created["changepos"]]), [])
        # Without the option nothing of the kind; the result is otherwise the same.
        plain = call(node, "walletcreatefundedpsbt", [], {EXTERNAL: 1}, 0, {}, path=A)
        self.assertNotIn("bip32_derivs", str(call(node, "decodepsbt", plain["psbt"])))
        self.assertNotIn("bip32_derivs", str(call(node, "decodepsbt", call(
            node, "walletprocesspsbt", plain["psbt"], False, "ALL", False, path=A)["psbt"])))
        # Origins already in a PSBT stay (Core never takes them out of an unsigned input).
        self.assertEqual(call(node, "walletprocesspsbt", created["psbt"], False, "ALL", False,
                              path=A)["psbt"], created["psbt"])
        # Signed to completion, a final input is written without origins (Core); the change
        # output keeps its own.
        signed = call(node, "walletprocesspsbt", plain["psbt"], True, "ALL", True, path=A)
        self.assertIs(signed["complete"], True)
        signed_decoded = call(node, "decodepsbt", signed["psbt"])
        self.assertEqual(sorted(signed_decoded["inputs"][0]), ["final_scriptSig", "non_witness_utxo"])
        [signed_change] = derivs(signed_decoded["outputs"][plain["changepos"]])
        self.assertEqual(signed_change["master_fingerprint"], fingerprint)
        self.assertTrue(signed_change["path"].startswith("m/0'/1'/"), signed_change)
        # Wallet b knows none of these keys: it adds no origin.
        other = call(node, "walletprocesspsbt", plain["psbt"], False, "ALL", True, path=B)
        self.assertEqual(other["psbt"], plain["psbt"])

    def test_imported_keys_multisig_outputs_and_locked_wallet(self) -> None:
        node = self.start_node(*ARGS, *WALLETS, chain=two_wallets)
        fingerprint = master_fingerprint(self, node, A)
        keys = [pubkey(node, A) for _ in range(3)]
        watched = pubkey(node, B)
        call(node, "importpubkey", watched, "", False, path=A)
        secret = PrivateKey(b"\x07" * 32)
        call(node, "importprivkey", encode_wif(secret.secret, REGTEST), "", False, path=A)
        own = secret.public_key.format().hex()
        multisigs = [call(node, "addmultisigaddress", *args, path=A)
                     for args in ((2, keys), (1, [watched, keys[0]]), (1, [own, keys[1]]))]
        created = call(node, "walletcreatefundedpsbt", [],
                       [{m["address"]: 1} for m in multisigs], 0, {"changePosition": 3}, True,
                       path=A)
        outputs = call(node, "decodepsbt", created["psbt"])["outputs"]
        self.assertEqual([out["redeem_script"]["hex"] for out in outputs[:3]],
                         [m["redeemScript"] for m in multisigs])

        def origin(key: str, path: str, fp: str = fingerprint) -> Dict[str, str]:
            return {"pubkey": key, "master_fingerprint": fp, "path": path}

        paths = {d["pubkey"]: d["path"] for out in outputs for d in derivs(out)}
        # 2 of 3 keys a can sign with: Core's walk stops after the second signature.
        self.assertEqual([d["pubkey"] for d in derivs(outputs[0])], sorted(keys[:2]))
        self.assertEqual({d["master_fingerprint"] for d in derivs(outputs[0])}, {fingerprint})
        # A watched key gives no signature, so the walk goes on; a key without an HD path
        # (watched or imported) is named by its own hash, path "m".
        self.assertEqual(derivs(outputs[1]), sorted([
            origin(watched, "m", hash160(bytes.fromhex(watched))[:4].hex()),
            origin(keys[0], paths[keys[0]])], key=lambda d: d["pubkey"]))
        self.assertEqual(derivs(outputs[2]), [origin(own, "m", hash160(bytes.fromhex(own))[:4].hex())])
        self.assertTrue(paths[keys[0]].startswith("m/0'/0'/"))
        # The redeem scripts are there without bip32derivs too (so a signer sees change).
        plain = call(node, "walletcreatefundedpsbt", [], [{multisigs[0]["address"]: 1}], 0, {},
                     path=A)
        self.assertIn("redeem_script", call(node, "decodepsbt", plain["psbt"])["outputs"][
            1 - plain["changepos"]])

        call(node, "encryptwallet", "secret", path=A)
        self.assertError(node, -13, "Error: Please enter the wallet passphrase with "
                         "walletpassphrase first.", "walletcreatefundedpsbt", [], {EXTERNAL: 1},
                         0, {}, True, path=A)
        call(node, "walletcreatefundedpsbt", [], {EXTERNAL: 1}, 0, {}, False, path=A)
