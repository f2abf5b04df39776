"""Per-file statistics of the block and undo files, and their ``block_file`` rows."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Dict, Iterable, Optional

from sqlalchemy import select, update
from sqlalchemy.engine import Connection

from coin.storage.dialect import upsert_statements
from coin.storage.schema import block_file


@dataclass
class BlockFileInfo:
    """What is in ``blkNNNNN.dat`` / ``revNNNNN.dat``: sizes are bytes of valid records.

    The undo file of the same number rolls over on its own, so ``undo_size`` is
    unrelated to the blocks counted here.
    """

    file_no: int
    blocks: int = 0
    size: int = 0
    undo_size: int = 0
    height_first: Optional[int] = None
    height_last: Optional[int] = None
    time_first: Optional[int] = None
    time_last: Optional[int] = None

    def add_block(self, size: int, height: Optional[int], time: int) -> None:
        """Account for one block record of ``size`` bytes (``height`` None if unknown)."""
        self.blocks += 1
        self.size += size
        if height is not None:
            self.height_first = _lower(self.height_first, height)
            self.height_last = _higher(self.height_last, height)
        self.time_first = _lower(self.time_first, time)
        self.time_last = _higher(self.time_last, time)


def _lower(current: Optional[int], value: int) -> int:
    return value if current is None else min(current, value)


def _higher(current: Optional[int], value: int) -> int:
    return value if current is None else max(current, value)


def load_file_info_txn(conn: Connection) -> Dict[int, BlockFileInfo]:
    return {row.file_no: BlockFileInfo(**row._asdict())
            for row in conn.execute(select(block_file))}


def save_file_info_txn(conn: Connection, infos: Iterable[BlockFileInfo]) -> None:
    params = [asdict(info) for info in infos]
    if params:
        for stmt in upsert_statements(block_file, conn.dialect.name):
            conn.execute(stmt, params)


def reset_undo_sizes_txn(conn: Connection) -> None:
    conn.execute(update(block_file).values(undo_size=0))
