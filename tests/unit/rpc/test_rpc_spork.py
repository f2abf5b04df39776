"""``spork`` through the real RPC stack over a real SporkManager (tests/rpcchain.py)."""

from __future__ import annotations

from twisted.internet.defer import inlineCallbacks

from coin.chainparams import REGTEST
from coin.rpc.methods.spork import METHODS
from coin.spork import SPORK_8_MASTERNODE_PAYMENT_ENFORCEMENT, SPORK_OFF, SporkManager

from tests.rpcchain import ChainRPCTestCase
from tests.unit.p2p.test_p2p_peer import Harness
from tests.unit.spork.test_spork import REGTEST_SPORK_KEY

# rpcm_41's sporks, less the reference's proof-of-stake one.
RECORDED_SPORKS = ["SPORK_2_INSTANTSEND_ENABLED", "SPORK_3_INSTANTSEND_BLOCK_FILTERING",
                   "SPORK_5_INSTANTSEND_MAX_VALUE", "SPORK_8_MASTERNODE_PAYMENT_ENFORCEMENT",
                   "SPORK_9_SUPERBLOCKS_ENABLED", "SPORK_10_MASTERNODE_PAY_UPDATED_NODES",
                   "SPORK_12_RECONSIDER_BLOCKS", "SPORK_13_OLD_SUPERBLOCK_FLAG",
                   "SPORK_14_REQUIRE_SENTINEL_FLAG"]
#: The reference node's defaults (design.md §6): 2, 3, 9 and 12 on, 5 at 1000, others off.
DEFAULTS = dict(zip(RECORDED_SPORKS, [0, 0, 1000, SPORK_OFF, 0, SPORK_OFF, 0, SPORK_OFF,
                                      SPORK_OFF]))
NOW = 1800000000
P2P_DISABLED = (500, -31, "Error: Peer-to-peer functionality missing or disabled")


class SporkRPCTests(ChainRPCTestCase):
    methods = METHODS

    def setUp(self):
        d = super().setUp()
        self.clock.set_mock_time(NOW)
        self.sporks = self.node.sporks = SporkManager(REGTEST, self.clock.now)
        return d

    @inlineCallbacks
    def test_show_and_active(self):
        show = yield self.result("spork", "show")
        self.assertEqual(list(show), RECORDED_SPORKS)
        self.assertEqual(show, DEFAULTS)
        active = yield self.result("spork", "active")
        self.assertEqual(list(active), RECORDED_SPORKS)
        self.assertEqual(active, {name: value < NOW for name, value in DEFAULTS.items()})
        self.sporks.set_private_key(REGTEST_SPORK_KEY)
        self.sporks.update(SPORK_8_MASTERNODE_PAYMENT_ENFORCEMENT, NOW - 1)
        self.assertEqual((yield self.result("spork", "show"))[
            "SPORK_8_MASTERNODE_PAYMENT_ENFORCEMENT"], NOW - 1)
        self.assertTrue((yield self.result("spork", "active"))[
            "SPORK_8_MASTERNODE_PAYMENT_ENFORCEMENT"])

    @inlineCallbacks
    def test_set_errors(self):
        # Measured on the reference node (anchor, regtest): UniValue's -1 errors, read in
        # its order; an unknown name is answered before the value is read.
        self.assertEqual((yield self.result("spork", "SPORK_99_NONE", 1)), "Invalid spork name")
        self.assertEqual((yield self.result("spork", "bogus", "x")), "Invalid spork name")
        self.assertEqual((yield self.error("spork", 1, 2)),
                         (500, -1, "JSON value is not a string as expected"))
        # No P2P layer to relay it: Core's -31, as the reference without g_connman.
        self.assertEqual((yield self.error("spork", "SPORK_2_INSTANTSEND_ENABLED", 0)),
                         P2P_DISABLED)
        help_text = yield self.result("help", "spork")
        self.assertTrue(help_text.startswith("spork <name> [<value>]\n"))
        for params in ((), ("other",), (1, 2, 3)):
            self.assertEqual((yield self.error("spork", *params)), (500, -1, help_text), params)
        self.assertEqual((yield self.error("spork", 5)),
                         (500, -1, "JSON value is not a string as expected"))

    @inlineCallbacks
    def test_value_is_an_integer(self):
        self.sporks.attach(Harness().connman)  # a P2P layer (no peers), so the value is read
        name = "SPORK_8_MASTERNODE_PAYMENT_ENFORCEMENT"
        self.assertEqual((yield self.error("spork", name, "x")),
                         (500, -1, "JSON value is not an integer as expected"))
        self.assertEqual((yield self.error("spork", name, 1.5)),
                         (500, -1, "JSON integer out of range"))
        self.assertEqual((yield self.result("spork", name, 0)), "failure")  # no -sporkkey
        self.sporks.set_private_key(REGTEST_SPORK_KEY)
        self.assertEqual((yield self.result("spork", name, 0)), "success")
        self.assertEqual(self.sporks.value(SPORK_8_MASTERNODE_PAYMENT_ENFORCEMENT), 0)

    @inlineCallbacks
    def test_help_listing(self):
        self.assertIn("spork <name> [<value>]", (yield self.result("help")).split("\n"))
