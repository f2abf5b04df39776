"""Mining and Dash methods in a node in this process, driven by ``coin-cli`` as a user would.

The daemon finds RPC methods through installed entry points: until the ``mining``,
``governance`` (and the other new) entry points are in pyproject.toml and the package is
reinstalled, these tests are skipped.
"""

from __future__ import annotations

import json

from twisted.trial.unittest import SkipTest

from tests.inprocess import InProcessNode, NodeTestCase
from tests.nodeharness import MINER_ADDRESS


class CoinCliTests(NodeTestCase):
    def start(self, *methods: str) -> InProcessNode:
        node = self.start_node()
        for method in methods:
            if node.rpc("help", method).startswith("help: unknown command:"):
                raise SkipTest("coind does not offer %s: add the entry points of "
                               "coin.rpc.methods.* and reinstall (pip install -e .)" % method)
        return node

    def test_generate_then_template(self) -> None:
        node = self.start("generatetoaddress", "getblocktemplate")
        result = node.cli("generatetoaddress", "3", MINER_ADDRESS)
        self.assertEqual((result.returncode, result.stderr), (0, ""))
        hashes = json.loads(result.stdout)
        self.assertEqual(len(hashes), 3)
        self.assertEqual(node.rpc("getbestblockhash"), hashes[-1])
        # An isolated regtest node still hands out templates (shared/reference/README.md).
        template = json.loads(node.cli("getblocktemplate").stdout)
        self.assertEqual((template["height"], template["previousblockhash"]), (4, hashes[-1]))
        node.stop()

    def test_governance_and_masternode_as_recorded(self) -> None:
        node = self.start("gobject", "masternode")
        result = node.cli("gobject", "count")
        self.assertEqual((result.returncode, result.stderr), (0, ""))
        self.assertEqual(json.loads(result.stdout), {
            "objects_total": 0, "proposals": 0, "triggers": 0, "other": 0, "erased": 0,
            "votes": 0})
        # cli_20 and cli_28.
        status = node.cli("masternode", "status")
        self.assertEqual((status.returncode, status.stdout, status.stderr),
                         (91, "", "error code: -32603\nerror message:\nThis is not a masternode\n"))
        count = node.cli("masternode", "count")
        self.assertEqual((count.returncode, count.stdout, count.stderr), (0, "0\n", ""))
        node.stop()
