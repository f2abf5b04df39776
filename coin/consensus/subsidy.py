"""Block subsidy: the new coins a coinbase may claim (fees come on top)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from coin.chainparams import COIN

if TYPE_CHECKING:
    from coin.chainparams import ChainParams

INITIAL_SUBSIDY = 50 * COIN


def block_subsidy(height: int, params: ChainParams) -> int:
    """Core's GetBlockSubsidy: 50 coins, halved every ``subsidy_halving_interval`` blocks.

    After 64 halvings the subsidy is zero (Core forces it because a C shift by
    64 is undefined; in Python the shift would give zero anyway, but saying so
    keeps the rule visible).
    """
    halvings = height // params.subsidy_halving_interval
    if halvings >= 64:
        return 0
    return INITIAL_SUBSIDY >> halvings
