"""The node's notion of "now": ``setmocktime`` can pin it, peers' clocks adjust it."""

from __future__ import annotations

import time
from typing import Callable


class NodeClock:
    """Wall-clock seconds unless a mock time is set (0 clears it, as in Core).

    The network time offset (Core's ``nTimeOffset``: the median of what peers'
    version messages say, as P2P computes it) lives here too, so every user of
    adjusted time (header checks, mining, sync, ``getnetworkinfo``) reads one value.
    """

    def __init__(self, source: Callable[[], float] = time.time) -> None:
        self._source = source
        self.mock_time = 0
        #: Seconds added to the clock for network-adjusted time.
        self.time_offset = 0

    def now(self) -> float:
        return self.mock_time or self._source()

    def adjusted_time(self) -> int:
        """Core's GetAdjustedTime: the node's time plus the network time offset."""
        return int(self.now()) + self.time_offset

    def set_mock_time(self, seconds: int) -> None:
        self.mock_time = seconds

    def set_time_offset(self, seconds: int) -> None:
        self.time_offset = seconds
