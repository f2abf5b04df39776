"""Transactions, DIP2 special transactions, headers, blocks and merkle roots."""

from __future__ import annotations

import json
import os

from twisted.trial.unittest import SynchronousTestCase

from coin.chainparams import REGTEST
from coin.primitives.block import HEADER_SIZE, Block, BlockHeader
from coin.primitives.hashes import hash_to_hex, hex_to_hash, sha256d
from coin.primitives.merkle import NULL_HASH, merkle_root
from coin.primitives.serialize import DeserializationError, compact_size
from coin.primitives.transaction import (
    NULL_INDEX,
    SEQUENCE_FINAL,
    OutPoint,
    Transaction,
    TxIn,
    TxOut,
)
from tests import DATA


def vectors_dir() -> str:
    """The consensus vectors (a copy of shared/vectors lives in tests/data/vectors)."""
    for path in (os.environ.get("COIN_VECTORS"),
                 os.path.join(DATA, "vectors")):
        if path and os.path.isfile(os.path.join(path, "tx_valid.json")):
            return path
    raise FileNotFoundError("consensus test vectors not found in tests/data/vectors")


def load_tx_rows(name: str):
    with open(os.path.join(vectors_dir(), name)) as f:
        return [row for row in json.load(f) if not isinstance(row[0], str)]


#: Regtest (= Bitcoin) genesis coinbase, serialized.
GENESIS_COINBASE_HEX = (
    "01000000010000000000000000000000000000000000000000000000000000000000000000ffffffff"
    "4d04ffff001d0104455468652054696d65732030332f4a616e2f32303039204368616e63656c6c6f72"
    "206f6e206272696e6b206f66207365636f6e64206261696c6f757420666f722062616e6b73ffffffff"
    "0100f2052a01000000434104678afdb0fe5548271967f1a67130b7105cd6a828e03909a67962e0ea1f"
    "61deb649f6bc3f4cef38c4f35504e51ec112de5c384df7ba0b8d578a4c702b6bf11d5fac00000000")
GENESIS_COINBASE_TXID = "4a5e1e4baab89f3a32518a88c31bc87f618f76673e2cc77ab2127b7afdeda33b"

#: Transactions in tx_valid.json whose comments name their (RPC-order) txid.
KNOWN_TXIDS = {
    "23b397edccd3740a74adb603c9756370fafcde9bcc4483eb271ecad09a94dd63",
    "c99c49da4c38af669dea436d3e73780dfdb6c1ecf9958baa52960e8baee30e73",
    "f7fdd091fa6d8f5e7a8c2458f5c38faffff2d3f1406b6e4fe2c99dcc0d2d1cbb",
    "afd9c17f8913577ec3509520bd6e5d63e9c0fd2a5f70c787993b097ba6ca9fae",
    "ddc454a1c0c35c188c98976b17670f69e586d9c0f3593ea879928332f0a069e7",
    "cc60b1f899ec0a69b7c3f25ddf32c4524096a9c5b01cbd84c6d0312a0c478984",
}

#: A DIP2 coinbase special transaction (version 3, type 5 = CbTx) with a
#: CbTx payload: version 2, height 1000, merkleRootMNList, merkleRootQuorums.
CBTX_PAYLOAD = (bytes.fromhex("0200") + (1000).to_bytes(4, "little")
                + bytes(range(32)) + bytes(range(32, 64)))
CBTX_HEX = (
    "03000500"                                   # version 3 | type 5 << 16
    "01" + "00" * 32 + "ffffffff"                # coinbase input
    "0502e8030101" "ffffffff"                    # scriptSig (height push), sequence
    "01" "00f2052a01000000" "01" "51"            # one 50-coin OP_TRUE output
    "00000000"                                   # locktime
    + "46" + CBTX_PAYLOAD.hex())                 # extra payload, 70 bytes


class TransactionVectorTests(SynchronousTestCase):

    def test_tx_valid_round_trip(self):
        rows = load_tx_rows("tx_valid.json")
        self.assertEqual(len(rows), 83)
        seen = set()
        for row in rows:
            raw = bytes.fromhex(row[1])
            tx = Transaction.deserialize(raw)
            self.assertEqual(tx.serialize(), raw)
            # A fresh object built from the parsed fields serializes identically.
            fresh = Transaction(tx.vin, tx.vout, tx.locktime, tx.version, tx.tx_type,
                                tx.extra_payload)
            self.assertEqual(fresh.serialize(), raw)
            self.assertEqual(fresh.txid, sha256d(raw))
            self.assertEqual(tx.txid, sha256d(raw))
            self.assertEqual(tx.size, len(raw))
            self.assertEqual(Transaction.from_hex(row[1]), tx)
            self.assertEqual(Transaction.from_hex(row[1].upper()).txid, tx.txid)
            seen.add(tx.txid_hex)
        self.assertTrue(KNOWN_TXIDS <= seen, KNOWN_TXIDS - seen)

    def test_tx_invalid_vectors_still_parse(self):
        # tx_invalid.json rows fail consensus or script checks, not deserialization.
        for row in load_tx_rows("tx_invalid.json"):
            raw = bytes.fromhex(row[1])
            self.assertEqual(Transaction.deserialize(raw).serialize(), raw)

    def test_fields_of_known_tx(self):
        tx = Transaction.from_hex(load_tx_rows("tx_valid.json")[0][1])
        self.assertEqual(tx.txid_hex, "23b397edccd3740a74adb603c9756370fafcde9bcc4483eb271ecad09a94dd63")
        self.assertEqual((tx.version, tx.tx_type, tx.locktime), (1, 0, 0))
        self.assertEqual(len(tx.vin), 1)
        self.assertEqual(tx.vin[0].prevout, OutPoint(
            hex_to_hash("60a20bd93aa49ab4b28d514ec10b06e1829ce6818ec06cd3aabd013ebcdc4bb1"), 0))
        self.assertEqual(tx.vin[0].sequence, SEQUENCE_FINAL)
        self.assertEqual(len(tx.vin[0].script_sig), 0x49)
        self.assertEqual(tx.vout, (TxOut(1000000, bytes.fromhex(
            "76a914660d4ef3a743e3e696ad990364e555c271ad504b88ac")),))
        self.assertFalse(tx.is_coinbase())
        self.assertEqual(tx.total_out(), 1000000)


class TxidTests(SynchronousTestCase):

    def test_genesis_coinbase_txid_both_byte_orders(self):
        tx = Transaction.from_hex(GENESIS_COINBASE_HEX)
        internal = bytes.fromhex(GENESIS_COINBASE_TXID)[::-1]
        self.assertEqual(tx.txid, internal)
        self.assertEqual(tx.txid, sha256d(bytes.fromhex(GENESIS_COINBASE_HEX)))
        self.assertEqual(tx.txid.hex(),
                         "3ba3edfd7a7b12b27ac72c3e67768f617fc81bc3888a51323a9fb8aa4b1e5e4a")
        self.assertEqual(tx.txid_hex, GENESIS_COINBASE_TXID)
        self.assertEqual(hash_to_hex(tx.txid), GENESIS_COINBASE_TXID)
        self.assertEqual(hex_to_hash(GENESIS_COINBASE_TXID), internal)
        self.assertEqual(hex_to_hash(GENESIS_COINBASE_TXID.upper()), internal)

    def test_genesis_coinbase_matches_chainparams(self):
        coinbase = REGTEST.genesis.txs[0]
        self.assertEqual(coinbase.serialize().hex(), GENESIS_COINBASE_HEX)
        self.assertTrue(coinbase.is_coinbase())
        self.assertTrue(coinbase.vin[0].prevout.is_null())
        self.assertEqual(coinbase.vin[0].prevout.n, NULL_INDEX)

    def test_hex_to_hash_rejects_malformed(self):
        for bad in ("", "00" * 31, "00" * 33, "zz" * 32, " " + "00" * 32,
                    "00" * 32 + "\n", "0x" + "00" * 31):
            self.assertRaises(ValueError, hex_to_hash, bad)

    def test_from_hex_rejects_non_hex(self):
        for bad in ("zz", GENESIS_COINBASE_HEX[:-1], GENESIS_COINBASE_HEX + " ",
                    " " + GENESIS_COINBASE_HEX,
                    GENESIS_COINBASE_HEX[:8] + " " + GENESIS_COINBASE_HEX[8:]):
            self.assertRaises(DeserializationError, Transaction.from_hex, bad)

    def test_outpoint(self):
        op = OutPoint(b"\x11" * 32, 7)
        self.assertEqual(op.serialize(), b"\x11" * 32 + b"\x07\x00\x00\x00")
        self.assertEqual(op, OutPoint(b"\x11" * 32, 7))
        self.assertNotEqual(op, OutPoint(b"\x11" * 32, 8))
        self.assertEqual(hash(op), hash(OutPoint(b"\x11" * 32, 7)))
        self.assertEqual(op.key(), (b"\x11" * 32, 7))
        self.assertFalse(op.is_null())
        self.assertFalse(OutPoint(NULL_HASH, 0).is_null())
        self.assertTrue(OutPoint().is_null())

    def test_equality_and_hash(self):
        a = Transaction.from_hex(GENESIS_COINBASE_HEX)
        b = Transaction.from_hex(GENESIS_COINBASE_HEX)
        self.assertEqual(a, b)
        self.assertEqual(len({a, b}), 1)
        self.assertNotEqual(a, Transaction(a.vin, a.vout, locktime=1))


class SpecialTransactionTests(SynchronousTestCase):
    """DIP2: the 32-bit version field is int16 version | uint16 type << 16."""

    def test_cbtx_round_trip(self):
        raw = bytes.fromhex(CBTX_HEX)
        tx = Transaction.deserialize(raw)
        self.assertEqual(tx.version, 3)
        self.assertEqual(tx.tx_type, 5)
        self.assertTrue(tx.has_extra_payload())
        self.assertEqual(tx.extra_payload, CBTX_PAYLOAD)
        self.assertEqual(tx.locktime, 0)
        self.assertEqual(tx.serialize(), raw)
        self.assertEqual(tx.txid, sha256d(raw))
        self.assertTrue(tx.is_coinbase())

    def test_cbtx_built_from_fields(self):
        tx = Transaction([TxIn(OutPoint(), bytes.fromhex("02e8030101"))],
                         [TxOut(50 * 10 ** 8, b"\x51")],
                         version=3, tx_type=5, extra_payload=CBTX_PAYLOAD)
        self.assertEqual(tx.serialize().hex(), CBTX_HEX)

    def test_cbtx_truncated_payload(self):
        raw = bytes.fromhex(CBTX_HEX)
        for cut in range(len(raw) - len(CBTX_PAYLOAD) - 1, len(raw)):
            self.assertRaises(DeserializationError, Transaction.deserialize, raw[:cut])
        self.assertRaises(DeserializationError, Transaction.deserialize, raw + b"\x00")

    def test_payload_only_for_version_3_with_type(self):
        body = bytes.fromhex(CBTX_HEX)[4:-len(CBTX_PAYLOAD) - 1]
        # version 3, type 0: a normal transaction, no payload field
        tx = Transaction.deserialize(bytes.fromhex("03000000") + body)
        self.assertEqual((tx.version, tx.tx_type, tx.extra_payload), (3, 0, b""))
        self.assertFalse(tx.has_extra_payload())
        # version 2 with a type in the high half: no payload either
        raw = bytes.fromhex("02000500") + body
        tx = Transaction.deserialize(raw)
        self.assertEqual((tx.version, tx.tx_type), (2, 5))
        self.assertFalse(tx.has_extra_payload())
        self.assertEqual(tx.serialize(), raw)
        # a payload the normal transaction does not have is trailing data
        self.assertRaises(DeserializationError, Transaction.deserialize,
                          bytes.fromhex("03000000") + body + b"\x00")

    def test_empty_payload(self):
        raw = bytes.fromhex("03000100") + bytes.fromhex(CBTX_HEX)[4:-len(CBTX_PAYLOAD) - 1] + b"\x00"
        tx = Transaction.deserialize(raw)
        self.assertEqual((tx.version, tx.tx_type, tx.extra_payload), (3, 1, b""))
        self.assertEqual(tx.serialize(), raw)

    def test_version_field_split(self):
        body = b"\x00\x00" + b"\x00" * 4  # no inputs, no outputs, locktime 0
        for field, version, tx_type in ((0x00000001, 1, 0), (0x00000002, 2, 0),
                                        (0x00050003, 3, 5), (0x0000FFFF, -1, 0),
                                        (0x00008000, -32768, 0), (0x00007FFF, 32767, 0),
                                        (0xFFFF0002, 2, 0xFFFF), (0xFFFFFFFF, -1, 0xFFFF)):
            raw = field.to_bytes(4, "little") + body
            if version == 3 and tx_type:
                raw += b"\x00"
            tx = Transaction.deserialize(raw)
            self.assertEqual((tx.version, tx.tx_type), (version, tx_type), hex(field))
            self.assertEqual(tx.serialize(), raw)
            self.assertEqual(Transaction([], [], 0, version, tx_type).serialize()[:4],
                             raw[:4])


class HeaderTests(SynchronousTestCase):

    #: Bitcoin block 100000: a header with real, non-trivial fields.
    BLOCK_100000 = dict(
        version=1,
        prev_hash=hex_to_hash("000000000002d01c1fccc21636b607dfd930d31d01c3a62104612a1719011250"),
        merkle_root=hex_to_hash("f3e94742aca4b5ef85488dc37c06c3282295ffec960994b2c0d5ac2a25a95766"),
        time=1293623863, bits=0x1B04864C, nonce=274148111)
    BLOCK_100000_HASH = "000000000003ba27aa200b1cecaad478d2b00432346c3f1f3986da1afd33e506"

    def test_header_is_80_bytes(self):
        self.assertEqual(HEADER_SIZE, 80)
        for header in (REGTEST.genesis.header, BlockHeader(**self.BLOCK_100000)):
            raw = header.serialize()
            self.assertEqual(len(raw), 80)
            self.assertEqual(BlockHeader.deserialize(raw).serialize(), raw)
            self.assertEqual(header.hash, sha256d(raw))

    def test_known_header_hash(self):
        header = BlockHeader(**self.BLOCK_100000)
        self.assertEqual(header.hash_hex, self.BLOCK_100000_HASH)
        parsed = BlockHeader.deserialize(header.serialize())
        self.assertEqual(parsed.hash_hex, self.BLOCK_100000_HASH)
        for name, value in self.BLOCK_100000.items():
            self.assertEqual(getattr(parsed, name), value, name)

    def test_header_layout(self):
        raw = BlockHeader(**self.BLOCK_100000).serialize()
        self.assertEqual(raw[:4], b"\x01\x00\x00\x00")
        self.assertEqual(raw[4:36], self.BLOCK_100000["prev_hash"])
        self.assertEqual(raw[36:68], self.BLOCK_100000["merkle_root"])
        self.assertEqual(raw[68:72], (1293623863).to_bytes(4, "little"))
        self.assertEqual(raw[72:76], bytes.fromhex("4c86041b"))
        self.assertEqual(raw[76:80], (274148111).to_bytes(4, "little"))

    def test_signed_version(self):
        header = BlockHeader(-1, NULL_HASH, NULL_HASH, 0, 0, 0)
        self.assertEqual(header.serialize()[:4], b"\xff\xff\xff\xff")
        self.assertEqual(BlockHeader.deserialize(header.serialize()).version, -1)
        bip9 = BlockHeader(0x20000001, NULL_HASH, NULL_HASH, 0, 0, 0xFFFFFFFF)
        self.assertEqual(BlockHeader.deserialize(bip9.serialize()).version, 0x20000001)

    def test_with_nonce(self):
        header = REGTEST.genesis.header
        other = header.with_nonce(3)
        self.assertEqual(other.nonce, 3)
        self.assertEqual(header.nonce, 2)
        self.assertNotEqual(other.hash, header.hash)
        self.assertEqual(other.serialize()[:76], header.serialize()[:76])


class BlockTests(SynchronousTestCase):

    def make_block(self, txs):
        root, mutated = merkle_root([tx.txid for tx in txs])
        self.assertFalse(mutated)
        header = BlockHeader(0x20000000, b"\x01" * 32, root, 1700000000, 0x207FFFFF, 9)
        return Block(header, txs)

    def test_genesis_round_trip(self):
        raw = REGTEST.genesis.serialize()
        block = Block.deserialize(raw)
        self.assertEqual(block.serialize(), raw)
        self.assertEqual(block.hash, REGTEST.genesis.hash)
        self.assertEqual(block.size, 285)
        self.assertEqual(raw[:80], block.header.serialize())
        self.assertEqual(Block.from_hex(raw.hex()).hash_hex, block.hash_hex)

    def test_many_tx_round_trip(self):
        txs = [REGTEST.genesis.txs[0]]
        # (the vectors repeat some transactions; a block must not)
        unique = {row[1]: None for row in load_tx_rows("tx_valid.json")}
        txs += [Transaction.from_hex(text) for text in unique]
        txs.append(Transaction.from_hex(CBTX_HEX))
        block = self.make_block(txs)
        raw = block.serialize()
        parsed = Block.deserialize(raw)
        self.assertEqual(parsed.serialize(), raw)
        self.assertEqual([tx.txid for tx in parsed.txs], [tx.txid for tx in txs])
        self.assertEqual(parsed.compute_merkle_root(), (block.header.merkle_root, False))

    def test_tx_count_over_fd(self):
        # 300 transactions: the count takes the 3-byte CompactSize form.
        txs = [Transaction([TxIn(OutPoint(sha256d(bytes((i % 256, i // 256))), i))],
                           [TxOut(i, b"")]) for i in range(300)]
        raw = self.make_block(txs).serialize()
        self.assertEqual(raw[80:83], compact_size(300))
        self.assertEqual(len(Block.deserialize(raw).txs), 300)

    def test_empty_block_serializes(self):
        block = Block(REGTEST.genesis.header, [])
        self.assertEqual(block.serialize(), REGTEST.genesis.header.serialize() + b"\x00")
        self.assertEqual(block.compute_merkle_root(), (NULL_HASH, False))

    def test_from_hex_rejects_whitespace(self):
        text = REGTEST.genesis.serialize().hex()
        self.assertRaises(DeserializationError, Block.from_hex, text + "\n")


def naive_merkle(hashes):
    """The merkle root as the whitepaper draws it: pair up, duplicating an odd last."""
    if len(hashes) == 1:
        return hashes[0]
    if len(hashes) % 2:
        hashes = hashes + [hashes[-1]]
    return naive_merkle([sha256d(hashes[i] + hashes[i + 1])
                         for i in range(0, len(hashes), 2)])


class MerkleTests(SynchronousTestCase):

    HASHES = [sha256d(bytes((i,))) for i in range(1, 12)]

    def test_empty(self):
        self.assertEqual(merkle_root([]), (NULL_HASH, False))

    def test_single(self):
        self.assertEqual(merkle_root(self.HASHES[:1]), (self.HASHES[0], False))
        self.assertEqual(REGTEST.genesis.compute_merkle_root(),
                         (REGTEST.genesis.txs[0].txid, False))

    def test_two(self):
        a, b = self.HASHES[:2]
        self.assertEqual(merkle_root([a, b]), (sha256d(a + b), False))

    def test_three(self):
        a, b, c = self.HASHES[:3]
        expected = sha256d(sha256d(a + b) + sha256d(c + c))
        self.assertEqual(merkle_root([a, b, c]), (expected, False))

    def test_against_naive(self):
        for n in range(1, len(self.HASHES) + 1):
            hashes = self.HASHES[:n]
            self.assertEqual(merkle_root(hashes), (naive_merkle(hashes), False), n)

    def test_bitcoin_block_100000(self):
        txids = [hex_to_hash(h) for h in (
            "8c14f0db3df150123e6f3dbbf30f8b955a8249b62ac1d1ff16284aefa3d06d87",
            "fff2525b8931402dd09222c50775608f75787bd2b87e56995a7bdd30f79702c4",
            "6359f0868171b1d194cbee1af2f16ea598ae8fad666d9b012c8ed2b79a236ec4",
            "e9a66845e05d5abc0ad04ec80f774a7e585c6e8db975962d069a522137b80c1d")]
        root, mutated = merkle_root(txids)
        self.assertEqual(hash_to_hex(root),
                         "f3e94742aca4b5ef85488dc37c06c3282295ffec960994b2c0d5ac2a25a95766")
        self.assertFalse(mutated)

    def test_mutation_duplicate_last_of_three(self):
        a, b, c = self.HASHES[:3]
        root, mutated = merkle_root([a, b, c])
        self.assertFalse(mutated)
        self.assertEqual(merkle_root([a, b, c, c]), (root, True))

    def test_mutation_duplicate_last_of_five(self):
        five = self.HASHES[:5]
        root, mutated = merkle_root(five)
        self.assertFalse(mutated)
        self.assertEqual(merkle_root(five + five[-1:]), (root, True))

    def test_mutation_duplicate_subtree(self):
        # CVE-2012-2459 one level up: [1..6] and [1..6, 5, 6] share a root.
        six = self.HASHES[:6]
        root, mutated = merkle_root(six)
        self.assertFalse(mutated)
        self.assertEqual(merkle_root(six + six[4:6]), (root, True))

    def test_duplicate_not_at_a_pair_is_not_flagged(self):
        a, b, c = self.HASHES[:3]
        # a duplicate that is never paired with itself does not collide with a shorter list
        self.assertFalse(merkle_root([a, b, a])[1])
        self.assertTrue(merkle_root([a, a, b])[1])

    def test_block_with_duplicated_tx(self):
        txs = [Transaction([TxIn(OutPoint(bytes((i,)) * 32, 0))], [TxOut(i, b"")])
               for i in range(3)]
        honest = Block(REGTEST.genesis.header, txs)
        mutated = Block(REGTEST.genesis.header, txs + txs[-1:])
        self.assertEqual(honest.compute_merkle_root()[0], mutated.compute_merkle_root()[0])
        self.assertFalse(honest.compute_merkle_root()[1])
        self.assertTrue(mutated.compute_merkle_root()[1])
