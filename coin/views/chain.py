"""What the views need to know about the active chain, and the confirmations rule."""

from __future__ import annotations

from typing import Optional, Protocol

from coin.chain.index import BlockIndexEntry


class ChainView(Protocol):
    """The read-only slice of :class:`coin.chain.chainstate.ChainState` a view uses."""

    @property
    def height(self) -> int:
        """Height of the active tip."""

    def contains(self, entry: BlockIndexEntry) -> bool:
        """Is ``entry`` on the active chain?"""

    def next_on_chain(self, entry: BlockIndexEntry) -> Optional[BlockIndexEntry]:
        """The active-chain successor of ``entry`` (None at the tip or off the chain)."""


def block_confirmations(entry: BlockIndexEntry, chain: ChainView) -> int:
    """Core's block confirmations: 1 at the tip, -1 when not on the active chain."""
    if not chain.contains(entry):
        return -1
    return chain.height - entry.height + 1
