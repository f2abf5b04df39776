"""``-blocknotify``, ``-walletnotify`` and ``-alertnotify``: commands run through the shell.

Core runs each command on a thread of its own and never waits for it.  Here each runs as a
child process (``/bin/sh -c``) started from the reactor: validation only schedules it, a
slow command never delays the next block, and its output and exit status are logged.  At
most :data:`MAX_RUNNING` commands run at once; later ones wait in a queue of at most
:data:`MAX_QUEUED` (beyond that they are dropped with a warning), so a hook slower than the
events that start it cannot fork the machine to death.
"""

from __future__ import annotations

import collections
import os
from typing import Any, Deque

from twisted.internet import protocol
from twisted.logger import Logger
from twisted.python.failure import Failure

log = Logger()

#: Commands running at once, and commands waiting for a free slot.
MAX_RUNNING = 16
MAX_QUEUED = 1000
#: Core's SAFE_CHARS_DEFAULT: what SanitizeString keeps of an alert's message.
SAFE_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789 .,;-_/:?@()")
#: Output kept for the log, per stream.
MAX_OUTPUT = 4096


def shell_escape(text: str) -> str:
    """Core's ShellEscape: one single-quoted shell word."""
    return "'" + text.replace("'", "'\"'\"'") + "'"


def block_command(command: str, block_hash_hex: str) -> str:
    """-blocknotify: %s is the new tip's hash."""
    return command.replace("%s", block_hash_hex)


def wallet_command(command: str, txid_hex: str, wallet_name: str) -> str:
    """-walletnotify: %s is the txid, %w the wallet's name shell-quoted (Core 0.21)."""
    return command.replace("%s", txid_hex).replace("%w", shell_escape(wallet_name))


def alert_command(command: str, message: str) -> str:
    """-alertnotify: %s is the message, reduced to Core's safe characters and single-quoted,
    so no message can inject shell syntax."""
    return command.replace("%s", "'" + "".join(c for c in message if c in SAFE_CHARS) + "'")


class _HookProcess(protocol.ProcessProtocol):
    def __init__(self, runner: "HookRunner", command: str) -> None:
        self.runner = runner
        self.command = command
        self.output = {1: b"", 2: b""}

    def childDataReceived(self, fd: int, data: bytes) -> None:
        if len(self.output.get(fd, b"")) < MAX_OUTPUT:
            self.output[fd] = (self.output.get(fd, b"") + data)[:MAX_OUTPUT]

    def processEnded(self, reason: Failure) -> None:
        code = getattr(reason.value, "exitCode", None)
        out = self.output[1].decode("utf-8", "replace").strip()
        err = self.output[2].decode("utf-8", "replace").strip()
        if code == 0:
            log.debug("Command {command!r} done; output: {out!r} {err!r}",
                      command=self.command, out=out, err=err)
        else:
            log.warn("Command {command!r} failed ({why}); output: {out!r} {err!r}",
                     command=self.command, why=reason.value, out=out, err=err)
        self.runner._ended()


class HookRunner:
    """Starts shell commands without waiting for them (call :meth:`run` on the reactor
    thread, :meth:`run_from_thread` from any other)."""

    def __init__(self, reactor: Any, max_running: int = MAX_RUNNING,
                 max_queued: int = MAX_QUEUED) -> None:
        self.reactor = reactor
        self.max_running = max_running
        self.max_queued = max_queued
        self.running = 0
        self.waiting: Deque[str] = collections.deque()
        self.stopped = False

    def run_from_thread(self, command: str) -> None:
        self.reactor.callFromThread(self.run, command)

    def run(self, command: str) -> None:
        if self.stopped:
            return
        if self.running >= self.max_running:
            if len(self.waiting) >= self.max_queued:
                log.warn("Command {command!r} dropped: {n} commands waiting already",
                         command=command, n=len(self.waiting))
                return
            self.waiting.append(command)
            return
        self._spawn(command)

    def _spawn(self, command: str) -> None:
        self.running += 1
        try:
            self.reactor.spawnProcess(_HookProcess(self, command), "/bin/sh",
                                      ["/bin/sh", "-c", command], env=dict(os.environ))
        except Exception:
            log.failure("Command {command!r} could not start", command=command)
            self._ended()

    def _ended(self) -> None:
        self.running -= 1
        if self.waiting and not self.stopped:
            self._spawn(self.waiting.popleft())

    def stop(self) -> None:
        """Start nothing more (commands running go on, as Core's free threads do)."""
        self.stopped = True
        self.waiting.clear()
