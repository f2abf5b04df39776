"""Block and undo records in a database table: the flat files' interface, for PostgreSQL.

With ``-dbengine=postgresql://...`` raw blocks and undo data live in the
``block_record`` table, so every process that can reach the database can read
them (a front end needs nothing but the database).  :class:`RecordTable` is a
drop-in for :class:`coin.storage.flatfile.FlatFileSeq` under
:class:`coin.storage.blockfiles.BlockFiles`: the same virtual files, positions
and sizes (a record still "takes" its 8-byte header and trailer), so the file
statistics, pruning and recovery code is shared and its numbers match the
SQLite node's.

Durability, as with the files: each append is committed on its own, with a
relaxed commit (visible at once, survives the writer being killed, as a write
to a file does), and :meth:`RecordTable.sync` makes every append so far
durable against the server's machine crashing, as an fsync does; the chain
code syncs before it publishes anything about a block.  A row is written whole
or not at all: there is no torn tail to cut off.  After a kill, records beyond
the last flush are found by :meth:`records` and replayed, as from the files.
"""

from __future__ import annotations

import threading
from typing import Any, Iterator, Optional, Tuple

from sqlalchemy import and_, delete, exists, func, insert, select
from sqlalchemy.engine import Engine
from sqlalchemy.sql.elements import ColumnElement

from coin.storage.compiled import RawStatement
from coin.storage.dialect import (
    autocommit_connection, close_connection, connection_lost, make_durable, relax_commits,
)
from coin.storage.errors import CorruptionError, StorageError
from coin.storage.flatfile import HEADER_SIZE, WouldBlock, checked_record_size
from coin.storage.schema import block_record

_COLUMNS = ("seq", "file_no", "pos", "payload", "trailer")


class RecordTable:
    """One sequence of virtual record files (``blk`` or ``rev``) in ``block_record``."""

    def __init__(self, engine: Engine, prefix: str, max_file_size: int,
                 trailer_size: int = 0, min_payload: int = 1) -> None:
        self._engine = engine
        self.prefix = prefix
        self.max_file_size = max_file_size
        self.trailer_size = trailer_size
        self.min_payload = min_payload
        self._lock = threading.Lock()
        self._writing = False
        self._file_no = 0
        self._size = 0
        self._in_seq = block_record.c.seq == prefix
        # Appends run on a connection of their own in autocommit: one round trip each.
        self._insert = RawStatement(insert(block_record), engine.dialect, _COLUMNS)
        self._writer: Optional[Any] = None
        self._unsynced = False

    def _in_file(self, file_no: int) -> ColumnElement[bool]:
        return and_(self._in_seq, block_record.c.file_no == file_no)

    # -- naming ---------------------------------------------------------------

    def path(self, file_no: int) -> str:
        """The virtual file's name, for messages."""
        return "block_record %s%05d" % (self.prefix, file_no)

    def exists(self, file_no: int) -> bool:
        with self._engine.connect() as conn:
            return bool(conn.execute(select(exists().where(self._in_file(file_no)))).scalar())

    def file_size(self, file_no: int) -> int:
        """End of the file's last record (0 if it has none), as the file's size would be."""
        end = block_record.c.pos + func.length(block_record.c.payload) + self.trailer_size
        with self._engine.connect() as conn:
            return conn.execute(select(func.max(end)).where(self._in_file(file_no))).scalar() or 0

    # -- writing --------------------------------------------------------------

    def open_writer(self, file_no: int, size: int) -> None:
        """Append to ``file_no`` from ``size``, dropping records after it (as a file's tail)."""
        with self._lock:
            with self._engine.begin() as conn:
                conn.execute(delete(block_record).where(
                    self._in_file(file_no), block_record.c.pos >= size + HEADER_SIZE))
            self._writing, self._file_no, self._size = True, file_no, size

    def append(self, payload: bytes, trailer: bytes = b"") -> Tuple[int, int]:
        """Store one record, committed before this returns; ``(file_no, pos)``."""
        record_size = checked_record_size(payload, trailer, self.trailer_size, self.min_payload)
        with self._lock:
            if not self._writing:
                raise StorageError("%s records are not open for writing" % self.prefix)
            file_no, size = self._file_no, self._size
            if size > 0 and size + record_size > self.max_file_size:
                file_no, size = file_no + 1, 0
            pos = size + HEADER_SIZE
            try:
                self._insert_record((self.prefix, file_no, pos, payload, trailer))
            except BaseException:
                if self._writer is not None:
                    raise
                # The server ended the connection (it restarted): the insert never ran, so
                # once more on a new one (a duplicate would break the primary key, not
                # the data).
                self._insert_record((self.prefix, file_no, pos, payload, trailer))
            self._file_no, self._size = file_no, size + record_size
            self._unsynced = True
            return file_no, pos

    def _insert_record(self, row: Tuple[Any, ...]) -> None:
        """One insert on the appending connection (made if there is none); the connection
        is dropped if the server ended it."""
        if self._writer is None:
            self._writer = autocommit_connection(self._engine)
            relax_commits(self._engine, self._writer)
        try:
            cursor = self._writer.cursor()
            try:
                self._insert.execute(cursor, row)
            finally:
                if not connection_lost(self._writer):
                    cursor.close()
        except BaseException:
            if connection_lost(self._writer):
                self._drop_writer()
            raise

    def sync(self) -> None:
        """Make every append so far durable (one synchronous commit, if any were made)."""
        with self._lock:
            if self._unsynced:
                make_durable(self._engine)
                self._unsynced = False

    def close(self) -> None:
        with self._lock:
            self._writing = False
            self._drop_writer()

    def _drop_writer(self) -> None:
        if self._writer is not None:
            writer, self._writer = self._writer, None
            close_connection(writer)

    abandon = close

    @property
    def current_file(self) -> int:
        return self._file_no

    def remove(self, file_no: int) -> bool:
        """Delete one virtual file that is not the current one (pruning); True if it had rows."""
        with self._lock:
            if file_no == self._file_no and self._writing:
                raise StorageError("cannot remove %s, the file being written" % self.path(file_no))
        with self._engine.begin() as conn:
            return conn.execute(delete(block_record).where(self._in_file(file_no))).rowcount > 0

    def removed(self) -> None:
        """Nothing to make durable: each removal was committed."""

    def remove_all(self) -> None:
        """Delete every record of the sequence (the caller reopens at file 0)."""
        self.close()
        with self._engine.begin() as conn:
            conn.execute(delete(block_record).where(self._in_seq))

    # -- reading --------------------------------------------------------------

    def read(self, file_no: int, pos: int, wait: bool = True) -> Tuple[bytes, bytes]:
        """``(payload, trailer)`` of the record at ``pos``; ``wait=False`` always WouldBlock.

        A database read may wait on the network, so it is never done on the caller's
        (reactor) thread when that asked not to wait.
        """
        where = "%s:%d" % (self.path(file_no), pos)
        if not wait:
            raise WouldBlock(where)
        with self._engine.connect() as conn:
            row = conn.execute(select(block_record.c.payload, block_record.c.trailer).where(
                self._in_file(file_no), block_record.c.pos == pos)).first()
        if row is None:
            raise CorruptionError("no record at %s" % where)
        return bytes(row[0]), bytes(row[1])

    def records(self, file_no: int, start: int = 0, skip_before: int = 0,
                head: Optional[int] = None) -> Iterator[Tuple[int, int, bytes]]:
        """``(pos, length, data)`` for each record of one virtual file, by position.

        Same contract as ``FlatFileSeq.records``: from offset ``start`` (a record
        boundary), records before ``skip_before`` left out, ``data`` the payload or
        its first ``head`` bytes.
        """
        payload = block_record.c.payload
        data = payload if head is None else func.substr(payload, 1, head)
        query = (select(block_record.c.pos, func.length(payload), data)
                 .where(self._in_file(file_no),
                        block_record.c.pos >= max(start + HEADER_SIZE, skip_before))
                 .order_by(block_record.c.pos))
        with self._engine.connect() as conn:
            rows = conn.execution_options(yield_per=100).execute(query)
            for pos, length, chunk in rows:
                yield pos, length, bytes(chunk)
