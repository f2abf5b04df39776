"""The writer's committed chain, as a front end sees it.

:class:`CommittedChain` stands where the validation service stands in a node (what
:class:`~coin.chain.access.ChainAccess` reads through), but it never validates or writes:
it loads the block index and best block that the writer last committed, in one read
transaction, into a :class:`~coin.chain.chainstate.ChainState`, and on each new commit of
the database (looked at every few milliseconds and before each request) applies only the
index rows written since the last load (``ChainStore.read_committed`` with the last change
sequence), on the one thread that also answers for it, publishing a new snapshot as the
writer does; a fresh full load replaces it when the writer's index was wiped (-reindex) or
an incremental load failed.  A
reader therefore never sees an uncommitted block, nor, once the writer answered, an older
chain than it committed; and the tip only moves back when the writer committed a reorg.
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional

from twisted.application import service
from twisted.internet import inotify
from twisted.internet.defer import Deferred, fail
from twisted.internet.task import LoopingCall
from twisted.internet.threads import deferToThreadPool
from twisted.logger import Logger
from twisted.python.filepath import FilePath
from twisted.python.threadpool import ThreadPool

from coin.chain.chainstate import ChainState, deliver
from coin.chain.clock import NodeClock
from coin.chain.events import TipChanged
from coin.chainparams import ChainParams
from coin.collector import gc_paused
from coin.storage.chainstore import ChainStore
from coin.storage.commits import CommitWatch
from coin.storage.errors import DatabaseUnreachable
from coin.threads import ThreadRunner

log = Logger()

#: Seconds between looks for a new commit of the writer (one ``PRAGMA data_version`` each).
POLL_INTERVAL = 0.005
#: The same while the write-ahead log is watched: a commit wakes the process itself, so the
#: timer is a safety net only. At 5 ms its 200 wake-ups a second, each a look of 40-70 µs on
#: a busy machine, delayed 1 in 100 requests at 1 connection (the p99; doc/frontend.md).
WATCHED_POLL_INTERVAL = 1.0
#: Looks at most after one write of the log, POLL_INTERVAL apart, until a commit is seen.
FOLLOW_UP_LOOKS = 20
#: Seconds between measures of a PostgreSQL replica's lag (``frontend_lag``).
LAG_INTERVAL = 1.0


class DatabaseUnavailable(DatabaseUnreachable):
    """The last look at the chain database failed (a PostgreSQL server stopped or out of
    reach): requests are answered -28 / HTTP 503 until a look succeeds again."""


class CommittedChain(service.Service):
    """A read-only stand-in for the validation service, following the writer's commits."""

    name = "committed-chain"

    def __init__(self, params: ChainParams, store: ChainStore, reactor: Any, clock: NodeClock,
                 in_thread: ThreadRunner, prune_mode: bool = False,
                 interval: float = POLL_INTERVAL) -> None:
        self._params = params
        self._store = store
        self._reactor = reactor
        self._clock = clock
        self._in_thread = in_thread
        self._prune_mode = prune_mode
        self._interval = interval
        #: The chain as last committed (updated on this object's thread, or replaced).
        self.chainstate = self._new_chainstate()
        #: The writer's change sequence the chain state was loaded up to (None: load all).
        self._seq: Optional[int] = None
        self._tip_hash: Optional[bytes] = None
        #: Fires with the chain state once the first commit is loaded.
        self.ready: Deferred = Deferred()
        self._listeners: List[object] = []
        #: Reloads and UTXO reads run here, one at a time (the coins cache is not shared).
        self._pool = ThreadPool(minthreads=1, maxthreads=1, name="frontend-chain")
        self._watch: Optional[CommitWatch] = None
        self._loop = LoopingCall(self._poll)
        self._loop.clock = reactor
        #: The watch of the write-ahead log while it stands (see _start_watching).
        self._notifier: Optional[inotify.INotify] = None
        #: The next look after a write of the log (see _log_written), the looks left for it,
        #: and when the last one was made.
        self._follow_up: Optional[Any] = None
        self._looks_left = 0
        self._last_written_look = float("-inf")
        #: The reload under way, if any; a commit seen meanwhile sets ``_stale`` (one more).
        self._loading: Optional[Deferred] = None
        self._stale = False
        #: Requests waiting for the reload that covers the commits seen when they came.
        self._waiters: List[Deferred] = []
        #: How many commits were loaded (tests and metrics).
        self.reloads = 0
        #: False after a failed look at the database, until one succeeds.
        self.reachable = True
        #: Seconds the database read is behind its primary (a PostgreSQL replica), and when
        #: that was measured (by the reactor's clock).
        self.lag = 0.0
        self._lag_at: Optional[float] = None

    def _new_chainstate(self) -> ChainState:
        chainstate = ChainState(self._params, self._store, clock=self._clock,
                                in_thread=self._in_thread)
        chainstate.configure_pruning(self._prune_mode)
        return chainstate

    def startService(self) -> None:
        super().startService()
        self._pool.start()
        self._watch = self._store.commit_watch()
        self._watch.changed()  # the load below sees at least this commit
        d = self._run(self._load)
        d.addCallback(self._swap)
        d.addCallbacks(self._first_loaded, self._first_failed)

    def _first_loaded(self, _: object) -> None:
        self._start_watching()
        self._loop.start(self.poll_interval, now=False)
        self.ready.callback(self.chainstate)

    @property
    def poll_interval(self) -> float:
        """Seconds between the timer's looks: long while commits wake the process."""
        return self._interval if self._notifier is None else max(self._interval,
                                                                 WATCHED_POLL_INTERVAL)

    def _start_watching(self) -> None:
        """Be woken by the writer's commits (Linux, SQLite): each one writes the write-ahead
        log, which the front end's own connection keeps in place; elsewhere (PostgreSQL,
        another system, no log yet) the timer alone looks."""
        if self._store.db_url is not None:
            return
        try:
            notifier = inotify.INotify(self._reactor)
        except Exception as error:  # INotifyError: not Linux, or out of instances
            self._not_watching(error)
            return
        try:
            notifier.watch(FilePath(self._store.db_path + "-wal"),
                           mask=inotify.IN_MODIFY | inotify.IN_DELETE_SELF | inotify.IN_MOVE_SELF,
                           callbacks=[self._log_written])
        except Exception as error:  # INotifyError: no log file
            notifier.loseConnection()
            self._not_watching(error)
            return
        notifier.startReading()
        self._notifier = notifier

    def _not_watching(self, error: Exception) -> None:
        log.info("Commits are looked for every {ms:g} ms (no inotify watch: {error})",
                 ms=self._interval * 1000, error=error)

    def _stop_watching(self) -> None:
        if self._follow_up is not None and self._follow_up.active():
            self._follow_up.cancel()
        self._follow_up = None
        notifier, self._notifier = self._notifier, None
        if notifier is not None:
            notifier.loseConnection()

    def _log_written(self, _watch: object, _path: object, mask: int) -> None:
        """The writer wrote the log: a commit, or part of one (the look tells). Looked at
        now, or, within POLL_INTERVAL of the last such look, then: a writer writing without
        pause (a sync) costs at most the looks the 5 ms timer made."""
        if not mask & inotify.IN_MODIFY and self._notifier is not None:
            # The log was removed or replaced: the timer looks every few ms again.
            self._stop_watching()
            if self._loop.running:
                self._loop.stop()
                self._loop.start(self.poll_interval, now=False)
            self._look()
            return
        self._looks_left = FOLLOW_UP_LOOKS
        if self._follow_up is None or not self._follow_up.active():
            wait = self._last_written_look + POLL_INTERVAL - self._reactor.seconds()
            if wait > 0:
                self._follow_up = self._reactor.callLater(wait, self._look_until_seen)
            else:
                self._look_until_seen()

    def _look_until_seen(self) -> None:
        """Look, and while no new commit is seen, again every POLL_INTERVAL, FOLLOW_UP_LOOKS
        looks in all after the last write: SQLite makes a commit visible in the ``-shm`` index
        (a mapped page: no event) just after its last write of the log, so the look on that
        write's event can come first."""
        self._follow_up = None
        self._last_written_look = self._reactor.seconds()
        self._looks_left -= 1
        if not self._look() and self._looks_left > 0 and self._notifier is not None:
            self._follow_up = self._reactor.callLater(POLL_INTERVAL, self._look_until_seen)

    def _first_failed(self, failure: Any) -> None:
        log.failure("Loading the committed chain failed", failure)
        self.ready.errback(failure)

    def stopService(self) -> Deferred:
        super().stopService()
        if self._loop.running:
            self._loop.stop()
        self._stop_watching()
        if self._watch is not None:
            self._watch.close()
            self._watch = None
        d = self._run(lambda: None)  # let a reload in progress finish
        d.addBoth(lambda _: self._pool.stop())
        return d

    def _run(self, f: Callable, *args: Any) -> Deferred:
        return deferToThreadPool(self._reactor, self._pool, f, *args)

    def _look(self) -> bool:
        """Start a reload if the writer committed since the last look (and none runs); True
        if it had."""
        if self._watch is None:
            return False
        try:
            changed = self._watch.changed()
        except Exception:
            if self.reachable:
                log.failure("Checking the chain database for commits failed")
            self.reachable = False
            return False
        if changed:
            self._stale = True
        if not self.reachable:
            log.info("The chain database is reachable again")
            self.reachable = True
        now = self._reactor.seconds()
        if self._lag_at is None or now - self._lag_at >= LAG_INTERVAL:
            self._lag_at = now
            self.lag = self._measure_lag()
        if self._stale and self._loading is None:
            self._reload()
        return changed

    _poll = _look

    def _measure_lag(self) -> float:
        try:
            return self._store.replica_lag(self._reactor.seconds())
        except Exception:
            log.failure("Measuring the replica's lag failed")
            return self.lag

    def fresh(self) -> Optional[Deferred]:
        """None when the loaded chain is the writer's last commit; else a Deferred that fires
        once it is.  Called for each request (one ``PRAGMA data_version``), so a client that
        saw the writer answer (after its commit) never gets an older chain from here.  Fails
        with :class:`DatabaseUnavailable` while the database cannot be read."""
        self._look()
        if not self.reachable:
            return fail(DatabaseUnavailable())
        if self._loading is None:
            return None
        waiter: Deferred = Deferred()
        self._waiters.append(waiter)
        return waiter

    def _reload(self) -> None:
        self._stale = False
        self._loading = self._run(self._load)
        self._loading.addCallback(self._swap)
        self._loading.addErrback(lambda f: log.failure("Loading the committed chain failed", f))
        self._loading.addBoth(self._reloaded)

    def _reloaded(self, _: object) -> None:
        self._loading = None
        if self._stale and self.running:
            self._reload()
            return
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.called:  # a client that left cancelled it
                waiter.callback(None)

    def _load(self) -> ChainState:
        with gc_paused():
            committed = self._store.read_committed(self._seq)
            self._seq = None  # until this load is complete
            if committed.full:
                chainstate = self._new_chainstate()
                chainstate.load_committed(committed)
            else:
                chainstate = self.chainstate
                chainstate.apply_committed(committed)
        self._seq = committed.seq
        return chainstate

    def _swap(self, chainstate: ChainState) -> None:
        self.chainstate = chainstate
        self.reloads += 1
        tip = chainstate.tip
        if tip is not None and tip.hash != self._tip_hash:
            deliver(self._listeners, [TipChanged(tip)])
        self._tip_hash = tip.hash if tip is not None else None

    # -- what ChainAccess uses of the validation service ---------------------------

    def subscribe(self, listener: object) -> None:
        self._listeners.append(listener)

    def unsubscribe(self, listener: object) -> None:
        self._listeners.remove(listener)

    def call(self, f: Callable, *args: Any) -> Deferred:
        """Run ``f(chainstate, *args)`` against the current commit, off the reactor."""
        return self._run(f, self.chainstate, *args)

    def sync_listeners(self) -> Deferred:
        return self._run(lambda: None)
