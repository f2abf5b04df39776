"""A streaming replica's lag as a front end reports it: 0 only when caught up, a growing lower
bound when it has replayed nothing since it started, -1 when it cannot be told."""

from __future__ import annotations

import time

from twisted.trial.unittest import SynchronousTestCase

from coin.chainparams import REGTEST
from coin.storage.chainstore import ChainStore
from coin.storage.replication import UNKNOWN_LAG, ReplicaLag
from coin.testing.chainbuilder import ChainBuilder, open_chain
from tests import pgserver

LSN, LATER_LSN = "0/3000060", "0/3000100"


class ReplicaLagTests(SynchronousTestCase):
    """The rows of REPLICA_STATE_SQL: in recovery, nothing received, WAL waiting, replay
    position, seconds since the last replayed transaction."""

    def test_primary_and_caught_up_replica(self) -> None:
        lag = ReplicaLag()
        self.assertEqual(lag.measure((False, True, False, None, None), 10.0), 0.0)
        self.assertEqual(lag.measure((True, False, False, LSN, 500.0), 10.0), 0.0)

    def test_waiting_wal_after_a_replayed_transaction(self) -> None:
        self.assertEqual(ReplicaLag().measure((True, False, True, LSN, 2.5), 10.0), 2.5)

    def test_nothing_replayed_since_start_is_a_growing_lower_bound(self) -> None:
        lag = ReplicaLag()
        waiting = (True, False, True, LSN, None)
        self.assertEqual(lag.measure(waiting, 10.0), 0.0)
        self.assertEqual(lag.measure(waiting, 14.0), 4.0)
        # The replay moved (still no transaction): counted from there.
        self.assertEqual(lag.measure((True, False, True, LATER_LSN, None), 15.0), 0.0)
        self.assertEqual(lag.measure((True, False, True, LATER_LSN, None), 17.0), 2.0)
        # Caught up, then waiting again: a new start.
        self.assertEqual(lag.measure((True, False, False, LATER_LSN, None), 18.0), 0.0)
        self.assertEqual(lag.measure((True, False, True, LATER_LSN, None), 19.0), 0.0)

    def test_no_wal_received_is_unknown(self) -> None:
        self.assertEqual(ReplicaLag().measure((True, True, False, LSN, None), 10.0), UNKNOWN_LAG)


class PausedReplicaTests(SynchronousTestCase):
    """A real primary and streaming replica, the replay paused right after the start."""

    skip = pgserver.skip_reason()

    def test_a_replica_that_replayed_nothing_since_it_started_is_not_reported_current(self) -> None:
        primary = pgserver.own_server(self)
        writer = open_chain(self.mktemp(), dbengine=primary.url("chain"))
        self.addCleanup(writer.store.close)
        writer.flush()
        replica = pgserver.PostgresServer()
        replica.start_replica_of(primary)
        self.addCleanup(replica.stop)
        replica.execute("SELECT pg_wal_replay_pause()")
        reader = ChainStore(self.mktemp(), REGTEST, dbengine=replica.url("chain"))
        reader.open_read_only()
        self.addCleanup(reader.close)
        self.assertEqual(reader.replica_lag(time.monotonic()), 0.0)
        replayed = reader.read_committed().best
        ChainBuilder(writer).mine(2)
        writer.flush()
        deadline = time.monotonic() + 30
        # The first look that sees WAL waiting starts the bound at 0; later looks grow.
        while reader.replica_lag(time.monotonic()) <= 0.0 and time.monotonic() < deadline:
            time.sleep(0.05)
        lag = reader.replica_lag(time.monotonic())
        self.assertGreater(lag, 0.0)
        time.sleep(0.2)
        self.assertGreaterEqual(reader.replica_lag(time.monotonic()), lag + 0.2)
        self.assertEqual(reader.read_committed().best, replayed)  # it replayed none of it
        replica.execute("SELECT pg_wal_replay_resume()")
        while reader.replica_lag(time.monotonic()) != 0.0 and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(reader.replica_lag(time.monotonic()), 0.0)
        self.assertEqual(reader.read_committed().best, writer.tip.hash)
