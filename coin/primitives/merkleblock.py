"""Core's CMerkleBlock: a block header and a partial merkle tree (CPartialMerkleTree, BIP 37)
proving which transactions the block holds; the proof format of ``gettxoutproof``."""

from __future__ import annotations

from typing import AbstractSet, List, Sequence, Tuple

from coin.chainparams import MAX_BLOCK_SIZE
from coin.primitives.block import Block, BlockHeader
from coin.primitives.hashes import sha256d
from coin.primitives.merkle import NULL_HASH
from coin.primitives.serialize import ByteReader, DeserializationError, compact_size, u32


#: Core's bound on a partial tree's transaction count: no block holds more transactions
#: than fit at the smallest transaction size (60 bytes, Dash's MaxBlockSize / 60).
MAX_PROOF_TRANSACTIONS = MAX_BLOCK_SIZE // 60


class PartialMerkleTree:
    """A merkle tree pruned to the branches of matched transactions (Core's CPartialMerkleTree).

    ``bits`` holds one flag per node visited depth-first (is it, or is it above, a match);
    ``hashes`` holds the hash of each node where the walk stopped. The serialized form is
    Core's: u32 transaction count, the hashes, and the flags packed eight to a byte.
    """

    __slots__ = ("tx_count", "hashes", "bits")

    def __init__(self, tx_count: int, hashes: List[bytes], bits: List[bool]) -> None:
        self.tx_count = tx_count
        self.hashes = hashes
        self.bits = bits

    def _width(self, height: int) -> int:
        return (self.tx_count + (1 << height) - 1) >> height

    def _height(self) -> int:
        height = 0
        while self._width(height) > 1:
            height += 1
        return height

    @classmethod
    def build(cls, txids: Sequence[bytes], matches: Sequence[bool]) -> "PartialMerkleTree":
        """The tree of ``txids`` (a block's, in order) that proves those flagged in ``matches``."""
        tree = cls(len(txids), [], [])

        def subtree_hash(height: int, pos: int) -> bytes:
            if height == 0:
                return txids[pos]
            left = subtree_hash(height - 1, pos * 2)
            right = subtree_hash(height - 1, pos * 2 + 1) if pos * 2 + 1 < tree._width(height - 1) else left
            return sha256d(left + right)

        def walk(height: int, pos: int) -> None:
            parent_of_match = any(matches[pos << height:min((pos + 1) << height, len(txids))])
            tree.bits.append(parent_of_match)
            if height == 0 or not parent_of_match:
                tree.hashes.append(subtree_hash(height, pos))
                return
            walk(height - 1, pos * 2)
            if pos * 2 + 1 < tree._width(height - 1):
                walk(height - 1, pos * 2 + 1)

        if txids:
            walk(tree._height(), 0)
        return tree

    def extract_matches(self) -> Tuple[bytes, List[Tuple[int, bytes]]]:
        """Return ``(root, [(index, txid)])``; the root is NULL_HASH for a malformed tree.

        Malformed, as Core's ExtractMatches: no or too many transactions, more hashes than
        transactions or than flags, flags or hashes left over or missing, or two identical
        siblings (CVE-2012-2459, which would let a proof claim a duplicated transaction).
        """
        matched: List[Tuple[int, bytes]] = []
        if (self.tx_count == 0 or self.tx_count > MAX_PROOF_TRANSACTIONS
                or len(self.hashes) > self.tx_count or len(self.bits) < len(self.hashes)):
            return NULL_HASH, []
        used = [0, 0]  # flags, hashes

        def walk(height: int, pos: int) -> bytes:
            if used[0] >= len(self.bits):
                raise ValueError("out of flags")
            parent_of_match = self.bits[used[0]]
            used[0] += 1
            if height == 0 or not parent_of_match:
                if used[1] >= len(self.hashes):
                    raise ValueError("out of hashes")
                node = self.hashes[used[1]]
                used[1] += 1
                if height == 0 and parent_of_match:
                    matched.append((pos, node))
                return node
            left = walk(height - 1, pos * 2)
            if pos * 2 + 1 < self._width(height - 1):
                right = walk(height - 1, pos * 2 + 1)
                if right == left:
                    raise ValueError("identical siblings")
            else:
                right = left
            return sha256d(left + right)

        try:
            root = walk(self._height(), 0)
        except ValueError:
            return NULL_HASH, []
        if (used[0] + 7) // 8 != (len(self.bits) + 7) // 8 or used[1] != len(self.hashes):
            return NULL_HASH, []
        return root, matched

    def serialize(self) -> bytes:
        flags = bytearray((len(self.bits) + 7) // 8)
        for i, bit in enumerate(self.bits):
            if bit:
                flags[i >> 3] |= 1 << (i & 7)
        return (u32(self.tx_count) + compact_size(len(self.hashes)) + b"".join(self.hashes)
                + compact_size(len(flags)) + bytes(flags))

    @classmethod
    def read(cls, r: ByteReader) -> "PartialMerkleTree":
        tx_count = r.read_u32()
        count = r.read_compact_size()
        if count * 32 > r.remaining():
            raise DeserializationError("partial merkle tree: hashes past the end")
        hashes = [r.read(32) for _ in range(count)]
        flags = r.read_var_bytes()
        bits = [bool(flags[i >> 3] & (1 << (i & 7))) for i in range(len(flags) * 8)]
        return cls(tx_count, hashes, bits)


class MerkleBlock:
    """A header and the partial tree of its block's transactions (Core's CMerkleBlock)."""

    __slots__ = ("header", "tree")

    def __init__(self, header: BlockHeader, tree: PartialMerkleTree) -> None:
        self.header = header
        self.tree = tree

    @classmethod
    def of_block(cls, block: Block, txids: AbstractSet[bytes]) -> "MerkleBlock":
        """The proof that ``block`` holds those of its transactions whose txid is in ``txids``."""
        ids = [tx.txid for tx in block.txs]
        return cls(block.header, PartialMerkleTree.build(ids, [txid in txids for txid in ids]))

    def serialize(self) -> bytes:
        return self.header.serialize() + self.tree.serialize()

    @classmethod
    def deserialize(cls, data: bytes) -> "MerkleBlock":
        """Parse a whole proof; trailing bytes are ignored, as Core's stream read ignores them."""
        r = ByteReader(data)
        return cls(BlockHeader.read(r), PartialMerkleTree.read(r))
