"""Core-era P2P conventions on real nodes (issue #13).

Old protocol versions are kept (sendheaders and feefilter gated by version), a network
joined node by node stays as it was joined (the address book takes no loopback address),
so a split network stays split until it is rejoined, and a block announced by ``headers``
near the tip is fetched at once.  Every node runs on loopback with its own datadir: in this
process when it only meets raw peers, as a coind process when it meets other nodes.
"""

from __future__ import annotations

import time
from typing import List

from coin.consensus.errors import REJECT_OBSOLETE
from coin.p2p.messages import NODE_NETWORK, BlockMessage, HeadersMessage, PingMessage
from tests.p2pclient import RawPeer
from tests.functional.test_p2p_base import InProcessP2PTestCase, Node, P2PTestCase, handshaked, \
    wait_until
from tests.functional.test_p2p_sync import best, make_block, rev, tip_header, wait_synced

#: How long a network joined in a line is watched for connections nobody asked for
#: (before the fix, node 0 dialled node 2 within a second of the 0-1 join).
UNMESHED_WATCH = 6.0


def commands_after_handshake(peer: RawPeer) -> List[str]:
    """What the node sent after its verack, up to the answer to a ping of ours."""
    peer.send(PingMessage(77))
    while peer.wait_for("pong").nonce != 77:
        pass
    return [m.command for m in peer.received]


def peer_count(node: Node) -> int:
    return len(node.rpc("getpeerinfo"))


class VersionTests(InProcessP2PTestCase):
    def test_old_versions_are_kept_without_sendheaders_or_feefilter(self) -> None:
        node = self.start("-connect=0", "-listen=1")
        # The oldest version kept (Core-era tools speak it).
        old = self.raw(node)
        theirs = old.handshake(version=70002)
        self.assertEqual(theirs.version, 70208)
        sent = commands_after_handshake(old)
        self.assertIn("ping", sent)
        self.assertNotIn("sendheaders", sent)
        self.assertNotIn("feefilter", sent)
        (info,) = node.rpc("getpeerinfo")
        self.assertEqual(info["version"], 70002)
        # sendheaders from 70201, feefilter from 70208.
        for version, expected in ((70201, {"sendheaders"}), (70208, {"sendheaders", "feefilter"})):
            peer = self.raw(node)
            peer.handshake(version=version)
            sent = commands_after_handshake(peer)
            self.assertEqual(expected, {"sendheaders", "feefilter"} & set(sent))
        self.assertEqual(sorted(p["version"] for p in node.rpc("getpeerinfo")),
                         [70002, 70201, 70208])

    def test_obsolete_versions_are_refused(self) -> None:
        node = self.start("-connect=0", "-listen=1")
        for version in (70001, 60000):
            peer = self.raw(node)
            peer.send(peer.version_message(version=version))
            reject = peer.wait_for("reject")
            self.assertEqual((reject.message, reject.code, reject.reason),
                             ("version", REJECT_OBSOLETE, "Version must be 70002 or greater"))
            self.assertTrue(peer.wait_closed())
        self.assertEqual(handshaked(node), [])


class TopologyTests(P2PTestCase):
    def line(self) -> List[Node]:
        """Three nodes joined 0-1 and 1-2 as Core's test framework joins them."""
        nodes = [self.start() for _ in range(3)]
        nodes[1].rpc("addnode", self.target(nodes[2]), "onetry")
        wait_until(lambda: len(handshaked(nodes[2])) == 1, "the 1-2 connection")
        nodes[0].rpc("addnode", self.target(nodes[1]), "onetry")
        wait_until(lambda: len(handshaked(nodes[1])) == 2, "the 0-1 connection")
        return nodes

    def assertStays(self, nodes: List[Node], counts: List[int]) -> None:
        """Every node keeps exactly ``counts`` connections for UNMESHED_WATCH seconds."""
        deadline = time.monotonic() + UNMESHED_WATCH
        while time.monotonic() < deadline:
            self.assertEqual([peer_count(n) for n in nodes], counts)
            time.sleep(0.2)

    def test_nodes_joined_in_a_line_stay_in_a_line(self) -> None:
        nodes = self.line()
        self.assertStays(nodes, [1, 2, 1])
        # Each knows the other's listening address (a completed outbound connection),
        # but a loopback address never enters the book: nothing to dial.
        self.assertEqual([p["addr"] for p in nodes[0].rpc("getpeerinfo")],
                         [self.target(nodes[1])])

    def test_split_network_stays_split_until_rejoined(self) -> None:
        a, b, c = self.line()
        self.mine(a, 1)
        wait_synced([a, b, c])
        height = a.rpc("getblockcount")
        # Split b-c (Core's split_network), mine on both sides.
        b.rpc("disconnectnode", self.target(c))
        wait_until(lambda: peer_count(c) == 0, "the split")
        self.mine(a, 2)
        longer = self.mine(c, 3)[-1]
        wait_synced([a, b])
        self.assertStays([a, b, c], [1, 1, 0])
        self.assertEqual([n.rpc("getblockcount") for n in (a, b, c)],
                         [height + 2, height + 2, height + 3])
        # Rejoined, the longer side wins everywhere.
        b.rpc("addnode", self.target(c), "onetry")
        self.assertEqual(wait_synced([a, b, c]), longer)


class DirectFetchTests(InProcessP2PTestCase):
    def test_block_announced_by_headers_is_fetched_at_once(self) -> None:
        node = self.start("-connect=0", "-listen=1")
        self.mine(node, 1)  # a recent tip: near the tip, out of initial download
        # A Core-era peer (below sendheaders' version), and one offering no services:
        # Core 0.17 fetches from both when their headers extend the tip.
        for version, services in ((70002, NODE_NETWORK), (70208, 0)):
            tip = tip_header(node)
            peer = self.raw(node)
            peer.handshake(version=version, services=services, start_height=tip["height"])
            block = make_block(rev(tip["hash"]), tip["height"] + 1, tip["time"] + 1)
            peer.send(HeadersMessage([block.header]))
            getdata = peer.wait_for("getdata")
            self.assertEqual([i.hash for i in getdata.items], [block.hash])
            peer.send(BlockMessage(block))
            wait_until(lambda: best(node) == block.hash[::-1].hex(), "the block to be the tip")
            peer.close()
