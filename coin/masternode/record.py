"""One masternode: its latest broadcast and ping, its state, and the state machine.

States and their names are Dash 0.12.3's.  A masternode is PRE_ENABLED until its pings
span ``MIN_MNP_SECONDS`` past its start, ENABLED while pinged within
``EXPIRATION_SECONDS``, then EXPIRED, and NEW_START_REQUIRED once unpinged for
``NEW_START_REQUIRED_SECONDS`` (pings no longer revive it: a new ``mnb`` must).  Spending
the collateral makes it OUTPOINT_SPENT (the manager decides that, from blocks).
"""

from __future__ import annotations

from typing import Optional

from coin.masternode.params import (
    EXPIRATION_SECONDS, MIN_MNP_SECONDS, MIN_PAYMENTS_PROTO, NEW_START_REQUIRED_SECONDS,
)
from coin.p2p.messages import MasternodeBroadcastMessage, MasternodePingMessage
from coin.primitives.hashes import sha256d

PRE_ENABLED = 0
ENABLED = 1
EXPIRED = 2
OUTPOINT_SPENT = 3
UPDATE_REQUIRED = 4
SENTINEL_PING_EXPIRED = 5
NEW_START_REQUIRED = 6
POSE_BAN = 7

STATE_NAMES = {PRE_ENABLED: "PRE_ENABLED", ENABLED: "ENABLED", EXPIRED: "EXPIRED",
               OUTPOINT_SPENT: "OUTPOINT_SPENT", UPDATE_REQUIRED: "UPDATE_REQUIRED",
               SENTINEL_PING_EXPIRED: "SENTINEL_PING_EXPIRED",
               NEW_START_REQUIRED: "NEW_START_REQUIRED", POSE_BAN: "POSE_BAN"}


class Masternode:
    """A listed masternode.  ``collateral_hash`` is the hash of the block where the
    collateral reached its minimum confirmations: it seeds the score (Dash's
    nCollateralMinConfBlockHash), so a masternode cannot grind its rank."""

    __slots__ = ("broadcast", "last_ping", "state", "collateral_hash", "collateral_height",
                 "last_paid_height", "last_paid_time")

    def __init__(self, broadcast: MasternodeBroadcastMessage, collateral_hash: bytes,
                 collateral_height: int, state: int = PRE_ENABLED, last_paid_height: int = 0,
                 last_paid_time: int = 0) -> None:
        self.broadcast = broadcast
        self.last_ping: MasternodePingMessage = broadcast.last_ping
        self.state = state
        self.collateral_hash = collateral_hash
        self.collateral_height = collateral_height
        self.last_paid_height = last_paid_height
        self.last_paid_time = last_paid_time

    @property
    def outpoint(self):
        return self.broadcast.outpoint

    @property
    def state_name(self) -> str:
        return STATE_NAMES[self.state]

    def is_enabled(self) -> bool:
        return self.state == ENABLED

    def is_valid_for_payment(self) -> bool:
        """Dash pays ENABLED masternodes (PRE_ENABLED ones are not yet proven alive)."""
        return self.state == ENABLED

    def active_seconds(self) -> int:
        """Seconds between the start and the latest ping (Dash's "activeseconds")."""
        return max(0, self.last_ping.sig_time - self.broadcast.sig_time)

    def score(self, block_hash: bytes) -> int:
        """Dash 0.12.3's CalculateScore: hash of collateral, its conf block and ``block_hash``."""
        digest = sha256d(self.outpoint.serialize() + self.collateral_hash + block_hash)
        return int.from_bytes(digest, "little")

    def check(self, now: int) -> Optional[int]:
        """Move to the state ``now`` implies; returns the old state if it changed."""
        old = self.state
        if old in (OUTPOINT_SPENT, POSE_BAN):
            return None
        since_ping = now - self.last_ping.sig_time
        if self.broadcast.protocol_version < MIN_PAYMENTS_PROTO:
            new = UPDATE_REQUIRED
        elif old == NEW_START_REQUIRED or since_ping > NEW_START_REQUIRED_SECONDS:
            new = NEW_START_REQUIRED
        elif since_ping > EXPIRATION_SECONDS:
            new = EXPIRED
        elif self.last_ping.sig_time - self.broadcast.sig_time < MIN_MNP_SECONDS:
            new = PRE_ENABLED
        else:
            new = ENABLED
        self.state = new
        return old if new != old else None
