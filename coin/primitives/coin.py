"""An unspent output as the chain state keeps it, and block undo records.

``Coin`` is the value stored in the UTXO set and, once spent, in the block's
undo data so that a disconnect can restore it.
"""

from __future__ import annotations

from typing import List, Sequence

from coin.primitives.serialize import ByteReader, compact_size, i64, var_bytes
from coin.primitives.transaction import TxOut


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
        return (compact_size(self.height * 2 + (1 if self.coinbase else 0))
                + compact_size(self.tx_version & 0xFFFFFFFF)
                + i64(self.value) + var_bytes(self.script_pubkey))

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


def serialize_block_undo(spent: Sequence[Sequence[Coin]]) -> bytes:
    """Undo record of a block: for each non-coinbase tx, the coins its inputs spent."""
    parts = [compact_size(len(spent))]
    for tx_spent in spent:
        parts.append(compact_size(len(tx_spent)))
        parts.extend(c.serialize() for c in tx_spent)
    return b"".join(parts)


def deserialize_block_undo(data: bytes) -> List[List[Coin]]:
    r = ByteReader(data)
    out = [[Coin.read(r) for _ in range(r.read_compact_size())]
           for _ in range(r.read_compact_size())]
    r.assert_end()
    return out
