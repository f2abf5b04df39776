"""The validation pipeline as a Twisted service: one writer thread, events in the reactor."""

from __future__ import annotations

import threading

from twisted.internet import reactor
from twisted.internet.defer import inlineCallbacks
from twisted.logger import globalLogPublisher
from twisted.trial.unittest import SynchronousTestCase, TestCase

from coin.chain.chainstate import ChainState
from coin.chain.service import ValidationService
from coin.chainparams import REGTEST
from coin.consensus.errors import ValidationError
from coin.storage.chainstore import ChainStore
from coin.testing.chainbuilder import ChainBuilder, open_chain


class ThreadRecorder:
    def __init__(self) -> None:
        self.connected = []
        self.tips = []
        self.threads = set()

    def block_connected(self, entry, block):
        self.threads.add(threading.get_ident())
        self.connected.append(entry.height)

    def tip_changed(self, entry):
        self.threads.add(threading.get_ident())
        self.tips.append(entry.height)


class ValidationServiceTests(TestCase):
    def make_service(self, datadir: str) -> ValidationService:
        store = ChainStore(datadir, REGTEST)
        store.open()
        return ValidationService(ChainState(REGTEST, store), reactor)

    @inlineCallbacks
    def test_blocks_flow_through_the_worker_and_survive_restart(self):
        datadir = self.mktemp()
        service = self.make_service(datadir)
        recorder = ThreadRecorder()
        service.subscribe(recorder)
        service.startService()
        stopped = []

        def stop():
            if not stopped:
                stopped.append(True)
                return service.stopService()

        self.addCleanup(stop)
        chain = yield service.ready
        self.assertEqual(chain.height, 0)

        builder = ChainBuilder(chain)
        for _ in range(3):
            block = yield service.call(lambda cs: builder.build())
            entry = yield service.submit_block(block)
            self.assertEqual(entry.hash, block.hash)
        # Events were delivered in the reactor thread, after the worker connected the blocks.
        self.assertEqual(recorder.connected, [0, 1, 2, 3])
        self.assertEqual(recorder.tips, [0, 1, 2, 3])
        self.assertEqual(recorder.threads, {threading.get_ident()})

        bad = yield service.call(lambda cs: builder.build(fees=1))
        failure = yield self.assertFailure(service.submit_block(bad), ValidationError)
        self.assertEqual(failure.reason, "bad-cb-amount")

        tip = chain.tip.hash
        yield stop()
        reopened = open_chain(datadir)
        self.addCleanup(reopened.close)
        self.assertEqual(reopened.tip.hash, tip)


class SyncListenersTests(TestCase):
    @inlineCallbacks
    def test_fires_after_queued_events_reached_the_listeners(self):
        store = ChainStore(self.mktemp(), REGTEST)
        store.open()
        service = ValidationService(ChainState(REGTEST, store), reactor)
        recorder = ThreadRecorder()
        service.subscribe(recorder)
        service.startService()
        self.addCleanup(service.stopService)
        chain = yield service.ready
        builder = ChainBuilder(chain)
        block = yield service.call(lambda cs: builder.build())
        submitted = service.submit_block(block)
        # Not waiting for the submission: the sync alone guarantees its events arrived.
        yield service.sync_listeners()
        self.assertEqual(recorder.connected, [0, 1])
        self.assertEqual(recorder.tips, [0, 1])
        entry = yield submitted
        self.assertEqual(entry.hash, block.hash)


class ReindexLoggingTests(SynchronousTestCase):
    def test_reindex_logs_progress(self) -> None:
        datadir = self.mktemp()
        chain = open_chain(datadir)
        ChainBuilder(chain).mine(5)
        chain.close()
        events = []
        globalLogPublisher.addObserver(events.append)
        self.addCleanup(globalLogPublisher.removeObserver, events.append)
        chain = open_chain(datadir, reindex=True)
        self.addCleanup(chain.close)
        self.assertEqual(chain.height, 5)
        progress = [e for e in events if e.get("log_format", "").startswith("Reindexing")]
        self.assertTrue(progress)
        last = progress[-1]
        self.assertEqual(last["height"], 5)
        self.assertEqual(last["percent"], 100.0)
        self.assertIn("rate", last)
