"""Numbered append-only files of framed records (``blk00000.dat``, ``rev00000.dat``).

A record is ``magic (4) | payload length (u32 LE) | payload | trailer``, Core's
framing; the trailer has a fixed size per sequence (0 for blocks, 32 for the
undo checksum).  Positions handed out point at the payload, as Core's do.

Writes are buffered in memory and reach the OS on :meth:`FlatFileSeq.flush`
(or when the buffer fills); :meth:`FlatFileSeq.sync` also fsyncs.  A crash
can leave a torn or garbage tail: readers stop at the first record that does
not frame correctly, and :meth:`FlatFileSeq.open_writer` cuts such a tail off
before appending.  Reads use their own descriptors (``os.pread``), so another
thread may read while the writer appends.
"""

from __future__ import annotations

import os
import struct
import threading
from collections import OrderedDict
from typing import Iterator, Optional, Tuple

from coin.primitives.serialize import MAX_SIZE
from coin.storage.errors import CorruptionError, StorageError

_HEADER = struct.Struct("<4sI")
HEADER_SIZE = _HEADER.size
#: No record payload may be longer than a CompactSize may count.
MAX_PAYLOAD = MAX_SIZE
_WRITE_BUFFER = 1 << 20
_MAX_READERS = 8
FILE_MODE = 0o600


def fsync_directory(path: str) -> None:
    """Make a file's creation or removal in ``path`` durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)



def checked_record_size(payload: bytes, trailer: bytes, trailer_size: int,
                        min_payload: int) -> int:
    """Bytes the record takes, header included; ValueError if it is not a valid record."""
    if len(trailer) != trailer_size:
        raise ValueError("trailer must be %d bytes" % trailer_size)
    if not min_payload <= len(payload) <= MAX_PAYLOAD:
        raise ValueError("record payload of %d bytes out of range" % len(payload))
    return HEADER_SIZE + len(payload) + len(trailer)


class WouldBlock(Exception):
    """A read asked not to wait would have had to (data not in the page cache, the file
    being written): do it again where waiting is fine."""


#: Reads that must not wait for the disk: preadv's RWF_NOWAIT (Linux 4.14+).
_NOWAIT = getattr(os, "RWF_NOWAIT", None)


def _pread(fd: int, size: int, offset: int, wait: bool) -> bytes:
    if wait:
        return os.pread(fd, size, offset)
    if _NOWAIT is None:
        raise WouldBlock("no RWF_NOWAIT here")
    buffer = bytearray(size)
    try:
        got = os.preadv(fd, [buffer], offset, _NOWAIT)
    except OSError as e:  # EAGAIN: not all cached; EOPNOTSUPP: a filesystem without it
        raise WouldBlock(str(e)) from None
    if got != size and offset + got < os.fstat(fd).st_size:
        raise WouldBlock("partly cached")  # a short read that is not the end of the file
    return bytes(memoryview(buffer)[:got])

class FlatFileSeq:
    """One sequence of record files, e.g. all ``blkNNNNN.dat``; one writer, many readers."""

    def __init__(self, directory: str, prefix: str, magic: bytes, max_file_size: int,
                 trailer_size: int = 0, min_payload: int = 1) -> None:
        if len(magic) != 4:
            raise ValueError("magic must be 4 bytes")
        self.directory = directory
        self.prefix = prefix
        self.magic = magic
        self.max_file_size = max_file_size
        self.trailer_size = trailer_size
        self.min_payload = min_payload
        self._lock = threading.Lock()
        self._fd: Optional[int] = None
        self._file_no = 0
        self._size = 0          # logical end of the current file, buffer included
        self._on_disk = 0       # bytes of the current file handed to the OS
        self._buf = bytearray()
        self._readers: "OrderedDict[int, int]" = OrderedDict()

    # -- naming ---------------------------------------------------------------

    def path(self, file_no: int) -> str:
        return os.path.join(self.directory, "%s%05d.dat" % (self.prefix, file_no))

    def exists(self, file_no: int) -> bool:
        return os.path.exists(self.path(file_no))

    def file_size(self, file_no: int) -> int:
        """Size on disk (0 if missing), after handing buffered writes to the OS."""
        with self._lock:
            if file_no == self._file_no:
                self._flush_locked()
        try:
            return os.stat(self.path(file_no)).st_size
        except FileNotFoundError:
            return 0

    # -- writing --------------------------------------------------------------

    def open_writer(self, file_no: int, size: int) -> None:
        """Append to ``file_no`` from ``size``, cutting off anything after it (a torn tail)."""
        with self._lock:
            self._close_writer_locked()
            path = self.path(file_no)
            created = not os.path.exists(path)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, FILE_MODE)
            try:
                if os.fstat(fd).st_size > size:
                    os.ftruncate(fd, size)
                    os.fsync(fd)
            except OSError:
                os.close(fd)
                raise
            if created:
                fsync_directory(self.directory)
            self._fd, self._file_no, self._size, self._on_disk = fd, file_no, size, size

    def append(self, payload: bytes, trailer: bytes = b"") -> Tuple[int, int]:
        """Buffer one record, rolling over to a new file if it would not fit; ``(file_no, pos)``."""
        record_size = checked_record_size(payload, trailer, self.trailer_size, self.min_payload)
        with self._lock:
            if self._fd is None:
                raise StorageError("%s files are not open for writing" % self.prefix)
            if self._size > 0 and self._size + record_size > self.max_file_size:
                self._roll_over_locked()
            pos = self._size + HEADER_SIZE
            self._buf += _HEADER.pack(self.magic, len(payload))
            self._buf += payload
            self._buf += trailer
            self._size += record_size
            if len(self._buf) >= _WRITE_BUFFER:
                self._flush_locked()
            return self._file_no, pos

    def sync(self) -> None:
        """Flush and fsync the current file (enough to survive power loss)."""
        with self._lock:
            self._flush_locked()
            if self._fd is not None:
                os.fsync(self._fd)

    def close(self) -> None:
        with self._lock:
            self._close_writer_locked()
            while self._readers:
                os.close(self._readers.popitem()[1])

    def abandon(self) -> None:
        """Close as a crash would: buffered records are lost, nothing is fsynced."""
        with self._lock:
            self._buf.clear()
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
            while self._readers:
                os.close(self._readers.popitem()[1])

    @property
    def current_file(self) -> int:
        """Number of the file being appended to (never pruned)."""
        return self._file_no

    def remove(self, file_no: int) -> bool:
        """Delete one file that is not the current one (pruning); True if it existed.

        The caller fsyncs the directory once after a batch of removals.
        """
        with self._lock:
            if file_no == self._file_no and self._fd is not None:
                raise StorageError("cannot remove %s, the file being written"
                                   % os.path.basename(self.path(file_no)))
            fd = self._readers.pop(file_no, None)
            if fd is not None:
                os.close(fd)
        try:
            os.remove(self.path(file_no))
        except FileNotFoundError:
            return False
        return True

    def removed(self) -> None:
        """Make a batch of :meth:`remove` calls durable (fsyncs the directory)."""
        fsync_directory(self.directory)

    def remove_all(self) -> None:
        """Delete every file of the sequence and start again at file 0 (caller reopens)."""
        self.close()
        file_no = 0
        while self.exists(file_no):
            os.remove(self.path(file_no))
            file_no += 1
        fsync_directory(self.directory)

    def _flush_locked(self) -> None:
        if self._buf and self._fd is not None:
            view = memoryview(self._buf)
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
            view.release()
            self._on_disk += len(self._buf)
            self._buf.clear()

    def _roll_over_locked(self) -> None:
        self._flush_locked()
        assert self._fd is not None
        os.fsync(self._fd)
        os.close(self._fd)
        self._file_no += 1
        self._fd = os.open(self.path(self._file_no), os.O_WRONLY | os.O_CREAT | os.O_APPEND,
                           FILE_MODE)
        fsync_directory(self.directory)
        self._size = self._on_disk = os.fstat(self._fd).st_size

    def _close_writer_locked(self) -> None:
        if self._fd is not None:
            self._flush_locked()
            os.fsync(self._fd)
            os.close(self._fd)
            self._fd = None

    # -- reading --------------------------------------------------------------

    def read(self, file_no: int, pos: int, wait: bool = True) -> Tuple[bytes, bytes]:
        """``(payload, trailer)`` of the record whose payload starts at ``pos``.

        With ``wait=False`` the read never waits (for the disk, the writer's lock or a
        flush): it raises :class:`WouldBlock` instead, so a caller on the reactor thread
        can serve a record that is in the page cache at once and hop to a thread otherwise.
        """
        where = "%s:%d" % (os.path.basename(self.path(file_no)), pos)
        if not self._lock.acquire(blocking=wait):
            raise WouldBlock(where)
        try:
            # Only this process's own unflushed appends need a flush: a reader that never
            # opened the files for writing (a front end) reads whatever the OS has.
            if (self._fd is not None and file_no == self._file_no
                    and pos - HEADER_SIZE >= self._on_disk):
                if not wait:
                    raise WouldBlock(where)
                self._flush_locked()
            fd = self._reader_locked(file_no, where)
            header = _pread(fd, HEADER_SIZE, pos - HEADER_SIZE, wait) if pos >= HEADER_SIZE else b""
            if len(header) != HEADER_SIZE:
                raise CorruptionError("no record at %s" % where)
            magic, length = _HEADER.unpack(header)
            if magic != self.magic or not self.min_payload <= length <= MAX_PAYLOAD:
                raise CorruptionError("no valid record header at %s" % where)
            body = _pread(fd, length + self.trailer_size, pos, wait)
        finally:
            self._lock.release()
        if len(body) != length + self.trailer_size:
            raise CorruptionError("record at %s is truncated" % where)
        return body[:length], body[length:]

    def records(self, file_no: int, start: int = 0, skip_before: int = 0,
                head: Optional[int] = None) -> Iterator[Tuple[int, int, bytes]]:
        """``(pos, length, data)`` for each valid record of one file.

        The walk begins at offset ``start``, a record boundary; records whose
        payload starts before ``skip_before`` are stepped over unread.
        ``data`` is the whole payload, or its first ``head`` bytes if given.
        Stops at the end of the file or at the first record that does not
        frame correctly (bad magic or length, or not entirely in the file).
        """
        with self._lock:
            if file_no == self._file_no:
                self._flush_locked()
        try:
            f = open(self.path(file_no), "rb")
        except FileNotFoundError:
            return
        with f:
            end = os.fstat(f.fileno()).st_size
            offset = start
            while offset + HEADER_SIZE <= end:
                f.seek(offset)
                magic, length = _HEADER.unpack(f.read(HEADER_SIZE))
                record_end = offset + HEADER_SIZE + length + self.trailer_size
                if (magic != self.magic or not self.min_payload <= length <= MAX_PAYLOAD
                        or record_end > end):
                    return
                pos = offset + HEADER_SIZE
                if pos >= skip_before:
                    yield pos, length, f.read(length if head is None else min(head, length))
                offset = record_end

    def _reader_locked(self, file_no: int, where: str) -> int:
        fd = self._readers.pop(file_no, None)
        if fd is None:
            try:
                fd = os.open(self.path(file_no), os.O_RDONLY)
            except FileNotFoundError:
                raise CorruptionError("missing file for %s" % where) from None
            if len(self._readers) >= _MAX_READERS:
                os.close(self._readers.popitem(last=False)[1])
        self._readers[file_no] = fd
        return fd
