"""The node's event loop: Twisted's epoll reactor, polling briefly before it sleeps.

A request answered on a sleeping CPU pays for waking it. On a virtual machine that wake-up
is a trip through the host and can cost far more than the answer (on the 2-core VM of
doc/rpc.md: 70 µs median, 0.48 ms at the 99th percentile, against 11 µs when the CPU is
awake). Linux's guest ``cpuidle-haltpoll`` governor avoids it by polling a while before it
halts; where a host runs without it, this reactor does the same in user space.

The polling adapts as haltpoll's does, so it costs nothing unless events keep coming
soon after each other: a node that is idle, or called now and then, never spins.
``-busypoll=0`` turns it off. The events found are dispatched by the reactor itself, one
system call per round and no legacy log context per event.
"""

from __future__ import annotations

import os
import time
from typing import Optional

from twisted.logger import Logger

_log = Logger()

#: haltpoll's default limit (guest_halt_poll_ns = 200 µs).
DEFAULT_BUSYPOLL_US = 200
#: The largest limit -busypoll takes: beyond it, polling is no longer "briefly".
MAX_BUSYPOLL_US = 10_000


class SpinGovernor:
    """How long to poll before sleeping, by haltpoll's rule.

    After each wait, ``waited`` is told how long it lasted. A wait that ended with an event
    after the window but within the limit would have been caught by a longer window: the
    window doubles (from a quarter of the limit, up to the limit). A wait beyond the limit
    means events are not coming back to back: the window halves, and stops below a quarter.
    """

    def __init__(self, limit_ns: int) -> None:
        self.window_ns = 0
        self.limit_ns = 0
        self.set_limit(limit_ns)

    def set_limit(self, limit_ns: int) -> None:
        """A new limit (0: never poll); the window starts again from none."""
        self.limit_ns = max(0, limit_ns)
        self.start_ns = max(1, self.limit_ns // 4)
        self.window_ns = 0

    def waited(self, waited_ns: int, by_event: bool) -> None:
        """Adjust the window after a wait of ``waited_ns``; ``by_event``: not a timer's end."""
        if waited_ns <= self.window_ns:
            return
        if waited_ns <= self.limit_ns:
            if by_event:
                self.window_ns = min(self.limit_ns, max(self.start_ns, 2 * self.window_ns))
            return
        half = self.window_ns // 2
        self.window_ns = half if half >= self.start_ns else 0


try:
    from twisted.internet.epollreactor import EPollReactor
except ImportError:  # pragma: no cover - no epoll: the platform's default reactor runs
    EPollReactor = None  # type: ignore[assignment,misc]


if EPollReactor is not None:
    class SpinningEPollReactor(EPollReactor):  # type: ignore[misc,valid-type]
        """EPollReactor that polls for up to the governor's window before it blocks, then
        dispatches the events the poll or the wait found (:meth:`_dispatch`)."""

        def __init__(self, limit_us: int = DEFAULT_BUSYPOLL_US) -> None:
            super().__init__()
            self.governor = SpinGovernor(limit_us * 1000)

        def set_busypoll(self, limit_us: int) -> None:
            """-busypoll: the longest poll, in microseconds (0: never poll)."""
            self.governor.set_limit(limit_us * 1000)

        def doPoll(self, timeout: Optional[float]) -> None:
            governor = self.governor
            poll = self._poller.poll
            # As Twisted's doPoll: at most one event per descriptor watched.
            most = len(self._selectables)
            if timeout == 0 or governor.limit_ns == 0:
                events = poll(-1 if timeout is None else timeout, most)
            else:
                timeout_ns = None if timeout is None else int(timeout * 1e9)
                started = time.monotonic_ns()
                window = governor.window_ns
                if timeout_ns is not None:
                    window = min(window, timeout_ns)
                events = self._ready_within(started + window, most) if window else []
                if not events:
                    # The governor is told of the idle time alone: handlers run after it.
                    if timeout_ns is None:
                        events = poll(-1, most)
                    else:
                        left = timeout_ns - (time.monotonic_ns() - started)
                        events = poll(max(0, left) / 1e9, most)
                    governor.waited(time.monotonic_ns() - started, bool(events))
            self._dispatch(events)

        # EPollReactor binds its own doPoll as doIteration, which the main loop calls.
        doIteration = doPoll

        def _ready_within(self, deadline_ns: int, most: int) -> list:
            """Poll until descriptors are ready (their events) or the deadline passes (no
            events), yielding the CPU to any other runnable task between polls."""
            poll = self._poller.poll
            while True:
                events = poll(0, most)
                if events or time.monotonic_ns() >= deadline_ns:
                    return events
                os.sched_yield()

        def _dispatch(self, events: list) -> None:
            """Each ready descriptor's read or write, as EPollReactor.doPoll does, without
            the legacy log context it sets around each one (``log.callWithLogger``: 1.2 µs
            an event, which the node's log lines never show). Every microsecond before an
            answer is sent counts: sent within a few of the request, it finds the client's
            CPU still awake (doc/rpc.md, "Answering before the client's CPU sleeps"). An
            exception is logged and the round goes on, as there."""
            selectables = self._selectables
            do_read_or_write = self._doReadOrWrite
            for fd, event in events:
                selectable = selectables.get(fd)
                if selectable is None:
                    continue  # removed by an earlier handler of this round
                try:
                    do_read_or_write(selectable, fd, event)
                except Exception:
                    _log.failure("Unhandled error serving {selectable}", selectable=selectable)


def install(limit_us: int = DEFAULT_BUSYPOLL_US) -> None:
    """Install the spinning reactor where epoll exists (the default reactor elsewhere).

    twistd finds it as ``--reactor=coin``; ``coind`` installs it itself.
    """
    if EPollReactor is None:  # pragma: no cover
        return
    from twisted.internet.main import installReactor

    installReactor(SpinningEPollReactor(limit_us))


def describe(reactor: object) -> str:
    """The log's line on the event loop, with -busypoll's effect."""
    governor = getattr(reactor, "governor", None)
    if not isinstance(governor, SpinGovernor):
        return "Event loop: %s (no polling before it sleeps)" % type(reactor).__name__
    if not governor.limit_ns:
        return "Event loop: %s, polling off (-busypoll=0)" % type(reactor).__name__
    return ("Event loop: %s, polling up to %d µs before it sleeps while events come that soon"
            % (type(reactor).__name__, governor.limit_ns // 1000))


def set_busypoll(reactor: object, limit_us: int) -> None:
    """Apply -busypoll to a reactor that polls (any other reactor is left as it is)."""
    setter = getattr(reactor, "set_busypoll", None)
    if setter is not None:
        setter(limit_us)
