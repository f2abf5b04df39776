"""Property tests (hypothesis) for the wire primitives.

Settings come from the profile in ``tests/__init__.py`` (200 examples, derandomized).
"""

from __future__ import annotations

from hypothesis import assume, given
from hypothesis import strategies as st
from twisted.trial.unittest import SynchronousTestCase

from coin.chainparams import MAIN, REGTEST, TEST
from coin.primitives.address import (
    AddressError,
    Destination,
    decode_address,
    decode_wif,
    encode_address,
    encode_wif,
)
from coin.primitives.base58 import (
    ALPHABET,
    Base58Error,
    b58check_decode,
    b58check_encode,
    b58decode,
    b58encode,
)
from coin.primitives.block import Block, BlockHeader
from coin.primitives.coin import Coin, deserialize_block_undo, serialize_block_undo
from coin.primitives.hashes import sha256d
from coin.primitives.script import legacy_sigop_count, walked_sigop_count
from coin.primitives.serialize import (
    MAX_SIZE,
    ByteReader,
    DeserializationError,
    compact_size,
    i64,
    var_bytes,
)
from coin.primitives.transaction import OutPoint, Transaction, TxIn, TxOut

U32 = st.integers(0, 2 ** 32 - 1)
I64 = st.integers(-2 ** 63, 2 ** 63 - 1)
HASH = st.binary(min_size=32, max_size=32)
# Some scripts are long enough to cross the 0xfd CompactSize boundary (their
# content does not matter there, and long random binaries are slow to draw).
SCRIPT = st.one_of(st.binary(max_size=40),
                   st.builds(lambda n, b: bytes((b,)) * n, st.integers(0xFA, 0x140),
                             st.integers(0, 255)))

outpoints = st.builds(OutPoint, HASH, U32)
txins = st.builds(TxIn, outpoints, SCRIPT, U32)
txouts = st.builds(TxOut, I64, SCRIPT)


@st.composite
def transactions(draw, versions=st.integers(1, 2)):
    return Transaction(draw(st.lists(txins, max_size=4)), draw(st.lists(txouts, max_size=4)),
                       draw(U32), draw(versions))


@st.composite
def special_transactions(draw):
    """DIP2: version 3 with a non-zero type carries a payload."""
    tx = draw(transactions(st.just(3)))
    return Transaction(tx.vin, tx.vout, tx.locktime, 3, draw(st.integers(1, 0xFFFF)),
                       draw(st.binary(max_size=300)))


headers = st.builds(BlockHeader, st.integers(-2 ** 31, 2 ** 31 - 1), HASH, HASH, U32, U32, U32)

coins = st.builds(Coin, I64, SCRIPT, st.integers(0, 2 ** 31 - 1), st.booleans(),
                  st.integers(-2 ** 31, 2 ** 31 - 1))

REAL_TX = bytes.fromhex(
    "0100000001b14bdcbc3e01bdaad36cc08e81e69c82e1060bc14e518db2b49aa43ad90ba260000000"
    "00490047304402203f16c6f40162ab686621ef3000b04e75418a0c0cb2d8aebeac894ae360ac1e78"
    "0220ddc15ecdfc3507ac48e1681a33eb60996631bf6bf5bc0a0682c4db743ce7ca2b01ffffffff01"
    "40420f00000000001976a914660d4ef3a743e3e696ad990364e555c271ad504b88ac00000000")


@st.composite
def mutated(draw, raw):
    """``raw`` with a few bytes overwritten, inserted or deleted, and maybe cut short."""
    data = bytearray(raw)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["set", "insert", "delete"]))
        pos = draw(st.integers(0, max(len(data) - 1, 0)))
        byte = draw(st.integers(0, 255))
        if op == "set" and data:
            data[pos] = byte
        elif op == "insert":
            data.insert(pos, byte)
        elif data:
            del data[pos]
    if draw(st.booleans()):
        data = data[:draw(st.integers(0, len(data)))]
    return bytes(data)


def rebuild(tx: Transaction) -> Transaction:
    """A fresh object from ``tx``'s fields (nothing cached)."""
    return Transaction(tx.vin, tx.vout, tx.locktime, tx.version, tx.tx_type, tx.extra_payload)


class CompactSizeProperties(SynchronousTestCase):

    @given(st.integers(0, 2 ** 64 - 1))
    def test_round_trip(self, n):
        enc = compact_size(n)
        self.assertEqual(len(enc), 1 if n < 0xFD else 3 if n <= 0xFFFF else
                         5 if n <= 0xFFFFFFFF else 9)
        r = ByteReader(enc)
        self.assertEqual(r.read_compact_size(range_check=False), n)
        r.assert_end()
        if n <= MAX_SIZE:
            self.assertEqual(ByteReader(enc).read_compact_size(), n)
        else:
            self.assertRaises(DeserializationError, ByteReader(enc).read_compact_size)

    @given(st.integers(0, 2 ** 32 - 1), st.sampled_from([(0xFD, 2), (0xFE, 4), (0xFF, 8)]))
    def test_only_shortest_form_accepted(self, n, form):
        marker, width = form
        assume(n < 2 ** (8 * width))
        enc = bytes((marker,)) + n.to_bytes(width, "little")
        if enc == compact_size(n):
            self.assertEqual(ByteReader(enc).read_compact_size(range_check=False), n)
        else:
            self.assertRaises(DeserializationError,
                              ByteReader(enc).read_compact_size, False)


class ParseArbitraryBytes(SynchronousTestCase):
    """Parsing never fails with anything but DeserializationError, and what parses is canonical."""

    def check_tx_bytes(self, data):
        r = ByteReader(data)
        try:
            tx = Transaction.read(r)
        except DeserializationError:
            return
        consumed = data[:r.offset]
        self.assertEqual(tx.serialize(), consumed)
        self.assertEqual(rebuild(tx).serialize(), consumed)
        self.assertEqual(tx.txid, sha256d(consumed))

    @given(st.binary(max_size=400))
    def test_random_bytes_as_transaction(self, data):
        self.check_tx_bytes(data)

    @given(mutated(REAL_TX))
    def test_mutated_transaction(self, data):
        self.check_tx_bytes(data)

    @given(st.binary(max_size=400))
    def test_random_bytes_as_block(self, data):
        try:
            block = Block.deserialize(data)
        except DeserializationError:
            return
        self.assertEqual(block.serialize(), data)

    @given(mutated(REGTEST.genesis.serialize()))
    def test_mutated_block(self, data):
        try:
            block = Block.deserialize(data)
        except DeserializationError:
            return
        self.assertEqual(Block(block.header, [rebuild(tx) for tx in block.txs]).serialize(),
                         data)

    @given(st.binary(max_size=200))
    def test_random_bytes_as_block_undo(self, data):
        try:
            undo = deserialize_block_undo(data)
        except DeserializationError:
            return
        self.assertEqual(serialize_block_undo(undo), data)


class TransactionProperties(SynchronousTestCase):

    @given(transactions())
    def test_round_trip(self, tx):
        raw = tx.serialize()
        parsed = Transaction.deserialize(raw)
        self.assertEqual(parsed.serialize(), raw)
        self.assertEqual(parsed.txid, tx.txid)
        self.assertEqual(parsed.txid, sha256d(raw))
        self.assertEqual(parsed.version, tx.version)
        self.assertEqual(parsed.tx_type, 0)
        self.assertEqual(parsed.vin, tx.vin)
        self.assertEqual(parsed.vout, tx.vout)
        self.assertEqual(parsed.locktime, tx.locktime)
        self.assertEqual(rebuild(parsed).serialize(), raw)
        self.assertEqual(Transaction.from_hex(raw.hex()), tx)

    @given(special_transactions())
    def test_special_round_trip(self, tx):
        raw = tx.serialize()
        self.assertEqual(raw[:2], b"\x03\x00")
        self.assertEqual(int.from_bytes(raw[2:4], "little"), tx.tx_type)
        parsed = Transaction.deserialize(raw)
        self.assertEqual((parsed.version, parsed.tx_type, parsed.extra_payload),
                         (3, tx.tx_type, tx.extra_payload))
        self.assertEqual(parsed.serialize(), raw)
        self.assertEqual(parsed.txid, tx.txid)

    @given(transactions(), st.binary(min_size=1, max_size=10))
    def test_trailing_bytes_rejected(self, tx, extra):
        self.assertRaises(DeserializationError, Transaction.deserialize, tx.serialize() + extra)

    @given(transactions(), st.data())
    def test_truncation_rejected(self, tx, data):
        raw = tx.serialize()
        cut = data.draw(st.integers(0, len(raw) - 1))
        self.assertRaises(DeserializationError, Transaction.deserialize, raw[:cut])

    @given(st.lists(transactions(), min_size=1, max_size=3), headers)
    def test_block_round_trip(self, txs, header):
        block = Block(header, txs)
        raw = block.serialize()
        parsed = Block.deserialize(raw)
        self.assertEqual(parsed.serialize(), raw)
        self.assertEqual(len(raw), 80 + len(compact_size(len(txs)))
                         + sum(tx.size for tx in txs))
        self.assertEqual(parsed.hash, sha256d(raw[:80]))
        self.assertEqual([tx.txid for tx in parsed.txs], [tx.txid for tx in txs])


class Base58Properties(SynchronousTestCase):

    @given(st.integers(0, 8), st.binary(max_size=80))
    def test_round_trip(self, zeros, data):
        data = b"\0" * zeros + data
        text = b58encode(data)
        self.assertEqual(b58decode(text), data)
        leading = len(data) - len(data.lstrip(b"\0"))
        self.assertEqual(len(text) - len(text.lstrip("1")), leading)
        self.assertTrue(set(text) <= set(ALPHABET))

    @given(st.text(alphabet=ALPHABET, max_size=60))
    def test_every_string_is_canonical(self, text):
        self.assertEqual(b58encode(b58decode(text)), text)

    @given(st.binary(max_size=80))
    def test_check_round_trip(self, payload):
        text = b58check_encode(payload)
        self.assertEqual(b58check_decode(text), payload)

    @given(st.binary(min_size=1, max_size=40), st.data())
    def test_check_detects_changed_character(self, payload, data):
        text = b58check_encode(payload)
        pos = data.draw(st.integers(0, len(text) - 1))
        new = data.draw(st.sampled_from(ALPHABET.replace(text[pos], "")))
        self.assertRaises(Base58Error, b58check_decode, text[:pos] + new + text[pos + 1:])

    @given(st.text(max_size=40))
    def test_decode_never_crashes(self, text):
        try:
            b58check_decode(text)
        except Base58Error:
            pass


class AddressProperties(SynchronousTestCase):

    @given(st.sampled_from([MAIN, TEST, REGTEST]),
           st.sampled_from(["pubkeyhash", "scripthash"]),
           st.binary(min_size=20, max_size=20))
    def test_address_round_trip(self, params, kind, h):
        dest = Destination(kind, h)
        text = encode_address(dest, params)
        self.assertEqual(decode_address(text, params), dest)
        other = MAIN if params is not MAIN else TEST
        self.assertRaises(AddressError, decode_address, text, other)

    @given(st.sampled_from([MAIN, TEST, REGTEST]), st.binary(min_size=32, max_size=32),
           st.booleans())
    def test_wif_round_trip(self, params, secret, compressed):
        text = encode_wif(secret, params, compressed)
        self.assertEqual(decode_wif(text, params), (secret, compressed))
        other = MAIN if params is not MAIN else TEST
        self.assertRaises(AddressError, decode_wif, text, other)


class CoinProperties(SynchronousTestCase):

    @given(coins)
    def test_coin_round_trip(self, coin):
        raw = coin.serialize()
        r = ByteReader(raw)
        parsed = Coin.read(r)
        r.assert_end()
        self.assertEqual(parsed, coin)
        self.assertEqual(parsed.serialize(), raw)
        self.assertEqual(parsed.txout(), TxOut(coin.value, coin.script_pubkey))

    @given(st.lists(st.lists(coins, max_size=4), max_size=4))
    def test_block_undo_round_trip(self, spent):
        raw = serialize_block_undo(spent)
        self.assertEqual(deserialize_block_undo(raw), spent)
        self.assertEqual(serialize_block_undo(deserialize_block_undo(raw)), raw)
        if raw:
            self.assertRaises(DeserializationError, deserialize_block_undo, raw[:-1])
        self.assertRaises(DeserializationError, deserialize_block_undo, raw + b"\x00")

    @given(coins)
    def test_coin_bytes_are_the_undo_format(self, coin):
        """The one-pack shortcut for standard coins writes Core's TxInUndo encoding."""
        self.assertEqual(coin.serialize(),
                         compact_size(coin.height * 2 + coin.coinbase)
                         + compact_size(coin.tx_version & 0xFFFFFFFF)
                         + i64(coin.value) + var_bytes(coin.script_pubkey))


def pushes(sizes) -> bytes:
    return b"".join(bytes((n,)) + bytes(range(n)) for n in sizes)


#: Scripts around the shapes legacy_sigop_count recognises without walking them.
SIGOP_SCRIPTS = st.one_of(
    st.binary(max_size=30),
    st.builds(lambda h, tail: b"\x76\xa9\x14" + h + tail, st.binary(min_size=20, max_size=20),
              st.sampled_from([b"\x88\xac", b"\x88\xad", b"\x88", b"\x88\xac\xac"])),
    st.builds(lambda h, tail: b"\xa9\x14" + h + tail, st.binary(min_size=20, max_size=20),
              st.sampled_from([b"\x87", b"\x88", b"\x87\xac", b""])),
    st.builds(lambda sizes, tail: pushes(sizes) + tail,
              st.lists(st.integers(0, 80), min_size=1, max_size=3),
              st.sampled_from([b"", b"\xac", b"\xae", b"\x4c"])),
)


class SigopCountProperties(SynchronousTestCase):

    @given(SIGOP_SCRIPTS, st.booleans())
    def test_shortcuts_count_what_the_walk_counts(self, script, accurate):
        self.assertEqual(legacy_sigop_count(script, accurate),
                         walked_sigop_count(script, accurate))
