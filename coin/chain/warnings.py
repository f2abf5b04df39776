"""The node's warnings: one source for ``getblockchaininfo``, ``getnetworkinfo`` and
``getmininginfo`` (``warnings``) and REST ``/chaininfo.json``.

Core 0.17 keeps them in ``warnings.cpp`` and sets them from validation and timedata;
here :class:`NodeWarnings` holds them, :class:`ChainWarningMonitor` (on the validation
worker) raises the chain's, and P2P's ``TimeData`` the clock one:

* unknown block versions: outside initial block download, on every new tip, a version
  bit the node does not know that reached ACTIVE by BIP9's rules ("unknown new rules
  activated"), or more than 50 of the last 100 blocks with bits the node would not set
  ("Unknown block versions being mined"); the LOCKED_IN state and the count of
  unexpected versions are logged, as Core logs them;
* a longer invalid chain: outside initial block download, an invalid chain with more
  than six blocks' work over the tip's ("We do not appear to fully agree with our
  peers"); cleared when the condition goes away;
* the clock: peers' median offset beyond -maxtimeadjustment and no peer within five
  minutes of our clock.

The text is Core's ``GetWarnings("statusbar")``: the last miscellaneous warning (they
replace each other and stay), unless the invalid-chain warning is up.  The chain's
warnings also go to ``alert_listeners`` (-alertnotify, doc/notify.md): the version ones
the first time one is raised (Core's DoWarning), the invalid chain each time it comes up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Dict, Iterable, List, Optional

from twisted.logger import Logger

from coin.chain.chainstate import deliver
from coin.chain.events import ChainEvent
from coin.chain.index import BlockIndexEntry
from coin.chainparams import ChainParams, Deployment
from coin.consensus.pow import block_proof
from coin.consensus.versionbits import (
    ACTIVE, LOCKED_IN, VERSIONBITS_TOP_BITS, VERSIONBITS_TOP_MASK, VersionBitsCache,
    compute_block_version, threshold_state,
)

if TYPE_CHECKING:
    from coin.chain.chainstate import ChainState

log = Logger()

#: Core's VERSIONBITS_NUM_BITS and VERSIONBITS_LAST_OLD_BLOCK_VERSION.
VERSIONBITS_NUM_BITS = 29
LAST_OLD_BLOCK_VERSION = 4
#: Blocks whose versions are checked, and how many unexpected ones raise the warning.
VERSION_CHECK_BLOCKS = 100
UNEXPECTED_VERSION_LIMIT = VERSION_CHECK_BLOCKS // 2
#: An invalid chain this many blocks' work above the tip raises the warning.
INVALID_CHAIN_MARGIN_BLOCKS = 6
#: A peer's clock this close to ours (seconds) says ours is fine.
CLOCK_MATCH_SECONDS = 5 * 60

UNKNOWN_RULES_WARNING = "Warning: unknown new rules activated (versionbit %d)"
UNKNOWN_VERSIONS_WARNING = ("Warning: Unknown block versions being mined! It's possible "
                            "unknown rules are in effect")
UNEXPECTED_VERSIONS_MESSAGE = "%d of last 100 blocks have unexpected version"
INVALID_CHAIN_WARNING = ("Warning: We do not appear to fully agree with our peers! You may "
                         "need to upgrade, or other nodes may need to upgrade.")
CLOCK_WARNING = ("Please check that your computer's date and time are correct! If your "
                 "clock is wrong, Coin will not work properly.")


class NodeWarnings:
    """Core's strMiscWarning and fLargeWorkInvalidChainFound, and GetWarnings over them.

    Written from the validation worker (chain checks) and the reactor (P2P); plain
    attribute writes, so RPC and REST readers see one value or the other, never a torn one.
    """

    def __init__(self) -> None:
        self.misc = ""
        self.invalid_chain = False
        #: Called (on any thread) with each warning worth an -alertnotify (Core's AlertNotify).
        self.alert_listeners: List[Callable[[str], None]] = []
        self._alerted = False

    def set_misc(self, text: str) -> None:
        """Core's SetMiscWarning: replaces the previous miscellaneous warning."""
        if text != self.misc:
            log.warn("{text}", text=text)
        self.misc = text

    def raise_warning(self, text: str) -> None:
        """Core's DoWarning: set the miscellaneous warning; alert the first time only."""
        self.set_misc(text)
        if not self._alerted:
            self._alerted = True
            self.alert(text)

    def alert(self, text: str) -> None:
        for listener in self.alert_listeners:
            listener(text)

    def text(self) -> str:
        """What ``warnings`` shows (Core's GetWarnings("statusbar"))."""
        if self.invalid_chain:
            return INVALID_CHAIN_WARNING
        return self.misc


def clock_warning_due(offsets: Iterable[int]) -> bool:
    """Core's check once the median offset is too large: no peer's clock differs from
    ours by less than five minutes (an offset of 0 is our own sample, not a match)."""
    return not any(offset != 0 and abs(offset) < CLOCK_MATCH_SECONDS for offset in offsets)


def invalid_chain_warning_due(tip: BlockIndexEntry, best_invalid: Optional[BlockIndexEntry]) -> bool:
    """Core's CheckForkWarningConditions test for an invalid chain: more than six blocks'
    work (at the tip's difficulty) over the active chain."""
    if best_invalid is None:
        return False
    margin = block_proof(tip.bits) * INVALID_CHAIN_MARGIN_BLOCKS
    return best_invalid.chainwork > tip.chainwork + margin


class UnknownVersions:
    """Version bits the node would not set: BIP9 states per bit and the 100-block count.

    Core's WarningBitsConditionChecker: every bit is a deployment starting at once,
    never timing out, over the network's signalling window; a block counts for a bit
    when it has BIP9's top bits, the bit set, and the node's own version for it lacks it.
    """

    def __init__(self, params: ChainParams, cache: VersionBitsCache) -> None:
        self.params = params
        self._cache = cache
        # Every deployment of a network shares one window (Core's nMinerConfirmationWindow).
        window = params.deployments[0]
        self._bits = [Deployment("warningbit%d" % bit, bit, 0, 2 ** 63 - 1, window.period,
                                 window.threshold) for bit in range(VERSIONBITS_NUM_BITS)]
        self._states: List[Dict[Optional[bytes], str]] = [{} for _ in self._bits]

    def _expected(self, entry: BlockIndexEntry) -> int:
        return compute_block_version(entry.prev, self.params, self._cache)

    def _condition(self, bit: int) -> Callable[[BlockIndexEntry], bool]:
        def unexpected(entry: BlockIndexEntry) -> bool:
            version = entry.version
            return ((version & VERSIONBITS_TOP_MASK) == VERSIONBITS_TOP_BITS
                    and bool(version >> bit & 1) and not self._expected(entry) >> bit & 1)
        return unexpected

    def rule_states(self, tip: BlockIndexEntry) -> Dict[int, str]:
        """Bits LOCKED_IN or ACTIVE for the block after ``tip``."""
        found = {}
        for bit, deployment in enumerate(self._bits):
            state = threshold_state(tip, deployment, self._states[bit], self._condition(bit))
            if state in (LOCKED_IN, ACTIVE):
                found[bit] = state
        return found

    def unexpected_count(self, tip: BlockIndexEntry) -> int:
        """Of the last 100 blocks, those with bits the node would not have set."""
        count = 0
        entry: Optional[BlockIndexEntry] = tip
        for _ in range(VERSION_CHECK_BLOCKS):
            if entry is None:
                break
            if entry.version > LAST_OLD_BLOCK_VERSION and entry.version & ~self._expected(entry):
                count += 1
            entry = entry.prev
        return count


class ChainWarningMonitor:
    """Raises the chain's warnings (Core's UpdateTip checks and CheckForkWarningConditions),
    nothing during initial block download.

    A chain listener (``tip_changed``, ``invalid_chain_found``); the node runs it as a worker
    hook (``__call__``), on the validation thread as Core does, so the first walk over a
    long chain's versions never stalls the reactor. It reads ``chainstate.best_invalid``
    and the published tip; ``is_initial_block_download()`` is the node's IBD state.
    """

    def __init__(self, warnings: NodeWarnings, chainstate: "ChainState",
                 is_initial_block_download: Callable[[], bool]) -> None:
        self.warnings = warnings
        self.versions = UnknownVersions(chainstate.params, chainstate.versionbits)
        self._state = chainstate
        self._ibd = is_initial_block_download

    def __call__(self, chainstate: "ChainState", events: Iterable[ChainEvent]) -> None:
        deliver([self], events)

    def tip_changed(self, entry: BlockIndexEntry) -> None:
        if self._ibd():
            return
        self._check_versions(entry)
        self._check_invalid_chain(entry)

    def invalid_chain_found(self, entry: BlockIndexEntry) -> None:
        tip = self._state.published.tip
        if tip is not None and not self._ibd():
            self._check_invalid_chain(tip)

    def _check_versions(self, tip: BlockIndexEntry) -> None:
        for bit, state in sorted(self.versions.rule_states(tip).items()):
            if state == ACTIVE:
                self.warnings.raise_warning(UNKNOWN_RULES_WARNING % bit)
            else:
                log.info(UNKNOWN_RULES_WARNING % bit + " (locked in)")
        count = self.versions.unexpected_count(tip)
        if count:
            log.info(UNEXPECTED_VERSIONS_MESSAGE % count)
        if count > UNEXPECTED_VERSION_LIMIT:
            self.warnings.raise_warning(UNKNOWN_VERSIONS_WARNING)

    def _check_invalid_chain(self, tip: BlockIndexEntry) -> None:
        found = invalid_chain_warning_due(tip, self._state.best_invalid)
        if found and not self.warnings.invalid_chain:
            log.warn("Found invalid chain at least ~6 blocks longer than our best chain. "
                     "Chain state database corruption likely.")
            self.warnings.alert(INVALID_CHAIN_WARNING)
        self.warnings.invalid_chain = found
