"""Start-up the Twisted way: pure configuration, a service tree that opens nothing until it
starts, listeners as child services, and a shutdown that releases everything."""

from __future__ import annotations

import base64
import fcntl
import io
import json
import os
import socket
import sys
import threading
from typing import Any, List, Tuple

from twisted.internet import reactor
from twisted.internet.address import IPv4Address
from twisted.internet.error import CannotListenError
from twisted.internet.protocol import Factory
from twisted.internet.defer import inlineCallbacks
from twisted.internet.task import deferLater
from twisted.internet.testing import MemoryReactor
from twisted.python.threadpool import ThreadPool
from twisted.trial.unittest import SynchronousTestCase, TestCase
from twisted.web.client import Agent, FileBodyProducer, readBody
from twisted.web.http_headers import Headers

from coin.config import Config, ConfigError
from coin.config.node import NodeConfig, node_options
from coin.primitives.hashes import hash_to_hex
from coin.service import NodeService, P2PListeners, RPCListeners, StartupError
from coin.tap import Options, load_config, makeService
from tests.inprocess import node_config
from tests.nodeharness import free_port
from tests.functional.test_daemon import run_coind


def parsed(*argv: str, home: str = "/nonexistent-home") -> Config:
    """Options as coind reads them, without coin.conf (``-noconf``) and with ``home`` as $HOME."""
    config = Config(node_options(), environ={"HOME": home})
    config.parse_command_line(["-noconf"] + list(argv))
    config.read_config_files()
    return config


def open_paths(prefix: str) -> list:
    """Files under ``prefix`` this process has open."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink("/proc/self/fd/" + fd)
        except OSError:
            continue
        if target.startswith(prefix):
            found.append(target)
    return found


def keep_umask(test: SynchronousTestCase) -> None:
    """makeService sets coind's umask 077; give the test process its own back afterwards."""
    old = os.umask(0)
    os.umask(old)
    test.addCleanup(os.umask, old)


class NodeConfigTests(SynchronousTestCase):
    def test_from_config_reads_settings_without_a_datadir(self) -> None:
        home = os.path.abspath(self.mktemp())
        settings = NodeConfig.from_config(parsed("-regtest", "-wallet=a", "-wallet=a",
                                                 "-wallet=b", "-nodebuglogfile", home=home))
        self.assertEqual(settings.network, "regtest")
        self.assertEqual(settings.datadir, os.path.join(home, ".coin", "regtest"))
        self.assertEqual(settings.pid_file, os.path.join(home, ".coin", "regtest", "coind.pid"))
        self.assertIsNone(settings.debug_log)
        self.assertEqual(settings.wallets, ("a", "b"))
        self.assertEqual(settings.rpc_port, 31931)
        self.assertFalse(os.path.exists(home))

    def test_rpcport_zero_asks_for_a_free_port(self) -> None:
        self.assertEqual(NodeConfig.from_config(parsed("-regtest", "-rpcport=0")).rpc_port, 0)

    def test_refused_settings_carry_cores_text(self) -> None:
        for argv, message in [
                (("-txindex", "-prune=1"), "Error: Prune mode is incompatible with -txindex."),
                (("-rpcservertimeout=0",), "Error: -rpcservertimeout must be at least 1"),
                (("-rpcmaxconnections=0",), "Error: -rpcmaxconnections must be at least 1")]:
            with self.assertRaises(ConfigError) as caught:
                NodeConfig.from_config(parsed("-regtest", *argv))
            self.assertEqual(str(caught.exception), message)


class MakeServiceTests(SynchronousTestCase):
    def test_make_service_opens_and_creates_nothing(self) -> None:
        keep_umask(self)
        datadir = os.path.abspath(self.mktemp())
        # The network datadir exists: files a service would create there (masternode.conf,
        # wallets/) are seen.
        os.makedirs(os.path.join(datadir, "regtest"))
        options = Options()
        options.parseOptions(["-regtest", "-datadir=" + datadir, "-printtoconsole=0",
                              "-txindex"])
        node = makeService(options)
        self.assertIsInstance(node, NodeService)
        self.assertEqual(os.listdir(datadir), ["regtest"])
        self.assertEqual(os.listdir(os.path.join(datadir, "regtest")), [])
        self.assertEqual(open_paths(datadir), [])
        self.assertEqual([child.name for child in node],
                         ["notify", "validation", "txindex", "mempool", "p2p", "masternodes",
                          "governance", "wallets", None, None])

    def test_a_refused_setting_stops_make_service(self) -> None:
        keep_umask(self)
        options = Options()
        options.parseOptions(["-regtest", "-debug=nosuchcategory"])
        stderr = io.StringIO()
        self.patch(sys, "stderr", stderr)
        with self.assertRaises(SystemExit) as caught:
            makeService(options)
        self.assertEqual(caught.exception.code, 1)
        self.assertEqual(stderr.getvalue(),
                         "Error: Unsupported logging category -debug=nosuchcategory.\n")

    def test_help_prints_the_options_heading_once(self) -> None:
        out = io.StringIO()
        self.assertIsNone(load_config(["-help"], out=out))
        self.assertEqual(out.getvalue().count("Options:"), 1)
        self.assertIn("Start Coin daemon\n\nOptions:\n\n  -?\n", out.getvalue())


def in_process_node(case: TestCase, *argv: str, threadpool: Any = None) -> NodeService:
    """A regtest node for this process's reactor, on loopback ports chosen at bind time."""
    datadir = os.path.abspath(case.mktemp())
    os.makedirs(datadir)
    config = node_config(datadir, ("-rpcbind=127.0.0.1", "-rpcallowip=127.0.0.1") + argv, ("u", "p"))
    return NodeService(NodeConfig.from_config(config), reactor, threadpool=threadpool)


class InProcessStartStopTests(TestCase):
    """The service tree on the test's reactor: port 0 read back, files released at stop."""

    def node(self, *argv: str) -> NodeService:
        return in_process_node(self, *argv)

    def assert_released(self, node: NodeService) -> None:
        """No file of the datadir open, the lock free, the pid file gone."""
        self.assertEqual(open_paths(node.datadir), [])
        with open(os.path.join(node.datadir, ".lock"), "a") as f:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        self.assertFalse(os.path.exists(node.settings.pid_file))

    @inlineCallbacks
    def test_start_and_stop_release_everything(self) -> None:
        node = self.node("-disablewallet")
        node.privilegedStartService()
        self.assertIn(os.path.join(node.datadir, "chainstate.sqlite"), open_paths(node.datadir))
        [(host, rpc_port)] = node.rpc_listeners.addresses
        [(_, p2p_port)] = node.p2p_listeners.addresses
        self.assertEqual(host, "127.0.0.1")
        self.assertNotIn(0, (rpc_port, p2p_port))
        with open(node.settings.pid_file) as f:
            self.assertEqual(int(f.read()), os.getpid())
        node.startService()
        yield node.validation.ready
        yield node.stopService()
        self.assert_released(node)
        for port in (rpc_port, p2p_port):
            with socket.socket() as s:
                s.bind(("127.0.0.1", port))  # closed: free again

    @inlineCallbacks
    def test_a_failed_start_releases_what_it_opened(self) -> None:
        busy = socket.socket()
        self.addCleanup(busy.close)
        busy.bind(("127.0.0.1", free_port()))
        busy.listen()
        busy_port = busy.getsockname()[1]
        node = self.node("-bind=127.0.0.1:%d" % busy_port, "-rpccookiefile=cookie",
                         "-rpcpassword=")
        with self.assertRaises(StartupError) as caught:
            node.privilegedStartService()
        self.assertEqual(str(caught.exception), "Unable to bind to 127.0.0.1:%d on this "
                         "computer. Coin is probably already running." % busy_port)
        self.assert_released(node)
        self.assertFalse(os.path.exists(os.path.join(node.datadir, "cookie")))
        [(_, rpc_port)] = node.rpc_listeners.addresses
        yield deferLater(reactor, 0, lambda: None)  # sockets close on the next turn
        with socket.socket() as s:
            s.bind(("127.0.0.1", rpc_port))


class RecordingPool(ThreadPool):
    """A pool of its own that notes which function ran on which of its threads."""

    def __init__(self) -> None:
        super().__init__(minthreads=0, maxthreads=2, name="injected")
        self.ran: List[Tuple[str, str]] = []

    def callInThreadWithCallback(self, onResult: Any, func: Any, *args: Any, **kw: Any) -> None:
        def noted(*a: Any, **k: Any) -> Any:
            self.ran.append((func.__name__, threading.current_thread().name))
            return func(*a, **k)
        super().callInThreadWithCallback(onResult, noted, *args, **kw)


class InjectedThreadPoolTests(TestCase):
    """A node built with its own pool runs its blocking reads there, not on the reactor's."""

    @inlineCallbacks
    def rpc(self, port: int, method: str, *params: Any) -> Any:
        body = json.dumps({"id": 1, "method": method, "params": list(params)}).encode()
        auth = b"Basic " + base64.b64encode(b"u:p")
        response = yield Agent(reactor).request(
            b"POST", b"http://127.0.0.1:%d/" % port, Headers({b"Authorization": [auth]}),
            FileBodyProducer(io.BytesIO(body)))
        reply = json.loads((yield readBody(response)))
        self.assertIsNone(reply["error"])
        return reply["result"]

    @inlineCallbacks
    def started(self, *argv: str) -> Any:
        """``(node, pool, rpc port)``: a node on a fresh RecordingPool, warmed up."""
        pool = RecordingPool()
        pool.start()
        self.addCleanup(pool.stop)
        node = in_process_node(self, *argv, threadpool=pool)
        node.privilegedStartService()
        node.startService()
        self.addCleanup(lambda: node.stopService() if node.running else None)
        yield node.validation.ready
        for _ in range(1000):  # wallets load after the chain; RPC answers -28 until then
            if node.warmup.message is None:
                break
            yield deferLater(reactor, 0.01, lambda: None)
        [(_, port)] = node.rpc_listeners.addresses
        return node, pool, port

    def assert_ran_on(self, pool: RecordingPool, *functions: str) -> None:
        for name in functions:
            self.assertIn(name, [ran for ran, _ in pool.ran])
        self.assertTrue(all(thread.startswith("PoolThread-injected-") for _, thread in pool.ran),
                        pool.ran)

    @inlineCallbacks
    def test_chain_reads_run_on_the_injected_pool(self) -> None:
        node, pool, port = yield self.started("-disablewallet")
        genesis = hash_to_hex(node.params.genesis.hash)
        block = yield self.rpc(port, "getblock", genesis, 2)
        self.assertEqual(block["hash"], genesis)
        info = yield self.rpc(port, "gettxoutsetinfo")
        self.assertEqual(info["bestblock"], genesis)
        yield node.stopService()
        self.assert_ran_on(pool, "read_block", "utxo_set_stats")

    @inlineCallbacks
    def test_slow_wallet_work_runs_on_the_injected_pool(self) -> None:
        node, pool, port = yield self.started()
        reply = yield self.rpc(port, "encryptwallet", "secret")
        self.assertIn("wallet encrypted", reply)
        yield node.stopService()
        self.assert_ran_on(pool, "_locked_call")


class _Port:
    def __init__(self, host: str, port: int) -> None:
        self.host, self.port, self.stopped = host, port or 40000, False

    def getHost(self) -> IPv4Address:
        return IPv4Address("TCP", self.host, self.port)

    def stopListening(self) -> None:
        self.stopped = True


class RefusingReactor(MemoryReactor):
    """Binds every interface except those in ``refused`` (CannotListenError, as a port in use)."""

    def __init__(self, *refused: str) -> None:
        super().__init__()
        self.refused = set(refused)
        self.ports: list = []

    def listenTCP(self, port: int, factory: Any, backlog: int = 50, interface: str = "") -> _Port:
        if interface in self.refused:
            raise CannotListenError(interface, port, OSError(98, "Address already in use"))
        self.ports.append(_Port(interface, port))
        return self.ports[-1]


class ListenerGroupTests(SynchronousTestCase):
    """Core's binding rules, per server, on a reactor that refuses some addresses."""

    def test_p2p_defaults_need_one_socket(self) -> None:
        reactor = RefusingReactor("::")
        group = P2PListeners(reactor, Factory(), [("::", 0), ("0.0.0.0", 0)], explicit=False)
        group.privilegedStartService()
        self.assertEqual(group.addresses, [("0.0.0.0", 40000)])
        both = P2PListeners(RefusingReactor("::", "0.0.0.0"), Factory(),
                            [("::", 1), ("0.0.0.0", 1)], explicit=False)
        with self.assertRaises(StartupError) as caught:
            both.privilegedStartService()
        self.assertEqual(str(caught.exception),
                         "Failed to listen on any port. Use -listen=0 if you want this.")

    def test_p2p_bind_addresses_must_all_bind(self) -> None:
        reactor = RefusingReactor("127.0.0.2")
        group = P2PListeners(reactor, Factory(), [("127.0.0.1", 5), ("127.0.0.2", 6)],
                             explicit=True)
        with self.assertRaises(StartupError) as caught:
            group.privilegedStartService()
        self.assertEqual(str(caught.exception), "Unable to bind to 127.0.0.2:6 on this "
                         "computer. Coin is probably already running.")
        self.assertEqual([p.stopped for p in reactor.ports], [True])  # the first is closed

    def test_rpc_needs_one_address(self) -> None:
        group = RPCListeners(RefusingReactor("::1"), Factory(), [("127.0.0.1", 7), ("::1", 7)])
        group.privilegedStartService()
        self.assertEqual(group.addresses, [("127.0.0.1", 7)])
        none = RPCListeners(RefusingReactor("127.0.0.1"), Factory(), [("127.0.0.1", 7)])
        with self.assertRaises(StartupError) as caught:
            none.privilegedStartService()
        self.assertEqual(str(caught.exception),
                         "Unable to start HTTP server. See debug log for details.")

    def test_closing_twice_stops_each_port_once(self) -> None:
        reactor = RefusingReactor()
        group = RPCListeners(reactor, Factory(), [("127.0.0.1", 7)])
        group.privilegedStartService()
        calls = []
        reactor.ports[0].stopListening = lambda: calls.append(1)
        group.close()
        group.close()
        self.assertEqual(calls, [1])


class DaemonRefusalTests(SynchronousTestCase):
    def test_daemon_refuses_a_bad_setting_before_detaching(self) -> None:
        """As Core: settings are checked before the fork, so the error reaches the terminal."""
        datadir = os.path.abspath(self.mktemp())
        os.makedirs(datadir)
        result = run_coind("-regtest", "-datadir=" + datadir, "-daemon", "-rpcservertimeout=0")
        self.assertEqual((result.returncode, result.stdout, result.stderr),
                         (1, "", "Error: -rpcservertimeout must be at least 1\n"))
        self.assertEqual(os.listdir(datadir), [])
