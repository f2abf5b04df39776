"""This chain's masternode numbers (design.md §6) and Dash 0.12.3's timings."""

from __future__ import annotations

from typing import NamedTuple

from coin.chainparams import COIN

#: Seconds between two pings of one masternode (Dash's MASTERNODE_MIN_MNP_SECONDS).
MIN_MNP_SECONDS = 10 * 60
#: A masternode whose last ping is older is EXPIRED ...
EXPIRATION_SECONDS = 65 * 60
#: ... and older than this needs a new start (NEW_START_REQUIRED).
NEW_START_REQUIRED_SECONDS = 180 * 60
#: How far in the future a signature time may be (Dash: one hour).
MAX_FUTURE_SECONDS = 60 * 60
#: A ping must name one of the last 24 blocks (Dash's check of the ping's block hash).
MAX_PING_BLOCK_AGE = 24
#: The block whose hash seeds a rank is this many blocks below the ranked height.
RANK_BLOCK_OFFSET = 101
#: Oldest protocol a masternode may announce and still be paid (Dash 0.12.3: 70208).
MIN_PAYMENTS_PROTO = 70208
#: Dash's ban score for a mis-signed broadcast (and for a broadcast of a foreign port).
BAN_BAD_SIGNATURE = 100
#: Dash's ban score for a mis-signed ping.
BAN_BAD_PING_SIGNATURE = 33
#: Dash's ban score for a signature time too far in the future.
BAN_FUTURE = 1


class MasternodeParams(NamedTuple):
    """Per-network masternode parameters (design.md §6)."""

    collateral: int
    min_confirmations: int
    payments_start_height: int
    #: Whether a masternode must listen on the network's default P2P port (main only).
    default_port_only: bool
    #: Votes that make a payee binding for a block (the reference's 6; regtest 2, so a
    #: three-masternode test network exercises the payee rule).
    votes_required: int = 6


_PARAMS = {
    "main": MasternodeParams(1000 * COIN, 15, 20000, True),
    "test": MasternodeParams(1000 * COIN, 15, 1000, False),
    "regtest": MasternodeParams(1000 * COIN, 1, 200, False, votes_required=2),
}


def masternode_params(network: str) -> MasternodeParams:
    """The parameters of ``network`` ("main", "test" or "regtest")."""
    return _PARAMS[network]

