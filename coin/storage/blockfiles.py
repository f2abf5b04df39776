"""Raw blocks (``blkNNNNN.dat``) and undo data (``revNNNNN.dat``) with their file statistics.

With a database engine given (PostgreSQL), the records live in its
``block_record`` table instead (``recordtable``): same positions, statistics
and recovery.

Undo records carry a checksum, ``sha256d(block_hash + undo)``, so undo data
read back for the wrong block, or damaged, is detected.  Block and undo files
roll over independently: a block's undo may live in a rev file whose number
differs from its blk file.
"""

from __future__ import annotations

import hashlib
import struct
from copy import copy
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Set, Tuple, Union

from sqlalchemy.engine import Engine
from twisted.logger import Logger

from coin.storage.errors import CorruptionError
from coin.storage.fileinfo import BlockFileInfo
from coin.storage.flatfile import HEADER_SIZE, FlatFileSeq
from coin.storage.recordtable import RecordTable

log = Logger()

CHECKSUM_SIZE = 32
#: A block is at least its 80-byte header and a transaction count.
MIN_BLOCK_SIZE = 81
_TIME = struct.Struct("<I")
_TIME_OFFSET = 68           # of the header's nTime field

Position = Tuple[int, int]
RecordSeq = Union[FlatFileSeq, RecordTable]


def undo_checksum(block_hash: bytes, undo: bytes) -> bytes:
    """``sha256d(block_hash + undo)``, hashed in two pieces (no copy of the record)."""
    first = hashlib.sha256(block_hash)
    first.update(undo)
    return hashlib.sha256(first.digest()).digest()


class BlockFiles:
    """Appends and reads block and undo records; keeps per-file statistics for the database."""

    def __init__(self, blocks_dir: str, magic: bytes, max_file_size: int,
                 engine: Optional[Engine] = None) -> None:
        """Files in ``blocks_dir``, or with ``engine`` rows of its ``block_record`` table."""
        self._blocks: RecordSeq
        self._undo: RecordSeq
        if engine is None:
            self._blocks = FlatFileSeq(blocks_dir, "blk", magic, max_file_size,
                                       min_payload=MIN_BLOCK_SIZE)
            self._undo = FlatFileSeq(blocks_dir, "rev", magic, max_file_size,
                                     trailer_size=CHECKSUM_SIZE)
        else:
            self._blocks = RecordTable(engine, "blk", max_file_size, min_payload=MIN_BLOCK_SIZE)
            self._undo = RecordTable(engine, "rev", max_file_size, trailer_size=CHECKSUM_SIZE)
        self._info: Dict[int, BlockFileInfo] = {}
        self._dirty: Set[int] = set()
        #: Bumped after each change of the statistics (see :meth:`usage`).
        self._changes = 0
        self._usage = (-1, 0)

    def open(self, infos: Dict[int, BlockFileInfo]) -> None:
        """Start from the statistics last flushed, then adopt valid records written after them.

        Records that frame correctly are kept (and counted) even if no flush
        recorded them; a torn tail is cut off so new records follow valid ones.
        """
        self._info = {n: copy(info) for n, info in infos.items()}
        self._dirty.clear()
        self._recover(self._blocks, lambda i: i.size, self._reset_blocks, self._found_block)
        self._recover(self._undo, lambda i: i.undo_size, self._reset_undo, self._found_undo)
        self._changes += 1

    def adopt_infos(self, infos: Dict[int, BlockFileInfo]) -> None:
        """Take statistics as committed, without recovering tails (read-only openers)."""
        self._info = {n: copy(info) for n, info in infos.items()}
        self._changes += 1

    def close(self) -> None:
        self._blocks.close()
        self._undo.close()

    def abandon(self) -> None:
        self._blocks.abandon()
        self._undo.abandon()

    # -- records ----------------------------------------------------------------

    def write_block(self, raw: bytes, height: int, time: int) -> Position:
        file_no, pos = self._blocks.append(raw)
        self._touch(file_no).add_block(HEADER_SIZE + len(raw), height, time)
        self._changes += 1
        return file_no, pos

    def read_block(self, file_no: int, pos: int, wait: bool = True) -> bytes:
        return self._blocks.read(file_no, pos, wait)[0]

    def write_undo(self, raw: bytes, block_hash: bytes) -> Position:
        file_no, pos = self._undo.append(raw, undo_checksum(block_hash, raw))
        self._touch(file_no).undo_size += HEADER_SIZE + len(raw) + CHECKSUM_SIZE
        self._changes += 1
        return file_no, pos

    def read_undo(self, file_no: int, pos: int, block_hash: bytes) -> bytes:
        undo, checksum = self._undo.read(file_no, pos)
        if checksum != undo_checksum(block_hash, undo):
            raise CorruptionError("undo data at rev%05d.dat:%d fails its checksum for block %s"
                                  % (file_no, pos, block_hash[::-1].hex()))
        return undo

    def scan_blocks(self, from_file: int = 0,
                    from_pos: int = 0) -> Iterator[Tuple[int, int, bytes]]:
        """``(file_no, pos, raw)`` for each valid block record at or after the position.

        ``from_pos`` may be any offset (a block position or a record boundary):
        the file is walked from its start, so records are only ever recognised
        where the framing chain puts them.  Within each file the scan stops at
        the first record that does not frame correctly, then goes on with the
        next file if there is one.
        """
        file_no, skip_before = from_file, from_pos
        while self._blocks.exists(file_no):
            for pos, _length, raw in self._blocks.records(file_no, skip_before=skip_before):
                yield file_no, pos, raw
            file_no, skip_before = file_no + 1, 0

    def total_block_bytes(self) -> int:
        """Bytes of valid block records in all block files."""
        return sum(info.size for info in list(self._info.values()))

    def block_bytes_before(self, file_no: int, pos: int) -> int:
        """Bytes of block records before ``(file_no, pos)``: progress through the files."""
        return pos + sum(info.size for n, info in list(self._info.items()) if n < file_no)

    # -- pruning ----------------------------------------------------------------

    def current_files(self) -> Tuple[int, int]:
        """``(blk, rev)`` numbers of the files being appended to; never pruned."""
        return self._blocks.current_file, self._undo.current_file

    def usage(self) -> int:
        """Bytes of block and undo records in all files (Core's CalculateCurrentUsage).

        Summed once per change, not per call: getblockchaininfo and REST chaininfo read it
        for every request (and a node has thousands of files). Each change bumps the count
        after it is made, so a sum taken while one is under way is never reused after it.
        """
        changes = self._changes
        cached = self._usage
        if cached[0] != changes:
            cached = self._usage = (changes, sum(info.size + info.undo_size
                                                 for info in list(self._info.values())))
        return cached[1]

    def infos(self) -> Dict[int, BlockFileInfo]:
        """Copies of every file's statistics."""
        return {n: copy(info) for n, info in list(self._info.items())}

    def mark_pruned(self, blk_files: Iterable[int], rev_files: Iterable[int]) -> None:
        """Zero the statistics of files about to be pruned (saved by the next flush)."""
        for n in blk_files:
            self._reset_blocks(self._touch(n))
        for n in rev_files:
            self._reset_undo(self._touch(n))
        self._changes += 1

    def remove_files(self, blk_files: Iterable[int], rev_files: Iterable[int]) -> None:
        """Unlink pruned files: only after the database says they are gone."""
        removed = False
        for n in blk_files:
            removed |= self._blocks.remove(n)
        for n in rev_files:
            removed |= self._undo.remove(n)
        if removed:
            self._blocks.removed()

    def pruned_leftovers(self) -> Tuple[List[int], List[int]]:
        """Files on disk that the statistics say were pruned (a crash before the unlink).

        A file below the last one holding records always holds records unless
        it was pruned, so zero recorded bytes there means pruned.
        """
        def leftovers(seq: RecordSeq, size_of: Callable[[BlockFileInfo], int]) -> List[int]:
            last, _ = self._last_recorded(size_of)
            return [n for n in range(last) if seq.exists(n)
                    and (n not in self._info or size_of(self._info[n]) == 0)]
        return (leftovers(self._blocks, lambda i: i.size),
                leftovers(self._undo, lambda i: i.undo_size))

    def sync(self) -> None:
        """Flush and fsync both current files: call before recording positions in the database."""
        self._blocks.sync()
        self._undo.sync()

    def remove_undo_files(self) -> None:
        """Delete all undo data (nothing references it after the index is wiped)."""
        self._undo.remove_all()
        for info in self._info.values():
            info.undo_size = 0
        self._changes += 1
        self._undo.open_writer(0, 0)

    # -- statistics -------------------------------------------------------------

    def dirty_infos(self) -> List[BlockFileInfo]:
        """Copies of the statistics changed since :meth:`mark_clean`."""
        return [copy(self._info[n]) for n in sorted(self._dirty)]

    def mark_clean(self, infos: Iterable[BlockFileInfo]) -> None:
        for info in infos:
            self._dirty.discard(info.file_no)

    def _touch(self, file_no: int) -> BlockFileInfo:
        info = self._info.get(file_no)
        if info is None:
            info = self._info[file_no] = BlockFileInfo(file_no)
        self._dirty.add(file_no)
        return info

    # -- recovery ---------------------------------------------------------------

    def _last_recorded(self, size_of: Callable[[BlockFileInfo], int]) -> Position:
        file_no = max((n for n, info in self._info.items() if size_of(info) > 0), default=0)
        info = self._info.get(file_no)
        return file_no, size_of(info) if info is not None else 0

    def _recover(self, seq: RecordSeq, size_of: Callable[[BlockFileInfo], int],
                 reset: Callable[[BlockFileInfo], None],
                 found: Callable[[BlockFileInfo, int, int, bytes], None]) -> None:
        file_no, start = self._last_recorded(size_of)
        while True:
            if seq.file_size(file_no) < start:
                log.warn("{path} is shorter than recorded ({size} bytes); rescanning it",
                         path=seq.path(file_no), size=start)
                reset(self._touch(file_no))
                start = 0
            end = start
            for pos, length, head in seq.records(file_no, start,
                                                 head=_TIME_OFFSET + _TIME.size):
                found(self._touch(file_no), pos, length, head)
                end = pos + length + seq.trailer_size
            if not seq.exists(file_no + 1):
                break
            file_no, start = file_no + 1, 0
        seq.open_writer(file_no, end)

    @staticmethod
    def _reset_blocks(info: BlockFileInfo) -> None:
        info.blocks = info.size = 0
        info.height_first = info.height_last = info.time_first = info.time_last = None

    @staticmethod
    def _found_block(info: BlockFileInfo, pos: int, length: int, head: bytes) -> None:
        # Heights are unknown until the chain code replays the block.
        info.add_block(HEADER_SIZE + length, None, _TIME.unpack_from(head, _TIME_OFFSET)[0])

    @staticmethod
    def _reset_undo(info: BlockFileInfo) -> None:
        info.undo_size = 0

    @staticmethod
    def _found_undo(info: BlockFileInfo, pos: int, length: int, head: bytes) -> None:
        info.undo_size += HEADER_SIZE + length + CHECKSUM_SIZE
