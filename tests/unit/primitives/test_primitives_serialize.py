"""Strict wire (de)serialization: CompactSize, truncation, trailing bytes, oversized counts."""

from __future__ import annotations

import tracemalloc

from twisted.trial.unittest import SynchronousTestCase

from coin.chainparams import REGTEST
from coin.primitives.block import Block, BlockHeader
from coin.primitives.coin import deserialize_block_undo
from coin.primitives.serialize import (
    MAX_SIZE,
    ByteReader,
    DeserializationError,
    compact_size,
    parse_hex,
    varint,
)
from coin.primitives.transaction import Transaction
from tests.unit.primitives.test_primitives_tx_block import load_tx_rows

# The first tx_valid.json row (mainnet tx 23b397ed...): 1 input, 1 output.
REAL_TX = bytes.fromhex(
    "0100000001b14bdcbc3e01bdaad36cc08e81e69c82e1060bc14e518db2b49aa43ad90ba260000000"
    "00490047304402203f16c6f40162ab686621ef3000b04e75418a0c0cb2d8aebeac894ae360ac1e78"
    "0220ddc15ecdfc3507ac48e1681a33eb60996631bf6bf5bc0a0682c4db743ce7ca2b01ffffffff01"
    "40420f00000000001976a914660d4ef3a743e3e696ad990364e555c271ad504b88ac00000000")

#: (value, canonical encoding) at every CompactSize width boundary.
BOUNDARIES = [
    (0, "00"),
    (1, "01"),
    (0xFC, "fc"),
    (0xFD, "fdfd00"),
    (0xFE, "fdfe00"),
    (0xFFFF, "fdffff"),
    (0x10000, "fe00000100"),
    (0xFFFFFFFF, "feffffffff"),
    (0x100000000, "ff0000000001000000"),
    (0xFFFFFFFFFFFFFFFF, "ffffffffffffffffff"),
]


def read_cs(data: bytes, range_check: bool = True) -> int:
    r = ByteReader(data)
    value = r.read_compact_size(range_check=range_check)
    r.assert_end()
    return value


class CompactSizeTests(SynchronousTestCase):

    def test_encode_boundaries(self):
        for value, enc in BOUNDARIES:
            self.assertEqual(compact_size(value).hex(), enc, value)

    def test_decode_boundaries(self):
        for value, enc in BOUNDARIES:
            self.assertEqual(read_cs(bytes.fromhex(enc), range_check=False), value, enc)

    def test_decode_boundaries_within_max_size(self):
        for value, enc in BOUNDARIES:
            if value <= MAX_SIZE:
                self.assertEqual(read_cs(bytes.fromhex(enc)), value)

    def test_non_canonical_rejected(self):
        # Each value one below the smallest that needs the wider form.
        for enc in ("fd0000", "fdfc00", "fe00000000", "feffff0000",
                    "ff0000000000000000", "ffffffffff00000000"):
            for range_check in (True, False):
                with self.assertRaises(DeserializationError) as cm:
                    read_cs(bytes.fromhex(enc), range_check)
                self.assertEqual(str(cm.exception), "non-canonical ReadCompactSize()")

    def test_size_limit(self):
        self.assertEqual(read_cs(compact_size(MAX_SIZE)), MAX_SIZE)
        for value in (MAX_SIZE + 1, 0xFFFFFFFF, 0x100000000, 2 ** 64 - 1):
            with self.assertRaises(DeserializationError) as cm:
                read_cs(compact_size(value))
            self.assertEqual(str(cm.exception), "ReadCompactSize(): size too large")
            self.assertEqual(read_cs(compact_size(value), range_check=False), value)

    def test_truncated(self):
        for value, enc in BOUNDARIES:
            raw = bytes.fromhex(enc)
            for cut in range(len(raw)):
                self.assertRaises(DeserializationError, read_cs, raw[:cut], False)

    def test_var_bytes_length_past_end(self):
        r = ByteReader(b"\x05abcd")
        self.assertRaises(DeserializationError, r.read_var_bytes)


class VarIntTests(SynchronousTestCase):
    """Core's VARINT (hash_serialized_2 hashes it)."""

    def test_matches_cores_examples(self):
        # The examples in Core's serialize.h.
        for n, encoded in ((0, "00"), (1, "01"), (127, "7f"), (128, "8000"), (255, "807f"),
                           (256, "8100"), (16383, "fe7f"), (16384, "ff00"), (16511, "ff7f"),
                           (65535, "82fe7f"), (1 << 32, "8efefeff00")):
            self.assertEqual(varint(n).hex(), encoded, n)


class ByteReaderTests(SynchronousTestCase):

    def test_fixed_width_reads(self):
        r = ByteReader(bytes.fromhex("01" "0201" "04030201" "ffffffff" "0807060504030201"
                                     "ffffffffffffffff"))
        self.assertEqual(r.read_u8(), 1)
        self.assertEqual(r.read_u16(), 0x0102)
        self.assertEqual(r.read_u32(), 0x01020304)
        self.assertEqual(r.read_i32(), -1)
        self.assertEqual(r.read_u64(), 0x0102030405060708)
        self.assertEqual(r.read_i64(), -1)
        r.assert_end()

    def test_reads_past_end(self):
        for name, width in (("read_u8", 1), ("read_u16", 2), ("read_u32", 4),
                            ("read_i32", 4), ("read_u64", 8), ("read_i64", 8)):
            for have in range(width):
                r = ByteReader(b"\x00" * have)
                self.assertRaises(DeserializationError, getattr(r, name))
        self.assertRaises(DeserializationError, ByteReader(b"abc").read, 4)
        self.assertRaises(DeserializationError, ByteReader(b"abc").read, -1)

    def test_accepts_bytes_like(self):
        self.assertEqual(ByteReader(bytearray(b"\x07")).read_u8(), 7)
        self.assertEqual(ByteReader(memoryview(b"\x07")).read_u8(), 7)

    def test_assert_end(self):
        r = ByteReader(b"\x01\x02")
        r.read_u8()
        self.assertRaises(DeserializationError, r.assert_end)
        r.read_u8()
        r.assert_end()

    def test_parse_hex_is_strict(self):
        self.assertEqual(parse_hex("00fF"), b"\x00\xff")
        self.assertEqual(parse_hex(""), b"")
        for bad in ("0", "0g", "00 ff", " 00", "00\n", "0x00", "\u0660\u0660"):
            self.assertRaises(DeserializationError, parse_hex, bad)


class TruncationTests(SynchronousTestCase):
    """Every proper prefix of a real object fails with DeserializationError."""

    def assert_every_prefix_fails(self, parse, raw):
        for cut in range(len(raw)):
            try:
                parse(raw[:cut])
            except DeserializationError:
                continue
            except Exception as e:  # IndexError, struct.error, ... are bugs
                self.fail("prefix of %d bytes raised %r" % (cut, e))
            self.fail("prefix of %d bytes parsed" % cut)

    def test_transaction(self):
        self.assertEqual(Transaction.deserialize(REAL_TX).serialize(), REAL_TX)
        self.assert_every_prefix_fails(Transaction.deserialize, REAL_TX)

    def test_vector_transactions(self):
        for row in load_tx_rows("tx_valid.json")[:10]:
            self.assert_every_prefix_fails(Transaction.deserialize, bytes.fromhex(row[1]))

    def test_block(self):
        raw = REGTEST.genesis.serialize()
        self.assertEqual(Block.deserialize(raw).serialize(), raw)
        self.assert_every_prefix_fails(Block.deserialize, raw)

    def test_multi_tx_block(self):
        tx = Transaction.deserialize(REAL_TX)
        block = Block(REGTEST.genesis.header, list(REGTEST.genesis.txs) + [tx])
        self.assert_every_prefix_fails(Block.deserialize, block.serialize())

    def test_header(self):
        self.assert_every_prefix_fails(BlockHeader.deserialize,
                                       REGTEST.genesis.header.serialize())

    def test_from_hex_truncated(self):
        hex_tx = REAL_TX.hex()
        for cut in range(0, len(hex_tx), 7):
            self.assertRaises(DeserializationError, Transaction.from_hex, hex_tx[:cut])


class TrailingBytesTests(SynchronousTestCase):

    def test_transaction(self):
        for extra in (b"\x00", b"\xff" * 5):
            self.assertRaises(DeserializationError, Transaction.deserialize, REAL_TX + extra)
            self.assertRaises(DeserializationError, Transaction.from_hex,
                              (REAL_TX + extra).hex())

    def test_block(self):
        raw = REGTEST.genesis.serialize()
        self.assertRaises(DeserializationError, Block.deserialize, raw + b"\x00")
        self.assertRaises(DeserializationError, BlockHeader.deserialize, raw[:81])

    def test_block_undo(self):
        self.assertEqual(deserialize_block_undo(b"\x00"), [])
        self.assertRaises(DeserializationError, deserialize_block_undo, b"\x00\x00")

    def test_read_leaves_rest(self):
        """``read`` (as opposed to ``deserialize``) stops at the object's end."""
        r = ByteReader(REAL_TX + REAL_TX)
        first = Transaction.read(r)
        self.assertEqual(r.offset, len(REAL_TX))
        self.assertEqual(Transaction.read(r).txid, first.txid)
        r.assert_end()


class OversizedCountTests(SynchronousTestCase):
    """Counts are range-checked before anything is allocated for them."""

    VERSION = b"\x01\x00\x00\x00"

    def assert_rejected_cheaply(self, parse, raw, message=None):
        tracemalloc.start()
        try:
            with self.assertRaises(DeserializationError) as cm:
                parse(raw)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        if message is not None:
            self.assertEqual(str(cm.exception), message)
        self.assertLess(peak, 256 * 1024)

    def test_vin_count_over_max_size(self):
        raw = self.VERSION + compact_size(MAX_SIZE + 1)
        self.assertEqual(raw[4:], bytes.fromhex("fe01000002"))
        self.assert_rejected_cheaply(Transaction.deserialize, raw,
                                     "ReadCompactSize(): size too large")

    def test_vin_count_at_max_size_without_data(self):
        self.assert_rejected_cheaply(Transaction.deserialize,
                                     self.VERSION + compact_size(MAX_SIZE) + b"\x00" * 40)

    def test_huge_counts(self):
        for count in (0xFFFFFFFF, 2 ** 64 - 1):
            self.assert_rejected_cheaply(Transaction.deserialize,
                                         self.VERSION + compact_size(count))

    def test_vout_count(self):
        raw = self.VERSION + b"\x00" + compact_size(MAX_SIZE + 1)
        self.assert_rejected_cheaply(Transaction.deserialize, raw,
                                     "ReadCompactSize(): size too large")

    def test_script_length(self):
        # One input whose scriptSig claims MAX_SIZE bytes but has none.
        raw = self.VERSION + b"\x01" + b"\x00" * 36 + compact_size(MAX_SIZE)
        self.assert_rejected_cheaply(Transaction.deserialize, raw, "unexpected end of data")
        raw = self.VERSION + b"\x01" + b"\x00" * 36 + compact_size(MAX_SIZE + 1)
        self.assert_rejected_cheaply(Transaction.deserialize, raw,
                                     "ReadCompactSize(): size too large")

    def test_block_tx_count(self):
        header = REGTEST.genesis.header.serialize()
        self.assert_rejected_cheaply(Block.deserialize, header + compact_size(MAX_SIZE + 1),
                                     "ReadCompactSize(): size too large")
        self.assert_rejected_cheaply(Block.deserialize, header + compact_size(MAX_SIZE))

    def test_block_undo_counts(self):
        self.assert_rejected_cheaply(deserialize_block_undo, compact_size(MAX_SIZE + 1),
                                     "ReadCompactSize(): size too large")
        self.assert_rejected_cheaply(deserialize_block_undo,
                                     b"\x01" + compact_size(MAX_SIZE + 1),
                                     "ReadCompactSize(): size too large")
