"""mempool.dat: the pool saved at shutdown and reloaded at start, in Core's format.

Layout (little endian): uint64 version (1), uint64 count, then per entry the
serialized transaction, int64 entry time and int64 fee delta; then the fee
deltas of transactions not in the pool as a map (CompactSize count, then
32-byte txid and int64 delta each).  The service writes it with
:func:`coin.storage.atomicfile.write_file_atomic`.
"""

from __future__ import annotations

from typing import Dict, List, NamedTuple

from coin.mempool.pool import Mempool
from coin.primitives.serialize import ByteReader, DeserializationError, compact_size, i64, u64
from coin.primitives.transaction import Transaction

MEMPOOL_DUMP_VERSION = 1
FILE_NAME = "mempool.dat"


class MempoolFileError(Exception):
    """The file is unreadable, truncated or of another version (never fatal to the node)."""


class SavedEntry(NamedTuple):
    tx: Transaction
    time: int
    fee_delta: int


class SavedPool(NamedTuple):
    entries: List[SavedEntry]
    #: Deltas of transactions that were not in the pool.
    deltas: Dict[bytes, int]


def serialize_pool(pool: Mempool) -> bytes:
    """The pool's bytes, parents before children (Mempool.sorted_entries)."""
    with pool.lock:
        entries = pool.sorted_entries()
        deltas = dict(pool.deltas)
        parts = [u64(MEMPOOL_DUMP_VERSION), u64(len(entries))]
        for entry in entries:
            parts.append(entry.tx.serialize())
            parts.append(i64(entry.time))
            parts.append(i64(entry.fee_delta))
            deltas.pop(entry.txid, None)
    parts.append(compact_size(len(deltas)))
    for txid, delta in deltas.items():
        parts.append(txid + i64(delta))
    return b"".join(parts)


def parse_pool(data: bytes) -> SavedPool:
    """Read a mempool.dat; :class:`MempoolFileError` for anything but a whole, valid file."""
    r = ByteReader(data)
    try:
        version = r.read_u64()
        if version != MEMPOOL_DUMP_VERSION:
            raise MempoolFileError("unknown version %d" % version)
        count = r.read_u64()
        if count > len(data):
            raise MempoolFileError("entry count %d exceeds the file size" % count)
        entries = []
        for _ in range(count):
            tx = Transaction.read(r)
            entries.append(SavedEntry(tx, r.read_i64(), r.read_i64()))
        deltas: Dict[bytes, int] = {}
        for _ in range(r.read_compact_size()):
            txid = r.read(32)
            deltas[txid] = r.read_i64()
        r.assert_end()
    except DeserializationError as e:
        raise MempoolFileError(str(e)) from None
    return SavedPool(entries, deltas)


def read_pool_file(path: str) -> SavedPool:
    with open(path, "rb") as f:
        return parse_pool(f.read())
