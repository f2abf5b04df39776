"""BlockIndexEntry.get_ancestor: the skip-list walk finds what walking back one by one finds."""

from __future__ import annotations

import random
from typing import List, Optional

from hypothesis import given
from hypothesis import strategies as st
from twisted.trial.unittest import SynchronousTestCase

from coin.chain.index import BlockIndexEntry


def tree(size: int, seed: int) -> List[BlockIndexEntry]:
    """``size`` entries: mostly a chain, with branches off random earlier entries."""
    rng = random.Random(seed)
    entries: List[BlockIndexEntry] = []
    for n in range(size):
        prev: Optional[BlockIndexEntry] = None
        if entries:
            prev = entries[-1] if rng.random() < 0.9 else rng.choice(entries)
        height = prev.height + 1 if prev is not None else 0
        entries.append(BlockIndexEntry(n.to_bytes(32, "little"), height, prev, 1, b"\0" * 32,
                                       n, 0x207FFFFF, 0, height))
    return entries


def walked_back(entry: BlockIndexEntry, height: int) -> Optional[BlockIndexEntry]:
    walk: Optional[BlockIndexEntry] = entry
    while walk is not None and walk.height > height:
        walk = walk.prev
    return walk if height >= 0 else None


ENTRIES = tree(3000, 20)


class GetAncestorTests(SynchronousTestCase):

    @given(st.integers(0, len(ENTRIES) - 1), st.integers(-2, 3000))
    def test_skip_walk_matches_walking_back(self, index: int, height: int) -> None:
        entry = ENTRIES[index]
        expected = walked_back(entry, height) if height <= entry.height else None
        self.assertIs(entry.get_ancestor(height), expected)

    def test_every_height_of_the_longest_chain(self) -> None:
        tip = max(ENTRIES, key=lambda e: e.height)
        walk: Optional[BlockIndexEntry] = tip
        while walk is not None:
            self.assertIs(tip.get_ancestor(walk.height), walk)
            walk = walk.prev
