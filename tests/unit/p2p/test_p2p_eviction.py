"""Inbound eviction (Core's AttemptToEvictConnection) as a pure function over candidates."""

from __future__ import annotations

from typing import Any, List

from twisted.trial.unittest import SynchronousTestCase

from coin.p2p.eviction import EvictionCandidate, select_node_to_evict

ATTACKER, HONEST = 111, 222


def hogs(count: int, first_id: int = 0, group: int = ATTACKER, **fields: Any
         ) -> List[EvictionCandidate]:
    """``count`` idle peers of one group, connected one second apart (older ids first)."""
    return [EvictionCandidate(id=first_id + i, connected=1000.0 + first_id + i,
                              keyed_net_group=group, **fields) for i in range(count)]


class SelectNodeToEvictTests(SynchronousTestCase):
    def test_twenty_are_always_protected(self) -> None:
        self.assertIsNone(select_node_to_evict([]))
        self.assertIsNone(select_node_to_evict(hogs(20)))
        # The 21st is the first that can go.
        self.assertIsNotNone(select_node_to_evict(hogs(21)))

    def test_the_biggest_group_loses_a_slot(self) -> None:
        for attacker, honest in ((1, 2**63), (2**63, 1)):  # whatever the hash order
            candidates = hogs(40, group=attacker) + [
                EvictionCandidate(id=99, connected=5000.0, keyed_net_group=honest)]
            # The honest peer is the newest of all, yet the attacker's group loses one.
            self.assertIn(select_node_to_evict(candidates), range(40))
        candidates = hogs(25, group=1) + hogs(15, first_id=100, group=2)
        self.assertIn(select_node_to_evict(candidates), range(25))

    def protected(self, special: EvictionCandidate) -> bool:
        """Whether ``special``, newest of 40 peers of one group, escapes eviction."""
        candidates = [EvictionCandidate(id=i, connected=1000.0 + i, min_ping=0.1 + i / 100,
                                        keyed_net_group=ATTACKER) for i in range(39)]
        return select_node_to_evict([special] + candidates) != special.id

    def test_each_protection(self) -> None:
        newest = dict(id=500, connected=9000.0, keyed_net_group=ATTACKER)
        # Unprotected, the newest connection of the group is the one evicted.
        self.assertFalse(self.protected(EvictionCandidate(**newest)))
        self.assertTrue(self.protected(EvictionCandidate(min_ping=0.01, **newest)))
        self.assertTrue(self.protected(EvictionCandidate(last_tx_time=8000.0, **newest)))
        self.assertTrue(self.protected(EvictionCandidate(last_block_time=8000.0, **newest)))
        # Connected longest: the oldest half of what is left.
        self.assertTrue(self.protected(EvictionCandidate(id=500, connected=1.0,
                                                         keyed_net_group=ATTACKER)))

    def test_netgroup_protection(self) -> None:
        # A lone peer with the highest group hash is among the 4 protected by group,
        # even when its group would otherwise be the one evicted from.
        lone = EvictionCandidate(id=500, connected=9000.0, keyed_net_group=2**64 - 1)
        candidates = [EvictionCandidate(id=i, connected=1000.0 + i, keyed_net_group=i)
                      for i in range(30)] + [lone]
        self.assertNotEqual(select_node_to_evict(candidates), 500)
        self.assertIsNotNone(select_node_to_evict(candidates))
