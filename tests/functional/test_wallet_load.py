"""Wallet load snapshot on a real coind (issue #21): a clean stop leaves one the next load
uses; kill -9 after a write, or while the node stops (writing it), leaves a wallet that
loads and answers as before, also a payment conflicted by a mined double spend that is not
the wallet's (its conflict mark is in the file).

Each test runs a private ``coind -listen=0`` it kills.
"""

from __future__ import annotations

import os
import time
from typing import Any, Dict

from twisted.trial.unittest import TestCase

from coin.wallet.db import WalletDB
from coin.wallet.wallet import LIVE_DEPTH
from tests.nodeharness import MINER_ADDRESS, NodeProcess

WALLET = "w"
WALLET_PATH = "/wallet/" + WALLET
ARGS = ["-listen=0", "-wallet=" + WALLET]
#: A second wallet on the node that pays the first.
SENDER_PATH = "/wallet/sender"
#: BIP125: an input's nSequence that signals replaceability.
RBF_SEQUENCE = 0xfffffffd
#: The debug.log words of a load's origin (coin.wallet.service.open_wallet).
FROM_SNAPSHOT = "transactions, from its load snapshot)"
COMPUTED = "transactions, computed)"


class LoadSnapshotTests(TestCase):
    timeout = 300

    def start(self, *extra: str) -> NodeProcess:
        node = NodeProcess.start(self.mktemp(), ARGS + list(extra))
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

    def test_a_settled_transaction_left_in_the_file_unsettles_with_its_block(self):
        """A load from the snapshot leaves the settled history in the file; an old spend of
        the wallet (no output of its own, far below the tip) read from there answers as
        before, and when its block is invalidated it is unconfirmed again: the answers then
        are those of a load that computes everything."""
        node = self.start()
        node.rpc("generatetoaddress", 101, self.call(node, "getnewaddress"))
        # One mature 50-coin coinbase, all of it paid outside: no change, nothing left.
        txid = self.call(node, "sendtoaddress", MINER_ADDRESS, 50, "", "", True)
        block = node.rpc("generatetoaddress", 1, MINER_ADDRESS)[0]
        node.rpc("generatetoaddress", LIVE_DEPTH + 5, MINER_ADDRESS)
        before = self.settled_answers(node, txid)
        self.restart(node, kill=False)
        self.assertEqual(self.loads(node)[-1], FROM_SNAPSHOT)
        tx = self.call(node, "gettransaction", txid)
        self.assertEqual(self.hydrations(node), 0, "the hot calls read the settled history")
        self.assertEqual(self.settled_answers(node, txid), before)
        self.assertEqual(tx, self.call(node, "gettransaction", txid))
        self.assertEqual(before["tx"]["confirmations"], LIVE_DEPTH + 6)
        node.rpc("invalidateblock", block)
        after = self.settled_answers(node, txid)
        self.assertEqual(after["tx"]["confirmations"], 0)
        self.assertNotIn("blockhash", after["tx"])
        # The referee: a clean stop, a write to the unloaded wallet (its snapshot is not used
        # then), a load computing everything from every transaction.
        node.stop()
        db = WalletDB(os.path.join(node.net_datadir, "wallets", WALLET, "wallet.dat"))
        db.open(create=False)
        db.put_meta("unrelated", b"1")
        db.close()
        node.launch()
        node.wait_ready()
        self.assertEqual(self.loads(node)[-1], COMPUTED)
        self.assertEqual(self.settled_answers(node, txid), after)

    def test_kill9_keeps_the_conflict_mark_of_a_double_spend_not_the_wallets(self):
        """The sender replaces (BIP125) its payment to the wallet with a spend paying someone
        else, mined: the payment has negative confirmations; after kill -9 (no snapshot
        written, the load computes everything) it has the same, and so do the balances."""
        node = self.start("-wallet=sender")
        node.rpc("generatetoaddress", 101, node.rpc("getnewaddress", path=SENDER_PATH))
        payment = node.rpc("sendtoaddress", self.call(node, "getnewaddress"), 10, "", "", False,
                           True, path=SENDER_PATH)
        self.assertEqual(self.call(node, "getunconfirmedbalance"), 10)
        funding = node.rpc("decoderawtransaction", self.call(node, "gettransaction", payment)["hex"])
        (spent,) = [{"txid": i["txid"], "vout": i["vout"], "sequence": RBF_SEQUENCE}
                    for i in funding["vin"]]
        double = node.rpc("signrawtransactionwithwallet", node.rpc(
            "createrawtransaction", [spent], {MINER_ADDRESS: "49.99"}), path=SENDER_PATH)["hex"]
        node.rpc("sendrawtransaction", double)
        node.rpc("generatetoaddress", 1, MINER_ADDRESS)
        # A block paying the wallet: its best block is written past the conflicting one (a
        # load does not scan that again).
        node.rpc("generatetoaddress", 1, self.call(node, "getnewaddress"))
        node.rpc("generatetoaddress", 1, MINER_ADDRESS)
        before = self.answers(node)
        before["payment"] = self.call(node, "gettransaction", payment)
        self.assertEqual(before["payment"]["confirmations"], -3)
        self.assertEqual(before["info"]["unconfirmed_balance"], 0)
        self.assertNotIn(payment, [entry["txid"] for entry in before["unspent"]])
        self.restart(node, kill=True)
        self.assertEqual(self.loads(node), [COMPUTED, COMPUTED])
        after = self.answers(node)
        after["payment"] = self.call(node, "gettransaction", payment)
        self.assertEqual(after, before)

    def hydrations(self, node: NodeProcess) -> int:
        """How many times the wallet read its settled history (coin.wallet.wallet.hydrate)."""
        with open(os.path.join(node.net_datadir, "debug.log")) as f:
            return sum("reading its settled history" in line for line in f)

    def settled_answers(self, node: NodeProcess, txid: str) -> Dict[str, Any]:
        answers = self.answers(node)
        answers["tx"] = self.call(node, "gettransaction", txid)
        answers["tx"].pop("timereceived")  # a transaction back in the pool is received again
        for entry in answers["transactions"]:
            entry.pop("timereceived")
        answers["since"] = self.call(node, "listsinceblock")
        for entry in answers["since"]["transactions"]:
            entry.pop("timereceived")
        answers["received"] = self.call(node, "listreceivedbyaddress", 0, True)
        return answers
