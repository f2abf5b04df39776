"""Third-party RPC plugins as a user installs and names them (-rpcplugin): served over HTTP
and coin-cli when named, absent when not (nodes in the test process), and a plugin that
cannot load stops a ``coind`` process's start-up naming it (or is skipped when marked
:optional)."""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import subprocess
import sys
import tempfile

from tests.inprocess import NodeTestCase
from tests.nodeharness import MINER_ADDRESS, ROOT, NodeProcess, RPCFailure

SAMPLE = "coin-hello-plugin"
BROKEN = "coin-broken-plugin"


def install_plugins(target: str) -> None:
    """pip-install the sample plugin into ``target`` offline, and a broken one beside it.

    The package is copied first: a build leaves build/ and *.egg-info next to its sources.
    """
    source = os.path.join(tempfile.mkdtemp(), "plugin_pkg")
    try:
        shutil.copytree(os.path.join(ROOT, "tests", "data", "plugin_pkg"), source)
        install = subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
             "--no-index", "--target", target, source],
            capture_output=True, text=True, timeout=300)
    finally:
        shutil.rmtree(os.path.dirname(source))
    if install.returncode != 0:
        raise RuntimeError("pip install of the sample plugin failed: " + install.stderr)
    info = os.path.join(target, "coin_broken_plugin-0.1.dist-info")
    os.mkdir(info)
    with open(os.path.join(info, "METADATA"), "w") as f:
        f.write("Metadata-Version: 2.1\nName: %s\nVersion: 0.1\n" % BROKEN)
    with open(os.path.join(info, "entry_points.txt"), "w") as f:
        f.write("[coin.rpc]\nbroken = coin_broken:METHODS\n")
    with open(os.path.join(target, "coin_broken.py"), "w") as f:
        f.write("raise ImportError('coin_broken needs libfoo')\n")


@functools.lru_cache(maxsize=None)
def installed_plugins() -> str:
    """The folder :func:`install_plugins` filled, once per test process (the tests only
    read it); removed at exit."""
    target = tempfile.mkdtemp(prefix="coin-test-plugins-")
    atexit.register(shutil.rmtree, target, True)
    install_plugins(target)
    return target


def _forget_path(target: str) -> None:
    """``target`` off sys.path, and the modules imported from it out of sys.modules."""
    sys.path.remove(target)
    for name, module in list(sys.modules.items()):
        if (getattr(module, "__file__", None) or "").startswith(target + os.sep):
            del sys.modules[name]


def _restore(name: str, value: str | None) -> None:
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value


class PluginTests(NodeTestCase):

    def setUp(self) -> None:
        target = installed_plugins()
        saved = os.environ.get("PYTHONPATH")
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (target, saved) if p)
        self.addCleanup(_restore, "PYTHONPATH", saved)
        # Installed for the nodes in this process too.
        sys.path.insert(0, target)
        self.addCleanup(_forget_path, target)

    def test_named_plugin_is_served_over_http_and_cli(self) -> None:
        node = self.start_node("-rpcplugin=" + SAMPLE)
        best = node.rpc("generatetoaddress", 1, MINER_ADDRESS)[0]
        self.assertEqual(node.rpc("hello", "coin"), {
            "greeting": "hello, coin", "blocks": 1, "bestblockhash": best, "mempool": 0,
            "connections": 0, "wallets": [""]})
        self.assertEqual(node.rpc("hello", name="named")["greeting"], "hello, named")
        self.assertEqual(node.rpc("blocktxcount", 1), 1)
        error = self.assertRaises(RPCFailure, node.rpc, "blocktxcount", 2)
        self.assertEqual((error.code, error.message), (-8, "Block height out of range"))
        self.assertEqual(node.rpc("hellowallet", path="/wallet/"),
                         {"walletname": "", "txcount": 0})
        self.assertIn("== Hello ==\nblocktxcount height\nhello ( \"name\" )\nhellowallet",
                      node.rpc("help"))
        result = node.cli("hello")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn('"greeting": "hello, world"', result.stdout)
        result = node.cli("-named", "hello", "name=cli")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn('"greeting": "hello, cli"', result.stdout)
        # coin-cli's conversion table knows only the node's methods: other values go as
        # strings (Core's rule too), so a number reaches a plugin's INT argument as a string.
        result = node.cli("blocktxcount", "0")
        self.assertEqual((result.returncode, result.stderr),
                         (1, "error code: -1\nerror message:\nJSON value is not an integer as "
                             "expected\n"))
        self.assertEqual(node.stop(), 0)

    def test_installed_plugin_is_not_served_unless_named(self) -> None:
        node = self.start_node()
        error = self.assertRaises(RPCFailure, node.rpc, "hello")
        self.assertEqual((error.status, error.code, error.message), (404, -32601,
                                                                     "Method not found"))
        self.assertNotIn("hello", node.rpc("help"))
        self.assertEqual(node.stop(), 0)

    def test_plugin_that_fails_to_import_stops_startup(self) -> None:
        for name, reason in (
                (BROKEN, "RPC plugin coin-broken-plugin 0.1 (entry point broken = "
                         "coin_broken:METHODS) failed to load: "
                         "ImportError('coin_broken needs libfoo')"),
                ("coin-missing-plugin", "RPC plugin coin-missing-plugin is not installed: no "
                                        "distribution of that name has 'coin.rpc' entry points")):
            node = NodeProcess.start(self.mktemp(), ["-rpcplugin=" + name], wait=False)
            self.addCleanup(node.kill)
            self.assertEqual(node.wait(), 1)
            self.assertEqual(node.stderr_text(), "Error: Error loading RPC plugins: %s\n" % reason)

    def test_optional_plugin_that_fails_is_skipped(self) -> None:
        node = self.start_node("-rpcplugin=%s:optional" % BROKEN, "-rpcplugin=" + SAMPLE)
        self.assertEqual(node.rpc("hello")["greeting"], "hello, world")
        with open(os.path.join(node.net_datadir, "debug.log")) as f:
            log = f.read()
        self.assertIn("Skipping optional RPC plugin coin-broken-plugin: RPC plugin "
                      "coin-broken-plugin 0.1 (entry point broken = coin_broken:METHODS) failed "
                      "to load: ImportError('coin_broken needs libfoo')", log)
        self.assertEqual(node.stop(), 0)
