"""The P2P base on real sockets: nodes on loopback and a scripted raw peer.

Each test starts its own nodes (own datadirs, free ports).  A node that only meets the
test's raw peers runs in this process (tests/inprocess.py); several nodes talking to one
another, or a node whose debug log is read, run as coind processes.  Waiting is polling
RPC state or the debug log against a deadline, never a bare sleep.
"""

from __future__ import annotations

import os
import socket
import time
from typing import Any, Callable, Dict, List, Optional, Union

from twisted.trial.unittest import SynchronousTestCase

from coin import __version__
from coin.consensus.errors import REJECT_DUPLICATE, REJECT_MALFORMED, REJECT_OBSOLETE
from coin.p2p.messages import (
    NODE_NETWORK,
    AddrMessage,
    GetAddrMessage,
    PingMessage,
)
from coin.p2p.netaddr import NetAddress
from tests.inprocess import InProcessNode, NodeTestCase
from tests.nodeharness import MINER_ADDRESS, NodeProcess, RPCFailure, free_port
from tests.p2pclient import RawPeer

#: A node as the P2P tests use it, in its own process or in this one.
Node = Union[NodeProcess, InProcessNode]

#: getpeerinfo's keys in Core 0.17's order (without the optional pingwait).
PEERINFO_KEYS = ["id", "addr", "addrbind", "addrlocal", "services", "relaytxes", "lastsend",
                 "lastrecv", "bytessent", "bytesrecv", "conntime", "timeoffset", "pingtime",
                 "minping", "version", "subver", "inbound", "addnode", "startingheight",
                 "banscore", "synced_headers", "synced_blocks", "inflight", "whitelisted",
                 "bytessent_per_msg", "bytesrecv_per_msg"]


def wait_until(predicate: Callable[[], Any], what: str, timeout: float = 30.0) -> Any:
    """Poll ``predicate`` until it returns something true; fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for %s" % what)
        time.sleep(0.05)


def debug_log(node: NodeProcess) -> str:
    with open(os.path.join(node.net_datadir, "debug.log")) as f:
        return f.read()


def handshaked(node: Node) -> List[Dict[str, Any]]:
    return [p for p in node.rpc("getpeerinfo") if p["version"]]


class PeerTestMixin:
    """What P2P tests do with a node and raw peers, wherever the node runs (mixed into a
    trial TestCase)."""

    def target(self, node: Node) -> str:
        return "127.0.0.1:%d" % node.p2p_port

    def raw(self, node: Node, **kwargs: Any) -> RawPeer:
        peer = RawPeer(node.p2p_port, **kwargs)
        self.addCleanup(peer.close)
        return peer

    def peer_of(self, node: Node, raw: RawPeer) -> Optional[Dict[str, Any]]:
        name = "127.0.0.1:%d" % raw.sock.getsockname()[1]
        return next((p for p in node.rpc("getpeerinfo") if p["addr"] == name), None)

    def mine(self, node: Node, count: int, address: str = MINER_ADDRESS) -> List[str]:
        return node.rpc("generatetoaddress", count, address)

    def assertRPCError(self, node: Node, code: int, message: str, method: str,
                       *params: Any) -> None:
        with self.assertRaises(RPCFailure) as caught:
            node.rpc(method, *params)
        self.assertEqual((caught.exception.code, caught.exception.message), (code, message))

    def start_process(self, *args: str, datadir: Optional[str] = None,
                      port: Optional[int] = None) -> NodeProcess:
        """A coind process listening on ``port`` (a free one unless given)."""
        port = port or free_port()
        node = NodeProcess.start(datadir or os.path.abspath(self.mktemp()),
                                 ["-port=%d" % port] + list(args))
        self.addCleanup(node.kill)
        return node


class P2PTestCase(PeerTestMixin, SynchronousTestCase):
    """Nodes as coind processes: several nodes, or a node whose debug log is read."""

    def start(self, *args: str, datadir: Optional[str] = None, port: Optional[int] = None
              ) -> NodeProcess:
        return self.start_process(*args, datadir=datadir, port=port)


class InProcessP2PTestCase(PeerTestMixin, NodeTestCase):
    """One node in this process, met by the test's raw peers (blocking sockets on the
    test's own thread)."""

    def start(self, *args: str, port: Optional[int] = None) -> InProcessNode:
        """The node listens on a free loopback port unless ``port`` is given (then on every
        address, as a process given ``-port`` does)."""
        return self.start_node(*(["-port=%d" % port] if port else []), *args)


class TwoNodeTests(P2PTestCase):
    def test_handshake_fields_ping_and_totals(self) -> None:
        a = self.start("-uacomment=a1")
        a.rpc("generatetoaddress", 3, MINER_ADDRESS)
        b = self.start("-connect=" + self.target(a), "-uacomment=x", "-uacomment=y")
        wait_until(lambda: all(len(handshaked(n)) == 1 and "pingtime" in handshaked(n)[0]
                               for n in (a, b)), "the handshake and first ping")
        # b syncs a's three blocks (headers-first sync, coin/p2p/sync.py).
        wait_until(lambda: b.rpc("getblockcount") == 3 and not handshaked(b)[0]["inflight"]
                   and handshaked(b)[0]["synced_blocks"] == 3, "b to sync")
        (at_b,) = b.rpc("getpeerinfo")
        (at_a,) = a.rpc("getpeerinfo")
        for info in (at_a, at_b):
            self.assertEqual([k for k in info if k != "pingwait"], PEERINFO_KEYS)
            self.assertEqual((info["services"], info["relaytxes"], info["version"],
                              info["banscore"], info["inflight"], info["whitelisted"],
                              info["timeoffset"]),
                             ("0000000000000001", True, 70208, 0, [], False, 0))
            self.assertGreater(info["pingtime"], 0)
            self.assertLessEqual(info["minping"], info["pingtime"])
            self.assertLessEqual(info["conntime"], info["lastrecv"])
            self.assertLessEqual(abs(info["lastsend"] - time.time()), 60)
        # What b knows of a: all three blocks.  a asked b for headers while b was in
        # initial block download (b ignores getheaders then, as Core), so a knows nothing.
        self.assertEqual((at_b["synced_headers"], at_b["synced_blocks"]), (3, 3))
        self.assertEqual((at_a["synced_headers"], at_a["synced_blocks"]), (-1, -1))
        self.assertEqual((at_b["addr"], at_b["inbound"], at_b["addnode"], at_b["startingheight"],
                          at_b["subver"]),
                         (self.target(a), False, True, 3, "/Coin:%s(a1)/" % __version__))
        self.assertEqual((at_a["inbound"], at_a["addnode"], at_a["startingheight"],
                          at_a["subver"], at_a["addrbind"]),
                         (True, False, 0, "/Coin:%s(x; y)/" % __version__, self.target(a)))
        # Outbound peers ask for addresses; both sides say sendheaders and feefilter.
        self.assertEqual(at_a["bytesrecv_per_msg"]["getaddr"], 24)
        self.assertNotIn("getaddr", at_b["bytesrecv_per_msg"])
        for info in (at_a, at_b):
            for command in ("version", "verack", "sendheaders", "ping", "pong", "feefilter"):
                self.assertIn(command, info["bytessent_per_msg"])
                self.assertIn(command, info["bytesrecv_per_msg"])
            self.assertEqual(info["bytessent"], sum(info["bytessent_per_msg"].values()))
        self.assertEqual((a.rpc("getconnectioncount"), b.rpc("getconnectioncount")), (1, 1))
        network = b.rpc("getnetworkinfo")
        self.assertEqual((network["connections"], network["subversion"],
                          network["localservices"], network["networkactive"],
                          network["localaddresses"], network["protocolversion"]),
                         (1, "/Coin:%s(x; y)/" % __version__, "0000000000000001", True, [],
                          70208))
        totals = b.rpc("getnettotals")
        self.assertEqual(list(totals), ["totalbytesrecv", "totalbytessent", "timemillis",
                                        "uploadtarget"])
        self.assertGreaterEqual(totals["totalbytessent"], at_b["bytessent"])
        self.assertGreaterEqual(totals["totalbytesrecv"], at_b["bytesrecv"])
        self.assertEqual(totals["uploadtarget"], {
            "timeframe": 86400, "target": 0, "target_reached": False,
            "serve_historical_blocks": True, "bytes_left_in_cycle": 0, "time_left_in_cycle": 0})
        # ping: a new ping goes out and its pong is measured.
        before = at_b["bytessent_per_msg"]["ping"]
        self.assertIsNone(b.rpc("ping"))

        def pinged() -> bool:
            info = b.rpc("getpeerinfo")[0]
            return info["bytessent_per_msg"]["ping"] > before and "pingwait" not in info

        wait_until(pinged, "the ping's pong")
        a.stop()
        wait_until(lambda: b.rpc("getconnectioncount") == 0, "the peer to go")

    def test_disconnectnode_and_setnetworkactive(self) -> None:
        a = self.start()
        b = self.start("-connect=" + self.target(a))
        wait_until(lambda: len(handshaked(a)) == 1, "the connection")
        self.assertRPCError(a, -29, "Node not found in connected nodes", "disconnectnode",
                            "127.0.0.1:1")
        self.assertRPCError(a, -29, "Node not found in connected nodes", "disconnectnode", "",
                            999)
        # Both given: Core checks that rule before it reads either value.
        for params in (("127.0.0.1:1", 1), ("127.0.0.1:1", "x"), ("127.0.0.1:1", 1.5),
                       (5, "x"), (["127.0.0.1:1"], {})):
            self.assertRPCError(a, -32602, "Only one of address and nodeid should be provided.",
                                "disconnectnode", *params)
        self.assertRPCError(a, -1, "JSON value is not an integer as expected",
                            "disconnectnode", "", "x")
        self.assertRPCError(a, -1, "JSON value is not a string as expected",
                            "disconnectnode", 5)
        (peer,) = a.rpc("getpeerinfo")
        self.assertIsNone(a.rpc("disconnectnode", "", peer["id"]))
        wait_until(lambda: all(p["id"] != peer["id"] for p in a.rpc("getpeerinfo")),
                   "the disconnection")
        # -connect peers come back.
        wait_until(lambda: len(handshaked(a)) == 1, "the reconnection")
        (peer,) = b.rpc("getpeerinfo")
        self.assertIsNone(b.rpc("disconnectnode", peer["addr"]))
        wait_until(lambda: all(p["id"] != peer["id"] for p in b.rpc("getpeerinfo")),
                   "the disconnection by address")
        wait_until(lambda: len(handshaked(b)) == 1, "the second reconnection")
        self.assertIs(a.rpc("setnetworkactive", False), False)
        self.assertIs(a.rpc("getnetworkinfo")["networkactive"], False)
        wait_until(lambda: a.rpc("getconnectioncount") == 0, "network off")
        self.assertIs(a.rpc("setnetworkactive", True), True)
        wait_until(lambda: len(handshaked(a)) == 1, "the connection after network on")


class AddNodeTests(P2PTestCase):
    def test_addnode_rpc_and_getaddednodeinfo(self) -> None:
        a = self.start()
        b = self.start("-connect=0")
        target = self.target(a)
        self.assertIsNone(b.rpc("addnode", target, "onetry"))
        wait_until(lambda: len(handshaked(b)) == 1, "the onetry connection")
        self.assertIs(b.rpc("getpeerinfo")[0]["addnode"], True)
        self.assertEqual(b.rpc("getaddednodeinfo"), [])
        self.assertIsNone(b.rpc("disconnectnode", target))
        wait_until(lambda: b.rpc("getconnectioncount") == 0, "the disconnection")
        self.assertRPCError(b, -29, "Node not found in connected nodes", "disconnectnode",
                            target)

        self.assertIsNone(b.rpc("addnode", target, "add"))
        self.assertRPCError(b, -23, "Error: Node already added", "addnode", target, "add")
        expected = [{"addednode": target, "connected": True,
                     "addresses": [{"address": target, "connected": "outbound"}]}]
        wait_until(lambda: b.rpc("getaddednodeinfo") == expected, "the added node")
        self.assertEqual(b.rpc("getaddednodeinfo", target), expected)
        self.assertRPCError(b, -24, "Error: Node has not been added.", "getaddednodeinfo",
                            "1.2.3.4")
        self.assertIsNone(b.rpc("addnode", target, "remove"))
        self.assertRPCError(b, -24, "Error: Node has not been added.", "addnode", target,
                            "remove")
        self.assertEqual(b.rpc("getaddednodeinfo"), [])
        with self.assertRaises(RPCFailure) as caught:
            b.rpc("addnode", target, "sometimes")
        self.assertEqual(caught.exception.code, -1)
        self.assertTrue(caught.exception.message.startswith('addnode "node" "add|remove|onetry"'))

    def test_addnode_option(self) -> None:
        a = self.start()
        target = self.target(a)
        b = self.start("-addnode=" + target)
        wait_until(lambda: b.rpc("getaddednodeinfo") and b.rpc("getaddednodeinfo")[0]["connected"],
                   "the -addnode connection")
        self.assertEqual(b.rpc("getaddednodeinfo")[0]["addresses"],
                         [{"address": target, "connected": "outbound"}])
        # A listening node answers getaddednodeinfo for an inbound peer too.
        (inbound,) = a.rpc("getpeerinfo")
        self.assertIs(inbound["inbound"], True)


class BanTests(P2PTestCase):
    def test_setban_listbanned_restart_clearbanned(self) -> None:
        datadir = os.path.abspath(self.mktemp())
        port = free_port()
        a = self.start(datadir=datadir, port=port)
        b = self.start("-connect=" + self.target(a))
        wait_until(lambda: len(handshaked(a)) == 1, "the connection")
        self.assertIsNone(a.rpc("setban", "127.0.0.1", "add"))
        wait_until(lambda: a.rpc("getconnectioncount") == 0, "the banned peer to go")
        # b keeps trying (-connect) and is refused at accept.
        wait_until(lambda: "dropped (banned)" in debug_log(a), "a refused reconnection")
        (entry,) = a.rpc("listbanned")
        self.assertEqual((entry["address"], entry["ban_reason"],
                          entry["banned_until"] - entry["ban_created"]),
                         ("127.0.0.1/32", "manually added", 86400))
        self.assertRPCError(a, -23, "Error: IP/Subnet already banned", "setban", "127.0.0.1",
                            "add")
        self.assertIsNone(a.rpc("setban", "10.0.0.0/8", "add", 3600))
        self.assertRPCError(a, -23, "Error: IP/Subnet already banned", "setban", "10.1.2.3",
                            "add")
        self.assertIsNone(a.rpc("setban", "192.168.0.0/255.255.0.0", "add", 2000000000, True))
        for bad in ("nonsense", "1.2.3.4/99", "0.0.0.0"):
            self.assertRPCError(a, -30, "Error: Invalid IP/Subnet", "setban", bad, "add")
        self.assertRPCError(a, -30, "Error: Unban failed. Requested address/subnet was not "
                            "previously banned.", "setban", "8.8.8.8", "remove")
        with self.assertRaises(RPCFailure) as caught:
            a.rpc("setban", "8.8.8.8", "ban")
        self.assertTrue(caught.exception.message.startswith(
            'setban "subnet" "add|remove" (bantime) (absolute)'))
        banned = a.rpc("listbanned")
        self.assertEqual([(e["address"], e["banned_until"] - e["ban_created"]) for e in banned
                          if e["address"] != "192.168.0.0/16"],
                         [("10.0.0.0/8", 3600), ("127.0.0.1/32", 86400)])
        self.assertEqual([e["banned_until"] for e in banned
                          if e["address"] == "192.168.0.0/16"], [2000000000])

        # The list survives a restart, and the ban still holds.
        self.assertEqual(a.stop(), 0)
        log_size = len(debug_log(a))
        a = self.start(datadir=datadir, port=port)
        self.assertEqual(a.rpc("listbanned"), banned)
        wait_until(lambda: "dropped (banned)" in debug_log(a)[log_size:],
                   "a refused reconnection after the restart")
        self.assertEqual(a.rpc("getconnectioncount"), 0)
        self.assertIsNone(a.rpc("setban", "10.0.0.0/8", "remove"))
        self.assertIsNone(a.rpc("clearbanned"))
        self.assertEqual(a.rpc("listbanned"), [])
        wait_until(lambda: len(handshaked(a)) == 1, "the reconnection after clearbanned")
        self.assertEqual(len(handshaked(b)), 1)


class RawPeerTests(InProcessP2PTestCase):
    def test_stream_errors_disconnect(self) -> None:
        node = self.start()
        wrong = self.raw(node, magic=bytes.fromhex("e3c01ed1"))
        wrong.send(wrong.version_message())
        self.assertTrue(wrong.wait_closed())
        oversized = self.raw(node)
        oversized.send_raw(node_magic() + b"block".ljust(12, b"\0")
                           + (4_000_001).to_bytes(4, "little") + bytes(4))
        self.assertTrue(oversized.wait_closed())
        obsolete = self.raw(node)
        obsolete.send(obsolete.version_message(version=70000))
        reject = obsolete.wait_for("reject")
        self.assertEqual((reject.message, reject.code), ("version", REJECT_OBSOLETE))
        self.assertTrue(obsolete.wait_closed())
        # The node is unharmed and nobody was banned for this.
        self.assertEqual(node.rpc("getblockcount"), 0)
        self.assertEqual(node.rpc("listbanned"), [])
        wait_until(lambda: node.rpc("getconnectioncount") == 0, "the peers to be gone")

    def test_misbehaviour_scores_then_ban(self) -> None:
        node = self.start()
        peer = self.raw(node)
        peer.send(PingMessage(1))  # before version
        wait_until(lambda: (self.peer_of(node, peer) or {}).get("banscore") == 1,
                   "banscore 1 for a message before version")
        peer.handshake()
        peer.send(peer.version_message())  # duplicate
        reject = peer.wait_for("reject")
        self.assertEqual((reject.message, reject.code), ("version", REJECT_DUPLICATE))
        peer.send_frame("ping", b"abc")  # a frame whose payload does not parse
        reject = peer.wait_for("reject")
        self.assertEqual((reject.message, reject.code), ("ping", REJECT_MALFORMED))
        wait_until(lambda: self.peer_of(node, peer)["banscore"] == 12, "banscore 12")
        self.assertEqual(self.peer_of(node, peer)["subver"], "/p2pclient:0.1/")
        for _ in range(9):
            peer.send_frame("ping", b"abc")
        self.assertTrue(peer.wait_closed())
        (entry,) = node.rpc("listbanned")
        self.assertEqual((entry["address"], entry["ban_reason"]),
                         ("127.0.0.1/32", "node misbehaving"))
        refused = RawPeer(node.p2p_port)
        self.addCleanup(refused.close)
        self.assertTrue(refused.wait_closed())
        self.assertEqual(node.rpc("getconnectioncount"), 0)
        self.assertIsNone(node.rpc("clearbanned"))
        again = self.raw(node)
        again.handshake()
        self.assertEqual(node.rpc("getblockcount"), 0)

    def test_addr_and_getaddr(self) -> None:
        node = self.start("-connect=0", "-listen=1")
        announcer = self.raw(node)
        announcer.handshake()
        now = int(time.time())
        # Routable addresses (never dialled: -connect=0); the book takes no loopback or
        # private address (Core's IsRoutable) and no address without NODE_NETWORK.
        announcer.send(AddrMessage((NetAddress(NODE_NETWORK, "1.2.3.4", 31932, now),
                                    NetAddress(NODE_NETWORK, "5.6.7.8", 31933, now),
                                    NetAddress(0, "9.9.9.9", 1, now),
                                    NetAddress(NODE_NETWORK, "127.0.0.2", 31934, now),
                                    NetAddress(NODE_NETWORK, "10.1.2.3", 31935, now))))
        asker = self.raw(node)
        asker.handshake()
        asker.send(GetAddrMessage())
        answer = asker.wait_for("addr")
        self.assertEqual(sorted((a.ip, a.port) for a in answer.addresses),
                         [("1.2.3.4", 31932), ("5.6.7.8", 31933)])
        self.assertEqual(node.stop(), 0)
        with open(os.path.join(node.net_datadir, "peers.json")) as f:
            saved = f.read()
        self.assertIn('"1.2.3.4"', saved)
        self.assertNotIn('"127.0.0.2"', saved)

    def test_self_connection_is_dropped(self) -> None:
        port = free_port()
        # A process: its debug log is read.
        node = self.start_process("-connect=127.0.0.1:%d" % port, "-listen=1", port=port)
        wait_until(lambda: "connected to self at 127.0.0.1" in debug_log(node),
                   "the self-connection to be detected")
        self.assertEqual(handshaked(node), [])

    def test_maxconnections(self) -> None:
        # 10 connections: 8 outbound slots, 1 feeler, so 1 inbound (Core's arithmetic).
        # A process: its debug log is read.
        node = self.start_process("-maxconnections=10")
        first = self.raw(node)
        first.handshake()
        second = self.raw(node)
        self.assertTrue(second.wait_closed())
        wait_until(lambda: "dropped (full)" in debug_log(node), "the refusal in the log")
        self.assertEqual(node.rpc("getconnectioncount"), 1)

    def test_isolated_node_does_not_listen(self) -> None:
        for args in (["-connect=0", "-listen=0"], ["-connect=0"], ["-listen=0"]):
            # -port (no -bind, which would imply -listen=1): the port it must not listen on.
            port = free_port()
            node = self.start(*args, port=port)
            with self.assertRaises(ConnectionRefusedError):
                socket.create_connection(("127.0.0.1", port), timeout=10).close()
            self.assertEqual(node.rpc("getconnectioncount"), 0)
            self.assertEqual(node.stop(), 0)

    def test_busy_port_refuses_to_start(self) -> None:
        # Processes: the refusal's stderr is read.
        node = self.start_process()
        datadir = os.path.abspath(self.mktemp())
        with self.assertRaises(RuntimeError) as caught:
            self.start_process(datadir=datadir, port=node.p2p_port)
        self.assertIn("Error: Failed to listen on any port. Use -listen=0 if you want this.",
                      str(caught.exception))


def node_magic() -> bytes:
    from coin.chainparams import REGTEST

    return REGTEST.message_start
