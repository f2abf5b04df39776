"""Initial block download: whether the chain is still catching up, how far it has got,
and the progress line a user watching debug.log sees move during IBD and -reindex."""

from __future__ import annotations

import datetime
import math
import time
from typing import TYPE_CHECKING, Callable, Optional, Tuple

from twisted.logger import Logger

from coin.chain.index import BlockIndexEntry
from coin.chainparams import ChainTxData

if TYPE_CHECKING:  # pragma: no cover
    from coin.chain.chainstate import ChainState

log = Logger()

#: Core's DEFAULT_MAX_TIP_AGE: a tip older than this means initial block download.
DEFAULT_MAX_TIP_AGE = 24 * 60 * 60
#: Core 0.12: best header this many blocks above the tip also means initial download.
IBD_HEADERS_LAG = 24 * 6
#: Blocks whose transaction counts give the average used to extrapolate missing blocks.
PROGRESS_SAMPLE_BLOCKS = 1000
#: Seconds between two progress lines (``-progressinterval``).
DEFAULT_PROGRESS_INTERVAL = 10


def in_initial_download(tip: Optional[BlockIndexEntry], best_header: Optional[BlockIndexEntry],
                        now: float, max_tip_age: int = DEFAULT_MAX_TIP_AGE) -> bool:
    """Core 0.12's IsInitialBlockDownload test, before its latch: no tip, a tip older
    than ``max_tip_age``, or a best header more than 144 blocks above the tip."""
    if tip is None or tip.time < now - max_tip_age:
        return True
    return best_header is not None and best_header.height - tip.height > IBD_HEADERS_LAG


def _header_tx_estimate(tip: BlockIndexEntry, best_header: Optional[BlockIndexEntry]) -> float:
    """Transactions expected in the known headers above ``tip``: per header, the average
    transactions per block of the last ``PROGRESS_SAMPLE_BLOCKS`` blocks (at least 1)."""
    if best_header is None or best_header.height <= tip.height:
        return 0.0
    base = tip.get_ancestor(max(0, tip.height - PROGRESS_SAMPLE_BLOCKS))
    sampled = tip.height - base.height if base is not None else 0
    if base is not None and sampled > 0 and base.chain_tx:
        per_block = (tip.chain_tx - base.chain_tx) / sampled
    else:
        per_block = tip.chain_tx / (tip.height + 1)
    return (best_header.height - tip.height) * max(per_block, 1.0)


def guess_verification_progress(tx_data: ChainTxData, tip: Optional[BlockIndexEntry],
                                best_header: Optional[BlockIndexEntry] = None,
                                now: Optional[float] = None) -> float:
    """Core 0.17's GuessVerificationProgress: the tip's ``chain_tx`` over an estimate of
    every transaction in the chain up to ``now`` (wall-clock, as Core's ``time()``).

    Core's estimate is the chain parameters' ChainTxData extrapolated at its rate to now
    (past that point, the tip's count extrapolated from the tip's time).  A network whose
    ChainTxData is empty (all of ours, until they have history) gets the tip's count from
    that, so the estimate also counts the transactions expected in the headers known above
    the tip; the larger estimate wins.  1.0 when synced; 0.0 when the tip's count is
    unknown.
    """
    if tip is None or not tip.chain_tx:
        return 0.0
    now = time.time() if now is None else now
    if tip.chain_tx <= tx_data.tx_count:
        total = tx_data.tx_count + (now - tx_data.time) * tx_data.tx_rate
    else:
        total = tip.chain_tx + (now - tip.time) * tx_data.tx_rate
    total = max(total, tip.chain_tx + _header_tx_estimate(tip, best_header))
    return tip.chain_tx / total


def _format_eta(seconds: Optional[float]) -> str:
    if seconds is None:
        return "unknown"
    return str(datetime.timedelta(seconds=int(seconds)))


def progress_line(tip: BlockIndexEntry, progress: float, cache_bytes: int, cache_coins: int,
                  blocks_per_s: float, tx_per_s: float) -> str:
    """Core 0.17's UpdateTip line (same field names and formats), then the rates since
    the last line and the estimated time to the end of the chain."""
    remaining = tip.chain_tx / progress - tip.chain_tx if progress > 0 else 0.0
    eta = remaining / tx_per_s if tx_per_s > 0 else (0.0 if remaining <= 0 else None)
    date = datetime.datetime.fromtimestamp(tip.time, datetime.timezone.utc)
    return ("UpdateTip: new best=%s height=%d version=0x%08x log2_work=%.8g tx=%d date='%s' "
            "progress=%f cache=%.1fMiB(%dtxo) blocks/s=%.1f tx/s=%.1f eta=%s" % (
                tip.hash[::-1].hex(), tip.height, tip.version & 0xFFFFFFFF,
                math.log2(tip.chainwork) if tip.chainwork > 0 else 0.0, tip.chain_tx,
                date.strftime("%Y-%m-%dT%H:%M:%SZ"), progress, cache_bytes / (1 << 20),
                cache_coins, blocks_per_s, tx_per_s, _format_eta(eta)))


class ProgressLog:
    """Logs :func:`progress_line` at most every ``interval`` seconds while blocks connect
    during initial download or a -reindex (Core writes UpdateTip for every block; a line
    every few seconds is what a user watching a Python node's sync can read).

    Called by the chain state on its writer thread after each connected block, so the
    cost between lines is one clock read.  Rates are over the blocks since the last line
    (or since the last check that found the node out of initial download).
    """

    def __init__(self, interval: float = DEFAULT_PROGRESS_INTERVAL,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.interval = interval
        self._monotonic = monotonic
        #: (time, height, chain_tx) where the current measurement started.
        self._start: Optional[Tuple[float, int, int]] = None

    def __call__(self, chainstate: "ChainState") -> None:
        now = self._monotonic()
        tip = chainstate.tip
        if tip is None:
            return
        start = self._start
        if start is None:
            self._start = (now, tip.height, tip.chain_tx)
            return
        elapsed = now - start[0]
        if elapsed < self.interval or elapsed <= 0:
            return
        self._start = (now, tip.height, tip.chain_tx)
        best_header = chainstate.best_header
        if not (chainstate.store.is_reindexing()
                or in_initial_download(tip, best_header, chainstate.clock.now())):
            return
        coins = chainstate.store.coins
        log.info("{line}", line=progress_line(
            tip, guess_verification_progress(chainstate.params.tx_data, tip, best_header),
            coins.usage_bytes(), len(coins), (tip.height - start[1]) / elapsed,
            (tip.chain_tx - start[2]) / elapsed))
