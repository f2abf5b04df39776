"""Labels, address groupings and resendwallettransactions on a real node (in-process
NodeService, real sockets), with Core 0.17's results and errors."""

from __future__ import annotations

import time
from decimal import Decimal
from typing import Any, Dict

from tests.inprocess import InProcessNode, NodeTestCase
from tests.nodeharness import RPCFailure

#: A testnet address of no key of the wallets here.
FOREIGN = "mjSk1Ny9spzU2fouzYgLqGUD8U41iR35QN"


def funded(test: NodeTestCase, *args: str) -> InProcessNode:
    """A node whose wallet holds one mature coinbase."""
    node = test.start_node("-keypool=20", *args)
    node.rpc("generatetoaddress", 101, node.rpc("getnewaddress", "miner"))
    return node


class LabelTests(NodeTestCase):
    def assert_fails(self, code: int, message: str, node: InProcessNode, *call: Any) -> None:
        with self.assertRaises(RPCFailure) as caught:
            node.rpc(*call)
        self.assertEqual((caught.exception.code, caught.exception.message), (code, message))

    def test_addresses_and_labels(self) -> None:
        node = self.start_node("-keypool=20", "-listen=0")
        first, second = node.rpc("getnewaddress", "tabby"), node.rpc("getnewaddress", "tabby")
        node.rpc("getnewaddress", "zebra")
        node.rpc("setlabel", FOREIGN, "shop")
        found = node.rpc("getaddressesbylabel", "tabby")
        self.assertEqual(found, {first: {"purpose": "receive"}, second: {"purpose": "receive"}})
        self.assertEqual(node.rpc("getaddressesbylabel", "shop"), {FOREIGN: {"purpose": "send"}})
        self.assertEqual(node.rpc("listlabels"), ["shop", "tabby", "zebra"])
        self.assertEqual(node.rpc("listlabels", ""), ["shop", "tabby", "zebra"])
        self.assertEqual(node.rpc("listlabels", "receive"), ["tabby", "zebra"])
        self.assertEqual(node.rpc("listlabels", "send"), ["shop"])
        self.assertEqual(node.rpc("listlabels", "other"), [])
        self.assert_fails(-11, "No addresses with label nobody", node, "getaddressesbylabel",
                          "nobody")
        self.assert_fails(-11, "Invalid label name", node, "getaddressesbylabel", "*")
        self.assert_fails(-1, "JSON value is not a string as expected", node, "listlabels", 1)
        # Relabelled: the address leaves its old label.
        node.rpc("setlabel", second, "zebra")
        self.assertEqual(list(node.rpc("getaddressesbylabel", "tabby")), [first])

    def test_received_by_label(self) -> None:
        node = funded(self, "-listen=0")
        tabby = [node.rpc("getnewaddress", "tabby") for _ in range(2)]
        zebra = node.rpc("getnewaddress", "zebra")
        node.rpc("getnewaddress", "empty")
        node.rpc("sendtoaddress", tabby[0], 1)
        node.rpc("sendtoaddress", tabby[1], 2)
        node.rpc("sendtoaddress", zebra, 0.5)
        self.assertEqual(node.rpc("getreceivedbylabel", "tabby"), 0)
        self.assertEqual(node.rpc("getreceivedbylabel", "tabby", 0), 3)
        node.rpc("generatetoaddress", 1, node.rpc("getnewaddress", "later"))
        self.assertEqual(node.rpc("getreceivedbylabel", "tabby"), 3)
        self.assertEqual(node.rpc("getreceivedbylabel", "tabby", 2), 0)
        self.assertEqual(node.rpc("getreceivedbylabel", "zebra"), Decimal("0.5"))
        self.assertEqual(node.rpc("getreceivedbylabel", "nobody"), 0)
        self.assert_fails(-11, "Invalid label name", node, "getreceivedbylabel", "*")
        # Coinbases do not count, as in getreceivedbyaddress.
        self.assertEqual(node.rpc("getreceivedbylabel", "miner"), 0)
        by_label = node.rpc("listreceivedbylabel")
        self.assertEqual(by_label, [
            {"account": "tabby", "amount": 3, "confirmations": 1, "label": "tabby"},
            {"account": "zebra", "amount": Decimal("0.5"), "confirmations": 1,
             "label": "zebra"}])
        labels = [entry["label"] for entry in node.rpc("listreceivedbylabel", 0, True)]
        self.assertEqual(labels, ["empty", "later", "miner", "tabby", "zebra"])
        self.assertEqual(node.rpc("listreceivedbylabel", 2), [])
        self.assert_fails(-1, "JSON value is not an integer as expected", node,
                          "listreceivedbylabel", "x")
        # Watch-only: only with include_watchonly, and flagged.
        node.rpc("importaddress", FOREIGN, "watched", False)
        node.rpc("sendtoaddress", FOREIGN, 0.25)
        node.rpc("generatetoaddress", 1, node.rpc("getnewaddress", "later"))
        self.assertNotIn("watched", [e["label"] for e in node.rpc("listreceivedbylabel", 0, True)])
        watched = [e for e in node.rpc("listreceivedbylabel", 1, False, True)
                   if e["label"] == "watched"]
        self.assertEqual(watched, [{"involvesWatchonly": True, "account": "watched",
                                    "amount": Decimal("0.25"), "confirmations": 1,
                                    "label": "watched"}])
        self.assertEqual(node.rpc("getreceivedbylabel", "watched"), Decimal("0.25"))


    def test_address_groupings(self) -> None:
        node = funded(self, "-listen=0")
        self.assertEqual(len(node.rpc("listaddressgroupings")), 1)
        miner = node.rpc("getaddressesbylabel", "miner")
        [[[address, amount, label]]] = node.rpc("listaddressgroupings")
        self.assertEqual((address, amount, label), (list(miner)[0], 50, "miner"))
        payee = node.rpc("getnewaddress", "payee")
        txid = node.rpc("sendtoaddress", payee, 10)
        change = [out["scriptPubKey"]["addresses"][0]
                  for out in node.rpc("getrawtransaction", txid, True)["vout"]
                  if out["scriptPubKey"]["addresses"][0] != payee][0]
        fee = -node.rpc("gettransaction", txid)["fee"]
        groups = node.rpc("listaddressgroupings")
        # The spent coinbase's address and the change are one owner's; the payee stands alone
        # (our own unconfirmed send counts, as Core's GetAddressBalances).
        spent_together = [g for g in groups if len(g) == 2][0]
        self.assertEqual(sorted(map(tuple, spent_together)),
                         sorted([(address, 0, "miner"), (change, 40 - fee)]))
        self.assertIn([[payee, 10, "payee"]], groups)
        self.assertEqual(len(groups), 2)


class ResendTests(NodeTestCase):
    def wait_for_pool(self, node: InProcessNode, txid: str, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while txid not in node.rpc("getrawmempool"):
            self.assertLess(time.monotonic(), deadline, "%s never reached the peer" % txid)
            time.sleep(0.1)

    def test_resend_to_a_peer_that_joined_later(self) -> None:
        node = funded(self)
        self.assertEqual(node.rpc("resendwallettransactions"), [])
        first = node.rpc("sendtoaddress", node.rpc("getnewaddress"), 1)
        second = node.rpc("sendtoaddress", node.rpc("getnewaddress"), 2)
        peer = self.start_node("-connect=127.0.0.1:%d" % node.p2p_port)
        deadline = time.monotonic() + 30
        while not peer.rpc("getpeerinfo") or node.rpc("getblockcount") != peer.rpc("getblockcount"):
            self.assertLess(time.monotonic(), deadline, "the peer never synced")
            time.sleep(0.1)
        # Nothing announced the pool to the new peer: resend does (oldest first; these two
        # were received in the same second, so in txid order).
        self.assertEqual(peer.rpc("getrawmempool"), [])
        self.assertEqual(sorted(node.rpc("resendwallettransactions")), sorted([first, second]))
        for txid in (first, second):
            self.wait_for_pool(peer, txid)
        node.rpc("generate", 1)
        self.assertEqual(node.rpc("resendwallettransactions"), [])

    def test_refused_without_walletbroadcast(self) -> None:
        node = self.start_node("-walletbroadcast=0", "-listen=0")
        with self.assertRaises(RPCFailure) as caught:
            node.rpc("resendwallettransactions")
        self.assertEqual((caught.exception.code, caught.exception.message), (
            -4, "Error: Wallet transaction broadcasting is disabled with -walletbroadcast"))


class ImportMultiTests(NodeTestCase):
    def test_imports_with_per_request_results_and_rescan(self) -> None:
        source = funded(self)
        node = self.start_node("-keypool=20", "-connect=127.0.0.1:%d" % source.p2p_port)
        watched, spent_to, keyed, shared = (source.rpc("getnewaddress") for _ in range(4))
        pubkey = source.rpc("getaddressinfo", keyed)["pubkey"]
        multisig = source.rpc("addmultisigaddress", 1, [shared])
        # One transaction: the source wallet spends none of these outputs afterwards.
        source.rpc("sendmany", "", {address: 1 for address in (watched, spent_to, keyed,
                                                                 multisig["address"])})
        source.rpc("generate", 1)
        deadline = time.monotonic() + 30
        while node.rpc("getblockcount") != 102:
            self.assertLess(time.monotonic(), deadline, "the node never synced")
            time.sleep(0.1)
        now = "now"
        results = node.rpc("importmulti", [
            {"scriptPubKey": {"address": watched}, "timestamp": 0, "label": "watched"},
            {"scriptPubKey": source.rpc("getaddressinfo", spent_to)["scriptPubKey"],
             "timestamp": 0, "internal": True},
            {"scriptPubKey": {"address": keyed}, "timestamp": 0,
             "keys": [source.rpc("dumpprivkey", keyed)]},
            {"scriptPubKey": {"address": multisig["address"]}, "timestamp": 0,
             "redeemscript": multisig["redeemScript"], "keys": [source.rpc("dumpprivkey", shared)]},
            # Refused, each with Core's error; the others still import.
            {"scriptPubKey": {"address": "notanaddress"}, "timestamp": now},
            {"scriptPubKey": {"address": watched}, "timestamp": now, "watchonly": True,
             "keys": [source.rpc("dumpprivkey", watched)]},
            {"scriptPubKey": {"address": watched}, "timestamp": now, "internal": True,
             "label": "x"},
            {"scriptPubKey": {"address": watched}, "timestamp": now, "pubkeys": [pubkey]},
            {"scriptPubKey": {"address": watched}, "timestamp": now, "keys": ["nokey"]},
            {"scriptPubKey": {"address": keyed}, "timestamp": now, "redeemscript": "51"},
            {"scriptPubKey": "zz", "timestamp": now},
            {"scriptPubKey": "51", "timestamp": now},
            {"scriptPubKey": 5, "timestamp": now},
            {"scriptPubKey": {"address": keyed}, "timestamp": now, "keys": "notalist"},
        ])

        def error(code: int, message: str) -> Dict[str, Any]:
            return {"success": False, "error": {"code": code, "message": message}}

        self.assertEqual(results, [{"success": True}] * 4 + [
            error(-5, "Invalid address"),
            error(-8, "Incompatibility found between watchonly and keys"),
            error(-8, "Incompatibility found between internal and label"),
            error(-5, "Consistency check failed"),
            error(-5, "Invalid private key encoding"),
            error(-5, "Invalid P2SH address / script"),
            error(-5, "Invalid scriptPubKey"),
            error(-8, "Internal must be set for hex scriptPubKey"),
            error(-8, "Invalid scriptPubKey"),
            error(-1, "Missing required fields")])
        # The rescan from time 0 found the four payments: two watched, two spendable.
        self.assertEqual(node.rpc("getbalance"), 2)
        self.assertEqual(node.rpc("getbalance", "*", 1, True), 4)
        self.assertEqual(node.rpc("getaddressesbylabel", "watched"), {watched: {"purpose": "receive"}})
        self.assertTrue(node.rpc("getaddressinfo", multisig["address"])["ismine"])
        # The imported P2SH 1-of-1 multisig output is spendable: the wallet signs it.
        txid = node.rpc("sendtoaddress", node.rpc("getnewaddress"), 1.9)
        self.assertEqual(len(node.rpc("getrawtransaction", txid, True)["vin"]), 2)

    def test_whole_call_errors_and_no_rescan(self) -> None:
        node = self.start_node("-keypool=20", "-listen=0")
        address = node.rpc("getnewaddress")
        for call, code, message in (
                (([{"scriptPubKey": {"address": address}}],), -3,
                 "Missing required timestamp field for key"),
                (([{"scriptPubKey": {"address": address}, "timestamp": "later"}],), -3,
                 'Expected number or "now" timestamp value for key. got type string'),
                (({},), -3, "Expected type array, got object"),
                (([], []), -3, "Expected type object, got array")):
            with self.assertRaises(RPCFailure) as caught:
                node.rpc("importmulti", *call)
            self.assertEqual((caught.exception.code, caught.exception.message), (code, message))
        # Already spendable: refused; watch-only of a new script without a rescan.
        script = "76a914" + "11" * 20 + "88ac"
        self.assertEqual(node.rpc("importmulti", [
            {"scriptPubKey": {"address": address}, "timestamp": "now"},
            {"scriptPubKey": script, "timestamp": "now", "internal": True}], {"rescan": False}), [
            {"success": False, "error": {"code": -4, "message": "The wallet already contains "
                                                               "the private key for this address or script"}},
            {"success": True}])
        node.rpc("encryptwallet", "secret")
        with self.assertRaises(RPCFailure) as caught:
            node.rpc("importmulti", [{"scriptPubKey": script, "timestamp": "now", "internal": True}])
        self.assertEqual(caught.exception.code, -13)


class MultisigSpendTests(NodeTestCase):
    def test_wallet_spends_p2sh_multisig_it_holds_every_key_of(self) -> None:
        node = funded(self, "-listen=0")
        keys = [node.rpc("getaddressinfo", node.rpc("getnewaddress"))["pubkey"] for _ in range(3)]
        created = node.rpc("addmultisigaddress", 2, keys, "vault")
        txid = node.rpc("sendtoaddress", created["address"], 5)
        node.rpc("generate", 1)
        [coin] = [u for u in node.rpc("listunspent") if u["address"] == created["address"]]
        self.assertEqual((coin["txid"], coin["spendable"], coin["redeemScript"], coin["label"]),
                         (txid, True, created["redeemScript"], "vault"))
        self.assertEqual(node.rpc("getreceivedbylabel", "vault"), 5)
        raw = node.rpc("createrawtransaction", [{"txid": txid, "vout": coin["vout"]}],
                       {node.rpc("getnewaddress"): 4.999})
        signed = node.rpc("signrawtransactionwithwallet", raw)
        self.assertTrue(signed["complete"])
        spend = node.rpc("sendrawtransaction", signed["hex"])
        # Two signatures, then the redeem script: OP_0 <sig> <sig> <script>.
        script_sig = node.rpc("getrawtransaction", spend, True)["vin"][0]["scriptSig"]["asm"]
        self.assertEqual(len(script_sig.split()), 4)
        self.assertEqual(script_sig.split()[-1], created["redeemScript"])
        # One key of the script not held: not the wallet's (Core 0.17 wants every key).
        foreign = "02" + "79be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798"
        partial = node.rpc("addmultisigaddress", 1, [keys[0], foreign])
        self.assertFalse(node.rpc("getaddressinfo", partial["address"])["ismine"])
