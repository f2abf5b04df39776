"""``-rpcworkers``: front-end processes a node runs on its own RPC port(s).

The node (the writer) starts them once its chain is loaded, restarts one that dies, and
stops them when it stops.  Each is ``coind -frontend`` with the node's own arguments, the
node's first RPC address as ``-writer`` and an internal credential in the environment.
A worker asks the kernel to send it SIGTERM when its parent dies (PR_SET_PDEATHSIG), so
``kill -9`` of the node leaves no worker behind.
"""

from __future__ import annotations

import ctypes
import os
import secrets
import signal
import sys
from typing import Any, Callable, Dict, List, Sequence, Tuple

from twisted.application import service
from twisted.internet.defer import Deferred, DeferredList
from twisted.internet.error import ProcessExitedAlready
from twisted.internet.protocol import ProcessProtocol
from twisted.logger import Logger
from twisted.python.failure import Failure

import coin
from coin.frontend.forward import WRITER_AUTH_ENV

log = Logger()

#: The environment variable naming the pid of the node a worker belongs to.
WORKER_OF_ENV = "COIN_WORKER_OF"
#: The user name of the internal credential workers forward calls with.
WORKER_USER = "__worker__"
#: Seconds before a dead worker is started again (a crash loop costs one start a second).
RESTART_DELAY = 1.0
#: Seconds a worker has to exit after SIGTERM at shutdown before it is killed.
STOP_TIMEOUT = 10.0
_PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int) -> None:
    """Have the kernel SIGTERM this process when ``parent`` exits (Linux); exit now if it
    already has (the signal is only sent for a death after the call)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        log.warn("PR_SET_PDEATHSIG is not available: this worker may outlive its node")
    if os.getppid() != parent:
        os._exit(0)


class _Worker(ProcessProtocol):
    """One worker process; what it writes on stderr goes to the node's log."""

    def __init__(self, pool: "WorkerPool", slot: int) -> None:
        self.pool = pool
        self.slot = slot
        self.ended: Deferred = Deferred()
        self._partial = b""

    def errReceived(self, data: bytes) -> None:
        *lines, self._partial = (self._partial + data).split(b"\n")
        for line in lines:
            log.warn("RPC worker {slot}: {line}", slot=self.slot,
                     line=line.decode("utf-8", "replace"))

    def processEnded(self, reason: Failure) -> None:
        self.ended.callback(None)
        self.pool.ended(self, reason)


class WorkerPool(service.Service):
    """Runs ``count`` front-end workers of this node (see the module docstring):
    ``arguments()`` gives their command line, ``writer_address()`` the node's RPC address."""

    name = "rpc-workers"

    def __init__(self, reactor: Any, count: int, arguments: Callable[[], Sequence[str]],
                 writer_address: Callable[[], Tuple[str, int]],
                 add_credential: Callable[[str, str], None]) -> None:
        self._reactor = reactor
        self.count = count
        self._arguments = arguments
        self._writer_address = writer_address
        self._add_credential = add_credential
        self._env: Dict[str, str] = {}
        #: The live workers by slot.
        self.workers: Dict[int, _Worker] = {}
        self._launched = False

    def launch(self) -> None:
        """Start the workers (the node calls this once its chain is loaded)."""
        if not self.running or self._launched:
            return
        self._launched = True
        token = secrets.token_hex(32)
        self._add_credential(WORKER_USER, token)
        # The workers import the node's own copy of the code, wherever the cwd is.
        source = os.path.dirname(os.path.dirname(os.path.abspath(coin.__file__)))
        path = os.pathsep.join(filter(None, [source, os.environ.get("PYTHONPATH")]))
        self._env = dict(os.environ, **{WRITER_AUTH_ENV: "%s:%s" % (WORKER_USER, token),
                                        WORKER_OF_ENV: str(os.getpid()), "PYTHONPATH": path})
        for slot in range(self.count):
            self._spawn(slot)

    def _command(self) -> List[str]:
        host, port = self._writer_address()
        if ":" in host:
            host = "[%s]" % host
        return [sys.executable, "-m", "coin.tap", *self._arguments(), "-frontend", "-rpcworkers=0",
                "-daemon=0", "-printtoconsole=0", "-writer=http://%s:%d/" % (host, port)]

    def _spawn(self, slot: int) -> None:
        if not self.running:
            return
        worker = _Worker(self, slot)
        command = self._command()
        self._reactor.spawnProcess(worker, command[0], command, env=self._env,
                                   childFDs={0: "w", 1: "r", 2: "r"})
        self.workers[slot] = worker
        log.info("Started RPC worker {slot} (pid {pid})", slot=slot, pid=worker.transport.pid)

    def ended(self, worker: _Worker, reason: Failure) -> None:
        if self.workers.get(worker.slot) is worker:
            del self.workers[worker.slot]
        if self.running:
            log.warn("RPC worker {slot} exited ({reason}); starting it again",
                     slot=worker.slot, reason=reason.getErrorMessage())
            self._reactor.callLater(RESTART_DELAY, self._spawn, worker.slot)

    def pids(self) -> List[int]:
        return [w.transport.pid for w in self.workers.values() if w.transport.pid]

    def stopService(self) -> Deferred:
        """SIGTERM every worker; Fires when all have exited (SIGKILL after STOP_TIMEOUT)."""
        super().stopService()
        workers = list(self.workers.values())
        for worker in workers:
            self._signal(worker, "TERM")
        kill = self._reactor.callLater(
            STOP_TIMEOUT, lambda: [self._signal(w, "KILL") for w in workers])
        done = DeferredList([w.ended for w in workers])

        def finished(result: Any) -> Any:
            if kill.active():
                kill.cancel()
            return result
        return done.addBoth(finished)

    @staticmethod
    def _signal(worker: _Worker, name: str) -> None:
        try:
            worker.transport.signalProcess(name)
        except ProcessExitedAlready:
            pass
