"""Core 0.17's extra fields on a real node (in-process NodeService, real sockets): chain info
of pruned nodes, transaction versions of what the wallet and the miner build, and what
getaddressinfo/validateaddress say of a multisig address the wallet knows."""

from __future__ import annotations

import json
import time
from typing import Any, Dict

from tests.inprocess import InProcessNode, NodeTestCase
from tests.nodeharness import RPCFailure

#: -prune=550 in bytes (Core's MiB).
PRUNE_TARGET = 550 * 1024 * 1024


def rest_chaininfo(node: InProcessNode) -> Dict[str, Any]:
    status, _, body = node.post(b"", path="/rest/chaininfo.json", method="GET", auth=False)
    assert status == 200, (status, body)
    return json.loads(body)


class PrunedNodeTests(NodeTestCase):
    def test_automatic_pruning(self) -> None:
        node = self.start_node("-prune=550", "-rest=1")
        node.rpc("generatetoaddress", 3, node.rpc("getnewaddress"))
        info = node.rpc("getblockchaininfo")
        keys = list(info)
        self.assertEqual(keys[keys.index("chainwork"):keys.index("softforks")],
                         ["chainwork", "size_on_disk", "pruned", "pruneheight",
                          "automatic_pruning", "prune_target_size"])
        self.assertEqual((info["pruned"], info["pruneheight"], info["automatic_pruning"],
                          info["prune_target_size"]), (True, 0, True, PRUNE_TARGET))
        # Four blocks' records (80-byte headers, one coinbase each) and three blocks' undo.
        self.assertGreater(info["size_on_disk"], 4 * 80)
        self.assertEqual(rest_chaininfo(node), info)

    def test_manual_pruning_has_no_target(self) -> None:
        node = self.start_node("-prune=1", "-rest=1")
        info = node.rpc("getblockchaininfo")
        self.assertEqual((info["pruned"], info["pruneheight"], info["automatic_pruning"]),
                         (True, 0, False))
        self.assertNotIn("prune_target_size", info)
        self.assertEqual(rest_chaininfo(node), info)

    def test_not_pruning(self) -> None:
        node = self.start_node()
        info = node.rpc("getblockchaininfo")
        self.assertFalse(info["pruned"])
        for key in ("pruneheight", "automatic_pruning", "prune_target_size"):
            self.assertNotIn(key, info)
        # A fresh node's genesis block is over a day old: initial block download.
        self.assertTrue(info["initialblockdownload"])
        node.rpc("generatetoaddress", 1, node.rpc("getnewaddress"))
        after = node.rpc("getblockchaininfo")
        self.assertFalse(after["initialblockdownload"])
        self.assertGreater(after["size_on_disk"], info["size_on_disk"])
        self.assertEqual(after["warnings"], "")
        self.assertEqual(node.rpc("getnetworkinfo")["warnings"], "")
        self.assertEqual(node.rpc("getmininginfo")["warnings"], "")


class TransactionVersionTests(NodeTestCase):
    def wait_for_pool(self, node: InProcessNode, txid: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while txid not in node.rpc("getrawmempool"):
            self.assertLess(time.monotonic(), deadline, "%s never reached the peer" % txid)
            time.sleep(0.2)

    def test_wallet_and_miner_build_version_2_and_version_1_still_relays(self) -> None:
        # Standard policy on both nodes: what relay applies.
        node = self.start_node("-acceptnonstdtxn=0")
        peer = self.start_node("-acceptnonstdtxn=0", "-connect=127.0.0.1:%d" % node.p2p_port)
        address = node.rpc("getnewaddress")
        hashes = node.rpc("generatetoaddress", 101, address)
        hashes += node.rpc("generate", 1)
        for block_hash in (hashes[0], hashes[-1]):
            coinbase = node.rpc("getblock", block_hash, 2)["tx"][0]
            self.assertEqual(coinbase["version"], 2)
        # The wallet's spend.
        txid = node.rpc("sendtoaddress", node.rpc("getnewaddress"), 1)
        self.assertEqual(node.rpc("getrawtransaction", txid, True)["version"], 2)
        self.wait_for_pool(peer, txid)
        # A version-1 transaction: accepted, relayed and mined.
        unspent = [u for u in node.rpc("listunspent") if u["txid"] != txid][0]
        raw = node.rpc("createrawtransaction", [{"txid": unspent["txid"], "vout": unspent["vout"]}],
                       {node.rpc("getnewaddress"): unspent["amount"] - 0.001})
        self.assertTrue(raw.startswith("02000000"))
        signed = node.rpc("signrawtransactionwithwallet", "01000000" + raw[8:])
        self.assertTrue(signed["complete"])
        old = node.rpc("sendrawtransaction", signed["hex"])
        self.assertEqual(node.rpc("getrawtransaction", old, True)["version"], 1)
        self.wait_for_pool(peer, old)
        block = node.rpc("generatetoaddress", 1, address)[0]
        self.assertIn(old, node.rpc("getblock", block)["tx"])


class MultisigAddressTests(NodeTestCase):
    def test_p2sh_multisig_the_wallet_knows(self) -> None:
        node = self.start_node()
        keys = [node.rpc("getaddressinfo", node.rpc("getnewaddress"))["pubkey"] for _ in range(3)]
        created = node.rpc("addmultisigaddress", 2, keys)
        address = created["address"]
        info = node.rpc("getaddressinfo", address)
        self.assertEqual((info["isscript"], info["iswitness"], info["script"], info["hex"],
                          info["sigsrequired"], info["pubkeys"]),
                         (True, False, "multisig", created["redeemScript"], 2, keys))
        order = list(info)
        self.assertEqual(order[order.index("iswatchonly"):order.index("iswatchonly") + 5],
                         ["iswatchonly", "isscript", "iswitness", "script", "hex"])
        # validateaddress is Core 0.17's without -deprecatedrpc: the address only.
        self.assertEqual(node.rpc("validateaddress", address), {
            "isvalid": True, "address": address, "scriptPubKey": info["scriptPubKey"],
            "isscript": True, "iswitness": False})
        single = node.rpc("getnewaddress")
        self.assertEqual(node.rpc("validateaddress", single)["iswitness"], False)
        info = node.rpc("getaddressinfo", single)
        self.assertEqual((info["isscript"], info["iswitness"]), (False, False))

    def test_addmultisigaddress_keys_and_label(self) -> None:
        node = self.start_node()
        mine, other = node.rpc("getnewaddress"), node.rpc("getnewaddress")
        key = node.rpc("getaddressinfo", other)["pubkey"]
        # Addresses of the wallet's keys stand for their public keys.
        created = node.rpc("addmultisigaddress", 1, [mine, key], "shared")
        info = node.rpc("getaddressinfo", created["address"])
        self.assertEqual(info["pubkeys"], [node.rpc("getaddressinfo", mine)["pubkey"], key])
        self.assertEqual((info["ismine"], info["label"], info["labels"]),
                         (True, "shared", [{"name": "shared", "purpose": "send"}]))
        foreign = node.rpc("createmultisig", 1, [key])["address"]
        stranger = node.rpc("validateaddress", "mjSk1Ny9spzU2fouzYgLqGUD8U41iR35QN")
        for keys, message in (
                (["notanaddress"], "Invalid address: notanaddress"),
                ([foreign], "%s does not refer to a key" % foreign),
                ([stranger["address"]],
                 "no full public key for address %s" % stranger["address"]),
                (["02" + "00" * 32], "Invalid public key: 02" + "00" * 32)):
            with self.assertRaises(RPCFailure) as caught:
                node.rpc("addmultisigaddress", 1, keys)
            self.assertEqual((caught.exception.code, caught.exception.message), (-5, message))
