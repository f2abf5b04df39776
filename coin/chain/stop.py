"""-stopatheight: shut the node down once the active chain reaches a height (Core's test aid)."""

from __future__ import annotations

from typing import Callable

from coin.chain.index import BlockIndexEntry


class StopAtHeight:
    """A chain subscriber asking for shutdown when the tip reaches ``height``.

    As in Core, the check runs when the tip changes, so a node already past the
    height stops at its next block, not at start-up.
    """

    def __init__(self, height: int, shutdown: Callable[[], None]) -> None:
        self.height = height
        self._shutdown = shutdown

    def tip_changed(self, entry: BlockIndexEntry) -> None:
        if entry.height >= self.height:
            self._shutdown()
