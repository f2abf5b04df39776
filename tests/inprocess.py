"""Nodes run inside the test process, the way Synapse's ``HomeserverTestCase`` runs its server.

A :class:`NodeTestCase` test starts nodes with :meth:`NodeTestCase.start_node`: a real
:class:`~coin.service.NodeService` (real SQLite, real sockets on loopback port 0, its own
thread pool) on this process's reactor, with no process to spawn. The test method itself
runs on a thread of its own while trial runs the reactor, so it talks to the node the way
a user's program does, with blocking clients (``node.rpc``, ``node.post``, ``node.cli``,
raw sockets) that look exactly like :class:`tests.nodeharness.NodeProcess`'s::

    class MyTests(NodeTestCase):
        def test_height(self):
            node = self.start_node(chain=True)      # a copy of the 110-block test chain
            self.assertEqual(node.rpc("getblockcount"), 110)

What needs a process of its own (daemonizing, signals, kill -9, start-up errors that end
the process, several nodes talking P2P) keeps using :class:`~tests.nodeharness.NodeProcess`.
"""

from __future__ import annotations

import functools
import inspect
import os
import threading
from typing import Any, Callable, Optional, Sequence, Tuple, Union

from twisted.internet import reactor
from twisted.internet.defer import Deferred, inlineCallbacks
from twisted.internet.threads import blockingCallFromThread
from twisted.python.failure import Failure
from twisted.python.threadpool import ThreadPool
from twisted.trial.unittest import TestCase

from coin.config import Config
from coin.config.node import NodeConfig, node_options
from coin.rpc.registry import MethodTable, load_plugins
from coin.service import NodeService
from tests.nodeharness import (
    MINER_ADDRESS,
    PASSWORD,
    SHARED_BLOCKS,
    USER,
    NodeClient,
    harness_dbengine_args,
    par_args,
)
from tests.prepared import copy_datadir, prepared_datadir

#: Threads of each node's pool (blocking reads, parses and encodes; see coin.threads).
NODE_THREADS = 4


def node_config(datadir: str, args: Sequence[str], credentials: Optional[Tuple[str, str]]) -> Config:
    """Options as ``coind`` reads them (the datadir's coin.conf, no $HOME), on loopback port 0."""
    argv = ["-regtest", "-datadir=" + datadir, "-printtoconsole=0"]
    if not any(a.startswith("-rpcport=") for a in args):
        argv.append("-rpcport=0")
    if not any(a.startswith(("-port=", "-bind=")) for a in args):
        argv.append("-port=0")
        # -bind turns listening on: only where coind would listen anyway (-connect turns
        # it off unless -listen=1 is given).
        listen = [a for a in args if a.startswith(("-listen", "-nolisten"))]
        connect = any(a.startswith("-connect") for a in args)
        if listen[-1:] in ([], ["-listen=1"], ["-listen"]) and not (connect and not listen):
            argv.append("-bind=127.0.0.1")
    if credentials is not None:
        argv += ["-rpcuser=" + credentials[0], "-rpcpassword=" + credentials[1]]
    argv += harness_dbengine_args(datadir, args)
    config = Config(node_options(), environ={"HOME": datadir})
    config.parse_command_line(argv + list(args) + par_args(args))
    config.read_config_files()
    return config


_builtin_methods: Optional[MethodTable] = None


def builtin_methods() -> MethodTable:
    """The built-in method table, loaded once per process (scanning the installed
    distributions' entry points takes a tenth of a second); nodes never change it."""
    global _builtin_methods
    if _builtin_methods is None:
        _builtin_methods = load_plugins(())
    return _builtin_methods


class InProcessNode(NodeClient):
    """One NodeService on the reactor; blocking methods are for the test's own thread."""

    def __init__(self, datadir: str, args: Sequence[str],
                 credentials: Optional[Tuple[str, str]] = (USER, PASSWORD)) -> None:
        self.datadir = os.path.abspath(datadir)
        self.args = list(args)
        self.credentials = credentials
        self.service: Optional[NodeService] = None
        self._pool: Optional[ThreadPool] = None
        #: Fires when the node stopped after the ``stop`` RPC or a failed start.
        self._stopping: Optional[Deferred] = None
        #: Set while the node is down (before start, after stop): what ``wait`` waits for.
        self._down = threading.Event()
        self._down.set()
        self._ports: Tuple[Optional[int], Optional[int]] = (None, None)
        self._started: Optional[Deferred] = None
        #: What the ``chain`` build of :meth:`NodeTestCase.start_node` returned.
        self.state: Any = None

    # ------------------------------------------------------------ on the reactor

    def start_service(self) -> Deferred:
        """Build, open and start the node; fires once RPC answers (warm-up over).

        Fails with RuntimeError if the node gave up during start-up (its ``exit_code``).
        """
        os.makedirs(self.datadir, exist_ok=True)
        settings = NodeConfig.from_config(node_config(self.datadir, self.args, self.credentials))
        self._pool = ThreadPool(minthreads=0, maxthreads=NODE_THREADS, name="node")
        self._pool.start()
        node = NodeService(settings, reactor, threadpool=self._pool,
                           methods=None if settings.rpc_plugins else builtin_methods(),
                           on_shutdown=self._shutdown_requested)
        self.service = node
        self._stopping = None
        self._down.clear()
        try:
            node.privilegedStartService()
        except BaseException:
            self._pool.stop()
            self._down.set()
            raise
        self._read_ports(node)
        node.startService()
        ended: Deferred = Deferred()
        node.warmup.done.addCallback(lambda _: ended.called or ended.callback(None))
        self._ended = ended
        return ended.addCallback(self._check_started)

    def _check_started(self, _: object) -> "InProcessNode":
        if self.service is None or self.service.exit_code:
            raise RuntimeError("coind gave up during start-up (exit code %s)"
                               % (self.service.exit_code if self.service else "?"))
        return self

    def _read_ports(self, node: NodeService) -> None:
        def ipv4(group: Any) -> Optional[int]:
            addresses = group.addresses if group is not None else []
            return next((port for host, port in addresses if ":" not in host), None)

        self._ports = (ipv4(node.rpc_listeners), ipv4(node.p2p_listeners))

    def _shutdown_requested(self) -> None:
        """The ``stop`` RPC, or start-up giving up: stop as ``coind`` would, then exit."""
        if self._stopping is None:
            self._stopping = self.stop_service()
        if not self._ended.called:
            self._stopping.addCallback(lambda _: self._ended.called or self._ended.callback(None))

    @inlineCallbacks
    def stop_service(self) -> Any:
        """Stop the node (if still running) and its pool; fires when all is released."""
        node, pool = self.service, self._pool
        if node is not None and node.running:
            yield node.stopService()
        if pool is not None and pool.started:
            self._pool = None
            pool.stop()
        self._down.set()

    # ------------------------------------------------------------ from the test's thread

    @property
    def running(self) -> bool:
        return self.service is not None and self.service.running

    @property
    def rpcport(self) -> int:
        """The port of the first loopback IPv4 address RPC listened on at the last start (port 0
        binds each address on a port of its own); kept after a stop, as a process's would be."""
        return self._ports[0]

    @property
    def p2p_port(self) -> Optional[int]:
        return self._ports[1]

    def start(self) -> "InProcessNode":
        """(Re)start the node on its datadir and wait until it answers."""
        self.begin()
        return self.wait_ready()

    def begin(self) -> "InProcessNode":
        """Start the node without waiting for its warm-up (RPC answers -28 meanwhile)."""
        [self._started] = blockingCallFromThread(reactor, lambda: [self.start_service()])
        return self

    def wait_ready(self) -> "InProcessNode":
        """Until the warm-up begun by :meth:`begin` is over; its error if start-up gave up."""
        return blockingCallFromThread(reactor, lambda: self._started)

    def stop(self, timeout: float = 60.0) -> int:
        """Stop the node as the ``stop`` RPC would; returns its exit code.

        RuntimeError if it takes longer than ``timeout`` seconds (the node keeps stopping)."""
        done = threading.Event()

        def stop() -> Deferred:
            stopping = self._stopping if self._stopping is not None else self.stop_service()
            return stopping.addBoth(lambda result: (done.set(), result)[1])

        reactor.callFromThread(stop)
        if not done.wait(timeout):
            raise RuntimeError("the node did not stop within %s s" % timeout)
        blockingCallFromThread(reactor, self.stop_service)  # its pool too, after a stop RPC
        return self.service.exit_code if self.service else 0

    def wait(self, timeout: float = 60.0) -> int:
        """Until the node stopped by itself (``stop`` RPC); returns its exit code."""
        if not self._down.wait(timeout):
            raise RuntimeError("the node did not stop within %s s" % timeout)
        return self.service.exit_code if self.service else 0

    def restart(self, *args: str) -> "InProcessNode":
        """Stop, then start again on the same datadir: with ``args`` instead of the
        previous arguments if any are given, else with the same ones."""
        self.stop()
        if args:
            self.args = list(args)
        return self.start()


# ------------------------------------------------------------------ prepared datadirs

def mine_chain(node: InProcessNode) -> None:
    """The test chain: ``SHARED_BLOCKS`` blocks (at today's times) paying MINER_ADDRESS."""
    node.rpc("generatetoaddress", SHARED_BLOCKS, MINER_ADDRESS)


Build = Callable[[InProcessNode], Any]


def prepared(build: Build, args: Sequence[str]) -> Tuple[str, Any]:
    """``(datadir, state)``: a node started with ``args`` and set up by ``build(node)``, once
    per process; ``state`` is what ``build`` returned. Tests start on copies of it."""

    def run(datadir: str) -> Any:
        node = InProcessNode(datadir, args)
        node.start()
        try:
            return build(node)
        finally:
            node.stop()

    return prepared_datadir((build, tuple(args)), run)


# ------------------------------------------------------------------ the test case

def _on_own_thread(method: Callable[..., Any]) -> Callable[..., Deferred]:
    """``method`` run on a new thread; the Deferred fires with its result in the reactor."""

    @functools.wraps(method)
    def run(*args: Any) -> Deferred:
        done: Deferred = Deferred()

        def fire(outcome: Any, failed: bool) -> None:
            if not done.called:  # trial's timeout may have failed the test already
                (done.errback if failed else done.callback)(outcome)

        def body() -> None:
            try:
                result: Any = method(*args)
            except BaseException:
                reactor.callFromThread(fire, Failure(), True)
            else:
                reactor.callFromThread(fire, result, False)

        threading.Thread(target=body, name="test-" + method.__name__, daemon=True).start()
        return done

    return run


class NodeTestCase(TestCase):
    """Tests whose methods run on their own thread against nodes in this process.

    Nodes started with :meth:`start_node` are stopped after the test. Cleanups run in the
    reactor thread, so a cleanup must not make a blocking call to an in-process node (it
    would wait for the reactor it blocks): undo such state in the test itself, or give
    each test a private node (``chain=``) so there is nothing to undo. Generator tests
    (``inlineCallbacks``) run in the reactor as usual.
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Each plain test method, setUp and tearDown of a subclass runs on its own thread."""
        super().__init_subclass__(**kwargs)
        for name, method in list(vars(cls).items()):
            if (name.startswith("test") or name in ("setUp", "tearDown")) and \
                    inspect.isfunction(method) and not hasattr(method, "__wrapped__") and \
                    not inspect.isgeneratorfunction(method):
                setattr(cls, name, _on_own_thread(method))

    def start_node(self, *args: str, chain: Union[bool, Build] = False,
                   credentials: Optional[Tuple[str, str]] = (USER, PASSWORD),
                   datadir: Optional[str] = None, wait: bool = True) -> InProcessNode:
        """A started node (call it from the test's thread).

        ``chain=True`` starts it on a copy of the 110-block test chain (MINER_ADDRESS holds
        its coinbases); ``chain=build`` on a copy of what ``build(node)`` made of a node
        started with the same ``args`` (once per process), with its result in ``node.state``.
        ``wait=False`` returns once the node listens, still warming up (``node.wait_ready()``).
        """
        datadir = os.path.abspath(datadir or self.mktemp())
        state = None
        if chain:
            source, state = prepared(mine_chain if chain is True else chain, args)
            copy_datadir(source, datadir)
        os.makedirs(datadir, exist_ok=True)
        node = InProcessNode(datadir, args, credentials)
        node.state = state
        self.addCleanup(node.stop_service)
        return node.start() if wait else node.begin()
