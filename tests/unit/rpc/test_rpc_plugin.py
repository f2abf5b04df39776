"""The typed plugin contract and the -rpcplugin loader: which distributions load, what a
plugin that cannot load does to start-up, and handler parameters checked against their
declared arguments."""

from __future__ import annotations

import ast
import os

from twisted.internet.defer import inlineCallbacks
from twisted.logger import globalLogPublisher
from twisted.trial.unittest import SynchronousTestCase

from coin.chain.index import BlockIndexEntry
from coin.mempool.pool import Mempool
from coin.rpc import plugin
from coin.rpc.context import RPCContext
from coin.rpc.errors import map_exception
from coin.rpc.registry import (
    INT, STR, Arg, MethodTable, PluginError, PluginRequest, RPCMethod, SubCommand, command_family,
    load_plugins,
)

from tests.data.plugin_pkg.coin_hello import METHODS as SAMPLE_METHODS
from tests.rpcchain import TIP_HEIGHT, ChainRPCTestCase
from tests.unit.rpc.test_rpc_registry import PLUGIN_SOURCE, FakeDistributions
from tests import ROOT

SAMPLE = os.path.join(ROOT, "tests", "data", "plugin_pkg", "coin_hello", "__init__.py")
GUIDE = os.path.join(ROOT, "doc", "plugins.md")

MISMATCH_SOURCE = """
    from coin.rpc.plugin import INT, Arg, rpc_method

    @rpc_method("double", category="test", args=[Arg("n", INT)], help="Twice n.")
    def double(ctx, number):
        return 2 * number

    METHODS = [double]
"""

CLASH_SOURCE = """
    from coin.rpc.plugin import Arg, INT, rpc_method

    @rpc_method("triple", category="test", args=[Arg("n", INT)], help="Thrice n.")
    def triple(ctx, n):
        return 3 * n

    @rpc_method("getblockcount", category="test", help="Not the real one.")
    def getblockcount(ctx):
        return -1

    METHODS = [triple, getblockcount]
"""


def _entry(name: str, module: str) -> str:
    return f"[coin.rpc]\n{name} = {module}:METHODS\n"


class SelectionTests(SynchronousTestCase):
    """Built-ins always load; another distribution only when -rpcplugin names it."""

    def setUp(self) -> None:
        self.dists = FakeDistributions(self)

    def test_installed_plugin_loads_only_when_named(self) -> None:
        self.dists.add("fake-plugin", "1.0", _entry("fake", "fakeplugin_rpc"), "fakeplugin_rpc",
                       PLUGIN_SOURCE)
        table = load_plugins()
        self.assertIn("getblockcount", table)
        self.assertNotIn("double", table)
        # Names compare as pip compares them; naming a plugin twice loads it once.
        table = load_plugins(["Fake_Plugin", "fake.plugin"])
        self.assertEqual(table.get("double").handler(None, 21), 42)
        self.assertEqual(table.origin("double"),
                         "fake-plugin 1.0 (entry point fake = fakeplugin_rpc:METHODS)")
        self.assertIn("getblockcount", table)

    def test_not_installed_is_named(self) -> None:
        error = self.assertRaises(PluginError, load_plugins, ["no-such-plugin"])
        self.assertEqual(str(error), "RPC plugin no-such-plugin is not installed: no "
                                     "distribution of that name has 'coin.rpc' entry points")

    def test_import_failure_is_named(self) -> None:
        self.dists.add("badimport", "0.1", _entry("x", "badimport_rpc"), "badimport_rpc",
                       "raise ImportError('needs libfoo')\n")
        self.assertIn("getblockcount", load_plugins())  # installed but not named: harmless
        error = self.assertRaises(PluginError, load_plugins, ["badimport"])
        self.assertEqual(str(error), "RPC plugin badimport 0.1 (entry point x = "
                                     "badimport_rpc:METHODS) failed to load: "
                                     "ImportError('needs libfoo')")

    def test_collision_names_both_distributions(self) -> None:
        self.dists.add("clash", "2.0", _entry("clash", "clash_rpc"), "clash_rpc", CLASH_SOURCE)
        error = self.assertRaises(PluginError, load_plugins, ["clash"])
        message = str(error)
        self.assertTrue(message.startswith("RPC method 'getblockcount' is registered twice: by "
                                           "coin "), message)
        self.assertIn("(entry point blockchain = coin.rpc.methods.blockchain:METHODS)", message)
        self.assertTrue(message.endswith(
            "and by clash 2.0 (entry point clash = clash_rpc:METHODS)"), message)

    def test_two_plugins_colliding_name_both(self) -> None:
        self.dists.add("one", "1.0", _entry("one", "one_rpc"), "one_rpc", PLUGIN_SOURCE)
        self.dists.add("two", "2.0", _entry("two", "two_rpc"), "two_rpc", PLUGIN_SOURCE)
        error = self.assertRaises(PluginError, load_plugins, ["one", "two"])
        self.assertEqual(str(error), "RPC method 'double' is registered twice: by one 1.0 "
                                     "(entry point one = one_rpc:METHODS) and by two 2.0 "
                                     "(entry point two = two_rpc:METHODS)")

    def test_parameter_names_must_match_declared_arguments(self) -> None:
        self.dists.add("mismatch", "0.3", _entry("m", "mismatch_rpc"), "mismatch_rpc",
                       MISMATCH_SOURCE)
        error = self.assertRaises(PluginError, load_plugins, ["mismatch"])
        self.assertEqual(str(error), "RPC plugin mismatch 0.3 (entry point m = "
                                     "mismatch_rpc:METHODS): double: handler parameter 1 is "
                                     "'number' but the declared argument is 'n'")

    def test_optional_plugin_that_fails_is_skipped_whole_with_a_warning(self) -> None:
        self.dists.add("badimport", "0.1", _entry("x", "badimport_rpc"), "badimport_rpc",
                       "raise ImportError('needs libfoo')\n")
        self.dists.add("clash", "2.0", _entry("clash", "clash_rpc"), "clash_rpc", CLASH_SOURCE)
        self.dists.add("fakeplugin", "1.0", _entry("fake", "fakeplugin_rpc"), "fakeplugin_rpc",
                       PLUGIN_SOURCE)
        events: list[dict] = []
        globalLogPublisher.addObserver(events.append)
        self.addCleanup(globalLogPublisher.removeObserver, events.append)
        table = load_plugins(["badimport:optional", "clash:optional", "missing:optional",
                              "fakeplugin:optional"])
        self.assertIn("double", table)  # an optional plugin that works loads as usual
        # All or nothing: clash's good method is not registered either.
        self.assertNotIn("triple", table)
        self.assertEqual(table.origin("getblockcount").split()[0], "coin")
        warnings = [(e["plugin"], e["error"]) for e in events
                    if e.get("log_format", "").startswith("Skipping optional RPC plugin")]
        self.assertEqual([plugin_ for plugin_, _ in warnings], ["badimport", "clash", "missing"])
        self.assertIn("failed to load: ImportError('needs libfoo')", warnings[0][1])
        self.assertIn("'getblockcount' is registered twice", warnings[1][1])
        self.assertIn("is not installed", warnings[2][1])

    def test_option_values(self) -> None:
        self.assertEqual(PluginRequest.parse("coin-hello-plugin"),
                         PluginRequest("coin-hello-plugin", optional=False))
        self.assertEqual(PluginRequest.parse("coin_hello.plugin:optional"),
                         PluginRequest("coin_hello.plugin", optional=True))
        for bad in ("", ":optional", "a b", "x:strict", "-x", "x:optional:optional"):
            error = self.assertRaises(PluginError, PluginRequest.parse, bad)
            self.assertEqual(str(error), f"-rpcplugin={bad}: expected a distribution name, "
                                         "optionally followed by :optional")


class ParameterCheckTests(SynchronousTestCase):
    """A handler's parameters against its declared arguments, for methods and sub-commands."""

    def check(self, handler, *args: Arg) -> str | None:
        method = RPCMethod(name="m", category="test", handler=handler, help_text="m\n",
                           args=args)
        try:
            MethodTable([method], "plug")
        except PluginError as e:
            return str(e).removeprefix("RPC plugin plug: m: ")
        return None

    def test_names_and_kinds(self) -> None:
        a, b = Arg("a", INT), Arg("b", STR, default="x")
        rest = Arg("rest", STR, variadic=True)
        self.assertIsNone(self.check(lambda ctx, a, b: None, a, b))
        self.assertIsNone(self.check(lambda ctx, a, *rest: None, a, rest))
        # The variadic part has no names to bind, so any name serves; *values may take all.
        self.assertIsNone(self.check(lambda ctx, a, *more: None, a, rest))
        self.assertIsNone(self.check(lambda ctx, *values: None, a, b))
        self.assertEqual(self.check(lambda ctx, b, a: None, a, b),
                         "handler parameter 1 is 'b' but the declared argument is 'a'")
        self.assertEqual(self.check(lambda ctx, a, *, b: None, a, b),
                         "handler must accept the context and 2 argument(s)")
        self.assertEqual(self.check(lambda ctx, a, c=None: None, a, b),
                         "handler parameter 2 is 'c' but the declared argument is 'b'")
        self.assertEqual(self.check(lambda ctx, a, b=None, c=None: None, a, rest),
                         "handler must take *rest for the variadic argument")

    def test_sub_commands_are_checked(self) -> None:
        sub = SubCommand("get", lambda ctx, h: h, args=(Arg("hash", STR),))
        error = self.assertRaises(PluginError, command_family, "gobject", category="x",
                                  help="gobject\n", subcommands=[sub])
        self.assertEqual(str(error), "gobject get: handler parameter 1 is 'h' but the "
                                     "declared argument is 'hash'")

    def test_every_builtin_method_passes(self) -> None:
        self.assertGreater(len(load_plugins()), 100)


class ContractTests(SynchronousTestCase):
    """What coin.rpc.plugin promises plugin authors."""

    def test_version_and_exports(self) -> None:
        self.assertEqual(plugin.API_VERSION, (1, 0))
        for name in plugin.__all__:
            self.assertTrue(hasattr(plugin, name), name)

    def test_node_objects_satisfy_the_views(self) -> None:
        entry = BlockIndexEntry(b"\x01" * 32, 0, None, 1, b"\x00" * 32, 1296688602, 0x207fffff,
                                2, 2)
        self.assertIsInstance(entry, plugin.BlockEntry)
        self.assertIsInstance(Mempool(), plugin.MempoolView)

    def test_sample_plugin_imports_only_the_contract(self) -> None:
        with open(SAMPLE) as f:
            tree = ast.parse(f.read())
        modules = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        modules |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                    for alias in node.names}
        self.assertEqual(modules, {"__future__", "typing", "coin.rpc.plugin"})

    def test_guide_shows_the_sample_plugin_verbatim(self) -> None:
        with open(SAMPLE) as f:
            source = f.read()
        with open(GUIDE) as f:
            guide = f.read()
        shown = guide.split("`coin_hello/__init__.py`:\n\n```python\n", 1)[1].split("```", 1)[0]
        docstring = ast.get_docstring(ast.parse(source), clean=False)
        self.assertEqual(shown, source.split(docstring + '"""\n\n', 1)[1])


class SamplePluginOnARealChainTests(ChainRPCTestCase):
    """The sample plugin's handlers through the RPC core, over a real chain and pool."""

    methods = SAMPLE_METHODS

    @inlineCallbacks
    def test_views_answer_from_the_node(self):
        result = yield self.result("hello", name="chain")
        self.assertEqual(result, {"greeting": "hello, chain", "blocks": TIP_HEIGHT,
                                  "bestblockhash": self.tip_hex(), "mempool": 0,
                                  "connections": 0, "wallets": []})
        self.assertEqual((yield self.result("blocktxcount", TIP_HEIGHT)), 1)
        self.assertEqual((yield self.error("blocktxcount", TIP_HEIGHT + 1)),
                         (500, -8, "Block height out of range"))

    @inlineCallbacks
    def test_read_block_of_an_unknown_hash_is_core_error(self):
        ctx = RPCContext(node=self.node, user="u", wallet=None, wallet_name=None,
                         methods=self.core.methods)
        chain = ctx.chain()
        self.assertIsInstance(chain, plugin.ChainView)
        self.assertEqual(chain.at_height(TIP_HEIGHT), chain.tip)
        self.assertEqual(chain.lookup(chain.tip.hash), chain.tip)
        block = yield chain.read_block(chain.tip.hash)
        self.assertEqual(block.hash, chain.tip.hash)
        failure = self.failureResultOf(chain.read_block(b"\x00" * 32))
        self.assertEqual(map_exception(failure),
                         (500, {"code": -5, "message": "Block not found"}))
