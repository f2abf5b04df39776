"""One published state of the active chain, for readers on other threads.

The validation worker is the chain's only writer.  Each time it leaves the
chain consistent (a block connected on top of the tip, a reorg or an
invalidation finished, a header accepted) it publishes a new
:class:`ChainSnapshot` with one reference assignment.  A reader takes the
current snapshot once and makes every read of one request against it, so
``tip`` then ``at_height`` can never mix two chains, nor see a reorg half done.

A snapshot shares the writer's list of active-chain entries instead of copying
it: the writer only ever appends to a list a snapshot has seen, and copies it
before it removes an element (a disconnect), so every height a snapshot can
read keeps the entry it had at publication.  Publishing is O(1); a reorg costs
one copy of the list.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Optional, Protocol, Sequence

from twisted.internet.defer import Deferred, fail

from coin.chain.errors import RPC_INVALID_ADDRESS_OR_KEY, RPC_MISC_ERROR
from coin.chain.index import BlockIndexEntry
from coin.storage.errors import CorruptionError

if TYPE_CHECKING:  # pragma: no cover
    from coin.chainparams import ChainParams
    from coin.consensus.versionbits import VersionBitsCache
    from coin.primitives.block import Block
    from coin.threads import ThreadRunner


PRUNED_MESSAGE = "Block not available (pruned data)"
NOT_ON_DISK_MESSAGE = "Block not found on disk"
NOT_FOUND_MESSAGE = "Block not found"


class BlockUnavailable(CorruptionError):
    """A block's data cannot be read: unknown, never stored, or pruned; ``message`` is Core's."""

    def __init__(self, message: str, block_hash: bytes, rpc_code: int = RPC_MISC_ERROR) -> None:
        super().__init__("%s: %s" % (message, block_hash[::-1].hex()))
        self.message = message
        self.rpc_code = rpc_code

    @property
    def pruned(self) -> bool:
        return self.message == PRUNED_MESSAGE


class BlockSource(Protocol):
    """What a snapshot reads through (the chain state): the index and the block files."""

    params: "ChainParams"
    versionbits: "VersionBitsCache"
    #: Where block reads run off the reactor (the node's thread pool).
    in_thread: ThreadRunner

    def lookup(self, block_hash: bytes) -> Optional[BlockIndexEntry]:
        """The index entry of any known header."""

    def read_block(self, entry: BlockIndexEntry) -> "Block":
        """The stored block, or BlockUnavailable; safe against concurrent pruning."""


def find_fork(a: BlockIndexEntry, b: BlockIndexEntry) -> BlockIndexEntry:
    """Last common ancestor of two entries (entries' parent links never change)."""
    walk_a = a.get_ancestor(b.height) if a.height > b.height else a
    walk_b = b.get_ancestor(a.height) if b.height > a.height else b
    while walk_a is not walk_b:
        assert walk_a is not None and walk_b is not None
        walk_a, walk_b = walk_a.prev, walk_b.prev
    assert walk_a is not None, "entries of one index share the genesis block"
    return walk_a


#: Serial numbers of snapshots (``next`` is atomic under the GIL: the writer thread takes
#: them, and a front end's loading thread).
_SERIALS = itertools.count(1)


class ChainSnapshot:
    """The active chain as of one commit of the writer: ``ChainView`` for readers.

    Never changes once published; cheap to take (``ChainAccess.snapshot()``).
    """

    __slots__ = ("tip", "height", "best_header", "serial", "_chain", "_source")

    def __init__(self, chain: Sequence[BlockIndexEntry], best_header: Optional[BlockIndexEntry],
                 source: BlockSource) -> None:
        #: Unique to this snapshot in the process (chain states come and go: a front end's
        #: full reload makes a new one): what a reader compares to learn that the chain
        #: moved, without holding the snapshot (and its chain) alive.
        self.serial = next(_SERIALS)
        self._chain = chain
        self.height = len(chain) - 1
        self.tip: Optional[BlockIndexEntry] = chain[-1] if chain else None
        #: The most-work valid header known at publication ("headers" in getblockchaininfo).
        self.best_header = best_header
        self._source = source

    @property
    def params(self) -> "ChainParams":
        return self._source.params

    @property
    def versionbits(self) -> "VersionBitsCache":
        return self._source.versionbits

    def lookup(self, block_hash: bytes) -> Optional[BlockIndexEntry]:
        """Any known header's entry (on this chain or not: see :meth:`contains`)."""
        return self._source.lookup(block_hash)

    def at_height(self, height: int) -> Optional[BlockIndexEntry]:
        if 0 <= height <= self.height:
            return self._chain[height]
        return None

    def contains(self, entry: BlockIndexEntry) -> bool:
        """True when ``entry`` is on this snapshot's active chain."""
        height = entry.height
        return height <= self.height and self._chain[height] is entry

    def next_on_chain(self, entry: BlockIndexEntry) -> Optional[BlockIndexEntry]:
        if self.contains(entry):
            return self.at_height(entry.height + 1)
        return None

    find_fork = staticmethod(find_fork)

    def read_block(self, block_hash: bytes) -> Deferred:
        """Fires with the stored :class:`Block` of ``block_hash`` (read in the thread pool).

        Fails with :class:`BlockUnavailable`: unknown hash (Core's RPC code -5), no
        data, or pruned (before or during the read; never another block's bytes).
        """
        entry = self._source.lookup(block_hash)
        if entry is None:
            return fail(BlockUnavailable(NOT_FOUND_MESSAGE, block_hash,
                                         RPC_INVALID_ADDRESS_OR_KEY))
        return self._source.in_thread(self._source.read_block, entry)
