"""Sporks between real coind processes on regtest over loopback (tests/nodeharness.py), and
a node in this process for what needs one node only (tests/inprocess.py).

Node A holds the published regtest spork key (doc/spork.md); the others learn what it
signs through ``inv``/``getdata`` relay or, when they join later, ``getsporks``.
"""

from __future__ import annotations

import coincurve

from coin.p2p.messages import MSG_SPORK, GetSporksMessage, InvItem, InvMessage, PingMessage
from coin.primitives.address import decode_wif
from coin.chainparams import REGTEST
from coin.spork import SPORK_8_MASTERNODE_PAYMENT_ENFORCEMENT, SPORK_OFF
from coin.spork.signing import sign_spork
from tests.nodeharness import NodeProcess
from tests.functional.test_p2p_base import InProcessP2PTestCase, P2PTestCase, debug_log, \
    handshaked, wait_until
from tests.unit.spork.test_spork import REGTEST_SPORK_KEY

SPORK_8 = "SPORK_8_MASTERNODE_PAYMENT_ENFORCEMENT"
SPORK_10 = "SPORK_10_MASTERNODE_PAY_UPDATED_NODES"


def spork_value(node: NodeProcess, name: str) -> int:
    return node.rpc("spork", "show")[name]


class SporkNetworkTests(P2PTestCase):
    def setUp(self) -> None:
        self.signer = self.start("-sporkkey=%s" % REGTEST_SPORK_KEY, "-debug=spork")
        self.other = self.start("-connect=%s" % self.target(self.signer), "-listen=1")
        wait_until(lambda: handshaked(self.signer) and handshaked(self.other), "the handshake")

    def test_set_relay_and_late_joiner(self) -> None:
        self.assertEqual(spork_value(self.other, SPORK_8), SPORK_OFF)
        self.assertFalse(self.other.rpc("spork", "active")[SPORK_8])
        # Typed by a user on the signing node: signed, held, relayed.
        done = self.signer.cli("spork", SPORK_8, "0")
        self.assertEqual((done.returncode, done.stdout), (0, "success\n"), done.stderr)
        self.assertEqual(spork_value(self.signer, SPORK_8), 0)
        wait_until(lambda: spork_value(self.other, SPORK_8) == 0, "the spork on the other node")
        self.assertTrue(self.other.rpc("spork", "active")[SPORK_8])
        # A node without -sporkkey answers as the reference node does, and keeps the value.
        self.assertEqual(self.other.rpc("spork", SPORK_8, 5), "failure")
        self.assertEqual(spork_value(self.other, SPORK_8), 0)
        self.assertEqual(self.other.rpc("spork", "SPORK_99", 5), "Invalid spork name")
        self.assertRPCError(self.signer, -1, "JSON integer out of range", "spork", SPORK_8, 1.5)
        # A node that joins afterwards asks getsporks after the handshake.
        late = self.start("-connect=%s" % self.target(self.signer))
        wait_until(lambda: spork_value(late, SPORK_8) == 0, "the spork on the late node")
        # Sporks are held in memory, as in the reference: a restart learns them again.
        late.stop()
        self.assertEqual(late.wait(), 0)
        late.launch()
        late.wait_ready()
        wait_until(lambda: spork_value(late, SPORK_8) == 0, "the spork after a restart")

    def test_active_follows_adjusted_time(self) -> None:
        moment = 1900000000
        self.assertEqual(self.signer.rpc("spork", SPORK_10, moment), "success")
        wait_until(lambda: spork_value(self.other, SPORK_10) == moment, "the relay")
        self.other.rpc("setmocktime", moment)
        self.assertFalse(self.other.rpc("spork", "active")[SPORK_10])  # value < now, strictly
        self.other.rpc("setmocktime", moment + 1)
        self.assertTrue(self.other.rpc("spork", "active")[SPORK_10])

    def raw_banscore(self) -> int:
        """The ban score of the raw peer (the one from 127.0.0.2) on the other node."""
        return next(p["banscore"] for p in self.other.rpc("getpeerinfo")
                    if p["addr"].startswith("127.0.0.2:"))

    def test_raw_peer_sporks(self) -> None:
        key = coincurve.PrivateKey(decode_wif(REGTEST_SPORK_KEY, REGTEST)[0])
        peer = self.raw(self.other, bind="127.0.0.2")
        peer.handshake()
        self.assertIsInstance(peer.wait_for("getsporks"), GetSporksMessage)
        # A valid spork from anyone is taken and relayed on to the signer's node.
        newer = sign_spork(SPORK_8_MASTERNODE_PAYMENT_ENFORCEMENT, 7, 1800000000, key, True)
        peer.send(newer)
        wait_until(lambda: spork_value(self.signer, SPORK_8) == 7, "the relay to the signer")
        self.assertEqual(self.raw_banscore(), 0)
        # The peer already knows it: announced to nobody else, served on getsporks.
        peer.send(GetSporksMessage())
        self.assertEqual(peer.wait_for("spork"), newer)
        # An older one is refused without scoring (peers resend what they hold).
        peer.send(sign_spork(SPORK_8_MASTERNODE_PAYMENT_ENFORCEMENT, 9, 1800000000 - 1, key,
                             True))
        peer.send(InvMessage([InvItem(MSG_SPORK, newer.hash)]))
        peer.send(PingMessage(5))  # processed in order: the pong means both were handled
        self.assertEqual(peer.wait_for("pong").nonce, 5)
        self.assertNotIn("getdata", [m.command for m in peer.received])  # held: not asked
        self.assertEqual(spork_value(self.other, SPORK_8), 7)
        self.assertEqual(self.raw_banscore(), 0)
        # A forged one bans the sender.
        forged = sign_spork(SPORK_8_MASTERNODE_PAYMENT_ENFORCEMENT, 0, 1800000001,
                            coincurve.PrivateKey(), True)
        peer.send(forged)
        self.assertTrue(peer.wait_closed())
        self.assertEqual(spork_value(self.other, SPORK_8), 7)
        self.assertIn("127.0.0.2/32", [b["address"] for b in self.other.rpc("listbanned")])
        self.assertIn("invalid spork signature", debug_log(self.other))


class SporkStartupTests(InProcessP2PTestCase):
    def test_wrong_key_refuses_to_start(self) -> None:
        # A process: its exit status and stderr are read.
        stranger = "cMzYx2mtV3WfrVDnvadi3TQsBUvG7A7ma55rKLwShHnDNaQeReWm"
        node = NodeProcess.start(self.mktemp(), ["-sporkkey=%s" % stranger], wait=False)
        self.addCleanup(node.kill)
        self.assertNotEqual(node.wait(), 0)
        self.assertIn("Unable to sign spork message, wrong key?", node.stderr_text())

    def test_logging_category(self) -> None:
        node = self.start("-debug=spork")
        self.assertTrue(node.rpc("logging")["spork"])
