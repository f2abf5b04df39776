"""Running the storage tests on both engines: SQLite (the default) and PostgreSQL.

A test class that uses the database gets a PostgreSQL twin by mixing
:class:`OnPostgreSQL` in first::

    class IndexAndStateTestsOnPostgreSQL(OnPostgreSQL, IndexAndStateTests):
        pass

and opens its stores with ``test_storage_blockfiles.open_store`` (or asks
:func:`dbengine_for`), which gives each data directory of a test its own
fresh database on the process's test server (``tests.pgserver``).
"""

from __future__ import annotations

import os
from typing import Any

from coin.storage.database import SQLITE
from tests import pgserver


class OnPostgreSQL:
    """Mixin: the test class's stores use PostgreSQL; skipped when it is not installed."""

    dbengine = "postgresql"
    skip = pgserver.skip_reason()


def dbengine_for(test: Any, path: str) -> str:
    """``-dbengine`` for a store of ``test`` in data directory ``path`` (same path, same database)."""
    if getattr(test, "dbengine", SQLITE) == SQLITE:
        return SQLITE
    databases = test.__dict__.setdefault("_pg_databases", {})
    key = os.path.abspath(path)
    if key not in databases:
        databases[key] = pgserver.fresh_database()
    return databases[key]
