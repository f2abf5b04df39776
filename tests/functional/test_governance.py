"""Governance objects in a real node (regtest, with its wallet), as a user types them:
``gobject prepare``, mining, ``gobject submit``, then list/get/count, bad inputs, restart.

One node runs in this process (tests/inprocess.py); the masternode network of the last test
runs as coind processes."""

from __future__ import annotations

import json
from typing import Any, List

from coin.chainparams import REGTEST
from coin.mining.assembler import create_coinbase, solve
from coin.primitives.block import Block, BlockHeader
from coin.primitives.merkle import merkle_root

from tests.govhelpers import object_hex, proposal_hex
from tests.inprocess import InProcessNode, NodeTestCase
from tests.nodeharness import NodeProcess, RPCFailure
from tests.functional.test_masternode import (
    MIN_MNP_SECONDS, OP_TRUE, MasternodeNetworkCase, set_time, status_list,
)
from tests.functional.test_p2p_base import wait_until

TIME = "1700000000"


def funded_wallet(node: InProcessNode) -> str:
    """A wallet address that 101 blocks paid (the first coinbase mature): the tests' chain."""
    address = node.rpc("getnewaddress")
    node.rpc("generatetoaddress", 101, address)
    return address


class ProposalLifeTests(NodeTestCase):
    def setUp(self) -> None:
        self.node = self.start_node("-connect=0", "-listen=0", chain=funded_wallet)
        self.address = self.node.state

    def refused(self, *params: str) -> tuple:
        with self.assertRaises(RPCFailure) as caught:
            self.node.rpc("gobject", *params)
        return caught.exception.code, caught.exception.message

    def test_prepare_mine_submit_list_and_restart(self) -> None:
        node = self.node
        data = proposal_hex(self.address)
        fee_txid = node.rpc("gobject", "prepare", "0", "1", TIME, data)
        fee_tx = node.rpc("getrawtransaction", fee_txid, True)
        burn = [out for out in fee_tx["vout"] if out["scriptPubKey"]["type"] == "nulldata"]
        self.assertEqual(len(burn), 1)
        self.assertEqual(burn[0]["value"], 5)
        # The object's hash is what the fee commits to (OP_RETURN <hash>, hash byte-reversed).
        object_hash = bytes.fromhex(burn[0]["scriptPubKey"]["hex"][4:])[::-1].hex()

        code, message = self.refused("submit", "0", "1", TIME, data, fee_txid)
        self.assertEqual((code, message), (-32603, (
            "Governance object is not valid - %s - Collateral requires at least 1 confirmations "
            "to be relayed throughout the network (it has only 0), rejected -- try again later")
            % object_hash))
        self.assertEqual(node.rpc("gobject", "list"), {})

        node.rpc("generatetoaddress", 1, self.address)
        self.assertEqual(node.rpc("gobject", "submit", "0", "1", TIME, data, fee_txid), object_hash)
        listed = node.rpc("gobject", "list")
        self.assertEqual(list(listed), [object_hash])
        self.assertEqual((listed[object_hash]["CollateralHash"], listed[object_hash]["DataHex"]),
                         (fee_txid, data))
        got = node.rpc("gobject", "get", object_hash)
        self.assertEqual((got["Hash"], got["ObjectType"], got["CreationTime"]),
                         (object_hash, 1, int(TIME)))
        self.assertEqual(json.loads(got["DataString"])[0][1]["payment_address"], self.address)
        count = node.cli("gobject", "count")
        self.assertEqual(json.loads(count.stdout)["proposals"], 1)

        self.assertEqual(node.stop(), 0)
        node.start()
        self.assertEqual(list(node.rpc("gobject", "list")), [object_hash])
        self.assertEqual(node.rpc("gobject", "get", object_hash)["CollateralHash"], fee_txid)

    def test_fee_found_through_the_wallet_once_its_change_is_spent(self) -> None:
        """Without -txindex the chain finds a transaction by an unspent output; the wallet
        that paid the fee still has it."""
        node = self.node
        data = proposal_hex(self.address)
        fee_txid = node.rpc("gobject", "prepare", "0", "1", TIME, data)
        change = [out for out in node.rpc("getrawtransaction", fee_txid, True)["vout"]
                  if out["scriptPubKey"]["type"] != "nulldata"]
        self.assertEqual(len(change), 1)
        spend = node.rpc("createrawtransaction", [{"txid": fee_txid, "vout": change[0]["n"]}],
                         {self.address: float(change[0]["value"]) - 0.001})
        signed = node.rpc("signrawtransactionwithwallet", spend)
        node.rpc("sendrawtransaction", signed["hex"])
        node.rpc("generatetoaddress", 1, self.address)
        with self.assertRaises(RPCFailure):
            node.rpc("getrawtransaction", fee_txid)
        object_hash = node.rpc("gobject", "submit", "0", "1", TIME, data, fee_txid)
        self.assertEqual(list(node.rpc("gobject", "list")), [object_hash])

    def test_bad_input_is_refused_and_nothing_is_kept(self) -> None:
        data = proposal_hex(self.address)
        other = proposal_hex(self.address, name="someone-else")
        other_fee = self.node.rpc("gobject", "prepare", "0", "1", TIME, other)
        self.node.rpc("generatetoaddress", 1, self.address)
        missing = "ab" * 32
        for params, code, start in (
                (("check", proposal_hex(self.address, end_epoch=1)), -8,
                 "Invalid proposal data, error messages:end_epoch <= start_epoch;"),
                (("check", "7a7a7a"), -8, "Invalid object type, only proposals can be validated"),
                (("prepare", "0", "1", TIME, object_hex("proposal", {"type": 1})), -8,
                 "Invalid proposal data, error messages:JSON value is not a string as expected;"),
                (("prepare", "0", "1", TIME, "7a7a"), -32603, "Governance object is not valid - "),
                (("submit", "0", "1", TIME, data, missing), -32603, "Governance object is not valid"),
                (("submit", "0", "1", TIME, data, other_fee), -32603,
                 "Governance object is not valid - "),
                (("submit", "0", "1", TIME, "7a7a", other_fee), -32603,
                 "Governance object is not valid - ")):
            code_seen, message = self.refused(*params)
            self.assertEqual(code_seen, code, params)
            self.assertTrue(message.startswith(start), (params, message))
        self.assertIn("Can't find collateral tx " + missing,
                      self.refused("submit", "0", "1", TIME, data, missing)[1])
        self.assertIn("Couldn't find opReturn", self.refused("submit", "0", "1", TIME, data,
                                                             other_fee)[1])
        self.assertIn("Object data unparseable", self.refused("submit", "0", "1", TIME, "7a7a",
                                                              other_fee)[1])
        self.assertEqual(self.node.rpc("gobject", "count")["objects_total"], 0)
        self.assertEqual(self.node.rpc("getsuperblockbudget", 110), "50.00")
        info = self.node.rpc("getgovernanceinfo")
        self.assertEqual((info["superblockcycle"], info["nextsuperblock"]), (10, 110))
        self.assertIs(self.node.rpc("logging", ["gobject"])["gobject"], True)


class GovernanceNetworkTests(MasternodeNetworkCase):
    """Issue #15 on the masternode test network: three masternodes, a controller with a
    wallet, a plain node that joins late."""

    def agree(self, nodes: List[NodeProcess], what: str, *call: str) -> Any:
        """Wait until every node answers ``call`` alike (and not empty); returns the answer."""
        answers: List[Any] = []

        def same() -> bool:
            answers[:] = [n.rpc(*call) for n in nodes]
            return bool(answers[0]) and all(a == answers[0] for a in answers)

        try:
            wait_until(same, what, timeout=60)
        except AssertionError:
            first = answers[0]
            diff = [(k, {f: (v, other.get(k, {}).get(f)) for f, v in first[k].items()
                         if other.get(k, {}).get(f) != v}) if isinstance(first, dict) else None
                    for other in answers[1:] for k in first if other.get(k) != first[k]]
            raise AssertionError("%s: %r %r" % (what, [sorted(a) for a in answers], diff)) from None
        return answers[0]

    def test_proposal_votes_relay_sync_and_restart(self) -> None:
        c = self.controller(3)
        masternodes = self.masternodes(c)
        control = c.node
        nodes = [control] + masternodes
        control.rpc("masternode", "start-all")
        now = c.now + MIN_MNP_SECONDS + 60
        set_time(nodes, now)
        wait_until(lambda: all(len(status_list(n)) == 3 and set(status_list(n).values()) ==
                               {"ENABLED"} for n in nodes), "three ENABLED")
        wait_until(lambda: all(n.rpc("mnsync", "status")["IsSynced"] for n in nodes),
                   "masternode sync finished everywhere")

        # prepare + mining + submit on the controller: the proposal reaches every masternode.
        address = control.rpc("getnewaddress")
        data = proposal_hex(address)
        fee_txid = control.rpc("gobject", "prepare", "0", "1", TIME, data)
        control.rpc("generate", 1)
        # Every node must have the fee's block first: one that has not refuses the object
        # (0 confirmations, as Dash does) and is not offered it again.
        self.wait_tip(nodes)
        object_hash = control.rpc("gobject", "submit", "0", "1", TIME, data, fee_txid)
        listed = self.agree(nodes, "the proposal on every node", "gobject", "list")
        self.assertEqual(list(listed), [object_hash])

        # vote-alias then vote-many from masternode.conf: three funding-yes votes everywhere.
        self.assertEqual(control.rpc("gobject", "vote-alias", object_hash, "funding", "yes", "mn1"),
                         {"overall": "Voted successfully 1 time(s) and failed 0 time(s).",
                          "detail": {"mn1": {"result": "success"}}})
        many = control.rpc("gobject", "vote-many", object_hash, "funding", "yes")
        self.assertEqual(many["overall"], "Voted successfully 2 time(s) and failed 1 time(s).")
        self.assertIn("Masternode voting too often", many["detail"]["mn1"]["errorMessage"])
        current = self.agree(nodes, "three votes on every node", "gobject", "getcurrentvotes",
                             object_hash)
        self.assertEqual(len(current), 3)
        self.assertEqual(masternodes[2].rpc("gobject", "get", object_hash)["FundingResult"],
                         {"AbsoluteYesCount": 3, "YesCount": 3, "NoCount": 0, "AbstainCount": 0})

        # The masternodes' sentinels make and vote the trigger for the next superblock; at
        # the height before it every template carries the payment.
        cycle = control.rpc("getgovernanceinfo")["superblockcycle"]
        superblock = control.rpc("getgovernanceinfo")["nextsuperblock"]
        self.assertLess(control.rpc("getblockcount"), superblock - 1)
        control.rpc("generate", superblock - 1 - control.rpc("getblockcount"))
        self.wait_tip(nodes)
        payment = {"payee": address, "script": control.rpc("getaddressinfo", address)["scriptPubKey"],
                   "amount": 1250000000}
        wait_until(lambda: all(n.rpc("getblocktemplate")["superblock"] == [payment] for n in nodes),
                   "every template to pay the superblock", timeout=60)
        triggers = control.rpc("gobject", "list", "funding", "triggers")
        self.assertTrue(triggers)
        self.assertTrue(all(t["YesCount"] >= 1 for t in triggers.values()))
        template = masternodes[0].rpc("getblocktemplate")
        self.assertEqual((template["height"], template["superblocks_enabled"]), (superblock, True))

        # SPORK_9 is active (its default): a block that leaves the payment out is refused.
        masternode_payee = [(bytes.fromhex(p["script"]), p["amount"]) for p in template["masternode"]]
        coinbase = create_coinbase(template["height"], OP_TRUE, template["coinbasevalue"] - 1250000000,
                                   payee=masternode_payee[0] if masternode_payee else None)
        root, _ = merkle_root([coinbase.txid])
        header = BlockHeader(template["version"], bytes.fromhex(template["previousblockhash"])[::-1],
                             root, template["curtime"], int(template["bits"], 16), 0)
        unpaid = solve(Block(header, [coinbase]), REGTEST)
        for node in masternodes:
            self.assertEqual(node.rpc("submitblock", unpaid.serialize().hex()), "bad-cb-payee")

        # The controller mines the superblock: it pays the proposal's address exactly.
        control.rpc("generate", 1)
        self.wait_tip(nodes)
        block = control.rpc("getblock", control.rpc("getbestblockhash"), 2)
        self.assertEqual(block["height"], superblock)
        coinbase_json = block["tx"][0]
        (paid,) = [out for out in coinbase_json["vout"]
                   if out["scriptPubKey"].get("addresses") == [address]]
        self.assertEqual(paid["value"], 12.5)
        self.assertEqual(control.rpc("gettxout", coinbase_json["txid"], paid["n"])["value"], 12.5)
        self.assertEqual(superblock % cycle, 0)

        # A plain node joining late gets the object and every vote once its list is synced.
        late_dir = self.mktemp()
        late = self.start("-listen=1", "-connect=" + self.target(control), datadir=late_dir)
        late.rpc("setmocktime", now)
        objects = self.agree([control, late], "the late node's objects", "gobject", "list", "all")
        self.assertGreater(len(objects), 1)  # the proposal and the trigger(s)
        for listed_hash in objects:
            self.agree([control, late], "the late node's votes", "gobject", "getcurrentvotes",
                       listed_hash)

        # Restarted (alone), it keeps them: governance.dat.
        late.stop()
        late = self.start("-listen=0", "-connect=0", datadir=late_dir, port=late.p2p_port)
        self.assertEqual(late.rpc("gobject", "getcurrentvotes", object_hash), current)
        self.assertEqual(late.rpc("gobject", "list", "all"), objects)
