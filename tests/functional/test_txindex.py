"""-txindex: enabled on an existing chain, dropped again (a node in the test process), and
refused together with -prune (a ``coind`` process: its exit status and stderr)."""

from __future__ import annotations

import os
import time

from tests.inprocess import NodeTestCase
from tests.nodeharness import MINER_ADDRESS, NodeClient, NodeProcess, RPCFailure

UNKNOWN = "11" * 32
HINT = ". Use gettransaction for wallet transactions."


class TxIndexNodeTests(NodeTestCase):
    def rpc_error(self, node: NodeClient, method: str, *params):
        try:
            node.rpc(method, *params)
        except RPCFailure as e:
            return e.code, e.message
        self.fail("%s succeeded" % method)

    def debug_log(self, node: NodeClient) -> str:
        with open(os.path.join(node.net_datadir, "debug.log")) as f:
            return f.read()

    def test_enable_on_existing_chain_then_drop(self) -> None:
        node = self.start_node()
        hashes = node.rpc("generatetoaddress", 120, MINER_ADDRESS)
        self.assertEqual(node.rpc("getindexinfo"), {})
        self.assertEqual(self.rpc_error(node, "getrawtransaction", UNKNOWN),
                         (-5, "No such mempool transaction. Use -txindex to enable blockchain "
                              "transaction queries" + HINT))
        old_block = node.rpc("getblock", hashes[4])
        self.assertEqual(node.stop(), 0)

        node.restart("-txindex=1")
        deadline = time.monotonic() + 60
        while True:
            info = node.rpc("getindexinfo")
            if info["txindex"]["synced"]:
                break
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.1)
        self.assertEqual(info, {"txindex": {"synced": True, "best_block_height": 120}})
        self.assertEqual(node.rpc("getindexinfo", "txindex"), info)
        self.assertEqual(node.rpc("getindexinfo", "other"), {})
        txid = old_block["tx"][0]
        verbose = node.rpc("getrawtransaction", txid, True)
        self.assertEqual((verbose["txid"], verbose["blockhash"], verbose["height"],
                          verbose["confirmations"]), (txid, hashes[4], 5, 116))
        self.assertEqual(self.rpc_error(node, "getrawtransaction", UNKNOWN),
                         (-5, "No such mempool or blockchain transaction" + HINT))
        # New blocks are indexed as they arrive.
        new = node.rpc("generatetoaddress", 2, MINER_ADDRESS)
        deadline = time.monotonic() + 30
        while node.rpc("getindexinfo")["txindex"]["best_block_height"] != 122:
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.05)
        coinbase = node.rpc("getblock", new[-1])["tx"][0]
        self.assertEqual(node.rpc("getrawtransaction", coinbase, True)["blockhash"], new[-1])
        self.assertIn("txindex is enabled at height", self.debug_log(node))
        self.assertEqual(node.stop(), 0)

        node.restart("-txindex=0")
        deadline = time.monotonic() + 30
        while "Transaction index dropped" not in self.debug_log(node):
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.05)
        self.assertEqual(node.rpc("getindexinfo"), {})
        self.assertEqual(self.rpc_error(node, "getrawtransaction", UNKNOWN)[1],
                         "No such mempool transaction. Use -txindex to enable blockchain "
                         "transaction queries" + HINT)
        self.assertEqual(node.stop(), 0)

    def test_prune_and_txindex_are_exclusive(self) -> None:
        node = NodeProcess.start(self.mktemp(), ["-prune=550", "-txindex=1"], wait=False)
        self.addCleanup(node.kill)
        self.assertEqual(node.wait(), 1)
        self.assertIn("Error: Prune mode is incompatible with -txindex.", node.stderr_text())
