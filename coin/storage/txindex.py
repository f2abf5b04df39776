"""The ``tx_index`` table (-txindex) and its marker in ``chain_state``.

A row maps a txid to the block holding it: the block's hash and payload
position (``file_no``, ``block_pos``, as in ``block_index``) plus the
transaction's byte offset inside the block, Core's CDiskTxPos.  The marker
``txindex_best`` names the last block whose rows are committed; rows and
marker are always written in one transaction, so after a crash the table is
exactly at its marker.
"""

from __future__ import annotations

from typing import List, NamedTuple, Optional, Sequence

from sqlalchemy import and_, bindparam, delete, exists, select
from sqlalchemy.engine import Connection

from coin.storage import chainmeta
from coin.storage.dialect import upsert_statements
from coin.storage.schema import tx_index

TXINDEX_BEST = "txindex_best"


class TxPos(NamedTuple):
    """Where a transaction is stored."""

    block_hash: bytes
    file_no: int
    block_pos: int
    tx_offset: int


class TxRow(NamedTuple):
    txid: bytes
    block_hash: bytes
    file_no: int
    block_pos: int
    tx_offset: int


def get_best_txn(conn: Connection) -> Optional[bytes]:
    """Hash of the last block whose transactions are indexed, or None."""
    return chainmeta.get_value_txn(conn, TXINDEX_BEST)


def lookup_txn(conn: Connection, txid: bytes) -> Optional[TxPos]:
    row = conn.execute(select(tx_index.c.block_hash, tx_index.c.file_no, tx_index.c.block_pos,
                              tx_index.c.tx_offset).where(tx_index.c.txid == txid)).first()
    if row is None:
        return None
    return TxPos(bytes(row[0]), row[1], row[2], row[3])


def apply_txn(conn: Connection, removed: Sequence[tuple], added: Sequence[TxRow],
              best: bytes) -> None:
    """Remove ``(block_hash, [txids])`` entries, upsert ``added``, move the marker to ``best``.

    Call inside one transaction so rows and marker commit together.
    """
    if removed:
        stmt = delete(tx_index).where(and_(tx_index.c.txid == bindparam("t"),
                                           tx_index.c.block_hash == bindparam("b")))
        params = [{"t": txid, "b": block_hash} for block_hash, txids in removed
                  for txid in txids]
        if params:
            conn.execute(stmt, params)
    if added:
        rows = [row._asdict() for row in added]
        for stmt in upsert_statements(tx_index, conn.dialect.name):
            conn.execute(stmt, rows)
    chainmeta.set_value_txn(conn, TXINDEX_BEST, best)


def has_data_txn(conn: Connection) -> bool:
    """Whether the marker or any row exists (the index was enabled before)."""
    if get_best_txn(conn) is not None:
        return True
    return bool(conn.execute(select(exists().select_from(tx_index))).scalar())


def wipe_txn(conn: Connection) -> None:
    """Drop every row and the marker."""
    conn.execute(delete(tx_index))
    chainmeta.delete_value_txn(conn, TXINDEX_BEST)


def rows_for_block(block_hash: bytes, file_no: int, block_pos: int,
                   txs: Sequence[tuple]) -> List[TxRow]:
    """Rows for a block's ``(txid, tx_offset)`` pairs."""
    return [TxRow(txid, block_hash, file_no, block_pos, offset) for txid, offset in txs]
