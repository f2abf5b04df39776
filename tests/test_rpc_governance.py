"""Governance and masternode methods through the real stack (tests/rpcchain.py).

Where the reference node's reply is in tests/data/transcripts it is replayed byte for
byte; the short recorded bodies that are not there are quoted inline with their names.
"""

from __future__ import annotations

from decimal import Decimal

import simplejson
from twisted.internet.defer import inlineCallbacks

from coin.rpc.methods.governance import METHODS
from coin.rpc.methods.masternode import METHODS as MASTERNODE_METHODS

from .rpcchain import ChainRPCTestCase
from .rpchelpers import transcript

HASH = "ab" * 32
# Recorded bodies (/work/shared/reference/transcripts) not copied into tests/data.
RPCM_32_GOBJECT_LIST = b'{"result":{},"error":null,"id":32}\n'
# Key order of rpcm_42 (getgovernanceinfo).
GOVERNANCE_KEYS = ["governanceminquorum", "masternodewatchdogmaxseconds", "proposalfee",
                   "superblockcycle", "lastsuperblock", "nextsuperblock", "maxgovobjdatasize"]
NO_WALLET = (404, -32601, "Method not found (wallet method is disabled because no wallet is "
                          "loaded)")
REFERENCE_HELP_LINES = ["== Governance ==", "getgovernanceinfo", 'gobject "command"...',
                        "== Masternode ==", 'masternode "command"...',
                        'masternodelist ( "mode" "filter" )', "mnsync [status|next|reset]"]


class GovernanceTestCase(ChainRPCTestCase):
    methods = METHODS

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
    def test_creating_objects_is_not_supported(self):
        unsupported = (500, -1, "Governance objects are not supported by this node")
        self.assertEqual((yield self.error("gobject", "check", "00")), unsupported)
        self.assertEqual((yield self.error("gobject", "check")),
                         (500, -8, "Correct usage is 'gobject check <data-hex>'"))
        self.assertEqual((yield self.error("gobject", "submit", "0", "1", "2", "00")),
                         unsupported)
        self.assertEqual((yield self.error("gobject", "submit", "0")),
                         (500, -8, "Correct usage is 'gobject submit <parent-hash> <revision> "
                                   "<time> <data-hex> <fee-txid>'"))
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
                      "(funding|valid|delete|endorsed)")),
                (("vote-conf", HASH, "funding", "maybe"),
                 (-8, "Invalid vote outcome. Please use one of the following: 'yes', 'no' or "
                      "'abstain'")),
                (("vote-alias", HASH, "funding", "yes", 5),
                 (-1, "JSON value is not a string as expected"))):
            self.assertEqual((yield self.error("gobject", *params)), (500,) + expected, params)

    @inlineCallbacks
    def test_getgovernanceinfo(self):
        info = yield self.result("getgovernanceinfo")
        self.assertEqual(list(info), GOVERNANCE_KEYS)
        self.assertEqual(info, {"governanceminquorum": 10, "masternodewatchdogmaxseconds": 7200,
                                "proposalfee": Decimal("5.00000000"), "superblockcycle": 43200,
                                "lastsuperblock": 0, "nextsuperblock": 43200,
                                "maxgovobjdatasize": 16384})
        reply = yield self.send("getgovernanceinfo")
        self.assertIn(b'"proposalfee":5.00000000,', reply.body)


class SporkTests(GovernanceTestCase):
    methods = METHODS + MASTERNODE_METHODS  # the help listing names both
    @inlineCallbacks
    def test_help_listing(self):
        listing = (yield self.result("help")).split("\n")
        for line in REFERENCE_HELP_LINES:
            self.assertIn(line, listing)
