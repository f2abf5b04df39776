"""Transaction counts and rates over a window of the active chain (Core 0.17's getchaintxstats).

:func:`chain_tx_stats` reads one :class:`~coin.chain.snapshot.ChainSnapshot` (any
thread); the RPC ``getchaintxstats`` only formats the :class:`ChainTxStats` it gets.
"""

from __future__ import annotations

from typing import NamedTuple, Optional

from coin.chain.index import BlockIndexEntry
from coin.chain.errors import RPC_INVALID_PARAMETER, ChainRequestError
from coin.chain.snapshot import ChainSnapshot

#: The default window: one month of blocks.
MONTH = 30 * 24 * 60 * 60


class BadTxStatsWindow(ChainRequestError):
    """The block or the window asked for cannot be measured (-8)."""

    rpc_code = RPC_INVALID_PARAMETER


class ChainTxStats(NamedTuple):
    """The window ending at ``entry``: its length in blocks, the transactions in it, and the
    seconds between the median times past of its ends."""

    entry: BlockIndexEntry
    block_count: int
    tx_count: int
    interval: int

    @property
    def rate(self) -> Optional[float]:
        """Transactions per second over the window, if it spans any time."""
        return self.tx_count / self.interval if self.block_count > 0 and self.interval > 0 else None


def chain_tx_stats(view: ChainSnapshot, entry: BlockIndexEntry, nblocks: Optional[int],
                   target_spacing: int) -> ChainTxStats:
    """Statistics of the ``nblocks`` blocks ending at ``entry`` (default: about a month of
    blocks at ``target_spacing``, at most the height - 1), as Core 0.17 computes them."""
    if not view.contains(entry):
        raise BadTxStatsWindow("Block is not in main chain")
    if nblocks is None:
        count = max(0, min(MONTH // target_spacing, entry.height - 1))
    elif nblocks < 0 or (nblocks > 0 and nblocks >= entry.height):
        raise BadTxStatsWindow("Invalid block count: should be between 0 and the block's "
                               "height - 1")
    else:
        count = nblocks
    past = entry.get_ancestor(entry.height - count)
    return ChainTxStats(entry, count, entry.chain_tx - past.chain_tx,
                        entry.median_time_past() - past.median_time_past())
