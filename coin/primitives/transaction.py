"""Transactions: outpoints, inputs, outputs and the DIP2 version/type envelope.

Objects are treated as immutable once built (inputs and outputs are tuples);
ids and sizes are computed once and cached.  Build a new object rather than
mutating one whose id has been read.
"""

from __future__ import annotations

from typing import Iterable, Optional, Sequence, Tuple

from coin.primitives.hashes import hash_to_hex, sha256d
from coin.primitives.serialize import (
    ByteReader,
    compact_size,
    i64,
    parse_hex,
    u32,
    var_bytes,
)

NULL_HASH = b"\x00" * 32
NULL_INDEX = 0xFFFFFFFF
SEQUENCE_FINAL = 0xFFFFFFFF

#: Lock times below this are block heights, at or above it Unix times.
LOCKTIME_THRESHOLD = 500_000_000

# BIP68: the meaning of nSequence as a relative lock time.
SEQUENCE_LOCKTIME_DISABLE_FLAG = 1 << 31
SEQUENCE_LOCKTIME_TYPE_FLAG = 1 << 22
SEQUENCE_LOCKTIME_MASK = 0x0000FFFF
SEQUENCE_LOCKTIME_GRANULARITY = 9

#: Version of the transactions this node builds (wallet spends, coinbases, createrawtransaction):
#: Core 0.17's CTransaction::CURRENT_VERSION. Version 1 stays valid and standard.
CURRENT_TX_VERSION = 2

#: DIP2: version 3 transactions with a non-zero type carry an extra payload.
SPECIAL_TX_VERSION = 3
TX_TYPE_NORMAL = 0


class OutPoint:
    """A reference to output ``n`` of transaction ``txid`` (internal byte order)."""

    __slots__ = ("txid", "n")

    def __init__(self, txid: bytes = NULL_HASH, n: int = NULL_INDEX) -> None:
        self.txid = txid
        self.n = n

    def is_null(self) -> bool:
        return self.n == NULL_INDEX and self.txid == NULL_HASH

    def serialize(self) -> bytes:
        return self.txid + u32(self.n)

    @classmethod
    def read(cls, r: ByteReader) -> "OutPoint":
        return cls(r.read(32), r.read_u32())

    def key(self) -> Tuple[bytes, int]:
        return (self.txid, self.n)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OutPoint) and self.txid == other.txid and self.n == other.n

    def __hash__(self) -> int:
        return hash((self.txid, self.n))

    def __repr__(self) -> str:
        return "OutPoint(%s, %d)" % (hash_to_hex(self.txid), self.n)


class TxIn:
    __slots__ = ("prevout", "script_sig", "sequence")

    def __init__(self, prevout: OutPoint, script_sig: bytes = b"",
                 sequence: int = SEQUENCE_FINAL) -> None:
        self.prevout = prevout
        self.script_sig = script_sig
        self.sequence = sequence

    def serialize(self) -> bytes:
        return self.prevout.serialize() + var_bytes(self.script_sig) + u32(self.sequence)

    @classmethod
    def read(cls, r: ByteReader) -> "TxIn":
        return cls(OutPoint.read(r), r.read_var_bytes(), r.read_u32())

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, TxIn) and self.prevout == other.prevout
                and self.script_sig == other.script_sig and self.sequence == other.sequence)

    def __repr__(self) -> str:
        return "TxIn(%r, %s, %d)" % (self.prevout, self.script_sig.hex(), self.sequence)


class TxOut:
    __slots__ = ("value", "script_pubkey")

    def __init__(self, value: int, script_pubkey: bytes) -> None:
        self.value = value
        self.script_pubkey = script_pubkey

    def serialize(self) -> bytes:
        return i64(self.value) + var_bytes(self.script_pubkey)

    @classmethod
    def read(cls, r: ByteReader) -> "TxOut":
        return cls(r.read_i64(), r.read_var_bytes())

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, TxOut) and self.value == other.value
                and self.script_pubkey == other.script_pubkey)

    def __repr__(self) -> str:
        return "TxOut(%d, %s)" % (self.value, self.script_pubkey.hex())


class Transaction:
    """A transaction.  ``version`` and ``tx_type`` share the 32-bit version field (DIP2)."""

    __slots__ = ("version", "tx_type", "vin", "vout", "locktime", "extra_payload",
                 "_raw", "_txid")

    def __init__(self, vin: Iterable[TxIn] = (), vout: Iterable[TxOut] = (),
                 locktime: int = 0, version: int = 1, tx_type: int = TX_TYPE_NORMAL,
                 extra_payload: bytes = b"") -> None:
        self.version = version
        self.tx_type = tx_type
        self.vin: Sequence[TxIn] = tuple(vin)
        self.vout: Sequence[TxOut] = tuple(vout)
        self.locktime = locktime
        self.extra_payload = extra_payload
        self._raw: Optional[bytes] = None
        self._txid: Optional[bytes] = None

    def has_extra_payload(self) -> bool:
        return self.version == SPECIAL_TX_VERSION and self.tx_type != TX_TYPE_NORMAL

    def serialize(self) -> bytes:
        raw = self._raw
        if raw is None:
            version_field = ((self.tx_type & 0xFFFF) << 16) | (self.version & 0xFFFF)
            parts = [u32(version_field), compact_size(len(self.vin))]
            parts.extend(txin.serialize() for txin in self.vin)
            parts.append(compact_size(len(self.vout)))
            parts.extend(txout.serialize() for txout in self.vout)
            parts.append(u32(self.locktime))
            if self.has_extra_payload():
                parts.append(var_bytes(self.extra_payload))
            raw = self._raw = b"".join(parts)
        return raw

    @classmethod
    def read(cls, r: ByteReader) -> "Transaction":
        start = r.offset
        version_field = r.read_u32()
        version = version_field & 0xFFFF
        if version >= 0x8000:
            version -= 0x10000  # int16 in Dash
        tx_type = (version_field >> 16) & 0xFFFF
        vin = [TxIn.read(r) for _ in range(r.read_compact_size())]
        vout = [TxOut.read(r) for _ in range(r.read_compact_size())]
        locktime = r.read_u32()
        tx = cls(vin, vout, locktime, version, tx_type)
        if tx.has_extra_payload():
            tx.extra_payload = r.read_var_bytes()
        tx._raw = r.data[start:r.offset]
        return tx

    @classmethod
    def deserialize(cls, data: bytes) -> "Transaction":
        """Parse exactly one transaction; trailing bytes are an error."""
        r = ByteReader(data)
        tx = cls.read(r)
        r.assert_end()
        return tx

    @classmethod
    def from_hex(cls, text: str) -> "Transaction":
        return cls.deserialize(parse_hex(text))

    @property
    def txid(self) -> bytes:
        """Transaction id in internal byte order."""
        h = self._txid
        if h is None:
            h = self._txid = sha256d(self.serialize())
        return h

    @property
    def txid_hex(self) -> str:
        return hash_to_hex(self.txid)

    @property
    def size(self) -> int:
        return len(self.serialize())

    def is_coinbase(self) -> bool:
        return len(self.vin) == 1 and self.vin[0].prevout.is_null()

    def total_out(self) -> int:
        return sum(o.value for o in self.vout)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Transaction) and self.serialize() == other.serialize()

    def __hash__(self) -> int:
        return hash(self.txid)

    def __repr__(self) -> str:
        return "Transaction(%s)" % self.txid_hex
