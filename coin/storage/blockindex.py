"""Persisted block-index rows (the in-memory side is ``coin.chain.index``)."""

from __future__ import annotations

from operator import itemgetter
from typing import Iterable, List, NamedTuple

from sqlalchemy import delete, select
from sqlalchemy.engine import Connection

from coin.chain.index import BlockIndexEntry
from coin.storage.compiled import raw_upserts
from coin.storage.errors import StorageError
from coin.storage.schema import block_index

CHAINWORK_BYTES = 32
_hash = itemgetter(0)
_height = itemgetter(1)


class IndexRow(NamedTuple):
    """One stored block-index row; field names match ``BlockIndexEntry`` attributes."""

    hash: bytes
    height: int
    prev_hash: bytes
    chainwork: int
    status: int
    tx_count: int
    chain_tx: int
    file_no: int
    data_pos: int
    undo_file: int
    undo_pos: int
    version: int
    merkle_root: bytes
    time: int
    bits: int
    nonce: int
    sequence_id: int


_COLUMNS = [block_index.c[name] for name in IndexRow._fields]
#: What an upsert writes: the entry's fields, then the flush's change sequence.
_WRITTEN = IndexRow._fields + ("seq",)


def encode_chainwork(work: int) -> bytes:
    """Fixed-width big-endian, so byte order is numeric order."""
    try:
        return work.to_bytes(CHAINWORK_BYTES, "big")
    except OverflowError:
        raise StorageError("chain work %d does not fit in 256 bits" % work) from None


def entry_row(entry: BlockIndexEntry) -> tuple:
    """The row of ``entry`` in ``IndexRow`` field order, chain work encoded."""
    return (entry.hash, entry.height, entry.prev_hash, encode_chainwork(entry.chainwork),
            entry.status, entry.tx_count, entry.chain_tx, entry.file_no, entry.data_pos,
            entry.undo_file, entry.undo_pos, entry.version, entry.merkle_root, entry.time,
            entry.bits, entry.nonce, entry.sequence_id)


def load_block_index_txn(conn: Connection, after_seq: int = -1) -> List[IndexRow]:
    """Every row written with a change sequence above ``after_seq`` (all by default),
    parents before children (ordered by height)."""
    query = select(*_COLUMNS)
    if after_seq < 0:
        query = query.order_by(block_index.c.height)
    else:
        # Sorted here: ORDER BY height would make SQLite scan the height index, every row.
        query = query.where(block_index.c.seq > after_seq)
    make = IndexRow._make
    out = [make((*row[:3], int.from_bytes(row[3], "big"), *row[4:]))
           for row in conn.execute(query).tuples()]
    if after_seq >= 0:
        out.sort(key=_height)
    return out


def upsert_block_index_txn(conn: Connection, entries: Iterable[BlockIndexEntry],
                           seq: int) -> int:
    """Insert or replace the rows of ``entries``, stamped with change sequence ``seq``;
    returns how many.

    Runs on the DBAPI cursor (3-4x faster than Core's executemany here: a
    flush during initial sync carries many thousands of rows), in hash order
    for B-tree locality.
    """
    rows = sorted(((*entry_row(entry), seq) for entry in entries), key=_hash)
    if rows:
        cursor = conn.connection.cursor()
        try:
            for stmt in raw_upserts(conn.dialect, block_index, _WRITTEN):
                stmt.executemany(cursor, rows)
        finally:
            cursor.close()
    return len(rows)


def delete_block_index_txn(conn: Connection) -> None:
    conn.execute(delete(block_index))
