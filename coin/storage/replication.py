"""How far a PostgreSQL streaming replica is behind its primary (a front end's ``frontend_lag``).

``now() - pg_last_xact_replay_timestamp()`` alone lies both ways: it grows on a replica that
is idle but caught up, and it is NULL (read as 0 before) on a replica that has not replayed
a transaction since it started, however much WAL it has waiting.  So the measure compares
what the replica received with what it replayed first:

- a primary (not in recovery), or a replica that replayed everything it received: 0;
- WAL waiting, and a transaction replayed since the replica started: seconds since that
  transaction committed on the primary;
- WAL waiting, and no transaction replayed since the start: the seconds since this reader
  first saw WAL waiting at the current replay position -- a lower bound (that WAL was on
  the replica by then), growing while nothing is replayed;
- no WAL received since the start (streaming not started or not configured): unknown,
  :data:`UNKNOWN_LAG`.
"""

from __future__ import annotations

from typing import Any, Optional

#: The lag when the replica receives no WAL, so how far behind it is cannot be told.
UNKNOWN_LAG = -1.0

#: In recovery; nothing received since the start; received beyond replayed; the replay
#: position; seconds since the last replayed transaction committed (NULL if none yet).
REPLICA_STATE_SQL = (
    "SELECT pg_is_in_recovery(), pg_last_wal_receive_lsn() IS NULL, "
    "COALESCE(pg_last_wal_receive_lsn() > pg_last_wal_replay_lsn(), false), "
    "pg_last_wal_replay_lsn()::text, "
    "EXTRACT(EPOCH FROM now() - pg_last_xact_replay_timestamp())")


class ReplicaLag:
    """Turns :data:`REPLICA_STATE_SQL` rows into seconds of lag (see the module docstring);
    remembers when it first saw WAL waiting, for the lower bound."""

    def __init__(self) -> None:
        self._waiting_at: Optional[str] = None
        self._waiting_since = 0.0

    def measure(self, row: Any, now: float) -> float:
        """The lag of a replica whose state is ``row``, at ``now`` (the reader's clock)."""
        in_recovery, nothing_received, waiting, replay_lsn, since_replayed = row
        if not in_recovery or nothing_received or not waiting:
            self._waiting_at = None
            if in_recovery and nothing_received:
                return UNKNOWN_LAG
            return 0.0
        if since_replayed is not None:
            return max(0.0, float(since_replayed))
        if self._waiting_at != replay_lsn:
            self._waiting_at, self._waiting_since = replay_lsn, now
        return now - self._waiting_since
