"""Alembic environment for the chain-state database.

At run time :func:`coin.storage.database.open_database` passes its open
connection in ``config.attributes["connection"]``.  For writing a new revision,
point Alembic at a scratch database file instead (a path, never a URL string), e.g.::

    cfg = alembic.config.Config()
    cfg.set_main_option("script_location", coin.storage.database.MIGRATIONS_DIR)
    cfg.attributes["path"] = "/tmp/scratch.sqlite"
    alembic.command.upgrade(cfg, "head")
    alembic.command.revision(cfg, "what changed", autogenerate=True)

Revisions must use ``op.batch_alter_table`` to alter tables (SQLite has no
general ALTER TABLE), and ``database.HEAD_REVISION`` must name the newest one.
"""

from alembic import context

from coin.storage.database import create_engine
from coin.storage.schema import metadata

config = context.config


def _run(connection) -> None:
    context.configure(connection=connection, target_metadata=metadata,
                      render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    raise SystemExit("offline (SQL script) migrations are not supported")

_connection = config.attributes.get("connection")
if _connection is not None:
    _run(_connection)
else:
    _engine = create_engine(config.attributes["path"])
    try:
        with _engine.connect() as _conn:
            _run(_conn)
            _conn.commit()
    finally:
        _engine.dispose()
