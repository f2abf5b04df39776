"""An unspent output as the chain state keeps it, and block undo records.

``Coin`` is the value stored in the UTXO set and, once spent, in the block's
undo data so that a disconnect can restore it.
"""

from __future__ import annotations

import struct
from typing import List, Sequence

from coin.primitives.serialize import ByteReader, compact_size, i64, var_bytes
from coin.primitives.transaction import TxOut

#: The version, value and script length of a coin whose version and script length fit in
#: one CompactSize byte each (every standard coin): one pack instead of three encodings.
_SMALL_TAIL = struct.Struct("<BqB")


class Coin:
    """``txout`` created at ``height``; ``coinbase`` marks it for the maturity rule."""

    __slots__ = ("value", "script_pubkey", "height", "coinbase", "tx_version")

    def __init__(self, value: int, script_pubkey: bytes, height: int, coinbase: bool,
                 tx_version: int = 1) -> None:
        self.value = value
        self.script_pubkey = script_pubkey
        self.height = height
        self.coinbase = coinbase
        #: Version of the creating transaction (REST getutxos reports it as `txvers`).
        self.tx_version = tx_version

    @classmethod
    def from_txout(cls, txout: TxOut, height: int, coinbase: bool, tx_version: int) -> "Coin":
        return cls(txout.value, txout.script_pubkey, height, coinbase, tx_version)

    def txout(self) -> TxOut:
        return TxOut(self.value, self.script_pubkey)

    def serialize(self) -> bytes:
        """Core's undo serialization (TxInUndoSerializer): code, version, value, script."""
        code = compact_size(self.height * 2 + (1 if self.coinbase else 0))
        version = self.tx_version & 0xFFFFFFFF
        script = self.script_pubkey
        if version < 0xFD and len(script) < 0xFD:
            return code + _SMALL_TAIL.pack(version, self.value, len(script)) + script
        return code + compact_size(version) + i64(self.value) + var_bytes(script)

    @classmethod
    def read(cls, r: ByteReader) -> "Coin":
        code = r.read_compact_size(range_check=False)
        tx_version = r.read_compact_size(range_check=False)
        if tx_version >= 0x80000000:
            tx_version -= 1 << 32
        value = r.read_i64()
        script = r.read_var_bytes()
        return cls(value, script, code >> 1, bool(code & 1), tx_version)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Coin) and self.value == other.value
                and self.script_pubkey == other.script_pubkey and self.height == other.height
                and self.coinbase == other.coinbase and self.tx_version == other.tx_version)

    def __repr__(self) -> str:
        return "Coin(%d, %s, h=%d%s)" % (self.value, self.script_pubkey.hex(), self.height,
                                         ", coinbase" if self.coinbase else "")


class BlockUndoWriter:
    """Undo record of a block: for each non-coinbase tx, the coins its inputs spent.

    Built in one pass while block connect resolves the inputs: each transaction's spent
    coins are serialized once, as soon as they are found, straight into the record (no
    list of lists kept to be walked and serialized again afterwards).
    """

    __slots__ = ("_parts",)

    def __init__(self, spending_txs: int) -> None:
        self._parts = [compact_size(spending_txs)]

    def add_tx(self, spent: Sequence[Coin]) -> None:
        """The coins the next transaction's inputs spend, in input order."""
        parts = self._parts
        parts.append(compact_size(len(spent)))
        parts.extend([coin.serialize() for coin in spent])

    def record(self) -> bytes:
        return b"".join(self._parts)


def serialize_block_undo(spent: Sequence[Sequence[Coin]]) -> bytes:
    """The undo record of coins already gathered per transaction (the inverse of
    :func:`deserialize_block_undo`)."""
    writer = BlockUndoWriter(len(spent))
    for tx_spent in spent:
        writer.add_tx(tx_spent)
    return writer.record()


def deserialize_block_undo(data: bytes) -> List[List[Coin]]:
    r = ByteReader(data)
    out = [[Coin.read(r) for _ in range(r.read_compact_size())]
           for _ in range(r.read_compact_size())]
    r.assert_end()
    return out
