"""Exceptions raised by the storage layer.

Callers catch these instead of SQLAlchemy, sqlite3 or OS errors, so the rest of
the node never depends on how the chain is stored.
"""

#: Core's RPC_IN_WARMUP: what an unreachable database is answered with (``rpc_code``:
#: coin.rpc.errors.map_exception answers it, and REST makes it a 503, without this
#: package importing the RPC layer).
RPC_IN_WARMUP = -28


class StorageError(Exception):
    """Persisting or loading chain data failed (I/O, database, misuse)."""


class CorruptionError(StorageError):
    """Stored data is not what was written: bad magic, length, checksum or a missing file."""


class SchemaError(StorageError):
    """The database was not created by this version of the node; the message says what to do."""


class DatabaseUnreachable(StorageError):
    """The database server cannot be reached, or ended the session (stopped, restarting, out
    of reach): nothing is wrong with the data, the request may succeed once it is back."""

    rpc_code = RPC_IN_WARMUP
    message = "chain database unreachable"

    def __init__(self, detail: str = "") -> None:
        super().__init__("%s: %s" % (self.message, detail) if detail else self.message)
