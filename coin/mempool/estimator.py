"""Fee estimation from confirmed history, in the manner of Core's CBlockPolicyEstimator (0.15+).

Every transaction that enters the pool is filed under a fee-rate bucket with
the chain height at which it arrived.  When a block confirms it, the number of
blocks it waited is recorded; when it leaves unmined (evicted, conflicted,
expired) that counts as a failure for every target it had already missed.
Counts are exponentially decayed once per block, so old behaviour fades.

Parameters (Core's values):

* Buckets: upper bounds 1000, 1050, 1102.5, ... sat/kB (spacing 1.05) up to
  1e7, plus one unbounded bucket above.  A rate falls in the first bucket whose
  bound is >= the rate, so everything at or below the 1000 sat/kB relay minimum
  (free, prioritised transactions) shares the lowest bucket.
* Three horizons, each counting "confirmed within p periods":
  short (12 periods of 1 block, decay 0.962, half-life ~18 blocks),
  medium (24 periods of 2 blocks, decay 0.9952, ~144 blocks) and
  long (42 periods of 24 blocks, decay 0.99931, ~1000 blocks); targets go up to 1008.
* Enough data: a group of buckets is judged once its decayed count of confirmed
  transactions reaches ``sufficient / (1 - decay)``, i.e. on average 0.5
  transactions per block (short horizon: ~13.2) or 0.1 per block (medium ~20.8,
  long ~145) over the horizon's memory.
* Success: within target / (confirmed + failed + still waiting at least the
  target) >= 60% for half the target, 85% for the target, 95% for double the
  target; estimatesmartfee takes the highest of those answers (conservative
  mode also raises it to what double the target needs at 95% on the longer
  horizons).

The estimate for a target scans buckets from the highest fee rate down,
growing a group until it has enough data; a group that passes closes and
scanning goes on, one that fails keeps growing into cheaper buckets.  The
answer is the average fee rate of the median transaction's bucket in the
cheapest passing group.

As in Core, a target beyond half the span of blocks observed is clamped down
to it: confirmation counts for longer waits cannot exist yet.  Departures from
Core, all deliberate:

* answers never rise with the target (a rate good enough for N blocks is good
  enough for more, so a target's answer is the lowest for any target up to
  it); Core's per-target rules can rise, e.g. when a half-target check only
  starts to apply;
* a target with no answer falls back to the next larger one that has one
  (the returned target says which), instead of Core's last resort of the
  coarse long-horizon check alone;
* a block at or below the last height seen is not scored, as in Core, but
  its transactions stop being followed, as they are no longer in the pool.

Pure computation, no locking: the mempool calls it under its own lock.
"""

from __future__ import annotations

import bisect
import hashlib
import math
import struct
from typing import Dict, List, NamedTuple, Optional, Sequence, Set, Tuple

from coin.storage.atomicfile import write_file_atomic

MIN_BUCKET_FEERATE = 1000.0
MAX_BUCKET_FEERATE = 1e7
FEE_SPACING = 1.05

HALF_SUCCESS_PCT = 0.60
SUCCESS_PCT = 0.85
DOUBLE_SUCCESS_PCT = 0.95

#: Confirmed transactions per block (on average over a horizon) needed to judge a bucket group.
SUFFICIENT_FEETXS = 0.1
SUFFICIENT_TXS_SHORT = 0.5

#: History read from a file older than this (in blocks) no longer extends the usable target range.
OLDEST_ESTIMATE_HISTORY = 6 * 1008

#: ``fee_estimates.dat``: magic, u32 version, body, sha256 of everything before it.
FILE_MAGIC = b"COINFEES"
FILE_VERSION = 1


def _bucket_bounds() -> Tuple[float, ...]:
    bounds: List[float] = []
    bound = MIN_BUCKET_FEERATE
    while bound <= MAX_BUCKET_FEERATE:
        bounds.append(bound)
        bound *= FEE_SPACING
    bounds.append(math.inf)
    return tuple(bounds)


#: Upper bound of each fee-rate bucket (sat/kB); the last one is unbounded.
BUCKETS: Tuple[float, ...] = _bucket_bounds()

# (name, periods, decay, blocks per period, sufficient txs per block)
_HORIZONS = (
    ("short", 12, 0.962, 1, SUFFICIENT_TXS_SHORT),
    ("medium", 24, 0.9952, 2, SUFFICIENT_FEETXS),
    ("long", 42, 0.99931, 24, SUFFICIENT_FEETXS),
)


def bucket_index(feerate: float) -> int:
    """The bucket a fee rate (sat/kB) is counted in: the first whose bound is not below it."""
    return bisect.bisect_left(BUCKETS, feerate)


class _Horizon:
    """Decayed confirmation statistics over one time horizon (Core's TxConfirmStats)."""

    __slots__ = ("name", "periods", "decay", "scale", "sufficient", "tx_count", "fee_sum", "conf", "fail",
                 "touched")

    def __init__(self, name: str, periods: int, decay: float, scale: int, sufficient: float) -> None:
        nbuckets = len(BUCKETS)
        self.name = name
        self.periods = periods
        self.decay = decay
        self.scale = scale
        self.sufficient = sufficient
        #: Confirmed transactions per bucket, and the sum of their fee rates (for the bucket's average).
        self.tx_count = [0.0] * nbuckets
        self.fee_sum = [0.0] * nbuckets
        #: conf[b][p]: confirmed within (p + 1) * scale blocks.
        self.conf = [[0.0] * periods for _ in range(nbuckets)]
        #: fail[b][p]: left the pool unmined after waiting at least (p + 1) * scale blocks.
        self.fail = [[0.0] * periods for _ in range(nbuckets)]
        #: Buckets that ever held anything: decay skips the rest, which are mostly empty.
        self.touched: Set[int] = set()

    @property
    def max_target(self) -> int:
        return self.periods * self.scale

    def apply_decay(self) -> None:
        d = self.decay
        tx_count, fee_sum, conf, fail = self.tx_count, self.fee_sum, self.conf, self.fail
        for bucket in self.touched:
            tx_count[bucket] *= d
            fee_sum[bucket] *= d
            conf[bucket] = [x * d for x in conf[bucket]]
            fail[bucket] = [x * d for x in fail[bucket]]

    def record(self, blocks: int, bucket: int, feerate: float) -> None:
        start = (blocks + self.scale - 1) // self.scale - 1  # the first period it made
        if start < self.periods:
            row = self.conf[bucket]
            row[start:] = [x + 1.0 for x in row[start:]]
        self.tx_count[bucket] += 1
        self.fee_sum[bucket] += feerate
        self.touched.add(bucket)

    def record_failure(self, blocks_waited: int, bucket: int) -> None:
        # Only whole periods count: leaving halfway through one says nothing about it.
        missed = min(blocks_waited // self.scale, self.periods)
        if missed > 0:
            row = self.fail[bucket]
            row[:missed] = [x + 1.0 for x in row[:missed]]
        self.touched.add(bucket)

    def median(self, target: int, threshold: float, waiting: Dict[int, int],
               active: Optional[Sequence[int]] = None) -> Optional[float]:
        """Fee rate confirming within ``target`` blocks at ``threshold``, or None.

        ``waiting`` counts, per bucket, tracked transactions still in the pool
        that have already waited ``target`` blocks or more: they are failures
        in the making, and without them a sudden backlog would go unnoticed
        until it cleared.  ``active``, highest first, may leave out buckets
        with no history and nothing waiting: they cannot change the answer.
        """
        return self.scan(target, threshold, waiting, active).answer

    def scan(self, target: int, threshold: float, waiting: Dict[int, int],
             active: Optional[Sequence[int]] = None) -> "Scan":
        """:meth:`median` with the bucket ranges behind it (Core's EstimateMedianVal and its
        EstimationResult): the cheapest passing group, and the failing one below it."""
        period = (target + self.scale - 1) // self.scale - 1
        conf, fail, counts = self.conf, self.fail, self.tx_count
        needed = self.sufficient / (1.0 - self.decay)
        n_conf = total = failed = pending = 0.0
        top = len(counts) - 1
        near = top  # the highest bucket of the group being grown
        passing = True
        best: Optional[Tuple[int, int]] = None
        passed: Optional[RangeStats] = None
        failing: Optional[RangeStats] = None
        for bucket in range(top, -1, -1) if active is None else active:
            n_conf += conf[bucket][period]
            total += counts[bucket]
            failed += fail[bucket][period]
            pending += waiting.get(bucket, 0)
            if total < needed:
                continue
            if n_conf / (total + failed + pending) < threshold:
                if passing:
                    failing = RangeStats(bucket, near, n_conf, total, pending, failed)
                    passing = False
                continue  # keep growing the group into cheaper buckets
            failing = None
            passing = True
            best = (bucket, near)
            passed = RangeStats(bucket, near, n_conf, total, pending, failed)
            n_conf = total = failed = pending = 0.0
            near = bucket - 1
        if passing and near >= 0:
            # Buckets below the last passing group lacked the data: reported as failing.
            failing = RangeStats(0, near, n_conf, total, pending, failed)
        if best is None:
            return Scan(None, passed, failing)
        low, high = best
        remaining = sum(counts[low:high + 1]) / 2.0
        answer: Optional[float] = None
        for bucket in range(low, high + 1):
            count = counts[bucket]
            if count <= 0.0:
                continue
            answer = self.fee_sum[bucket] / count
            if count >= remaining:
                break
            remaining -= count
        return Scan(answer, passed, failing)


class RangeStats(NamedTuple):
    """A group of buckets ``low..high`` and its decayed counts (Core's EstimatorBucket)."""

    low: int
    high: int
    within_target: float
    total_confirmed: float
    in_mempool: float
    left_mempool: float

    @property
    def start(self) -> float:
        """The fee rate the range starts above (sat/kB): the bound of the bucket below."""
        return BUCKETS[self.low - 1] if self.low else 0.0

    @property
    def end(self) -> float:
        return BUCKETS[self.high]


class Scan(NamedTuple):
    """One horizon's answer for a target and threshold, and the ranges it came from."""

    answer: Optional[float]
    passed: Optional[RangeStats]
    failed: Optional[RangeStats]


def _new_horizons() -> List[_Horizon]:
    return [_Horizon(*spec) for spec in _HORIZONS]


def _lower(a: Optional[float], b: Optional[float]) -> Optional[float]:
    if a is None:
        return b
    return a if b is None or a <= b else b


def _higher(a: Optional[float], b: Optional[float]) -> Optional[float]:
    if a is None:
        return b
    return a if b is None or a >= b else b


def _rate(value: float) -> int:
    return int(math.floor(value + 0.5))


class _Answers:
    """Memoised sub-estimates for one state of the estimator.

    Making answers monotone means evaluating every target up to the requested
    one; the medians behind them repeat a lot, so they are computed once until
    the next state change.
    """

    def __init__(self, horizons: List[_Horizon], waiting_ages: Dict[int, Dict[int, int]],
                 max_usable: int) -> None:
        self.horizons = horizons
        self.max_usable = max_usable
        # cumulative[k]: per-bucket counts of the pending transactions in the k oldest age groups.
        self._ages = sorted(age for age in waiting_ages if age > 0)
        cumulative: List[Dict[int, int]] = [{}]
        for age in reversed(self._ages):
            merged = dict(cumulative[-1])
            for bucket, count in waiting_ages[age].items():
                merged[bucket] = merged.get(bucket, 0) + count
            cumulative.append(merged)
        self._cumulative = cumulative
        pending_buckets = set(cumulative[-1])
        self._active = [sorted(horizon.touched | pending_buckets, reverse=True) for horizon in horizons]
        self._medians: Dict[Tuple[int, int, float, int], Optional[float]] = {}
        self._smart: Dict[Tuple[int, bool], Optional[float]] = {}

    def _older(self, target: int) -> int:
        """How many age groups of pending transactions have waited ``target`` blocks or more."""
        return len(self._ages) - bisect.bisect_left(self._ages, target)

    def median(self, index: int, target: int, threshold: float) -> Optional[float]:
        horizon = self.horizons[index]
        older = self._older(target)
        period = (target + horizon.scale - 1) // horizon.scale
        key = (index, period, threshold, older)
        try:
            return self._medians[key]
        except KeyError:
            value = self._medians[key] = horizon.median(target, threshold, self._cumulative[older],
                                                        self._active[index])
            return value

    def scan(self, index: int, target: int, threshold: float) -> Scan:
        return self.horizons[index].scan(target, threshold, self._cumulative[self._older(target)],
                                         self._active[index])

    def combined(self, target: int, threshold: float, check_shorter: bool) -> Optional[float]:
        """Core's estimateCombinedFee: the shortest horizon covering ``target``.

        With ``check_shorter``, a lower answer from the end of a more recent
        horizon wins: recent blocks may show that less is enough.
        """
        short, medium, long_ = self.horizons
        if target < 1 or target > long_.max_target:
            return None
        if target <= short.max_target:
            estimate = self.median(0, target, threshold)
        elif target <= medium.max_target:
            estimate = self.median(1, target, threshold)
        else:
            estimate = self.median(2, target, threshold)
        if check_shorter:
            if target > medium.max_target:
                estimate = _lower(estimate, self.median(1, medium.max_target, threshold))
            if target > short.max_target:
                estimate = _lower(estimate, self.median(0, short.max_target, threshold))
        return estimate

    def conservative(self, double_target: int) -> Optional[float]:
        """Core's estimateConservativeFee: double the target at 95% on the longer horizons."""
        short, medium, _ = self.horizons
        estimate: Optional[float] = None
        if double_target <= short.max_target:
            estimate = self.median(1, double_target, DOUBLE_SUCCESS_PCT)
        if double_target <= medium.max_target:
            estimate = _higher(estimate, self.median(2, double_target, DOUBLE_SUCCESS_PCT))
        return estimate

    def smart(self, target: int, conservative: bool) -> Optional[float]:
        """Core's estimateSmartFee for one target (>= 2), before monotonicity is imposed.

        Unlike Core, the conservative check only ever raises an answer found
        otherwise, never answers alone (Core also falls back to it when nothing
        else answers): the long horizon counts in 24-block periods, too coarse
        for a short target, and a larger target is tried next anyway.
        """
        key = (target, conservative)
        if key in self._smart:
            return self._smart[key]
        estimate = self.combined(target // 2, HALF_SUCCESS_PCT, True)
        estimate = _higher(estimate, self.combined(target, SUCCESS_PCT, True))
        double_target = min(2 * target, self.max_usable)
        estimate = _higher(estimate, self.combined(double_target, DOUBLE_SUCCESS_PCT, not conservative))
        if conservative and estimate is not None:
            estimate = _higher(estimate, self.conservative(2 * target))
        self._smart[key] = estimate
        return estimate


class FeeEstimator:
    """Learns from confirmations which fee rates get mined within how many blocks."""

    def __init__(self) -> None:
        self._horizons = _new_horizons()
        #: txid -> (entry height, bucket, fee rate) of the pool transactions being followed.
        self._tracked: Dict[bytes, Tuple[int, int, int]] = {}
        #: entry height -> bucket -> number of tracked transactions (how long the pending ones waited).
        self._pending: Dict[int, Dict[int, int]] = {}
        self._best_height: Optional[int] = None
        #: First block that confirmed a tracked transaction: how much history this run has seen.
        self._first_recorded: Optional[int] = None
        #: The same span as read from fee_estimates.dat.
        self._historical_first: Optional[int] = None
        self._historical_best: Optional[int] = None
        self._answers: Optional[_Answers] = None

    # ------------------------------------------------------------------ events

    def process_transaction(self, txid: bytes, height: int, fee: int, size: int,
                            valid_for_estimate: bool = True) -> None:
        """A transaction entered the pool when the tip was at ``height``.

        Not followed: transactions flagged invalid for estimation (the caller
        knows, e.g. ones with unconfirmed parents, whose own fee says little),
        nonsense sizes, and ones arriving below the last block seen, i.e.
        returning from disconnected blocks: their wait would be miscounted.
        """
        if not valid_for_estimate or txid in self._tracked or size <= 0 or fee < 0:
            return
        if self._best_height is not None and height < self._best_height:
            return
        feerate = fee * 1000 // size
        bucket = bucket_index(feerate)
        self._tracked[txid] = (height, bucket, feerate)
        per_bucket = self._pending.setdefault(height, {})
        per_bucket[bucket] = per_bucket.get(bucket, 0) + 1
        self._answers = None

    def remove_transaction(self, txid: bytes) -> None:
        """A transaction left the pool unmined: a failure for each target it already missed."""
        entry = self._untrack(txid)
        if entry is None:
            return
        height, bucket, _ = entry
        if self._best_height is not None and self._best_height > height:
            for horizon in self._horizons:
                horizon.record_failure(self._best_height - height, bucket)
        self._answers = None

    def process_block(self, height: int, txids: Sequence[bytes]) -> None:
        """A block at ``height`` was connected with these transactions.

        A block at or below the last height seen (a reorg or a reconnect) is
        not scored, as in Core, so statistics are not counted twice and decay
        stays one step per height; its transactions are no longer followed
        either way, since they have left the pool.
        """
        if self._best_height is not None and height <= self._best_height:
            for txid in txids:
                if self._untrack(txid) is not None:
                    self._answers = None
            return
        self._best_height = height
        for horizon in self._horizons:
            horizon.apply_decay()
        counted = 0
        for txid in txids:
            entry = self._untrack(txid)
            if entry is None:
                continue
            entry_height, bucket, feerate = entry
            blocks = height - entry_height
            if blocks <= 0:
                continue  # arrived at or above this height: no meaningful wait
            for horizon in self._horizons:
                horizon.record(blocks, bucket, feerate)
            counted += 1
        if counted and self._first_recorded is None:
            self._first_recorded = height
        self._answers = None

    def _untrack(self, txid: bytes) -> Optional[Tuple[int, int, int]]:
        entry = self._tracked.pop(txid, None)
        if entry is not None:
            height, bucket, _ = entry
            per_bucket = self._pending[height]
            per_bucket[bucket] -= 1
            if not per_bucket[bucket]:
                del per_bucket[bucket]
                if not per_bucket:
                    del self._pending[height]
        return entry

    # ------------------------------------------------------------------ estimates

    def max_target(self) -> int:
        """The largest confirmation target accepted (the RPCs' upper bound for conf_target)."""
        return self._horizons[-1].max_target

    def estimate_smart_fee(self, conf_target: int, conservative: bool = True) -> Tuple[Optional[int], int]:
        """(fee rate in sat/kB or None, target used) for confirmation within ``conf_target`` blocks.

        Target 1 is answered as 2 (one block is not predictable); a target
        beyond half the observed history is clamped to it, as in Core; with no
        answer for the target, larger ones are tried.  Raises ValueError
        outside 1..max_target().
        """
        if not 1 <= conf_target <= self.max_target():
            raise ValueError("conf_target must be between 1 and %d" % self.max_target())
        requested = max(2, conf_target)
        max_usable = self._max_usable()
        target = min(requested, max_usable)
        if target < 2:
            return None, target  # Core reports the clamped target (0 with no history)
        answers = self._current_answers(max_usable)
        best: Optional[float] = None
        for candidate in range(2, max_usable + 1):
            best = _lower(best, answers.smart(candidate, conservative))
            if candidate >= target and best is not None:
                return _rate(best), candidate
        return None, target

    def estimate_fee(self, conf_target: int) -> Optional[int]:
        """The deprecated estimatefee: medium horizon at 95%, None when it cannot say.

        As in Core, a target of 1 (or less) or beyond the medium horizon (48) has no answer.
        """
        medium = self._horizons[1]
        if conf_target <= 1 or conf_target > medium.max_target:
            return None
        answers = self._current_answers(self._max_usable())
        best: Optional[float] = None
        for target in range(2, conf_target + 1):
            best = _lower(best, answers.median(1, target, DOUBLE_SUCCESS_PCT))
        return None if best is None else _rate(best)

    def estimate_raw_fee(self, conf_target: int, threshold: float) -> List[Tuple[_Horizon, Scan]]:
        """Core's estimateRawFee for each horizon that tracks ``conf_target`` blocks: no
        clamping to the history seen, no fallback to other targets or horizons."""
        answers = self._current_answers(self._max_usable())
        return [(horizon, answers.scan(index, conf_target, threshold))
                for index, horizon in enumerate(self._horizons) if conf_target <= horizon.max_target]

    def _current_answers(self, max_usable: int) -> _Answers:
        answers = self._answers
        if answers is None or answers.max_usable != max_usable:
            ages: Dict[int, Dict[int, int]] = {}
            if self._best_height is not None:
                for height, per_bucket in self._pending.items():
                    ages[self._best_height - height] = per_bucket
            answers = self._answers = _Answers(self._horizons, ages, max_usable)
        return answers

    def _block_span(self) -> int:
        if self._first_recorded is None or self._best_height is None:
            return 0
        return self._best_height - self._first_recorded

    def _historical_span(self) -> int:
        if self._historical_first is None or self._historical_best is None:
            return 0
        if self._best_height is not None and \
                self._best_height - self._historical_best > OLDEST_ESTIMATE_HISTORY:
            return 0
        return self._historical_best - self._historical_first

    def _max_usable(self) -> int:
        """Targets need twice their length of observed blocks before confirmations that slow are seen."""
        span = max(self._block_span(), self._historical_span())
        return min(self.max_target(), span // 2)

    # ------------------------------------------------------------------ persistence

    def save(self, path: str) -> None:
        """Write fee_estimates.dat atomically (a crash leaves the old file or the new one)."""
        write_file_atomic(path, self._serialize())

    def load(self, path: str) -> bool:
        """Replace the history with a saved one; False, with nothing changed, if it is unusable.

        Transactions being followed stay: only the statistics and the span of
        history they cover come from the file.
        """
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError:
            return False
        try:
            horizons, first, best = _parse(data)
        except (ValueError, struct.error):
            return False
        self._horizons = horizons
        self._historical_first = first
        self._historical_best = best
        self._answers = None
        return True

    def _serialize(self) -> bytes:
        first: Optional[int]
        best: Optional[int]
        block_span, historical_span = self._block_span(), self._historical_span()
        if self._first_recorded is not None and block_span >= historical_span:
            first, best = self._first_recorded, self._best_height
        elif historical_span > 0:
            first, best = self._historical_first, self._historical_best
        else:
            first = best = None
        parts = [FILE_MAGIC, struct.pack("<I", FILE_VERSION),
                 struct.pack("<qq", -1 if first is None else first, -1 if best is None else best),
                 struct.pack("<I", len(BUCKETS)), _doubles(BUCKETS),
                 struct.pack("<I", len(self._horizons))]
        for horizon in self._horizons:
            parts.append(struct.pack("<dII", horizon.decay, horizon.scale, horizon.periods))
            parts.append(_doubles(horizon.tx_count))
            parts.append(_doubles(horizon.fee_sum))
            parts.extend(_doubles(column) for column in horizon.conf)
            parts.extend(_doubles(column) for column in horizon.fail)
        body = b"".join(parts)
        return body + hashlib.sha256(body).digest()


def _doubles(values: Sequence[float]) -> bytes:
    return struct.pack("<%dd" % len(values), *values)


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.offset = 0

    def unpack(self, fmt: str) -> Tuple:
        size = struct.calcsize(fmt)
        if self.offset + size > len(self.data):
            raise ValueError("truncated")
        values = struct.unpack_from(fmt, self.data, self.offset)
        self.offset += size
        return values

    def counts(self, n: int) -> List[float]:
        values = list(self.unpack("<%dd" % n))
        if not all(math.isfinite(v) and v >= 0.0 for v in values):
            raise ValueError("bad count")
        return values


def _parse(data: bytes) -> Tuple[List[_Horizon], Optional[int], Optional[int]]:
    """Decode fee_estimates.dat, raising ValueError on anything unexpected."""
    header = len(FILE_MAGIC) + 4
    if len(data) < header + 32 or not data.startswith(FILE_MAGIC):
        raise ValueError("not a fee estimates file")
    (version,) = struct.unpack_from("<I", data, len(FILE_MAGIC))
    if version != FILE_VERSION:
        raise ValueError("unsupported version %d" % version)
    body, digest = data[:-32], data[-32:]
    if hashlib.sha256(body).digest() != digest:
        raise ValueError("checksum mismatch")
    reader = _Reader(body)
    reader.offset = header
    first, best = reader.unpack("<qq")
    if (first == -1) != (best == -1) or (first != -1 and not 0 <= first <= best):
        raise ValueError("bad history span")
    (nbuckets,) = reader.unpack("<I")
    if nbuckets != len(BUCKETS) or reader.unpack("<%dd" % nbuckets) != BUCKETS:
        raise ValueError("different buckets")
    (nhorizons,) = reader.unpack("<I")
    if nhorizons != len(_HORIZONS):
        raise ValueError("different horizons")
    horizons = _new_horizons()
    for horizon in horizons:
        if reader.unpack("<dII") != (horizon.decay, horizon.scale, horizon.periods):
            raise ValueError("different horizon parameters")
        horizon.tx_count = reader.counts(nbuckets)
        horizon.fee_sum = reader.counts(nbuckets)
        horizon.conf = [reader.counts(horizon.periods) for _ in range(nbuckets)]
        horizon.fail = [reader.counts(horizon.periods) for _ in range(nbuckets)]
        horizon.touched = {bucket for bucket in range(nbuckets)
                           if horizon.tx_count[bucket] or horizon.fee_sum[bucket]
                           or any(horizon.conf[bucket]) or any(horizon.fail[bucket])}
    if reader.offset != len(body):
        raise ValueError("trailing data")
    if first == -1:
        return horizons, None, None
    return horizons, first, best
