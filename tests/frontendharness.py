"""Front-end processes (``coind -frontend``) over a writer's data directory, for tests.

    frontend = FrontendProcess.start(writer)     # same datadir, its own RPC port
    frontend.rpc("getblockcount")                # answered from the committed chain
    frontend.stop()

and :func:`children` / :func:`alive` to follow a node's -rpcworkers through /proc.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Callable, List, Optional, Sequence, Tuple

from tests.nodeharness import (
    PASSWORD, ROOT, USER, NodeClient, NodeProcess, _default_sigint, _env, free_port,
)


class FrontendProcess(NodeProcess):
    """``coind -frontend -writer=<writer>`` on the writer's datadir; stderr to its own file."""

    @classmethod
    def start_for(cls, writer: NodeClient, extra_args: Sequence[str] = (),
                  credentials: Optional[Tuple[str, str]] = (USER, PASSWORD),
                  writer_url: Optional[str] = None, wait: bool = True,
                  datadir: Optional[str] = None) -> "FrontendProcess":
        """``datadir``: the front end's own (one on another machine, reading the writer's
        PostgreSQL database); the writer's by default."""
        port = free_port()
        datadir = os.path.abspath(datadir) if datadir else writer.datadir
        os.makedirs(datadir, exist_ok=True)
        args = ["-regtest", "-datadir=%s" % datadir, "-rpcport=%d" % port,
                "-printtoconsole=0", "-frontend",
                "-writer=%s" % (writer_url or "http://127.0.0.1:%d/" % writer.rpcport)]
        if credentials is not None:
            args += ["-rpcuser=%s" % credentials[0], "-rpcpassword=%s" % credentials[1]]
        node = cls(datadir, port, args + list(extra_args), credentials)
        node.launch()
        if wait:
            node.wait_ready()
        return node

    def _stderr_path(self) -> str:
        return os.path.join(self.datadir, "stderr-frontend-%d.txt" % self.rpcport)

    def launch(self) -> None:
        self._stderr = open(self._stderr_path(), "w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "coin.tap"] + self.args, cwd=ROOT, env=_env(),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self._stderr,
            preexec_fn=_default_sigint)

    def stderr_text(self) -> str:
        with open(self._stderr_path()) as f:
            return f.read()

    def wait_ready(self, timeout: float = 60.0) -> None:
        """Until the front end answers a local call (it binds once its chain is loaded)."""
        wait_for(lambda: self._answers(), timeout, "front end ready: " + self.stderr_text())

    def _answers(self) -> bool:
        if self.process.poll() is not None:
            raise RuntimeError("front end exited with %s: %s"
                               % (self.process.returncode, self.stderr_text()))
        try:
            self.rpc("getblockcount")
            return True
        except OSError:
            return False


#: What a front end's REST chaininfo.json (and getblockchaininfo) has that a node's has not.
FRONTEND_MARK = b'"frontend":true'


def wait_for(condition: Callable[[], object], timeout: float = 30.0, what: str = "") -> None:
    """Poll ``condition`` every 20 ms until it is true; AssertionError after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.02)
    raise AssertionError("timed out waiting for %s" % (what or condition))


def wait_for_workers(node: NodeProcess, count: int, current: Callable[[], bool],
                     timeout: float = 60.0) -> None:
    """Until ``node`` runs ``count`` -rpcworkers, one of them answers on the port (its REST
    chaininfo carries the front-end mark) and 50 fresh connections in a row (spread over
    every process on the port) see ``current()`` hold."""
    if not count:
        return
    wait_for(lambda: len(children(node.process.pid)) >= count, timeout, "-rpcworkers")
    wait_for(lambda: _try(lambda: FRONTEND_MARK in node.post(
        b"", path="/rest/chaininfo.json", method="GET", auth=False)[2]), timeout,
        "an answer from a worker")
    wait_for(lambda: all(_try(current) for _ in range(50)), timeout, "workers current")


def _try(condition: Callable[[], bool]) -> bool:
    try:
        return bool(condition())
    except (OSError, ValueError):
        return False


def alive(pid: int) -> bool:
    """Whether ``pid`` is a running process (a zombie counts as gone)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def children(pid: int) -> List[int]:
    """Pids of the live child processes of ``pid``."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open("/proc/%s/stat" % name) as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                found.append(int(name))
    return sorted(found)
