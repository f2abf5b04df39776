"""Block locators and the header runs peers ask for (getheaders / getblocks).

Pure reads of the in-memory block index and of one active chain: readers off
the writer thread pass a :class:`~coin.chain.snapshot.ChainSnapshot`, so a run
of headers never spans two chains of a reorg.
"""

from __future__ import annotations

from typing import List, Optional, Sequence

from coin.chain.chainstate import ChainState
from coin.chain.snapshot import ChainSnapshot
from coin.chain.index import BlockIndexEntry


def block_locator(entry: Optional[BlockIndexEntry]) -> List[bytes]:
    """Core's GetLocator: the last 10 hashes back from ``entry``, then doubling steps,
    always ending with the genesis hash."""
    hashes: List[bytes] = []
    step = 1
    walk = entry
    while walk is not None:
        hashes.append(walk.hash)
        if walk.height == 0:
            break
        height = max(walk.height - step, 0)
        walk = walk.get_ancestor(height)
        if len(hashes) > 10:
            step *= 2
    return hashes


def fork_in_locator(chainstate: ChainState | ChainSnapshot, locator: Sequence[bytes]) -> BlockIndexEntry:
    """The first locator block on the active chain (Core's FindForkInGlobalIndex).

    A locator naming a block off the active chain counts its fork with the
    active chain; with nothing known, the genesis block.
    """
    for block_hash in locator:
        entry = chainstate.lookup(block_hash)
        if entry is None:
            continue
        if chainstate.contains(entry):
            return entry
        tip = chainstate.tip
        if tip is not None and entry.chainwork <= tip.chainwork:
            return chainstate.find_fork(tip, entry)
    genesis = chainstate.at_height(0)
    assert genesis is not None, "a loaded chain always has genesis"
    return genesis


def headers_after(chainstate: ChainState | ChainSnapshot, start: BlockIndexEntry, hash_stop: bytes,
                  limit: int) -> List[BlockIndexEntry]:
    """Active-chain entries after ``start``, up to ``limit`` or ``hash_stop`` included."""
    found: List[BlockIndexEntry] = []
    walk = chainstate.next_on_chain(start)
    while walk is not None and len(found) < limit:
        found.append(walk)
        if walk.hash == hash_stop:
            break
        walk = chainstate.next_on_chain(walk)
    return found
