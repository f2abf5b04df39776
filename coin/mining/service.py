"""The miner's entry point: templates, proposals, submissions, long polls and statistics.

``getblocktemplate``, ``submitblock``, ``getmininginfo`` and ``getnetworkhashps`` call
this; a GUI or a plugin calls the same methods. Everything answers with a Deferred:
chain and pool are read on the validation worker, index walks in the thread pool, and
waiting is done with the clock handed in.
"""

from __future__ import annotations

from typing import List, Optional, Tuple

from twisted.internet.defer import CancelledError, Deferred
from twisted.internet.interfaces import IDelayedCall, IReactorTime

from coin.chain.access import ChainAccess
from coin.chain.chainstate import ChainState
from coin.chain.index import BLOCK_FAILED_CHILD, BLOCK_FAILED_VALID, BLOCK_VALID_SCRIPTS
from coin.consensus.errors import ValidationError
from coin.mempool.pool import Mempool
from coin.mining.assembler import MiningError, create_block_from_pool, solve
from coin.mining.stats import AssembledBlock, mining_info, network_hashps
from coin.mining.template import (
    LongPollId, Template, assemble_template, check_proposal, duplicate_result, rejection,
)
from coin.primitives.block import Block

#: Core's long poll: the pool is first checked after a minute, then every 10 seconds.
LONGPOLL_FIRST_CHECK = 60
LONGPOLL_RECHECK = 10


class MiningService:
    """Mining over one chain. Long polls wait on the chain's tip waiters and the pool's
    update counter, so any number of instances agree on them; the one state kept is
    the figures of the last block this instance assembled (getmininginfo, as Core's).
    """

    def __init__(self, chain: ChainAccess, clock: IReactorTime) -> None:
        self._chain = chain
        self._clock = clock
        self._last_block = AssembledBlock()

    def _assembled(self, block: Optional[Block]) -> None:
        if block is not None:
            self._last_block = AssembledBlock.of(block)

    def template(self) -> Deferred:
        """Fires with a :class:`coin.mining.template.Template` on the current tip."""
        d = self._chain.call(assemble_template, self._chain.mempool, self._chain.print_priority)

        def record(template: Template) -> Template:
            self._assembled(template.block)
            return template
        return d.addCallback(record)

    def generate(self, script_pubkey: bytes, count: int, max_tries: int) -> Deferred:
        """Mine ``count`` blocks paying ``script_pubkey`` on the validation worker (Core's
        generateBlocks, for generate and generatetoaddress); fires with their hashes."""
        d = self._chain.call(_generate_blocks, self._chain.mempool, script_pubkey, count,
                             max_tries, self._chain.print_priority)

        def record(result: Tuple[List[bytes], Optional[Block]]) -> List[bytes]:
            hashes, last = result
            self._assembled(last)
            return hashes
        return d.addCallback(record)

    def check_proposal(self, block: Block) -> Deferred:
        """BIP23: fires with None if ``block`` would be valid on the tip, else why not."""
        return self._chain.call(check_proposal, block)

    def submit_block(self, block: Block) -> Deferred:
        """Process ``block``; fires with BIP22's answer (None: accepted onto the best chain)."""
        return Deferred.fromCoroutine(self._submit_block(block))

    async def _submit_block(self, block: Block) -> Optional[str]:
        chain = self._chain
        entry = chain.state.lookup(block.hash)
        if entry is not None:
            known = duplicate_result(entry)
            if known is not None:
                return known
            if entry.have_data():
                return "duplicate"  # stored but not (yet) on the best chain: not a new block
        try:
            entry = await chain.submit_block(block)
        except ValidationError as error:
            entry = chain.state.lookup(block.hash)
            if entry is not None and entry.status & BLOCK_FAILED_CHILD \
                    and not entry.status & BLOCK_FAILED_VALID:
                # An ancestor failed to connect; Core never checks this block itself.
                return "inconclusive"
            return rejection(error)
        # Valid once connected; a block stored on a side branch was never checked in full.
        return None if entry.is_valid(BLOCK_VALID_SCRIPTS) else "inconclusive"

    def current_longpoll_id(self) -> LongPollId:
        """The id a template built now would carry."""
        pool = self._chain.mempool
        return LongPollId(self._chain.state.tip.hash,
                          pool.transactions_updated if pool is not None else 0)

    def wait_for_change(self, since: LongPollId) -> Deferred:
        """BIP22 long polling: fires on a new tip, or once the pool changed (after a minute).

        Cancelling it (the client went away) stops the wait and its timer, and fails
        it with CancelledError.
        """
        pool = self._chain.mempool
        new_tip = self._chain.wait_for_tip(lambda tip: tip.hash != since.tip_hash)
        timer: Optional[IDelayedCall] = None

        def stop(_: object = None) -> None:
            if timer is not None and timer.active():
                timer.cancel()
            if not new_tip.called:
                new_tip.cancel()

        changed: Deferred = Deferred(stop)

        def finish(_: object = None) -> None:
            stop()
            changed.callback(None)

        def check_pool() -> None:
            nonlocal timer
            if pool is not None and pool.transactions_updated != since.transactions_updated:
                finish()
            else:
                timer = self._clock.callLater(LONGPOLL_RECHECK, check_pool)

        new_tip.addCallbacks(finish, lambda failure: failure.trap(CancelledError))
        if not changed.called:
            timer = self._clock.callLater(LONGPOLL_FIRST_CHECK, check_pool)
        return changed

    def network_hashps(self, lookup: int, height: int) -> Deferred:
        """Fires with :func:`coin.mining.stats.network_hashps` (a float, or None)."""
        # A long walk down the in-memory index: off the reactor, without holding the writer.
        return self._chain.in_thread(network_hashps, self._chain.snapshot(), lookup, height)

    def info(self) -> Deferred:
        """Fires with :class:`coin.mining.stats.MiningInfo`."""
        return self._chain.call(mining_info, self._chain.mempool, self._last_block)


def _generate_blocks(chainstate: ChainState, pool: Optional[Mempool], script_pubkey: bytes,
                     count: int, max_tries: int, print_priority: bool
                     ) -> Tuple[List[bytes], Optional[Block]]:
    """Up to ``count`` blocks, stopping early once ``max_tries`` nonces are used up; with
    their hashes, the last block assembled (None if none was)."""
    hashes: List[bytes] = []
    extra_nonce = 0
    tries_left = max_tries
    template: Optional[Block] = None
    while len(hashes) < count and tries_left > 0:
        extra_nonce += 1
        template, _ = create_block_from_pool(chainstate, pool, script_pubkey, extra_nonce,
                                             print_priority)
        try:
            block = solve(template, chainstate.params, max_tries=tries_left)
        except MiningError:
            break
        tries_left -= block.header.nonce + 1
        hashes.append(chainstate.process_block(block).hash)
    return hashes, template
