"""``mnsync``: INITIAL -> WAITING -> LIST -> MNW -> FINISHED, asked of peers with ``dseg``
and ``mnget`` and moved on by their ``ssc`` answers.

Timing runs on the reactor's clock (real seconds), not the node's mockable clock, so a
test pinning ``setmocktime`` still sees the sync progress.  Differences from the reference
node, for speed: WAITING ends at the first tick with the block chain synced (the reference
waits for 30 quiet seconds), and an asset ends as soon as every peer asked has answered
with ``ssc`` (the reference waits for 30 seconds without new items).  An asset that got no
peer at all within ``TIMEOUT_SECONDS`` fails; a failed sync restarts after
``FAILED_RETRY_SECONDS``, as in the reference.
"""

from __future__ import annotations

from typing import Callable, Dict, Hashable, List, Set, Tuple

from twisted.logger import Logger

log = Logger()

SYNC_FAILED = -1
SYNC_INITIAL = 0
SYNC_WAITING = 1
SYNC_LIST = 2
SYNC_MNW = 3
SYNC_FINISHED = 999

ASSET_NAMES: Dict[int, str] = {
    SYNC_FAILED: "MASTERNODE_SYNC_FAILED", SYNC_INITIAL: "MASTERNODE_SYNC_INITIAL",
    SYNC_WAITING: "MASTERNODE_SYNC_WAITING", SYNC_LIST: "MASTERNODE_SYNC_LIST",
    SYNC_MNW: "MASTERNODE_SYNC_MNW", SYNC_FINISHED: "MASTERNODE_SYNC_FINISHED"}
_NEXT = {SYNC_INITIAL: SYNC_WAITING, SYNC_WAITING: SYNC_LIST, SYNC_LIST: SYNC_MNW,
         SYNC_MNW: SYNC_FINISHED, SYNC_FINISHED: SYNC_FINISHED}

TICK_SECONDS = 6
TIMEOUT_SECONDS = 30
FAILED_RETRY_SECONDS = 60


class SyncError(Exception):
    """``mnsync next`` from the failed state (the reference's message)."""


class MasternodeSync:
    """The sync state.  :meth:`tick` returns what to ask of which peer:
    ``(peer, asset)`` pairs, where the asset is SYNC_LIST (send ``dseg``) or SYNC_MNW
    (send ``mnget``)."""

    def __init__(self, now: Callable[[], float], blockchain_synced: Callable[[], bool]) -> None:
        self._now = now
        self.blockchain_synced = blockchain_synced
        self.asset = SYNC_INITIAL
        self.asset_start = int(now())
        self.attempt = 0
        self._failed_at = 0.0
        self._asked: Set[Hashable] = set()
        self._answered: Set[Hashable] = set()

    @property
    def name(self) -> str:
        return ASSET_NAMES[self.asset]

    def is_list_synced(self) -> bool:
        return self.asset > SYNC_LIST

    def is_winners_synced(self) -> bool:
        return self.asset > SYNC_MNW

    def is_synced(self) -> bool:
        return self.asset == SYNC_FINISHED

    def is_failed(self) -> bool:
        return self.asset == SYNC_FAILED

    def reset(self) -> None:
        self._switch(SYNC_INITIAL)

    def next(self) -> None:
        """The next asset (``mnsync next``); refused from the failed state."""
        if self.asset == SYNC_FAILED:
            raise SyncError("Can't switch to next asset from failed, should use Reset() first!")
        self._switch(_NEXT[self.asset])

    def _switch(self, asset: int) -> None:
        log.debug("mnsync: {old} -> {new}", old=ASSET_NAMES[self.asset], new=ASSET_NAMES[asset])
        self.asset = asset
        self.asset_start = int(self._now())
        self.attempt = 0
        self._asked, self._answered = set(), set()

    def tick(self, peers: List[Hashable]) -> List[Tuple[Hashable, int]]:
        now = self._now()
        if self.asset == SYNC_FAILED:
            if now - self._failed_at > FAILED_RETRY_SECONDS:
                self.reset()
            return []
        if self.asset in (SYNC_INITIAL, SYNC_WAITING):
            if self.blockchain_synced():
                self.next()
            return []
        if self.asset == SYNC_FINISHED:
            return []
        asks = [(peer, self.asset) for peer in peers if peer not in self._asked]
        self._asked.update(peer for peer, _ in asks)
        self.attempt += len(asks)
        if not asks and now - self.asset_start > TIMEOUT_SECONDS:
            if self.attempt:  # someone was asked (even if gone since): move on
                self.next()
            else:
                log.info("mnsync: {asset} failed, no peer to sync from", asset=self.name)
                self._switch(SYNC_FAILED)
                self._failed_at = now
        return asks

    def status_count(self, peer: Hashable, asset: int) -> None:
        """A peer's ``ssc``: the asset is done once every peer asked has answered."""
        if asset != self.asset or peer not in self._asked:
            return
        self._answered.add(peer)
        if self._answered >= self._asked:
            self.next()

    def peer_gone(self, peer: Hashable) -> None:
        self._asked.discard(peer)
        if self._asked and self._answered >= self._asked:
            self.next()
