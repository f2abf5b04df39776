"""Block-file pruning (Core 0.17's ``-prune``): which files to delete, and the index side.

Core prunes a ``blkNNNNN.dat``/``revNNNNN.dat`` pair; here block and undo files
roll over independently (``coin/storage/blockfiles.py``), so each sequence is
pruned on its own: a file may go when every block (or undo record) in it that
the index knows belongs to a height at most ``tip - MIN_BLOCKS_TO_KEEP``, and it
is not the file being written.  Files go oldest first (by number, block file
before undo file of the same number) until the usage is under the target.

The heights in a file are taken from the block index (entries' ``file_no`` /
``undo_file``) rather than the per-file statistics: statistics of files
recovered after a crash do not know heights.

Entries of blocks in pruned files lose ``BLOCK_HAVE_DATA`` / ``BLOCK_HAVE_UNDO``
and their positions; ``ChainStore.flush`` persists that, the zeroed file
statistics and the have-pruned flag in one transaction and unlinks the files
afterwards.

:func:`prune_to` is pruneblockchain's checks and prune, run on the validation
worker; it refuses with :class:`PruneRefused`, which carries Core's code and message.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import TYPE_CHECKING, Dict, Iterable, List, Optional, Set, Tuple

from coin.chain.index import BLOCK_HAVE_DATA, BLOCK_HAVE_UNDO, BlockIndexEntry
from coin.chain.errors import RPC_INVALID_PARAMETER, ChainRequestError

if TYPE_CHECKING:  # pragma: no cover
    from coin.chain.chainstate import ChainState
    from coin.chain.snapshot import ChainSnapshot

#: Blocks at the tip never pruned (Core's MIN_BLOCKS_TO_KEEP): reorgs up to this deep work.
MIN_BLOCKS_TO_KEEP = 288
#: Smallest automatic target in MiB (Core's MIN_DISK_SPACE_FOR_BLOCK_FILES).
MIN_PRUNE_TARGET_MIB = 550
MIB = 1 << 20
#: Core's TIMESTAMP_WINDOW: pruning by time keeps blocks up to this much older.
TIMESTAMP_WINDOW = 2 * 60 * 60
#: Heights above this are read as times (Core's pruneblockchain).
_LARGEST_HEIGHT = 1000000000

PruneSet = Tuple[List[int], List[int]]


class PruneConfigError(ValueError):
    """``-prune`` has a value Core refuses; the text is Core's."""


class PruneRefused(ChainRequestError):
    """A manual prune cannot go ahead (-1)."""


class BadPruneHeight(PruneRefused):
    """The height (or time) asked for is not one the chain can be pruned to."""

    rpc_code = RPC_INVALID_PARAMETER


def prune_target_from_option(value: int) -> Tuple[bool, int]:
    """``(prune_mode, target_bytes)`` for ``-prune=<value>`` as Core 0.17 reads it.

    0 is off, 1 manual only (target 0: nothing automatic), >= 550 a target in MiB.
    """
    if value < 0:
        raise PruneConfigError("Prune cannot be configured with a negative value.")
    if value == 0:
        return False, 0
    if value == 1:
        return True, 0
    if value < MIN_PRUNE_TARGET_MIB:
        raise PruneConfigError("Prune configured below the minimum of %d MiB.  Please use a "
                               "higher number." % MIN_PRUNE_TARGET_MIB)
    return True, value * MIB


def _highest_heights(entries: Iterable[BlockIndexEntry]) -> Tuple[Dict[int, int], Dict[int, int]]:
    """Highest block height per block file and per undo file, from the index."""
    blk: Dict[int, int] = {}
    rev: Dict[int, int] = {}
    for e in entries:
        status = e.status
        if status & BLOCK_HAVE_DATA and blk.get(e.file_no, -1) < e.height:
            blk[e.file_no] = e.height
        if status & BLOCK_HAVE_UNDO and rev.get(e.undo_file, -1) < e.height:
            rev[e.undo_file] = e.height
    return blk, rev


def find_files_to_prune(chainstate: "ChainState", target_bytes: Optional[int],
                        manual_height: Optional[int] = None) -> PruneSet:
    """Block and undo file numbers to prune (Core's FindFilesToPrune / ...Manual).

    Automatic (``target_bytes``): oldest first until usage is under the target.
    Manual (``manual_height``): every file whose blocks are all at or below it.
    Either way nothing within ``MIN_BLOCKS_TO_KEEP`` of the tip, nor a file being written.
    """
    tip = chainstate.tip
    if tip is None:
        return [], []
    last_prunable = tip.height - MIN_BLOCKS_TO_KEEP
    if manual_height is not None:
        last_prunable = min(last_prunable, manual_height)
    elif not target_bytes:
        return [], []
    if last_prunable < 0:
        return [], []
    store = chainstate.store
    usage = store.file_usage()
    if manual_height is None and usage < target_bytes:
        return [], []
    infos = store.file_infos()
    current_blk, current_rev = store.current_files()
    blk_high, rev_high = _highest_heights(chainstate.index.values())
    prune_blk: List[int] = []
    prune_rev: List[int] = []
    for n in range(max(current_blk, current_rev)):
        info = infos.get(n)
        if info is None:
            continue
        for number, size, current, high, out in (
                (n, info.size, current_blk, blk_high, prune_blk),
                (n, info.undo_size, current_rev, rev_high, prune_rev)):
            if size == 0 or number >= current:
                continue
            if manual_height is None and usage < target_bytes:
                return prune_blk, prune_rev
            if high.get(number, -1) > last_prunable:
                continue
            out.append(number)
            usage -= size
    return prune_blk, prune_rev


def mark_entries_pruned(chainstate: "ChainState", prune_blk: Iterable[int],
                        prune_rev: Iterable[int]) -> Set[BlockIndexEntry]:
    """Take data/undo flags and positions off entries stored in the files; the changed set."""
    blk, rev = set(prune_blk), set(prune_rev)
    changed: Set[BlockIndexEntry] = set()
    if not blk and not rev:
        return changed
    for e in chainstate.index.values():
        if e.status & BLOCK_HAVE_DATA and e.file_no in blk:
            e.status &= ~BLOCK_HAVE_DATA
            e.file_no = e.data_pos = 0
            changed.add(e)
        if e.status & BLOCK_HAVE_UNDO and e.undo_file in rev:
            e.status &= ~BLOCK_HAVE_UNDO
            e.undo_file = e.undo_pos = 0
            changed.add(e)
    return changed


def prune_height(view: "ChainSnapshot") -> Optional[int]:
    """Lowest height of the snapshot's chain from which every block's data is stored."""
    tip = view.tip
    if tip is None:
        return None
    height = tip.height
    while height > 0:
        below = view.at_height(height - 1)
        if below is None or not below.have_data():
            break
        height -= 1
    return height


def prune_to(chainstate: "ChainState", height: int) -> int:
    """Prune by hand up to ``height`` (or a Unix time, if above 10**9); the height used.

    Core 0.17's pruneblockchain: a time prunes blocks at least two hours older than
    it, and the prune keeps the last ``MIN_BLOCKS_TO_KEEP`` blocks.  Runs on the
    validation worker.
    """
    if not chainstate.prune_mode:
        raise PruneRefused("Cannot prune blocks because node is not in prune mode.")
    if height < 0:
        raise BadPruneHeight("Negative block height.")
    if height > _LARGEST_HEIGHT:
        # Too high for a height, so a time: the first block at least that late, less 2 hours.
        chain = chainstate.chain
        at = bisect_left(chain, height - TIMESTAMP_WINDOW, key=lambda e: e.time_max)
        if at >= len(chain):
            raise BadPruneHeight("Could not find block with at least the specified timestamp.")
        height = chain[at].height
    chain_height = chainstate.height
    if chain_height < MIN_BLOCKS_TO_KEEP:
        # Core refuses below PruneAfterHeight; nothing could be pruned here anyway.
        raise PruneRefused("Blockchain is too short for pruning.")
    if height > chain_height:
        raise BadPruneHeight("Blockchain is shorter than the attempted prune height.")
    return chainstate.prune_manual(height)
