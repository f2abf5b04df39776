"""coind as a user runs it: start, stop, signals, arguments, cookie (twistd: test_twistd;
plugins: test_integration_plugin).

Real ``coind`` processes, as these are about the process: its pid, signals, exit status,
stderr and daemonizing; a node in the test process where one only has to run."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time

from twisted.trial.unittest import SynchronousTestCase

from tests.inprocess import NodeTestCase
from tests.nodeharness import ROOT, NodeProcess, RPCFailure, _env, free_port, harness_dbengine_args


def wait_answering(node: NodeProcess, what: str, timeout: float = 60) -> None:
    """Until ``node`` answers getblockcount with 0 (its process may still be starting)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if node.rpc("getblockcount") == 0:
                return
        except (OSError, RPCFailure):
            pass
        process = node.process
        if time.monotonic() > deadline or (process is not None and process.poll() is not None):
            raise AssertionError("%s did not start" % what)
        time.sleep(0.1)


def run_coind(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    datadirs = [a[len("-datadir="):] for a in args if a.startswith("-datadir=")]
    if datadirs:    # the datadir's database under COIN_TEST_DBENGINE=postgresql
        args += tuple(harness_dbengine_args(datadirs[-1], args))
    return subprocess.run([sys.executable, "-m", "coin.tap"] + list(args), capture_output=True,
                          text=True, cwd=ROOT, env=_env(), timeout=timeout)


class LifecycleTests(NodeTestCase):
    def test_start_query_stop(self) -> None:
        node = NodeProcess.start(self.mktemp())
        self.addCleanup(node.kill)
        self.assertEqual(node.rpc("getblockcount"), 0)
        self.assertEqual(node.rpc("getbestblockhash"),
                         "0f9188f13cb7b2c71f2a335e3a4fc328bf5beb436012afca590b1a11466e2206")
        pid_file = os.path.join(node.net_datadir, "coind.pid")
        with open(pid_file) as f:
            self.assertEqual(int(f.read()), node.process.pid)
        with open(os.path.join(node.net_datadir, "debug.log")) as f:
            self.assertIn("Event loop: SpinningEPollReactor, polling up to 200 µs before it "
                          "sleeps while events come that soon\n", f.read())
        result = node.cli("stop")
        self.assertEqual((result.returncode, result.stdout), (0, "Coin server stopping\n"))
        self.assertEqual(node.wait(), 0)
        self.assertFalse(os.path.exists(pid_file))

    def test_busypoll_0_runs_the_same_loop_without_polling(self) -> None:
        node = NodeProcess.start(self.mktemp(), ["-busypoll=0"])
        self.addCleanup(node.kill)
        self.assertEqual(node.rpc("getblockcount"), 0)
        node.stop()
        with open(os.path.join(node.net_datadir, "debug.log")) as f:
            self.assertIn("Event loop: SpinningEPollReactor, polling off (-busypoll=0)\n",
                          f.read())

    def test_sigterm_flushes_and_restart_keeps_the_chain(self) -> None:
        datadir = self.mktemp()
        node = NodeProcess.start(datadir)
        self.addCleanup(node.kill)
        from tests.nodeharness import MINER_ADDRESS
        hashes = node.rpc("generatetoaddress", 5, MINER_ADDRESS)
        node.process.send_signal(signal.SIGTERM)
        self.assertEqual(node.wait(), 0)
        again = NodeProcess.start(datadir)
        self.addCleanup(again.kill)
        self.assertEqual(again.rpc("getblockcount"), 5)
        self.assertEqual(again.rpc("getbestblockhash"), hashes[-1])
        again.stop()

    def test_sigint_shuts_down_cleanly(self) -> None:
        node = NodeProcess.start(self.mktemp())
        self.addCleanup(node.kill)
        node.process.send_signal(signal.SIGINT)
        self.assertEqual(node.wait(), 0)
        with open(os.path.join(node.net_datadir, "debug.log")) as f:
            self.assertIn("Shutdown: done", f.read())
        self.assertFalse(os.path.exists(os.path.join(node.net_datadir, "coind.pid")))

    def test_second_node_on_the_same_datadir_is_refused(self) -> None:
        node = self.start_node()
        result = run_coind("-regtest", "-datadir=" + node.datadir, "-printtoconsole=0",
                           "-rpcport=%d" % free_port(), "-port=%d" % free_port())
        self.assertEqual(result.returncode, 1)
        self.assertIn("Cannot obtain a lock on data directory", result.stderr)
        node.stop()

    def test_daemon_detaches_with_a_pid_file(self) -> None:
        datadir = os.path.abspath(self.mktemp())
        os.makedirs(datadir)
        port = free_port()
        result = run_coind("-regtest", "-datadir=" + datadir, "-rpcport=%d" % port,
                           "-port=%d" % free_port(), "-rpcuser=u", "-rpcpassword=p", "-daemon")
        self.assertEqual(result.returncode, 0)
        node = NodeProcess(datadir, port, [], ("u", "p"))
        pid_file = os.path.join(datadir, "regtest", "coind.pid")
        deadline = time.monotonic() + 30
        while not os.path.exists(pid_file) and time.monotonic() < deadline:
            time.sleep(0.1)
        with open(pid_file) as f:
            pid = int(f.read())
        self.addCleanup(lambda: _kill_quietly(pid))
        wait_answering(node, "coind -daemon")
        node.rpc("stop")
        deadline = time.monotonic() + 30
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertFalse(_alive(pid))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _kill_quietly(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


class ArgumentTests(SynchronousTestCase):
    def test_unknown_argument_stops_start_up(self) -> None:
        result = run_coind("-regtest", "-nosuchoption=1")
        self.assertEqual(result.returncode, 1)
        self.assertIn("Invalid parameter -suchoption", result.stderr)

    def test_malformed_integer(self) -> None:
        result = run_coind("-regtest", "-rpcport=abc")
        self.assertEqual(result.returncode, 1)
        self.assertIn("rpcport", result.stderr)

    def test_busypoll_out_of_range_stops_start_up(self) -> None:
        result = run_coind("-regtest", "-busypoll=10001")
        self.assertEqual((result.returncode, result.stderr),
                         (1, "Error: -busypoll must be from 0 to 10000 microseconds\n"))

    def test_malformed_rpcauth_stops_start_up(self) -> None:
        datadir = os.path.abspath(self.mktemp())
        os.makedirs(datadir)
        result = run_coind("-regtest", "-datadir=" + datadir, "-rpcport=%d" % free_port(),
                           "-rpcauth=nocolon")
        self.assertEqual(result.returncode, 1)
        self.assertIn("Invalid -rpcauth argument.", result.stderr)

    def test_version(self) -> None:
        result = run_coind("-version")
        self.assertEqual(result.returncode, 0)
        self.assertIn("Coin Daemon version", result.stdout)

    def test_conf_file_sections(self) -> None:
        # A process: an in-process node gets -regtest, -rpcport and credentials on its
        # command line, which would hide the coin.conf values under test.
        datadir = os.path.abspath(self.mktemp())
        os.makedirs(datadir)
        port = free_port()
        with open(os.path.join(datadir, "coin.conf"), "w") as f:
            f.write("regtest=1\nrpcuser=u\n[regtest]\nrpcpassword=p\nrpcport=%d\n" % port)
        process = subprocess.Popen([sys.executable, "-m", "coin.tap", "-datadir=" + datadir,
                                    "-printtoconsole=0", "-port=%d" % free_port()],
                                   cwd=ROOT, env=_env(),
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        node = NodeProcess(datadir, port, [], ("u", "p"))
        node.process = process
        self.addCleanup(node.kill)
        wait_answering(node, "coind configured by coin.conf")
        # coin-cli reads the same file.
        result = subprocess.run([sys.executable, "-m", "coincli", "-datadir=" + datadir,
                                 "getblockcount"], capture_output=True, text=True, cwd=ROOT,
                                env=_env())
        self.assertEqual(result.stdout, "0\n")
        node.stop()


class CookieTests(NodeTestCase):
    def test_cookie_is_private_used_by_cli_and_removed(self) -> None:
        node = self.start_node(credentials=None)
        cookie = os.path.join(node.net_datadir, ".cookie")
        mode = stat.S_IMODE(os.stat(cookie).st_mode)
        self.assertEqual(mode, 0o600)
        with open(cookie) as f:
            user, _, password = f.read().partition(":")
        self.assertEqual(user, "__cookie__")
        self.assertEqual(len(password), 64)
        result = node.cli("getblockcount")
        self.assertEqual((result.returncode, result.stdout), (0, "0\n"))
        node.stop()
        self.assertFalse(os.path.exists(cookie))
