"""The ``chain_state`` key/value table: best-block marker, reindex flag, index change counter."""

from __future__ import annotations

from typing import Optional

from sqlalchemy import delete, select
from sqlalchemy.engine import Connection

from coin.storage.dialect import upsert_statements
from coin.storage.schema import chain_state

BEST_BLOCK = "best_block"
REINDEXING = "reindexing"
#: Set once block or undo files have been pruned; never cleared (Core's fHavePruned).
HAVE_PRUNED = "have_pruned"
#: The block index's change counter: every flush that writes rows stamps them with a new value.
INDEX_SEQ = "index_seq"
#: The counter's value when the block index was last wiped (-reindex): rows written before
#: it are gone, so a reader that loaded only up to it must load everything again.
INDEX_WIPED = "index_wiped"


def get_value_txn(conn: Connection, key: str) -> Optional[bytes]:
    return conn.execute(select(chain_state.c.value).where(chain_state.c.key == key)).scalar()


def set_value_txn(conn: Connection, key: str, value: bytes) -> None:
    for stmt in upsert_statements(chain_state, conn.dialect.name):
        conn.execute(stmt, [{"key": key, "value": value}])


def delete_value_txn(conn: Connection, key: str) -> None:
    conn.execute(delete(chain_state).where(chain_state.c.key == key))


def get_best_block_txn(conn: Connection) -> Optional[bytes]:
    """Hash of the block the stored UTXO set corresponds to, or None if empty."""
    return get_value_txn(conn, BEST_BLOCK)


def set_best_block_txn(conn: Connection, block_hash: bytes) -> None:
    set_value_txn(conn, BEST_BLOCK, block_hash)


def get_reindexing_txn(conn: Connection) -> bool:
    return get_value_txn(conn, REINDEXING) == b"\x01"


def set_reindexing_txn(conn: Connection, reindexing: bool) -> None:
    if reindexing:
        set_value_txn(conn, REINDEXING, b"\x01")
    else:
        delete_value_txn(conn, REINDEXING)


def get_have_pruned_txn(conn: Connection) -> bool:
    return get_value_txn(conn, HAVE_PRUNED) == b"\x01"


def set_have_pruned_txn(conn: Connection) -> None:
    set_value_txn(conn, HAVE_PRUNED, b"\x01")


def _get_counter_txn(conn: Connection, key: str) -> int:
    value = get_value_txn(conn, key)
    return 0 if value is None else int.from_bytes(value, "big")


def _set_counter_txn(conn: Connection, key: str, value: int) -> None:
    set_value_txn(conn, key, value.to_bytes(8, "big"))


def get_index_seq_txn(conn: Connection) -> int:
    """The last change sequence given to block-index rows (0: none yet)."""
    return _get_counter_txn(conn, INDEX_SEQ)


def next_index_seq_txn(conn: Connection) -> int:
    """Take the next change sequence (kept only if the transaction commits)."""
    seq = get_index_seq_txn(conn) + 1
    _set_counter_txn(conn, INDEX_SEQ, seq)
    return seq


def get_index_wiped_txn(conn: Connection) -> int:
    return _get_counter_txn(conn, INDEX_WIPED)


def note_index_wiped_txn(conn: Connection) -> None:
    """Record a wipe of the block index: readers that loaded less than this reload all."""
    _set_counter_txn(conn, INDEX_WIPED, next_index_seq_txn(conn))
