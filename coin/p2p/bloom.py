"""Core's CBloomFilter (BIP 37): MurmurHash3 over a bit field, as ``govsync`` carries it to
name the votes the asker already has."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from coin.primitives.serialize import ByteReader, DeserializationError, u32, var_bytes

#: BIP 37's limits: 36,000 bytes of filter, 50 hash functions.
MAX_BLOOM_FILTER_SIZE = 36_000
MAX_HASH_FUNCS = 50
BLOOM_UPDATE_ALL = 1
_LN2 = math.log(2)
_M32 = 0xFFFFFFFF


def murmur3(seed: int, data: bytes) -> int:
    """MurmurHash3 x86 32-bit, as Core's MurmurHash3()."""
    c1, c2 = 0xCC9E2D51, 0x1B873593
    h = seed & _M32
    blocks = len(data) // 4

    def mix(k: int) -> int:
        k = (k * c1) & _M32
        k = ((k << 15) | (k >> 17)) & _M32
        return (k * c2) & _M32

    for i in range(blocks):
        h ^= mix(int.from_bytes(data[4 * i:4 * i + 4], "little"))
        h = ((h << 13) | (h >> 19)) & _M32
        h = (h * 5 + 0xE6546B64) & _M32
    tail = data[4 * blocks:]
    if tail:
        h ^= mix(int.from_bytes(tail, "little"))
    h ^= len(data)
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _M32
    return h ^ (h >> 16)


@dataclass(eq=True)
class BloomFilter:
    """A filter of ``len(data) * 8`` bits; an empty one holds nothing."""

    data: bytearray = field(default_factory=bytearray)
    hash_funcs: int = 0
    tweak: int = 0
    flags: int = 0

    @classmethod
    def sized(cls, elements: int, fp_rate: float, tweak: int, flags: int = BLOOM_UPDATE_ALL
              ) -> "BloomFilter":
        """Core's CBloomFilter(nElements, nFPRate, nTweak, nFlags) sizing."""
        elements = max(1, elements)
        size = int(min(-1 / _LN2 ** 2 * elements * math.log(fp_rate), MAX_BLOOM_FILTER_SIZE * 8) / 8)
        funcs = int(min(size * 8 / elements * _LN2, MAX_HASH_FUNCS))
        return cls(bytearray(max(1, size)), funcs, tweak & _M32, flags)

    def _bits(self, key: bytes):
        size = len(self.data) * 8
        for n in range(self.hash_funcs):
            yield murmur3((n * 0xFBA4C795 + self.tweak) & _M32, key) % size

    def insert(self, key: bytes) -> None:
        if self.data:
            for bit in self._bits(key):
                self.data[bit >> 3] |= 1 << (bit & 7)

    def __contains__(self, key: bytes) -> bool:
        if not self.data:
            return False
        return all(self.data[bit >> 3] & (1 << (bit & 7)) for bit in self._bits(key))

    def serialize(self) -> bytes:
        return var_bytes(bytes(self.data)) + u32(self.hash_funcs) + u32(self.tweak) + bytes((self.flags,))

    @classmethod
    def read(cls, r: ByteReader) -> "BloomFilter":
        size = r.read_compact_size()
        if size > MAX_BLOOM_FILTER_SIZE:
            raise DeserializationError("bloom filter too large")
        data = bytearray(r.read(size))
        funcs, tweak = r.read_u32(), r.read_u32()
        if funcs > MAX_HASH_FUNCS:
            raise DeserializationError("too many bloom filter hash functions")
        return cls(data, funcs, tweak, r.read_u8())
