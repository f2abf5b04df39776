"""The ``chain_state`` key/value table: best-block marker and reindex flag."""

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
