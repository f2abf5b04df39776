"""Errors answered as the reference node (Core 0.17.0 base) answers them, found by sending
both nodes the same malformed calls: arguments read in Core's order (a later argument's
type error comes after an earlier argument's own error), hashes read leniently where
Core uses SetHex, and ParseHashV's answer for a txid that is not a string."""

from __future__ import annotations

from typing import Any

from tests.inprocess import NodeTestCase
from tests.nodeharness import NodeClient, RPCFailure


class ReferenceErrorTests(NodeTestCase):

    def assertAnswers(self, node: NodeClient, code: int, message: str, method: str,
                      *params: Any) -> None:
        with self.assertRaises(RPCFailure) as caught:
            node.rpc(method, *params)
        self.assertEqual((caught.exception.code, caught.exception.message), (code, message),
                         (method, params))

    def test_later_arguments_are_read_after_earlier_checks(self) -> None:
        node = self.start_node("-listen=0")
        self.assertAnswers(node, -5, "Block not found", "getchaintxstats", "x", "y")
        self.assertAnswers(node, -1, "JSON value is not an integer as expected",
                           "getchaintxstats", "x")
        self.assertAnswers(node, -5, "Block not found", "listsinceblock", "00" * 32, "y")
        self.assertAnswers(node, -1, "JSON value is not an integer as expected",
                           "listsinceblock", "", "y")
        self.assertAnswers(node, -8, 'Dummy value must be set to "*"', "listtransactions",
                           "x", "y")
        self.assertAnswers(node, -1, "JSON value is not an integer as expected",
                           "listtransactions", "*", "y")
        self.assertAnswers(node, -5, "Invalid Coin address", "getreceivedbyaddress", "x", "y")
        # getreceivedbylabel reads minconf first.
        self.assertAnswers(node, -1, "JSON value is not an integer as expected",
                           "getreceivedbylabel", "*", "y")
        self.assertAnswers(node, -1, "JSON value is not an integer as expected",
                           "getreceivedbylabel", 1, "y")
        self.assertAnswers(node, -11, "Invalid label name", "getreceivedbylabel", "*", 1)
        self.assertAnswers(node, -3, "Expected type array, got string", "createpsbt", "x", {},
                           "x")
        self.assertAnswers(node, -3, "Expected type array, got string",
                           "createrawtransaction", "x", 0, "x")
        self.assertAnswers(node, -8, "Invalid parameter, arguments 1 and 2 must be non-null",
                           "createrawtransaction", None, {}, 0)

    def test_txids_read_as_core_reads_them(self) -> None:
        node = self.start_node("-listen=0")
        for method in ("gettransaction", "abandontransaction"):
            self.assertAnswers(node, -5, "Invalid or non-wallet transaction id", method, "x")
        self.assertAnswers(node, -8, "Transaction does not exist in wallet.",
                           "removeprunedfunds", "x")
        for method in ("getmempoolentry", "getmempoolancestors", "getmempooldescendants"):
            for value in (1, True, {}, []):
                self.assertAnswers(node, -8, "parameter 1 must be hexadecimal string (not '')",
                                   method, value)

    def test_getaddednodeinfo_reads_the_name_against_each_added_node(self) -> None:
        node = self.start_node("-listen=0", "-connect=0")
        for value in (1, True, {}, "127.0.0.1:1"):
            self.assertAnswers(node, -24, "Error: Node has not been added.", "getaddednodeinfo",
                               value)
        node.rpc("addnode", "127.0.0.1:1", "add")
        self.assertAnswers(node, -1, "JSON value is not a string as expected",
                           "getaddednodeinfo", 1)
        self.assertEqual([info["addednode"] for info in node.rpc("getaddednodeinfo",
                                                                 "127.0.0.1:1")], ["127.0.0.1:1"])

    def test_objects_checked_in_key_order_and_sighash_names(self) -> None:
        node = self.start_node("-listen=0")
        raw = node.rpc("createrawtransaction", [{"txid": "11" * 32, "vout": 0}],
                       {node.rpc("getnewaddress"): 1})
        # RPCTypeCheckObj walks a std::map: scriptPubKey, then txid, then vout.
        for prevtx, missing in (({}, "scriptPubKey"), ({"txid": "x"}, "scriptPubKey"),
                                ({"scriptPubKey": "51"}, "txid")):
            self.assertAnswers(node, -3, "Missing " + missing, "signrawtransactionwithkey", raw,
                               [], [prevtx])
        for method, params in (("signrawtransactionwithkey", (raw, [], None, "FOO")),
                               ("signrawtransactionwithwallet", (raw, None, "FOO"))):
            self.assertAnswers(node, -1, "FOO is not a valid sighash parameter.", method, *params)
        self.assertAnswers(node, -1, "encryptwallet <passphrase>\nEncrypts the wallet with "
                           "<passphrase>.", "encryptwallet", "")
