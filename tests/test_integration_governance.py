"""Governance objects in a real ``coind`` (regtest, with its wallet), as a user types them:
``gobject prepare``, mining, ``gobject submit``, then list/get/count, bad inputs, restart."""

from __future__ import annotations

import json

from twisted.trial.unittest import SynchronousTestCase

from tests.govhelpers import object_hex, proposal_hex
from tests.nodeharness import NodeProcess, RPCFailure

TIME = "1700000000"


class ProposalLifeTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.node = NodeProcess.start(self.mktemp(), ["-connect=0", "-listen=0"])
        self.addCleanup(self.node.kill)
        self.address = self.node.rpc("getnewaddress")
        self.node.rpc("generatetoaddress", 101, self.address)

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
        node.launch()
        node.wait_ready()
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
