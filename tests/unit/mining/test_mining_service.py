"""coin.mining called directly, as a GUI or a plugin would: no RPC layer in between.

A real validation service and mempool run the prepared regtest chain (tests/rpcchain.py);
long polls wait on a ``task.Clock`` handed to the service.
"""

from __future__ import annotations

from twisted.internet import task
from twisted.internet.defer import CancelledError, inlineCallbacks

from coin.chainparams import COIN, REGTEST
from coin.consensus.versionbits import LOCKED_IN
from coin.mining.service import LONGPOLL_FIRST_CHECK, LONGPOLL_RECHECK, MiningService
from coin.mining.stats import AssembledBlock, MiningInfo, network_hashps
from coin.mining.template import LongPollId, Template
from coin.primitives.block import Block
from coin.primitives.hashes import hash160
from coin.script.standard import p2pkh_script

from tests.rpcchain import TIP_HEIGHT, ChainRPCTestCase


class MiningServiceTestCase(ChainRPCTestCase):
    def setUp(self):
        ready = super().setUp()
        self.clock = task.Clock()
        self.mining = MiningService(self.access, self.clock)
        return ready

    def pool_spend(self):
        """Puts a spend of block 1's coinbase into the pool; fires with the transaction."""
        tx = self.builder.spend(self.mature_coinbase(1))
        return self.mempool.accept(tx).addCallback(lambda _: tx)


class TemplateTests(MiningServiceTestCase):
    @inlineCallbacks
    def test_template_on_the_tip_with_the_pool(self):
        empty = yield self.mining.template()
        self.assertIsInstance(empty, Template)
        self.assertEqual(empty.prev, self.state.tip)
        self.assertEqual(empty.block.txs[0].vout[0].value, 50 * COIN)
        self.assertEqual(empty.longpoll_id, self.mining.current_longpoll_id())
        tx = yield self.pool_spend()
        full = yield self.mining.template()
        self.assertEqual(list(full.block.txs[1:]), [tx])
        self.assertEqual(full.selection.fees, [10_000])
        self.assertEqual(full.block.txs[0].vout[0].value, 50 * COIN + 10_000)
        self.assertEqual(full.longpoll_id, LongPollId(self.state.tip.hash,
                                                      empty.transactions_updated + 1))
        self.assertEqual(full.longpoll_id.text(),
                         self.tip_hex() + str(empty.transactions_updated + 1))

    @inlineCallbacks
    def test_version_bits_force_a_locked_in_bit(self):
        template = yield self.mining.template()
        self.assertEqual(template.version_bits(REGTEST), (0x20000000, [], {}))
        locked = template._replace(states={"csv": LOCKED_IN})
        self.assertEqual(locked.version_bits(REGTEST), (0x20000001, [], {"csv": 0}))

    @inlineCallbacks
    def test_proposals_are_checked_not_stored(self):
        block = yield self.build()
        self.assertIsNone((yield self.mining.check_proposal(block)))
        stale = yield self.build(parent=self.state.tip.prev.hash)
        self.assertEqual((yield self.mining.check_proposal(stale)),
                         "inconclusive-not-best-prevblk")
        self.assertIsNone(self.state.lookup(block.hash))

    @inlineCallbacks
    def test_submissions_answer_as_bip22(self):
        block = yield self.build()
        self.assertIsNone((yield self.mining.submit_block(block)))
        self.assertEqual(self.state.tip.hash, block.hash)
        self.assertEqual((yield self.mining.submit_block(block)), "duplicate")
        self.assertEqual((yield self.mining.check_proposal(block)), "duplicate")
        invalid = yield self.build(fees=1)
        self.assertEqual((yield self.mining.submit_block(invalid)), "bad-cb-amount")
        self.assertEqual((yield self.mining.submit_block(invalid)), "duplicate-invalid")
        mutated = Block(block.header, list(block.txs) + [block.txs[0]])
        self.assertEqual((yield self.mining.submit_block(mutated)), "duplicate")


class GenerateTests(MiningServiceTestCase):
    """generate/generatetoaddress's loop, called without the RPC layer."""

    def script(self) -> bytes:
        return p2pkh_script(hash160(self.builder.pubkey))

    @inlineCallbacks
    def test_blocks_are_mined_on_the_tip_with_the_pool(self):
        tx = yield self.pool_spend()
        hashes = yield self.mining.generate(self.script(), 2, 1_000_000)
        self.assertEqual(hashes, [self.state.at_height(TIP_HEIGHT + 1).hash, self.state.tip.hash])
        self.assertEqual(self.state.height, TIP_HEIGHT + 2)
        first = yield self.access.read_block(self.state.at_height(TIP_HEIGHT + 1))
        self.assertEqual(list(first.txs[1:]), [tx])
        self.assertEqual(first.txs[0].vout[0].script_pubkey, self.script())
        self.assertEqual(first.txs[0].vout[0].value, 50 * COIN + 10_000)
        self.assertNotIn(tx.txid, self.mempool.pool.entries)

    @inlineCallbacks
    def test_no_tries_left_mines_nothing(self):
        self.assertEqual((yield self.mining.generate(self.script(), 3, 0)), [])
        self.assertEqual((yield self.mining.generate(self.script(), 0, 1_000_000)), [])
        self.assertEqual(self.state.height, TIP_HEIGHT)


class LongPollTests(MiningServiceTestCase):
    @inlineCallbacks
    def test_a_new_tip_ends_the_wait_at_once(self):
        waiting = self.mining.wait_for_change(self.mining.current_longpoll_id())
        self.assertNoResult(waiting)
        yield self.mine()
        self.assertIsNone((yield waiting))
        self.assertEqual(self.clock.getDelayedCalls(), [])

    def test_an_old_tip_ends_the_wait_at_once(self):
        since = LongPollId(self.state.tip.prev.hash, 0)
        self.assertIsNone(self.successResultOf(self.mining.wait_for_change(since)))

    @inlineCallbacks
    def test_a_pool_change_counts_after_a_minute(self):
        waiting = self.mining.wait_for_change(self.mining.current_longpoll_id())
        yield self.pool_spend()
        self.clock.advance(LONGPOLL_FIRST_CHECK - 1)
        self.assertNoResult(waiting)
        self.clock.advance(1)
        self.assertIsNone(self.successResultOf(waiting))
        self.assertEqual(self.clock.getDelayedCalls(), [])

    @inlineCallbacks
    def test_then_the_pool_is_rechecked_every_ten_seconds(self):
        waiting = self.mining.wait_for_change(self.mining.current_longpoll_id())
        self.clock.advance(LONGPOLL_FIRST_CHECK)
        self.clock.advance(LONGPOLL_RECHECK)
        self.assertNoResult(waiting)
        yield self.pool_spend()
        self.clock.advance(LONGPOLL_RECHECK - 1)
        self.assertNoResult(waiting)
        self.clock.advance(1)
        self.assertIsNone(self.successResultOf(waiting))

    def test_an_unknown_counter_is_a_change(self):
        # A counter that is not a number (or from another node) never matches the pool's.
        since = self.mining.current_longpoll_id()._replace(transactions_updated=-1)
        waiting = self.mining.wait_for_change(since)
        self.clock.advance(LONGPOLL_FIRST_CHECK)
        self.assertIsNone(self.successResultOf(waiting))

    def test_cancelling_stops_the_timer_and_the_tip_wait(self):
        waiting = self.mining.wait_for_change(self.mining.current_longpoll_id())
        waiting.cancel()
        self.failureResultOf(waiting, CancelledError)
        self.assertEqual(self.clock.getDelayedCalls(), [])
        self.assertEqual(self.access.tip_waiters._waiting, [])


class StatsTests(MiningServiceTestCase):
    @inlineCallbacks
    def test_network_hashps(self):
        # Blocks of work 2, one second apart: 2 hashes per second.
        self.assertEqual((yield self.mining.network_hashps(120, -1)), 2.0)
        self.assertEqual((yield self.mining.network_hashps(-1, 50)), 2.0)
        # Nothing to measure at genesis: None (Core's integer 0).
        self.assertIsNone((yield self.mining.network_hashps(120, 0)))
        self.assertEqual(network_hashps(self.state, 1000, -1),
                         network_hashps(self.state, TIP_HEIGHT, TIP_HEIGHT + 5))

    @inlineCallbacks
    def test_info_describes_the_last_block_this_node_assembled(self):
        # Core 0.17: zeros until a block was assembled, then that block's figures.
        tx = yield self.pool_spend()
        info = yield self.mining.info()
        self.assertEqual(info, MiningInfo(
            blocks=TIP_HEIGHT, last_block=AssembledBlock(0, 0, 0), difficulty=info.difficulty,
            network_hashps=2.0, pooled_tx=1, chain="regtest"))
        self.assertAlmostEqual(info.difficulty, 4.656542373906925e-10)
        template = yield self.mining.template()
        self.assertEqual(template.block.txs[1], tx)
        size = len(template.block.serialize())
        self.assertEqual((yield self.mining.info()).last_block, (size, 4 * size, 1))
        # generate assembles too: its last block, mined with the pool's transaction.
        (mined,) = yield self.mining.generate(p2pkh_script(hash160(b"miner")), 1, 1_000_000)
        block = yield self.access.read_block(self.state.lookup(mined))
        size = len(block.serialize())
        info = yield self.mining.info()
        self.assertEqual((info.blocks, info.pooled_tx, info.last_block),
                         (TIP_HEIGHT + 1, 0, (size, 4 * size, 1)))
        # A pool change alone changes nothing until the next assembly.
        yield self.mempool.accept(self.builder.spend(self.mature_coinbase(2)))
        self.assertEqual((yield self.mining.info()).last_block, (size, 4 * size, 1))
