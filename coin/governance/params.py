"""This chain's governance parameters (design.md §6) and the superblock maths."""

from __future__ import annotations

from typing import Dict, NamedTuple, Tuple

from coin.chainparams import COIN, ChainParams
from coin.consensus.subsidy import block_subsidy

#: Largest object data (the hex text), the reference's MAX_GOVERNANCE_OBJECT_DATA_SIZE.
MAX_OBJECT_DATA_SIZE = 16 * 1024
#: Sentinel watchdog expiry, the reference's MASTERNODE_WATCHDOG_MAX_SECONDS.
WATCHDOG_MAX_SECONDS = 2 * 60 * 60
#: A deleted object is erased this long after it was flagged (GOVERNANCE_DELETION_DELAY).
DELETION_DELAY = 10 * 60


class GovernanceParams(NamedTuple):
    """One network's governance numbers."""

    min_quorum: int
    proposal_fee: int
    fee_confirmations: int
    superblock_cycle: int

    @property
    def superblock_start(self) -> int:
        """The first superblock is one cycle in (design.md §6)."""
        return self.superblock_cycle


_BY_NETWORK: Dict[str, GovernanceParams] = {
    "main": GovernanceParams(min_quorum=10, proposal_fee=5 * COIN, fee_confirmations=6,
                             superblock_cycle=16_616),
    "test": GovernanceParams(min_quorum=10, proposal_fee=5 * COIN, fee_confirmations=6,
                             superblock_cycle=24),
    "regtest": GovernanceParams(min_quorum=1, proposal_fee=5 * COIN, fee_confirmations=1,
                                superblock_cycle=10),
}


def governance_params(chain: ChainParams) -> GovernanceParams:
    """The governance parameters of ``chain``'s network."""
    return _BY_NETWORK[chain.name]


def is_superblock_height(height: int, params: GovernanceParams) -> bool:
    """A superblock comes once per cycle, from the first cycle on."""
    return height >= params.superblock_start and height % params.superblock_cycle == 0


def superblock_budget(height: int, chain: ChainParams) -> int:
    """The most a superblock at ``height`` may pay: 10% of the subsidy x cycle; 0 elsewhere."""
    params = governance_params(chain)
    if not is_superblock_height(height, params):
        return 0
    return block_subsidy(height, chain) // 10 * params.superblock_cycle


def superblocks_around(height: int, params: GovernanceParams) -> Tuple[int, int]:
    """``(last, next)`` superblock heights seen from a tip at ``height`` (last is 0 before
    the first), as getgovernanceinfo reports them."""
    start, cycle = params.superblock_start, params.superblock_cycle
    first = start + (cycle - start % cycle) % cycle
    if height < first:
        return 0, first
    last = height - height % cycle
    return last, last + cycle
