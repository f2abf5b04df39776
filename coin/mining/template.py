"""Block templates for getblocktemplate (BIP22/23/9): assembly, proposals, long-poll ids.

These functions run on the validation worker (``ChainAccess.call``) so that the tip, the
UTXO set and the pool are read together; :class:`coin.mining.service.MiningService`
schedules them. JSON formatting stays with the RPC method.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Dict, List, NamedTuple, Optional

from coin.chain.chainstate import ChainState
from coin.chain.index import BLOCK_VALID_SCRIPTS, BlockIndexEntry
from coin.chainparams import ChainParams
from coin.consensus.block_check import check_block
from coin.consensus.errors import ValidationError
from coin.consensus.softforks import check_block_contextual, check_header_contextual
from coin.consensus.versionbits import ACTIVE, LOCKED_IN, STARTED, deployment_state
from coin.mining.assembler import create_block_from_pool
from coin.mining.selection import Selection
from coin.primitives.block import Block
from coin.primitives.hashes import hash_to_hex
from coin.primitives.script import OP_TRUE

if TYPE_CHECKING:
    from coin.mempool.pool import Mempool

#: The coinbase script Core's getblocktemplate assembles with (the miner replaces it).
TEMPLATE_SCRIPT = bytes((OP_TRUE,))


class LongPollId(NamedTuple):
    """What a template was built from: a long poll waits until either changes.

    Its text (BIP22's ``longpollid``) is the tip hash followed by the pool's
    update counter, as Core writes it.
    """

    tip_hash: bytes
    transactions_updated: int

    def text(self) -> str:
        return hash_to_hex(self.tip_hash) + str(self.transactions_updated)


class VersionBits(NamedTuple):
    """BIP9's view of a template: preferred version, active rules, deployments on offer."""

    version: int
    rules: List[str]
    available: Dict[str, int]


class Template(NamedTuple):
    """A block to work on and the deployment states for the block after ``prev``."""

    prev: BlockIndexEntry
    block: Block
    states: Dict[str, str]
    #: The pool transactions chosen (None when there is no pool) and the pool's counter.
    selection: Optional[Selection] = None
    transactions_updated: int = 0

    @property
    def longpoll_id(self) -> LongPollId:
        return LongPollId(self.prev.hash, self.transactions_updated)

    def version_bits(self, params: ChainParams) -> VersionBits:
        """Core's getblocktemplate rules: a locked-in deployment's bit is forced on."""
        version = self.block.header.version
        rules = []
        available = {}
        for deployment in params.deployments:
            state = self.states[deployment.name]
            if state == LOCKED_IN:
                version |= 1 << deployment.bit
            if state in (STARTED, LOCKED_IN):
                available[deployment.name] = deployment.bit
            elif state == ACTIVE:
                rules.append(deployment.name)
        return VersionBits(version, rules, available)


def assemble_template(chainstate: ChainState, pool: Optional["Mempool"] = None,
                      print_priority: bool = False) -> Template:
    """Core's CreateNewBlock for getblocktemplate (on the writer thread)."""
    prev = chainstate.tip
    updated = pool.transactions_updated if pool is not None else 0
    block, selection = create_block_from_pool(chainstate, pool, TEMPLATE_SCRIPT,
                                              print_priority=print_priority)
    states = {d.name: deployment_state(prev, chainstate.params, d.name, chainstate.versionbits)
              for d in chainstate.params.deployments}
    return Template(prev, block, states, selection, updated)


def duplicate_result(entry: BlockIndexEntry) -> Optional[str]:
    """BIP22's answer for a block already in the index, None if it must be processed."""
    if entry.is_valid(BLOCK_VALID_SCRIPTS):
        return "duplicate"
    if entry.failed():
        return "duplicate-invalid"
    return None


def rejection(error: ValidationError) -> str:
    """Core's BIP22ValidationResult for an invalid state."""
    return error.reason or "rejected"


def check_proposal(chainstate: ChainState, block: Block) -> Optional[str]:
    """BIP23 proposal checks on the writer thread: None if valid, else the BIP22 string.

    The header, context-free and contextual block checks run; the UTXO checks of
    Core's TestBlockValidity need a non-mutating connect that ChainState lacks.
    """
    entry = chainstate.lookup(block.hash)
    if entry is not None:
        return duplicate_result(entry) or "duplicate-inconclusive"
    tip = chainstate.tip
    if block.header.prev_hash != tip.hash:
        return "inconclusive-not-best-prevblk"
    params = chainstate.params
    try:
        check_header_contextual(block.header, tip, params, chainstate.adjusted_time())
        check_block(block, params, check_pow=False)
        check_block_contextual(block, tip, params, chainstate.versionbits)
    except ValidationError as error:
        return rejection(error)
    return None

