"""The P2P wire format: message framing, a stream decoder and the payload types.

Bitcoin-family protocol at version 70208, as Core 0.12 / Dash 0.12 define it.  This module
is pure (no sockets, no Twisted): the peer protocol feeds received bytes to a
:class:`MessageDecoder` and sends what :func:`encode_message` returns.

Framing
    A message is a 24-byte header -- the network's 4-byte message start, a 12-byte
    NUL-padded ASCII command, the uint32 payload length and the first 4 bytes of
    SHA256d(payload) -- followed by the payload.

Limits
    ``MAX_PROTOCOL_MESSAGE_LENGTH`` (4,000,000 bytes, Core 0.13+'s value; Dash uses 3 MiB,
    Core 0.12 2 MiB; our largest message, a 2,000,000-byte block, fits all of them) is the
    decoder's default payload limit.  ``MAX_SIZE`` (0x02000000, from
    :mod:`coin.primitives.serialize`) bounds every CompactSize count inside a payload.

Errors, and what Core does with them
    * Stream errors -- wrong message start, a payload length over the limit -- leave the
      stream unusable: :meth:`MessageDecoder.feed` raises :class:`ProtocolViolation` with
      ``disconnect=True`` (Core disconnects, without adding to the ban score).  The length
      is checked as soon as the header is complete, before any payload is buffered.
    * Errors inside one well-framed message -- a bad checksum, an invalid command, a
      payload that does not parse, a vector over its limit -- do not desynchronise the
      stream.  ``feed`` returns them in order among the good messages as
      :class:`InvalidMessage` items carrying the :class:`ProtocolViolation` (a
      :class:`BadChecksum` for checksum errors), and carries on with the next frame.  The
      peer layer applies ``ban_score`` (Core's Misbehaving), sends a ``reject`` when
      ``reject_code`` is set, and disconnects when ``disconnect`` is set.  Core's choices:
      bad checksum and invalid command -- the message is dropped and logged (score 0);
      malformed payload -- ``reject`` with REJECT_MALFORMED (score 0); more than
      MAX_ADDR_TO_SEND addresses, MAX_INV_SZ inventory entries or MAX_HEADERS_RESULTS
      headers -- score 20.  Two checks Core 0.12 does not make: a ``headers`` entry with a
      non-zero transaction count (Core ignores the count; we score it 20 like the other
      headers abuses) and a locator longer than MAX_LOCATOR_SZ (Core 0.17+ disconnects;
      so do we).  Vector counts are checked before the entries are parsed.
    * Unknown commands (Dash's masternode and governance messages, bloom filters, ...)
      are returned as :class:`UnknownMessage`; Core ignores them.

Strictness
    Payloads must be consumed exactly: trailing bytes make a message malformed.  The
    exception is ``version``, parsed as Core does: everything after ``addr_recv`` is
    optional (missing fields take Core's defaults, ``relay`` defaults to true) and bytes
    after ``relay`` are ignored.  ``reject`` may end with a 32-byte hash: Core sends one
    when it rejects a ``block`` or ``tx`` as invalid, Dash for its own inventory messages,
    but Core's reject for a malformed message carries none, even for ``block``/``tx``; so
    the hash is optional for every command (Core 0.12's reader requires it for block/tx,
    but only logs the failure -- never a reason to answer with another ``reject``).
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass, field
from typing import Callable, ClassVar, Dict, List, Mapping, Optional, Sequence, Tuple, Type, Union

from coin.consensus.errors import REJECT_MALFORMED
from coin.p2p.bloom import BloomFilter
from coin.p2p.netaddr import NetAddress, bytes_to_ip, ip_to_bytes
from coin.primitives.block import Block, BlockHeader
from coin.primitives.hashes import sha256d
from coin.primitives.serialize import (
    ByteReader,
    DeserializationError,
    compact_size,
    i32,
    i64,
    u32,
    u64,
    var_bytes,
)
from coin.primitives.transaction import OutPoint, Transaction

# -- protocol versions (Dash 0.12) ------------------------------------------------------

PROTOCOL_VERSION = 70208
#: Version assumed until the handshake completes.
INIT_PROTO_VERSION = 209
#: Peers announcing an older version are sent ``reject`` (obsolete) and dropped (issue #13:
#: Core-era test tools speak 70002 and up).  The reference node (dimecoin 2.3.0.0) keeps
#: only 70007 and up; Core 0.17 keeps 31800 and up, Dash 0.12.3 70208 and up.
MIN_PEER_PROTO_VERSION = 70002
#: ``sendheaders`` and header announcements (Dash's and the reference node's number).
SENDHEADERS_VERSION = 70201
#: ``feefilter`` (Dash's and the reference node's number; Core's is 70013).
FEEFILTER_VERSION = 70208

# -- service bits -----------------------------------------------------------------------

NODE_NONE = 0
NODE_NETWORK = 1
NODE_GETUTXO = 2
NODE_BLOOM = 4

# -- limits -----------------------------------------------------------------------------

MESSAGE_START_SIZE = 4
COMMAND_SIZE = 12
HEADER_SIZE = MESSAGE_START_SIZE + COMMAND_SIZE + 4 + 4
CHECKSUM_SIZE = 4
MAX_PROTOCOL_MESSAGE_LENGTH = 4 * 1000 * 1000
MAX_INV_SZ = 50000
MAX_ADDR_TO_SEND = 1000
MAX_HEADERS_RESULTS = 2000
MAX_LOCATOR_SZ = 101
MAX_SUBVERSION_LENGTH = 256
MAX_REJECT_MESSAGE_LENGTH = 111

#: Core's Misbehaving() score for oversized addr/inv/getdata/headers messages.
OVERSIZED_VECTOR_BAN_SCORE = 20

# -- inventory types --------------------------------------------------------------------

MSG_TX = 1
MSG_BLOCK = 2
MSG_FILTERED_BLOCK = 3
#: Core 0.17's (BIP152); the reason the reference node moved Dash's types to 1000 and up.
MSG_CMPCT_BLOCK = 4
#: The reference node's Dash types: its MSG_Bitcoin_OFFSET (1000) and up, in Dash 0.12.3's
#: order less the retired budget types (Dash's own 4..19 collide with MSG_CMPCT_BLOCK).
MSG_TXLOCK_REQUEST = 1000
MSG_TXLOCK_VOTE = 1001
MSG_SPORK = 1002
MSG_MASTERNODE_PAYMENT_VOTE = 1003
MSG_MASTERNODE_PAYMENT_BLOCK = 1004
MSG_MASTERNODE_ANNOUNCE = 1005
MSG_MASTERNODE_PING = 1006
MSG_DSTX = 1007
MSG_GOVERNANCE_OBJECT = 1008
MSG_GOVERNANCE_OBJECT_VOTE = 1009
MSG_MASTERNODE_VERIFY = 1010

NULL_HASH = b"\x00" * 32


# -- errors -----------------------------------------------------------------------------


class ProtocolViolation(Exception):
    """A peer broke the protocol.

    ``ban_score`` is what Core would add with Misbehaving(); ``disconnect`` says the
    connection must be dropped regardless; ``reject_code``, when set, is the code of
    the ``reject`` message Core would answer with.
    """

    def __init__(self, reason: str, ban_score: int = 0, disconnect: bool = False,
                 reject_code: Optional[int] = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.ban_score = ban_score
        self.disconnect = disconnect
        self.reject_code = reject_code
        #: Messages decoded before a stream error in the same ``feed`` call.
        self.decoded: List["DecodedItem"] = []

    def _key(self) -> tuple:
        return (type(self), self.reason, self.ban_score, self.disconnect, self.reject_code)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ProtocolViolation) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return "%s(%r, ban_score=%d, disconnect=%r)" % (
            type(self).__name__, self.reason, self.ban_score, self.disconnect)


class BadChecksum(ProtocolViolation):
    """The payload does not match the header's checksum (Core drops the message)."""

    def __init__(self, reason: str = "checksum mismatch") -> None:
        super().__init__(reason, 0)


def _oversized(what: str, count: int) -> ProtocolViolation:
    return ProtocolViolation("message %s size() = %d" % (what, count), OVERSIZED_VECTOR_BAN_SCORE)


# -- field helpers ----------------------------------------------------------------------


def _read_limited_bytes(r: ByteReader, limit: int) -> bytes:
    """Core's LIMITED_STRING: a var_str of at most ``limit`` bytes."""
    n = r.read_compact_size()
    if n > limit:
        raise DeserializationError("String length limit exceeded")
    return r.read(n)


def _decode_str(raw: bytes) -> str:
    # Lossless for any bytes; readable for UTF-8 (surrogateescape keeps the rest).
    return raw.decode("utf-8", "surrogateescape")


def _encode_str(text: str, limit: int, what: str) -> bytes:
    raw = text.encode("utf-8", "surrogateescape")
    if len(raw) > limit:
        raise ValueError("%s longer than %d bytes" % (what, limit))
    return var_bytes(raw)


def _check_hash(h: bytes, what: str = "hash") -> bytes:
    if not isinstance(h, bytes) or len(h) != 32:
        raise ValueError("%s must be 32 bytes" % what)
    return h


def _read_count(r: ByteReader, limit: int, what: str) -> int:
    count = r.read_compact_size()
    if count > limit:
        raise _oversized(what, count)
    return count


# -- payload types ----------------------------------------------------------------------


class Payload:
    """Base of the payload types: ``command``, ``serialize()``, ``deserialize(payload)``.

    ``deserialize`` raises :class:`DeserializationError` for malformed bytes and
    :class:`ProtocolViolation` for a count over its limit; :func:`decode_payload` turns
    both into :class:`ProtocolViolation`.
    """

    __slots__ = ()
    command: ClassVar[str] = ""

    def serialize(self) -> bytes:
        raise NotImplementedError

    @classmethod
    def read(cls, r: ByteReader):
        raise NotImplementedError

    @classmethod
    def deserialize(cls, payload: bytes):
        r = ByteReader(payload)
        msg = cls.read(r)
        r.assert_end()
        return msg


class _EmptyPayload(Payload):
    __slots__ = ()

    def serialize(self) -> bytes:
        return b""

    @classmethod
    def read(cls, r: ByteReader):
        return cls()

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(type(self))

    def __repr__(self) -> str:
        return "%s()" % type(self).__name__


class VerackMessage(_EmptyPayload):
    __slots__ = ()
    command = "verack"


class GetAddrMessage(_EmptyPayload):
    __slots__ = ()
    command = "getaddr"


class SendHeadersMessage(_EmptyPayload):
    __slots__ = ()
    command = "sendheaders"


class MempoolMessage(_EmptyPayload):
    __slots__ = ()
    command = "mempool"


_DEFAULT_ADDR = NetAddress(NODE_NONE, "0.0.0.0", 0)


@dataclass(frozen=True, slots=True)
class VersionMessage(Payload):
    """The handshake's first message.

    Addresses are serialized without time.  When parsing, fields after ``addr_recv`` are
    optional as in Core (missing: ``addr_from`` 0.0.0.0:0, ``nonce`` 1, ``user_agent`` "",
    ``start_height`` -1, ``relay`` True); bytes after ``relay`` are ignored.  Serializing
    always writes every field.
    """

    command: ClassVar[str] = "version"

    version: int = PROTOCOL_VERSION
    services: int = NODE_NETWORK
    timestamp: int = 0
    addr_recv: NetAddress = _DEFAULT_ADDR
    addr_from: NetAddress = _DEFAULT_ADDR
    nonce: int = 0
    user_agent: str = ""
    start_height: int = 0
    relay: bool = True

    def serialize(self) -> bytes:
        return b"".join((
            i32(self.version), u64(self.services), i64(self.timestamp),
            self.addr_recv.serialize(with_time=False), self.addr_from.serialize(with_time=False),
            u64(self.nonce), _encode_str(self.user_agent, MAX_SUBVERSION_LENGTH, "user agent"),
            i32(self.start_height), b"\x01" if self.relay else b"\x00"))

    @classmethod
    def read(cls, r: ByteReader) -> "VersionMessage":
        version = r.read_i32()
        services = r.read_u64()
        timestamp = r.read_i64()
        addr_recv = NetAddress.read(r, with_time=False)
        addr_from, nonce, user_agent, start_height, relay = _DEFAULT_ADDR, 1, "", -1, True
        if r.remaining():
            addr_from = NetAddress.read(r, with_time=False)
            nonce = r.read_u64()
        if r.remaining():
            user_agent = _decode_str(_read_limited_bytes(r, MAX_SUBVERSION_LENGTH))
        if r.remaining():
            start_height = r.read_i32()
        if r.remaining():
            relay = r.read_u8() != 0
        return cls(version, services, timestamp, addr_recv, addr_from, nonce, user_agent,
                   start_height, relay)

    @classmethod
    def deserialize(cls, payload: bytes) -> "VersionMessage":
        return cls.read(ByteReader(payload))  # trailing bytes tolerated, as Core does


@dataclass(frozen=True, slots=True)
class PingMessage(Payload):
    command: ClassVar[str] = "ping"
    nonce: int

    def serialize(self) -> bytes:
        return u64(self.nonce)

    @classmethod
    def read(cls, r: ByteReader) -> "PingMessage":
        return cls(r.read_u64())


@dataclass(frozen=True, slots=True)
class PongMessage(Payload):
    command: ClassVar[str] = "pong"
    nonce: int

    def serialize(self) -> bytes:
        return u64(self.nonce)

    @classmethod
    def read(cls, r: ByteReader) -> "PongMessage":
        return cls(r.read_u64())


@dataclass(frozen=True, slots=True)
class FeeFilterMessage(Payload):
    """Minimum fee rate (base units per 1000 bytes) of transactions to announce to us."""

    command: ClassVar[str] = "feefilter"
    fee_rate: int

    def serialize(self) -> bytes:
        return i64(self.fee_rate)

    @classmethod
    def read(cls, r: ByteReader) -> "FeeFilterMessage":
        return cls(r.read_i64())


@dataclass(frozen=True, slots=True)
class AddrMessage(Payload):
    """Up to MAX_ADDR_TO_SEND addresses, each with its last-seen time."""

    command: ClassVar[str] = "addr"
    addresses: Tuple[NetAddress, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "addresses", tuple(self.addresses))

    def serialize(self) -> bytes:
        parts = [compact_size(len(self.addresses))]
        parts.extend(a.serialize(with_time=True) for a in self.addresses)
        return b"".join(parts)

    @classmethod
    def read(cls, r: ByteReader) -> "AddrMessage":
        count = _read_count(r, MAX_ADDR_TO_SEND, "addr")
        return cls(tuple(NetAddress.read(r, with_time=True) for _ in range(count)))


@dataclass(frozen=True, slots=True)
class InvItem:
    """An inventory vector: ``type`` (MSG_*) and a hash in internal byte order."""

    type: int
    hash: bytes

    def __post_init__(self) -> None:
        _check_hash(self.hash)
        if not 0 <= self.type <= 0xFFFFFFFF:
            raise ValueError("inventory type out of range")

    def serialize(self) -> bytes:
        return u32(self.type) + self.hash

    @classmethod
    def read(cls, r: ByteReader) -> "InvItem":
        return cls(r.read_u32(), r.read(32))


@dataclass(frozen=True, slots=True)
class _InvPayload(Payload):
    items: Tuple[InvItem, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "items", tuple(self.items))

    def serialize(self) -> bytes:
        parts = [compact_size(len(self.items))]
        parts.extend(item.serialize() for item in self.items)
        return b"".join(parts)

    @classmethod
    def read(cls, r: ByteReader):
        count = _read_count(r, MAX_INV_SZ, cls.command)
        return cls(tuple(InvItem.read(r) for _ in range(count)))


@dataclass(frozen=True, slots=True)
class InvMessage(_InvPayload):
    command: ClassVar[str] = "inv"


@dataclass(frozen=True, slots=True)
class GetDataMessage(_InvPayload):
    command: ClassVar[str] = "getdata"


@dataclass(frozen=True, slots=True)
class NotFoundMessage(_InvPayload):
    command: ClassVar[str] = "notfound"


@dataclass(frozen=True, slots=True)
class _LocatorPayload(Payload):
    """``version`` (uint32), a block locator (at most MAX_LOCATOR_SZ hashes), ``hash_stop``."""

    locator: Tuple[bytes, ...] = ()
    hash_stop: bytes = NULL_HASH
    version: int = PROTOCOL_VERSION

    def __post_init__(self) -> None:
        object.__setattr__(self, "locator", tuple(self.locator))
        for h in self.locator:
            _check_hash(h, "locator hash")
        _check_hash(self.hash_stop, "hash_stop")

    def serialize(self) -> bytes:
        parts = [u32(self.version), compact_size(len(self.locator))]
        parts.extend(self.locator)
        parts.append(self.hash_stop)
        return b"".join(parts)

    @classmethod
    def read(cls, r: ByteReader):
        version = r.read_u32()
        count = r.read_compact_size()
        if count > MAX_LOCATOR_SZ:
            raise ProtocolViolation("%s locator size %d > %d" % (cls.command, count, MAX_LOCATOR_SZ),
                                    0, disconnect=True)
        locator = tuple(r.read(32) for _ in range(count))
        return cls(locator, r.read(32), version)


@dataclass(frozen=True, slots=True)
class GetHeadersMessage(_LocatorPayload):
    command: ClassVar[str] = "getheaders"


@dataclass(frozen=True, slots=True)
class GetBlocksMessage(_LocatorPayload):
    command: ClassVar[str] = "getblocks"


class HeadersMessage(Payload):
    """Up to MAX_HEADERS_RESULTS block headers, each followed by a zero transaction count."""

    __slots__ = ("headers",)
    command = "headers"

    def __init__(self, headers: Sequence[BlockHeader] = ()) -> None:
        self.headers: Tuple[BlockHeader, ...] = tuple(headers)

    def serialize(self) -> bytes:
        parts = [compact_size(len(self.headers))]
        for header in self.headers:
            parts.append(header.serialize())
            parts.append(b"\x00")
        return b"".join(parts)

    @classmethod
    def read(cls, r: ByteReader) -> "HeadersMessage":
        count = _read_count(r, MAX_HEADERS_RESULTS, "headers")
        headers = []
        for _ in range(count):
            headers.append(BlockHeader.read(r))
            if r.read_compact_size() != 0:
                raise ProtocolViolation("headers message with transactions",
                                        OVERSIZED_VECTOR_BAN_SCORE)
        return cls(headers)

    def __eq__(self, other: object) -> bool:
        return (type(other) is HeadersMessage
                and [h.serialize() for h in self.headers] == [h.serialize() for h in other.headers])

    def __hash__(self) -> int:
        return hash(tuple(h.hash for h in self.headers))

    def __repr__(self) -> str:
        return "HeadersMessage(%d headers)" % len(self.headers)


class BlockMessage(Payload):
    __slots__ = ("block",)
    command = "block"

    def __init__(self, block: Block) -> None:
        self.block = block

    def serialize(self) -> bytes:
        return self.block.serialize()

    @classmethod
    def read(cls, r: ByteReader) -> "BlockMessage":
        return cls(Block.read(r))

    def __eq__(self, other: object) -> bool:
        return type(other) is BlockMessage and self.block.serialize() == other.block.serialize()

    def __hash__(self) -> int:
        return hash(self.block.hash)

    def __repr__(self) -> str:
        return "BlockMessage(%r)" % (self.block,)


class RawBlockMessage(Payload):
    """A received ``block`` message: its header read, its transactions not yet parsed.

    A 2,000-transaction block takes about 26 ms to parse: the peer decodes ``block``
    payloads as this (framing and the 80-byte header only: the sync layer needs the
    block's hash, parent and size), and the validation thread calls :meth:`parse` as it
    takes the block, so the reactor never parses transactions and no block makes an
    extra trip through a thread pool.
    """

    __slots__ = ("payload", "_header")
    command = "block"

    def __init__(self, payload: bytes) -> None:
        self.payload = payload
        self._header: Optional[BlockHeader] = None

    @property
    def header(self) -> BlockHeader:
        """The block's header; DeserializationError if the payload is shorter."""
        if self._header is None:
            self._header = BlockHeader.read(ByteReader(self.payload))
        return self._header

    @property
    def hash(self) -> bytes:
        return self.header.hash

    @property
    def size(self) -> int:
        return len(self.payload)

    def serialize(self) -> bytes:
        return self.payload

    @classmethod
    def deserialize(cls, payload: bytes) -> "RawBlockMessage":
        message = cls(bytes(payload))
        message.header  # noqa: B018 -- a payload without a whole header is malformed now
        return message

    def parse(self) -> BlockMessage:
        """The parsed message; ProtocolViolation as :func:`decode_payload` raises it."""
        return decode_payload(self.command, self.payload)

    def __eq__(self, other: object) -> bool:
        return type(other) is RawBlockMessage and self.payload == other.payload

    def __hash__(self) -> int:
        return hash(self.payload)

    def __repr__(self) -> str:
        return "RawBlockMessage(%d bytes)" % len(self.payload)


class TxMessage(Payload):
    __slots__ = ("tx",)
    command = "tx"

    def __init__(self, tx: Transaction) -> None:
        self.tx = tx

    def serialize(self) -> bytes:
        return self.tx.serialize()

    @classmethod
    def read(cls, r: ByteReader) -> "TxMessage":
        return cls(Transaction.read(r))

    def __eq__(self, other: object) -> bool:
        return type(other) is TxMessage and self.tx == other.tx

    def __hash__(self) -> int:
        return hash(self.tx.txid)

    def __repr__(self) -> str:
        return "TxMessage(%r)" % (self.tx,)


@dataclass(frozen=True, slots=True)
class RejectMessage(Payload):
    """``message`` (the rejected command), ``code`` (REJECT_*), ``reason`` and ``data``.

    ``data`` is the rejected object's hash, or None (see the module docstring).
    """

    command: ClassVar[str] = "reject"
    message: str
    code: int
    reason: str
    data: Optional[bytes] = None

    def __post_init__(self) -> None:
        if self.data is not None:
            _check_hash(self.data, "reject data")
        if not 0 <= self.code <= 0xFF:
            raise ValueError("reject code out of range")

    def serialize(self) -> bytes:
        return b"".join((_encode_str(self.message, COMMAND_SIZE, "reject message"),
                         bytes((self.code,)),
                         _encode_str(self.reason, MAX_REJECT_MESSAGE_LENGTH, "reject reason"),
                         self.data or b""))

    @classmethod
    def read(cls, r: ByteReader) -> "RejectMessage":
        message = _decode_str(_read_limited_bytes(r, COMMAND_SIZE))
        code = r.read_u8()
        reason = _decode_str(_read_limited_bytes(r, MAX_REJECT_MESSAGE_LENGTH))
        data = r.read(32) if r.remaining() else None
        return cls(message, code, reason, data)


class GetSporksMessage(_EmptyPayload):
    """Asks a peer for every spork it holds (Dash's ``getsporks``)."""

    __slots__ = ()
    command = "getsporks"


@dataclass(frozen=True, slots=True)
class SporkMessage(Payload):
    """A signed network setting (Dash's ``spork``): int32 id, int64 value, int64 signing
    time, then the compact signature as a var_str."""

    command: ClassVar[str] = "spork"
    spork_id: int
    value: int
    time_signed: int
    signature: bytes = b""

    def serialize(self) -> bytes:
        return self.signed_fields() + var_bytes(self.signature)

    def signed_fields(self) -> bytes:
        """The fields the inventory hash covers (everything but the signature)."""
        return i32(self.spork_id) + i64(self.value) + i64(self.time_signed)

    @property
    def hash(self) -> bytes:
        """The ``MSG_SPORK`` inventory hash: SHA256d of the fields, signature excluded."""
        return sha256d(self.signed_fields())

    @classmethod
    def read(cls, r: ByteReader) -> "SporkMessage":
        return cls(r.read_i32(), r.read_i64(), r.read_i64(), r.read_var_bytes())


# -- masternode messages (Dash 0.12.3 at protocol 70208) -----------------------------------

#: Longest signature or public key a masternode message may carry (Dash reads any length;
#: a compact signature is 65 bytes, a public key at most 65).
MAX_MN_BLOB = 520
#: Dash's defaults for pings without the sentinel/daemon fields.
DEFAULT_SENTINEL_VERSION = 0x010001
DEFAULT_DAEMON_VERSION = 120200


def _mn_outpoint(outpoint: OutPoint) -> bytes:
    """Dash at 70208 sends a collateral outpoint as a whole CTxIn (empty script, final)."""
    return outpoint.serialize() + b"\x00" + u32(0xFFFFFFFF)


def _read_mn_outpoint(r: ByteReader) -> OutPoint:
    """Only the CTxIn's prevout counts; its script and sequence are read and dropped."""
    outpoint = OutPoint.read(r)
    _read_limited_bytes(r, MAX_MN_BLOB)
    r.read_u32()
    return outpoint


def _service(ip: str, port: int) -> bytes:
    """A CService: 16 address bytes and the port in network byte order."""
    return ip_to_bytes(ip) + struct.pack(">H", port)


def _read_service(r: ByteReader) -> Tuple[str, int]:
    ip = bytes_to_ip(r.read(16))
    return ip, struct.unpack(">H", r.read(2))[0]


@dataclass(frozen=True, slots=True)
class MasternodePingMessage(Payload):
    """``mnp``: a masternode's proof of life, signed with its masternode key.

    The sentinel and daemon fields are optional on the wire, as in Dash.
    """

    command: ClassVar[str] = "mnp"
    outpoint: OutPoint
    block_hash: bytes
    sig_time: int
    signature: bytes = b""
    sentinel_current: bool = False
    sentinel_version: int = DEFAULT_SENTINEL_VERSION
    daemon_version: int = DEFAULT_DAEMON_VERSION

    def serialize(self) -> bytes:
        return b"".join((_mn_outpoint(self.outpoint), self.block_hash, i64(self.sig_time),
                         var_bytes(self.signature), b"\x01" if self.sentinel_current else b"\x00",
                         u32(self.sentinel_version), u32(self.daemon_version)))

    @classmethod
    def read(cls, r: ByteReader) -> "MasternodePingMessage":
        outpoint = _read_mn_outpoint(r)
        block_hash, sig_time = r.read(32), r.read_i64()
        signature = _read_limited_bytes(r, MAX_MN_BLOB)
        if not r.remaining():
            return cls(outpoint, block_hash, sig_time, signature)
        current, sentinel = r.read_u8() != 0, r.read_u32()
        daemon = r.read_u32() if r.remaining() else DEFAULT_DAEMON_VERSION
        return cls(outpoint, block_hash, sig_time, signature, current, sentinel, daemon)

    @property
    def hash(self) -> bytes:
        """Dash's ping identity: the collateral and the signing time."""
        return sha256d(_mn_outpoint(self.outpoint) + i64(self.sig_time))


@dataclass(frozen=True, slots=True)
class MasternodeBroadcastMessage(Payload):
    """``mnb``: announces a masternode; signed with the collateral key."""

    command: ClassVar[str] = "mnb"
    outpoint: OutPoint
    ip: str
    port: int
    collateral_pubkey: bytes
    masternode_pubkey: bytes
    signature: bytes
    sig_time: int
    protocol_version: int
    last_ping: MasternodePingMessage

    def serialize(self) -> bytes:
        return b"".join((_mn_outpoint(self.outpoint), _service(self.ip, self.port),
                         var_bytes(self.collateral_pubkey), var_bytes(self.masternode_pubkey),
                         var_bytes(self.signature), i64(self.sig_time), i32(self.protocol_version),
                         self.last_ping.serialize()))

    @classmethod
    def read(cls, r: ByteReader) -> "MasternodeBroadcastMessage":
        outpoint = _read_mn_outpoint(r)
        ip, port = _read_service(r)
        blobs = [_read_limited_bytes(r, MAX_MN_BLOB) for _ in range(3)]
        sig_time, protocol = r.read_i64(), r.read_i32()
        return cls(outpoint, ip, port, blobs[0], blobs[1], blobs[2], sig_time, protocol,
                   MasternodePingMessage.read(r))

    @property
    def hash(self) -> bytes:
        """Dash's broadcast identity: collateral, collateral key and signing time."""
        return sha256d(_mn_outpoint(self.outpoint) + var_bytes(self.collateral_pubkey)
                       + i64(self.sig_time))


@dataclass(frozen=True, slots=True)
class PaymentVoteMessage(Payload):
    """``mnw``: a top-ranked masternode's vote for the payee of one block height."""

    command: ClassVar[str] = "mnw"
    outpoint: OutPoint
    height: int
    payee: bytes
    signature: bytes = b""

    def serialize(self) -> bytes:
        return b"".join((_mn_outpoint(self.outpoint), i32(self.height), var_bytes(self.payee),
                         var_bytes(self.signature)))

    @classmethod
    def read(cls, r: ByteReader) -> "PaymentVoteMessage":
        outpoint, height = _read_mn_outpoint(r), r.read_i32()
        payee = _read_limited_bytes(r, 10000)
        return cls(outpoint, height, payee, _read_limited_bytes(r, MAX_MN_BLOB))

    @property
    def hash(self) -> bytes:
        return sha256d(var_bytes(self.payee) + i32(self.height) + self.outpoint.serialize())


@dataclass(frozen=True, slots=True)
class DsegMessage(Payload):
    """``dseg``: asks for the masternode list (null outpoint) or for one entry."""

    command: ClassVar[str] = "dseg"
    outpoint: OutPoint = OutPoint()

    def serialize(self) -> bytes:
        return _mn_outpoint(self.outpoint)

    @classmethod
    def read(cls, r: ByteReader) -> "DsegMessage":
        return cls(_read_mn_outpoint(r))


@dataclass(frozen=True, slots=True)
class MnGetMessage(Payload):
    """``mnget``: asks for the payment votes of the last ``count`` heights."""

    command: ClassVar[str] = "mnget"
    count: int = 0

    def serialize(self) -> bytes:
        return i32(self.count)

    @classmethod
    def read(cls, r: ByteReader) -> "MnGetMessage":
        return cls(r.read_i32())


@dataclass(frozen=True, slots=True)
class SyncStatusCountMessage(Payload):
    """``ssc``: how many items of one sync asset (MASTERNODE_SYNC_*) the sender sent."""

    command: ClassVar[str] = "ssc"
    item_id: int
    count: int

    def serialize(self) -> bytes:
        return i32(self.item_id) + i32(self.count)

    @classmethod
    def read(cls, r: ByteReader) -> "SyncStatusCountMessage":
        return cls(r.read_i32(), r.read_i32())


@dataclass(frozen=True, slots=True)
class MasternodeVerifyMessage(Payload):
    """``mnv``: Dash's proof-of-service exchange (parsed; this node does not start one)."""

    command: ClassVar[str] = "mnv"
    outpoint1: OutPoint
    outpoint2: OutPoint
    ip: str
    port: int
    nonce: int
    height: int
    signature1: bytes = b""
    signature2: bytes = b""

    def serialize(self) -> bytes:
        return b"".join((_mn_outpoint(self.outpoint1), _mn_outpoint(self.outpoint2),
                         _service(self.ip, self.port), i32(self.nonce), i32(self.height),
                         var_bytes(self.signature1), var_bytes(self.signature2)))

    @classmethod
    def read(cls, r: ByteReader) -> "MasternodeVerifyMessage":
        first, second = _read_mn_outpoint(r), _read_mn_outpoint(r)
        ip, port = _read_service(r)
        nonce, height = r.read_i32(), r.read_i32()
        return cls(first, second, ip, port, nonce, height, _read_limited_bytes(r, MAX_MN_BLOB),
                   _read_limited_bytes(r, MAX_MN_BLOB))


# -- governance messages (Dash 0.12.3) ---------------------------------------------------


@dataclass(frozen=True, slots=True)
class GovernanceSyncMessage(Payload):
    """``govsync``: asks for every governance object (null hash), or for one object and
    its votes less those in ``bloom`` (the votes the asker has)."""

    command: ClassVar[str] = "govsync"
    object_hash: bytes = bytes(32)
    bloom: BloomFilter = field(default_factory=BloomFilter)

    def serialize(self) -> bytes:
        return self.object_hash + self.bloom.serialize()

    @classmethod
    def read(cls, r: ByteReader) -> "GovernanceSyncMessage":
        return cls(r.read(32), BloomFilter.read(r))


class _OpaquePayload(Payload):
    """A payload kept whole; the service that owns the command parses it (P2P does not
    import governance)."""

    __slots__ = ()
    body: bytes

    def serialize(self) -> bytes:
        return self.body

    @classmethod
    def read(cls, r: ByteReader):
        return cls(r.read(r.remaining()))


@dataclass(frozen=True, slots=True)
class GovernanceObjectMessage(_OpaquePayload):
    """``govobj``: one serialized governance object (coin.governance.object)."""

    command: ClassVar[str] = "govobj"
    body: bytes


@dataclass(frozen=True, slots=True)
class GovernanceVoteMessage(_OpaquePayload):
    """``govobjvote``: one serialized governance vote (coin.governance.vote)."""

    command: ClassVar[str] = "govobjvote"
    body: bytes


@dataclass(frozen=True, slots=True)
class UnknownMessage:
    """A message whose command this node does not know; Core ignores these."""

    command: str
    payload: bytes

    def serialize(self) -> bytes:
        return self.payload


Message = Union[VersionMessage, VerackMessage, PingMessage, PongMessage, AddrMessage,
                GetAddrMessage, InvMessage, GetDataMessage, NotFoundMessage, GetHeadersMessage,
                GetBlocksMessage, HeadersMessage, BlockMessage, RawBlockMessage, TxMessage,
                SendHeadersMessage, FeeFilterMessage, MempoolMessage, RejectMessage,
                SporkMessage, GetSporksMessage, MasternodePingMessage,
                MasternodeBroadcastMessage, PaymentVoteMessage, DsegMessage, MnGetMessage,
                SyncStatusCountMessage, MasternodeVerifyMessage, GovernanceSyncMessage,
                GovernanceObjectMessage, GovernanceVoteMessage, UnknownMessage]

#: command -> payload class, for every command this module parses.
MESSAGE_TYPES: Dict[str, Type[Payload]] = {cls.command: cls for cls in (
    VersionMessage, VerackMessage, PingMessage, PongMessage, AddrMessage, GetAddrMessage,
    InvMessage, GetDataMessage, NotFoundMessage, GetHeadersMessage, GetBlocksMessage,
    HeadersMessage, BlockMessage, TxMessage, SendHeadersMessage, FeeFilterMessage,
    MempoolMessage, RejectMessage, SporkMessage, GetSporksMessage, MasternodePingMessage,
    MasternodeBroadcastMessage, PaymentVoteMessage, DsegMessage, MnGetMessage,
    SyncStatusCountMessage, MasternodeVerifyMessage, GovernanceSyncMessage,
    GovernanceObjectMessage, GovernanceVoteMessage)}


#: What a peer decodes received payloads as: blocks are parsed later, off the reactor.
RECEIVED_TYPES: Dict[str, Type[Payload]] = dict(MESSAGE_TYPES, block=RawBlockMessage)


@dataclass(frozen=True, slots=True)
class InvalidMessage:
    """A well-framed message that must not be processed, and why (``violation``)."""

    command: str
    payload: bytes
    violation: ProtocolViolation


DecodedItem = Union[Message, InvalidMessage]


def decode_payload(command: str, payload: bytes,
                   types: Mapping[str, Type[Payload]] = MESSAGE_TYPES) -> Message:
    """Parse ``payload`` as a ``command`` message of ``types``; unknown commands give
    UnknownMessage.

    Raises :class:`ProtocolViolation`: malformed payloads get ban score 0 and
    ``reject_code`` REJECT_MALFORMED, as in Core.
    """
    cls = types.get(command)
    if cls is None:
        return UnknownMessage(command, bytes(payload))
    try:
        return cls.deserialize(payload)
    except DeserializationError as e:
        raise ProtocolViolation("error parsing %s message: %s" % (command, e), 0,
                                reject_code=REJECT_MALFORMED) from None


# -- framing ----------------------------------------------------------------------------

_LENGTH = struct.Struct("<I")


def checksum(payload: bytes) -> bytes:
    """The header checksum: the first 4 bytes of SHA256d(payload)."""
    return hashlib.sha256(hashlib.sha256(payload).digest()).digest()[:CHECKSUM_SIZE]


def parse_command(raw: bytes) -> Optional[str]:
    """The 12 header bytes -> the command, or None if Core's CMessageHeader::IsValid fails.

    Valid: printable ASCII (0x20-0x7e), then only NULs after the first NUL.
    """
    text, _, padding = bytes(raw).partition(b"\x00")
    if padding.strip(b"\x00") or any(c < 0x20 or c > 0x7E for c in text):
        return None
    return text.decode("ascii")


def frame_message(message_start: bytes, command: str, payload: bytes) -> bytes:
    """Header + payload for ``command``."""
    if len(message_start) != MESSAGE_START_SIZE:
        raise ValueError("message start must be 4 bytes")
    raw = command.encode("ascii")
    if len(raw) > COMMAND_SIZE or parse_command(raw.ljust(COMMAND_SIZE, b"\x00")) != command:
        raise ValueError("invalid command %r" % command)
    if len(payload) > 0xFFFFFFFF:
        raise ValueError("payload too long")
    return b"".join((message_start, raw.ljust(COMMAND_SIZE, b"\x00"), _LENGTH.pack(len(payload)),
                     checksum(payload), payload))


def encode_message(message_start: bytes, message: Message) -> bytes:
    """The complete wire bytes of ``message`` for the network with ``message_start``."""
    return frame_message(message_start, message.command, message.serialize())


class MessageDecoder:
    """Turns a received byte stream into messages.

    ``feed(data)`` returns the messages completed by ``data``, in order: payload objects,
    :class:`UnknownMessage` and :class:`InvalidMessage` items.  It buffers at most one
    header and one payload of at most ``max_payload`` bytes, however large ``data`` is.
    On a stream error it raises :class:`ProtocolViolation` (``disconnect=True``; items
    completed earlier in the same call are on its ``decoded`` attribute) and every later
    call raises it again.
    """

    def __init__(self, message_start: bytes, max_payload: int = MAX_PROTOCOL_MESSAGE_LENGTH,
                 decode: Callable[[str, bytes], Message] = decode_payload) -> None:
        if len(message_start) != MESSAGE_START_SIZE:
            raise ValueError("message start must be 4 bytes")
        self.message_start = bytes(message_start)
        self.max_payload = max_payload
        self._decode = decode
        self._header = bytearray()
        self._payload = bytearray()
        self._length: Optional[int] = None        # set once the header is complete
        self._command: Optional[str] = None       # None: invalid command
        self._raw_command = b""
        self._checksum = b""
        self._failed: Optional[ProtocolViolation] = None

    @property
    def buffered(self) -> int:
        """Bytes held for the message in progress."""
        return len(self._header) + len(self._payload)

    def feed(self, data: bytes) -> List[DecodedItem]:
        failed = self._failed
        if failed is not None:
            raise ProtocolViolation(failed.reason, failed.ban_score, failed.disconnect)
        out: List[DecodedItem] = []
        view = memoryview(data)
        pos, end = 0, len(view)
        try:
            while True:
                if self._length is None:
                    if pos >= end:
                        break
                    take = view[pos:pos + HEADER_SIZE - len(self._header)]
                    pos += len(take)
                    self._header += take
                    self._check_magic()
                    if len(self._header) < HEADER_SIZE:
                        break
                    self._parse_header()
                length = self._length
                if len(self._payload) < length:
                    if not self._payload and end - pos >= length:
                        payload = bytes(view[pos:pos + length])
                        pos += length
                    else:
                        if pos >= end:
                            break
                        take = view[pos:pos + length - len(self._payload)]
                        pos += len(take)
                        self._payload += take
                        if len(self._payload) < length:
                            break
                        payload = bytes(self._payload)
                else:
                    payload = bytes(self._payload)
                out.append(self._complete(payload))
        except ProtocolViolation as e:
            e.decoded = out
            self._failed = e
            self._header = bytearray()
            self._payload = bytearray()
            raise
        return out

    def _check_magic(self) -> None:
        got = bytes(self._header[:MESSAGE_START_SIZE])
        if got != self.message_start[:len(got)]:
            raise ProtocolViolation("invalid message start", 0, disconnect=True)

    def _parse_header(self) -> None:
        header = bytes(self._header)
        self._raw_command = header[4:16]
        self._command = parse_command(self._raw_command)
        (length,) = _LENGTH.unpack_from(header, 16)
        if length > self.max_payload:
            raise ProtocolViolation("oversized message: %d bytes" % length, 0, disconnect=True)
        self._checksum = header[20:24]
        self._length = length

    def _complete(self, payload: bytes) -> DecodedItem:
        command, expected = self._command, self._checksum
        self._header = bytearray()
        self._payload = bytearray()
        self._length = None
        if command is None:
            return InvalidMessage(self._raw_command.decode("latin-1"), payload,
                                  ProtocolViolation("invalid command", 0))
        if checksum(payload) != expected:
            return InvalidMessage(command, payload, BadChecksum())
        try:
            return self._decode(command, payload)
        except ProtocolViolation as e:
            return InvalidMessage(command, payload, e)
