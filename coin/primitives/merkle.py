"""Merkle roots, with the CVE-2012-2459 duplicate-subtree mutation check."""

from __future__ import annotations

from typing import List, Sequence, Tuple

from coin.primitives.hashes import sha256d

NULL_HASH = b"\x00" * 32


def merkle_root(hashes: Sequence[bytes]) -> Tuple[bytes, bool]:
    """Return ``(root, mutated)``.

    ``mutated`` is true when two identical hashes are paired at any level where
    the pairing is not the odd-tail duplication: such a list has the same root
    as a different (shorter) list, so a block with it must be rejected.
    """
    if not hashes:
        return NULL_HASH, False
    level: List[bytes] = list(hashes)
    mutated = False
    while len(level) > 1:
        for i in range(0, len(level) - 1, 2):
            if level[i] == level[i + 1]:
                mutated = True
        if len(level) & 1:
            level.append(level[-1])
        level = [sha256d(level[i] + level[i + 1]) for i in range(0, len(level), 2)]
    return level[0], mutated
