"""The built-in sentinel: on a masternode (``-sentinel=1``, on by default with
``-masternode=1``), the job Dash leaves to a separate daemon.

Every few seconds, once the masternode is started and synced, it computes the trigger for
the next superblock from the proposals: valid, not ended, with net yes-funding votes of
at least max(quorum, enabled masternodes / 10), ranked by those votes (then by hash),
taken while they fit the budget. The trigger's data is canonical JSON, so every
masternode seeing the same votes computes the same data. If no live trigger carries that
data, the masternode submits one (signed with its key, no fee); it votes funding-yes on
every trigger with its data and funding-no on the other triggers for that height.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any, Dict, List, Optional, Tuple

from twisted.application import service
from twisted.internet.task import LoopingCall
from twisted.logger import Logger

from coin.chainparams import COIN
from coin.governance.object import (
    NULL_HASH, OBJECT_PROPOSAL, OBJECT_TRIGGER, DataError, GovernanceObject, inner_object,
)
from coin.governance.params import superblock_budget
from coin.governance.service import GovernanceService, MasternodeSigner, ObjectError
from coin.governance.store import Entry, trigger_height
from coin.governance.vote import OUTCOME_NO, OUTCOME_YES, SIGNAL_FUNDING, VoteError, vote_threshold
from coin.primitives.hashes import hash_to_hex

log = Logger(namespace="coin.governance")

#: Seconds between two rounds (Dash's sentinel runs from cron every minute or so).
ROUND_SECONDS = 5
#: The version this sentinel reports in masternode pings (Dash sentinel 1.1.0's layout).
SENTINEL_VERSION = 0x010100


def _coins(units: int) -> str:
    return "%d.%08d" % divmod(units, COIN)


def trigger_data(height: int, proposals: List[Tuple[bytes, str, int]]) -> str:
    """The trigger data hex for ``(hash, address, amount)`` payments at ``height``."""
    fields = {"event_block_height": height,
              "payment_addresses": "|".join(address for _, address, _ in proposals),
              "payment_amounts": "|".join(_coins(amount) for _, _, amount in proposals),
              "proposal_hashes": "|".join(hash_to_hex(h) for h, _, _ in proposals),
              "type": OBJECT_TRIGGER}
    return json.dumps([["trigger", fields]], sort_keys=True, separators=(",", ":")).encode().hex()


def _proposal_payment(entry: Entry, now: int) -> Optional[Tuple[str, int]]:
    """``(address, amount)`` of a proposal that has not ended, None otherwise."""
    try:
        fields = inner_object(entry.obj.data_hex)
        address, amount, end = fields["payment_address"], fields["payment_amount"], fields["end_epoch"]
    except (DataError, KeyError, TypeError, AttributeError):
        return None
    if not isinstance(address, str) or not isinstance(amount, (int, Decimal)) or not isinstance(end, int):
        return None
    units = Decimal(amount) * COIN
    if end < now or units <= 0 or units != units.to_integral_value():
        return None
    return address, int(units)


def funded_proposals(governance: GovernanceService, height: int, now: int
                     ) -> List[Tuple[bytes, str, int]]:
    """The proposals the superblock at ``height`` pays, ranked and cut to the budget."""
    needed = vote_threshold(governance.params.min_quorum, governance.keys.enabled_count())
    ranked = []
    for entry in governance.store:
        if (entry.obj.object_type != OBJECT_PROPOSAL or entry.flags.delete or entry.expired
                or not entry.flags.valid or governance.local_validity(entry.obj)):
            continue
        yes = entry.book.tally(SIGNAL_FUNDING).absolute_yes
        payment = _proposal_payment(entry, now)
        if yes >= needed and payment is not None:
            ranked.append((-yes, entry.obj.hash[::-1], entry.obj.hash, payment))
    left = superblock_budget(height, governance.chain.params)
    chosen = []
    for _, _, object_hash, (address, amount) in sorted(ranked):
        if amount <= left:
            chosen.append((object_hash, address, amount))
            left -= amount
    return chosen


class Sentinel(service.Service):
    """Sentinel rounds for this node's masternode (``masternodes``: coin.masternode's
    service, for the active masternode, the sync state and the tip)."""

    name = "sentinel"

    def __init__(self, governance: GovernanceService, masternodes: Any, reactor: Any) -> None:
        self.governance = governance
        self.masternodes = masternodes
        self.reactor = reactor
        self._loop: Optional[LoopingCall] = None

    def startService(self) -> None:
        super().startService()
        self._loop = LoopingCall(self.round)
        self._loop.clock = self.reactor
        self._loop.start(ROUND_SECONDS, now=False).addErrback(
            lambda f: log.failure("Sentinel stopped", f))

    def stopService(self) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        super().stopService()

    def signer(self) -> Optional[MasternodeSigner]:
        active = self.masternodes.active
        if active is None or active.outpoint is None or not self.masternodes.sync.is_synced():
            return None
        if self.governance.keys.key_id(active.outpoint) is None:
            return None
        return MasternodeSigner(active.outpoint, active.key, active.compressed)

    def next_superblock(self) -> int:
        cycle = self.governance.params.superblock_cycle
        height = self.masternodes.tip_height + 1
        return max(cycle, height + (-height) % cycle)

    def round(self) -> Any:
        """One round: make the trigger if it is missing, then vote on the height's triggers."""
        signer = self.signer()
        if signer is None:
            return None
        self.masternodes.active.sentinel_version = SENTINEL_VERSION
        height = self.next_superblock()
        now = int(self.governance.now())
        proposals = funded_proposals(self.governance, height, now)
        mine = trigger_data(height, proposals) if proposals else None
        triggers: Dict[bytes, Entry] = {
            entry.obj.hash: entry for entry in self.governance.store
            if entry.obj.object_type == OBJECT_TRIGGER and not entry.flags.delete
            and not entry.expired and trigger_height(entry.obj) == height}
        self._vote(signer, triggers.values(), mine)
        if mine is None or any(entry.obj.data_hex == mine for entry in triggers.values()):
            return None
        obj = self.governance.signed_by(GovernanceObject(NULL_HASH, 1, now, NULL_HASH, mine), signer)
        if not self.governance.rate_check(obj):
            return None
        log.info("sentinel: trigger {hash} for superblock {height} pays {count} proposals",
                 hash=hash_to_hex(obj.hash), height=height, count=len(proposals))
        return self.governance.submit(obj).addCallbacks(
            lambda entry: entry is not None and self._vote(signer, [entry], mine),
            lambda f: f.trap(ObjectError) and log.info("sentinel: trigger refused: {why}", why=f.value))

    def _vote(self, signer: MasternodeSigner, entries: Any, mine: Optional[str]) -> None:
        """Funding-yes on the triggers with our data, funding-no on the others, once each."""
        for entry in entries:
            outcome = OUTCOME_YES if entry.obj.data_hex == mine else OUTCOME_NO
            current = entry.book.current.get(signer.outpoint, {}).get(SIGNAL_FUNDING)
            if current is not None and current.vote.outcome == outcome:
                continue
            try:
                self.governance.vote(signer, entry.obj.hash, SIGNAL_FUNDING, outcome)
            except VoteError as e:
                log.debug("sentinel: vote on {hash} not counted: {why}",
                          hash=hash_to_hex(entry.obj.hash), why=e)
