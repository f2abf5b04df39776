"""The thread pool blocking reads and encodes hop to, injectable per node.

Components take a :class:`ThreadRunner` instead of calling ``deferToThread`` on the
global reactor, so a node run in-process (tests, benchmarks) can be given its own
pool and see which work ran on it.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from twisted.internet.defer import Deferred
from twisted.internet.threads import deferToThreadPool
from twisted.python.threadpool import ThreadPool


class ThreadRunner:
    """Runs ``f(*args)`` on one thread pool and fires a Deferred in the reactor thread.

    Without a pool, the reactor's own is looked up at each call (as ``deferToThread``
    does), so building a node starts no thread; without a reactor, the global one.
    """

    def __init__(self, reactor: Optional[Any] = None, pool: Optional[ThreadPool] = None) -> None:
        self._reactor = reactor
        self._pool = pool

    @property
    def reactor(self) -> Any:
        if self._reactor is None:
            from twisted.internet import reactor
            return reactor
        return self._reactor

    @property
    def pool(self) -> ThreadPool:
        """The pool calls run on (the reactor's, unless one was given)."""
        return self._pool if self._pool is not None else self.reactor.getThreadPool()

    def __call__(self, f: Callable[..., Any], *args: Any, **kwargs: Any) -> "Deferred[Any]":
        return deferToThreadPool(self.reactor, self.pool, f, *args, **kwargs)
