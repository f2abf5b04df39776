"""Wallet rescans on a pruned node, as Core 0.17 answers them: importmulti passes over the
pruned blocks and turns the results of keys born before the first block it could read
into "Rescan failed" errors; rescanblockchain refuses a range with pruned blocks before
it scans; a wallet that would have to catch up over pruned blocks does not load."""

from __future__ import annotations

from typing import Any, Dict

from tests.inprocess import NodeTestCase
from tests.nodeharness import MINER_ADDRESS, NodeClient, RPCFailure

PRUNED_ARGS = ("-prune=1", "-blockfilesize=4000", "-keypool=5", "-listen=0")
WINDOW = 7200  # Core's TIMESTAMP_WINDOW


def pruned_chain(node: NodeClient) -> int:
    """400 blocks with the first ones pruned; the highest pruned height."""
    node.rpc("generatetoaddress", 400, MINER_ADDRESS)
    node.rpc("pruneblockchain", 100)
    return node.rpc("getblockchaininfo")["pruneheight"] - 1


def time_max(node: NodeClient, height: int) -> int:
    """Core's GetBlockTimeMax: the latest block time up to ``height``."""
    return max(node.rpc("getblockheader", node.rpc("getblockhash", h))["time"]
               for h in range(height + 1))


def failure(code: int, message: str) -> Dict[str, Any]:
    return {"success": False, "error": {"code": code, "message": message}}


class PrunedRescanTests(NodeTestCase):

    def assertRPCError(self, node: NodeClient, code: int, message: str, *call: Any) -> None:
        with self.assertRaises(RPCFailure) as caught:
            node.rpc(*call)
        self.assertEqual((caught.exception.code, caught.exception.message), (code, message))

    def test_importmulti_reports_keys_the_rescan_could_not_cover(self) -> None:
        node = self.start_node(*PRUNED_ARGS)
        failed_height = pruned_chain(node)
        self.assertGreater(failed_height, 0)
        read_from = time_max(node, failed_height)
        later = read_from + WINDOW + 1
        scripts = ["76a914%02x%s88ac" % (i, "11" * 19) for i in range(3)]
        results = node.rpc("importmulti", [
            {"scriptPubKey": scripts[0], "timestamp": 0, "internal": True},
            {"scriptPubKey": scripts[1], "timestamp": later, "internal": True},
            {"scriptPubKey": "zz", "timestamp": 0},
            {"scriptPubKey": scripts[2], "timestamp": later - 1, "internal": True}])

        def rescan_failed(timestamp: int) -> Dict[str, Any]:
            return failure(-1, (
                "Rescan failed for key with creation timestamp %d. There was an error reading a "
                "block from time %d, which is after or within %d seconds of key creation, and "
                "could contain transactions pertaining to the key. As a result, transactions "
                "and coins using this key may not appear in the wallet. This error could be "
                "caused by pruning or data corruption (see coind log for details) and could be "
                "dealt with by downloading and rescanning the relevant blocks (see -reindex and "
                "-rescan options).") % (timestamp, read_from, WINDOW))

        self.assertEqual(results, [rescan_failed(0), {"success": True},
                                   failure(-5, "Invalid scriptPubKey"), rescan_failed(later - 1)])
        # The scripts are imported all the same (Core keeps them): only the history may lack.
        for script in scripts:
            self.assertTrue(node.rpc("getaddressinfo", node.rpc("decodescript", script)[
                "addresses"][0])["iswatchonly"])
        # Without a rescan nothing is read, so nothing fails.
        self.assertEqual(node.rpc("importmulti", [
            {"scriptPubKey": "76a914" + "22" * 20 + "88ac", "timestamp": 0, "internal": True}],
            {"rescan": False}), [{"success": True}])

    def test_rescanblockchain_refuses_pruned_ranges_before_scanning(self) -> None:
        node = self.start_node(*PRUNED_ARGS)
        failed_height = pruned_chain(node)
        message = ("Can't rescan beyond pruned data. Use RPC call getblockchaininfo to "
                   "determine your pruned height.")
        self.assertRPCError(node, -1, message, "rescanblockchain")
        self.assertRPCError(node, -1, message, "rescanblockchain", failed_height, failed_height + 5)
        self.assertEqual(node.rpc("rescanblockchain", failed_height + 1),
                         {"start_height": failed_height + 1, "stop_height": 400})

    def test_a_wallet_behind_the_pruned_blocks_does_not_load(self) -> None:
        node = self.start_node(*PRUNED_ARGS)
        node.rpc("createwallet", "behind")
        node.rpc("unloadwallet", "behind")
        pruned_chain(node)
        self.assertRPCError(node, -1, "Prune: last wallet synchronisation goes beyond pruned "
                            "data. You need to -reindex (download the whole blockchain again in "
                            "case of pruned node)", "loadwallet", "behind")
        self.assertNotIn("behind", node.rpc("listwallets"))
        node.rpc("createwallet", "fresh")  # a new wallet starts at the tip
        self.assertIn("fresh", node.rpc("listwallets"))
