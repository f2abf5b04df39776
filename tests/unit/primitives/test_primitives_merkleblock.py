"""Core's partial merkle tree and merkle block (the ``gettxoutproof`` format): a published
vector, Core's malleability case, and hypothesis properties of build / extract / serialize.

Settings come from the profile in ``tests/__init__.py`` (200 examples, derandomized).
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from twisted.trial.unittest import SynchronousTestCase

from coin.primitives.hashes import hash_to_hex
from coin.primitives.merkle import NULL_HASH, merkle_root
from coin.primitives.merkleblock import MAX_PROOF_TRANSACTIONS, MerkleBlock, PartialMerkleTree
from coin.primitives.serialize import ByteReader, DeserializationError

#: The merkleblock message of the Bitcoin developer reference (P2P network, "merkleblock"):
#: a 7-transaction block, four hashes, flags 0x1d, matching its fifth transaction.
REFERENCE_MERKLEBLOCK = (
    "0100000082bb869cf3a793432a66e826e05a6fc37469f8efb7421dc880670100000000007f16c5962e8bd963"
    "659c793ce370d95f093bc7e367117b3c30c1f8fdd0d9728776381b4d4c86041b554b85290700000004361226"
    "2624047ee87660be1a707519a443b1c1ce3d248cbfc6c15870f6c5daa2019f5b01d4195ecbc9398fbf3c3b1f"
    "a9bb3183301d7a1fb3bd174fcfa40a2b6541ed70551dd7e841883ab8f0b16bf04176b7d1480e4f0af9f3d4c3"
    "595768d06820d2a7bc994987302e5b1ac80fc425fe25f8b63169ea78e68fbaaefa59379bbf011d")

_txids = st.lists(st.binary(min_size=32, max_size=32), min_size=1, max_size=40, unique=True)


def _number(n: int) -> bytes:
    """Core's ArithToUint256(n) in internal byte order."""
    return n.to_bytes(32, "little")


def _roundtrip(tree: PartialMerkleTree) -> PartialMerkleTree:
    r = ByteReader(tree.serialize())
    parsed = PartialMerkleTree.read(r)
    r.assert_end()
    return parsed


class ReferenceVectorTests(SynchronousTestCase):
    def test_reference_merkleblock(self) -> None:
        raw = bytes.fromhex(REFERENCE_MERKLEBLOCK)
        merkle_block = MerkleBlock.deserialize(raw)
        self.assertEqual(merkle_block.serialize(), raw)
        self.assertEqual(merkle_block.tree.tx_count, 7)
        root, matched = merkle_block.tree.extract_matches()
        self.assertEqual(root, merkle_block.header.merkle_root)
        self.assertEqual([(i, hash_to_hex(txid)) for i, txid in matched],
                         [(4, "652b0aa4cf4f17bdb31f7a1d308331bba91f3b3cbf8f39c9cb5e19d4015b9f01")])

    def test_duplicated_subtree_is_refused(self) -> None:
        """Core's pmt_malleability: txids 9 and 10 repeated at the end of 12."""
        txids = [_number(n) for n in (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 9, 10)]
        matches = [False] * 9 + [True, True, False]
        self.assertEqual(PartialMerkleTree.build(txids, matches).extract_matches(), (NULL_HASH, []))

    def test_malformed_trees(self) -> None:
        tree = PartialMerkleTree.build([_number(n) for n in range(1, 6)], [False, True] + [False] * 3)
        for tx_count, hashes, bits in (
                (0, tree.hashes, tree.bits),                            # no transactions
                (MAX_PROOF_TRANSACTIONS + 1, tree.hashes, tree.bits),   # more than a block holds
                (tree.tx_count, tree.hashes + [NULL_HASH], tree.bits),  # a hash left over
                (tree.tx_count, tree.hashes[:-1], tree.bits),           # a hash missing
                (tree.tx_count, tree.hashes, tree.bits[:-2]),           # flags missing
                (tree.tx_count, tree.hashes, tree.bits + [False] * 8),  # a flag byte left over
                (2, tree.hashes, tree.bits)):                           # more hashes than txs
            self.assertEqual(PartialMerkleTree(tx_count, hashes, bits).extract_matches(),
                             (NULL_HASH, []))

    def test_truncated_proof(self) -> None:
        raw = bytes.fromhex(REFERENCE_MERKLEBLOCK)
        for end in (79, 83, 85, len(raw) - 1):
            self.assertRaises(DeserializationError, MerkleBlock.deserialize, raw[:end])


class PartialMerkleTreeProperties(SynchronousTestCase):
    @given(_txids, st.data())
    def test_matches_and_root_survive_serialization(self, txids, data) -> None:
        matches = data.draw(st.lists(st.booleans(), min_size=len(txids), max_size=len(txids)))
        tree = _roundtrip(PartialMerkleTree.build(txids, matches))
        root, matched = tree.extract_matches()
        self.assertEqual(root, merkle_root(txids)[0])
        self.assertEqual(matched, [(i, txid) for i, txid in enumerate(txids) if matches[i]])
        # Core's size bound: no more hashes than transactions, flags in whole bytes.
        self.assertLessEqual(len(tree.hashes), len(txids))
        self.assertEqual(len(tree.bits) % 8, 0)

    @given(_txids, st.data())
    def test_any_changed_hash_breaks_the_root(self, txids, data) -> None:
        matches = data.draw(st.lists(st.booleans(), min_size=len(txids), max_size=len(txids)))
        tree = PartialMerkleTree.build(txids, matches)
        index = data.draw(st.integers(0, len(tree.hashes) - 1))
        changed = bytearray(tree.hashes[index])
        changed[data.draw(st.integers(0, 31))] ^= 1 << data.draw(st.integers(0, 7))
        tree.hashes[index] = bytes(changed)
        self.assertNotEqual(tree.extract_matches()[0], merkle_root(txids)[0])
