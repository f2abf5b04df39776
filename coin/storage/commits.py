"""Noticing another process's commits cheaply (front ends polling the writer's database).

On SQLite, ``PRAGMA data_version`` on one long-lived connection changes exactly when
another connection has committed: a read of a page-cached counter, no transaction, a
few microseconds.  Other engines compare the committed best-block marker and block-index
change counter instead (a flush that changes index rows without moving the tip counts),
read by one statement on a long-lived autocommit connection: one round trip a look (a
pooled connection would add a check-out ping, BEGIN and ROLLBACK), replaced when the
server ended it.
"""

from __future__ import annotations

from typing import Any, Optional

from sqlalchemy.engine import Engine

from coin.storage import chainmeta
from coin.storage.dialect import autocommit_connection, close_connection, connection_lost


class CommitWatch:
    """``changed()`` is True when a commit happened since the previous call (and the first
    time).  Use from one thread."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._query = ("PRAGMA data_version" if engine.dialect.name == "sqlite" else
                       "SELECT key, value FROM chain_state WHERE key IN ('%s', '%s') ORDER BY key"
                       % (chainmeta.BEST_BLOCK, chainmeta.INDEX_SEQ))
        self._raw: Any = autocommit_connection(engine)
        self._last: Optional[object] = None
        self._first = True

    def _token(self) -> object:
        if self._raw is None:
            self._raw = autocommit_connection(self._engine)
        cursor = self._raw.cursor()
        try:
            cursor.execute(self._query)
            return [tuple(row) for row in cursor.fetchall()]
        except BaseException:
            if connection_lost(self._raw):
                close_connection(self._raw)
                self._raw = None
            raise
        finally:
            if self._raw is not None:
                cursor.close()

    def changed(self) -> bool:
        token = self._token()
        changed = self._first or token != self._last
        self._first, self._last = False, token
        return changed

    def close(self) -> None:
        if self._raw is not None:
            close_connection(self._raw)
            self._raw = None
