"""Events the validation pipeline publishes to its subscribers.

Subscribers are plain objects with any of ``block_connected(entry, block)``,
``block_disconnected(entry, block)``, ``tip_changed(entry)`` and
``invalid_chain_found(entry)``; events are
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


class _EntryEvent(ChainEvent):
    __slots__ = ("entry",)

    def __init__(self, entry: BlockIndexEntry) -> None:
        self.entry = entry

    def dispatch(self, handler: Callable) -> None:
        handler(self.entry)

    def __repr__(self) -> str:
        return "%s(%r)" % (type(self).__name__, self.entry)


class TipChanged(_EntryEvent):
    """The active chain has a new tip (once per activation, after the blocks)."""

    handler_name = "tip_changed"


class InvalidChainFound(_EntryEvent):
    """A block failed to connect; ``entry`` is the most-work block now known invalid."""

    handler_name = "invalid_chain_found"
