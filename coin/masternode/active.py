"""The active masternode (``-masternode=1 -masternodeprivkey=<WIF>``): finds itself in the
list by its masternode key, then pings every ``MIN_MNP_SECONDS``.

States and texts are the reference node's.  The reference also compares the broadcast's
address with the address it detects for itself; this node takes the broadcast's address
as its own (there is no external address detection here), so that check is not made.
"""

from __future__ import annotations

from typing import Callable, Optional

import coincurve
from twisted.logger import Logger

from coin.masternode import signing
from coin.masternode.manager import MasternodeManager
from coin.masternode.params import MIN_MNP_SECONDS
from coin.masternode.record import ENABLED, EXPIRED, PRE_ENABLED, SENTINEL_PING_EXPIRED, Masternode
from coin.p2p.messages import PROTOCOL_VERSION, MasternodePingMessage
from coin.primitives.transaction import OutPoint

log = Logger()

INITIAL = 0
SYNC_IN_PROCESS = 1
INPUT_TOO_NEW = 2
NOT_CAPABLE = 3
STARTED = 4

STATE_STRINGS = {INITIAL: "INITIAL", SYNC_IN_PROCESS: "SYNC_IN_PROCESS",
                 INPUT_TOO_NEW: "INPUT_TOO_NEW", NOT_CAPABLE: "NOT_CAPABLE", STARTED: "STARTED"}
_AUTO_START_STATES = (ENABLED, PRE_ENABLED, EXPIRED, SENTINEL_PING_EXPIRED)
#: A ping names the block this far below the tip (the reference's choice).
PING_BLOCK_DEPTH = 12


class ActiveMasternode:
    """This node's own masternode."""

    def __init__(self, key: coincurve.PrivateKey, compressed: bool) -> None:
        self.key = key
        self.compressed = compressed
        self.pubkey = key.public_key.format(compressed=compressed)
        self.state = INITIAL
        self.not_capable_reason = ""
        self.outpoint: Optional[OutPoint] = None
        self.service: Optional[str] = None
        #: The version of the sentinel running for this masternode (coin.governance.sentinel);
        #: set, pings say the sentinel is current.
        self.sentinel_version: Optional[int] = None

    def status(self, min_confirmations: int) -> str:
        """``masternode status``'s "status" text."""
        if self.state == INPUT_TOO_NEW:
            return "Masternode input must have at least %d confirmations" % min_confirmations
        if self.state == NOT_CAPABLE:
            return "Not capable masternode: " + self.not_capable_reason
        return {INITIAL: "Node just started, not yet activated",
                SYNC_IN_PROCESS: "Sync in progress. Must wait until sync is complete to start "
                                 "Masternode",
                STARTED: "Masternode successfully started"}[self.state]

    def _not_capable(self, reason: str) -> None:
        if (self.state, self.not_capable_reason) != (NOT_CAPABLE, reason):
            log.info("active masternode: NOT_CAPABLE: {reason}", reason=reason)
        self.state, self.not_capable_reason = NOT_CAPABLE, reason

    def _find(self, manager: MasternodeManager) -> Optional[Masternode]:
        for masternode in manager:
            if masternode.broadcast.masternode_pubkey == self.pubkey:
                return masternode
        return None

    def manage(self, manager: MasternodeManager, blockchain_synced: bool, now: int,
               block_hash_at: Callable[[int], Optional[bytes]], tip_height: int
               ) -> Optional[MasternodePingMessage]:
        """Update the state; returns a signed ping when one is due."""
        if not blockchain_synced:
            self.state = SYNC_IN_PROCESS
            return None
        masternode = self._find(manager)
        if masternode is None:
            self._not_capable("Masternode not in masternode list")
            return None
        if masternode.broadcast.protocol_version != PROTOCOL_VERSION:
            self._not_capable("Invalid protocol version")
            return None
        if masternode.state not in _AUTO_START_STATES:
            self._not_capable("Masternode in %s state" % masternode.state_name)
            return None
        if self.state != STARTED:
            log.info("active masternode: STARTED {outpoint}",
                     outpoint=signing.outpoint_short(masternode.outpoint))
        self.state = STARTED
        self.outpoint = masternode.outpoint
        self.service = signing.service_string(masternode.broadcast.ip, masternode.broadcast.port)
        if now - masternode.last_ping.sig_time < MIN_MNP_SECONDS:
            return None
        block_hash = block_hash_at(max(0, tip_height - PING_BLOCK_DEPTH))
        assert block_hash is not None
        return signing.make_ping(masternode.outpoint, block_hash, now, self.key, self.compressed,
                                 self.sentinel_version)
