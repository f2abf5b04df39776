"""The node's notion of "now", which ``setmocktime`` can pin (regtest and tests)."""

from __future__ import annotations

import time
from typing import Callable


class NodeClock:
    """Wall-clock seconds unless a mock time is set (0 clears it, as in Core)."""

    def __init__(self, source: Callable[[], float] = time.time) -> None:
        self._source = source
        self.mock_time = 0

    def now(self) -> float:
        return self.mock_time or self._source()

    def set_mock_time(self, seconds: int) -> None:
        self.mock_time = seconds
