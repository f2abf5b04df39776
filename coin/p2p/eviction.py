"""Which inbound peer gives its slot to a newcomer when all are taken (Core's eviction).

:func:`select_node_to_evict` is Core 0.17's AttemptToEvictConnection as a pure function
over :class:`EvictionCandidate` records.  From the inbound peers it protects, in turn:

* 4 by network group (the highest keyed group hashes: an attacker cannot aim at them),
* 8 with the lowest minimum ping,
* 4 that most recently sent us a transaction new to the mempool,
* 4 that most recently sent us a new block,
* half of the rest: those connected the longest.

From what is left, the network group with the most connections (ties: the one with
the most recent connection) loses its most recent connection.  An attacker holding
many slots from few groups therefore loses its own, and an honest newcomer from
another group is not the one evicted when the next attacker connection arrives.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

#: Core 0.17's protection counts.
PROTECT_BY_NETGROUP = 4
PROTECT_BY_PING = 8
PROTECT_BY_TX = 4
PROTECT_BY_BLOCK = 4


@dataclass(frozen=True)
class EvictionCandidate:
    """What eviction knows of an inbound peer (Core's NodeEvictionCandidate)."""

    id: int
    #: When the connection was made (seconds).
    connected: float
    #: Lowest ping seen (seconds); ``math.inf`` when never measured.
    min_ping: float = math.inf
    #: When the peer last sent a new block / a transaction accepted to the pool; 0: never.
    last_block_time: float = 0.0
    last_tx_time: float = 0.0
    #: Offers the services we want from peers (NODE_NETWORK).
    relevant_services: bool = False
    #: Asked for transaction relay in its version message.
    relay_txes: bool = False
    #: A keyed hash of the peer's network group.
    keyed_net_group: int = 0


def _protect(candidates: List[EvictionCandidate], key: Callable[[EvictionCandidate], Tuple],
             count: int) -> List[EvictionCandidate]:
    """Sort by ``key`` and drop (protect) the last ``count`` (Core's EraseLastKElements)."""
    ordered = sorted(candidates, key=key)
    return ordered[:max(0, len(ordered) - count)]


def select_node_to_evict(candidates: Sequence[EvictionCandidate]) -> Optional[int]:
    """The id of the inbound peer to disconnect, or None when every one is protected."""
    left = list(candidates)
    left = _protect(left, lambda c: (c.keyed_net_group,), PROTECT_BY_NETGROUP)
    left = _protect(left, lambda c: (-c.min_ping,), PROTECT_BY_PING)
    left = _protect(left, lambda c: (c.last_tx_time, c.relay_txes, -c.connected), PROTECT_BY_TX)
    left = _protect(left, lambda c: (c.last_block_time, c.relevant_services, -c.connected),
                    PROTECT_BY_BLOCK)
    # Newest first; the older half is protected.
    left = _protect(left, lambda c: (-c.connected,), len(left) // 2)
    if not left:
        return None
    groups: Dict[int, List[EvictionCandidate]] = {}
    for candidate in left:
        groups.setdefault(candidate.keyed_net_group, []).append(candidate)
    # The biggest group; between equals, the one whose newest member is the newest.
    biggest = max(groups.values(), key=lambda members: (len(members), members[0].connected))
    return biggest[0].id
