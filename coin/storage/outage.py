"""The writer's view of its database server: reachable, or away until a probe finds it back.

Core stops the node (AbortNode) when a write to its database fails; a node on a PostgreSQL
server survives a restart of that server instead (doc/scale-out.md).  Statements that find
the server unreachable tell :class:`DatabaseOutage` (``lost``, from any thread); it logs one
line, tells its listeners (the P2P intake pauses), and probes the server with one round
trip after 1 s, 2 s, 4 s, then every :data:`LONGEST_PROBE_INTERVAL` seconds, never in a
loop.  The first probe that succeeds logs one line and tells the listeners it is back, so
intake resumes at most that interval (plus a connect timeout) after the server returns.
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional

from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IDelayedCall, IReactorFromThreads, IReactorTime
from twisted.logger import Logger

log = Logger(namespace="coin.storage")

#: Seconds before the first probe after the database was lost (doubled each failed probe).
FIRST_PROBE_INTERVAL = 1.0
#: Seconds between probes at most: intake resumes within this of the server's return.
LONGEST_PROBE_INTERVAL = 8.0


class DatabaseOutage:
    """Tracks whether the database is reachable; tells listeners when it is lost and back.

    ``probe`` makes one round trip to the database and raises if it cannot (a blocking
    call); ``in_thread(f)`` runs it off the reactor and returns a Deferred.  Listeners
    have ``database_lost()`` and ``database_back()``, called on the reactor thread.
    """

    def __init__(self, reactor: Any, probe: Callable[[], None],
                 in_thread: Callable[[Callable[[], None]], Deferred], where: str) -> None:
        self._reactor: IReactorTime = reactor
        self._from_threads: IReactorFromThreads = reactor
        self._probe = probe
        self._in_thread = in_thread
        self._where = where
        self._listeners: List[Any] = []
        self._interval = FIRST_PROBE_INTERVAL
        self._next_probe: Optional[IDelayedCall] = None
        self._stopped = False
        self.reachable = True

    def add_listener(self, listener: Any) -> None:
        self._listeners.append(listener)

    def lost(self) -> None:
        """A statement found the server unreachable (any thread; idempotent)."""
        self._from_threads.callFromThread(self._lost)

    def _lost(self) -> None:
        if not self.reachable or self._stopped:
            return
        self.reachable = False
        log.warn("The chain database {where} is unreachable: block and transaction download "
                 "paused until it is back", where=self._where)
        for listener in self._listeners:
            listener.database_lost()
        self._interval = FIRST_PROBE_INTERVAL
        self._schedule()

    def _schedule(self) -> None:
        self._next_probe = self._reactor.callLater(self._interval, self._run_probe)

    def _run_probe(self) -> None:
        self._next_probe = None
        d = self._in_thread(self._probe)
        d.addCallbacks(self._back, self._still_away)

    def _back(self, _: object) -> None:
        if self._stopped:
            return
        self.reachable = True
        log.info("The chain database {where} is reachable again: download resumed",
                 where=self._where)
        for listener in self._listeners:
            listener.database_back()

    def _still_away(self, _: object) -> None:
        if self._stopped:
            return
        self._interval = min(self._interval * 2, LONGEST_PROBE_INTERVAL)
        self._schedule()

    def stop(self) -> None:
        """No more probes (the node is shutting down)."""
        self._stopped = True
        if self._next_probe is not None and self._next_probe.active():
            self._next_probe.cancel()
        self._next_probe = None
