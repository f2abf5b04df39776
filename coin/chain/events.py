"""Events the validation pipeline publishes to its subscribers.

Subscribers are plain objects with any of ``block_connected(entry, block)``,
``block_disconnected(entry, block)`` and ``tip_changed(entry)``; events are
published only after the blocks they name are durable on disk.
"""

from __future__ import annotations

from typing import Callable

from coin.chain.index import BlockIndexEntry
from coin.primitives.block import Block


class ChainEvent:
    handler_name = ""

    def dispatch(self, handler: Callable) -> None:
        raise NotImplementedError


class _BlockEvent(ChainEvent):
    __slots__ = ("entry", "block")

    def __init__(self, entry: BlockIndexEntry, block: Block) -> None:
        self.entry = entry
        self.block = block

    def dispatch(self, handler: Callable) -> None:
        handler(self.entry, self.block)

    def __repr__(self) -> str:
        return "%s(%r)" % (type(self).__name__, self.entry)


class BlockConnected(_BlockEvent):
    """A block (with its transactions) joined the active chain."""

    handler_name = "block_connected"


class BlockDisconnected(_BlockEvent):
    """A block left the active chain (reorg or invalidateblock)."""

    handler_name = "block_disconnected"


class TipChanged(ChainEvent):
    """The active chain has a new tip (once per activation, after the blocks)."""

    __slots__ = ("entry",)
    handler_name = "tip_changed"

    def __init__(self, entry: BlockIndexEntry) -> None:
        self.entry = entry

    def dispatch(self, handler: Callable) -> None:
        handler(self.entry)

    def __repr__(self) -> str:
        return "TipChanged(%r)" % (self.entry,)
