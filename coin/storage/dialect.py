"""Everything that differs between database back ends, with portable fallbacks.

SQLite gets its connection pragmas and explicit ``BEGIN`` here; PostgreSQL and
SQLite share ``INSERT .. ON CONFLICT DO UPDATE``; any other dialect upserts by
delete-then-insert inside the caller's transaction.

Durability on SQLite: WAL with ``synchronous=NORMAL`` does not fsync on every
commit.  A committed transaction is in the WAL file in the OS page cache, so it
survives the process being killed (kill -9, crash, OOM); only power loss or an
OS crash can lose the last commits, and even then the database stays
consistent (it rolls back to an earlier commit).  Block files are fsynced
before every flush, so the index never points at data the OS has not written.

Durability on PostgreSQL: the server's defaults (``fsync=on``,
``synchronous_commit=on``) make a commit durable before it returns; the
isolation level and pool are set where the engine is made (``database``).
"""

from __future__ import annotations

import sys
from typing import Any, Tuple

from sqlalchemy import Table, and_, bindparam, event
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError
from sqlalchemy.sql.expression import Executable

#: Applied to every new SQLite connection, in this order.
SQLITE_PRAGMAS = (
    "journal_mode=WAL",
    "synchronous=NORMAL",
    "foreign_keys=ON",
    "busy_timeout=10000",
    # Truncate the WAL back to this size after a checkpoint (a big flush can grow it).
    "journal_size_limit=67108864",
)

_ON_CONFLICT_DIALECTS = ("sqlite", "postgresql")
#: PostgreSQL's "operator intervention" states that end a session: admin shutdown, crash
#: shutdown, cannot connect now (starting up or shutting down); and too many connections
#: (the server takes no new session now).  Class 08 is "connection exception"; an error
#: libpq raised itself (connect refused, server gone) has no state.
_SESSION_ENDED_STATES = ("57P01", "57P02", "57P03", "53300")


def configure_engine(engine: Engine) -> None:
    """Install per-connection set-up for ``engine``'s dialect (call once, before use)."""
    if engine.dialect.name != "sqlite":
        return

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, connection_record: Any) -> None:
        # Let SQLAlchemy, not the sqlite3 module, decide where transactions begin,
        # so a transaction covers every statement (DDL and SELECT included).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            for pragma in SQLITE_PRAGMAS:
                cursor.execute("PRAGMA " + pragma)
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        connection.exec_driver_sql("BEGIN")


def autocommit_connection(engine: Engine) -> Any:
    """A DBAPI connection of the caller's own for reads outside any transaction.

    SQLite connections run statements outside transactions already (see
    :func:`configure_engine`).  A psycopg connection would keep one open after
    the first SELECT, and under REPEATABLE READ go on reading that old
    snapshot: it is taken out of the pool (closing it really closes it) and
    switched to autocommit.
    """
    raw = engine.raw_connection()
    if engine.dialect.name == "postgresql":
        raw.driver_connection.autocommit = True
        raw.detach()
    return raw


def connection_lost(raw: Any) -> bool:
    """Whether the server ended DBAPI connection ``raw`` (PostgreSQL restarted or stopped):
    a statement that failed on it never ran, and only a new connection can work."""
    return bool(getattr(raw.dbapi_connection, "closed", False))


def close_connection(raw: Any) -> None:
    """Close a connection of :func:`autocommit_connection`; one the server ended is just
    dropped (closing it normally would try, and log failing, a rollback on it)."""
    if connection_lost(raw):
        raw.invalidate()
    else:
        raw.close()


def unreachable(error: BaseException) -> bool:
    """Whether ``error`` (a DBAPI error, or SQLAlchemy's wrapping of one) says the database
    server could not be reached or ended the session, rather than refusing the statement.

    Only a server engine can be unreachable: an SQLite error is always about the statement
    or the file.
    """
    if isinstance(error, DBAPIError):
        if error.connection_invalidated:
            return True
        error = error.orig
    psycopg = sys.modules.get("psycopg")
    if psycopg is None or not isinstance(error, psycopg.OperationalError):
        return False
    state = error.sqlstate
    return state is None or state.startswith("08") or state in _SESSION_ENDED_STATES


def relax_commits(engine: Engine, raw: Any) -> None:
    """Let commits on DBAPI connection ``raw`` return before they are on disk (PostgreSQL).

    A relaxed commit is visible at once and survives the client being killed; only a
    crash of the server's machine can lose it, until :func:`make_durable`.
    """
    if engine.dialect.name == "postgresql":
        cursor = raw.cursor()
        try:
            cursor.execute("SET synchronous_commit = off")
        finally:
            cursor.close()


def make_durable(engine: Engine) -> None:
    """Return once every commit so far, relaxed ones included, is on disk.

    On PostgreSQL a synchronous commit flushes the write-ahead log up to itself, which
    covers every earlier commit; a transaction commits only if it has a transaction id.
    """
    if engine.dialect.name == "postgresql":
        with engine.begin() as conn:
            conn.exec_driver_sql("SELECT txid_current()")


def upsert_statements(table: Table, dialect_name: str) -> Tuple[Executable, ...]:
    """Statements that, run in order with the same row parameters, insert-or-replace rows.

    Parameters are named after the table's columns.  Run them inside one
    transaction: the fallback (delete, then insert) is only atomic there.
    """
    pk = list(table.primary_key.columns)
    if dialect_name in _ON_CONFLICT_DIALECTS:
        if dialect_name == "sqlite":
            from sqlalchemy.dialects.sqlite import insert
        else:
            from sqlalchemy.dialects.postgresql import insert
        stmt = insert(table)
        stmt = stmt.on_conflict_do_update(
            index_elements=pk,
            set_={c.name: stmt.excluded[c.name] for c in table.columns if not c.primary_key})
        return (stmt,)
    delete = table.delete().where(and_(*(c == bindparam(c.name) for c in pk)))
    return (delete, table.insert())
