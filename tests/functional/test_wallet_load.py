"""Wallet load snapshot on a real coind (issue #21): a clean stop leaves one the next load
uses; kill -9 after a write, or while the node stops (writing it), leaves a wallet that
loads and answers as before.

Each test runs a private ``coind -listen=0`` it kills.
"""

from __future__ import annotations

import os
import time
from typing import Any, Dict

from twisted.trial.unittest import TestCase

from tests.nodeharness import MINER_ADDRESS, NodeProcess

WALLET = "w"
WALLET_PATH = "/wallet/" + WALLET
ARGS = ["-listen=0", "-wallet=" + WALLET]
#: The debug.log words of a load's origin (coin.wallet.service.open_wallet).
FROM_SNAPSHOT = "transactions, from its load snapshot)"
COMPUTED = "transactions, computed)"


class LoadSnapshotTests(TestCase):
    timeout = 300

    def start(self) -> NodeProcess:
        node = NodeProcess.start(self.mktemp(), ARGS)
        self.addCleanup(node.kill)
        return node

    def call(self, node: NodeProcess, method: str, *params: Any) -> Any:
        return node.rpc(method, *params, path=WALLET_PATH)

    def answers(self, node: NodeProcess) -> Dict[str, Any]:
        info = self.call(node, "getwalletinfo")
        return {"balance": self.call(node, "getbalance"),
                "balance_1": self.call(node, "getbalance", "*", 1),
                "unspent": self.call(node, "listunspent", 0),
                "transactions": self.call(node, "listtransactions", "*", 1000),
                "info": {k: info[k] for k in ("balance", "unconfirmed_balance",
                                              "immature_balance", "txcount")}}

    def history(self, node: NodeProcess) -> None:
        """Coinbases to the wallet, sends to outside and to itself, all mined."""
        node.rpc("generatetoaddress", 110, self.call(node, "getnewaddress"))
        for amount in ("1.5", "2.25", "0.75"):
            self.call(node, "sendtoaddress", MINER_ADDRESS, amount)
            self.call(node, "sendtoaddress", self.call(node, "getnewaddress"), amount)
        node.rpc("generatetoaddress", 2, MINER_ADDRESS)

    def restart(self, node: NodeProcess, kill: bool) -> None:
        if kill:
            node.kill()
        else:
            node.stop()
        node.launch()
        node.wait_ready()

    def loads(self, node: NodeProcess) -> list:
        """The origins of every load of the wallet so far, oldest first."""
        with open(os.path.join(node.net_datadir, "debug.log")) as f:
            return [FROM_SNAPSHOT if FROM_SNAPSHOT in line else COMPUTED
                    for line in f if "Wallet %r loaded from" % WALLET in line]

    def test_a_clean_stop_leaves_a_snapshot_and_kill9_after_a_write_does_not_use_it(self):
        node = self.start()
        self.history(node)
        before = self.answers(node)
        self.restart(node, kill=False)
        self.assertEqual(self.loads(node)[-1], FROM_SNAPSHOT)
        self.assertEqual(self.answers(node), before)
        # A write (a label: same transactions, same best block), then kill -9.
        address = before["unspent"][0]["address"]
        self.call(node, "setlabel", address, "after the snapshot")
        before = self.answers(node)
        self.restart(node, kill=True)
        self.assertEqual(self.loads(node)[-1], COMPUTED)
        self.assertEqual(self.answers(node), before)
        self.assertEqual(self.call(node, "getaddressinfo", address)["label"], "after the snapshot")

    def test_kill9_while_the_node_stops_leaves_a_wallet_that_answers_as_before(self):
        """The snapshot is written as the wallet closes: killed at any point of that, the
        next load takes either a whole valid snapshot or computes everything."""
        node = self.start()
        self.history(node)
        for delay in (0.0, 0.05, 0.2):
            self.call(node, "sendtoaddress", MINER_ADDRESS, "0.1")  # a write each round
            node.rpc("generatetoaddress", 1, MINER_ADDRESS)
            before = self.answers(node)
            node.rpc("stop")
            time.sleep(delay)
            self.restart(node, kill=True)
            self.assertEqual(self.answers(node), before, "killed %ss into stop" % delay)
