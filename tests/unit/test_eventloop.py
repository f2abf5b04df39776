"""coin.eventloop: the polling governor's rule, and the reactor under Twisted's own reactor tests.

Twisted's reactor conformance suites (timers, threads, descriptors, TCP) run against the
reactor as coind installs it, and against one pinned to poll for its whole window before
every wait, so the polling path itself is what serves every event.
"""

from __future__ import annotations

import socket
import time
from typing import Any, Dict

from twisted.internet.test import test_fdset, test_tcp, test_threads, test_time
from twisted.trial.unittest import SkipTest, SynchronousTestCase

from coin.eventloop import SpinGovernor, SpinningEPollReactor, set_busypoll

US = 1000
REACTORS = ["coin.eventloop.SpinningEPollReactor",
            "tests.pollingreactor.AlwaysPollingReactor"]


class GovernorTests(SynchronousTestCase):
    def test_waits_within_the_limit_grow_the_window_from_a_quarter_to_the_limit(self) -> None:
        governor = SpinGovernor(200 * US)
        self.assertEqual(governor.window_ns, 0)
        seen = []
        for _ in range(4):
            governor.waited(150 * US, True)
            seen.append(governor.window_ns)
        self.assertEqual(seen, [50 * US, 100 * US, 200 * US, 200 * US])

    def test_waits_beyond_the_limit_halve_it_down_to_none(self) -> None:
        governor = SpinGovernor(200 * US)
        governor.window_ns = 200 * US
        seen = []
        for _ in range(4):
            governor.waited(5_000 * US, True)
            seen.append(governor.window_ns)
        self.assertEqual(seen, [100 * US, 50 * US, 0, 0])

    def test_a_wait_the_window_covered_changes_nothing(self) -> None:
        governor = SpinGovernor(200 * US)
        governor.window_ns = 100 * US
        governor.waited(100 * US, True)
        governor.waited(3 * US, True)
        self.assertEqual(governor.window_ns, 100 * US)

    def test_a_timer_ending_a_short_wait_does_not_grow_it(self) -> None:
        """A timer due soon is no sign that events come back to back."""
        governor = SpinGovernor(200 * US)
        governor.waited(150 * US, False)
        self.assertEqual(governor.window_ns, 0)
        governor.window_ns = 100 * US
        governor.waited(1_000 * US, False)
        self.assertEqual(governor.window_ns, 50 * US)

    def test_an_idle_node_never_polls(self) -> None:
        """Calls a second apart: no window ever opens, so no CPU is spent polling."""
        governor = SpinGovernor(200 * US)
        for _ in range(100):
            governor.waited(1_000_000 * US, True)
            self.assertEqual(governor.window_ns, 0)

    def test_limit_zero_never_polls(self) -> None:
        governor = SpinGovernor(0)
        for waited in (0, 1, 50 * US, 10_000 * US):
            governor.waited(waited, True)
            self.assertEqual(governor.window_ns, 0)

    def test_a_new_limit_starts_from_no_window(self) -> None:
        reactor = SpinningEPollReactor()
        self.addCleanup(reactor._poller.close)
        reactor.governor.window_ns = reactor.governor.limit_ns
        set_busypoll(reactor, 80)
        self.assertEqual((reactor.governor.limit_ns, reactor.governor.start_ns,
                          reactor.governor.window_ns), (80 * US, 20 * US, 0))
        set_busypoll(object(), 80)  # a reactor that does not poll is left alone


class PollingTests(SynchronousTestCase):
    """The reactor itself, run here on a socket pair."""

    def reactor(self, limit_us: int) -> SpinningEPollReactor:
        reactor = SpinningEPollReactor(limit_us)
        self.addCleanup(reactor._poller.close)
        return reactor

    def test_an_event_during_the_window_is_dispatched_without_sleeping(self) -> None:
        reactor = self.reactor(10_000)
        reactor.governor.window_ns = 10_000 * US
        near, far = socket.socketpair()
        self.addCleanup(near.close)
        self.addCleanup(far.close)
        seen = []

        class Reader:
            def fileno(self) -> int:
                return near.fileno()

            def doRead(self) -> None:
                seen.append(near.recv(10))

            def logPrefix(self) -> str:
                return "Reader"

            def connectionLost(self, reason: Any) -> None:
                pass

        reactor.addReader(Reader())
        far.send(b"x")
        reactor.doPoll(5.0)
        self.assertEqual(seen, [b"x"])
        # Found while polling: the window neither grew nor shrank.
        self.assertEqual(reactor.governor.window_ns, 10_000 * US)

    def test_a_timer_due_within_the_window_is_not_kept_waiting(self) -> None:
        """With nothing to read, the poll ends when the next timer is due, not the window."""
        reactor = self.reactor(10_000)
        reactor.governor.set_limit(5_000_000 * US)  # a 5 s window, beyond what -busypoll takes
        reactor.governor.window_ns = reactor.governor.limit_ns
        started = time.monotonic()
        reactor.doPoll(0.01)
        self.assertLess(time.monotonic() - started, 2.5)
        # The timer ended the wait: no reason to open the window wider or close it.
        self.assertEqual(reactor.governor.window_ns, 5_000_000 * US)


def _lost_descriptors_go_unseen(self: Any) -> None:
    raise SkipTest("epoll drops a closed descriptor without an event: Twisted skips this "
                   "test for EPollReactor, which this reactor is")


def _conformance(*builders: Any) -> Dict[str, type]:
    classes: Dict[str, type] = {}
    for builder in builders:
        members: Dict[str, Any] = {"_reactors": REACTORS}
        if hasattr(builder, "test_lostFileDescriptor"):
            members["test_lostFileDescriptor"] = _lost_descriptors_go_unseen
        ours = type(builder.__name__, (builder,), members)
        classes.update(ours.makeTestCaseClasses())
    return classes


globals().update(_conformance(
    test_time.TimeTestsBuilder, test_threads.ThreadTestsBuilder,
    test_fdset.ReactorFDSetTestsBuilder, test_tcp.TCP4ClientTestsBuilder,
    test_tcp.TCPConnectionTestsBuilder, test_tcp.TCPPortTestsBuilder))
