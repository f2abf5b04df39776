"""Script checks on every core (``-par``): a pool of worker processes, one block at a time.

coincurve holds the GIL, so Core's script-check threads become processes here
(coin.chain.scriptworker).  They are started with ``subprocess`` from the node
and spoken to over pipes with length-prefixed pickle frames; the pool is used
synchronously on the validation thread, which already runs block connect off the
reactor, so waiting for a worker never blocks the reactor.

A block's checks (:class:`ScriptChecks`) are cut into batches of about
:data:`BATCH_INPUTS` inputs as the connect loop finds them; the workers get the
oldest batches while the loop goes on, and when the loop is done the validation
thread checks the newest batches itself until none are left, then takes back
("steals") the batches a worker holds but has not started, so that nobody waits
for a worker's backlog at the end of a block.  Every batch reports its first
failure; the block fails with the lowest (transaction, input), the one the
single-process path finds, whatever order the answers arrive in.  A worker that
dies loses nothing: its unanswered batches go back to the queue and it is started
again.
"""

from __future__ import annotations

import fcntl
import os
import pickle
import select
import subprocess
import sys
from collections import deque
from typing import Deque, List, Optional, Sequence, Tuple

from twisted.logger import Logger

from coin.chain.scriptcheck import (
    first_script_failure, script_failure_error, verify_transaction_scripts,
)
from coin.chain.scriptworker import BATCH_ID, FRAME, Failure
from coin.consensus.errors import ValidationError
from coin.primitives.coin import Coin
from coin.primitives.transaction import Transaction

log = Logger()

#: Core's MAX_SCRIPTCHECK_THREADS: -par is capped here.
MAX_SCRIPTCHECK_THREADS = 16
#: Inputs per batch: small enough that waiting for a worker's last batch costs little
#: at the end of a block, large enough that a frame's cost is noise next to its
#: signature checks.
BATCH_INPUTS = 50
#: Batches a worker holds at once: one running, the rest waiting in its pipe, enough
#: that it does not run dry while the node is busy elsewhere (applying the block's coins,
#: or descheduled on a loaded machine); the node steals back the waiting ones at the end
#: of the block.
WORKER_DEPTH = 8
#: A worker's stdin pipe is grown to this (Linux: F_SETPIPE_SZ; the default 64 KiB holds
#: about four batches), so that the node seldom waits to write a batch.
PIPE_BYTES = 1 << 20

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
#: The interpreter arguments that run a worker (bench/connect.py --profile runs it under
#: bench/profiled.py).
WORKER_COMMAND = ["-m", "coin.chain.scriptworker"]

#: A batch as the node holds it: (index in the block, tx, spent scripts, flags) each.
Batch = List[Tuple[int, Transaction, Sequence[bytes], int]]


def script_check_threads(par: int, cores: Optional[int] = None) -> int:
    """Core's reading of -par: 0 = one per core, negative = leave that many cores free,
    capped at 16; 1 or less means no workers (the node checks alone)."""
    if par <= 0:
        par += cores if cores is not None else (os.cpu_count() or 1)
    return max(1, min(par, MAX_SCRIPTCHECK_THREADS))


class WorkerLost(Exception):
    """The worker process went away (killed, crashed) in the middle of a batch."""


class _Sent:
    """A batch in a worker's hands; ``stolen`` once the node has taken it back."""

    __slots__ = ("batch_id", "batch", "stolen")

    def __init__(self, batch_id: int, batch: Batch) -> None:
        self.batch_id = batch_id
        self.batch = batch
        self.stolen = False


class _Worker:
    """One worker process and the batches it has not answered yet, oldest first.

    Batches go in on its stdin, answers come back on its stdout in the same order;
    a third pipe carries the ids of batches the node has taken back, which the
    worker skips (answering None) if it has not started them.
    """

    def __init__(self) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_ROOT, env.get("PYTHONPATH")) if p)
        steal_read, self._steal_write = os.pipe()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, *WORKER_COMMAND, str(os.getpid()), str(steal_read)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0, env=env,
                close_fds=True, pass_fds=(steal_read,))
        except BaseException:
            os.close(self._steal_write)
            raise
        finally:
            os.close(steal_read)
        assert self.proc.stdin is not None and self.proc.stdout is not None  # both PIPE
        self._stdin, self._stdout = self.proc.stdin, self.proc.stdout
        if hasattr(fcntl, "F_SETPIPE_SZ"):  # Linux
            try:
                fcntl.fcntl(self._stdin.fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)
            except OSError:
                pass  # above /proc/sys/fs/pipe-max-size: the default pipe works, if slower
        self.outstanding: Deque[_Sent] = deque()
        self._next_id = 0

    @property
    def pid(self) -> int:
        return self.proc.pid

    def fileno(self) -> int:
        return self._stdout.fileno()

    def send(self, batch: Batch) -> None:
        jobs = [(i, tx.serialize(), scripts, flags) for i, tx, scripts, flags in batch]
        payload = pickle.dumps((self._next_id, jobs), pickle.HIGHEST_PROTOCOL)
        self._write(self._stdin.fileno(), FRAME.pack(len(payload)) + payload)
        self.outstanding.append(_Sent(self._next_id, batch))
        self._next_id += 1

    @staticmethod
    def _write(fd: int, data: bytes) -> None:
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(fd, view):]
        except OSError as e:
            raise WorkerLost(str(e)) from None

    def steal(self) -> Optional[Batch]:
        """Take back the newest batch waiting behind at least one other (the oldest one
        is probably running); None if there is none."""
        waiting = [sent for sent in self.outstanding if not sent.stolen]
        if len(waiting) < 2:
            return None
        sent = waiting[-1]
        self._write(self._steal_write, BATCH_ID.pack(sent.batch_id))
        sent.stolen = True
        return sent.batch

    def unanswered(self) -> List[Batch]:
        """The batches it holds that nobody has checked yet."""
        return [sent.batch for sent in self.outstanding if not sent.stolen]

    def _read(self, size: int) -> bytes:
        parts = []
        while size:
            chunk = os.read(self.fileno(), size)
            if not chunk:
                raise WorkerLost("end of file")
            parts.append(chunk)
            size -= len(chunk)
        return b"".join(parts)

    def receive(self) -> Tuple[Optional[Batch], Failure]:
        """The oldest outstanding batch and its answer (blocks until it comes); the batch
        is None if the node took it back (the node's own answer counts)."""
        (length,) = FRAME.unpack(self._read(FRAME.size))
        failure = pickle.loads(self._read(length))
        sent = self.outstanding.popleft()
        return (None if sent.stolen else sent.batch), failure

    def stop(self, timeout: float = 5.0) -> None:
        """Close its stdin (it exits at end of file); kill it if it does not."""
        for stream in (self._stdin, self._stdout):
            stream.close()
        os.close(self._steal_write)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class ScriptCheckPool:
    """``count`` worker processes for block script checks; use from one thread."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.workers: List[_Worker] = []

    def start(self) -> None:
        self.workers = [_Worker() for _ in range(self.count)]
        log.info("Using {n} processes for script verification", n=self.count + 1)

    def stop(self) -> None:
        workers, self.workers = self.workers, []
        for worker in workers:
            worker.stop()

    def _replace(self, worker: _Worker, queue: Deque[Batch], why: str) -> None:
        """Give ``worker``'s unanswered batches back to ``queue`` and start a new one."""
        log.warn("Script-check worker {pid} lost ({why}); starting another",
                 pid=worker.pid, why=why)
        queue.extendleft(reversed(worker.unanswered()))
        worker.outstanding.clear()
        worker.proc.kill()
        worker.stop()
        self.workers[self.workers.index(worker)] = _Worker()

    def ensure_running(self) -> None:
        """Start a new worker in place of any that exited (killed, crashed) since last use."""
        for worker in list(self.workers):
            if worker.proc.poll() is not None:
                self._replace(worker, deque(), "exit status %d" % worker.proc.returncode)

    def pump(self, queue: Deque[Batch], failures: List[Tuple[int, int, str, str]],
             wait: bool) -> None:
        """Collect answers (waiting for one if ``wait``), then feed idle workers from the
        front of ``queue``."""
        busy = [w for w in self.workers if w.outstanding]
        if busy:
            ready, _, _ = select.select(busy, [], [], None if wait else 0)
            for worker in ready:
                try:
                    batch, failure = worker.receive()
                except (WorkerLost, EOFError, pickle.UnpicklingError) as e:
                    self._replace(worker, queue, str(e))
                    continue
                if batch is not None and failure is not None:
                    failures.append(_with_txid(batch, failure))
        for worker in list(self.workers):
            while queue and len(worker.outstanding) < WORKER_DEPTH:
                try:
                    worker.send(queue[0])
                except WorkerLost as e:
                    self._replace(worker, queue, str(e))
                    break
                queue.popleft()

    def steal(self, queue: Deque[Batch]) -> Optional[Batch]:
        """A batch some worker holds but has not started, taken back; or None.  A worker
        found dead on the way gives its batches back to ``queue``."""
        for worker in list(self.workers):
            try:
                batch = worker.steal()
            except WorkerLost as e:
                self._replace(worker, queue, str(e))
                return None
            if batch is not None:
                return batch
        return None

    def busy(self) -> bool:
        return any(w.outstanding for w in self.workers)


def _with_txid(batch: Batch, failure: Tuple[int, int, str]) -> Tuple[int, int, str, str]:
    tx_index, input_index, message = failure
    tx = next(tx for i, tx, _, _ in batch if i == tx_index)
    return tx_index, input_index, message, tx.txid_hex


class ScriptChecks:
    """The script checks of one block, as a context manager around its connect loop.

    Without a pool each check runs at once (the single-process path).  With one,
    leaving the block runs every check still pending and raises the lowest failure;
    it replaces a ValidationError the loop raised later in the block, as the
    single-process path would have stopped at the script first.
    """

    def __init__(self, pool: Optional[ScriptCheckPool]) -> None:
        self._pool = pool if pool is not None and pool.workers else None
        if self._pool is not None:
            self._pool.ensure_running()
        self._batch: Batch = []
        self._inputs = 0
        self._queue: Deque[Batch] = deque()
        self._failures: List[Tuple[int, int, str, str]] = []

    def add(self, tx_index: int, tx: Transaction, spent: Sequence[Coin], flags: int) -> None:
        if self._pool is None:
            verify_transaction_scripts(tx, spent, flags)
            return
        self._batch.append((tx_index, tx, [coin.script_pubkey for coin in spent], flags))
        self._inputs += len(tx.vin)
        if self._inputs >= BATCH_INPUTS:
            self._seal()
            self._pool.pump(self._queue, self._failures, wait=False)

    def _seal(self) -> None:
        if self._batch:
            self._queue.append(self._batch)
            self._batch, self._inputs = [], 0

    def _check_here(self, batch: Batch) -> None:
        """Check ``batch`` in this process (finish() looks after the workers between
        batches: a batch's time is well within a worker's backlog)."""
        for tx_index, tx, scripts, flags in batch:
            failure = first_script_failure(tx, scripts, flags)
            if failure is not None:
                self._failures.append((tx_index, failure[0], failure[1], tx.txid_hex))
                return

    def finish(self) -> Optional[ValidationError]:
        """Run every pending check; the lowest failure as Core words it, or None."""
        pool = self._pool
        if pool is None:
            return None
        self._seal()
        while True:
            pool.pump(self._queue, self._failures, wait=False)
            batch = self._queue.pop() if self._queue else pool.steal(self._queue)
            if batch is not None:
                self._check_here(batch)
            elif pool.busy():
                pool.pump(self._queue, self._failures, wait=True)
            else:
                break
        if not self._failures:
            return None
        _, input_index, message, txid_hex = min(self._failures)
        return script_failure_error(txid_hex, input_index, message)

    def raise_failure(self) -> None:
        """Run every pending check; raise the lowest failure (ValidationError)."""
        failure = self.finish()
        if failure is not None:
            raise failure

    def __enter__(self) -> "ScriptChecks":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        failure = self.finish()
        if failure is not None and (exc_type is None or issubclass(exc_type, ValidationError)):
            raise failure from None
