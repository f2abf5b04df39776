"""A reactor for tests: coind's, pinned to poll for its whole window before every wait.

Twisted's conformance suites (tests/unit/test_eventloop.py) load reactors by name while the
test module is still being imported, so this lives in a module of its own.
"""

from __future__ import annotations

from coin.eventloop import SpinGovernor, SpinningEPollReactor

#: The pinned window: 2 ms, ten times -busypoll's default.
WINDOW_US = 2000


class PinnedGovernor(SpinGovernor):
    """Never narrows: every wait starts with the full window of polling."""

    def waited(self, waited_ns: int, by_event: bool) -> None:
        self.window_ns = self.limit_ns


class AlwaysPollingReactor(SpinningEPollReactor):
    """Every event it serves is found by polling, unless it comes after the window."""

    def __init__(self) -> None:
        super().__init__(WINDOW_US)
        self.governor = PinnedGovernor(WINDOW_US * 1000)
        self.governor.window_ns = self.governor.limit_ns
