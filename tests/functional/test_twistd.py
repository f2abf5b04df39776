"""``twistd coind`` as a user types it: the real twistd script, after an install, from any directory.

A copy of this checkout is installed into a new environment (editable, or a regular wheel
install), then Twisted's ``twistd`` console script runs with that environment's interpreter
from an unrelated directory and without PYTHONPATH, so the plugin is found only through what
the install put on ``sys.path``. The tests that only run twistd from an editable install share
one (an install takes seconds).
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import signal
import site
import subprocess
import tempfile
import time
import venv
from typing import Dict, List, Sequence, Set, Tuple

from twisted.trial.unittest import SynchronousTestCase

from tests.nodeharness import ROOT, NodeProcess, free_port, shared_fixture
from tests.functional.test_daemon import _alive, _kill_quietly, wait_answering

#: What packaging needs from the checkout.
SOURCES = ("pyproject.toml", "README.md", "coin", "coincli", "twisted")


def twistd_script() -> str:
    """The ``twistd`` console script pip installed with Twisted."""
    dist = importlib.metadata.distribution("twisted")
    for file in dist.files or ():
        if file.name == "twistd":
            return str(dist.locate_file(file).resolve())
    raise AssertionError("Twisted has no twistd script")


def _clean_env() -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PIP_"))}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def install(into: str, editable: bool) -> str:
    """Install a copy of this checkout into a new environment under ``into``; its python.

    The environment reaches this interpreter's site-packages (Twisted, the other dependencies,
    pip and setuptools) through a .pth line, and pip builds offline with that setuptools.
    """
    source = os.path.join(into, "src")
    os.makedirs(source)
    ignore = shutil.ignore_patterns("__pycache__", "dropin.cache")
    for name in SOURCES:
        path = os.path.join(ROOT, name)
        if os.path.isdir(path):
            shutil.copytree(path, os.path.join(source, name), ignore=ignore)
        else:
            shutil.copy(path, source)
    env_dir = os.path.join(into, "env")
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = os.path.join(env_dir, "bin", "python")
    purelib = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                             capture_output=True, text=True, check=True).stdout.strip()
    outer = site.getsitepackages() + ([site.getusersitepackages()] if site.ENABLE_USER_SITE else [])
    with open(os.path.join(purelib, "_outer_site.pth"), "w") as f:
        f.write("\n".join(outer) + "\n")
    subprocess.run([python, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-index",
                    "--no-deps", "--no-cache-dir"] + (["-e"] if editable else []) + [source],
                   cwd=into, env=_clean_env(), check=True, capture_output=True, timeout=300)
    return python


def shared_editable_install() -> str:
    """The python of one editable install per test process (removed at exit)."""
    return shared_fixture(
        shared_editable_install, lambda: install(tempfile.mkdtemp(prefix="coin-twistd-"), editable=True),
        # <into>/env/bin/python
        lambda python: shutil.rmtree(os.path.dirname(os.path.dirname(os.path.dirname(python))), True))


class TwistdCommandTests(SynchronousTestCase):
    def twistd(self, python: str, *args: str) -> subprocess.CompletedProcess:
        elsewhere = os.path.abspath(self.mktemp())
        os.makedirs(elsewhere)
        return subprocess.run([python, twistd_script()] + list(args), cwd=elsewhere,
                              env=_clean_env(), capture_output=True, text=True, timeout=120)

    def assert_lists_coind(self, python: str) -> None:
        commands = self.twistd(python, "--help").stdout
        # The column width follows the longest installed plugin name, which varies by Twisted release.
        self.assertRegex(commands, r"\n +coind +A coin full node \(JSON-RPC, REST, P2P\)\.\n")
        result = self.twistd(python, "coind", "--help")
        self.assertEqual(result.returncode, 0, result.stderr)
        for option in ("-chain=<chain>", "-rpcport=<port>", "-port=<port>", "-datadir=<dir>"):
            self.assertIn("\n  %s\n" % option, result.stdout)

    def test_help_after_editable_install(self) -> None:
        self.assert_lists_coind(shared_editable_install())

    def test_help_after_regular_install(self) -> None:
        self.assert_lists_coind(install(os.path.abspath(self.mktemp()), editable=False))

    def test_twistd_n_coind_regtest_answers_rpc(self) -> None:
        self.assert_twistd_n_coind_answers_rpc([])

    def test_twistd_reactor_coin_answers_rpc(self) -> None:
        """``--reactor=coin`` is coind's own polling reactor, listed with Twisted's; the
        node runs on it and takes -busypoll."""
        result = self.twistd(shared_editable_install(), "--help-reactors")
        self.assertRegex(result.stdout, r"\n +coin\s+epoll, polling briefly before it sleeps")
        output, debug_log = self.assert_twistd_n_coind_answers_rpc(["--reactor=coin"],
                                                                   ["-busypoll=50"])
        self.assertIn("reactor class: coin.eventloop.SpinningEPollReactor", output)
        self.assertIn("Event loop: SpinningEPollReactor, polling up to 50 µs before it sleeps",
                      debug_log)

    def assert_twistd_n_coind_answers_rpc(self, twistd_args: List[str],
                                          coind_args: Sequence[str] = ()) -> Tuple[str, str]:
        """Run ``twistd [twistd_args] -n coind ...``, call it, stop it; twistd's output and
        the node's debug.log."""
        python = shared_editable_install()
        datadir = os.path.abspath(self.mktemp())
        os.makedirs(datadir)
        port = free_port()
        args: List[str] = twistd_args + [
            "-n", "--pidfile=", "coind", "-regtest", "-datadir=" + datadir,
            "-rpcport=%d" % port, "-port=%d" % free_port(), "-rpcuser=u",
            "-rpcpassword=p"] + list(coind_args)
        output_path = os.path.join(datadir, "twistd.out")
        with open(output_path, "w") as output:
            process = subprocess.Popen([python, twistd_script()] + args, cwd=datadir,
                                       env=_clean_env(), stdout=output,
                                       stderr=subprocess.STDOUT)
        self.addCleanup(lambda: process.poll() is None and process.kill())
        node = NodeProcess(datadir, port, [], ("u", "p"))
        node.process = process
        wait_answering(node, "twistd -n coind")
        self.assertEqual(node.rpc("getblockchaininfo")["chain"], "regtest")
        process.send_signal(signal.SIGTERM)
        # twistd re-raises the stopping signal on its way out (its convention for exit status).
        self.assertIn(process.wait(60), (0, -signal.SIGTERM))
        with open(os.path.join(datadir, "regtest", "debug.log")) as f:
            debug_log = f.read()
        self.assertIn("Shutdown: done", debug_log)
        with open(output_path) as f:
            return f.read(), debug_log

    def test_forking_twistd_coind_runs_in_the_daemon(self) -> None:
        """Plain ``twistd coind`` forks: the pid files name the daemon, which alone holds the
        lock and the chain database (nothing was opened before the fork), and ``coin-cli
        stop`` stops it cleanly."""
        python = shared_editable_install()
        datadir = os.path.abspath(self.mktemp())
        os.makedirs(datadir)
        port = free_port()
        twistd_pid_file = os.path.join(datadir, "twistd.pid")
        args = ["--pidfile=" + twistd_pid_file, "--logfile=" + os.path.join(datadir, "twistd.log"),
                "coind", "-regtest", "-datadir=" + datadir, "-rpcport=%d" % port,
                "-port=%d" % free_port(), "-rpcuser=u", "-rpcpassword=p"]
        parent = subprocess.run([python, twistd_script()] + args, cwd=datadir, env=_clean_env(),
                                capture_output=True, text=True, timeout=120)
        self.assertEqual(parent.returncode, 0, parent.stderr)
        with open(twistd_pid_file) as f:
            pid = int(f.read())
        self.addCleanup(_kill_quietly, pid)
        node = NodeProcess(datadir, port, [], ("u", "p"))
        wait_answering(node, "twistd coind")
        net_datadir = os.path.join(datadir, "regtest")
        with open(os.path.join(net_datadir, "coind.pid")) as f:
            self.assertEqual(int(f.read()), pid)
        self.assertEqual(node.rpc("getblockchaininfo")["chain"], "regtest")
        # The daemon holds the datadir lock and the chain database; no other process does.
        holders = _holders([os.path.join(net_datadir, name)
                            for name in (".lock", "chainstate.sqlite")])
        self.assertEqual(holders, {os.path.join(net_datadir, ".lock"): {pid},
                                   os.path.join(net_datadir, "chainstate.sqlite"): {pid}})
        result = node.cli("stop")
        self.assertEqual((result.returncode, result.stdout), (0, "Coin server stopping\n"))
        deadline = time.monotonic() + 60
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertFalse(_alive(pid))
        self.assertFalse(os.path.exists(twistd_pid_file))
        self.assertFalse(os.path.exists(os.path.join(net_datadir, "coind.pid")))
        with open(os.path.join(net_datadir, "debug.log")) as f:
            self.assertIn("Shutdown: done", f.read())


def _holders(paths: List[str]) -> Dict[str, Set[int]]:
    """Which processes have each of ``paths`` open (from /proc/<pid>/fd)."""
    found: Dict[str, Set[int]] = {path: set() for path in paths}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fds = os.listdir("/proc/%s/fd" % entry)
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink("/proc/%s/fd/%s" % (entry, fd))
            except OSError:
                continue
            if target in found:
                found[target].add(int(entry))
    return found
