"""PeerProtocol and the connection manager without sockets (StringTransport, a fake clock)."""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

from twisted.internet.address import IPv4Address
from twisted.internet.defer import Deferred
from twisted.internet.interfaces import ITCPTransport
from twisted.internet.testing import MemoryReactorClock, StringTransport
from twisted.trial.unittest import SynchronousTestCase
from zope.interface import implementer

from coin.consensus.errors import REJECT_DUPLICATE, REJECT_MALFORMED, REJECT_OBSOLETE
from coin.chainparams import REGTEST
from coin.p2p.banman import REASON_NODE_MISBEHAVING, parse_subnet
from coin.p2p.connman import (
    P2PService,
    P2PSettings,
    P2PStartupError,
    TimeData,
    check_user_agent,
    format_user_agent,
    split_host_port,
)
from coin.p2p.messages import (
    MAX_PROTOCOL_MESSAGE_LENGTH,
    NODE_NETWORK,
    PROTOCOL_VERSION,
    AddrMessage,
    FeeFilterMessage,
    GetAddrMessage,
    InvItem,
    InvMessage,
    MessageDecoder,
    PingMessage,
    PongMessage,
    VerackMessage,
    VersionMessage,
    encode_message,
    frame_message,
)
from coin.p2p.netaddr import NetAddress
from coin.p2p.peer import MAX_SEND_BUFFER, PeerProtocol
from coin.primitives.serialize import compact_size

MAGIC = REGTEST.message_start
START = 1_700_000_000


class Harness:
    """A P2P service on a fake reactor, and peers on string transports."""

    def __init__(self, **settings: Any) -> None:
        self.reactor = MemoryReactorClock()
        self.reactor.advance(START)
        settings.setdefault("user_agent", "/Coin:9.9.9/")
        self.connman = P2PService(REGTEST, P2PSettings(port=31932, **settings), self.reactor,
                                  now=self.reactor.seconds, start_height=lambda: 7,
                                  fee_filter_rate=lambda: 1000)
        self.connman.startService()
        self.connman.ready = True
        self._next_port = 5000

    def connect(self, inbound: bool = True, ip: str = "8.8.8.8", **kwargs: Any
                ) -> Tuple[PeerProtocol, StringTransport]:
        self._next_port += 1
        peer = PeerProtocol(self.connman, inbound, **kwargs)
        transport = StringTransport(hostAddress=IPv4Address("TCP", "10.0.0.1", 31932),
                                    peerAddress=IPv4Address("TCP", ip, self._next_port),
                                    lenient=True)
        peer.makeConnection(transport)
        return peer, transport

    def advance(self, seconds: float) -> None:
        self.reactor.pump([1.0] * int(seconds))


def sent(transport: StringTransport) -> List[Any]:
    """Messages written to ``transport`` since the last call."""
    messages = MessageDecoder(MAGIC).feed(transport.value())
    transport.clear()
    return messages


def commands(transport: StringTransport) -> List[str]:
    return [m.command for m in sent(transport)]


def feed(peer: PeerProtocol, *messages: Any) -> None:
    peer.dataReceived(b"".join(encode_message(MAGIC, m) for m in messages))


def version(nonce: int = 42, version_number: int = PROTOCOL_VERSION, **kwargs: Any
            ) -> VersionMessage:
    return VersionMessage(version=version_number, services=NODE_NETWORK, timestamp=START + 3,
                          addr_recv=NetAddress(1, "10.0.0.1", 31932),
                          addr_from=NetAddress(1, "0.0.0.0", 0), nonce=nonce,
                          user_agent="/Other:1.0/\x07", start_height=12, relay=False, **kwargs)


def handshake(h: Harness, inbound: bool = True, ip: str = "8.8.8.8", **kwargs: Any
              ) -> Tuple[PeerProtocol, StringTransport]:
    peer, transport = h.connect(inbound, ip, **kwargs)
    feed(peer, version(), VerackMessage())
    transport.clear()
    return peer, transport


@implementer(ITCPTransport)
class TCPStringTransport(StringTransport):
    """A string transport with a TCP socket's no-delay option."""

    no_delay = False

    def setTcpNoDelay(self, enabled: bool) -> None:
        self.no_delay = enabled

    def getTcpNoDelay(self) -> bool:
        return self.no_delay


class HandshakeTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.h = Harness()
        self.handshakes: List[PeerProtocol] = []
        self.h.connman.on_handshake.append(self.handshakes.append)

    def test_nagle_is_disabled(self) -> None:
        # Core's TCP_NODELAY: a small message is not held for the other side's ACK.
        for inbound in (True, False):
            transport = TCPStringTransport(
                hostAddress=IPv4Address("TCP", "10.0.0.1", 31932),
                peerAddress=IPv4Address("TCP", "8.8.8.8", 8333 + inbound))
            PeerProtocol(self.h.connman, inbound).makeConnection(transport)
            self.assertTrue(transport.getTcpNoDelay())

    def test_inbound(self) -> None:
        peer, transport = self.h.connect()
        self.assertEqual(transport.value(), b"")  # inbound peers speak first
        feed(peer, version())
        ours, verack = sent(transport)
        self.assertEqual((ours.version, ours.services, ours.user_agent, ours.start_height,
                          ours.relay, ours.nonce, ours.addr_recv.ip),
                         (PROTOCOL_VERSION, NODE_NETWORK, "/Coin:9.9.9/", 7, True,
                          peer.local_nonce, "8.8.8.8"))
        self.assertIsInstance(verack, VerackMessage)
        self.assertEqual((peer.version, peer.services, peer.subver, peer.starting_height,
                          peer.relay, peer.time_offset, peer.addr_local),
                         (PROTOCOL_VERSION, NODE_NETWORK, "/Other:1.0/", 12, False, 3,
                          "10.0.0.1:31932"))
        self.assertFalse(peer.successfully_connected)
        feed(peer, VerackMessage())
        self.assertEqual(commands(transport), ["sendheaders", "ping", "feefilter"])
        self.assertTrue(peer.successfully_connected)
        self.assertEqual(self.handshakes, [peer])

    def test_outbound(self) -> None:
        peer, transport = self.h.connect(inbound=False)
        self.assertEqual(peer.addr, "8.8.8.8:5001")
        self.assertEqual(commands(transport), ["version"])
        feed(peer, version(), VerackMessage())
        messages = sent(transport)
        self.assertEqual([m.command for m in messages],
                         ["verack", "sendheaders", "getaddr", "ping", "feefilter"])
        self.assertEqual(messages[-1], FeeFilterMessage(1000))
        # A completed outbound connection is a good address.
        self.assertIn(("8.8.8.8", 5001), self.h.connman.addrman)

    def test_self_connection(self) -> None:
        out, _ = self.h.connect(inbound=False, ip="127.0.0.1")
        inbound, transport = self.h.connect(ip="127.0.0.1")
        feed(inbound, version(nonce=out.local_nonce))
        self.assertTrue(transport.disconnecting)
        self.assertEqual(sent(transport), [])
        self.assertIn(("127.0.0.1", out.address.port), self.h.connman.own_addresses)

    def test_obsolete_version(self) -> None:
        # Below MIN_PEER_PROTO_VERSION: Core's reject and message.
        for number in (70001, 60000):
            peer, transport = self.h.connect()
            feed(peer, version(version_number=number))
            reject, = sent(transport)
            self.assertEqual((reject.message, reject.code, reject.reason),
                             ("version", REJECT_OBSOLETE, "Version must be 70002 or greater"))
            self.assertTrue(transport.disconnecting)

    def test_old_versions_are_kept_without_newer_messages(self) -> None:
        # sendheaders from 70201, feefilter from 70208: older peers get neither.
        for number, expected in ((70002, ["ping"]), (70008, ["ping"]),
                                 (70201, ["sendheaders", "ping"]),
                                 (70208, ["sendheaders", "ping", "feefilter"])):
            peer, transport = self.h.connect()
            feed(peer, version(version_number=number))
            transport.clear()
            feed(peer, VerackMessage())
            self.assertEqual(commands(transport), expected)
            self.assertTrue(peer.successfully_connected)
            self.assertEqual(peer.version, number)

    def test_outbound_needs_network_service_unless_manual(self) -> None:
        peer, transport = self.h.connect(inbound=False)
        feed(peer, VersionMessage(version=PROTOCOL_VERSION, services=0, nonce=5))
        self.assertTrue(transport.disconnecting)
        peer, transport = self.h.connect(inbound=False, manual=True)
        feed(peer, VersionMessage(version=PROTOCOL_VERSION, services=0, nonce=5))
        self.assertFalse(transport.disconnecting)

    def test_out_of_order_messages_score(self) -> None:
        peer, transport = self.h.connect()
        feed(peer, PingMessage(1))
        self.assertEqual((peer.ban_score, transport.value()), (1, b""))
        feed(peer, version())
        transport.clear()
        feed(peer, PingMessage(2))  # before verack
        self.assertEqual((peer.ban_score, transport.value()), (2, b""))
        feed(peer, VerackMessage(), version())
        messages = sent(transport)
        self.assertEqual(messages[-1].command, "reject")
        self.assertEqual((messages[-1].code, messages[-1].reason),
                         (REJECT_DUPLICATE, "Duplicate version message"))
        self.assertEqual(peer.ban_score, 3)

    def test_handshake_timeout(self) -> None:
        peer, transport = self.h.connect()
        self.h.advance(self.h.connman.handshake_timeout + 2)
        self.assertTrue(transport.disconnecting)


class MisbehaviourTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.h = Harness()

    def test_malformed_payload_scores_then_bans(self) -> None:
        peer, transport = handshake(self.h)
        peer.dataReceived(frame_message(MAGIC, "ping", b"abc"))
        reject, = sent(transport)
        self.assertEqual((reject.message, reject.code), ("ping", REJECT_MALFORMED))
        self.assertEqual(peer.ban_score, 10)
        for _ in range(9):
            peer.dataReceived(frame_message(MAGIC, "ping", b"abc"))
        self.assertEqual(peer.ban_score, 100)
        self.assertTrue(transport.disconnecting)
        banned, = self.h.connman.banman.banned()
        self.assertEqual((banned["address"], banned["ban_reason"]),
                         ("8.8.8.8/32", REASON_NODE_MISBEHAVING))
        self.assertIsNone(self.h.connman.accept_inbound(IPv4Address("TCP", "8.8.8.8", 1)))

    def test_ban_threshold_option(self) -> None:
        h = Harness(ban_threshold=20)
        peer, transport = handshake(h)
        peer.dataReceived(frame_message(MAGIC, "addr", compact_size(1001)))
        self.assertEqual(peer.ban_score, 20)
        self.assertTrue(h.connman.banman.is_banned("8.8.8.8"))

    def test_wrong_magic(self) -> None:
        peer, transport = self.h.connect()
        peer.dataReceived(encode_message(bytes.fromhex("e3c01ed1"), version()))
        self.assertTrue(transport.disconnecting)
        self.assertEqual(peer.ban_score, 0)

    def test_oversized_frame_is_not_buffered(self) -> None:
        peer, transport = self.h.connect()
        header = MAGIC + b"block".ljust(12, b"\0") + \
            (MAX_PROTOCOL_MESSAGE_LENGTH + 1).to_bytes(4, "little") + bytes(4)
        peer.dataReceived(header)
        self.assertTrue(transport.disconnecting)
        peer.dataReceived(bytes(100000))  # ignored: the connection is going
        self.assertLessEqual(peer.decoder.buffered, 24)

    def test_bad_checksum_is_dropped_without_score(self) -> None:
        peer, transport = handshake(self.h)
        data = bytearray(encode_message(MAGIC, PingMessage(1)))
        data[20] ^= 0xFF
        peer.dataReceived(bytes(data))
        self.assertEqual((peer.ban_score, sent(transport)), (0, []))


class PingTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.h = Harness()

    def test_answers_pings(self) -> None:
        peer, transport = handshake(self.h)
        feed(peer, PingMessage(5))
        self.assertEqual(sent(transport), [PongMessage(5)])

    def test_latency(self) -> None:
        peer, transport = self.h.connect()
        feed(peer, version(), VerackMessage())
        ping = [m for m in sent(transport) if m.command == "ping"][0]
        self.assertEqual(peer.ping_nonce_sent, ping.nonce)
        self.h.reactor.advance(0.25)
        feed(peer, PongMessage(ping.nonce + 1))  # mismatch: still waiting
        self.assertIsNone(peer.ping_time)
        feed(peer, PongMessage(ping.nonce))
        self.assertEqual((peer.ping_time, peer.min_ping, peer.ping_nonce_sent), (0.25, 0.25, 0))
        self.h.connman.ping_all()
        ping, = sent(transport)
        self.h.reactor.advance(0.5)
        feed(peer, PongMessage(ping.nonce))
        self.assertEqual((peer.ping_time, peer.min_ping), (0.5, 0.25))

    def test_interval_and_timeout(self) -> None:
        self.h.connman.ping_interval = 10
        self.h.connman.timeout_interval = 30
        peer, transport = self.h.connect()
        feed(peer, version(), VerackMessage())
        ping = [m for m in sent(transport) if m.command == "ping"][0]
        feed(peer, PongMessage(ping.nonce))
        self.h.advance(11)
        ping, = sent(transport)
        self.assertEqual(ping.command, "ping")
        # The peer keeps talking but never answers that ping (sent 10 s after the pong).
        for _ in range(5):
            self.h.advance(5)
            feed(peer, PingMessage(1))
            self.assertFalse(transport.disconnecting, peer.disconnect_reason)
        self.h.advance(6)
        self.assertTrue(transport.disconnecting)
        self.assertEqual(peer.disconnect_reason, "ping timeout")

    def test_idle_connection_times_out(self) -> None:
        self.h.connman.timeout_interval = 30
        peer, transport = self.h.connect()
        feed(peer, version(), VerackMessage())
        ping = [m for m in sent(transport) if m.command == "ping"][0]
        feed(peer, PongMessage(ping.nonce))
        self.h.advance(32)
        self.assertTrue(transport.disconnecting)
        self.assertEqual(peer.disconnect_reason, "send timeout")  # checked first, as Core


class AddrTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.h = Harness()

    def addresses(self, *ips: str, services: int = NODE_NETWORK) -> AddrMessage:
        return AddrMessage(tuple(NetAddress(services, ip, 8333, START - 60) for ip in ips))

    def test_addr_fills_the_book_and_getaddr_answers_once(self) -> None:
        source, _ = handshake(self.h)
        feed(source, self.addresses("1.1.1.1", "2.2.2.2"),
             self.addresses("3.3.3.3", services=0))
        book = self.h.connman.addrman
        self.assertEqual(sorted(i.ip for i in book.entries()), ["1.1.1.1", "2.2.2.2"])
        asker, transport = handshake(self.h, ip="9.9.9.9")
        feed(asker, GetAddrMessage())
        answer, = sent(transport)
        self.assertEqual(sorted(a.ip for a in answer.addresses), ["1.1.1.1", "2.2.2.2"])
        feed(asker, GetAddrMessage())
        self.assertEqual(sent(transport), [])
        outbound, transport = handshake(self.h, inbound=False, ip="7.7.7.7")
        feed(outbound, GetAddrMessage())
        self.assertEqual(sent(transport), [])

    def test_small_fresh_announcements_are_relayed(self) -> None:
        source, source_transport = handshake(self.h)
        others = [handshake(self.h, ip="9.9.9.%d" % i) for i in range(1, 4)]
        feed(source, self.addresses("1.1.1.1"))
        self.h.advance(1)
        relayed = [m for _, t in others for m in sent(t) if m.command == "addr"]
        self.assertEqual(len(relayed), 2)
        self.assertEqual(relayed[0].addresses[0].ip, "1.1.1.1")
        self.assertEqual([m for m in sent(source_transport) if m.command == "addr"], [])


    def flood(self, first: int, count: int = 1000) -> AddrMessage:
        """``count`` fresh addresses, each of its own /16 group."""
        return AddrMessage(tuple(
            NetAddress(NODE_NETWORK, "%d.%d.0.1" % (11 + n // 256 % 64, n % 256), 8333, START - 60)
            for n in range(first, first + count)))

    def test_rate_limit_drops_holds_and_bans_a_flood(self) -> None:
        peer, transport = handshake(self.h)
        feed(peer, self.flood(0), PingMessage(5))
        # A new peer has 10 tokens: 10 addresses processed, 990 dropped, below one unit.
        self.assertEqual((len(peer.known_addresses), peer.addr_rate_limited, peer.ban_score),
                         (10, 990, 0))
        # The peer is not read for 0.1 ms per dropped address: its ping waits.
        self.assertEqual(commands(transport), [])
        self.h.reactor.advance(0.098)
        self.assertEqual(commands(transport), [])
        self.h.reactor.advance(0.002)
        self.assertEqual(commands(transport), ["pong"])
        # Tokens accrue at 0.1 per second: 100 s later, 10 more.
        self.h.reactor.advance(100)
        feed(peer, self.flood(1000))
        self.assertEqual((len(peer.known_addresses), peer.addr_rate_limited, peer.ban_score),
                         (20, 1980, 10))
        # 10 per 1,000 dropped: banned (-banscore 100) once 10,000 are dropped.
        messages = 2
        while not transport.disconnecting:
            self.h.reactor.advance(0.1)
            feed(peer, self.flood(1000 * messages))
            messages += 1
        self.assertEqual((messages, peer.addr_rate_limited, peer.ban_score), (11, 10980, 100))
        self.assertTrue(self.h.connman.banman.is_banned("8.8.8.8"))

    def test_answer_to_our_getaddr_is_not_limited(self) -> None:
        peer, transport = handshake(self.h, inbound=False)
        feed(peer, self.flood(0), PingMessage(5))
        self.assertEqual((len(peer.known_addresses), peer.addr_rate_limited), (1000, 0))
        self.assertEqual(commands(transport), ["pong"])  # not held

    def test_closed_connection_leaves_no_timer(self) -> None:
        """A flood's hold and the abort after the disconnect grace go with the connection:
        a stopped node keeps no timer (trial's janitor saw both in in-process tests)."""
        before = set(self.h.reactor.getDelayedCalls())
        peer, transport = handshake(self.h)
        feed(peer, self.flood(0))  # held for 99 ms
        peer.disconnect("obsolete")  # flushes first (a reject, say), aborts after the grace
        self.assertTrue(transport.disconnecting)
        self.assertEqual(len(set(self.h.reactor.getDelayedCalls()) - before), 2)
        peer.connectionLost()
        self.assertEqual(set(self.h.reactor.getDelayedCalls()) - before, set())


class FlowControlTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.h = Harness()

    def test_deferred_handler_pauses_reading(self) -> None:
        pending = Deferred()
        seen = []

        def on_inv(peer: PeerProtocol, message: InvMessage) -> Deferred:
            seen.append(message)
            return pending

        self.h.connman.handlers["inv"] = on_inv
        peer, transport = handshake(self.h)
        feed(peer, InvMessage((InvItem(1, bytes(32)),)), PingMessage(9))
        self.assertEqual(len(seen), 1)
        self.assertEqual(transport.producerState, "paused")
        self.assertEqual(sent(transport), [])
        pending.callback(None)
        self.assertEqual(sent(transport), [PongMessage(9)])
        self.assertEqual(transport.producerState, "producing")

    def test_maxreceivebuffer_reads_on_until_the_queue_passes_it(self) -> None:
        """-maxreceivebuffer: while a handler is pending, messages are still read and
        queued; past the limit reading pauses, and resumes once the queue is processed."""
        h = Harness(max_receive_buffer=100)
        pending = Deferred()
        h.connman.handlers["inv"] = lambda peer, message: pending
        peer, transport = handshake(h)
        ping_size = len(encode_message(MAGIC, PingMessage(0)))  # 32 bytes on the wire
        feed(peer, InvMessage((InvItem(1, bytes(32)),)))
        for n in range(100 // ping_size):
            feed(peer, PingMessage(n))
            self.assertEqual(transport.producerState, "producing", n)
        feed(peer, PingMessage(99))  # 128 bytes queued > 100
        self.assertEqual(transport.producerState, "paused")
        self.assertEqual(sent(transport), [])
        pending.callback(None)
        self.assertEqual(sent(transport), [PongMessage(n) for n in (0, 1, 2, 99)])
        self.assertEqual(transport.producerState, "producing")

    def test_no_processing_while_the_peer_does_not_read(self) -> None:
        peer, transport = handshake(self.h)
        peer.pauseProducing()
        feed(peer, PingMessage(4))  # a read already under way when the buffer filled
        self.assertEqual(sent(transport), [])
        peer.resumeProducing()
        self.assertEqual(sent(transport), [PongMessage(4)])

    def test_handler_errors_are_contained(self) -> None:
        def broken(peer: PeerProtocol, message: Any) -> None:
            raise ValueError("boom")

        self.h.connman.handlers["inv"] = broken
        peer, transport = handshake(self.h)
        feed(peer, InvMessage(()), PingMessage(3))
        self.assertEqual(sent(transport), [PongMessage(3)])
        self.assertEqual(len(self.flushLoggedErrors(ValueError)), 1)

    def test_full_send_buffer(self) -> None:
        peer, transport = handshake(self.h)
        self.assertIs(transport.producer, peer)
        peer.pauseProducing()  # what the transport does when its buffer is full
        self.assertEqual(transport.producerState, "paused")
        drained = peer.when_drained()
        self.assertNoResult(drained)
        peer.resumeProducing()
        self.assertIs(self.successResultOf(drained), peer)
        self.assertEqual(transport.producerState, "producing")
        peer.pauseProducing()
        big = InvMessage(tuple(InvItem(1, i.to_bytes(32, "little")) for i in range(50000)))
        size = len(encode_message(MAGIC, big))
        for _ in range(MAX_SEND_BUFFER // size):
            peer.send(big)
        self.assertFalse(transport.disconnecting)
        peer.send(big)
        self.assertTrue(transport.disconnecting)


class AccountingTests(SynchronousTestCase):
    def test_counters_and_hooks(self) -> None:
        h = Harness()
        gone = []
        h.connman.on_disconnect.append(gone.append)
        peer, transport = h.connect()
        feed(peer, version(), VerackMessage())
        self.assertEqual(peer.bytes_recv_per_msg, {"version": 24 + len(version().serialize()),
                                                   "verack": 24})
        self.assertEqual(peer.bytes_sent_per_msg["sendheaders"], 24)
        self.assertEqual(peer.bytes_sent, len(transport.value()))
        peer.dataReceived(frame_message(MAGIC, "mnping", b"xyz"))
        self.assertEqual(peer.bytes_recv_per_msg["*other*"], 27)
        self.assertEqual((h.connman.total_bytes_sent, h.connman.total_bytes_recv),
                         (peer.bytes_sent, peer.bytes_recv))
        self.assertEqual(peer.last_recv, START)
        self.assertEqual(h.connman.connection_count(), 1)
        peer.connectionLost()
        self.assertEqual((gone, h.connman.connection_count()), ([peer], 0))


class ConnectionManagerTests(SynchronousTestCase):
    def test_inbound_limits(self) -> None:
        h = Harness(max_connections=10)
        self.assertEqual((h.connman.max_outbound, h.connman.max_inbound), (8, 1))
        addr = IPv4Address("TCP", "8.8.8.8", 1)
        self.assertIsNotNone(h.connman.accept_inbound(addr))
        handshake(h)
        self.assertIsNone(h.connman.accept_inbound(addr))  # full
        h = Harness()
        h.connman.ban(parse_subnet("8.8.0.0/16"))
        self.assertIsNone(h.connman.accept_inbound(addr))
        self.assertIsNotNone(h.connman.accept_inbound(IPv4Address("TCP", "8.9.0.1", 1)))
        h.connman.ready = False
        self.assertIsNone(h.connman.accept_inbound(IPv4Address("TCP", "8.9.0.1", 1)))

    def test_tick_hooks_wait_for_the_chain(self) -> None:
        """The hooks read the chain (block sync's best header): a tick that comes while the
        chain still loads (a slow start) must not run them."""
        h = Harness()
        h.connman.ready = False
        ticks: list = []
        h.connman.on_tick.append(ticks.append)
        h.advance(3)
        self.assertEqual(ticks, [])
        h.connman.start_connections()
        h.advance(2)
        self.assertGreaterEqual(len(ticks), 2)

    def arrive(self, h: Harness, ip: str) -> Optional[Tuple[PeerProtocol, StringTransport]]:
        """An inbound connection from ``ip`` as the listening factory sees it."""
        h.reactor.advance(1)
        if h.connman.accept_inbound(IPv4Address("TCP", ip, 1)) is None:
            return None
        return handshake(h, ip=ip)

    def test_inbound_eviction_makes_room_in_the_biggest_group(self) -> None:
        h = Harness(max_connections=49)  # 40 inbound slots
        hogs = [self.arrive(h, "8.8.%d.%d" % (i // 200, i % 200 + 1)) for i in range(40)]
        honest, honest_transport = self.arrive(h, "9.9.9.9")
        self.assertEqual(sum(t.disconnecting for _, t in hogs), 1)
        # More connections from the attacker's group evict its own, never the newcomer.
        hogs += [self.arrive(h, "8.8.9.%d" % i) for i in range(1, 11)]
        self.assertEqual(sum(t.disconnecting for _, t in hogs), 11)
        self.assertFalse(honest_transport.disconnecting)
        self.assertEqual(sum(1 for p in h.connman.peers.values()
                             if p.inbound and not p.disconnecting), 40)

    def test_few_inbound_slots_are_all_protected(self) -> None:
        h = Harness(max_connections=29)  # 20 inbound slots: Core protects 20
        hogs = [self.arrive(h, "8.8.8.%d" % i) for i in range(1, 21)]
        self.assertIsNone(self.arrive(h, "9.9.9.9"))
        self.assertFalse(any(t.disconnecting for _, t in hogs))

    def test_ban_disconnects_matching_peers(self) -> None:
        h = Harness()
        _, first = handshake(h, ip="8.8.8.8")
        _, second = handshake(h, ip="9.9.9.9")
        h.connman.ban(parse_subnet("8.0.0.0/8"))
        self.assertEqual((first.disconnecting, second.disconnecting), (True, False))

    def test_added_nodes_and_connect(self) -> None:
        h = Harness(addnodes=["1.2.3.4", "[::1]:7000"], use_addrman=False)
        self.assertFalse(h.connman.add_node("1.2.3.4"))
        self.assertTrue(h.connman.add_node("host.example:9000"))
        h.advance(1)
        self.assertEqual(sorted((host, port) for host, port, *_ in h.reactor.tcpClients),
                         [("1.2.3.4", 31932), ("::1", 7000), ("host.example", 9000)])
        info = h.connman.added_node_info()
        self.assertEqual([i["connected"] for i in info], [False, False, False])
        self.assertTrue(h.connman.remove_added_node("1.2.3.4"))
        self.assertFalse(h.connman.remove_added_node("1.2.3.4"))
        # A pending attempt is not repeated; a failed one waits for the retry interval.
        h.advance(2)
        self.assertEqual(len(h.reactor.tcpClients), 3)

    def test_connect_is_exclusive(self) -> None:
        h = Harness(connect=["5.5.5.5:1"], use_addrman=False)
        h.connman.addrman.add([NetAddress(1, "6.6.6.6", 8333, START)])
        h.advance(1)
        self.assertEqual([(c[0], c[1]) for c in h.reactor.tcpClients], [("5.5.5.5", 1)])

    def test_automatic_outbound_from_the_book(self) -> None:
        h = Harness()
        book = h.connman.addrman
        book.add([NetAddress(1, "6.6.6.6", 8333, START), NetAddress(1, "7.7.7.7", 8333, START)])
        h.connman.ban(parse_subnet("7.7.7.7"))
        h.advance(3)
        self.assertEqual([(c[0], c[1]) for c in h.reactor.tcpClients], [("6.6.6.6", 8333)])
        self.assertEqual(book.get("6.6.6.6", 8333).attempts, 1)

    def test_network_active(self) -> None:
        h = Harness()
        _, transport = handshake(h)
        h.connman.set_network_active(False)
        self.assertTrue(transport.disconnecting)
        self.assertIsNone(h.connman.accept_inbound(IPv4Address("TCP", "8.9.0.1", 1)))
        h.connman.set_network_active(True)
        self.assertIsNotNone(h.connman.accept_inbound(IPv4Address("TCP", "8.9.0.1", 1)))

    def test_disconnect_by_name_and_id(self) -> None:
        h = Harness()
        peer, transport = handshake(h)
        self.assertFalse(h.connman.disconnect_by_name("8.8.8.8:1"))
        self.assertTrue(h.connman.disconnect_by_name(peer.addr))
        self.assertTrue(transport.disconnecting)
        other, transport = handshake(h)
        self.assertFalse(h.connman.disconnect_by_id(99))
        self.assertTrue(h.connman.disconnect_by_id(other.id))
        self.assertTrue(transport.disconnecting)


class HelperTests(SynchronousTestCase):
    def test_user_agent(self) -> None:
        self.assertEqual(format_user_agent("Coin", "1.2.3", []), "/Coin:1.2.3/")
        self.assertEqual(format_user_agent("Coin", "1.2.3", ["a b", "c"]), "/Coin:1.2.3(a b; c)/")
        check_user_agent(["ok comment; fine"], "/x/")
        with self.assertRaises(P2PStartupError):
            check_user_agent(["bad/char"], "/x/")
        with self.assertRaises(P2PStartupError):
            check_user_agent(["x" * 300], "/" + "x" * 300 + "/")

    def test_split_host_port(self) -> None:
        self.assertEqual(split_host_port("1.2.3.4", 5), ("1.2.3.4", 5))
        self.assertEqual(split_host_port("1.2.3.4:6", 5), ("1.2.3.4", 6))
        self.assertEqual(split_host_port("[::1]:6", 5), ("::1", 6))
        self.assertEqual(split_host_port("::1", 5), ("::1", 5))

    def test_time_data_median(self) -> None:
        data = TimeData()
        for i, offset in enumerate((10, 20, 30, 40)):
            data.add("1.1.1.%d" % i, offset)
        self.assertEqual(data.offset, 20)  # median of 0, 10, 20, 30, 40
        self.assertIsNone(data.add("1.1.1.0", 1000))  # one sample per address
        data.add("2.2.2.2", 5000)
        data.add("2.2.2.3", 5000)  # median 30 of seven
        self.assertEqual(data.offset, 30)
