"""Block headers (80 bytes) and blocks."""

from __future__ import annotations

import struct
from typing import Iterable, List, Optional, Sequence, Tuple

from coin.primitives.hashes import hash_to_hex, sha256d
from coin.primitives.merkle import merkle_root
from coin.primitives.serialize import ByteReader, compact_size, parse_hex
from coin.primitives.transaction import Transaction

HEADER_SIZE = 80
_HEADER = struct.Struct("<i32s32sIII")


class BlockHeader:
    __slots__ = ("version", "prev_hash", "merkle_root", "time", "bits", "nonce", "_hash")

    def __init__(self, version: int, prev_hash: bytes, merkle_root: bytes,
                 time: int, bits: int, nonce: int) -> None:
        self.version = version
        self.prev_hash = prev_hash
        self.merkle_root = merkle_root
        self.time = time
        self.bits = bits
        self.nonce = nonce
        self._hash: Optional[bytes] = None

    def serialize(self) -> bytes:
        return _HEADER.pack(self.version, self.prev_hash, self.merkle_root,
                            self.time, self.bits, self.nonce)

    @classmethod
    def read(cls, r: ByteReader) -> "BlockHeader":
        raw = r.read(HEADER_SIZE)
        header = cls(*_HEADER.unpack(raw))
        header._hash = sha256d(raw)
        return header

    @classmethod
    def deserialize(cls, data: bytes) -> "BlockHeader":
        r = ByteReader(data)
        header = cls.read(r)
        r.assert_end()
        return header

    @property
    def hash(self) -> bytes:
        """Block hash (SHA256d of the header), internal byte order."""
        h = self._hash
        if h is None:
            h = self._hash = sha256d(self.serialize())
        return h

    @property
    def hash_hex(self) -> str:
        return hash_to_hex(self.hash)

    def with_nonce(self, nonce: int) -> "BlockHeader":
        return BlockHeader(self.version, self.prev_hash, self.merkle_root,
                           self.time, self.bits, nonce)

    def __repr__(self) -> str:
        return "BlockHeader(%s)" % self.hash_hex


class Block:
    """A header and its transactions (the first must be the coinbase)."""

    __slots__ = ("header", "txs", "_raw")

    def __init__(self, header: BlockHeader, txs: Iterable[Transaction]) -> None:
        self.header = header
        self.txs: Sequence[Transaction] = tuple(txs)
        self._raw: Optional[bytes] = None

    @property
    def hash(self) -> bytes:
        return self.header.hash

    @property
    def hash_hex(self) -> str:
        return self.header.hash_hex

    def serialize(self) -> bytes:
        raw = self._raw
        if raw is None:
            parts: List[bytes] = [self.header.serialize(), compact_size(len(self.txs))]
            parts.extend(tx.serialize() for tx in self.txs)
            raw = self._raw = b"".join(parts)
        return raw

    @property
    def size(self) -> int:
        return len(self.serialize())

    @classmethod
    def read(cls, r: ByteReader) -> "Block":
        start = r.offset
        header = BlockHeader.read(r)
        count = r.read_compact_size()
        txs = [Transaction.read(r) for _ in range(count)]
        block = cls(header, txs)
        block._raw = r.data[start:r.offset]
        return block

    @classmethod
    def deserialize(cls, data: bytes) -> "Block":
        r = ByteReader(data)
        block = cls.read(r)
        r.assert_end()
        return block

    @classmethod
    def from_hex(cls, text: str) -> "Block":
        return cls.deserialize(parse_hex(text))

    def compute_merkle_root(self) -> Tuple[bytes, bool]:
        """``(root, mutated)`` over the transaction ids."""
        return merkle_root([tx.txid for tx in self.txs])

    def __repr__(self) -> str:
        return "Block(%s, %d txs)" % (self.hash_hex, len(self.txs))
