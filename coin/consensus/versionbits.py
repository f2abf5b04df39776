"""BIP9 version-bits deployments (design.md §3: ``csv`` on bit 0).

A deployment's state is the same for every block of a retarget period, so it
is computed once per period boundary and cached.  Every function takes
``prev``, the parent of the block whose state is asked for (the chain tip
when asking about the next block), as Core's VersionBitsState does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional

if TYPE_CHECKING:
    from coin.chain.index import BlockIndexEntry
    from coin.chainparams import ChainParams, Deployment

# Threshold states, spelled as getblockchaininfo reports them.
DEFINED = "defined"
STARTED = "started"
LOCKED_IN = "locked_in"
ACTIVE = "active"
FAILED = "failed"

VERSIONBITS_TOP_BITS = 0x20000000
VERSIONBITS_TOP_MASK = 0xE0000000


class VersionBitsCache:
    """Per deployment: hash of a period's last block (None: genesis' parent) -> state.

    States depend only on the chain up to that block, so entries never go
    stale; :meth:`clear` exists for tests and index reloads.  Reads and writes
    are single dict operations, safe to share between the connect worker and
    RPC readers under the GIL (a race only recomputes a value).
    """

    __slots__ = ("_states",)

    def __init__(self) -> None:
        self._states: Dict[str, Dict[Optional[bytes], str]] = {}

    def states(self, deployment: str) -> Dict[Optional[bytes], str]:
        states = self._states.get(deployment)
        if states is None:
            states = self._states[deployment] = {}
        return states

    def clear(self) -> None:
        self._states.clear()


def signals(version: int, deployment: Deployment) -> bool:
    """Does a block of ``version`` signal for ``deployment`` (Core's Condition)?"""
    return ((version & VERSIONBITS_TOP_MASK) == VERSIONBITS_TOP_BITS
            and bool(version >> deployment.bit & 1))


def _period_end(prev: Optional[BlockIndexEntry], period: int) -> Optional[BlockIndexEntry]:
    """The last block of the period before the one the block after ``prev`` is in."""
    if prev is None:
        return None
    return prev.get_ancestor(prev.height - (prev.height + 1) % period)


#: Whether a block counts towards a threshold (Core's AbstractThresholdConditionChecker::Condition).
Condition = Callable[["BlockIndexEntry"], bool]


def _count_signals(entry: Optional[BlockIndexEntry], blocks: int, condition: Condition) -> int:
    count = 0
    for _ in range(blocks):
        assert entry is not None  # callers count at most back to the genesis block
        if condition(entry):
            count += 1
        entry = entry.prev
    return count


def _signal_condition(deployment: Deployment) -> Condition:
    return lambda entry: signals(entry.version, deployment)


def deployment_state(prev: Optional[BlockIndexEntry], params: ChainParams, name: str,
                     cache: VersionBitsCache) -> str:
    """State of deployment ``name`` for the block after ``prev`` (Core's GetStateFor)."""
    deployment = params.deployment(name)
    return threshold_state(prev, deployment, cache.states(name), _signal_condition(deployment))


def threshold_state(prev: Optional[BlockIndexEntry], deployment: Deployment,
                    states: Dict[Optional[bytes], str], condition: Condition) -> str:
    """BIP9's state machine for the block after ``prev``, blocks counted by ``condition``.

    ``states`` caches the state per period boundary (a period's last block hash).
    Start and timeout are compared with the median time past of each
    period's last block, so all nodes agree whatever the block times say.
    """
    period = deployment.period
    entry = _period_end(prev, period)

    # Walk back a period at a time to a boundary whose state is known.
    to_compute: List[BlockIndexEntry] = []
    while True:
        key = entry.hash if entry is not None else None
        state = states.get(key)
        if state is not None:
            break
        if entry is None or entry.median_time_past() < deployment.start_time:
            # Genesis is DEFINED by definition, and so is everything before the start time.
            state = states[key] = DEFINED
            break
        to_compute.append(entry)
        entry = entry.get_ancestor(entry.height - period)

    # Then forward, one period at a time.
    while to_compute:
        entry = to_compute.pop()
        if state == DEFINED:
            mtp = entry.median_time_past()
            if mtp >= deployment.timeout:
                state = FAILED
            elif mtp >= deployment.start_time:
                state = STARTED
        elif state == STARTED:
            if entry.median_time_past() >= deployment.timeout:
                state = FAILED
            elif _count_signals(entry, period, condition) >= deployment.threshold:
                state = LOCKED_IN
        elif state == LOCKED_IN:
            state = ACTIVE
        states[entry.hash] = state
    return state


def deployment_since_height(prev: Optional[BlockIndexEntry], params: ChainParams, name: str,
                            cache: VersionBitsCache) -> int:
    """First height of the current state's run (Core's GetStateSinceHeightFor); 0 if DEFINED."""
    state = deployment_state(prev, params, name, cache)
    if state == DEFINED:
        return 0
    period = params.deployment(name).period
    entry = _period_end(prev, period)
    assert entry is not None  # not DEFINED: a whole period lies before prev's
    earlier = entry.get_ancestor(entry.height - period)
    while earlier is not None and deployment_state(earlier, params, name, cache) == state:
        entry = earlier
        earlier = entry.get_ancestor(entry.height - period)
    return entry.height + 1


def deployment_statistics(prev: Optional[BlockIndexEntry], params: ChainParams,
                          name: str) -> Dict[str, Any]:
    """Signalling in the current period up to ``prev`` (Core's GetStateStatisticsFor).

    ``possible`` is False once too many blocks have not signalled for the
    threshold to be reachable in this period.
    """
    deployment = params.deployment(name)
    period = deployment.period
    threshold = deployment.threshold
    elapsed = count = 0
    if prev is not None:
        elapsed = (prev.height + 1) % period
        count = _count_signals(prev, elapsed, _signal_condition(deployment))
    return {
        "period": period,
        "threshold": threshold,
        "elapsed": elapsed,
        "count": count,
        "possible": period - threshold >= elapsed - count,
    }


def compute_block_version(prev: Optional[BlockIndexEntry], params: ChainParams,
                          cache: VersionBitsCache) -> int:
    """Version for a new block after ``prev``: signal every STARTED or LOCKED_IN deployment."""
    version = VERSIONBITS_TOP_BITS
    for deployment in params.deployments:
        if deployment_state(prev, params, deployment.name, cache) in (STARTED, LOCKED_IN):
            version |= 1 << deployment.bit
    return version
