"""Real ``coind`` processes for integration tests: free loopback ports, temporary datadirs.

    node = NodeProcess.start(self.mktemp())          # regtest, user u / password p
    node.rpc("getblockcount")                        # raw HTTP JSON-RPC
    node.post(b'{"method":"help"}')                  # (status, headers, body bytes)
    node.cli("getblockhash", "0")                    # coin-cli as a user runs it
    node.stop()

``shared_node()`` is one node per test process with a mined chain, for tests
that only read.
"""

from __future__ import annotations

import atexit
import base64
import fcntl
import http.client
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable, Dict, Hashable, List, Optional, Sequence, Set, Tuple, TypeVar

from coin.chainparams import REGTEST
from coin.primitives.address import Destination, encode_address
from coin.primitives.hashes import hash160
from coin.testing.chainbuilder import deterministic_key

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
USER, PASSWORD = "u", "p"
T = TypeVar("T")


#: Ports tests hand to nodes: below the kernel's ephemeral range (32768+ on Linux), so no
#: ``bind(0)`` or outgoing connection takes one, and clear of the networks' default ports.
TEST_PORTS = range(12000, 21000)
_port_locks: Optional[int] = None
_claimed: Set[int] = set()


def free_port() -> int:
    """A loopback port that is free now and that no other test process will be given.

    Binding port 0 and closing hands out a number another trial worker (``trial -j``) or
    another test run can get too. Here each port is claimed with a lock on its byte of one
    file in the temp directory, held until this process exits.
    """
    global _port_locks
    if _port_locks is None:
        _port_locks = os.open(os.path.join(tempfile.gettempdir(), "coin-test-ports.lock"),
                              os.O_RDWR | os.O_CREAT, 0o666)
    offset = random.randrange(len(TEST_PORTS))
    for i in range(len(TEST_PORTS)):
        port = TEST_PORTS[(offset + i) % len(TEST_PORTS)]
        if port in _claimed:
            continue
        try:
            fcntl.lockf(_port_locks, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, port)
        except OSError:
            continue
        _claimed.add(port)
        if _bindable(port):
            return port
    raise RuntimeError("no free test port in %d-%d" % (TEST_PORTS[0], TEST_PORTS[-1]))


def _bindable(port: int) -> bool:
    """Whether nothing (a node started by hand, another program) listens on ``port``."""
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def harness_dbengine_args(datadir: str, extra_args: Sequence[str]) -> List[str]:
    """``-dbengine`` of the datadir's database when ``COIN_TEST_DBENGINE=postgresql``.

    Lets whole functional modules run on the PostgreSQL engine; a node given its own
    ``-dbengine`` keeps it.  A datadir keeps its database across restarts.
    """
    if os.environ.get("COIN_TEST_DBENGINE", "sqlite") == "sqlite" or \
            any(a.startswith("-dbengine=") for a in extra_args):
        return []
    if os.environ["COIN_TEST_DBENGINE"] != "postgresql":
        raise RuntimeError("COIN_TEST_DBENGINE must be sqlite or postgresql")
    from tests import pgserver
    return ["-dbengine=%s" % pgserver.database_for(datadir)]


#: Where children keep their compiled modules when $PYTHONDONTWRITEBYTECODE forbids
#: ``__pycache__`` in the tree (see :func:`_env`).
PYCACHE = os.path.join(tempfile.gettempdir(), "coin-test-pycache-%d" % os.getuid())


def _env() -> Dict[str, str]:
    """The environment of the processes tests start: this repository first on the path.

    With $PYTHONDONTWRITEBYTECODE set, every ``coind``, coin-qt and coin-cli would compile
    the whole node from source again (a fifth of a start's CPU time); they write and read
    their bytecode under :data:`PYCACHE` instead, which leaves the tree as clean.
    """
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    if env.pop("PYTHONDONTWRITEBYTECODE", None) and "PYTHONPYCACHEPREFIX" not in env:
        env["PYTHONPYCACHEPREFIX"] = PYCACHE
    return env


def par_args(args: Sequence[str]) -> List[str]:
    """``-par`` from $COIN_TEST_PAR unless ``args`` set it: ``COIN_TEST_PAR=1 trial ...``
    runs a suite with the node checking scripts alone, ``=2`` with one worker process."""
    par = os.environ.get("COIN_TEST_PAR")
    if not par or any(a.startswith(("-par", "-nopar")) for a in args):
        return []
    return ["-par=%s" % par]


def _default_sigint() -> None:
    """In the child: SIGINT back to its default disposition.

    A shell starts background jobs with SIGINT ignored, and an ignored signal stays ignored
    across exec, so a node launched from a backgrounded test run would never see SIGINT.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class RPCFailure(Exception):
    def __init__(self, status: int, code: int, message: str) -> None:
        super().__init__("HTTP %d, error %d: %s" % (status, code, message))
        self.status = status
        self.code = code
        self.message = message


class NodeClient:
    """What a user's program does with a node: raw HTTP, JSON-RPC and coin-cli.

    Needs ``datadir``, ``rpcport`` and ``credentials`` (None: the cookie file).
    """

    datadir: str
    credentials: Optional[Tuple[str, str]]

    @property
    def rpcport(self) -> int:
        raise NotImplementedError

    @property
    def net_datadir(self) -> str:
        return os.path.join(self.datadir, "regtest")

    def _authorization(self) -> str:
        if self.credentials is not None:
            user, password = self.credentials
        else:
            with open(os.path.join(self.net_datadir, ".cookie")) as f:
                user, _, password = f.read().strip().partition(":")
        return "Basic " + base64.b64encode(("%s:%s" % (user, password)).encode()).decode()

    def post(self, body: bytes, path: str = "/", headers: Optional[Dict[str, str]] = None,
             auth: bool = True, method: str = "POST",
             timeout: float = 60.0) -> Tuple[int, Dict[str, str], bytes]:
        """One raw HTTP request; returns status, headers (lower-case names) and body."""
        conn = http.client.HTTPConnection("127.0.0.1", self.rpcport, timeout=timeout)
        try:
            h = {"Content-Type": "text/plain"}
            if auth:
                h["Authorization"] = self._authorization()
            h.update(headers or {})
            conn.request(method, path, body=body, headers=h)
            response = conn.getresponse()
            return (response.status, {k.lower(): v for k, v in response.getheaders()},
                    response.read())
        finally:
            conn.close()

    def rpc(self, method: str, *params: Any, path: str = "/", **named: Any) -> Any:
        payload = {"method": method, "params": named if named else list(params), "id": 1}
        status, _, body = self.post(json.dumps(payload).encode(), path=path)
        reply = json.loads(body)
        if reply.get("error"):
            raise RPCFailure(status, reply["error"]["code"], reply["error"]["message"])
        return reply["result"]

    def cli(self, *args: str, stdin: Optional[str] = None,
            auth: bool = True) -> subprocess.CompletedProcess:
        """Run coin-cli against this node; returns the completed process (text)."""
        base = ["-regtest", "-datadir=%s" % self.datadir, "-rpcport=%d" % self.rpcport]
        if auth and self.credentials is not None:
            base += ["-rpcuser=%s" % self.credentials[0], "-rpcpassword=%s" % self.credentials[1]]
        return subprocess.run([sys.executable, "-m", "coincli"] + base + list(args),
                              input=stdin, capture_output=True, text=True, cwd=ROOT,
                              env=_env(), timeout=120)


class NodeProcess(NodeClient):
    """A ``coind -regtest`` child process and ways to talk to it."""

    #: The interpreter arguments that run coind (a benchmark may wrap it, see bench/sync.py).
    launcher: Sequence[str] = ("-m", "coin.tap")

    def __init__(self, datadir: str, rpcport: int, args: Sequence[str],
                 credentials: Optional[Tuple[str, str]]) -> None:
        self.datadir = os.path.abspath(datadir)
        self._rpcport = rpcport
        self.args = list(args)
        self.credentials = credentials
        self.process: Optional[subprocess.Popen] = None

    @property
    def rpcport(self) -> int:
        return self._rpcport

    @classmethod
    def start(cls, datadir: str, extra_args: Sequence[str] = (),
              credentials: Optional[Tuple[str, str]] = (USER, PASSWORD),
              wait: bool = True) -> "NodeProcess":
        """Start a node; with ``credentials=None`` it uses cookie authentication."""
        os.makedirs(datadir, exist_ok=True)
        port = free_port()
        args = ["-regtest", "-datadir=%s" % os.path.abspath(datadir), "-rpcport=%d" % port,
                "-printtoconsole=0"]
        if not any(a.startswith("-port=") for a in extra_args):
            # P2P listens by default: never on the shared default port in tests.
            args.append("-port=%d" % free_port())
        if credentials is not None:
            args += ["-rpcuser=%s" % credentials[0], "-rpcpassword=%s" % credentials[1]]
        args += par_args(extra_args)
        args += harness_dbengine_args(datadir, extra_args)
        node = cls(datadir, port, args + list(extra_args), credentials)
        node.launch()
        if wait:
            try:
                node.wait_ready()
            except BaseException:
                node.kill()  # the caller never gets the node to clean up: no orphan
                raise
        return node

    def launch(self) -> None:
        self._stderr = open(os.path.join(self.datadir, "stderr.txt"), "w")
        self.process = subprocess.Popen(
            [sys.executable, *self.launcher] + self.args, cwd=ROOT, env=_env(),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self._stderr,
            preexec_fn=_default_sigint)

    def stderr_text(self) -> str:
        with open(os.path.join(self.datadir, "stderr.txt")) as f:
            return f.read()

    @property
    def p2p_port(self) -> Optional[int]:
        """The -port this node was started with, if any."""
        for arg in reversed(self.args):
            if arg.startswith("-port="):
                return int(arg[len("-port="):])
        return None

    def wait_ready(self, timeout: float = 120.0) -> None:
        """Until RPC answers and the node is past warm-up (-28).

        Polled every 20 ms: a refused connection or a -28 costs the node next to nothing,
        and a start waits 10 ms for the poll on average instead of 50."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError("coind exited with %s: %s"
                                   % (self.process.returncode, self.stderr_text()))
            try:
                self.rpc("uptime")
                return
            except (OSError, RPCFailure):
                time.sleep(0.02)
        raise RuntimeError("coind did not become ready: %s" % self.stderr_text())

    def stop(self, timeout: float = 60.0) -> int:
        """``stop`` over RPC, then wait for the process to exit; returns its status."""
        if self.process is None or self.process.poll() is not None:
            return self.process.returncode if self.process else 0
        try:
            self.rpc("stop")
        except (OSError, ValueError, RPCFailure):
            self.process.send_signal(signal.SIGTERM)
        return self.wait(timeout)

    def wait(self, timeout: float = 60.0) -> int:
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()


#: A regtest P2PKH address the shared node mines to (key: sha256("coin test chain")).
MINER_ADDRESS = encode_address(
    Destination("pubkeyhash", hash160(deterministic_key("coin test chain").public_key.format())),
    REGTEST)

#: Blocks mined on the shared node before tests use it.
SHARED_BLOCKS = 110

_fixtures: Dict[Hashable, Any] = {}


def shared_fixture(key: Hashable, start: Callable[[], T], stop: Callable[[T], Any]) -> T:
    """What ``start()`` returned, started once per test process for ``key``; ``stop(it)``
    runs at exit.

    For processes that the tests of a class or module only read from: a process start
    costs a second of CPU, a test that reads a few answers milliseconds. Tests must leave
    what they share as they found it.
    """
    if key not in _fixtures:
        fixture = start()
        atexit.register(stop, fixture)
        _fixtures[key] = fixture
    return _fixtures[key]


def _start_shared_node() -> NodeProcess:
    node = NodeProcess.start(tempfile.mkdtemp(prefix="coin-shared-"))
    node.rpc("generatetoaddress", SHARED_BLOCKS, MINER_ADDRESS)
    return node


def shared_node() -> NodeProcess:
    """One node per test process with ``SHARED_BLOCKS`` mined; stopped at exit.

    Tests must not change its chain (no invalidateblock, no mining): start a
    private node for that.
    """
    return shared_fixture(shared_node, _start_shared_node, NodeProcess.stop)

