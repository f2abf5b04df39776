"""-maxuploadtarget: Core 0.17's outbound traffic budget per 24-hour cycle.

The budget only stops serving *historical* blocks (older than a week behind the best
header) to peers that are not whitelisted; everything else is still sent.  A cycle
starts at the first byte sent after the previous one ended, as in Core's
RecordBytesSent, and the node's (mockable) clock measures it.
"""

from __future__ import annotations

from typing import Any, Callable, Dict

from coin.chainparams import MAX_BLOCK_SIZE

#: Core's MAX_UPLOAD_TIMEFRAME: the length of one cycle, in seconds.
UPLOAD_TIMEFRAME = 60 * 60 * 24
#: Core's HISTORICAL_BLOCK_AGE: blocks this much older than the best header are historical.
HISTORICAL_BLOCK_AGE = 7 * 24 * 60 * 60
#: Core keeps room to relay one block per 10 minutes left in the cycle.
_BLOCK_SPACING_RESERVE = 600


class UploadTarget:
    """Bytes sent in the current cycle against ``target`` bytes (0: no limit)."""

    def __init__(self, target: int, now: Callable[[], float]) -> None:
        self.target = target
        self._now = now
        self.cycle_start = 0
        self.sent_in_cycle = 0

    def record(self, size: int) -> None:
        """Count ``size`` bytes sent now, starting a new cycle if the last one is over."""
        now = int(self._now())
        if self.cycle_start + UPLOAD_TIMEFRAME < now:
            self.cycle_start = now
            self.sent_in_cycle = 0
        self.sent_in_cycle += size

    def time_left(self) -> int:
        """Seconds left in the cycle (0 without a target; a full cycle before any send)."""
        if self.target == 0:
            return 0
        if self.cycle_start == 0:
            return UPLOAD_TIMEFRAME
        return max(0, self.cycle_start + UPLOAD_TIMEFRAME - int(self._now()))

    def bytes_left(self) -> int:
        if self.target == 0:
            return 0
        return max(0, self.target - self.sent_in_cycle)

    def reached(self, historical: bool = False) -> bool:
        """Core's OutboundTargetReached; ``historical`` keeps a reserve for new blocks."""
        if self.target == 0:
            return False
        if historical:
            reserve = self.time_left() // _BLOCK_SPACING_RESERVE * MAX_BLOCK_SIZE
            return reserve >= self.target or self.sent_in_cycle >= self.target - reserve
        return self.sent_in_cycle >= self.target

    def summary(self) -> Dict[str, Any]:
        """getnettotals' ``uploadtarget`` object."""
        return {"timeframe": UPLOAD_TIMEFRAME, "target": self.target,
                "target_reached": self.reached(), "serve_historical_blocks": not self.reached(True),
                "bytes_left_in_cycle": self.bytes_left(), "time_left_in_cycle": self.time_left()}
