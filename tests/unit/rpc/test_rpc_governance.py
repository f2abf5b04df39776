"""Governance and masternode methods through the real stack (tests/rpcchain.py).

Where the reference node's reply is in tests/data/transcripts it is replayed byte for
byte; the short recorded bodies that are not there are quoted inline with their names.
"""

from __future__ import annotations

import base64
from decimal import Decimal
from typing import Any, List

import simplejson
from twisted.internet import reactor
from twisted.internet.defer import inlineCallbacks

from coin.chainparams import COIN
from coin.governance.collateral import burn_script
from coin.governance.object import NULL_HASH, GovernanceObject
from coin.governance.service import GovernanceService
from coin.governance.vote import OUTCOME_NO, OUTCOME_YES, SIGNAL_FUNDING
from coin.masternode.active import STARTED, ActiveMasternode
from coin.masternode.conf import MasternodeEntry
from coin.masternode.service import MasternodeService
from coin.primitives.address import encode_wif
from coin.primitives.hashes import hash_to_hex
from coin.rpc.methods.governance import METHODS
from coin.rpc.methods.masternode import METHODS as MASTERNODE_METHODS

from tests.govhelpers import FakeMasternodes, proposal_hex, trigger_hex
from tests.rpcchain import ChainRPCTestCase
from tests.rpchelpers import transcript

HASH = "ab" * 32
# Recorded bodies (/work/shared/reference/transcripts) not copied into tests/data.
RPCM_32_GOBJECT_LIST = b'{"result":{},"error":null,"id":32}\n'
# Key order of rpcm_42 (getgovernanceinfo).
GOVERNANCE_KEYS = ["governanceminquorum", "masternodewatchdogmaxseconds", "proposalfee",
                   "superblockcycle", "lastsuperblock", "nextsuperblock", "maxgovobjdatasize"]
GET_KEYS = ["DataHex", "DataString", "Hash", "CollateralHash", "ObjectType", "CreationTime",
            "FundingResult", "ValidResult", "DeleteResult", "EndorsedResult", "fLocalValidity",
            "IsValidReason", "fCachedValid", "fCachedFunding", "fCachedDelete", "fCachedEndorsed"]
LIST_KEYS = ["DataHex", "DataString", "Hash", "CollateralHash", "ObjectType", "CreationTime",
             "AbsoluteYesCount", "YesCount", "NoCount", "AbstainCount", "fBlockchainValidity",
             "IsValidReason", "fCachedValid", "fCachedFunding", "fCachedDelete", "fCachedEndorsed"]
NO_WALLET = (404, -32601, "Method not found (wallet method is disabled because no wallet is "
                          "loaded)")
REFERENCE_HELP_LINES = ["== Governance ==", "getgovernanceinfo", 'gobject "command"...',
                        "== Masternode ==", 'masternode "command"...',
                        'masternodelist ( "mode" "filter" )', "mnsync [status|next|reset]"]


class NoPeers:
    """The P2P surface the service registers into, with no connection (RPC-only test)."""

    def __init__(self) -> None:
        self.handlers: dict = {}
        self.on_disconnect: List[Any] = []

    def register_handler(self, command: str, handler: Any) -> None:
        self.handlers[command] = handler

    def handshaked_peers(self) -> List[Any]:
        return []

    def connect_to(self, target: str) -> bool:
        return False


class GovernanceTestCase(ChainRPCTestCase):
    methods = METHODS

    def setUp(self):
        ready = super().setUp()
        self.governance = GovernanceService(self.access, self.mktemp(), self.clock.adjusted_time,
                                            reactor)
        self.node.governance = self.governance

        def with_masternodes(result):
            self.node.masternodes = MasternodeService(
                self.params, self.access, NoPeers(), lambda: False, self.service.subscribe,
                self.clock.now, reactor, self.mktemp(), "masternode.conf")
            return result

        return ready.addCallback(with_masternodes)

    @inlineCallbacks
    def submitted_proposal(self):
        """A proposal whose fee is mined, submitted; fires with the object."""
        data = proposal_hex(self.address())
        obj = GovernanceObject(NULL_HASH, 1, 1700000000, NULL_HASH, data)
        tx = self.builder.spend(self.mature_coinbase(1), [(burn_script(obj.hash), 5 * COIN),
                                                          (self.builder.script_pubkey, COIN)])
        yield self.mine(1, txs=[tx])
        yield self.result("gobject", "submit", "0", "1", "1700000000", data, tx.txid_hex)
        return obj

    @inlineCallbacks
    def replay(self, name: str):
        """Send a recording's request; the reply body must be the recorded one."""
        recorded = transcript(name)
        reply = yield self.send_raw(recorded.request.split(b"\r\n\r\n", 1)[1])
        self.assertEqual(reply.body, recorded.body, name)

    @inlineCallbacks
    def body(self, request_id: int, method: str, *params):
        reply = yield self.send_raw(simplejson.dumps(
            {"jsonrpc": "1.0", "id": request_id, "method": method, "params": list(params)}
        ).encode())
        return reply.body


class GobjectTests(GovernanceTestCase):
    @inlineCallbacks
    def test_help_and_unknown_sub_commands_as_recorded(self):
        yield self.replay("rpcm_30_gobject")
        yield self.replay("rpcm_33_gobject_nosuchsub")
        help_text = simplejson.loads(transcript("rpcm_30_gobject").body)["error"]["message"]
        self.assertEqual((yield self.result("help", "gobject")), help_text)
        self.assertEqual((yield self.error("gobject", 5)),
                         (500, -1, "JSON value is not a string as expected"))

    @inlineCallbacks
    def test_count_and_list(self):
        count = yield self.result("gobject", "count")
        self.assertEqual(list(count.items()), [("objects_total", 0), ("proposals", 0),
                                               ("triggers", 0), ("other", 0), ("erased", 0),
                                               ("votes", 0)])
        self.assertEqual((yield self.body(32, "gobject", "list")), RPCM_32_GOBJECT_LIST)
        for sub in ("list", "diff"):
            self.assertEqual((yield self.result("gobject", sub, "funding", "proposals")), {})
            self.assertEqual((yield self.result("gobject", sub, "bogus")),
                             "Invalid signal, should be 'valid', 'funding', 'delete', 'endorsed' "
                             "or 'all'")
            self.assertEqual((yield self.result("gobject", sub, "all", "bogus")),
                             "Invalid type, should be 'proposals', 'triggers', 'watchdogs' or "
                             "'all'")
            self.assertEqual((yield self.error("gobject", sub, "all", "all", "x")),
                             (500, -8, "Correct usage is 'gobject [list|diff] ( signal type )'"))
            self.assertEqual((yield self.error("gobject", sub, 1)),
                             (500, -1, "JSON value is not a string as expected"))

    @inlineCallbacks
    def test_lookups_find_nothing(self):
        for params, expected in (
                (("get", HASH), (-8, "Unknown governance object")),
                (("get",), (-8, "Correct usage is 'gobject get <governance-hash>'")),
                (("get", "xyz"), (-8, "GovObj hash must be hexadecimal string (not 'xyz')")),
                (("getvotes", HASH), (-8, "Unknown governance-hash")),
                (("getvotes",), (-1, "Correct usage is 'gobject getvotes <governance-hash>'")),
                (("getvotes", "ab"), (-8, "Governance hash must be of length 64 (not 2)")),
                (("getcurrentvotes", HASH), (-8, "Unknown governance-hash")),
                (("getcurrentvotes", HASH, HASH, "1"), (-8, "Unknown governance-hash")),
                (("getcurrentvotes", HASH, HASH), (-1, "Correct usage is 'gobject "
                                                       "getcurrentvotes <governance-hash> [txid "
                                                       "vout_index]'")),
                (("getcurrentvotes", HASH, "x", "1"),
                 (-8, "Masternode Collateral hash must be hexadecimal string (not 'x')")),
                (("getcurrentvotes", HASH, HASH, "one"),
                 (-1, "bad lexical cast: source type value could not be interpreted as "
                      "target")),
                # Unicode digits and 5,000 digits: the same cast error, not a 500.
                (("getcurrentvotes", HASH, HASH, "\u00b2"),
                 (-1, "bad lexical cast: source type value could not be interpreted as "
                      "target")),
                (("getcurrentvotes", HASH, HASH, "9" * 5000),
                 (-1, "bad lexical cast: source type value could not be interpreted as "
                      "target")),
                (("getcurrentvotes", HASH, HASH, "0" * 5000 + "1"), (-8, "Unknown governance-hash")),
                (("getcurrentvotes", HASH, HASH, "4294967296"),
                 (-1, "bad lexical cast: source type value could not be interpreted as "
                      "target"))):
            self.assertEqual((yield self.error("gobject", *params)), (500,) + expected, params)

    @inlineCallbacks
    def test_deserialize(self):
        data = '{"name": "beer", "amount": 1.50}'.encode().hex()
        self.assertEqual((yield self.result("gobject", "deserialize", data)),
                         '{"name":"beer","amount":1.50}')
        self.assertEqual((yield self.result("gobject", "deserialize", "7b7d zz")), "{}")
        self.assertEqual((yield self.result("gobject", "deserialize", "zz")), "null")
        self.assertEqual((yield self.error("gobject", "deserialize")),
                         (500, -8, "Correct usage is 'gobject deserialize <data-hex>'"))

    @inlineCallbacks
    def test_check(self):
        self.assertEqual((yield self.result("gobject", "check", proposal_hex(self.address()))),
                         {"Object status": "OK"})
        not_proposal = (500, -8, "Invalid object type, only proposals can be validated")
        self.assertEqual((yield self.error("gobject", "check", "00")), not_proposal)
        self.assertEqual((yield self.error("gobject", "check", "7b7d")), not_proposal)
        self.assertEqual((yield self.error("gobject", "check",
                                           proposal_hex(self.address(), name="a b"))),
                         (500, -8, "Invalid proposal data, error messages:name contains invalid "
                                   "characters;Invalid name;"))
        self.assertEqual((yield self.error("gobject", "check")),
                         (500, -8, "Correct usage is 'gobject check <data-hex>'"))

    @inlineCallbacks
    def test_submit_arguments(self):
        self.assertEqual((yield self.error("gobject", "submit", "0")),
                         (500, -8, "Correct usage is 'gobject submit <parent-hash> <revision> "
                                   "<time> <data-hex> <fee-txid>'"))
        data = proposal_hex(self.address())
        for params, expected in (
                (("0", "1", "2", data), (-8, "The fee-txid parameter must be included to submit "
                                             "this type of object")),
                (("0", "1", "2", data, "xyz"),
                 (-8, "fee-txid, parameter 6 must be hexadecimal string (not 'xyz')")),
                (("xyz", "1", "2", data, HASH),
                 (-8, "parent object hash, parameter 2 must be hexadecimal string (not 'xyz')")),
                (("0", "one", "2", data, HASH),
                 (-1, "bad lexical cast: source type value could not be interpreted as target")),
                (("0", "1", "99999999999", data, HASH),
                 (-1, "bad lexical cast: source type value could not be interpreted as target")),
                (("0", "1", "2", trigger_hex(), HASH),
                 (-8, "Only valid masternodes can submit this type of object")),
                (("0", "1", "2", proposal_hex(self.address(), payment_amount=0), HASH),
                 (-8, "Invalid proposal data, error messages:payment_amount is negative;"
                      "Invalid payment amount;"))):
            self.assertEqual((yield self.error("gobject", "submit", *params)), (500,) + expected,
                             params)
        self.assertEqual((yield self.result("gobject", "count"))["objects_total"], 0)

    @inlineCallbacks
    def test_submit_checks_the_fee_transaction(self):
        """Missing, unconfirmed, too small and uncommitted fees are refused; nothing is kept."""
        data = proposal_hex(self.address())
        obj = GovernanceObject(NULL_HASH, 1, 1700000000, NULL_HASH, data)
        object_hash = hash_to_hex(obj.hash)
        burn = burn_script(obj.hash)

        def refused(txid, why):
            return self.error("gobject", "submit", "0", "1", "1700000000", data, txid)

        reason = yield refused(HASH, None)
        self.assertEqual(reason, (500, -32603, "Governance object is not valid - %s - Can't find "
                                               "collateral tx %s" % (object_hash, HASH)))
        small = self.builder.spend(self.mature_coinbase(1), [(burn, 5 * COIN - 1),
                                                             (self.builder.script_pubkey, COIN)])
        other = self.builder.spend(self.mature_coinbase(2), [(burn_script(bytes(32)), 5 * COIN),
                                                             (self.builder.script_pubkey, COIN)])
        young = self.builder.spend(self.mature_coinbase(3), [(burn, 5 * COIN),
                                                             (self.builder.script_pubkey, COIN)])
        yield self.mine(1, txs=[small, other])
        yield self.mempool.accept(young)
        for tx in (small, other):
            code, message = (yield refused(tx.txid_hex, None))[1:]
            self.assertEqual(code, -32603)
            self.assertTrue(message.startswith("Governance object is not valid - %s - Couldn't find "
                                               "opReturn %s in CTransaction(hash=%s" % (
                                                   object_hash, object_hash, tx.txid_hex[:10])),
                            message)
        self.assertEqual((yield refused(young.txid_hex, None)),
                         (500, -32603, "Governance object is not valid - %s - Collateral requires "
                                       "at least 1 confirmations to be relayed throughout the "
                                       "network (it has only 0), rejected -- try again later"
                                       % object_hash))
        self.assertEqual((yield self.result("gobject", "count"))["objects_total"], 0)
        self.assertEqual((yield self.result("gobject", "list")), {})
        yield self.mine(1, txs=[young])
        self.assertEqual((yield self.result("gobject", "submit", "0", "1", "1700000000", data,
                                            young.txid_hex)), object_hash)
        got = yield self.result("gobject", "get", object_hash)
        self.assertEqual(got["CollateralHash"], young.txid_hex)
        self.assertEqual(got["DataString"], bytes.fromhex(data).decode())
        self.assertEqual((got["ObjectType"], got["CreationTime"], got["fLocalValidity"],
                          got["IsValidReason"], got["fCachedValid"], got["fCachedFunding"]),
                         (1, 1700000000, True, "", True, False))
        self.assertEqual(list(got), GET_KEYS)
        listed = yield self.result("gobject", "list", "all", "proposals")
        self.assertEqual(list(listed), [object_hash])
        self.assertEqual(list(listed[object_hash]), LIST_KEYS)
        self.assertEqual((yield self.result("gobject", "list", "funding")), {})
        self.assertEqual((yield self.result("gobject", "list", "all", "triggers")), {})
        self.assertEqual((yield self.result("gobject", "getvotes", object_hash)), {})
        self.assertEqual((yield self.result("gobject", "getcurrentvotes", object_hash)), {})
        self.assertEqual((yield self.result("gobject", "count")),
                         {"objects_total": 1, "proposals": 1, "triggers": 0, "other": 0,
                          "erased": 0, "votes": 0})
        self.assertEqual(list((yield self.result("gobject", "diff"))), [])

    @inlineCallbacks
    def test_prepare_needs_a_wallet(self):
        self.assertEqual((yield self.error("gobject", "prepare", "0", "1", "2", "00")),
                         NO_WALLET)

    @inlineCallbacks
    def test_votes(self):
        self.assertEqual((yield self.result("gobject", "vote-conf", HASH, "funding", "yes")),
                         {"overall": "Voted successfully 0 time(s) and failed 1 time(s).",
                          "detail": {"coin.conf": {"result": "failed", "errorMessage":
                                                   "Can't find masternode by collateral output"}}})
        nothing = {"overall": "Voted successfully 0 time(s) and failed 0 time(s).", "detail": {}}
        self.assertEqual((yield self.result("gobject", "vote-many", HASH, "valid", "no")),
                         nothing)
        self.assertEqual((yield self.result("gobject", "vote-alias", HASH, "delete", "abstain",
                                            "mn1")), nothing)
        for params, expected in (
                (("vote-many", HASH, "funding"),
                 (-8, "Correct usage is 'gobject vote-many <governance-hash> "
                      "[funding|valid|delete] [yes|no|abstain]'")),
                (("vote-alias", HASH, "funding", "yes"),
                 (-8, "Correct usage is 'gobject vote-alias <governance-hash> "
                      "[funding|valid|delete] [yes|no|abstain] <alias-name>'")),
                (("vote-conf", "xyz", "funding", "yes"),
                 (-8, "Object hash must be hexadecimal string (not 'xyz')")),
                (("vote-conf", HASH, "fund", "yes"),
                 (-8, "Invalid vote signal. Please using one of the following: "
                      "(funding|valid|delete|endorsed) OR `custom sentinel code` ")),
                (("vote-conf", HASH, "funding", "maybe"),
                 (-8, "Invalid vote outcome. Please use one of the following: 'yes', 'no' or "
                      "'abstain'")),
                (("vote-alias", HASH, "funding", "yes", 5),
                 (-1, "JSON value is not a string as expected"))):
            self.assertEqual((yield self.error("gobject", *params)), (500,) + expected, params)

    def conf_entry(self, masternodes: FakeMasternodes, n: int, alias: str) -> MasternodeEntry:
        outpoint = list(masternodes.keys)[n]
        wif = encode_wif(masternodes.keys[outpoint].secret, self.params)
        return MasternodeEntry(alias, "127.0.0.1:1", wif, hash_to_hex(outpoint.txid), str(outpoint.n))

    @inlineCallbacks
    def test_vote_many_and_alias_sign_with_masternode_conf_keys(self):
        masternodes = FakeMasternodes(3)
        self.governance.keys = masternodes
        obj = yield self.submitted_proposal()
        object_hash = hash_to_hex(obj.hash)
        unknown = MasternodeEntry("gone", "127.0.0.1:1", self.conf_entry(masternodes, 0, "x").private_key,
                                  "cd" * 32, "0")
        self.node.masternodes.conf_entries = [
            self.conf_entry(masternodes, 0, "mn0"), self.conf_entry(masternodes, 1, "mn1"),
            unknown, MasternodeEntry("badkey", "127.0.0.1:1", "notakey", "cd" * 32, "0")]
        self.assertEqual((yield self.result("gobject", "vote-alias", object_hash, "funding", "yes",
                                            "mn1")),
                         {"overall": "Voted successfully 1 time(s) and failed 0 time(s).",
                          "detail": {"mn1": {"result": "success"}}})
        many = yield self.result("gobject", "vote-many", object_hash, "funding", "yes")
        self.assertEqual(many["overall"], "Voted successfully 1 time(s) and failed 3 time(s).")
        self.assertEqual(many["detail"]["mn0"], {"result": "success"})
        self.assertEqual(many["detail"]["gone"], {"result": "failed", "errorMessage":
                                                  "Can't find masternode by collateral output"})
        self.assertEqual(many["detail"]["badkey"], {"result": "failed", "errorMessage":
                                                    "Masternode signing error, could not set key "
                                                    "correctly"})
        self.assertTrue(many["detail"]["mn1"]["errorMessage"].startswith(
            "CGovernanceObject::ProcessVote -- Masternode voting too often"), many)
        current = yield self.result("gobject", "getcurrentvotes", object_hash)
        self.assertEqual(sorted(text.split(":")[-2:] for text in current.values()),
                         [["YES", "FUNDING"], ["YES", "FUNDING"]])
        self.assertEqual((yield self.result("gobject", "get", object_hash))["FundingResult"]
                         ["YesCount"], 2)

    @inlineCallbacks
    def test_vote_conf_and_trigger_submit_by_the_active_masternode(self):
        masternodes = FakeMasternodes(1)
        self.governance.keys = masternodes
        outpoint, key = next(iter(masternodes.keys.items()))
        active = ActiveMasternode(key, True)
        active.state, active.outpoint = STARTED, outpoint
        self.node.masternodes.active = active
        obj = yield self.submitted_proposal()
        self.assertEqual((yield self.result("gobject", "vote-conf", hash_to_hex(obj.hash), "valid",
                                            "yes")),
                         {"overall": "Voted successfully 1 time(s) and failed 0 time(s).",
                          "detail": {"coin.conf": {"result": "success"}}})
        now = int(self.clock.adjusted_time())
        trigger = yield self.result("gobject", "submit", "0", "1", str(now), trigger_hex(20))
        got = yield self.result("gobject", "get", trigger)
        self.assertEqual((got["ObjectType"], got["SigningMasternode"]),
                         (2, "COutPoint(%s, %d)" % (hash_to_hex(outpoint.txid), outpoint.n)))
        # A masternode's fifth trigger within a moment breaks the rate limit (five in the buffer).
        for n in range(2, 5):
            yield self.result("gobject", "submit", "0", str(n), str(now), trigger_hex(20))
        self.assertEqual((yield self.error("gobject", "submit", "0", "9", str(now), trigger_hex(20))),
                         (500, -8, "Object creation rate limit exceeded"))

    @inlineCallbacks
    def test_voteraw_with_no_masternodes_as_the_reference_answers(self):
        for params, expected in (
                ((HASH, 0, HASH, "funding", "maybe", 5, "AAAA"),
                 (-8, "Invalid vote outcome. Please use one of the following: 'yes', 'no' or "
                      "'abstain'")),
                ((HASH, 0, HASH, "fund", "yes", 5, "AAAA"),
                 (-8, "Invalid vote signal. Please using one of the following: "
                      "(funding|valid|delete|endorsed) OR `custom sentinel code` ")),
                ((HASH, 0, HASH, "funding", "yes", 5, "AA!A"), (-5, "Malformed base64 encoding")),
                ((HASH, 0, HASH, "funding", "yes", 5, "AAA"), (-5, "Malformed base64 encoding")),
                ((HASH, 0, HASH, "funding", "yes", 5, "AAAA"),
                 (-32603, "Failure to find masternode in list : COutPoint(%s, 0)" % HASH)),
                ((HASH, -1, HASH, "funding", "yes", 5, ""),
                 (-32603, "Failure to find masternode in list : COutPoint(%s, 4294967295)" % HASH)),
                ((HASH, "0", HASH, "funding", "yes", 5, "AAAA"),
                 (-1, "JSON value is not an integer as expected")),
                ((HASH, 1.5, HASH, "funding", "yes", 5, "AAAA"), (-1, "JSON integer out of range")),
                ((HASH, 0, HASH, 5, "yes", 5, "AAAA"), (-1, "JSON value is not a string as expected")),
                ((HASH, 0, "zz", "fund", "yes", 5, 7),
                 (-8, "Governance hash must be hexadecimal string (not 'zz')")),
                (("zz", 0, HASH, "funding", "yes", 5, "AAAA"),
                 (-8, "mn tx hash must be hexadecimal string (not 'zz')")),
                ((HASH, 0), (-1, "voteraw <masternode-tx-hash> <masternode-tx-index> "
                                 "<governance-hash> <vote-signal> [yes|no|abstain] <time> "
                                 "<vote-sig>\nCompile and relay a governance vote with provided "
                                 "external signature instead of signing vote internally\n"))):
            self.assertEqual((yield self.error("voteraw", *params)), (500,) + expected, params)

    @inlineCallbacks
    def test_voteraw_counts_a_masternode_vote(self):
        """With a masternode known (a fake list: the masternode network is not here yet)."""
        masternodes = FakeMasternodes(2)
        self.governance.keys = masternodes
        data = proposal_hex(self.address())
        obj = GovernanceObject(NULL_HASH, 1, 1700000000, NULL_HASH, data)
        tx = self.builder.spend(self.mature_coinbase(1), [(burn_script(obj.hash), 5 * COIN),
                                                          (self.builder.script_pubkey, COIN)])
        yield self.mine(1, txs=[tx])
        object_hash = yield self.result("gobject", "submit", "0", "1", "1700000000", data,
                                        tx.txid_hex)
        now = self.clock.adjusted_time()

        def raw(vote):
            return (hash_to_hex(vote.masternode.txid), vote.masternode.n, hash_to_hex(vote.parent_hash),
                    "funding", {1: "yes", 2: "no"}[vote.outcome], vote.time,
                    base64.b64encode(vote.signature).decode())

        vote = masternodes.vote(0, obj.hash, SIGNAL_FUNDING, OUTCOME_YES, now)
        self.assertEqual((yield self.result("voteraw", *raw(vote))), "Voted successfully")
        self.assertEqual((yield self.result("gobject", "getcurrentvotes", object_hash)),
                         {hash_to_hex(vote.hash): vote.text()})
        got = yield self.result("gobject", "get", object_hash)
        self.assertEqual((got["FundingResult"]["YesCount"], got["fCachedFunding"]), (1, True))
        # Replayed, or an older vote: refused, nothing changes.
        replay = yield self.error("voteraw", *raw(vote))
        self.assertTrue(replay[2].startswith("Error voting : CGovernanceObject::ProcessVote -- "
                                             "Masternode voting too often"), replay)
        older = masternodes.vote(0, obj.hash, SIGNAL_FUNDING, OUTCOME_NO, now - 10)
        self.assertEqual((yield self.error("voteraw", *raw(older))),
                         (500, -32603, "Error voting : CGovernanceObject::ProcessVote -- Obsolete vote"))
        forged = masternodes.vote(1, obj.hash, SIGNAL_FUNDING, OUTCOME_NO, now)
        forged.signature = vote.signature
        self.assertEqual((yield self.error("voteraw", *raw(forged))),
                         (500, -32603, "Failure to verify vote."))
        unknown = masternodes.vote(1, b"\x01" * 32, SIGNAL_FUNDING, OUTCOME_YES, now)
        self.assertEqual((yield self.error("voteraw", *raw(unknown))), (500, -32603, (
            "Error voting : CGovernanceManager::ProcessVote -- Unknown parent object , MN outpoint "
            "= COutPoint(%s, 1), governance object hash = %s")
            % (hash_to_hex(unknown.masternode.txid), "01" * 32)))
        self.assertEqual((yield self.result("gobject", "getvotes", object_hash)),
                         {hash_to_hex(vote.hash): vote.text()})
        self.assertEqual((yield self.result("gobject", "count"))["votes"], 1)

    @inlineCallbacks
    def test_getgovernanceinfo(self):
        """This chain's regtest parameters (design.md §6), seen from height 110."""
        info = yield self.result("getgovernanceinfo")
        self.assertEqual(list(info), GOVERNANCE_KEYS)
        self.assertEqual(info, {"governanceminquorum": 1, "masternodewatchdogmaxseconds": 7200,
                                "proposalfee": Decimal("5.00000000"), "superblockcycle": 10,
                                "lastsuperblock": 110, "nextsuperblock": 120,
                                "maxgovobjdatasize": 16384})
        reply = yield self.send("getgovernanceinfo")
        self.assertIn(b'"proposalfee":5.00000000,', reply.body)

    @inlineCallbacks
    def test_getsuperblockbudget(self):
        # Regtest halves every 150 blocks: 10% of 50 (then 25) coins x 10 blocks.
        self.assertEqual((yield self.result("getsuperblockbudget", 120)), "50.00")
        self.assertEqual((yield self.result("getsuperblockbudget", 150)), "25.00")
        self.assertEqual((yield self.result("getsuperblockbudget", 121)), "0.00")
        self.assertEqual((yield self.result("getsuperblockbudget", 0)), "0.00")
        self.assertEqual((yield self.error("getsuperblockbudget", -1)),
                         (500, -8, "Block height out of range"))


class HelpTests(GovernanceTestCase):
    methods = METHODS + MASTERNODE_METHODS  # the help listing names both

    @inlineCallbacks
    def test_help_listing(self):
        listing = (yield self.result("help")).split("\n")
        for line in REFERENCE_HELP_LINES:
            self.assertIn(line, listing)
