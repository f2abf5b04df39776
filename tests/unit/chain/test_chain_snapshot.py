"""Consistent chain reads: published snapshots during reorgs, block reads racing pruning,
and the network time offset on the node clock."""

from __future__ import annotations

import sys
import threading
import time
from typing import Any, Callable, List, Optional

from twisted.internet.defer import inlineCallbacks
from twisted.trial.unittest import SynchronousTestCase, TestCase

from coin.chain.chainstate import ChainState
from coin.chain.clock import NodeClock
from coin.chain.index import BLOCK_HAVE_DATA, BLOCK_HAVE_UNDO, BlockIndexEntry
from coin.chain.snapshot import PRUNED_MESSAGE, BlockUnavailable, ChainSnapshot
from coin.chainparams import MAX_FUTURE_BLOCK_TIME, REGTEST
from coin.consensus.errors import ValidationError
from coin.rpc.errors import map_exception
from coin.storage.chainstore import ChainStore
from coin.testing.chainbuilder import ChainBuilder
from coin.chain.pruning import MIN_BLOCKS_TO_KEEP
from tests.unit.chain.test_pruning import CHAIN_LENGTH, open_pruning_chain

#: Blocks of the first branch above the fork, and of the longer competing branch.
OLD_BRANCH = 4
NEW_BRANCH = 6
FORK_HEIGHT = 3


class SteppingChainState(ChainState):
    """A chain state that calls ``on_step`` after every block it connects or disconnects.

    The callback runs on the writer between two steps of a reorg: exactly where
    a reader on another thread could have been scheduled.
    """

    on_step: Optional[Callable[[], None]] = None

    def _connect_tip(self, entry: BlockIndexEntry) -> Any:
        event = super()._connect_tip(entry)
        self._step()
        return event

    def _disconnect_tip(self) -> Any:
        event = super()._disconnect_tip()
        self._step()
        return event

    def _step(self) -> None:
        if self.on_step is not None:
            self.on_step()


def open_stepping_chain(datadir: str, clock: Optional[NodeClock] = None) -> SteppingChainState:
    store = ChainStore(datadir, REGTEST)
    store.open()
    chain = SteppingChainState(REGTEST, store, clock=clock)
    chain.load()
    return chain


def chain_of(view: ChainSnapshot) -> List[bytes]:
    """Every hash a reader sees, asking height by height after reading the tip."""
    tip = view.tip
    assert tip is not None
    return [view.at_height(h).hash for h in range(tip.height + 1)]


def assert_one_chain(test: Any, view: ChainSnapshot) -> None:
    """The heights a snapshot answers are the tip's ancestors, and nothing above the tip."""
    tip = view.tip
    test.assertEqual(view.height, tip.height)
    for h in range(tip.height + 1):
        entry = view.at_height(h)
        test.assertIs(entry, tip.get_ancestor(h), h)
        test.assertTrue(view.contains(entry))
    test.assertIsNone(view.at_height(tip.height + 1))


class ReorgSnapshotTests(SynchronousTestCase):
    """A reorg publishes its final state only; snapshots taken earlier stay as they were."""

    def setUp(self) -> None:
        self.chain = open_stepping_chain(self.mktemp())
        self.addCleanup(self.chain.close)
        self.builder = ChainBuilder(self.chain)
        self.builder.mine(FORK_HEIGHT + OLD_BRANCH)
        self.old_chain = [e.hash for e in self.chain.chain]
        fork = self.chain.at_height(FORK_HEIGHT)
        # The competing branch, stored but not yet active: its last block has the most work.
        self.new_blocks = [self.builder.build(parent=fork)]
        entry = self.chain.accept_block(self.new_blocks[0])
        for _ in range(NEW_BRANCH - 1):
            self.new_blocks.append(self.builder.build(parent=entry))
            entry = self.chain.accept_block(self.new_blocks[-1])
        self.new_chain = self.old_chain[:FORK_HEIGHT + 1] + [b.hash for b in self.new_blocks]

    def test_snapshots_during_a_reorg_show_the_old_chain_then_the_new_one(self) -> None:
        before = self.chain.published
        seen: List[List[bytes]] = []
        live: List[List[bytes]] = []

        def step() -> None:
            seen.append(chain_of(self.chain.published))
            live.append([e.hash for e in self.chain.chain])

        self.chain.on_step = step
        self.chain.activate_best_chain()
        # 4 disconnects and 6 connects, each a point where a reader could run.
        self.assertEqual(len(seen), OLD_BRANCH + NEW_BRANCH)
        # The writer's own list went through the fork point and a shorter new branch...
        self.assertIn(self.old_chain[:FORK_HEIGHT + 1], live)
        self.assertIn(self.new_chain[:-1], live)
        # ...but readers only ever saw the whole old chain (the final state comes after).
        self.assertEqual(seen, [self.old_chain] * len(seen))
        after = self.chain.published
        self.assertEqual(chain_of(after), self.new_chain)
        assert_one_chain(self, after)
        # The snapshot taken before still answers with the old chain, height by height.
        self.assertEqual(chain_of(before), self.old_chain)
        assert_one_chain(self, before)
        self.assertFalse(before.contains(after.tip))
        self.assertIsNone(before.next_on_chain(before.tip))

    def test_extending_the_tip_publishes_each_block(self) -> None:
        """No reorg: each connected block is a consistent chain, published at once."""
        self.chain.activate_best_chain()
        base = self.chain.height
        entry = self.chain.tip
        for _ in range(3):
            entry = self.chain.accept_block(self.builder.build(parent=entry))
        seen: List[int] = []
        self.chain.on_step = lambda: seen.append(self.chain.published.height)
        self.chain.activate_best_chain()
        # At each step the blocks connected before it are visible, in one activation.
        self.assertEqual(seen, [base, base + 1, base + 2])
        self.assertEqual(self.chain.published.height, base + 3)

    def test_invalidate_publishes_only_the_final_chain(self) -> None:
        self.chain.activate_best_chain()
        seen: List[List[bytes]] = []
        self.chain.on_step = lambda: seen.append(chain_of(self.chain.published))
        # Back to the old branch: 6 disconnects, then 4 connects.
        self.chain.invalidate_block(self.new_blocks[0].hash)
        self.assertEqual(seen, [self.new_chain] * (OLD_BRANCH + NEW_BRANCH))
        self.assertEqual(chain_of(self.chain.published), self.old_chain)

    def test_new_header_is_published_with_the_same_chain(self) -> None:
        self.chain.activate_best_chain()
        before = self.chain.published
        header = self.builder.build().header
        entry = self.chain.accept_header(header)
        after = self.chain.published
        self.assertIs(after.best_header, entry)
        self.assertIs(before.best_header, self.chain.lookup(self.new_blocks[-1].hash))
        self.assertIs(after.tip, before.tip)
        self.assertIs(after.lookup(header.hash), entry)
        self.assertFalse(after.contains(entry))

    def test_readers_on_other_threads_never_see_a_mix(self) -> None:
        """Real threads: the writer flips branches while readers walk the published chain."""
        self.chain.activate_best_chain()
        old_tip = self.chain.lookup(self.old_chain[-1])
        new_tip = self.chain.lookup(self.new_chain[-1])
        done = threading.Event()
        problems: List[str] = []
        reads = [0]

        def reader() -> None:
            while not done.is_set():
                view = self.chain.published
                tip = view.tip
                if tip is not old_tip and tip is not new_tip:
                    problems.append("tip %r" % tip)
                for h in range(tip.height + 1):
                    if view.at_height(h) is not tip.get_ancestor(h):
                        problems.append("height %d of %r" % (h, tip))
                reads[0] += 1

        previous = sys.getswitchinterval()
        sys.setswitchinterval(1e-5)
        self.addCleanup(sys.setswitchinterval, previous)
        threads = [threading.Thread(target=reader) for _ in range(2)]
        for t in threads:
            t.start()
        try:
            for _ in range(15):
                self.chain.invalidate_block(self.new_blocks[0].hash)
                self.chain.reconsider_block(self.new_blocks[0].hash)
        finally:
            done.set()
            for t in threads:
                t.join()
        self.assertEqual(problems, [])
        self.assertGreater(reads[0], 0)
        self.assertIs(self.chain.published.tip, new_tip)


class PruneRaceTests(SynchronousTestCase):
    """``read_block`` on reader threads while the writer prunes: a block or the pruned error."""

    def test_reads_racing_pruning(self) -> None:
        """Real files and threads.  The disk read is slowed (a busy disk), so readers are
        mid-read in the files the writer prunes: each read must give the right block or
        the pruned error, never another block's bytes, a missing file or a bad offset."""
        chain = open_pruning_chain(self.mktemp(), target=0)
        self.addCleanup(chain.close)
        ChainBuilder(chain).mine(CHAIN_LENGTH)
        read_from_disk = chain.store.read_block

        def busy_disk(file_no: int, pos: int, wait: bool = True) -> bytes:
            time.sleep(0.003)
            return read_from_disk(file_no, pos, wait)

        chain.store.read_block = busy_disk  # type: ignore[method-assign]
        last_prunable = CHAIN_LENGTH - MIN_BLOCKS_TO_KEEP
        entries = chain.chain[1:last_prunable + 20]
        outcomes = {"block": 0, "pruned": 0}
        problems: List[str] = []
        done = threading.Event()
        progress = threading.Semaphore(0)

        def read_all(first: int) -> None:
            order = entries[first:] + entries[:first]
            while not done.is_set():
                for entry in order:
                    try:
                        block = chain.read_block(entry)
                    except BlockUnavailable as e:
                        if not e.pruned:
                            problems.append("%d: %s" % (entry.height, e))
                        outcomes["pruned"] += 1
                        continue
                    except Exception as e:
                        problems.append("%d: %r" % (entry.height, e))
                        continue
                    finally:
                        progress.release()
                    if block.hash != entry.hash:
                        problems.append("%d: read block %s" % (entry.height, block.hash_hex))
                    outcomes["block"] += 1

        readers = [threading.Thread(target=read_all, args=(i * len(entries) // 4,))
                   for i in range(4)]
        for t in readers:
            t.start()
        try:
            # The writer prunes a file or two at a time, as pruneblockchain would, each
            # time after the readers have been at work for a while.
            for height in range(10, last_prunable + 1, 10):
                for _ in range(8):
                    progress.acquire(timeout=10)
                chain.prune_manual(height)
        finally:
            done.set()
            for t in readers:
                t.join()
        self.assertEqual(problems, [])
        self.assertTrue(chain.have_pruned)
        self.assertGreater(outcomes["block"], 0)
        self.assertGreater(outcomes["pruned"], 0)

    def test_pruned_error_is_cores(self) -> None:
        chain = open_pruning_chain(self.mktemp(), target=0)
        self.addCleanup(chain.close)
        ChainBuilder(chain).mine(CHAIN_LENGTH)
        chain.prune_manual(CHAIN_LENGTH)
        entry = chain.at_height(1)
        self.assertFalse(entry.status & (BLOCK_HAVE_DATA | BLOCK_HAVE_UNDO))
        error = self.assertRaises(BlockUnavailable, chain.read_block, entry)
        self.assertTrue(error.pruned)
        self.assertEqual(map_exception(error), (500, {"code": -1, "message": PRUNED_MESSAGE}))
        error = self.assertRaises(BlockUnavailable, chain.read_undo, entry)
        self.assertEqual(error.message, PRUNED_MESSAGE)
        # Through a snapshot (the ChainView contract): by hash, as a Deferred.
        failure = self.failureResultOf(chain.published.read_block(b"\x01" * 32), BlockUnavailable)
        self.assertEqual(map_exception(failure), (500, {"code": -5, "message": "Block not found"}))


class SnapshotReadTests(TestCase):
    """``ChainSnapshot.read_block`` runs in the thread pool and answers by hash."""

    @inlineCallbacks
    def test_read_block_by_hash(self) -> None:
        chain = open_stepping_chain(self.mktemp())
        self.addCleanup(chain.close)
        blocks = ChainBuilder(chain).mine(2)
        view = chain.published
        block = yield view.read_block(blocks[0].hash)
        self.assertEqual(block.hash, blocks[0].hash)
        self.assertEqual(view.params, REGTEST)
        header_only = ChainBuilder(chain).build()
        entry = chain.accept_header(header_only.header)
        error = yield self.assertFailure(chain.published.read_block(entry.hash), BlockUnavailable)
        self.assertEqual((error.rpc_code, error.message), (-1, "Block not found on disk"))


class ClockOffsetTests(SynchronousTestCase):
    """The network time offset lives in the node clock, and header checks use it."""

    def test_adjusted_time(self) -> None:
        clock = NodeClock(lambda: 1000.5)
        self.assertEqual(clock.adjusted_time(), 1000)
        clock.set_time_offset(-30)
        self.assertEqual(clock.adjusted_time(), 970)
        clock.set_mock_time(5000)
        self.assertEqual(clock.adjusted_time(), 4970)
        self.assertEqual(clock.time_offset, -30)

    def test_future_header_check_uses_the_clock_offset(self) -> None:
        clock = NodeClock()
        chain = open_stepping_chain(self.mktemp(), clock)
        self.addCleanup(chain.close)
        builder = ChainBuilder(chain)
        builder.mine(1)
        now = 1_600_000_000
        clock.set_mock_time(now)
        header = builder.build(time=now + MAX_FUTURE_BLOCK_TIME + 100).header
        error = self.assertRaises(ValidationError, chain.accept_header, header)
        self.assertEqual(error.reason, "time-too-new")
        # Peers say our clock is 200 s slow: the same header is no longer too new.
        clock.set_time_offset(200)
        self.assertEqual(chain.adjusted_time(), now + 200)
        self.assertIs(chain.accept_header(header), chain.lookup(header.hash))
