"""Run blocking database reads off the reactor thread (RPC and REST readers).

Each call hands a ``*_txn(conn, ...)`` function a fresh connection on a
dedicated thread pool and fires a Deferred with its result.  The connection is
rolled back afterwards: readers never write chain state (the chain-state
writer owns that).  Results must be plain data, never live result objects,
which would be used from the wrong thread after the connection is gone.
Database errors fail the Deferred at once; nothing is retried.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, TypeVar

from sqlalchemy.engine import Connection, Engine, Result, Row
from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IReactorFromThreads
from twisted.internet.threads import deferToThreadPool
from twisted.python.threadpool import ThreadPool

_T = TypeVar("_T")


class DBPool:
    """Runs read transactions on a thread pool of their own.

    Pass ``threadpool`` to use another pool (tests pass one that runs calls
    synchronously); by default one is created and owned here, started and
    stopped by :meth:`start` and :meth:`stop`.
    """

    def __init__(self, engine: Engine, reactor: IReactorFromThreads,
                 threadpool: Optional[Any] = None, max_threads: int = 4) -> None:
        self._engine = engine
        self._reactor = reactor
        self._owns_pool = threadpool is None
        self._pool = threadpool if threadpool is not None else ThreadPool(
            minthreads=1, maxthreads=max_threads, name="coin-db")

    def start(self) -> None:
        if self._owns_pool:
            self._pool.start()

    def stop(self) -> None:
        if self._owns_pool:
            self._pool.stop()

    def run(self, txn: Callable[..., _T], *args: Any, **kwargs: Any) -> "Deferred[_T]":
        """``txn(conn, *args, **kwargs)`` on the pool; a Deferred of its (plain) result."""
        return deferToThreadPool(self._reactor, self._pool, self._run, txn, args, kwargs)

    def _run(self, txn: Callable[..., _T], args: tuple, kwargs: dict) -> _T:
        with self._engine.connect() as conn:
            result = txn(conn, *args, **kwargs)
        if isinstance(result, (Result, Row, Connection)):
            raise TypeError("%s returned a live %s; return plain data"
                            % (getattr(txn, "__name__", txn), type(result).__name__))
        return result
