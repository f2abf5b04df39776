"""The validation pipeline as a Twisted service.

Every call that changes chain state runs on one dedicated worker thread, in
submission order, so the reactor never stalls on block connection and there
is exactly one writer.  Subscribers receive chain events in the reactor
thread, after the blocks they name are on disk.
"""

from __future__ import annotations

from typing import Any, Callable, List

from twisted.application import service
from twisted.internet.defer import Deferred
from twisted.internet.task import LoopingCall
from twisted.internet.threads import deferToThreadPool
from twisted.logger import Logger
from twisted.python.threadpool import ThreadPool

from coin.chain.chainstate import ChainState, deliver
from coin.chain.events import ChainEvent
from coin.primitives.block import Block, BlockHeader
from coin.primitives.hashes import hash_to_hex

log = Logger()

#: Seconds between background flushes of the chain state database.
FLUSH_INTERVAL = 600
#: Seconds between checks that every -par worker process is alive.
WORKER_CHECK_INTERVAL = 5


class ValidationService(service.Service):
    """Owns a :class:`ChainState` and serialises all work on it."""

    name = "validation"

    def __init__(self, chainstate: ChainState, reactor: Any, reindex: bool = False,
                 reindex_chainstate: bool = False) -> None:
        self.chainstate = chainstate
        self._reactor = reactor
        self._reindex = reindex
        self._reindex_chainstate = reindex_chainstate
        self._pool = ThreadPool(minthreads=1, maxthreads=1, name="validation")
        self._listeners: List[object] = []
        self._worker_hooks: List[Callable[[ChainState, List[ChainEvent]], None]] = []
        self._flusher = LoopingCall(self.flush)
        self._flusher.clock = reactor
        self._supervisor = LoopingCall(self._check_workers)
        self._supervisor.clock = reactor
        chainstate.set_publisher(self._publish_from_worker)
        #: Fires when the chain is loaded (RPC answers "warming up" until then).
        self.ready: Deferred = Deferred()

    # Worker hooks see the events first, on the worker thread; then the reactor gets them.
    def _publish_from_worker(self, events: List[ChainEvent]) -> None:
        for hook in self._worker_hooks:
            try:
                hook(self.chainstate, events)
            except Exception:
                log.failure("Worker hook {hook!r} failed", hook=hook)
        self._reactor.callFromThread(deliver, self._listeners, events)

    def add_worker_hook(self, hook: Callable[[ChainState, List[ChainEvent]], None]) -> None:
        """Call ``hook(chainstate, events)`` on the worker thread after each activation.

        For state that must change in step with the chain before the next
        submission runs (the mempool); reactor-side listeners use :meth:`subscribe`.
        """
        self._worker_hooks.append(hook)

    def _run(self, f: Callable, *args: Any) -> Deferred:
        return deferToThreadPool(self._reactor, self._pool, f, *args)

    def startService(self) -> None:
        super().startService()
        if self.chainstate.assume_valid is not None:
            log.info("Assuming ancestors of block {block} have valid signatures.",
                     block=hash_to_hex(self.chainstate.assume_valid))
        else:
            log.info("Validating signatures for all blocks.")
        if self.chainstate.script_workers is not None:
            # From the reactor (main) thread: the workers' parent-death signal is tied to
            # the thread that starts them, and this one lives as long as the node.
            self.chainstate.script_workers.start()
            self._supervisor.start(WORKER_CHECK_INTERVAL, now=False)
        self._pool.start()
        d = self._run(self.chainstate.load, self._reindex, self._reindex_chainstate)

        def loaded(_: object) -> None:
            self._flusher.start(FLUSH_INTERVAL, now=False)
            self.ready.callback(self.chainstate)

        def failed(f):
            log.failure("Loading the chain state failed", f)
            self.ready.errback(f)

        d.addCallbacks(loaded, failed)

    def stopService(self) -> Deferred:
        super().stopService()
        if self._flusher.running:
            self._flusher.stop()
        if self._supervisor.running:
            self._supervisor.stop()
        d = self._run(self.chainstate.close)
        d.addErrback(lambda f: log.failure("Flushing chain state at shutdown failed", f))
        d.addBoth(lambda _: self._pool.stop())
        if self.chainstate.script_workers is not None:
            d.addBoth(lambda _: self.chainstate.script_workers.stop())
        return d

    def _check_workers(self) -> None:
        """Restart dead -par workers on the writer thread, the only one that uses them."""
        self._run(self.chainstate.script_workers.ensure_running).addErrback(
            lambda f: log.failure("Restarting script-check workers failed", f))

    def subscribe(self, listener: object) -> None:
        """Receive ``block_connected``/``block_disconnected``/``tip_changed`` in the reactor."""
        self._listeners.append(listener)

    def unsubscribe(self, listener: object) -> None:
        self._listeners.remove(listener)

    def submit_block(self, block: Block) -> Deferred:
        """Accept a block and activate the best chain; fires with its index entry."""
        return self._run(self.chainstate.process_block, block)

    def submit_header(self, header: BlockHeader) -> Deferred:
        return self._run(self.chainstate.accept_header, header)

    def submit_headers(self, headers: List[BlockHeader]) -> Deferred:
        """Accept a run of headers; fires with their index entries (see accept_headers)."""
        return self._run(self.chainstate.accept_headers, headers)

    def invalidate_block(self, block_hash: bytes) -> Deferred:
        return self._run(self.chainstate.invalidate_block, block_hash)

    def reconsider_block(self, block_hash: bytes) -> Deferred:
        return self._run(self.chainstate.reconsider_block, block_hash)

    def precious_block(self, block_hash: bytes) -> Deferred:
        return self._run(self.chainstate.precious_block, block_hash)

    def flush(self) -> Deferred:
        return self._run(self.chainstate.flush)

    def call(self, f: Callable, *args: Any) -> Deferred:
        """Run ``f(chainstate, *args)`` on the writer thread (consistent reads, mining)."""
        return self._run(f, self.chainstate, *args)

    def sync_listeners(self) -> Deferred:
        """Fires once every event published before the call has been delivered to the
        reactor-side listeners (Core's SyncWithValidationInterfaceQueue).

        Work already queued on the writer runs first, and it hands its events to the
        reactor with ``callFromThread`` before this call's own (empty) result.
        """
        return self._run(lambda: None)
