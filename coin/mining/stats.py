"""What the miner reports: the network's hash rate and the last block this node assembled."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple, Optional

from coin.chain.chainstate import ChainState
from coin.chain.snapshot import ChainSnapshot
from coin.chainparams import WITNESS_SCALE_FACTOR
from coin.consensus.pow import get_difficulty
from coin.primitives.block import Block

if TYPE_CHECKING:
    from coin.mempool.pool import Mempool

#: Dash's nPowTargetTimespan (one day): with the target spacing it gives the
#: "difficulty adjustment interval" network_hashps falls back to for lookup <= 0.
POW_TARGET_TIMESPAN = 24 * 60 * 60


def _uint256_to_double(value: int) -> float:
    """arith_uint256::getdouble: summed 32-bit words, low first (rounds like Core)."""
    result = 0.0
    factor = 1.0
    for _ in range(8):
        result += factor * (value & 0xFFFFFFFF)
        factor *= 4294967296.0
        value >>= 32
    return result


def network_hashps(chainstate: ChainState | ChainSnapshot, lookup: int, height: int) -> Optional[float]:
    """Core's GetNetworkHashPS: work over the time span of ``lookup`` blocks up to ``height``.

    None where there is nothing to measure (genesis, no elapsed time): Core
    answers the integer 0 there, a double otherwise. A walk down the in-memory
    index: safe off the writer thread.
    """
    last = chainstate.tip
    if 0 <= height < chainstate.height:
        last = chainstate.at_height(height)
    if last is None or last.height == 0:
        return None
    if lookup <= 0:
        lookup = last.height % (POW_TARGET_TIMESPAN // chainstate.params.target_spacing) + 1
    lookup = min(lookup, last.height)
    first = last
    min_time = max_time = last.time
    for _ in range(lookup):
        first = first.prev
        min_time = min(min_time, first.time)
        max_time = max(max_time, first.time)
    if min_time == max_time:
        return None
    return _uint256_to_double(last.chainwork - first.chainwork) / (max_time - min_time)


class AssembledBlock(NamedTuple):
    """The last block this node assembled (getblocktemplate, generate): Core 0.17's
    nLastBlockWeight/nLastBlockTx and Dash's nLastBlockSize, all 0 until the first."""

    size: int = 0
    weight: int = 0
    #: Transactions besides the coinbase.
    tx: int = 0

    @classmethod
    def of(cls, block: Block) -> "AssembledBlock":
        size = block.size
        return cls(size, WITNESS_SCALE_FACTOR * size, len(block.txs) - 1)


class MiningInfo(NamedTuple):
    """getmininginfo's figures, read from one consistent view of chain and pool."""

    blocks: int
    last_block: AssembledBlock
    difficulty: float
    #: The last 120 blocks' hash rate (see network_hashps).
    network_hashps: Optional[float]
    pooled_tx: int
    chain: str


def mining_info(chainstate: ChainState, pool: Optional["Mempool"],
                last_block: AssembledBlock) -> MiningInfo:
    """Runs on the writer thread, so chain and pool agree."""
    return MiningInfo(
        blocks=chainstate.height,
        last_block=last_block,
        difficulty=get_difficulty(chainstate.tip.bits),
        network_hashps=network_hashps(chainstate, 120, -1),
        pooled_tx=len(pool) if pool is not None else 0,
        chain=chainstate.params.name,
    )
