"""Opening the chain-state database: engine set-up and the schema revision check.

A new database is created at the newest Alembic revision.  An existing one must
already be at that revision; anything else is refused with instructions, never
migrated silently.  Alembic itself (~0.2 s to import) is loaded only to create
a database: normal start-up compares the stamp with :data:`HEAD_REVISION`,
which a test keeps equal to the newest script in ``migrations/versions``.
"""

from __future__ import annotations

import os
from typing import Optional

import sqlalchemy
from sqlalchemy import Column, MetaData, String, Table, inspect, select
from sqlalchemy.engine import Connection, Engine

from coin.storage.dialect import configure_engine
from coin.storage.errors import SchemaError, StorageError

HEAD_REVISION = "0002"
MIGRATIONS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "migrations")

# Alembic's own bookkeeping table; deliberately not part of schema.metadata.
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


def ensure_schema(engine: Engine, where: str) -> None:
    """Create an empty database at head, accept one at head, refuse anything else."""
    with engine.begin() as conn:
        revision = _stored_revision(conn)
        if revision is None:
            if inspect(conn).get_table_names():
                raise SchemaError(
                    "%s is not a coin chain-state database (it has tables but no schema "
                    "revision). Move it away and restart with -reindex to rebuild it from "
                    "the block files." % where)
            _create_at_head(conn)
            return
    if revision != HEAD_REVISION:
        raise SchemaError(
            "chain-state database %s has schema revision %r, but this version of coin "
            "needs revision %r. It was written by a different version of coin: run that "
            "version, or delete %s and restart with -reindex to rebuild it from the block "
            "files." % (where, revision, HEAD_REVISION, where))


def _stored_revision(conn: Connection) -> Optional[str]:
    if not inspect(conn).has_table(_alembic_version.name):
        return None
    revisions = conn.execute(select(_alembic_version.c.version_num)).scalars().all()
    return ",".join(sorted(revisions)) or "(none)"


def _create_at_head(conn: Connection) -> None:
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", MIGRATIONS_DIR)
    config.attributes["connection"] = conn
    command.upgrade(config, "head")
    if _stored_revision(conn) != HEAD_REVISION:
        raise StorageError("database.HEAD_REVISION does not name the newest migration")
