"""-prune: chain info, pruneblockchain and getblock on a node in the test process; the
start-up checks (exit status, stderr) through real ``coind`` processes."""

from __future__ import annotations

import http.client
import os

from tests.inprocess import NodeTestCase
from tests.nodeharness import MINER_ADDRESS, NodeClient, RPCFailure
from tests.functional.test_daemon import run_coind


class PruneStartupTests(NodeTestCase):

    def test_prune_550_reports_pruned(self) -> None:
        node = self.start_node("-prune=550")
        info = node.rpc("getblockchaininfo")
        self.assertIs(info["pruned"], True)
        self.assertEqual(info["pruneheight"], 0)
        self.assertEqual(node.stop(), 0)

    def test_prune_below_minimum_exits_1(self) -> None:
        datadir = os.path.abspath(self.mktemp())
        os.makedirs(datadir)
        result = run_coind("-regtest", "-datadir=%s" % datadir, "-prune=100",
                           "-printtoconsole=0")
        self.assertEqual(result.returncode, 1)
        self.assertIn("Prune configured below the minimum of 550 MiB.  Please use a higher "
                      "number.", result.stderr)

    def test_not_pruned_by_default(self) -> None:
        node = self.start_node()
        info = node.rpc("getblockchaininfo")
        self.assertIs(info["pruned"], False)
        self.assertNotIn("pruneheight", info)
        with self.assertRaises(RPCFailure) as cm:
            node.rpc("pruneblockchain", 10)
        self.assertEqual((cm.exception.code, cm.exception.message),
                         (-1, "Cannot prune blocks because node is not in prune mode."))
        node.stop()


class ManualPruneTests(NodeTestCase):
    """-prune=1 with small block files (the debug-only -blockfilesize)."""

    @staticmethod
    def _rest_get(node: NodeClient, path: str):
        conn = http.client.HTTPConnection("127.0.0.1", node.rpcport, timeout=30)
        try:
            conn.request("GET", path)
            response = conn.getresponse()
            return response.status, response.reason, response.read()
        finally:
            conn.close()

    def test_prune_and_restart(self) -> None:
        node = self.start_node("-prune=1", "-blockfilesize=4000", "-rest")
        node.rpc("generatetoaddress", 400, MINER_ADDRESS)
        first = node.rpc("getblockhash", 1)
        self.assertEqual(node.rpc("getblockchaininfo")["pruneheight"], 0)
        with self.assertRaises(RPCFailure) as cm:
            node.rpc("pruneblockchain", 401)
        self.assertEqual((cm.exception.code, cm.exception.message),
                         (-8, "Blockchain is shorter than the attempted prune height."))
        self.assertEqual(node.rpc("pruneblockchain", 100), 100)
        info = node.rpc("getblockchaininfo")
        self.assertTrue(1 < info["pruneheight"] <= 101, info["pruneheight"])
        with self.assertRaises(RPCFailure) as cm:
            node.rpc("getblock", first)
        self.assertEqual((cm.exception.code, cm.exception.message),
                         (-1, "Block not available (pruned data)"))
        # REST (coin/rest) answers Core's 404 for pruned blocks.
        status, _, body = self._rest_get(node, "/rest/block/%s.json" % first)
        self.assertEqual((status, body), (404, b"%s not available (pruned data)\r\n"
                                          % first.encode()))
        self.assertFalse(os.path.exists(os.path.join(node.net_datadir, "blocks",
                                                     "blk00000.dat")))
        self.assertEqual(node.stop(), 0)

        # Restarted in prune mode: the same state.
        node.restart("-prune=1", "-blockfilesize=4000")
        self.assertEqual(node.rpc("getblockchaininfo")["pruneheight"], info["pruneheight"])
        self.assertEqual(node.stop(), 0)

        # Once pruned, always pruned (coind's exit status and stderr).
        result = run_coind("-regtest", "-datadir=%s" % node.datadir,
                           "-printtoconsole=0")
        self.assertEqual(result.returncode, 1)
        self.assertIn("You need to rebuild the database using -reindex to go back to unpruned "
                      "mode.  This will redownload the entire blockchain", result.stderr)
        result = run_coind("-regtest", "-datadir=%s" % node.datadir,
                           "-printtoconsole=0", "-prune=1", "-reindex")
        self.assertEqual(result.returncode, 1)
        self.assertIn("cannot rebuild from them", result.stderr)
