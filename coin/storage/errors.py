"""Exceptions raised by the storage layer.

Callers catch these instead of SQLAlchemy, sqlite3 or OS errors, so the rest of
the node never depends on how the chain is stored.
"""


class StorageError(Exception):
    """Persisting or loading chain data failed (I/O, database, misuse)."""


class CorruptionError(StorageError):
    """Stored data is not what was written: bad magic, length, checksum or a missing file."""


class SchemaError(StorageError):
    """The database was not created by this version of the node; the message says what to do."""
