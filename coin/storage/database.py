"""Opening the chain-state database: engine set-up and the schema revision check.

A new database is created at the newest Alembic revision.  One at an older
revision of ours is upgraded in place, in one transaction, and the upgrade is
logged (an upgraded node must not need a -reindex); an unknown revision (a newer
coin's, or another program's) is refused with instructions.  Alembic itself (~0.2 s
to import) is loaded only to create or upgrade a database: normal start-up compares
the stamp with :data:`HEAD_REVISION`, which a test keeps equal to the newest script
in ``migrations/versions``.

Two engines run the same schema and revisions: the embedded SQLite file (the
default, ``-dbengine=sqlite``) and a PostgreSQL server (``-dbengine=postgresql://
user@host:port/database``, through psycopg 3), which several processes can share.
"""

from __future__ import annotations

import os
from typing import Any, Optional

import sqlalchemy
from sqlalchemy import Column, MetaData, String, Table, inspect, select
from sqlalchemy.engine import URL, Connection, Engine, make_url
from sqlalchemy.exc import ArgumentError, OperationalError

from twisted.logger import Logger

from coin.storage.dialect import (
    autocommit_connection, close_connection, configure_engine, connection_lost,
)
from coin.storage.errors import SchemaError, StorageError

HEAD_REVISION = "0004"
#: ``-dbengine`` value naming the embedded default.
SQLITE = "sqlite"
#: Advisory-lock key of a database's one writer ("coin").
WRITER_LOCK_KEY = 0x636F696E
#: Seconds to wait for a PostgreSQL server at connect (unless the URL says otherwise).
CONNECT_TIMEOUT = 10
MIGRATIONS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "migrations")

# Alembic's own bookkeeping table; deliberately not part of schema.metadata.
_log = Logger(namespace="coin.storage")

_alembic_version = Table("alembic_version", MetaData(),
                         Column("version_num", String(32), primary_key=True))


def create_engine(path: str) -> Engine:
    """An engine for the SQLite file at exactly ``path``, with our per-connection settings.

    The URL is built from its parts, never parsed from a string: a parsed
    ``sqlite:///`` URL percent-decodes the path and cuts it at ``?``, so
    ``/x/pct%41`` would open ``/x/pctA`` and a wallet named ``%2e%2e/...`` would
    leave its directory.
    """
    url = sqlalchemy.engine.URL.create("sqlite", database=os.path.abspath(path))
    engine = sqlalchemy.create_engine(url)
    configure_engine(engine)
    return engine


def open_database(path: str) -> Engine:
    """Engine for the SQLite database at ``path``; creates it (mode 0600) if missing."""
    if not os.path.exists(path):
        # SQLite gives its -wal and -shm files the main file's permissions.
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
    engine = create_engine(path)
    try:
        ensure_schema(engine, path)
    except BaseException:
        engine.dispose()
        raise
    return engine


def server_url(dbengine: str) -> Optional[URL]:
    """The URL of the PostgreSQL database ``dbengine`` names; None for the SQLite default.

    ``postgresql://`` (or ``postgresql+psycopg://``) URLs are accepted; host, port,
    user, password and database are as libpq takes them (``?host=/dir`` for a
    unix socket).  StorageError for anything else.
    """
    if dbengine in ("", SQLITE):
        return None
    try:
        url = make_url(dbengine)
    except ArgumentError:
        url = None
    if url is None or url.drivername not in ("postgresql", "postgresql+psycopg") \
            or not url.database:
        # The value is not echoed: it may hold a password.
        raise StorageError("-dbengine must be 'sqlite' or postgresql://user@host:port/database")
    return url.set(drivername="postgresql+psycopg")


def describe(url: URL) -> str:
    """``url`` for messages and logs: the password is never shown."""
    return url.set(drivername="postgresql").render_as_string(hide_password=True)


def create_server_engine(url: URL) -> Engine:
    """An engine for the PostgreSQL database at ``url`` (see :func:`server_url`).

    REPEATABLE READ gives every transaction one snapshot, as SQLite's WAL
    readers have: a reader never sees half of the writer's flush, nor two
    different flushes in one transaction.  Pooled connections are checked
    before use, so a restarted server costs one failed request, not a pool of
    dead connections.
    """
    connect_args = {} if "connect_timeout" in url.query else {"connect_timeout": CONNECT_TIMEOUT}
    engine = sqlalchemy.create_engine(url, isolation_level="REPEATABLE READ",
                                      pool_pre_ping=True, connect_args=connect_args)
    configure_engine(engine)
    return engine


def open_server_database(url: URL) -> Engine:
    """Engine for the PostgreSQL database at ``url``, checked (or created) at head.

    StorageError with the server's reason when it cannot be reached.
    """
    engine = create_server_engine(url)
    try:
        try:
            with engine.connect():
                pass
        except OperationalError as e:
            reason = str(e.orig).strip().splitlines()[0] if e.orig is not None else str(e)
            raise StorageError("cannot connect to the PostgreSQL database %s: %s"
                               % (describe(url), reason)) from None
        ensure_schema(engine, describe(url))
    except BaseException:
        engine.dispose()
        raise
    return engine


def claim_server_writer(engine: Engine, url: URL) -> Any:
    """Hold the one writer's lock of the PostgreSQL database: the connection that holds it.

    A session-level advisory lock, released when that connection closes (or its process
    dies), so a second writer on the same database is refused, as the datadir lock
    refuses a second node on one directory.  StorageError if another session holds it.
    """
    conn = autocommit_connection(engine)
    cursor = conn.cursor()
    try:
        cursor.execute("SELECT pg_try_advisory_lock(%d)" % WRITER_LOCK_KEY)
        claimed = cursor.fetchone()[0]
    finally:
        cursor.close()
    if not claimed:
        conn.close()
        raise StorageError("Cannot obtain a lock on PostgreSQL database %s. Coin is probably "
                           "already running on it." % describe(url))
    return conn


def release_server_writer(conn: Any) -> None:
    """Give up the writer's lock before closing its connection: the server releases a
    closed session's locks only once its backend notices, so a writer started right after
    this one stopped could otherwise still find the lock taken."""
    if not connection_lost(conn):
        cursor = conn.cursor()
        try:
            cursor.execute("SELECT pg_advisory_unlock(%d)" % WRITER_LOCK_KEY)
        except Exception:
            if not connection_lost(conn):
                raise
            # The server went away meanwhile: its end of the session frees the lock.
        finally:
            cursor.close()
    close_connection(conn)


def ensure_schema(engine: Engine, where: str, read_only: bool = False) -> None:
    """Create an empty database at head, accept one at head, upgrade an older one of ours,
    refuse anything else.  ``read_only`` (a front end): accept only a database at head."""
    if engine.dialect.name == "sqlite":
        rebuild = "restart with -reindex to rebuild it from the block files"
        move, remove = "Move it away", "delete %s" % where
    else:
        # The blocks are in the database too: nothing to rebuild it from.
        rebuild = "start on an empty database"
        move, remove = "Use another database", "use another database"
    with engine.begin() as conn:
        revision = _stored_revision(conn)
        if read_only and revision != HEAD_REVISION:
            raise SchemaError("chain-state database %s has schema revision %r, but this version "
                              "of coin reads revision %r: start its writer first (of this "
                              "version), which creates or upgrades it" % (where, revision, HEAD_REVISION))
        if revision is None:
            if inspect(conn).get_table_names():
                raise SchemaError(
                    "%s is not a coin chain-state database (it has tables but no schema "
                    "revision). %s and %s." % (where, move, rebuild))
            _upgrade_to_head(conn)
            return
        if revision != HEAD_REVISION and revision in _known_revisions():
            _log.info("Upgrading chain-state database {where} from schema revision {old} to {new}",
                      where=where, old=revision, new=HEAD_REVISION)
            _upgrade_to_head(conn)
            return
    if revision != HEAD_REVISION:
        raise SchemaError(
            "chain-state database %s has schema revision %r, but this version of coin "
            "needs revision %r. It was written by a different version of coin: run that "
            "version, or %s and %s." % (where, revision, HEAD_REVISION, remove, rebuild))


def _stored_revision(conn: Connection) -> Optional[str]:
    if not inspect(conn).has_table(_alembic_version.name):
        return None
    revisions = conn.execute(select(_alembic_version.c.version_num)).scalars().all()
    return ",".join(sorted(revisions)) or "(none)"


def _alembic_config() -> Any:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", MIGRATIONS_DIR)
    return config


def _known_revisions() -> set:
    from alembic.script import ScriptDirectory

    return {script.revision for script in ScriptDirectory.from_config(_alembic_config()).walk_revisions()}


def _upgrade_to_head(conn: Connection) -> None:
    from alembic import command

    config = _alembic_config()
    config.attributes["connection"] = conn
    command.upgrade(config, "head")
    if _stored_revision(conn) != HEAD_REVISION:
        raise StorageError("database.HEAD_REVISION does not name the newest migration")
