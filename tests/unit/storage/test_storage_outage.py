"""A database server that goes away: statements fail as DatabaseUnreachable (not as a
refused statement), the outage monitor logs one line each way and probes with backoff."""

from __future__ import annotations

import sqlite3
from typing import Any, Callable, List

from twisted.internet.defer import maybeDeferred
from twisted.internet.task import Clock
from twisted.logger import globalLogPublisher
from twisted.trial.unittest import SkipTest, SynchronousTestCase

from coin.chainparams import REGTEST
from coin.storage.chainstore import ChainStore
from coin.storage.dialect import unreachable
from coin.storage.errors import RPC_IN_WARMUP, CorruptionError, DatabaseUnreachable
from coin.storage.outage import LONGEST_PROBE_INTERVAL, DatabaseOutage
from coin.testing.chainbuilder import ChainBuilder, open_chain
from tests import pgserver


class _Reactor(Clock):
    """A clock that also takes calls from threads (run at once: the tests have one thread)."""

    def callFromThread(self, f: Callable[..., Any], *args: Any) -> None:
        f(*args)


class _Listener:
    def __init__(self) -> None:
        self.events: List[str] = []

    def database_lost(self) -> None:
        self.events.append("lost")

    def database_back(self) -> None:
        self.events.append("back")


class OutageMonitorTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.reactor = _Reactor()
        self.away = True
        self.probes: List[float] = []
        self.outage = DatabaseOutage(self.reactor, self.probe, maybeDeferred, "postgresql://db")
        self.listener = _Listener()
        self.outage.add_listener(self.listener)
        self.logged: List[dict] = []
        globalLogPublisher.addObserver(self.logged.append)
        self.addCleanup(globalLogPublisher.removeObserver, self.logged.append)

    def probe(self) -> None:
        self.probes.append(self.reactor.seconds())
        if self.away:
            raise DatabaseUnreachable("ping failed")

    def lines(self) -> List[str]:
        return [e["log_format"] for e in self.logged if e.get("log_namespace") == "coin.storage"]

    def test_one_line_and_one_event_each_way_with_probes_backing_off(self) -> None:
        for _ in range(3):  # every failing statement reports it: told once
            self.outage.lost()
        self.assertFalse(self.outage.reachable)
        self.assertEqual(self.listener.events, ["lost"])
        self.reactor.advance(0.5)
        self.assertEqual(self.probes, [])  # no busy loop: the first probe after 1 s
        self.reactor.advance(0.5)
        for _ in range(19):
            self.reactor.advance(1)
        self.assertEqual(self.probes, [1.0, 3.0, 7.0, 15.0])
        self.outage.lost()  # failures while away change nothing
        self.away = False
        for _ in range(int(LONGEST_PROBE_INTERVAL)):  # back within the longest interval
            self.reactor.advance(1)
        self.assertEqual(self.probes, [1.0, 3.0, 7.0, 15.0, 23.0])
        self.assertTrue(self.outage.reachable)
        self.assertEqual(self.listener.events, ["lost", "back"])
        self.assertEqual(len(self.lines()), 2, self.lines())
        self.assertEqual(self.reactor.getDelayedCalls(), [])  # no probe while reachable
        # Lost again: the backoff starts from the first interval.
        self.away = True
        self.outage.lost()
        self.reactor.advance(1)
        self.assertEqual(self.probes[-1], 29.0)

    def test_stop_cancels_the_next_probe(self) -> None:
        self.outage.lost()
        self.outage.stop()
        self.assertEqual(self.reactor.getDelayedCalls(), [])
        self.outage.lost()
        self.assertEqual(self.listener.events, ["lost"])


class UnreachableTests(SynchronousTestCase):
    def test_sqlite_errors_are_never_unreachable(self) -> None:
        self.assertFalse(unreachable(sqlite3.OperationalError("database is locked")))
        self.assertFalse(unreachable(ValueError("x")))

    def test_postgresql_errors_that_say_the_server_is_away(self) -> None:
        try:
            import psycopg
        except ImportError:
            raise SkipTest("psycopg 3 is not installed")
        from sqlalchemy.exc import OperationalError

        for away in (psycopg.OperationalError("connection refused"),  # libpq's own: no state
                     psycopg.errors.lookup("08006")(), psycopg.errors.lookup("57P01")(),
                     psycopg.errors.lookup("57P03")(), psycopg.errors.lookup("53300")()):
            self.assertTrue(unreachable(away), away)
            self.assertTrue(unreachable(OperationalError("SELECT 1", {}, away)), away)
        for refused in (psycopg.errors.lookup("57014")(), psycopg.errors.lookup("42P01")(),
                        psycopg.errors.lookup("40001")()):
            self.assertFalse(unreachable(refused), refused)

    def test_the_error_answers_28(self) -> None:
        error = DatabaseUnreachable("read_block failed")
        self.assertEqual((error.rpc_code, error.message), (RPC_IN_WARMUP, "chain database unreachable"))
        self.assertEqual(str(error), "chain database unreachable: read_block failed")


class StoreOnAStoppedServerTests(SynchronousTestCase):
    """A server of the test's own, stopped under a writer's and a reader's store."""

    skip = pgserver.skip_reason()

    def setUp(self) -> None:
        self.server = pgserver.own_server(self)
        self.url = self.server.url("chain")
        self.state = open_chain(self.mktemp(), dbengine=self.url)
        self.addCleanup(self.state.store.close)
        ChainBuilder(self.state).mine(2)
        self.state.flush()
        self.told: List[str] = []
        self.state.store.on_unreachable = lambda: self.told.append("lost")

    def test_reads_fail_as_unreachable_and_work_again_once_it_returns(self) -> None:
        store, entry = self.state.store, self.state.tip
        reader = ChainStore(self.mktemp(), REGTEST, dbengine=self.url)  # a front end's
        reader.open_read_only()
        self.addCleanup(reader.close)
        reader.read_committed()
        raw = store.read_block(entry.file_no, entry.data_pos)
        self.assertEqual(reader.read_block(entry.file_no, entry.data_pos), raw)
        self.server.pause()
        for read in (store.read_block, reader.read_block):
            self.assertRaises(DatabaseUnreachable, read, entry.file_no, entry.data_pos)
        self.assertRaises(DatabaseUnreachable, store.ping)
        self.assertRaises(DatabaseUnreachable, store.txindex_lookup, bytes(32))
        self.assertEqual(self.told, ["lost"] * 3)  # the writer's store tells its monitor
        self.server.resume()
        store.ping()
        self.assertEqual(reader.read_block(entry.file_no, entry.data_pos), raw)
        self.assertEqual(store.read_block(entry.file_no, entry.data_pos), raw)

    def test_a_refused_read_on_a_reachable_server_is_not_unreachable(self) -> None:
        store = self.state.store
        with self.assertRaises(CorruptionError) as caught:
            store.read_block(0, 10 ** 9)
        self.assertNotIsInstance(caught.exception, DatabaseUnreachable)
        self.assertEqual(self.told, [])
