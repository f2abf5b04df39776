"""The tips of the block tree and their status (Core 0.17's getchaintips).

:func:`chain_tips` runs on the validation worker (``ChainAccess.call``) so the
index holds still while it walks it; the RPC ``getchaintips`` only formats the
:class:`ChainTip` records.
"""

from __future__ import annotations

from enum import Enum
from typing import List, NamedTuple

from coin.chain.chainstate import ChainState
from coin.chain.index import BLOCK_VALID_SCRIPTS, BLOCK_VALID_TREE, BlockIndexEntry


class TipStatus(str, Enum):
    """A tip's status, valued as Core spells it."""

    ACTIVE = "active"                # the tip of the active chain
    INVALID = "invalid"              # the branch holds an invalid block
    HEADERS_ONLY = "headers-only"    # data of this block or an ancestor is missing
    VALID_FORK = "valid-fork"        # was connected once, then reorganised away
    VALID_HEADERS = "valid-headers"  # has data, never connected
    UNKNOWN = "unknown"


class ChainTip(NamedTuple):
    """One tip: its entry, the last block it shares with the active chain, and its status."""

    entry: BlockIndexEntry
    fork: BlockIndexEntry
    status: TipStatus

    @property
    def branch_length(self) -> int:
        """Blocks from the fork point to the tip (0 on the active chain)."""
        return self.entry.height - self.fork.height


def tip_status(chainstate: ChainState, entry: BlockIndexEntry) -> TipStatus:
    """Core's order of tests: active, then invalid, missing data, validated, tree-valid."""
    if chainstate.contains(entry):
        return TipStatus.ACTIVE
    if entry.failed():
        return TipStatus.INVALID
    if not entry.chain_tx:
        return TipStatus.HEADERS_ONLY
    if entry.is_valid(BLOCK_VALID_SCRIPTS):
        return TipStatus.VALID_FORK
    if entry.is_valid(BLOCK_VALID_TREE):
        return TipStatus.VALID_HEADERS
    return TipStatus.UNKNOWN


def chain_tips(chainstate: ChainState) -> List[ChainTip]:
    """Every tip of the block tree, the active one included, in Core's order.

    Core orders by height, highest first; ties (by address there) go active first,
    then by hash as its hex shows it.
    """
    tip = chainstate.tip
    tips = [ChainTip(entry, chainstate.find_fork(tip, entry), tip_status(chainstate, entry))
            for entry in chainstate.chain_tips()]
    tips.sort(key=lambda t: (-t.entry.height, t.status is not TipStatus.ACTIVE, t.entry.hash[::-1]))
    return tips
