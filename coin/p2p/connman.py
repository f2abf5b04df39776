"""The connection manager: inbound and outbound connections, bans, addresses, totals.

:class:`P2PService` is the node's P2P factory as a Twisted service (design
card §1).  It owns the :class:`~coin.p2p.banman.BanMan`, the
:class:`~coin.p2p.addrman.AddrMan` and every :class:`~coin.p2p.peer.PeerProtocol`,
and runs one maintenance tick per ``tick_interval`` seconds: pings and
timeouts of each peer, addr relay, reconnection of ``-connect``/``-addnode``
targets and automatic outbound connections from the address book.

Extension points for the sync and relay layers
    * ``handlers[command] = fn(peer, message)`` -- called for every message of a
      peer that completed the handshake; may return a Deferred (the peer stops
      reading until it fires).  The base registers ping, pong, addr, getaddr,
      feefilter, sendheaders and reject; unknown commands without a handler are
      ignored.
    * ``register_handler(command, fn)`` -- how services outside coin.p2p (sporks,
      masternodes) claim their commands in ``handlers``; P2P never imports them.
    * ``register_inventory(type, source)`` -- an :class:`InventorySource` for an inventory
      type the block sync does not own: it gets that type's ``inv`` items and serves
      its ``getdata`` items (the block sync owns the ``inv``/``getdata`` commands).
    * ``on_handshake``, ``on_disconnect`` -- lists of ``fn(peer)`` run when a peer
      completes the version/verack handshake, and when a registered peer's
      connection is gone.
    * ``on_tick`` -- list of ``fn(now)`` run after each maintenance tick (stall
      detection, request timeouts, trickled announcements).
    * ``peer.misbehaving(score, reason)`` bans at ``ban_threshold`` (-banscore).
    * ``fee_filter_rate`` -- callable giving the feefilter value sent after the
      handshake (the relay layer may replace it and send updates itself).
    * ``handshaked_peers()``, ``send_to_all(message)``.

Inbound connections are accepted only once the chain is loaded
(:meth:`start_connections`), while the network is active, from addresses that
are not banned; when ``max_inbound`` inbound peers exist (Core's formula:
-maxconnections minus 8 outbound minus 1 feeler slot) one of them is evicted
(:mod:`coin.p2p.eviction`), or, if all are protected, the newcomer is refused.
The node's listening sockets are child services of the node (:mod:`coin.listeners`)
serving :meth:`P2PService.inbound_factory`.
"""

from __future__ import annotations

import hashlib
import ipaddress
import math
import os
import random
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Protocol, Set, Tuple

from twisted.application import service
from twisted.internet import protocol
from twisted.internet.defer import Deferred
from twisted.internet.task import LoopingCall
from twisted.logger import Logger

from coin.config.hostport import split_host_port
from coin.chainparams import ChainParams
from coin.chain.warnings import CLOCK_WARNING, NodeWarnings, clock_warning_due
from coin.p2p import addrman as addrman_module
from coin.p2p import banman as banman_module
from coin.p2p.addrman import AddrInfo, AddrMan
from coin.p2p.banman import (
    REASON_MANUALLY_ADDED,
    REASON_NODE_MISBEHAVING,
    BanMan,
    Network,
    normalize_ip,
    parse_subnet,
)
from coin.p2p.eviction import EvictionCandidate, select_node_to_evict
from coin.p2p.messages import (
    MAX_ADDR_TO_SEND,
    MAX_SUBVERSION_LENGTH,
    NODE_NETWORK,
    AddrMessage,
    FeeFilterMessage,
    GetAddrMessage,
    InvItem,
    Payload,
    PingMessage,
    PongMessage,
    RejectMessage,
    SendHeadersMessage,
)
from coin.p2p.netaddr import NetAddress
from coin.p2p.peer import PeerProtocol
from coin.p2p.upload import UploadTarget

log = Logger()

#: Core's MAX_OUTBOUND_CONNECTIONS, MAX_ADDNODE_CONNECTIONS and feeler slot.
MAX_OUTBOUND_CONNECTIONS = 8
MAX_ADDNODE_CONNECTIONS = 8
MAX_FEELER_CONNECTIONS = 1
DEFAULT_BANSCORE_THRESHOLD = 100
#: Core's DEFAULT_MAX_TIME_ADJUSTMENT and BITCOIN_TIMEDATA_MAX_SAMPLES.
MAX_TIME_ADJUSTMENT = 70 * 60
TIMEDATA_MAX_SAMPLES = 200
#: An addr flood scores ADDR_FLOOD_BAN_SCORE per ADDR_FLOOD_UNIT addresses dropped by the
#: rate limit: banned (at -banscore 100) after 10,000 addresses over the limit.
ADDR_FLOOD_UNIT = 1000
ADDR_FLOOD_BAN_SCORE = 10
#: Seconds a peer is not read per address dropped by the rate limit (0.1 s per full
#: 1,000-address message): the flood is slowed by TCP back-pressure, not by our CPU.
ADDR_FLOOD_HOLD = 0.0001
#: Core's MAX_MONEY in base units, bounding feefilter values.
_MAX_MONEY = 21_000_000 * 100_000_000
#: Core's SAFE_CHARS_UA_COMMENT.
_UA_COMMENT_CHARS = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,;-_?@")


class InventorySource(Protocol):
    """A service's inventory type on the wire (see ``register_inventory``)."""

    def on_inv(self, peer: PeerProtocol, items: List[InvItem]) -> None:
        """A peer announced these items (all of this source's type)."""

    def lookup(self, item_hash: bytes) -> Optional[Payload]:
        """The message that answers a ``getdata`` for ``item_hash``, or None (notfound)."""


class P2PStartupError(Exception):
    """An option is invalid; the node refuses to start."""


def format_user_agent(name: str, version: str, comments: List[str]) -> str:
    """Core's FormatSubVersion: ``/Name:1.2.3/`` or ``/Name:1.2.3(c1; c2)/``."""
    text = "/%s:%s" % (name, version)
    if comments:
        text += "(%s)" % "; ".join(comments)
    return text + "/"


def parse_whitelist(values: List[str]) -> List[Network]:
    """-whitelist values as networks; P2PStartupError with Core's text for a bad one."""
    networks = []
    for value in values:
        try:
            networks.append(parse_subnet(value))
        except ValueError:
            raise P2PStartupError("Invalid netmask specified in -whitelist: '%s'"
                                  % value) from None
    return networks


def check_user_agent(comments: List[str], user_agent: str) -> None:
    """Core's start-up checks of -uacomment; raises P2PStartupError."""
    for comment in comments:
        if any(c not in _UA_COMMENT_CHARS for c in comment):
            raise P2PStartupError("User Agent comment (%s) contains unsafe characters."
                                  % comment)
    if len(user_agent) > MAX_SUBVERSION_LENGTH:
        raise P2PStartupError(
            "Total length of network version string (%d) exceeds maximum length (%d). Reduce "
            "the number or size of uacomments." % (len(user_agent), MAX_SUBVERSION_LENGTH))


def numeric_service(text: str, default_port: int) -> Optional[Tuple[str, int]]:
    """``(ip, port)`` when ``text`` is a numeric address (Core's LookupNumeric), else None."""
    host, port = split_host_port(text, default_port)
    try:
        return str(normalize_ip(host)), port
    except ValueError:
        return None


@dataclass
class P2PSettings:
    """What the P2P service takes from the configuration."""

    port: int
    listen: bool = True
    #: Explicit -bind endpoints; empty: all interfaces (``::`` and ``0.0.0.0``).
    binds: List[Tuple[str, int]] = field(default_factory=list)
    #: -connect targets (exclusive); ``use_addrman`` False when -connect is given.
    connect: List[str] = field(default_factory=list)
    use_addrman: bool = True
    addnodes: List[str] = field(default_factory=list)
    max_connections: int = 125
    bantime: int = banman_module.DEFAULT_BANTIME
    ban_threshold: int = DEFAULT_BANSCORE_THRESHOLD
    user_agent: str = "/Coin:0/"
    #: Connect timeout (seconds, Core's -timeout in ms / 1000).
    connect_timeout: float = 5.0
    #: Each unroutable (loopback, private) address is its own network group for inbound
    #: eviction (set on regtest), so loopback test networks (127.0.0.1, 127.0.0.2...) model
    #: distinct networks.  The address book takes routable addresses only, whatever this says.
    distinct_unroutable_groups: bool = False
    #: -allowprivatenet (Dash): the address book keeps RFC1918 addresses too.
    allow_private: bool = False
    #: -blocksonly: our version asks peers not to relay transactions; their transaction
    #: announcements and transactions are ignored (ours are still announced).
    blocks_only: bool = False
    #: -whitelist networks: their peers are never banned or evicted, and connect while
    #: their address is banned; with -whitelistrelay their transactions pass -blocksonly.
    whitelist: List[Network] = field(default_factory=list)
    whitelist_relay: bool = True
    #: -maxsendbuffer in bytes: past it a peer's messages wait until it reads ours (Core's
    #: fPauseSend); None keeps the transport's own 64 KiB.
    max_send_buffer: Optional[int] = None
    #: -maxreceivebuffer in bytes: while a handler runs, reading goes on until the peer's
    #: unprocessed messages pass it (Core's fPauseRecv); None stops reading at once.
    max_receive_buffer: Optional[int] = None
    #: -maxuploadtarget in bytes per 24h (0: none).
    max_upload_target: int = 0


class TimeData:
    """Core's AddTimeData: the median offset of up to 200 peers' clocks; raises the
    node's clock warning once when the median is too large and no peer agrees with us."""

    def __init__(self, warnings: Optional[NodeWarnings] = None) -> None:
        self._known: Set[str] = set()
        self._offsets: List[int] = [0]
        self.offset = 0
        self.warned = False
        self._warnings = warnings if warnings is not None else NodeWarnings()

    def add(self, ip: str, offset: int) -> Optional[int]:
        """Record a sample; returns the new offset when it changes the median."""
        if len(self._known) >= TIMEDATA_MAX_SAMPLES or ip in self._known:
            return None
        self._known.add(ip)
        self._offsets.append(offset)
        if len(self._offsets) > TIMEDATA_MAX_SAMPLES:
            self._offsets.pop(0)
        if len(self._offsets) >= 5 and len(self._offsets) % 2 == 1:
            median = sorted(self._offsets)[len(self._offsets) // 2]
            if abs(median) <= MAX_TIME_ADJUSTMENT:
                self.offset = median
            else:
                self.offset = 0
                if not self.warned and clock_warning_due(self._offsets):
                    self.warned = True
                    self._warnings.set_misc(CLOCK_WARNING)
            return self.offset
        return None


@dataclass
class _Pending:
    """An outbound connection attempt in progress."""

    connector: Any
    manual: bool

    def cancel(self) -> None:
        try:
            self.connector.stopConnecting()
        except Exception:
            pass  # already connected or failed


class _InboundFactory(protocol.Factory):
    noisy = False

    def __init__(self, connman: "P2PService") -> None:
        self.connman = connman

    def buildProtocol(self, addr: Any) -> Optional[PeerProtocol]:
        return self.connman.accept_inbound(addr)


class _OutboundFactory(protocol.ClientFactory):
    noisy = False

    def __init__(self, connman: "P2PService", target: str, manual: bool,
                 book_entry: Optional[Tuple[str, int]]) -> None:
        self.connman = connman
        self.target = target
        self.manual = manual
        self.book_entry = book_entry

    def buildProtocol(self, addr: Any) -> PeerProtocol:
        self.connman._connecting.pop(self.target, None)
        peer = PeerProtocol(self.connman, inbound=False, addr_name=self.target,
                            manual=self.manual)
        peer.state["book_entry"] = self.book_entry
        return peer

    def clientConnectionFailed(self, connector: Any, reason: Any) -> None:
        self.connman._connecting.pop(self.target, None)
        log.debug("connection to {target} failed: {reason}", target=self.target,
                  reason=reason.getErrorMessage())


class P2PService(service.Service):
    """Listens, connects, keeps the peers; see the module docstring for the hooks."""

    name = "p2p"

    # Tunables (seconds), class attributes so tests can shorten them per instance.
    tick_interval = 1.0
    #: Core's PING_INTERVAL and TIMEOUT_INTERVAL.
    ping_interval = 2 * 60.0
    timeout_interval = 20 * 60.0
    #: A peer that has not completed the handshake in this time is dropped.
    handshake_timeout = 60.0
    #: After a polite disconnect, unsent data is dropped after this long.
    disconnect_grace = 5.0
    #: Retry interval of -addnode / addnode-RPC targets and of -connect targets.
    addnode_retry_interval = 60.0
    connect_retry_interval = 5.0
    #: banlist.json and peers.json are written this often (Core's DUMP_PEERS_INTERVAL).
    dump_interval = 15 * 60.0

    def __init__(self, params: ChainParams, settings: P2PSettings, reactor: Any,
                 now: Callable[[], float], datadir: Optional[str] = None,
                 start_height: Callable[[], int] = lambda: 0,
                 fee_filter_rate: Optional[Callable[[], Optional[int]]] = None,
                 set_time_offset: Optional[Callable[[int], None]] = None,
                 warnings: Optional[NodeWarnings] = None) -> None:
        self.params = params
        self.settings = settings
        self.reactor = reactor
        self._clock = now
        self.datadir = datadir
        self._start_height = start_height
        self.fee_filter_rate = fee_filter_rate
        self._set_time_offset = set_time_offset
        self.user_agent = settings.user_agent
        self.local_services = NODE_NETWORK
        self.port = settings.port
        self.ban_threshold = settings.ban_threshold
        self.connect_timeout = settings.connect_timeout
        self.max_outbound = min(MAX_OUTBOUND_CONNECTIONS, max(0, settings.max_connections))
        self.max_inbound = max(0, settings.max_connections
                               - (self.max_outbound + MAX_FEELER_CONNECTIONS))
        self.banman = BanMan(os.path.join(datadir, banman_module.FILE_NAME) if datadir else None,
                             now, settings.bantime)
        self.addrman = AddrMan(
            os.path.join(datadir, addrman_module.FILE_NAME) if datadir else None, now)
        self.addrman.allow_private = settings.allow_private
        self.time_data = TimeData(warnings)
        self._net_group_key = os.urandom(32)
        self.peers: Dict[int, PeerProtocol] = {}
        self._next_id = 0
        self.added_nodes: List[str] = list(dict.fromkeys(settings.addnodes))
        self._retry_at: Dict[str, float] = {}
        self._connecting: Dict[str, Any] = {}
        #: Our own addresses, learnt from self-connections: never tried again.
        self.own_addresses: Set[Tuple[str, int]] = set()
        self.network_active = True
        #: True once the chain is loaded and connections may be made and accepted.
        self.ready = False
        self.total_bytes_recv = 0
        self.total_bytes_sent = 0
        self.upload = UploadTarget(settings.max_upload_target, now)
        self.handlers: Dict[str, Callable[[PeerProtocol, Any], Optional[Deferred]]] = {
            "ping": self._on_ping, "pong": self._on_pong, "addr": self._on_addr,
            "getaddr": self._on_getaddr, "feefilter": self._on_feefilter,
            "sendheaders": self._on_sendheaders, "reject": self._on_reject}
        #: Inventory types served by other services (``register_inventory``).
        self.inventory: Dict[int, InventorySource] = {}
        self.on_handshake: List[Callable[[PeerProtocol], None]] = []
        self.on_disconnect: List[Callable[[PeerProtocol], None]] = []
        self.on_tick: List[Callable[[float], None]] = []
        #: Called at shutdown, after the peers are gone: layers cancel their timers.
        self.on_stop: List[Callable[[], None]] = []
        self._ticker: Optional[LoopingCall] = None
        self._last_dump = 0.0

    def register_handler(self, command: str,
                         handler: Callable[[PeerProtocol, Any], Optional[Deferred]]) -> None:
        """Route a command's messages from handshaked peers to ``handler``; one per command."""
        if command in self.handlers:
            raise ValueError("a handler for %r is already registered" % command)
        self.handlers[command] = handler

    def register_inventory(self, inv_type: int, source: InventorySource) -> None:
        """Hand ``inv``/``getdata`` items of ``inv_type`` to ``source``; one per type."""
        if inv_type in self.inventory:
            raise ValueError("inventory type %d is already registered" % inv_type)
        self.inventory[inv_type] = source

    # ------------------------------------------------------------ clock and chain

    def now(self) -> float:
        """Seconds (the reactor's clock: wall time on a real reactor)."""
        return self.reactor.seconds()

    def node_time(self) -> float:
        """The node's clock (``setmocktime`` aware): Core's GetTime()."""
        return self._clock()

    def adjusted_time(self) -> float:
        """The node's clock (mock time aware) plus the network time offset."""
        return self._clock() + self.time_data.offset

    def start_height(self) -> int:
        return self._start_height()

    def add_time_data(self, ip: str, offset: int) -> None:
        changed = self.time_data.add(ip, offset)
        if changed is not None and self._set_time_offset is not None:
            self._set_time_offset(changed)

    # ------------------------------------------------------------ life cycle

    def load(self) -> None:
        """Read banlist.json and peers.json (before the reactor runs)."""
        self.banman.load()
        self.addrman.load()

    def inbound_factory(self) -> protocol.Factory:
        """The factory of the node's listening sockets (coin.service binds them)."""
        return _InboundFactory(self)

    def startService(self) -> None:
        super().startService()
        self._ticker = LoopingCall(self.tick)
        self._ticker.clock = self.reactor
        self._ticker.start(self.tick_interval, now=False).addErrback(
            lambda f: log.failure("P2P maintenance failed", f))
        self._last_dump = self.now()

    def start_connections(self) -> None:
        """The chain is loaded: accept inbound peers and open outbound connections."""
        self.ready = True
        self.reactor.callLater(0, self.tick)

    def stopService(self) -> None:
        super().stopService()
        self.ready = False
        if self._ticker is not None and self._ticker.running:
            self._ticker.stop()
        for pending in list(self._connecting.values()):
            pending.cancel()
        self._connecting.clear()
        for peer in list(self.peers.values()):
            peer.disconnect("shutdown", abort=True)
        for hook in list(self.on_stop):
            hook()
        self.dump()

    def dump(self) -> None:
        """Write banlist.json and peers.json."""
        for book, name in ((self.banman, "ban list"), (self.addrman, "peer addresses")):
            try:
                book.save()
            except OSError as e:
                log.error("Failed to write the {name}: {error}", name=name, error=e)

    # ------------------------------------------------------------ peers

    def accept_inbound(self, addr: Any) -> Optional[PeerProtocol]:
        """A new inbound connection from ``addr``: a protocol, or None to refuse it."""
        text = "%s:%s" % (getattr(addr, "host", "?"), getattr(addr, "port", "?"))
        if not self.ready or not self.network_active:
            log.debug("connection from {addr} dropped: not accepting new connections",
                      addr=text)
            return None
        host = getattr(addr, "host", "")
        if self.banman.is_banned(host) and not self.is_whitelisted(host):
            log.info("connection from {addr} dropped (banned)", addr=text)
            return None
        inbound = sum(1 for p in self.peers.values() if p.inbound and not p.disconnecting)
        if inbound >= self.max_inbound and not self._evict_inbound():
            log.info("failed to find an eviction candidate - connection from {addr} dropped "
                     "(full)", addr=text)
            return None
        return PeerProtocol(self, inbound=True)

    def _evict_inbound(self) -> bool:
        """Core's AttemptToEvictConnection: drop one inbound peer to make room."""
        candidates = [EvictionCandidate(
            id=p.id, connected=p.conn_time,
            min_ping=p.min_ping if p.min_ping is not None else math.inf,
            last_block_time=p.last_block_time, last_tx_time=p.last_tx_time,
            relevant_services=bool(p.services & NODE_NETWORK), relay_txes=p.relay,
            keyed_net_group=self.keyed_net_group(p.address))
            for p in self.peers.values() if p.inbound and not p.disconnecting
            and not self.is_whitelisted(p.address.ip if p.address is not None else "")]
        victim = select_node_to_evict(candidates)
        if victim is None:
            return False
        peer = self.peers[victim]
        log.info("evicting peer={id} ({addr}) to make room for an inbound connection",
                 id=peer.id, addr=peer.addr)
        peer.disconnect("evicted", abort=True)
        return True

    def keyed_net_group(self, address: Optional[NetAddress]) -> int:
        """A secret-keyed hash of ``address``'s network group (Core's nKeyedNetGroup)."""
        group = (address.group(self.settings.distinct_unroutable_groups) if address is not None
                 else b"")
        digest = hashlib.blake2b(group, digest_size=8, key=self._net_group_key).digest()
        return int.from_bytes(digest, "little")

    def peer_connected(self, peer: PeerProtocol) -> bool:
        """Register a peer whose connection is up; False refuses it."""
        if not self.running or not self.network_active:
            return False
        peer.id = self._next_id
        self._next_id += 1
        self.peers[peer.id] = peer
        log.debug("Added connection to {addr} peer={id}", addr=peer.addr, id=peer.id)
        return True

    def peer_disconnected(self, peer: PeerProtocol) -> None:
        if self.peers.get(peer.id) is not peer:
            return
        del self.peers[peer.id]
        log.debug("disconnected peer={id} ({addr})", id=peer.id, addr=peer.addr)
        for hook in list(self.on_disconnect):
            try:
                hook(peer)
            except Exception:
                log.failure("on_disconnect hook failed for peer={id}", id=peer.id)

    def peer_handshake_done(self, peer: PeerProtocol) -> None:
        if not peer.inbound and peer.address is not None:
            # Core's MarkAddressGood, for every outbound connection (manual ones too).
            entry = peer.state.get("book_entry") or (peer.address.ip, peer.address.port)
            self.addrman.good(NetAddress(peer.services, entry[0], entry[1]))
        for hook in list(self.on_handshake):
            try:
                hook(peer)
            except Exception:
                log.failure("on_handshake hook failed for peer={id}", id=peer.id)

    def is_local_nonce(self, nonce: int) -> bool:
        """Whether ``nonce`` is one of our own outbound, not yet connected, version nonces.

        A match means we connected to ourselves: that outbound target is remembered as
        our own address and removed from the address book.
        """
        for peer in self.peers.values():
            if not peer.inbound and not peer.successfully_connected and \
                    peer.local_nonce == nonce:
                if peer.address is not None:
                    key = (peer.address.ip, peer.address.port)
                    self.own_addresses.add(key)
                    self.addrman.remove(*key)
                return True
        return False

    def handshaked_peers(self) -> List[PeerProtocol]:
        return [p for p in self.peers.values() if p.successfully_connected and not p.disconnecting]

    def send_to_all(self, message: Any) -> None:
        for peer in self.handshaked_peers():
            peer.send(message)

    def connection_count(self) -> int:
        """Core's GetNodeCount(CONNECTIONS_ALL): every open connection."""
        return len(self.peers)

    def find_by_name(self, name: str) -> Optional[PeerProtocol]:
        for peer in self.peers.values():
            if peer.addr == name:
                return peer
        return None

    def find_by_service(self, ip: str, port: int) -> Optional[PeerProtocol]:
        for peer in self.peers.values():
            if peer.address is not None and peer.address.ip == ip and peer.address.port == port:
                return peer
        return None

    # ------------------------------------------------------------ maintenance

    def tick(self) -> None:
        """Pings, timeouts, addr flushing, reconnections, automatic outbound."""
        now = self.now()
        for peer in list(self.peers.values()):
            try:
                peer.tick(now)
            except Exception:
                log.failure("tick failed for peer={id}", id=peer.id)
        if self.ready and self.network_active:
            try:
                self._open_connections(now)
            except Exception:
                log.failure("opening connections failed")
        # The hooks (block sync, relay) read the chain: none before it is loaded.
        for hook in list(self.on_tick) if self.ready else ():
            try:
                hook(now)
            except Exception:
                log.failure("on_tick hook failed")
        if now - self._last_dump >= self.dump_interval:
            self._last_dump = now
            self.dump()

    def _target_connected(self, target: str) -> bool:
        if target in self._connecting or self.find_by_name(target) is not None:
            return True
        service_ = numeric_service(target, self.params.p2p_port)
        return service_ is not None and self.find_by_service(*service_) is not None

    def _open_connections(self, now: float) -> None:
        manual_targets = [(t, self.connect_retry_interval) for t in self.settings.connect]
        manual_targets += [(t, self.addnode_retry_interval) for t in self.added_nodes]
        added = sum(1 for t in self.added_nodes if self._target_connected(t))
        for target, interval in manual_targets:
            if self._target_connected(target) or now < self._retry_at.get(target, 0.0):
                continue
            if target in self.added_nodes and added >= MAX_ADDNODE_CONNECTIONS:
                continue
            self._retry_at[target] = now + interval
            if self.connect_to(target, manual=True):
                added += target in self.added_nodes
        if self.settings.use_addrman:
            self._open_automatic()

    def _open_automatic(self) -> None:
        automatic = sum(1 for p in self.peers.values() if not p.inbound and not p.manual)
        automatic += sum(1 for pending in self._connecting.values() if not pending.manual)
        if automatic >= self.max_outbound or not len(self.addrman):
            return
        busy = {(p.address.ip, p.address.port) for p in self.peers.values()
                if p.address is not None}
        busy.update(self.own_addresses)
        for target in self._connecting:
            service_ = numeric_service(target, self.params.p2p_port)
            if service_ is not None:
                busy.add(service_)

        def exclude(info: AddrInfo) -> bool:
            return (info.ip, info.port) in busy or self.banman.is_banned(info.ip)

        info = self.addrman.select(exclude)
        if info is None:
            return
        self.addrman.attempt(info.ip, info.port)
        self.connect_to(str(info.net_address()), manual=False, book_entry=(info.ip, info.port))

    def connect_to(self, target: str, manual: bool = True,
                   book_entry: Optional[Tuple[str, int]] = None) -> bool:
        """Start an outbound connection to ``target`` (``host[:port]``) unless connected."""
        if not self.running or not self.network_active:
            return False
        if self._target_connected(target):
            return False
        host, port = split_host_port(target, self.params.p2p_port)
        if not host:
            return False
        log.debug("trying connection {target}", target=target)
        factory = _OutboundFactory(self, target, manual, book_entry)
        connector = self.reactor.connectTCP(host, port, factory, timeout=self.connect_timeout)
        self._connecting[target] = _Pending(connector, manual)
        return True

    # ------------------------------------------------------------ RPC-facing operations

    def add_node(self, target: str) -> bool:
        """addnode "add": False if already added."""
        if target in self.added_nodes:
            return False
        self.added_nodes.append(target)
        self._retry_at.pop(target, None)
        if self.ready:
            self.reactor.callLater(0, self.tick)
        return True

    def remove_added_node(self, target: str) -> bool:
        if target not in self.added_nodes:
            return False
        self.added_nodes.remove(target)
        self._retry_at.pop(target, None)
        return True

    def added_node_info(self) -> List[Dict[str, Any]]:
        """Core's GetAddedNodeInfo: ``added``, ``connected``, ``resolved``, ``inbound``."""
        result = []
        for target in self.added_nodes:
            found: Optional[PeerProtocol] = None
            service_ = numeric_service(target, self.params.p2p_port)
            if service_ is not None:
                found = self.find_by_service(*service_)
            else:
                found = self.find_by_name(target)
            resolved = str(found.address) if found is not None and found.address else ""
            result.append({"added": target, "connected": found is not None,
                           "resolved": resolved,
                           "inbound": found.inbound if found is not None else False})
        return result

    def disconnect_by_name(self, name: str) -> bool:
        peer = self.find_by_name(name)
        if peer is None:
            return False
        peer.disconnect("disconnectnode")
        return True

    def disconnect_by_id(self, peer_id: int) -> bool:
        peer = self.peers.get(peer_id)
        if peer is None:
            return False
        peer.disconnect("disconnectnode")
        return True

    def ban(self, net: Network, reason: str = REASON_MANUALLY_ADDED, bantime: int = 0,
            absolute: bool = False) -> None:
        """Ban ``net`` and disconnect every peer in it (Core's CConnman::Ban)."""
        self.banman.ban(net, reason, bantime, absolute)
        if reason == REASON_MANUALLY_ADDED:
            self._save_bans()
        for peer in list(self.peers.values()):
            if peer.address is not None and _in_network(peer.address.ip, net):
                peer.disconnect("banned", abort=True)

    def unban(self, net: Network) -> bool:
        if not self.banman.unban(net):
            return False
        self._save_bans()
        return True

    def clear_banned(self) -> None:
        self.banman.clear()
        self._save_bans()

    def _save_bans(self) -> None:
        try:
            self.banman.save()
        except OSError as e:
            log.error("Failed to write the ban list: {error}", error=e)

    def serves_historical_blocks(self, peer: PeerProtocol) -> bool:
        """Whether blocks a week behind the best header still go to ``peer``: not once
        the -maxuploadtarget budget is (nearly) spent, unless it is whitelisted."""
        return not self.upload.reached(historical=True) or self.is_whitelisted(peer.ip)

    def is_whitelisted(self, ip: str) -> bool:
        """Whether ``ip`` is in a -whitelist network (Core's fWhitelisted)."""
        if not self.settings.whitelist or not ip:
            return False
        try:
            addr = normalize_ip(ip)
        except ValueError:
            return False
        return any(addr in net for net in self.settings.whitelist if addr.version == net.version)

    def relays_from(self, peer: PeerProtocol) -> bool:
        """Whether transactions from ``peer`` are taken: not with -blocksonly, unless it is
        whitelisted and -whitelistrelay (Core's fBlocksOnly / fRelayTxes checks)."""
        if not self.settings.blocks_only:
            return True
        return self.settings.whitelist_relay and peer.address is not None \
            and self.is_whitelisted(peer.address.ip)

    def ban_misbehaving(self, peer: PeerProtocol) -> None:
        """A peer crossed the ban threshold: ban its address (-bantime) and drop it; a
        whitelisted one is kept (Core: "not punishing whitelisted peer")."""
        if peer.address is not None and self.is_whitelisted(peer.address.ip):
            log.info("Warning: not punishing whitelisted peer {addr}!", addr=peer.addr)
            return
        if peer.address is None:
            peer.disconnect("misbehaving", abort=True)
            return
        net = ipaddress.ip_network(normalize_ip(peer.address.ip))
        self.ban(net, REASON_NODE_MISBEHAVING)
        peer.disconnect("misbehaving", abort=True)

    def set_network_active(self, active: bool) -> None:
        """Core's SetNetworkActive: off drops every peer and stops connecting."""
        if active == self.network_active:
            return
        log.info("SetNetworkActive: {active}", active="true" if active else "false")
        self.network_active = active
        if not active:
            for pending in list(self._connecting.values()):
                pending.cancel()
            self._connecting.clear()
            for peer in list(self.peers.values()):
                peer.disconnect("network not active", abort=True)
        else:
            self._retry_at.clear()

    def ping_all(self) -> None:
        """The ``ping`` RPC: a ping to every connected peer now."""
        for peer in self.handshaked_peers():
            peer.send_ping()

    # ------------------------------------------------------------ base handlers

    def _on_ping(self, peer: PeerProtocol, message: PingMessage) -> None:
        peer.send(PongMessage(message.nonce))

    def _on_pong(self, peer: PeerProtocol, message: PongMessage) -> None:
        """Core's pong handling: latency of a matching nonce; mismatches only logged."""
        now = self.now()
        problem = ""
        finished = False
        if peer.ping_nonce_sent:
            if message.nonce == peer.ping_nonce_sent:
                finished = True
                elapsed = now - peer.ping_start
                if elapsed >= 0:
                    peer.ping_time = elapsed
                    peer.min_ping = elapsed if peer.min_ping is None else min(peer.min_ping,
                                                                              elapsed)
                else:
                    problem = "Timing mishap"
            else:
                problem = "Nonce mismatch"
                if message.nonce == 0:
                    finished = True
                    problem = "Nonce zero"
        else:
            problem = "Unsolicited pong without ping"
        if problem:
            log.debug("pong peer={id}: {problem}, {expected:x} expected, {got:x} received",
                      id=peer.id, problem=problem, expected=peer.ping_nonce_sent,
                      got=message.nonce)
        if finished:
            peer.ping_nonce_sent = 0

    def _on_addr(self, peer: PeerProtocol, message: AddrMessage) -> Optional[Deferred]:
        """Core's addr handling: remember, relay small fresh announcements to two peers.

        Addresses beyond the peer's rate limit (``peer.addr_bucket``) are dropped
        first; every ``ADDR_FLOOD_UNIT`` dropped scores ``ADDR_FLOOD_BAN_SCORE``, and the
        peer is not read for ``ADDR_FLOOD_HOLD`` per dropped address, so a flood costs
        the reactor little more than what it may send.
        """
        now = int(self.adjusted_time())
        since = now - 10 * 60
        good: List[NetAddress] = []
        count = len(message.addresses)
        bucket = peer.addr_bucket
        bucket.refill(self.now())
        dropped = 0
        for addr in message.addresses:
            if not bucket.take():
                dropped += 1
                continue
            if not addr.services & NODE_NETWORK:
                continue
            seen = addr.time if addr.time is not None else 0
            if seen <= 100000000 or seen > now + 10 * 60:
                addr = addr.with_time(max(0, now - 5 * 86400))
            peer.known_addresses.add((addr.ip, addr.port))
            if addr.time > since and not peer.getaddr_sent and count <= 10 \
                    and addr.is_routable():
                self._relay_address(addr, peer)
            good.append(addr)
        self.addrman.add(good, source=peer.address, penalty=2 * 60 * 60)
        if count < MAX_ADDR_TO_SEND:
            peer.getaddr_sent = False
        if not dropped:
            return None
        self._addr_rate_limited(peer, dropped)
        return peer.hold(dropped * ADDR_FLOOD_HOLD)

    def _addr_rate_limited(self, peer: PeerProtocol, dropped: int) -> None:
        before = peer.addr_rate_limited
        peer.addr_rate_limited += dropped
        log.debug("addr from peer={id}: {dropped} addresses over the rate limit ({total} in "
                  "all)", id=peer.id, dropped=dropped, total=peer.addr_rate_limited)
        units = peer.addr_rate_limited // ADDR_FLOOD_UNIT - before // ADDR_FLOOD_UNIT
        if units:
            peer.misbehaving(ADDR_FLOOD_BAN_SCORE * units, "addr flood (%d addresses over the "
                             "rate limit)" % peer.addr_rate_limited)

    def _relay_address(self, addr: NetAddress, source: PeerProtocol) -> None:
        candidates = [p for p in self.handshaked_peers() if p is not source]
        for target in random.sample(candidates, min(2, len(candidates))):
            target.push_address(addr)

    def _on_getaddr(self, peer: PeerProtocol, message: GetAddrMessage) -> None:
        """Answer once per inbound connection (outbound ones are ignored: fingerprinting)."""
        if not peer.inbound:
            log.debug("Ignoring \"getaddr\" from outbound connection. peer={id}", id=peer.id)
            return
        if peer.getaddr_answered:
            log.debug("Ignoring repeated \"getaddr\". peer={id}", id=peer.id)
            return
        peer.getaddr_answered = True
        peer.addr_to_send = []
        for addr in self.addrman.get_addr():
            peer.push_address(addr)
        peer.flush_addresses()

    def _on_feefilter(self, peer: PeerProtocol, message: FeeFilterMessage) -> None:
        if 0 <= message.fee_rate <= _MAX_MONEY:
            peer.fee_filter = message.fee_rate
            log.debug("received: feefilter of {rate} from peer={id}", rate=message.fee_rate,
                      id=peer.id)

    def _on_sendheaders(self, peer: PeerProtocol, message: SendHeadersMessage) -> None:
        peer.prefer_headers = True

    def _on_reject(self, peer: PeerProtocol, message: RejectMessage) -> None:
        log.debug("Reject {message} code {code}: {reason} peer={id}", message=message.message,
                  code=message.code, reason=message.reason, id=peer.id)


def _in_network(ip: str, net: Network) -> bool:
    try:
        addr = normalize_ip(ip)
    except ValueError:
        return False
    return addr.version == net.version and addr in net

