"""A front end's incremental load of the writer's commits (``ChainStore.read_committed`` with
a change sequence, ``ChainState.apply_committed``) gives exactly what a full load gives."""

from __future__ import annotations

import os
from typing import Any, List

from twisted.internet import inotify, reactor
from twisted.internet.defer import inlineCallbacks
from twisted.internet.task import deferLater
from twisted.trial.unittest import SynchronousTestCase, TestCase

from coin.chain.chainstate import ChainState
from coin.chain.clock import NodeClock
from coin.chain.index import BLOCK_FAILED_MASK
from coin.chainparams import REGTEST
from coin.frontend.chain import (
    FOLLOW_UP_LOOKS, POLL_INTERVAL, WATCHED_POLL_INTERVAL, CommittedChain,
)
from coin.storage.chainstore import ChainStore, CommittedIndex
from coin.testing.chainbuilder import ChainBuilder, open_chain
from coin.threads import ThreadRunner
from tests.unit.chain.test_pruning import FILE_SIZE, open_pruning_chain


def described(chain: ChainState) -> dict:
    """Everything a front end answers from: entries, active chain, headers, prune height."""
    def name(entry: Any) -> Any:
        return entry.hash if entry is not None else None
    return {
        "index": {e.hash: (e.height, name(e.prev), e.chainwork, e.status, e.tx_count, e.chain_tx,
                           e.file_no, e.data_pos, e.undo_file, e.undo_pos, e.sequence_id)
                  for e in chain.index.values()},
        "chain": [e.hash for e in chain.chain],
        "published": (chain.published.height, name(chain.published.tip),
                      name(chain.published.best_header)),
        "best_header": name(chain.best_header),
        "best_invalid": name(chain.best_invalid),
        "prune_height": chain.prune_height(),
    }


class IncrementalLoadTests(SynchronousTestCase):
    """A writer ChainState commits; a read-only store follows it, one flush at a time."""

    def setUp(self) -> None:
        self.datadir = self.mktemp()
        self.writer = open_pruning_chain(self.datadir, target=0)
        self.addCleanup(self.writer.close)
        self.builder = ChainBuilder(self.writer)
        self.builder.mine(5)
        self.writer.flush()
        self.reader = ChainStore(self.datadir, REGTEST, max_blockfile_size=FILE_SIZE)
        self.reader.open_read_only()
        self.addCleanup(self.reader.close)
        committed = self.reader.read_committed()
        self.assertTrue(committed.full)
        self.follower = self.new_chainstate()
        self.follower.load_committed(committed)
        self.seq = committed.seq

    def new_chainstate(self) -> ChainState:
        chain = ChainState(REGTEST, self.reader)
        chain.configure_pruning(True)
        return chain

    def follow(self) -> CommittedIndex:
        """Flush the writer, apply its changes to the follower, check it equals a full load."""
        self.writer.flush()
        committed = self.reader.read_committed(self.seq)
        self.assertFalse(committed.full)
        self.follower.apply_committed(committed)
        self.seq = committed.seq
        fresh = self.new_chainstate()
        fresh.load_committed(self.reader.read_committed())
        self.assertEqual(described(self.follower), described(fresh))
        self.assertEqual([e.hash for e in self.follower.chain], [e.hash for e in self.writer.chain])
        return committed

    def test_new_blocks_read_only_their_rows(self) -> None:
        blocks = self.builder.mine(3)
        committed = self.follow()
        self.assertEqual(sorted(row.hash for row in committed.rows),
                         sorted(block.hash for block in blocks))

    def test_nothing_changed_reads_no_row(self) -> None:
        self.writer.flush()
        committed = self.reader.read_committed(self.seq)
        self.assertEqual((committed.full, committed.rows, committed.seq), (False, [], self.seq))

    def test_reorg_to_a_longer_branch(self) -> None:
        fork_point = self.writer.chain[2]
        self.builder.mine(1)
        self.follow()
        branch = self.builder.mine(5, parent=fork_point)
        self.assertEqual(self.writer.tip.hash, branch[-1].hash)
        self.follow()
        self.assertEqual(self.follower.tip.hash, branch[-1].hash)
        self.assertEqual(self.follower.published.tip.hash, branch[-1].hash)

    def test_invalidate_and_reconsider(self) -> None:
        target = self.writer.chain[3]
        self.writer.invalidate_block(target.hash)
        committed = self.follow()
        self.assertIn(target.hash, [row.hash for row in committed.rows])
        self.assertEqual(self.follower.tip.hash, target.prev.hash)
        self.assertTrue(self.follower.index[target.hash].status & BLOCK_FAILED_MASK)
        self.assertEqual(self.follower.best_invalid.hash, target.hash)
        self.writer.reconsider_block(target.hash)
        self.follow()
        self.assertIsNone(self.follower.best_invalid)
        self.assertEqual(self.follower.tip.hash, self.writer.tip.hash)

    def test_pruning_changes_file_fields(self) -> None:
        self.builder.mine(360)
        self.follow()
        self.assertEqual(self.follower.prune_height(), 0)
        heights = []
        for height in (30, 70):  # the second makes the first prune height stale
            self.writer.prune_manual(height)
            committed = self.follow()
            pruned: List[bytes] = [row.hash for row in committed.rows]
            self.assertTrue(pruned)
            self.assertTrue(all(not self.follower.index[h].have_data() for h in pruned))
            heights.append(self.follower.prune_height())
        self.assertLess(1, heights[0])
        self.assertLess(heights[0], heights[1])

    def test_wiped_or_foreign_index_is_read_whole(self) -> None:
        self.assertTrue(self.reader.read_committed(self.seq + 1).full)
        self.writer.store.wipe_index_and_chainstate()
        committed = self.reader.read_committed(self.seq)
        self.assertEqual((committed.full, committed.rows, committed.best), (True, [], None))


class TipListener:
    def __init__(self) -> None:
        self.tips: List[bytes] = []

    def tip_changed(self, entry: Any) -> None:
        self.tips.append(entry.hash)


@inlineCallbacks
def started_front_end(test: TestCase, interval: float) -> Any:
    """``(writer, builder, store, service, listener)``: a writer with 2 blocks and a front
    end's service over its database (looking every ``interval`` s), loaded."""
    datadir = test.mktemp()
    writer = open_chain(datadir)
    test.addCleanup(writer.close)
    builder = ChainBuilder(writer)
    builder.mine(2)
    writer.flush()
    store = ChainStore(datadir, REGTEST)
    store.open_read_only()
    test.addCleanup(store.close)
    service = CommittedChain(REGTEST, store, reactor, NodeClock(), ThreadRunner(),
                             interval=interval)
    listener = TipListener()
    service.subscribe(listener)
    service.startService()
    test.addCleanup(service.stopService)
    yield service.ready
    return writer, builder, store, service, listener


class CommittedChainTests(TestCase):
    """The front end's service: a full load at start, then in-place loads of each commit."""

    @inlineCallbacks
    def test_reloads_apply_changes_to_the_loaded_chain_state(self) -> Any:
        writer, builder, _, service, listener = yield started_front_end(
            self, 3600)  # only fresh() looks (and the commits' wake-ups, which find them seen)
        loaded = service.chainstate
        self.assertEqual(loaded.tip.hash, writer.tip.hash)
        for _ in range(2):
            builder.mine(1)
            writer.flush()
            yield service.fresh()
            self.assertIs(service.chainstate, loaded)
            self.assertEqual(loaded.published.tip.hash, writer.tip.hash)
        self.assertEqual(listener.tips[-2:], [e.hash for e in writer.chain[-2:]])
        self.assertEqual(service.reloads, 3)


class CommitWakeupTests(TestCase):
    """A front end is woken by the writer's commits (inotify on the write-ahead log) instead of
    looking every 5 ms: an idle worker woke 200 times a second, and each look at 1 connection
    delayed the request that came meanwhile (1 in 100: the p99)."""

    @inlineCallbacks
    def settled(self, looks: List[bool], count: int) -> Any:
        """Waits (up to 20 s) for ``count`` looks, then 0.1 s (20 look intervals) more."""
        for _ in range(2000):
            if len(looks) >= count:
                break
            yield deferLater(reactor, 0.01, lambda: None)
        yield deferLater(reactor, 0.1, lambda: None)

    @inlineCallbacks
    def tip_seen(self, listener: TipListener, tip: bytes) -> Any:
        """Waits (up to 20 s of reactor turns) for ``listener`` to be told of ``tip``."""
        for _ in range(2000):
            if listener.tips and listener.tips[-1] == tip:
                return
            yield deferLater(reactor, 0.01, lambda: None)
        self.fail("the front end never saw the commit")

    @inlineCallbacks
    def test_the_timer_looks_once_a_second_while_commits_wake_the_process(self) -> Any:
        _, _, _, service, _ = yield started_front_end(self, POLL_INTERVAL)
        self.assertEqual(service.poll_interval, WATCHED_POLL_INTERVAL)
        self.assertEqual(service._loop.interval, WATCHED_POLL_INTERVAL)

    @inlineCallbacks
    def test_a_commit_is_noticed_without_a_request_or_the_timer(self) -> Any:
        writer, builder, _, service, listener = yield started_front_end(self, 3600)
        builder.mine(1)
        writer.flush()
        yield self.tip_seen(listener, writer.tip.hash)
        self.assertEqual(service.chainstate.published.tip.hash, writer.tip.hash)

    @inlineCallbacks
    def test_the_timer_looks_every_few_ms_again_once_the_log_is_moved(self) -> Any:
        writer, builder, store, service, listener = yield started_front_end(self, POLL_INTERVAL)
        wal = store.db_path + "-wal"
        os.rename(wal, wal + ".moved")
        try:
            for _ in range(2000):  # the move's event comes through the reactor
                if service.poll_interval == POLL_INTERVAL:
                    break
                yield deferLater(reactor, 0.01, lambda: None)
        finally:
            os.rename(wal + ".moved", wal)
        self.assertEqual(service._loop.interval, POLL_INTERVAL)
        builder.mine(1)
        writer.flush()
        yield self.tip_seen(listener, writer.tip.hash)

    @inlineCallbacks
    def test_a_write_whose_commit_is_not_visible_yet_is_looked_at_again(self) -> Any:
        """SQLite publishes a commit in the -shm index (no event) after its last write of the
        log: a look on that write's event may see nothing yet, and no other event comes."""
        _, _, _, service, _ = yield started_front_end(self, 3600)
        for _ in range(5):  # the events of the set-up's own writes read
            yield deferLater(reactor, 0.02, lambda: None)
        looks: List[bool] = []
        self.patch(service._watch, "changed", lambda: looks.append(len(looks) == 3) or looks[-1])
        service._log_written(None, None, inotify.IN_MODIFY)
        yield self.settled(looks, 4)
        self.assertEqual(looks, [False, False, False, True])  # until a commit is seen
        del looks[:]
        self.patch(service._watch, "changed", lambda: looks.append(False) or False)
        service._log_written(None, None, inotify.IN_MODIFY)
        yield self.settled(looks, FOLLOW_UP_LOOKS)
        self.assertEqual(len(looks), FOLLOW_UP_LOOKS)  # a write that was no commit: bounded

    @inlineCallbacks
    def test_a_burst_of_writes_is_looked_at_once_per_poll_interval(self) -> Any:
        """A writer writing without pause (a sync) must not make its front ends look more
        often than the 5 ms timer did."""
        _, _, _, service, _ = yield started_front_end(self, 3600)
        yield self.settled([], 0)  # the events of the set-up's own writes read
        looks: List[bool] = []
        self.patch(service._watch, "changed", lambda: looks.append(True) or True)
        for _ in range(50):
            service._log_written(None, None, inotify.IN_MODIFY)
        self.assertEqual(len(looks), 1)  # at once; the others wait for one more look
        yield self.settled(looks, 2)
        self.assertEqual(len(looks), 2)
