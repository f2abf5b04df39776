"""-*notify commands: Core's substitutions and quoting, the bound on commands running at
once, and the chain warnings that raise -alertnotify."""

from __future__ import annotations

from typing import List

from twisted.internet.error import ProcessDone, ProcessTerminated
from twisted.python.failure import Failure
from twisted.trial.unittest import SynchronousTestCase

from coin.chain.warnings import CLOCK_WARNING, INVALID_CHAIN_WARNING, UNKNOWN_VERSIONS_WARNING
from coin.notify.hooks import (
    HookRunner, alert_command, block_command, shell_escape, wallet_command,
)
from tests.unit.chain import test_chain_warnings as chain_warnings
from tests.unit.chain.test_chain_warnings import ChainWarningTestCase


class SubstitutionTests(SynchronousTestCase):
    def test_block_hash(self) -> None:
        self.assertEqual(block_command("echo %s %s", "ab" * 32), "echo %s %s" % ("ab" * 32, "ab" * 32))

    def test_wallet_name_is_one_shell_word(self) -> None:
        self.assertEqual(wallet_command("n %s %w", "cd" * 32, "it's $(x)"),
                         "n %s 'it'\"'\"'s $(x)'" % ("cd" * 32))
        self.assertEqual(shell_escape(""), "''")

    def test_alert_message_keeps_only_safe_characters(self) -> None:
        self.assertEqual(alert_command("a %s", "x'; rm -rf / #`$\"!"), "a 'x; rm -rf / '")


class FakeProcessReactor:
    """Records spawnProcess calls; the test ends the processes."""

    def __init__(self) -> None:
        self.spawned: List[tuple] = []

    def spawnProcess(self, protocol, executable, args, env=None):
        self.spawned.append((protocol, executable, args))

    def callFromThread(self, f, *args):
        f(*args)


class RunnerTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.reactor = FakeProcessReactor()
        self.runner = HookRunner(self.reactor, max_running=2, max_queued=2)

    def end(self, index: int, code: int = 0) -> None:
        protocol = self.reactor.spawned[index][0]
        protocol.childDataReceived(1, b"out")
        reason = ProcessDone(0) if code == 0 else ProcessTerminated(code)
        protocol.processEnded(Failure(reason))

    def test_through_the_shell(self) -> None:
        self.runner.run_from_thread("echo hi")
        self.assertEqual(self.reactor.spawned[0][1:], ("/bin/sh", ["/bin/sh", "-c", "echo hi"]))

    def test_at_most_max_running_then_a_bounded_queue(self) -> None:
        for n in range(5):
            self.runner.run("c%d" % n)
        self.assertEqual([s[2][2] for s in self.reactor.spawned], ["c0", "c1"])
        self.assertEqual(list(self.runner.waiting), ["c2", "c3"])  # c4 dropped
        self.end(0, code=1)  # a failure frees its slot too
        self.assertEqual(self.reactor.spawned[-1][2][2], "c2")
        self.flushLoggedErrors()
        self.end(1)
        self.end(2)
        self.end(3)
        self.assertEqual((self.runner.running, list(self.runner.waiting)), (0, []))
        self.assertEqual(len(self.reactor.spawned), 4)

    def test_stopped_runner_starts_nothing(self) -> None:
        self.runner.stop()
        self.runner.run("late")
        self.assertEqual(self.reactor.spawned, [])


class AlertTests(ChainWarningTestCase):
    """The warnings that call -alertnotify, on a real chain (Core's AlertNotify callers)."""

    def setUp(self) -> None:
        super().setUp()
        self.alerts: List[str] = []
        self.warnings.alert_listeners.append(self.alerts.append)

    def test_unknown_versions_alert_once(self) -> None:
        self.mine(51, chain_warnings.UnknownVersionTests.unknown)
        self.mine(5, chain_warnings.UnknownVersionTests.unknown)
        self.assertEqual(self.alerts, [UNKNOWN_VERSIONS_WARNING])

    def test_invalid_chain_alerts_when_raised(self) -> None:
        self.mine(10)
        chain_warnings.InvalidChainTests.submit_invalid_chain(self, 7)
        self.assertEqual(self.alerts, [INVALID_CHAIN_WARNING])
        self.mine(1)  # cleared
        self.assertEqual(self.alerts, [INVALID_CHAIN_WARNING])

    def test_the_clock_warning_raises_none(self) -> None:
        self.warnings.set_misc(CLOCK_WARNING)
        self.assertEqual(self.alerts, [])
