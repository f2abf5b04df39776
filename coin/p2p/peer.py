"""One P2P connection: framing, the version handshake, ping, addr, misbehaviour.

:class:`PeerProtocol` is a Twisted protocol owned by the connection manager
(:class:`coin.p2p.connman.P2PService`, called ``connman`` here).  It decodes the
byte stream with :class:`~coin.p2p.messages.MessageDecoder`, runs the
version/verack handshake itself and hands every other message of a fully
connected peer to ``connman.handlers[command](peer, message)``.  The base
handlers (ping, pong, addr, getaddr, feefilter, sendheaders, reject) are
registered there too; the sync and relay layers add theirs.

Flow control and memory bounds
    * Receive: the decoder holds at most one header and one payload
      (``MAX_PROTOCOL_MESSAGE_LENGTH``); a larger announced length disconnects
      before any payload is buffered.  Messages decoded from one read are
      queued and processed in order; a handler may return a Deferred, and
      while it is pending the peer stops reading its socket (Twisted's
      ``pauseProducing``), so a peer cannot queue unbounded work.  With
      ``-maxreceivebuffer`` reading goes on meanwhile until the queued messages
      pass that many bytes (Core's ``fPauseRecv``), and resumes once they are
      processed.
    * Send: the peer registers itself as a streaming producer on its own
      transport.  When the transport's write buffer exceeds its ``bufferSize``
      (64 KiB, or ``-maxsendbuffer``) Twisted calls :meth:`pauseProducing`: the peer then stops
      reading (a peer that does not read gets no more answers, like Core's
      ``fPauseSend``) and counts the bytes written while paused.  More than
      ``MAX_SEND_BUFFER`` such bytes disconnects it.  :meth:`when_drained`
      lets bulk senders (block download) wait for the buffer to empty.
    * ``known_inventory`` and ``known_addresses`` are bounded sets; ``addr``
      relay queues are capped at ``MAX_ADDR_TO_SEND``; addresses received are
      processed at most at the rate of ``addr_bucket`` (the rest dropped).
"""

from __future__ import annotations

import random
from collections import OrderedDict, deque
from typing import TYPE_CHECKING, Any, Callable, Deque, Dict, Hashable, List, Optional, Tuple

from twisted.internet import protocol
from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IDelayedCall, IPushProducer, ITCPTransport
from twisted.logger import Logger
from twisted.python.failure import Failure
from zope.interface import implementer

from coin.consensus.errors import REJECT_DUPLICATE, REJECT_MALFORMED, REJECT_OBSOLETE
from coin.p2p.banman import normalize_ip
from coin.p2p.messages import (
    FEEFILTER_VERSION,
    HEADER_SIZE,
    MAX_REJECT_MESSAGE_LENGTH,
    MESSAGE_TYPES,
    RECEIVED_TYPES,
    MIN_PEER_PROTO_VERSION,
    NODE_NETWORK,
    PROTOCOL_VERSION,
    SENDHEADERS_VERSION,
    AddrMessage,
    FeeFilterMessage,
    GetAddrMessage,
    InvalidMessage,
    MessageDecoder,
    PingMessage,
    ProtocolViolation,
    RejectMessage,
    SendHeadersMessage,
    VerackMessage,
    VersionMessage,
    decode_payload,
    encode_message,
)
from coin.p2p.netaddr import NetAddress

if TYPE_CHECKING:
    from coin.p2p.connman import P2PService

log = Logger()

#: Bytes a peer may have written to it while its transport's buffer is full.
MAX_SEND_BUFFER = 5 * 1000 * 1000
#: Entries remembered in ``known_inventory`` (oldest forgotten first).
MAX_KNOWN_INVENTORY = 5000
#: Addresses remembered as known to the peer (Core's addrKnown holds 5000).
MAX_KNOWN_ADDRESSES = 5000
#: Most addresses queued for relay to one peer.
MAX_ADDR_TO_SEND = 1000
#: addr processing limit per peer (Core 22's MAX_ADDR_RATE_PER_SECOND and
#: MAX_ADDR_PROCESSING_TOKEN_BUCKET): tokens refill at 0.1 per second up to 1,000, one
#: per address processed; a getaddr we send grants 1,000 more for the answer.
ADDR_RATE_PER_SECOND = 0.1
ADDR_TOKEN_BUCKET_MAX = 1000
#: Tokens of a new peer (Core 22: 1; ours 10, so a peer's first announcement -- Core
#: relays at most 10 addresses at once -- is processed whole).
ADDR_INITIAL_TOKENS = 10
#: Ban score for a payload that does not parse (Core 0.17 gives 0 and a reject; we count
#: it so a peer feeding garbage is banned after ten such messages).
MALFORMED_BAN_SCORE = 10
#: Per-message byte counters use this key for commands the node does not know (Core).
OTHER_COMMAND = "*other*"
#: Commands counted under their own name in bytessent/bytesrecv_per_msg.
_KNOWN_COMMANDS = frozenset(MESSAGE_TYPES) | frozenset((
    "merkleblock", "filterload", "filteradd", "filterclear", "sendcmpct", "cmpctblock",
    "getblocktxn", "blocktxn"))
#: Core's SAFE_CHARS_DEFAULT, for the peer's user agent.
_SAFE_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,;-_/:?@()")


def sanitize_string(text: str) -> str:
    """Core's SanitizeString: keep only the characters safe to log and show."""
    return "".join(c for c in text if c in _SAFE_CHARS)


def random_nonce() -> int:
    """A random non-zero 64-bit nonce."""
    return random.SystemRandom().randrange(1, 1 << 64)


class BoundedSet:
    """A set keeping at most ``limit`` items; adding beyond it forgets the oldest."""

    __slots__ = ("limit", "_items")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._items: "OrderedDict[Hashable, None]" = OrderedDict()

    def add(self, item: Hashable) -> None:
        items = self._items
        if item in items:
            items.move_to_end(item)
            return
        items[item] = None
        if len(items) > self.limit:
            items.popitem(last=False)

    def discard(self, item: Hashable) -> None:
        self._items.pop(item, None)

    def __contains__(self, item: object) -> bool:
        return item in self._items

    def __len__(self) -> int:
        return len(self._items)


class TokenBucket:
    """Tokens refilling at ``rate`` per second up to ``capacity`` (a rate limit)."""

    __slots__ = ("rate", "capacity", "tokens", "stamp")

    def __init__(self, rate: float, capacity: float, tokens: float, now: float) -> None:
        self.rate = rate
        self.capacity = capacity
        self.tokens = tokens
        self.stamp = now

    def refill(self, now: float) -> None:
        """Add what accrued since the last refill (never beyond the capacity)."""
        if self.tokens < self.capacity:
            self.tokens = min(self.capacity, self.tokens + max(0.0, now - self.stamp) * self.rate)
        self.stamp = now

    def take(self) -> bool:
        """Spend one token; False (nothing spent) when there is none."""
        if self.tokens < 1.0:
            return False
        self.tokens -= 1.0
        return True

    def grant(self, tokens: float) -> None:
        """Extra tokens, beyond the capacity if need be (an answer we asked for)."""
        self.tokens += tokens


@implementer(IPushProducer)
class PeerProtocol(protocol.Protocol):
    """A connected peer, inbound or outbound.

    Public state the RPCs and the sync/relay layers read (and, where noted, write):
    ``id``, ``inbound``, ``manual``, ``addr_name``, ``address`` (a NetAddress with the
    peer's services once known), ``version``, ``services``, ``subver``,
    ``starting_height``, ``relay``, ``time_offset``, ``successfully_connected``,
    ``prefer_headers`` (peer sent sendheaders), ``fee_filter`` (peer's feefilter, base
    units per kB), ``ban_score``, ping state, byte counters, ``synced_headers`` and
    ``synced_blocks`` (-1 until the sync layer sets them), ``inflight`` (block hash ->
    height, owned by the sync layer), ``known_inventory`` (bounded set of inventory the
    peer has or was sent), ``last_block_time`` and ``last_tx_time`` (when it last gave us a
    new block / a transaction accepted to the pool, set by the sync and relay layers for
    inbound eviction), ``addr_bucket`` and ``addr_rate_limited`` (the addr rate limit) and
    ``state`` (a dict for other layers' per-peer data).
    """

    def __init__(self, connman: "P2PService", inbound: bool, addr_name: Optional[str] = None,
                 manual: bool = False) -> None:
        self.connman = connman
        self.inbound = inbound
        #: Outbound: the target as given (-connect, -addnode, addnode RPC) or ip:port.
        self.addr_name = addr_name or ""
        self.manual = manual
        self.id = -1
        self.address: Optional[NetAddress] = None
        self.local_address: Optional[NetAddress] = None
        #: What the peer says our address is (its version's addr_recv), if valid.
        self.addr_local: Optional[str] = None
        #: Payload sizes of the messages decoded by the current feed, by object id.
        self._sizes: Dict[int, int] = {}
        self.decoder = MessageDecoder(connman.params.message_start, decode=self._decode)
        # Handshake.
        self.local_nonce = random_nonce()
        self.version = 0
        self.services = 0
        self.subver = ""
        self.starting_height = -1
        self.relay = False
        self.time_offset = 0
        self.version_received = False
        self.version_sent = False
        self.successfully_connected = False
        # Peer preferences.
        self.prefer_headers = False
        self.fee_filter = 0
        # Ping.
        self.ping_nonce_sent = 0
        self.ping_start = 0.0
        self.ping_time: Optional[float] = None
        self.min_ping: Optional[float] = None
        # Accounting.
        self.conn_time = 0.0
        self.last_send = 0.0
        self.last_recv = 0.0
        self.bytes_sent = 0
        self.bytes_recv = 0
        self.bytes_sent_per_msg: Dict[str, int] = {}
        self.bytes_recv_per_msg: Dict[str, int] = {}
        self.ban_score = 0
        # For the sync and relay layers.
        self.synced_headers = -1
        self.synced_blocks = -1
        self.inflight: Dict[bytes, int] = {}
        self.known_inventory = BoundedSet(MAX_KNOWN_INVENTORY)
        self.state: Dict[str, Any] = {}
        # addr handling.
        self.known_addresses = BoundedSet(MAX_KNOWN_ADDRESSES)
        self.addr_to_send: List[NetAddress] = []
        self.getaddr_sent = False
        self.getaddr_answered = False
        self.addr_bucket = TokenBucket(ADDR_RATE_PER_SECOND, ADDR_TOKEN_BUCKET_MAX,
                                       ADDR_INITIAL_TOKENS, connman.now())
        #: Addresses dropped by the rate limit (scored per connman.ADDR_FLOOD_UNIT).
        self.addr_rate_limited = 0
        # For inbound eviction: when the peer last gave us a new block, a new transaction.
        self.last_block_time = 0.0
        self.last_tx_time = 0.0
        # Flow control.
        self.disconnecting = False
        self.disconnect_reason = ""
        #: Decoded messages waiting to be processed, with their wire sizes.
        self._queue: Deque[Tuple[Any, int]] = deque()
        self._queued_bytes = 0
        self._busy: Optional[Deferred] = None
        self._processing = False
        self._reading_paused = False
        self.send_paused = False
        self._written_while_paused = 0
        self._drain_waiters: List[Deferred] = []
        self._connected = False
        #: Timers of this connection (see :meth:`call_later`).
        self._timers: List[IDelayedCall] = []

    def layer_state(self, name: str, factory: Callable[[], Any]) -> Any:
        """This peer's state object of a protocol layer (sync, relay), made on first use."""
        value = self.state.get(name)
        if value is None:
            value = self.state[name] = factory()
        return value

    # ------------------------------------------------------------ description

    @property
    def addr(self) -> str:
        """getpeerinfo's ``addr``: the name connected to, or the remote ip:port."""
        if self.addr_name:
            return self.addr_name
        return str(self.address) if self.address is not None else ""

    @property
    def ip(self) -> str:
        return self.address.ip if self.address is not None else ""

    def __repr__(self) -> str:
        return "<peer=%d %s %s>" % (self.id, "inbound" if self.inbound else "outbound", self.addr)

    # ------------------------------------------------------------ connection

    def connectionMade(self) -> None:
        self._connected = True
        now = self.connman.now()
        self.conn_time = now
        self.address = _net_address(self.transport.getPeer())
        self.local_address = _net_address(self.transport.getHost())
        if not self.addr_name and not self.inbound and self.address is not None:
            self.addr_name = str(self.address)
        if self.connman.settings.max_send_buffer is not None:
            self.transport.bufferSize = self.connman.settings.max_send_buffer  # -maxsendbuffer
        if ITCPTransport.providedBy(self.transport):
            # Core disables Nagle's algorithm on every P2P socket: otherwise what follows a
            # small message (a getdata, a short headers reply) can wait for the other
            # side's delayed ACK, 40 ms on Linux -- seen as 42 ms before the first block
            # of a sync arrived (bench/sync.py --timeline).
            self.transport.setTcpNoDelay(True)
        self.transport.registerProducer(self, True)
        if not self.connman.peer_connected(self):
            self.disconnect("refused by connection manager", abort=True)
            return
        if not self.inbound:
            self.send_version()

    def connectionLost(self, reason: Failure = protocol.connectionDone) -> None:
        self._connected = False
        self.disconnecting = True
        self._drop_queue()
        waiters, self._drain_waiters = self._drain_waiters, []
        for d in waiters:
            d.cancel()
        for call in self._timers:
            if call.active():
                call.cancel()
        self._timers = []
        self.connman.peer_disconnected(self)

    @property
    def is_open(self) -> bool:
        """Connected and not being disconnected."""
        return self._connected and not self.disconnecting

    def disconnect(self, reason: str = "", abort: bool = False) -> None:
        """Close the connection; ``abort`` drops unsent data at once.

        Without ``abort`` buffered data is flushed first, and the connection is
        aborted anyway after ``connman.disconnect_grace`` seconds.
        """
        if self.disconnecting:
            if abort and self.transport is not None:
                self.transport.abortConnection()
            return
        self.disconnecting = True
        self.disconnect_reason = reason
        if reason:
            log.debug("disconnecting peer={id}: {reason}", id=self.id, reason=reason)
        self._drop_queue()
        if self.transport is None:
            return
        if abort:
            self.transport.abortConnection()
            return
        self.transport.loseConnection()
        self.call_later(self.connman.disconnect_grace, self._abort_if_open)

    def _abort_if_open(self) -> None:
        if self._connected and self.transport is not None:
            self.transport.abortConnection()

    def call_later(self, delay: float, f: Callable[..., Any], *args: Any) -> IDelayedCall:
        """``reactor.callLater`` for this connection: cancelled when it closes, so that no
        timer outlives the peer (a stopped node leaves none behind)."""
        self._timers = [call for call in self._timers if call.active()]
        call = self.connman.reactor.callLater(delay, f, *args)
        self._timers.append(call)
        return call

    def hold(self, seconds: float) -> Deferred:
        """What a handler returns to stop reading this peer for ``seconds``; never fires if
        the connection goes first."""
        d: Deferred = Deferred()
        self.call_later(seconds, d.callback, None)
        return d

    # ------------------------------------------------------------ producer (send side)

    def pauseProducing(self) -> None:
        """The transport's write buffer is full: stop reading from the peer."""
        self.send_paused = True
        self._written_while_paused = 0
        self._update_reading()

    def resumeProducing(self) -> None:
        """The write buffer drained."""
        self.send_paused = False
        self._written_while_paused = 0
        waiters, self._drain_waiters = self._drain_waiters, []
        for d in waiters:
            d.callback(self)
        self._update_reading()
        if self._queue and self._busy is None:
            self._process_queue()

    def stopProducing(self) -> None:
        self.disconnecting = True

    def when_drained(self) -> Deferred:
        """Fires (with the peer) once the send buffer is below the transport's limit."""
        d: Deferred = Deferred()
        if not self.send_paused:
            d.callback(self)
        else:
            self._drain_waiters.append(d)
        return d

    def _update_reading(self) -> None:
        if self.transport is None or not self._connected or self.disconnecting:
            return
        pause = self.send_paused or (self._busy is not None and self._receive_buffer_full())
        if pause and not self._reading_paused:
            self._reading_paused = True
            self.transport.pauseProducing()
        elif not pause and self._reading_paused:
            self._reading_paused = False
            self.transport.resumeProducing()

    def _receive_buffer_full(self) -> bool:
        limit = self.connman.settings.max_receive_buffer
        return limit is None or self._queued_bytes > limit

    def _drop_queue(self) -> None:
        self._queue.clear()
        self._queued_bytes = 0

    # ------------------------------------------------------------ sending

    def send(self, message: Any) -> None:
        """Send one message (a messages.py payload object); dropped once disconnecting."""
        if self.disconnecting or self.transport is None:
            return
        data = encode_message(self.connman.params.message_start, message)
        size = len(data)
        key = message.command if message.command in _KNOWN_COMMANDS else OTHER_COMMAND
        self.bytes_sent += size
        self.bytes_sent_per_msg[key] = self.bytes_sent_per_msg.get(key, 0) + size
        self.connman.total_bytes_sent += size
        self.connman.upload.record(size)
        self.last_send = self.connman.now()
        if self.send_paused:
            self._written_while_paused += size
            if self._written_while_paused > MAX_SEND_BUFFER:
                self.disconnect("send buffer full", abort=True)
                return
        self.transport.write(data)

    def send_version(self) -> None:
        connman = self.connman
        addr_you = self.address if self.address is not None else NetAddress(0, "0.0.0.0", 0)
        message = VersionMessage(
            version=PROTOCOL_VERSION, services=connman.local_services,
            timestamp=int(connman.adjusted_time()),
            addr_recv=NetAddress(self.services, addr_you.ip, addr_you.port),
            addr_from=NetAddress(connman.local_services, "0.0.0.0", 0),
            nonce=self.local_nonce, user_agent=connman.user_agent,
            start_height=connman.start_height(), relay=not connman.settings.blocks_only)
        self.version_sent = True
        self.send(message)
        log.debug("send version message: version {version}, blocks={height}, us={us}, "
                  "peer={id}", version=PROTOCOL_VERSION, height=message.start_height,
                  us="0.0.0.0:0", id=self.id)

    def send_ping(self) -> None:
        """Send a ping with a fresh nonce (replacing an outstanding one, as Core)."""
        if not self.successfully_connected or self.disconnecting:
            return
        self.ping_nonce_sent = random_nonce()
        self.ping_start = self.connman.now()
        self.send(PingMessage(self.ping_nonce_sent))

    def push_address(self, addr: NetAddress) -> None:
        """Queue ``addr`` for the next addr message unless the peer knows it (Core)."""
        key = (addr.ip, addr.port)
        if key in self.known_addresses:
            return
        if len(self.addr_to_send) >= MAX_ADDR_TO_SEND:
            self.addr_to_send[random.randrange(MAX_ADDR_TO_SEND)] = addr
        else:
            self.addr_to_send.append(addr)

    # ------------------------------------------------------------ receiving

    def dataReceived(self, data: bytes) -> None:
        if self.disconnecting:
            return
        self.bytes_recv += len(data)
        self.connman.total_bytes_recv += len(data)
        self.last_recv = self.connman.now()
        try:
            items = self.decoder.feed(data)
        except ProtocolViolation as e:
            log.info("peer={id} ({addr}): {reason}; disconnecting", id=self.id, addr=self.addr,
                     reason=e.reason)
            if e.ban_score:
                self.misbehaving(e.ban_score, e.reason)
            self.disconnect(e.reason, abort=True)
            return
        finally:
            sizes, self._sizes = self._sizes, {}
        for item in items:
            size = sizes.get(id(item))
            if size is None:
                size = len(item.payload)  # InvalidMessage items carry theirs
            key = item.command if item.command in _KNOWN_COMMANDS else OTHER_COMMAND
            wire_size = size + HEADER_SIZE
            self.bytes_recv_per_msg[key] = self.bytes_recv_per_msg.get(key, 0) + wire_size
            self._queue.append((item, wire_size))
            self._queued_bytes += wire_size
        self._process_queue()

    def _decode(self, command: str, payload: bytes) -> Any:
        message = decode_payload(command, payload, RECEIVED_TYPES)
        self._sizes[id(message)] = len(payload)
        return message

    def _process_queue(self) -> None:
        if self._processing:
            return
        self._processing = True
        try:
            # Like Core's fPauseSend: no processing while the peer is not reading ours.
            while self._queue and self._busy is None and not self.send_paused \
                    and not self.disconnecting:
                item, size = self._queue.popleft()
                self._queued_bytes -= size
                try:
                    result = self._process(item)
                except Exception:
                    log.failure("error processing {command} from peer={id}",
                                command=getattr(item, "command", "?"), id=self.id)
                    continue
                if isinstance(result, Deferred):
                    if result.called:
                        result.addErrback(self._handler_failed, item)
                        continue
                    self._busy = result
                    result.addErrback(self._handler_failed, item)
                    result.addBoth(self._handler_done)
        finally:
            self._processing = False
        self._update_reading()

    def _handler_failed(self, failure: Failure, item: Any) -> None:
        log.failure("error processing {command} from peer={id}", failure,
                    command=getattr(item, "command", "?"), id=self.id)

    def _handler_done(self, _: Any) -> None:
        self._busy = None
        self._update_reading()
        self._process_queue()

    def _process(self, item: Any) -> Optional[Deferred]:
        if isinstance(item, InvalidMessage):
            self.invalid(item)
            return None
        command = item.command
        if not self.version_received:
            if command != "version":
                self.misbehaving(1, "non-version message before version handshake")
                return None
            self._on_version(item)
            return None
        if command == "version":
            self.send(RejectMessage("version", REJECT_DUPLICATE, "Duplicate version message"))
            self.misbehaving(1, "duplicate version message")
            return None
        if command == "verack":
            self._on_verack()
            return None
        if not self.successfully_connected:
            self.misbehaving(1, "message %s before verack" % command)
            return None
        handler = self.connman.handlers.get(command)
        if handler is None:
            log.debug("ignoring {command} from peer={id}", command=command, id=self.id)
            return None
        return handler(self, item)

    def invalid(self, item: InvalidMessage) -> None:
        """A framed message that cannot be processed: reject, score, maybe disconnect."""
        violation = item.violation
        score = violation.ban_score
        log.info("peer={id} ({addr}): {command}: {reason}", id=self.id, addr=self.addr,
                 command=item.command, reason=violation.reason)
        if violation.reject_code == REJECT_MALFORMED:
            score = max(score, MALFORMED_BAN_SCORE)
        if violation.reject_code is not None:
            try:
                self.send(RejectMessage(item.command, violation.reject_code,
                                        violation.reason[:MAX_REJECT_MESSAGE_LENGTH]))
            except ValueError:
                pass  # a command that cannot be echoed back
        if score:
            self.misbehaving(score, violation.reason)
        if violation.disconnect:
            self.disconnect(violation.reason, abort=True)

    # ------------------------------------------------------------ handshake

    def _on_version(self, message: VersionMessage) -> None:
        connman = self.connman
        self.version_received = True
        if not self.inbound and not self.manual and not message.services & NODE_NETWORK:
            log.info("peer={id} does not offer the expected services ({offered:08x} offered, "
                     "{expected:08x} expected); disconnecting", id=self.id,
                     offered=message.services, expected=NODE_NETWORK)
            self.disconnect("missing services")
            return
        if message.version < MIN_PEER_PROTO_VERSION:
            log.info("peer={id} using obsolete version {version}; disconnecting", id=self.id,
                     version=message.version)
            self.send(RejectMessage("version", REJECT_OBSOLETE,
                                    "Version must be %d or greater" % MIN_PEER_PROTO_VERSION))
            self.disconnect("obsolete version")
            return
        if self.inbound and connman.is_local_nonce(message.nonce):
            log.info("connected to self at {addr}, disconnecting", addr=self.addr)
            self.disconnect("connected to self", abort=True)
            return
        self.version = message.version
        self.services = message.services
        self.subver = sanitize_string(message.user_agent)
        self.starting_height = message.start_height
        self.relay = message.relay
        if self.address is not None:
            self.address = NetAddress(message.services, self.address.ip, self.address.port)
        if message.addr_recv.is_valid() and message.addr_recv.port:
            self.addr_local = str(message.addr_recv)
        if self.inbound:
            self.send_version()
        self.send(VerackMessage())
        self.time_offset = message.timestamp - int(connman.node_time())
        connman.add_time_data(self.ip, self.time_offset)
        log.info("receive version message: {subver}: version {version}, blocks={height}, "
                 "us={us}, peer={id}", subver=self.subver, version=self.version,
                 height=self.starting_height, us=self.addr_local or "", id=self.id)

    def _on_verack(self) -> None:
        if self.successfully_connected:
            return
        if self.version >= SENDHEADERS_VERSION:
            # Tell the peer we prefer headers to inv announcements (BIP 130).
            self.send(SendHeadersMessage())
        self.successfully_connected = True
        if not self.inbound:
            log.info("New outbound peer connected: version: {version}, blocks={height}, "
                     "peer={id}", version=self.version, height=self.starting_height, id=self.id)
            self.getaddr_sent = True
            self.addr_bucket.grant(MAX_ADDR_TO_SEND)
            self.send(GetAddrMessage())
        self.send_ping()
        if self.version >= FEEFILTER_VERSION and self.connman.fee_filter_rate is not None:
            rate = self.connman.fee_filter_rate()
            if rate is not None:
                self.send(FeeFilterMessage(rate))
        self.connman.peer_handshake_done(self)

    # ------------------------------------------------------------ misbehaviour

    def misbehaving(self, score: int, reason: str = "") -> None:
        """Core's Misbehaving: add ``score``; at -banscore the peer is banned and dropped."""
        if score <= 0:
            return
        before = self.ban_score
        self.ban_score += score
        threshold = self.connman.ban_threshold
        if before < threshold <= self.ban_score:
            log.info("Misbehaving: {addr} peer={id} ({before} -> {after}) BAN THRESHOLD "
                     "EXCEEDED: {reason}", addr=self.addr, id=self.id, before=before,
                     after=self.ban_score, reason=reason)
            self.connman.ban_misbehaving(self)
        else:
            log.info("Misbehaving: {addr} peer={id} ({before} -> {after}): {reason}",
                     addr=self.addr, id=self.id, before=before, after=self.ban_score,
                     reason=reason)

    # ------------------------------------------------------------ periodic work

    def tick(self, now: float) -> None:
        """Pings, timeouts and addr flushing; called by the connection manager."""
        if self.disconnecting:
            return
        connman = self.connman
        if not self.successfully_connected:
            if now - self.conn_time > connman.handshake_timeout:
                log.info("peer={id} ({addr}): no handshake within {t} seconds, disconnecting",
                         id=self.id, addr=self.addr, t=connman.handshake_timeout)
                self.disconnect("handshake timeout", abort=True)
            return
        # Core's InactivityCheck order: send, receive, then ping timeouts.
        if now - self.last_send > connman.timeout_interval:
            log.info("socket sending timeout: {s}s peer={id}", s=now - self.last_send, id=self.id)
            self.disconnect("send timeout", abort=True)
            return
        if now - self.last_recv > connman.timeout_interval:
            log.info("socket receive timeout: {s}s peer={id}", s=now - self.last_recv, id=self.id)
            self.disconnect("receive timeout", abort=True)
            return
        if self.ping_nonce_sent:
            if now - self.ping_start > connman.timeout_interval:
                log.info("ping timeout: {seconds}s peer={id}", seconds=now - self.ping_start,
                         id=self.id)
                self.disconnect("ping timeout", abort=True)
                return
        elif now - self.ping_start >= connman.ping_interval:
            self.send_ping()
        if self.addr_to_send and not self.send_paused:
            self.flush_addresses()

    def flush_addresses(self) -> None:
        """Send queued addresses the peer does not know, at most 1000 per message."""
        batch: List[NetAddress] = []
        for addr in self.addr_to_send:
            key = (addr.ip, addr.port)
            if key in self.known_addresses or addr.time is None:
                continue
            self.known_addresses.add(key)
            batch.append(addr)
            if len(batch) == MAX_ADDR_TO_SEND:
                self.send(AddrMessage(tuple(batch)))
                batch = []
        if batch:
            self.send(AddrMessage(tuple(batch)))
        self.addr_to_send = []


def _net_address(address: Any) -> Optional[NetAddress]:
    """A Twisted IPv4Address/IPv6Address -> NetAddress (IPv4-mapped made IPv4)."""
    host = getattr(address, "host", None)
    port = getattr(address, "port", None)
    if host is None or port is None:
        return None
    try:
        return NetAddress(0, str(normalize_ip(host)), int(port))
    except ValueError:
        return None
