"""The P2P wire layer: framing, the stream decoder, payload types, limits and addresses."""

from __future__ import annotations

import struct

from hypothesis import given
from hypothesis import strategies as st
from twisted.trial.unittest import SynchronousTestCase

from coin.consensus.errors import REJECT_INVALID, REJECT_MALFORMED
from coin.chainparams import MAIN, REGTEST, TEST
from coin.p2p.bloom import BloomFilter
from coin.p2p.messages import (
    GovernanceObjectMessage,
    GovernanceSyncMessage,
    GovernanceVoteMessage,
    HEADER_SIZE,
    MAX_ADDR_TO_SEND,
    MAX_HEADERS_RESULTS,
    MAX_INV_SZ,
    MAX_LOCATOR_SZ,
    MAX_PROTOCOL_MESSAGE_LENGTH,
    MAX_SUBVERSION_LENGTH,
    MESSAGE_TYPES,
    MSG_BLOCK,
    MSG_TX,
    NODE_NETWORK,
    PROTOCOL_VERSION,
    AddrMessage,
    BadChecksum,
    BlockMessage,
    FeeFilterMessage,
    GetAddrMessage,
    GetBlocksMessage,
    GetDataMessage,
    GetHeadersMessage,
    GetSporksMessage,
    HeadersMessage,
    InvalidMessage,
    InvItem,
    InvMessage,
    MempoolMessage,
    MessageDecoder,
    NotFoundMessage,
    PingMessage,
    PongMessage,
    ProtocolViolation,
    RejectMessage,
    SendHeadersMessage,
    SporkMessage,
    TxMessage,
    UnknownMessage,
    VerackMessage,
    VersionMessage,
    checksum,
    decode_payload,
    encode_message,
    frame_message,
    parse_command,
)
from coin.p2p.netaddr import NetAddress, bytes_to_ip, ip_to_bytes
from coin.primitives.block import Block
from coin.primitives.serialize import compact_size, u32
from tests.unit.primitives.test_primitives_properties import (
    headers, mutated, special_transactions, transactions)

MAGIC = REGTEST.message_start
U32 = st.integers(0, 2 ** 32 - 1)
U64 = st.integers(0, 2 ** 64 - 1)
I32 = st.integers(-2 ** 31, 2 ** 31 - 1)
I64 = st.integers(-2 ** 63, 2 ** 63 - 1)
HASH = st.binary(min_size=32, max_size=32)
# No surrogates: they are how undecodable bytes come back, not text a peer sends.
TEXT = st.characters(blacklist_categories=("Cs",))

ips = st.one_of(st.binary(min_size=16, max_size=16),
                st.builds(lambda b: b"\x00" * 10 + b"\xff\xff" + b, st.binary(min_size=4, max_size=4)),
                st.builds(lambda b: bytes.fromhex("fd87d87eeb43") + b, st.binary(min_size=10, max_size=10)))
version_addrs = st.builds(NetAddress, U64, ips, st.integers(0, 0xFFFF))
timed_addrs = st.builds(NetAddress, U64, ips, st.integers(0, 0xFFFF), U32)
inv_items = st.builds(InvItem, U32, HASH)


@st.composite
def blocks(draw):
    txs = draw(st.lists(st.one_of(transactions(), special_transactions()), max_size=3))
    return Block(draw(headers), txs)


@st.composite
def rejects(draw):
    message = draw(st.sampled_from(["block", "tx", "version", "ix", "", "twelve_chars"]))
    return RejectMessage(message, draw(st.integers(0, 255)), draw(st.text(TEXT, max_size=27)),
                         draw(st.one_of(st.none(), HASH)))


payloads = st.one_of(
    st.builds(VersionMessage, I32, U64, I64, version_addrs, version_addrs, U64,
              st.text(TEXT, max_size=MAX_SUBVERSION_LENGTH // 4), I32, st.booleans()),
    st.just(VerackMessage()), st.just(GetAddrMessage()), st.just(SendHeadersMessage()),
    st.just(MempoolMessage()), st.just(GetSporksMessage()),
    st.builds(SporkMessage, I32, I64, I64, st.binary(max_size=80)),
    st.builds(PingMessage, U64), st.builds(PongMessage, U64), st.builds(FeeFilterMessage, I64),
    st.builds(AddrMessage, st.lists(timed_addrs, max_size=5)),
    st.builds(InvMessage, st.lists(inv_items, max_size=5)),
    st.builds(GetDataMessage, st.lists(inv_items, max_size=5)),
    st.builds(NotFoundMessage, st.lists(inv_items, max_size=5)),
    st.builds(GetHeadersMessage, st.lists(HASH, max_size=5), HASH, U32),
    st.builds(GetBlocksMessage, st.lists(HASH, max_size=5), HASH, U32),
    st.builds(HeadersMessage, st.lists(headers, max_size=4)),
    st.builds(BlockMessage, blocks()),
    st.builds(TxMessage, st.one_of(transactions(), special_transactions())),
    rejects(),
    st.builds(GovernanceSyncMessage, HASH, st.builds(
        BloomFilter, st.binary(max_size=40).map(bytearray), st.integers(0, 50), U32,
        st.integers(0, 255))),
    st.builds(GovernanceObjectMessage, st.binary(max_size=60)),
    st.builds(GovernanceVoteMessage, st.binary(max_size=60)),
)
# Commands outside MESSAGE_TYPES: Dash's and the bloom-filter ones, say.
unknown = st.builds(UnknownMessage,
                    st.sampled_from(["dstx", "dsq", "dssu", "filterload", "", "abcdefghijkl"]),
                    st.binary(max_size=40))


def frame(command: bytes, payload: bytes, magic: bytes = MAGIC, length=None, check=None) -> bytes:
    """A frame built by hand, so tests can break any field."""
    return (magic + command.ljust(12, b"\x00") + u32(len(payload) if length is None else length)
            + (checksum(payload) if check is None else check) + payload)


def decode_all(data: bytes, **kw):
    return MessageDecoder(MAGIC, **kw).feed(data)


# The Bitcoin wiki's version example (protocol 60002, no relay field): its payload and the
# payload checksum the wiki gives for it.
WIKI_VERSION = bytes.fromhex(
    "62ea0000" "0100000000000000" "11b2d05000000000"
    "010000000000000000000000000000000000ffff000000000000"
    "010000000000000000000000000000000000ffff000000000000"
    "3b2eb35d8ce61765" "0f2f5361746f7368693a302e372e322f" "c03e0300")


class Golden(SynchronousTestCase):

    def test_verack_regtest(self):
        raw = encode_message(REGTEST.message_start, VerackMessage())
        self.assertEqual(raw.hex(), "fabfb5da" "76657261636b000000000000" "00000000" "5df6e0e2")
        self.assertEqual(checksum(b"").hex(), "5df6e0e2")

    def test_message_start_per_network(self):
        for params, magic in ((MAIN, "e3c01ed1"), (TEST, "e3c07e57"), (REGTEST, "fabfb5da")):
            self.assertEqual(encode_message(params.message_start, PingMessage(0))[:4].hex(), magic)

    def test_wiki_version_example(self):
        self.assertEqual(len(WIKI_VERSION), 100)
        self.assertEqual(checksum(WIKI_VERSION).hex(), "3b648d5a")
        msg = VersionMessage.deserialize(WIKI_VERSION)
        self.assertEqual(msg.version, 60002)
        self.assertEqual(msg.services, NODE_NETWORK)
        self.assertEqual(msg.timestamp, 1355854353)
        self.assertEqual(msg.addr_recv, NetAddress(1, "0.0.0.0", 0))
        self.assertEqual(msg.addr_from, NetAddress(1, "0.0.0.0", 0))
        self.assertEqual(msg.nonce, 0x6517E68C5DB32E3B)
        self.assertEqual(msg.user_agent, "/Satoshi:0.7.2/")
        self.assertEqual(msg.start_height, 212672)
        self.assertIs(msg.relay, True)  # absent: Core assumes relay
        # Serializing writes the relay flag (protocol >= 70001): the same bytes plus 01.
        raw = encode_message(REGTEST.message_start, msg)
        self.assertEqual(raw[:24].hex(), "fabfb5da" "76657273696f6e0000000000" "65000000" "f67ff11a")
        self.assertEqual(raw[24:], WIKI_VERSION + b"\x01")
        # The same message decoded from a frame carrying the wiki's 100 bytes.
        [decoded] = decode_all(frame(b"version", WIKI_VERSION))
        self.assertEqual(decoded, msg)

    def test_version_field_offsets(self):
        msg = VersionMessage(
            version=PROTOCOL_VERSION, services=NODE_NETWORK | 4, timestamp=0x0102030405060708,
            addr_recv=NetAddress(NODE_NETWORK, "203.0.113.7", 31932),
            addr_from=NetAddress(0, "2001:db8::1", 0x1234), nonce=0x1122334455667788,
            user_agent="/coin:0.1.0/", start_height=1234567, relay=False)
        p = msg.serialize()
        self.assertEqual(p[0:4], struct.pack("<i", 70208))
        self.assertEqual(p[0:4].hex(), "40120100")
        self.assertEqual(p[4:12].hex(), "0500000000000000")
        self.assertEqual(p[12:20].hex(), "0807060504030201")
        self.assertEqual(p[20:28].hex(), "0100000000000000")                    # addr_recv services
        self.assertEqual(p[28:44].hex(), "00000000000000000000ffffcb007107")    # ::ffff:203.0.113.7
        self.assertEqual(p[44:46].hex(), "7cbc")                                # port 31932, big-endian
        self.assertEqual(p[46:54].hex(), "0000000000000000")
        self.assertEqual(p[54:70].hex(), "20010db8000000000000000000000001")
        self.assertEqual(p[70:72].hex(), "1234")
        self.assertEqual(p[72:80].hex(), "8877665544332211")                    # nonce
        self.assertEqual(p[80:93], b"\x0c/coin:0.1.0/")                         # var_str
        self.assertEqual(p[93:97], struct.pack("<i", 1234567))
        self.assertEqual(p[97:], b"\x00")                                       # relay
        self.assertEqual(len(p), 98)
        self.assertEqual(VersionMessage.deserialize(p), msg)

    def test_simple_payload_layouts(self):
        self.assertEqual(PingMessage(0x0102030405060708).serialize().hex(), "0807060504030201")
        self.assertEqual(FeeFilterMessage(-1).serialize().hex(), "ff" * 8)
        h = bytes(range(32))
        self.assertEqual(InvMessage([InvItem(MSG_BLOCK, h)]).serialize(), b"\x01\x02\x00\x00\x00" + h)
        self.assertEqual(GetHeadersMessage([h]).serialize(),
                         u32(PROTOCOL_VERSION) + b"\x01" + h + b"\x00" * 32)
        addr = NetAddress(1, "10.0.0.1", 8333, time=0x5F5E100)
        self.assertEqual(AddrMessage([addr]).serialize().hex(),
                         "01" "00e1f505" "0100000000000000" "00000000000000000000ffff0a000001" "208d")
        genesis_header = REGTEST.genesis.header
        self.assertEqual(HeadersMessage([genesis_header]).serialize(),
                         b"\x01" + genesis_header.serialize() + b"\x00")
        self.assertEqual(RejectMessage("tx", REJECT_INVALID, "bad-txns", h).serialize(),
                         b"\x02tx\x10\x08bad-txns" + h)

    def test_genesis_block_message(self):
        raw = encode_message(MAGIC, BlockMessage(REGTEST.genesis))
        [msg] = decode_all(raw)
        self.assertEqual(msg.block.hash, REGTEST.genesis.hash)
        self.assertEqual(raw[24:], REGTEST.genesis.serialize())


class RoundTrip(SynchronousTestCase):

    def test_registry(self):
        self.assertEqual(sorted(MESSAGE_TYPES), sorted([
            "version", "verack", "ping", "pong", "addr", "getaddr", "inv", "getdata", "notfound",
            "getheaders", "getblocks", "headers", "block", "tx", "sendheaders", "feefilter",
            "mempool", "reject", "spork", "getsporks", "mnb", "mnp", "mnw", "dseg", "mnget", "ssc",
            "mnv", "govsync", "govobj", "govobjvote"]))
        for command, cls in MESSAGE_TYPES.items():
            self.assertEqual(cls.command, command)

    @given(payloads)
    def test_payload(self, msg):
        raw = msg.serialize()
        self.assertEqual(type(msg).deserialize(raw), msg)
        self.assertEqual(decode_payload(msg.command, raw), msg)
        self.assertEqual(decode_payload(msg.command, raw).serialize(), raw)

    @given(payloads)
    def test_framed(self, msg):
        raw = encode_message(MAGIC, msg)
        self.assertEqual(raw[:4], MAGIC)
        self.assertEqual(parse_command(raw[4:16]), msg.command)
        self.assertEqual(struct.unpack("<I", raw[16:20])[0], len(raw) - HEADER_SIZE)
        self.assertEqual(raw[20:24], checksum(raw[24:]))
        self.assertEqual(decode_all(raw), [msg])

    @given(unknown)
    def test_unknown_commands(self, msg):
        raw = encode_message(MAGIC, msg)
        self.assertEqual(decode_all(raw), [msg])

    def test_equality_is_by_type(self):
        items = [InvItem(MSG_TX, b"\x01" * 32)]
        self.assertNotEqual(InvMessage(items), GetDataMessage(items))
        self.assertNotEqual(GetHeadersMessage(), GetBlocksMessage())
        self.assertEqual(InvMessage(items), InvMessage(tuple(items)))
        self.assertNotEqual(PingMessage(1), PongMessage(1))


@st.composite
def streams(draw):
    """Several framed messages, and the points to cut their concatenation at."""
    msgs = draw(st.lists(st.one_of(payloads, unknown), min_size=1, max_size=6))
    raw = b"".join(encode_message(MAGIC, m) for m in msgs)
    cuts = sorted(draw(st.lists(st.integers(0, len(raw)), max_size=12)))
    return msgs, raw, cuts


class Decoder(SynchronousTestCase):

    @given(streams())
    def test_any_split_gives_the_same_messages(self, stream):
        msgs, raw, cuts = stream
        decoder = MessageDecoder(MAGIC)
        out = []
        start = 0
        for cut in cuts + [len(raw)]:
            out.extend(decoder.feed(raw[start:cut]))
            start = cut
        self.assertEqual(out, msgs)
        self.assertEqual(decoder.buffered, 0)

    @given(st.lists(st.one_of(payloads, unknown), min_size=1, max_size=3))
    def test_byte_by_byte(self, msgs):
        raw = b"".join(encode_message(MAGIC, m) for m in msgs)
        decoder = MessageDecoder(MAGIC)
        out = []
        for i in range(len(raw)):
            got = decoder.feed(raw[i:i + 1])
            out.extend(got)
            self.assertLessEqual(decoder.buffered, HEADER_SIZE + max(len(encode_message(MAGIC, m))
                                                                     for m in msgs))
        self.assertEqual(out, msgs)

    def test_whole_stream_at_once(self):
        msgs = [VersionMessage(), VerackMessage(), PingMessage(5), BlockMessage(REGTEST.genesis)] * 50
        raw = b"".join(encode_message(MAGIC, m) for m in msgs)
        self.assertEqual(decode_all(raw), msgs)

    def test_empty_feed(self):
        self.assertEqual(MessageDecoder(MAGIC).feed(b""), [])

    def test_partial_message_is_buffered(self):
        raw = encode_message(MAGIC, PingMessage(1))
        decoder = MessageDecoder(MAGIC)
        self.assertEqual(decoder.feed(raw[:30]), [])
        self.assertEqual(decoder.buffered, 30)
        self.assertEqual(decoder.feed(raw[30:]), [PingMessage(1)])
        self.assertEqual(decoder.buffered, 0)

    def test_consumed_bytes_are_not_kept(self):
        first = encode_message(MAGIC, BlockMessage(REGTEST.genesis))
        second = encode_message(MAGIC, PingMessage(3))
        decoder = MessageDecoder(MAGIC)
        self.assertEqual(decoder.feed(first * 3 + second[:10]), [BlockMessage(REGTEST.genesis)] * 3)
        self.assertEqual(decoder.buffered, 10)
        self.assertEqual(decoder.feed(second[10:]), [PingMessage(3)])

    def test_bad_magic(self):
        for magic in (MAIN.message_start, TEST.message_start, b"\xfa\xbf\xb5\xdb"):
            decoder = MessageDecoder(MAGIC)
            with self.assertRaises(ProtocolViolation) as cm:
                decoder.feed(encode_message(magic, VerackMessage()))
            self.assertTrue(cm.exception.disconnect)
            self.assertEqual(cm.exception.ban_score, 0)
            self.assertIn("message start", cm.exception.reason)
            # The decoder stays failed.
            self.assertRaises(ProtocolViolation, decoder.feed, encode_message(MAGIC, VerackMessage()))

    def test_bad_magic_detected_at_the_first_wrong_byte(self):
        decoder = MessageDecoder(MAGIC)
        self.assertEqual(decoder.feed(MAGIC[:2]), [])
        self.assertRaises(ProtocolViolation, decoder.feed, b"\x00")

    def test_bad_magic_after_good_messages(self):
        good = encode_message(MAGIC, PingMessage(1))
        decoder = MessageDecoder(MAGIC)
        with self.assertRaises(ProtocolViolation) as cm:
            decoder.feed(good + b"GET / HTTP/1.1\r\n\r\n")
        self.assertEqual(cm.exception.decoded, [PingMessage(1)])

    def test_oversized_length_rejected_before_the_payload(self):
        decoder = MessageDecoder(MAGIC)
        header = frame(b"block", b"", length=MAX_PROTOCOL_MESSAGE_LENGTH + 1)
        with self.assertRaises(ProtocolViolation) as cm:
            decoder.feed(header)
        self.assertTrue(cm.exception.disconnect)
        self.assertIn("oversized", cm.exception.reason)
        self.assertEqual(decoder.buffered, 0)
        # Also when the header comes with (part of) the payload in the same chunk.
        decoder = MessageDecoder(MAGIC, max_payload=100)
        self.assertRaises(ProtocolViolation, decoder.feed, frame(b"tx", b"\x00" * 101))
        self.assertEqual(decoder.buffered, 0)
        # A 4 GiB length never allocates anything.
        self.assertRaises(ProtocolViolation, MessageDecoder(MAGIC).feed,
                          frame(b"tx", b"", length=0xFFFFFFFF))

    def test_max_payload_is_inclusive(self):
        payload = b"\x00" * 100
        [msg] = MessageDecoder(MAGIC, max_payload=100).feed(frame(b"xyz", payload))
        self.assertEqual(msg, UnknownMessage("xyz", payload))

    def test_bad_checksum_drops_only_that_message(self):
        good = encode_message(MAGIC, PingMessage(7))
        bad = frame(b"ping", PingMessage(8).serialize(), check=b"\x00\x00\x00\x00")
        out = decode_all(good + bad + good)
        self.assertEqual(out[0], PingMessage(7))
        self.assertIsInstance(out[1], InvalidMessage)
        self.assertEqual(out[1].command, "ping")
        self.assertIsInstance(out[1].violation, BadChecksum)
        self.assertEqual(out[1].violation.ban_score, 0)
        self.assertFalse(out[1].violation.disconnect)
        self.assertEqual(out[2], PingMessage(7))

    def test_invalid_commands_are_dropped(self):
        good = encode_message(MAGIC, PingMessage(7))
        for command in (b"ping\x00x", b"ping\x01", b"p\xe9ng", b"\x00ping"):
            out = decode_all(frame(command, b"") + good)
            self.assertEqual(len(out), 2, command)
            self.assertIsInstance(out[0], InvalidMessage)
            self.assertEqual(out[0].violation.ban_score, 0)
            self.assertEqual(out[1], PingMessage(7))

    def test_parse_command(self):
        self.assertEqual(parse_command(b"version\x00\x00\x00\x00\x00"), "version")
        self.assertEqual(parse_command(b"abcdefghijkl"), "abcdefghijkl")
        self.assertEqual(parse_command(b"\x00" * 12), "")
        self.assertIsNone(parse_command(b"ver\x00sion\x00\x00\x00\x00"))
        self.assertIsNone(parse_command(b"ver\x7fion\x00\x00\x00\x00\x00"))
        self.assertRaises(ValueError, frame_message, MAGIC, "thirteen_char", b"")
        self.assertRaises(ValueError, frame_message, MAGIC, "a\x00b", b"")
        self.assertRaises(ValueError, frame_message, MAGIC, "caf\xe9", b"")

    def test_truncated_payload_in_a_valid_frame(self):
        cases = [
            ("ping", b"\x01\x02\x03\x04"),
            ("version", VersionMessage().serialize()[:40]),               # inside addr_recv
            ("version", VersionMessage().serialize()[:60]),               # inside addr_from
            ("inv", compact_size(2) + InvItem(1, b"\x00" * 32).serialize()),
            ("headers", compact_size(1) + b"\x00" * 79),
            ("block", REGTEST.genesis.serialize()[:-1]),
            ("tx", REGTEST.genesis.txs[0].serialize()[:-3]),
            ("getheaders", GetHeadersMessage([b"\x01" * 32]).serialize()[:-1]),
            ("reject", b"\x05block\x10\x03bad" + b"\x00" * 31),
            ("feefilter", b""),
        ]
        good = encode_message(MAGIC, VerackMessage())
        for command, payload in cases:
            out = decode_all(frame(command.encode(), payload) + good)
            self.assertIsInstance(out[0], InvalidMessage, command)
            violation = out[0].violation
            self.assertIsInstance(violation, ProtocolViolation)
            self.assertEqual((violation.ban_score, violation.reject_code, violation.disconnect),
                             (0, REJECT_MALFORMED, False), command)
            self.assertEqual(out[1], VerackMessage())
            with self.assertRaises(ProtocolViolation):
                decode_payload(command, payload)

    def test_trailing_bytes_rejected(self):
        for msg in (PingMessage(1), PongMessage(1), VerackMessage(), GetAddrMessage(),
                    InvMessage([]), AddrMessage([]), HeadersMessage([]), FeeFilterMessage(0),
                    GetHeadersMessage(), TxMessage(REGTEST.genesis.txs[0]),
                    BlockMessage(REGTEST.genesis), RejectMessage("tx", 1, "x", b"\x00" * 32)):
            with self.assertRaises(ProtocolViolation) as cm:
                decode_payload(msg.command, msg.serialize() + b"\x00")
            self.assertEqual(cm.exception.reject_code, REJECT_MALFORMED, msg)

    @given(st.sampled_from(sorted(MESSAGE_TYPES)), st.binary(max_size=200))
    def test_garbage_payloads_only_raise_protocol_violations(self, command, payload):
        try:
            decode_payload(command, payload)
        except ProtocolViolation:
            pass

    @given(payloads, st.data())
    def test_mutated_payloads_only_raise_protocol_violations(self, msg, data):
        try:
            decode_payload(msg.command, data.draw(mutated(msg.serialize())))
        except ProtocolViolation:
            pass

    @given(st.binary(max_size=300))
    def test_garbage_after_the_magic_only_raises_protocol_violations(self, data):
        decoder = MessageDecoder(MAGIC, max_payload=1000)
        try:
            decoder.feed(MAGIC + data)
        except ProtocolViolation as e:
            self.assertTrue(e.disconnect)


class Limits(SynchronousTestCase):

    def assertViolation(self, command, payload, ban_score=20, disconnect=False):
        with self.assertRaises(ProtocolViolation) as cm:
            decode_payload(command, payload)
        self.assertEqual(cm.exception.ban_score, ban_score)
        self.assertEqual(cm.exception.disconnect, disconnect)
        [item] = decode_all(frame(command.encode(), payload))
        self.assertIsInstance(item, InvalidMessage)
        self.assertEqual(item.violation, cm.exception)
        return cm.exception

    def test_addr(self):
        addr = NetAddress(NODE_NETWORK, "8.8.8.8", 8333, time=1)
        ok = AddrMessage([addr] * MAX_ADDR_TO_SEND)
        self.assertEqual(decode_payload("addr", ok.serialize()), ok)
        self.assertViolation("addr", compact_size(1001) + addr.serialize(with_time=True) * 1001)

    def test_inv_getdata_notfound(self):
        item = InvItem(MSG_TX, b"\x07" * 32).serialize()
        for cls in (InvMessage, GetDataMessage, NotFoundMessage):
            ok = compact_size(MAX_INV_SZ) + item * MAX_INV_SZ
            self.assertEqual(len(decode_payload(cls.command, ok).items), MAX_INV_SZ)
            self.assertViolation(cls.command, compact_size(50001) + item * 50001)

    def test_oversized_count_is_rejected_before_the_entries(self):
        # The count alone decides: no entries need to follow.
        self.assertViolation("inv", compact_size(MAX_INV_SZ + 1))
        self.assertViolation("headers", compact_size(MAX_HEADERS_RESULTS + 1))

    def test_headers(self):
        header = REGTEST.genesis.header.serialize()
        ok = compact_size(MAX_HEADERS_RESULTS) + (header + b"\x00") * MAX_HEADERS_RESULTS
        self.assertEqual(len(decode_payload("headers", ok).headers), MAX_HEADERS_RESULTS)
        self.assertViolation("headers", compact_size(2001) + (header + b"\x00") * 2001)

    def test_headers_with_transactions(self):
        header = REGTEST.genesis.header.serialize()
        self.assertViolation("headers", b"\x02" + header + b"\x00" + header + b"\x01")
        self.assertViolation("headers", b"\x01" + header + b"\xfd\x00\x01")

    def test_locator(self):
        for cls in (GetHeadersMessage, GetBlocksMessage):
            ok = cls([b"\x01" * 32] * MAX_LOCATOR_SZ)
            self.assertEqual(decode_payload(cls.command, ok.serialize()), ok)
            too_long = u32(PROTOCOL_VERSION) + compact_size(102) + b"\x01" * 32 * 103
            self.assertViolation(cls.command, too_long, ban_score=0, disconnect=True)

    def test_user_agent(self):
        base = VersionMessage().serialize()[:80]
        ok = base + compact_size(256) + b"a" * 256 + b"\x00" * 5
        self.assertEqual(decode_payload("version", ok).user_agent, "a" * 256)
        violation = self.assertViolation("version", base + compact_size(257) + b"a" * 257 + b"\x00" * 5,
                                         ban_score=0)
        self.assertEqual(violation.reject_code, REJECT_MALFORMED)
        self.assertRaises(ValueError, VersionMessage(user_agent="a" * 257).serialize)

    def test_reject_strings(self):
        self.assertViolation("reject", b"\x0dabcdefghijklm\x10\x00", ban_score=0)
        self.assertViolation("reject", b"\x02ix\x10" + compact_size(112) + b"r" * 112, ban_score=0)
        self.assertRaises(ValueError, RejectMessage("ix", 1, "r" * 112).serialize)


class VersionTail(SynchronousTestCase):
    """Core reads the fields after addr_recv only if bytes remain."""

    FULL = VersionMessage(70208, 1, 1700000000, NetAddress(1, "1.2.3.4", 31932),
                          NetAddress(1, "5.6.7.8", 31932), 42, "/coin/", 99, False)

    def test_prefixes(self):
        p = self.FULL.serialize()
        only_recv = VersionMessage.deserialize(p[:46])
        self.assertEqual((only_recv.addr_from, only_recv.nonce, only_recv.user_agent,
                          only_recv.start_height, only_recv.relay),
                         (NetAddress(0, "0.0.0.0", 0), 1, "", -1, True))
        with_nonce = VersionMessage.deserialize(p[:80])
        self.assertEqual((with_nonce.addr_from, with_nonce.nonce, with_nonce.user_agent),
                         (self.FULL.addr_from, 42, ""))
        with_agent = VersionMessage.deserialize(p[:87])
        self.assertEqual((with_agent.user_agent, with_agent.start_height), ("/coin/", -1))
        with_height = VersionMessage.deserialize(p[:91])
        self.assertEqual((with_height.start_height, with_height.relay), (99, True))
        self.assertEqual(VersionMessage.deserialize(p), self.FULL)

    def test_relay_byte_and_trailing_bytes(self):
        p = self.FULL.serialize()[:-1]
        self.assertIs(VersionMessage.deserialize(p + b"\x00").relay, False)
        self.assertIs(VersionMessage.deserialize(p + b"\x02").relay, True)
        # Bytes after relay are ignored (later versions append fields there).
        self.assertEqual(VersionMessage.deserialize(p + b"\x00" + b"\xaa" * 33), self.FULL)

    def test_broken_tails(self):
        p = self.FULL.serialize()
        for n in (10, 45, 47, 79, 82, 89):  # inside a field that was started
            self.assertRaises(ProtocolViolation, decode_payload, "version", p[:n])


class Reject(SynchronousTestCase):

    def test_block_and_tx(self):
        h = b"\x05" * 32
        self.assertEqual(decode_payload("reject", b"\x05block\x10\x03bad" + h),
                         RejectMessage("block", REJECT_INVALID, "bad", h))
        # Core's answer to a malformed tx: no hash.
        malformed = RejectMessage("tx", REJECT_MALFORMED, "error parsing message")
        self.assertEqual(malformed.serialize(), b"\x02tx\x01\x15error parsing message")
        self.assertEqual(decode_payload("reject", malformed.serialize()), malformed)
        self.assertRaises(ProtocolViolation, decode_payload, "reject", b"\x02tx\x10\x03bad" + h[:31])

    def test_other_commands(self):
        h = b"\x05" * 32
        self.assertEqual(decode_payload("reject", b"\x07version\x11\x00"),
                         RejectMessage("version", 0x11, ""))
        self.assertEqual(decode_payload("reject", b"\x02ix\x10\x00" + h),
                         RejectMessage("ix", 0x10, "", h))
        self.assertRaises(ProtocolViolation, decode_payload, "reject", b"\x02ix\x10\x00" + h[:5])


class Addresses(SynchronousTestCase):

    def test_ip_text_round_trip(self):
        for text, hexed in (
                ("127.0.0.1", "00000000000000000000ffff7f000001"),
                ("::1", "00000000000000000000000000000001"),
                ("2001:db8::ff00:42:8329", "20010db8000000000000ff0000428329"),
                # Core's netbase_tests pair.
                ("5wyqrzbvrdsumnok.onion", "fd87d87eeb43edb108e43588e54635ca")):
            self.assertEqual(ip_to_bytes(text).hex(), hexed)
            self.assertEqual(bytes_to_ip(bytes.fromhex(hexed)), text)
        self.assertEqual(bytes_to_ip(ip_to_bytes("::ffff:1.2.3.4")), "1.2.3.4")
        self.assertEqual(NetAddress(0, "::ffff:1.2.3.4", 1), NetAddress(0, "1.2.3.4", 1))
        self.assertEqual(NetAddress(0, ip_to_bytes("1.2.3.4"), 1).ip, "1.2.3.4")

    @given(st.binary(min_size=16, max_size=16))
    def test_any_16_bytes_round_trip(self, raw):
        self.assertEqual(ip_to_bytes(bytes_to_ip(raw)), raw)

    def test_bad_addresses(self):
        for text in ("1.2.3", "256.1.1.1", "localhost", "01.2.3.4", "abc.onion", "", "1.2.3.4:80"):
            self.assertRaises(ValueError, ip_to_bytes, text)
        self.assertRaises(ValueError, bytes_to_ip, b"\x00" * 15)
        self.assertRaises(ValueError, NetAddress, 0, "1.2.3.4", 65536)
        self.assertRaises(ValueError, NetAddress, -1, "1.2.3.4", 1)

    def test_wire_forms(self):
        a = NetAddress(NODE_NETWORK, "10.0.0.1", 8333, time=0x4D1015E2)
        self.assertEqual(a.serialize(with_time=True).hex(),
                         "e215104d" "0100000000000000" "00000000000000000000ffff0a000001" "208d")
        self.assertEqual(a.serialize(with_time=False), a.serialize(with_time=True)[4:])
        self.assertRaises(ValueError, a.with_time(None).serialize, with_time=True)

    def test_routability(self):
        cases = {
            # routable
            "8.8.8.8": (True, False), "1.2.3.4": (True, False), "2001:4860::8888": (True, False),
            "expyuzz4wqqyqhjn.onion": (True, False), "2002:102:304::1": (True, False),
            # private, reserved, link-local, documentation, loopback
            "10.1.2.3": (False, False), "192.168.1.1": (False, False), "172.16.0.1": (False, False),
            "172.31.255.255": (False, False), "198.18.0.1": (False, False),
            "169.254.1.1": (False, False), "100.64.0.1": (False, False),
            "192.0.2.1": (False, False), "198.51.100.1": (False, False), "203.0.113.1": (False, False),
            "fe80::1": (False, False), "fc00::1": (False, False), "2001:10::1": (False, False),
            "2001:db8::1": (False, False), "::": (False, False), "0.0.0.0": (False, True),
            "255.255.255.255": (False, False), "127.0.0.1": (False, True), "::1": (False, True),
        }
        for ip, (routable, local) in cases.items():
            a = NetAddress(0, ip, 1)
            self.assertEqual(a.is_routable(), routable, ip)
            self.assertEqual(a.is_local(), local, ip)
        self.assertTrue(NetAddress(0, "172.32.0.1", 1).is_routable())
        self.assertTrue(NetAddress(0, "100.128.0.1", 1).is_routable())

    def test_group(self):
        # Core's netbase_tests GetGroup vectors (class byte: 0 unroutable, 1 IPv4, 2 IPv6, 3 Tor).
        cases = {
            "127.0.0.1": [0], "10.0.0.1": [0], "169.254.1.1": [0], "1.2.3.4": [1, 1, 2],
            "::ffff:0:102:304": [1, 1, 2], "64:ff9b::102:304": [1, 1, 2],
            "2002:102:304:9999:9999:9999:9999:9999": [1, 1, 2],
            "2001:0:9999:9999:9999:9999:fefd:fcfb": [1, 1, 2],
            "fd87:d87e:eb43:edb1:8e4:3588:e546:35ca": [3, 239],
            "2001:470:abcd:9999:9999:9999:9999:9999": [2, 32, 1, 4, 112, 175],
            "2001:2001:9999:9999:9999:9999:9999:9999": [2, 32, 1, 32, 1],
        }
        for ip, group in cases.items():
            self.assertEqual(list(NetAddress(0, ip, 1).group()), group, ip)
        # Regtest networks on loopback: each unroutable address its own group.
        one, two = NetAddress(0, "127.0.0.1", 1), NetAddress(0, "127.0.0.2", 1)
        self.assertNotEqual(one.group(distinct_unroutable=True), two.group(distinct_unroutable=True))
        self.assertEqual(NetAddress(0, "1.2.3.4", 1).group(True), bytes([1, 1, 2]))

    def test_network_and_text(self):
        self.assertEqual(NetAddress(0, "8.8.8.8", 1).network, "ipv4")
        self.assertEqual(NetAddress(0, "2001:4860::1", 1).network, "ipv6")
        self.assertEqual(NetAddress(0, "expyuzz4wqqyqhjn.onion", 1).network, "onion")
        self.assertEqual(NetAddress(0, "10.0.0.1", 1).network, "unroutable")
        self.assertEqual(str(NetAddress(0, "1.2.3.4", 31932)), "1.2.3.4:31932")
        self.assertEqual(str(NetAddress(0, "::1", 31932)), "[::1]:31932")
        self.assertEqual(str(NetAddress(0, "expyuzz4wqqyqhjn.onion", 80)), "expyuzz4wqqyqhjn.onion:80")
        self.assertTrue(NetAddress(0, "1.2.3.4", 1).is_ipv4())
        self.assertTrue(NetAddress(0, "expyuzz4wqqyqhjn.onion", 1).is_tor())
        self.assertTrue(NetAddress(0, "::1", 1).is_ipv6())
