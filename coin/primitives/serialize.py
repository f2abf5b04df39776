"""Strict stream (de)serialization in the Bitcoin wire format.

Reads detect truncation and non-canonical CompactSize encodings; callers that
parse a whole object call :meth:`ByteReader.assert_end` so trailing bytes are
rejected too.
"""

from __future__ import annotations

import re
import struct

#: Core's MAX_SIZE: no CompactSize count may exceed this.
MAX_SIZE = 0x02000000

_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")
_I32 = struct.Struct("<i")
_U64 = struct.Struct("<Q")
_I64 = struct.Struct("<q")
_HEX = re.compile(r"(?:[0-9a-fA-F]{2})*\Z")


class DeserializationError(ValueError):
    """The bytes are not a valid encoding of the object asked for."""


class ByteReader:
    """A cursor over an immutable byte string."""

    __slots__ = ("data", "offset")

    def __init__(self, data: bytes, offset: int = 0) -> None:
        self.data = bytes(data) if not isinstance(data, bytes) else data
        self.offset = offset

    def remaining(self) -> int:
        return len(self.data) - self.offset

    def read(self, n: int) -> bytes:
        end = self.offset + n
        if n < 0 or end > len(self.data):
            raise DeserializationError("unexpected end of data")
        chunk = self.data[self.offset:end]
        self.offset = end
        return chunk

    def _unpack(self, fmt: struct.Struct) -> int:
        end = self.offset + fmt.size
        if end > len(self.data):
            raise DeserializationError("unexpected end of data")
        value: int
        (value,) = fmt.unpack_from(self.data, self.offset)
        self.offset = end
        return value

    def read_u8(self) -> int:
        if self.offset >= len(self.data):
            raise DeserializationError("unexpected end of data")
        value = self.data[self.offset]
        self.offset += 1
        return value

    def read_u16(self) -> int:
        return self._unpack(_U16)

    def read_u32(self) -> int:
        return self._unpack(_U32)

    def read_i32(self) -> int:
        return self._unpack(_I32)

    def read_u64(self) -> int:
        return self._unpack(_U64)

    def read_i64(self) -> int:
        return self._unpack(_I64)

    def read_compact_size(self, range_check: bool = True) -> int:
        first = self.read_u8()
        if first < 0xFD:
            value = first
        elif first == 0xFD:
            value = self.read_u16()
            if value < 0xFD:
                raise DeserializationError("non-canonical ReadCompactSize()")
        elif first == 0xFE:
            value = self.read_u32()
            if value < 0x10000:
                raise DeserializationError("non-canonical ReadCompactSize()")
        else:
            value = self.read_u64()
            if value < 0x100000000:
                raise DeserializationError("non-canonical ReadCompactSize()")
        if range_check and value > MAX_SIZE:
            raise DeserializationError("ReadCompactSize(): size too large")
        return value

    def read_var_bytes(self) -> bytes:
        return self.read(self.read_compact_size())

    def assert_end(self) -> None:
        if self.offset != len(self.data):
            raise DeserializationError("data after end of object")


def parse_hex(text: str) -> bytes:
    """Hex text -> bytes, as strictly as Core's IsHex (no whitespace, even length)."""
    if not isinstance(text, str) or not _HEX.match(text):
        raise DeserializationError("not hex")
    return bytes.fromhex(text)


def compact_size(n: int) -> bytes:
    """Encode ``n`` as a CompactSize."""
    if n < 0xFD:
        return bytes((n,))
    if n <= 0xFFFF:
        return b"\xfd" + _U16.pack(n)
    if n <= 0xFFFFFFFF:
        return b"\xfe" + _U32.pack(n)
    return b"\xff" + _U64.pack(n)


def var_bytes(data: bytes) -> bytes:
    """Length-prefixed bytes."""
    return compact_size(len(data)) + data


def varint(n: int) -> bytes:
    """Core's VARINT (MSB base-128, each continuation digit offset by one), ``n >= 0``.

    Not a wire format here; gettxoutsetinfo's hash_serialized_2 hashes it.
    """
    digits = [n & 0x7F]
    while n > 0x7F:
        n = (n >> 7) - 1
        digits.append((n & 0x7F) | 0x80)
    return bytes(reversed(digits))


def u32(n: int) -> bytes:
    return _U32.pack(n)


def i32(n: int) -> bytes:
    return _I32.pack(n)


def u64(n: int) -> bytes:
    return _U64.pack(n)


def i64(n: int) -> bytes:
    return _I64.pack(n)
