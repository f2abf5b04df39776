"""Initial block download: whether the chain is still catching up with the network."""

from __future__ import annotations

from typing import Optional

from coin.chain.index import BlockIndexEntry

#: Core's DEFAULT_MAX_TIP_AGE: a tip older than this means initial block download.
DEFAULT_MAX_TIP_AGE = 24 * 60 * 60
#: Core 0.12: best header this many blocks above the tip also means initial download.
IBD_HEADERS_LAG = 24 * 6


def in_initial_download(tip: Optional[BlockIndexEntry], best_header: Optional[BlockIndexEntry],
                        now: float, max_tip_age: int = DEFAULT_MAX_TIP_AGE) -> bool:
    """Core 0.12's IsInitialBlockDownload test, before its latch: no tip, a tip older
    than ``max_tip_age``, or a best header more than 144 blocks above the tip."""
    if tip is None or tip.time < now - max_tip_age:
        return True
    return best_header is not None and best_header.height - tip.height > IBD_HEADERS_LAG
