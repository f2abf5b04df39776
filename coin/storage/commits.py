"""Noticing another process's commits cheaply (front ends polling the writer's database).

On SQLite, ``PRAGMA data_version`` on one long-lived connection changes exactly when
another connection has committed: a read of a page-cached counter, no transaction, a
few microseconds.  Other engines compare the committed best-block marker and block-index
change counter instead (a flush that changes index rows without moving the tip counts).
"""

from __future__ import annotations

from typing import Any, Optional

from sqlalchemy.engine import Engine

from coin.storage import chainmeta


class CommitWatch:
    """``changed()`` is True when a commit happened since the previous call (and the first
    time).  Use from one thread."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._sqlite = engine.dialect.name == "sqlite"
        self._raw: Any = engine.raw_connection() if self._sqlite else None
        self._last: Optional[object] = None
        self._first = True

    def _token(self) -> object:
        if self._sqlite:
            cursor = self._raw.cursor()
            try:
                return cursor.execute("PRAGMA data_version").fetchone()[0]
            finally:
                cursor.close()
        with self._engine.connect() as conn:
            return chainmeta.get_best_block_txn(conn), chainmeta.get_index_seq_txn(conn)

    def changed(self) -> bool:
        token = self._token()
        changed = self._first or token != self._last
        self._first, self._last = False, token
        return changed

    def close(self) -> None:
        if self._raw is not None:
            self._raw.close()
            self._raw = None
