"""The method registry: entry-point plugins, argument checking, help, sub-command families,
and the control methods registered through it."""

from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
import sys
import tempfile
import textwrap
import tomllib
from decimal import Decimal

import simplejson
from twisted.trial.unittest import SynchronousTestCase

from coin.rpc.context import RPCContext
from coin.rpc.errors import RPCError
from coin.rpc.methods import control
from coin.rpc.registry import (
    ANY, ARR, BOOL, INT, INT64, OBJ, REAL, REQUIRED, STR, Arg, MethodTable, PluginError,
    RPCMethod, SubCommand, amount_from_value, command_family, load_plugins, signature_line,
)

from tests.rpchelpers import REFERENCE_METHODS, FakeNode, recorded_error, transcript
from tests import ROOT



def rpc_error(call, *args):
    """(code, message) of the RPCError ``call(*args)`` raises."""
    try:
        call(*args)
    except RPCError as error:
        return error.code, error.message
    raise AssertionError("no RPCError raised")


class FakeDistributions:
    """Installable-looking distributions in a temporary directory on sys.path."""

    def __init__(self, test: SynchronousTestCase) -> None:
        self.path = tempfile.mkdtemp()
        sys.path.insert(0, self.path)
        test.addCleanup(self.remove)
        self.modules: list[str] = []

    def add(self, name: str, version: str, entry_points: str, module: str, source: str) -> None:
        info = os.path.join(self.path, f"{name}-{version}.dist-info")
        os.mkdir(info)
        with open(os.path.join(info, "METADATA"), "w") as f:
            f.write(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        with open(os.path.join(info, "entry_points.txt"), "w") as f:
            f.write(entry_points)
        with open(os.path.join(self.path, module + ".py"), "w") as f:
            f.write(textwrap.dedent(source))
        self.modules.append(module)

    def remove(self) -> None:
        sys.path.remove(self.path)
        for module in self.modules:
            sys.modules.pop(module, None)
        shutil.rmtree(self.path)


PLUGIN_SOURCE = """
    from coin.rpc.registry import INT, Arg, rpc_method

    @rpc_method("double", category="test", args=[Arg("n", INT)], help="Twice n.")
    def double(ctx, n):
        return 2 * n

    METHODS = [double]
"""


class DiscoveryTests(SynchronousTestCase):

    def test_third_party_distribution_is_discovered(self):
        dists = FakeDistributions(self)
        dists.add("fakeplugin", "1.0", "[coin.rpc]\nfake = fakeplugin_rpc:METHODS\n",
                  "fakeplugin_rpc", PLUGIN_SOURCE)
        self.assertNotIn("double", load_plugins())
        table = load_plugins(["fakeplugin"])
        self.assertEqual(table.get("double").handler(None, 21), 42)
        self.assertEqual(table.origin("double"),
                         "fakeplugin 1.0 (entry point fake = fakeplugin_rpc:METHODS)")

    def test_duplicate_names_both_distributions(self):
        dists = FakeDistributions(self)
        dists.add("fakeplugin", "1.0", "[coin.rpc.test]\nfake = fakeplugin_rpc:METHODS\n",
                  "fakeplugin_rpc", PLUGIN_SOURCE)
        dists.add("otherplugin", "2.0", "[coin.rpc.test]\nother = otherplugin_rpc:double\n",
                  "otherplugin_rpc", PLUGIN_SOURCE)
        error = self.assertRaises(PluginError, load_plugins, ["fakeplugin", "otherplugin"],
                                  group="coin.rpc.test")
        self.assertIn("'double' is registered twice", str(error))
        self.assertIn("fakeplugin 1.0", str(error))
        self.assertIn("otherplugin 2.0", str(error))

    def test_broken_plugins_are_named(self):
        dists = FakeDistributions(self)
        dists.add("badimport", "0.1", "[coin.rpc.bad1]\nx = badimport_rpc:METHODS\n",
                  "badimport_rpc", "raise ImportError('no such thing')\n")
        dists.add("badobject", "0.2", "[coin.rpc.bad2]\nx = badobject_rpc:METHODS\n",
                  "badobject_rpc", "METHODS = 42\n")
        dists.add("badspec", "0.3", "[coin.rpc.bad3]\nx = badspec_rpc:METHODS\n",
                  "badspec_rpc", """
                  from coin.rpc.registry import INT, Arg, rpc_method

                  @rpc_method("bad", category="test", args=[Arg("a", INT)])
                  def bad(ctx):
                      pass

                  METHODS = [bad]
                  """)
        for group, plugin, expected in (
                ("coin.rpc.bad1", "badimport", "RPC plugin badimport 0.1 (entry point x = "
                 "badimport_rpc:METHODS) failed to load: ImportError"),
                ("coin.rpc.bad2", "badobject", "RPC plugin badobject 0.2 (entry point x = "
                 "badobject_rpc:METHODS): expected an RPCMethod or a list of them, got int"),
                ("coin.rpc.bad3", "badspec", "RPC plugin badspec 0.3 (entry point x = "
                 "badspec_rpc:METHODS): bad: handler must accept the context and 1 "
                 "argument(s)")):
            error = self.assertRaises(PluginError, load_plugins, [plugin], group=group)
            self.assertTrue(str(error).startswith(expected), str(error))

    def test_empty_group_means_not_installed(self):
        error = self.assertRaises(PluginError, load_plugins, group="coin.rpc.nothing-here")
        self.assertIn("pip install -e .", str(error))

    def test_builtin_entry_points_in_pyproject(self):
        with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
            declared = tomllib.load(f)["project"]["entry-points"]["coin.rpc"]
        entry_points = [importlib.metadata.EntryPoint(name, value, "coin.rpc")
                        for name, value in declared.items()]
        table = load_plugins(entry_points=entry_points)
        for name in ("help", "stop", "uptime", "getmemoryinfo", "logging", "echo", "echojson"):
            self.assertIn(name, table)


def _method(**overrides):
    spec = dict(name="m", category="test", handler=lambda ctx, a=None, b=None: None,
                help_text="m\n", args=())
    spec.update(overrides)
    return RPCMethod(**spec)


class SpecCheckTests(SynchronousTestCase):

    def test_bad_specs(self):
        handler = lambda ctx, *args: None  # noqa: E731
        for spec, problem in (
                (dict(name=""), "method name must be"),
                (dict(name="two words"), "method name must be"),
                (dict(category=""), "category must be"),
                (dict(help_text=""), "help text must be"),
                (dict(handler=5), "handler is not callable"),
                (dict(args=(Arg("a", INT, default=1), Arg("b", INT))), "required argument 'b'"),
                (dict(args=(Arg("a", INT), Arg("a", STR, default=1))), "'a' is used twice"),
                (dict(args=(Arg("a", INT, aliases=("b",)), Arg("b", INT, default=1))),
                 "'b' is used twice"),
                (dict(args=(Arg("a", ANY, variadic=True), Arg("b", INT, default=1)),
                      handler=handler), "only the last argument may be variadic"),
                (dict(args=("a",)), "argument 1 is not an Arg"),
                (dict(args=(Arg("a", int),)), "argument 1 is not an Arg"),
                (dict(args=(Arg("a", INT), Arg("b", INT), Arg("c", INT))),
                 "handler must accept the context and 3 argument(s)"),
                (dict(args=(Arg("a", ANY, variadic=True),), handler=lambda ctx: None),
                 "handler must accept the context and 0 argument(s) plus any number more")):
            with self.assertRaises(PluginError, msg=problem) as caught:
                MethodTable([_method(**spec)], "plug")
            error = caught.exception
            self.assertIn(problem, str(error))
            self.assertTrue(str(error).startswith("RPC plugin plug: "))
        self.assertRaises(PluginError, MethodTable, ["not a method"])

    def test_builtin_handlers_without_signature_are_accepted(self):
        self.assertIn("m", MethodTable([_method(handler=max)]))


class ArgumentTests(SynchronousTestCase):

    def test_getters_match_univalue(self):
        not_int = (-1, "JSON value is not an integer as expected")
        out_of_range = (-1, "JSON integer out of range")
        for kind, value, expected in (
                (INT, "abc", not_int), (INT, True, not_int), (INT, None, not_int),
                (INT, Decimal("1.5"), out_of_range), (INT, Decimal("5.0"), out_of_range),
                (INT, 2 ** 31, out_of_range), (INT, -2 ** 31 - 1, out_of_range),
                (INT64, 2 ** 63, out_of_range), (INT64, "1", not_int),
                (STR, 5, (-1, "JSON value is not a string as expected")),
                (BOOL, 1, (-1, "JSON value is not a boolean as expected")),
                (REAL, "1", (-1, "JSON value is not a number as expected")),
                (REAL, Decimal("1e999"), (-1, "JSON double out of range")),
                (OBJ, [], (-1, "JSON value is not an object as expected")),
                (ARR, {}, (-1, "JSON value is not an array as expected"))):
            self.assertEqual(rpc_error(Arg("x", kind).convert, value), expected, (kind, value))
        for kind, value, expected in ((INT, 2 ** 31 - 1, 2 ** 31 - 1), (INT64, 2 ** 40, 2 ** 40),
                                      (BOOL, False, False), (REAL, Decimal("0.5"), 0.5),
                                      (REAL, 3, 3.0), (ANY, None, None), (STR, "", "")):
            self.assertEqual(Arg("x", kind).convert(value), expected)

    def test_typecheck_is_rpc_type_error(self):
        self.assertEqual(rpc_error(Arg("x", INT, typecheck=True).convert, "5"),
                         (-3, "Expected type number, got string"))
        self.assertEqual(rpc_error(Arg("x", OBJ, typecheck=True).convert, None),
                         (-3, "Expected type object, got null"))
        self.assertEqual(rpc_error(Arg("x", STR, typecheck=True).convert, True),
                         (-3, "Expected type string, got bool"))
        self.assertEqual(rpc_error(Arg("x", INT, typecheck=True).convert, Decimal("1.5")),
                         (-1, "JSON integer out of range"))

    def test_amounts_never_touch_binary_floats(self):
        for value, units in ((Decimal("0.1"), 10_000_000), ("0.1", 10_000_000), (1, 100_000_000),
                             (Decimal("1e-8"), 1), ("1e3", 100_000_000_000),
                             (Decimal("21000000"), 2_100_000_000_000_000), (0, 0),
                             (Decimal("0E-20"), 0), (Decimal("-0"), 0),
                             (Decimal("0.10000000000000000000000000"), 10_000_000)):
            self.assertEqual(amount_from_value(value), units, value)
        for value, message in ((True, "Amount is not a number or string"),
                               (None, "Amount is not a number or string"),
                               ([], "Amount is not a number or string"),
                               (Decimal("1e-9"), "Invalid amount"), ("abc", "Invalid amount"),
                               (" 1", "Invalid amount"), ("0x10", "Invalid amount"),
                               ("Infinity", "Invalid amount"), (Decimal("1e10"), "Invalid amount"),
                               (Decimal("1." + "0" * 60 + "1"), "Invalid amount"),
                               (Decimal("1e-999999999"), "Invalid amount"),
                               (Decimal("1e999999999"), "Invalid amount"),
                               (Decimal("-1"), "Amount out of range"),
                               (Decimal("21000000.00000001"), "Amount out of range")):
            self.assertEqual(rpc_error(amount_from_value, value), (-3, message), value)

    def test_several_types_read_the_first_that_fits(self):
        verbosity = Arg("verbosity", (INT, BOOL), default=1)
        self.assertEqual((verbosity.convert(2), verbosity.convert(True), verbosity.convert(None)),
                         (2, True, 1))
        self.assertEqual(rpc_error(verbosity.convert, "x"),
                         (-1, "JSON value is not a boolean as expected"))

    def test_count_and_defaults(self):
        method = _method(args=(Arg("a", INT), Arg("b", STR, default="x")))
        self.assertEqual(method.convert([1]), [1, "x"])
        self.assertEqual(method.convert([1, None]), [1, "x"])
        self.assertEqual(rpc_error(method.convert, []), (-1, "m\n"))
        self.assertEqual(rpc_error(method.convert, [1, "a", 3]), (-1, "m\n"))
        self.assertEqual(rpc_error(method.convert, [None]),
                         (-1, "JSON value is not an integer as expected"))
        variadic = _method(args=(Arg("a", INT), Arg("rest", INT, variadic=True)),
                           handler=lambda ctx, a, *rest: None)
        self.assertEqual(variadic.convert([1, 2, 3]), [1, 2, 3])
        self.assertEqual(rpc_error(variadic.convert, [1, 2, "3"]),
                         (-1, "JSON value is not an integer as expected"))
        self.assertIs(Arg("a", INT).default, REQUIRED)


class NamedParamsTests(SynchronousTestCase):

    def setUp(self):
        self.method = _method(args=(
            Arg("blockhash", STR), Arg("verbosity", (INT, BOOL), default=1, aliases=("verbose",)),
            Arg("extra", STR, default=None)), handler=lambda ctx, a, b, c: None)

    def test_mapping(self):
        bind = self.method.bind_params
        self.assertEqual(bind(["h", 0]), ["h", 0])
        self.assertEqual(bind({"blockhash": "h", "verbosity": 0}), ["h", 0])
        self.assertEqual(bind({"verbose": True, "blockhash": "h"}), ["h", True])
        self.assertEqual(bind({"extra": "e"}), [None, None, "e"])  # holes filled with null
        self.assertEqual(bind({}), [])

    def test_unknown_names(self):
        bind = self.method.bind_params
        self.assertEqual(rpc_error(bind, {"blockhash": "h", "foo": 5}),
                         (-8, "Unknown named parameter foo"))
        self.assertEqual(rpc_error(bind, {"verbosity": 1, "verbose": True}),
                         (-8, "Unknown named parameter verbose"))
        self.assertEqual(rpc_error(bind, {"args": "h"}), (-8, "Unknown named parameter args"))

    def test_args_key_holds_positional_values(self):
        bind = self.method.bind_params
        self.assertEqual(bind({"args": ["h"], "extra": "e"}), ["h", None, "e"])
        self.assertEqual(bind({"args": ["h", 2]}), ["h", 2])
        self.assertEqual(rpc_error(bind, {"args": ["h", 2], "verbose": False}),
                         (-8, "Parameter verbose specified twice both as positional and as "
                              "named argument"))


def _getblockhash_help():
    return simplejson.loads(transcript("rpcm_28_help_getblockhash").body)["result"]


class HelpTests(SynchronousTestCase):

    def test_composed_help_matches_core(self):
        getblockhash = next(m for m in REFERENCE_METHODS if m.name == "getblockhash")
        self.assertEqual(getblockhash.help_text, _getblockhash_help())

    def test_signatures(self):
        self.assertEqual(signature_line("getblock", [Arg("blockhash", STR),
                                                     Arg("verbosity", INT, default=1)]),
                         'getblock "blockhash" ( verbosity )')
        self.assertEqual(signature_line("stop", []), "stop")
        self.assertEqual(signature_line("echo", [Arg("args", ANY, variadic=True)]),
                         "echo ( args... )")

    def test_argument_lines(self):
        self.assertEqual(Arg("verbosity", (INT, BOOL), default=1, help="0 or 1").help_line(2),
                         "2. verbosity      (numeric or boolean, optional, default=1) 0 or 1\n")
        self.assertEqual(Arg("address", STR, help="The address").help_line(1),
                         '1. "address"      (string, required) The address\n')

    def test_listing(self):
        table = MethodTable(control.METHODS + REFERENCE_METHODS)
        table.add(_method(name="zeta", category="util", help_text="zeta ( x )\n\nZ.\n"))
        self.assertEqual(table.help(), "\n".join([
            "== Blockchain ==", "getbestblockhash", "getblockcount", "getblockhash height", "",
            "== Control ==", 'getmemoryinfo ("mode")', 'help ( "command" )',
            "logging ( <include> <exclude> )", "stop", "uptime", "",
            "== Util ==", "zeta ( x )", "",
            "== Wallet ==", "getbalance", "getwalletinfo", "listwallets"]))
        self.assertEqual(table.help("nosuchcmd"), "help: unknown command: nosuchcmd")
        self.assertEqual(table.help("echo"), control.echo.help_text)  # hidden, but helpable


def _family_from_transcript(name, width, **changes):
    """Sub-commands rebuilt from a recorded family help, to check the layout round trip."""
    message = recorded_error(name)["message"]
    header, listing = message.split("\nAvailable commands:\n")
    subs = []
    for line in listing.splitlines():
        word, summary = re.match(r"  (\S+)\s+- (.*)", line).groups()
        subs.append(changes.get(word) or SubCommand(
            word, lambda ctx, *rest: list(rest), args=(Arg("rest", ANY, variadic=True),),
            summary=summary))
    return message, header, subs


class FamilyTests(SynchronousTestCase):

    def gobject(self):
        message, header, subs = _family_from_transcript("rpcm_30_gobject", 18, count=SubCommand(
            "count", lambda ctx: {"objects": 0}, summary="Count governance objects and votes"),
            get=SubCommand("get", lambda ctx, hash: hash, args=(Arg("hash", STR),),
                           summary="Get governance object by hash",
                           usage="Correct usage is 'gobject get <governance-hash>'"))
        return message, command_family("gobject", category="governance", help=header,
                                       subcommands=subs, width=18)

    def call(self, method, params):
        return method.handler(None, *method.convert(params))

    def test_help_text_matches_dash(self):
        message, gobject = self.gobject()
        self.assertEqual(gobject.help_text, message)
        self.assertEqual(gobject.help_text, recorded_error("rpcm_33_gobject_nosuchsub")["message"])
        self.assertEqual(MethodTable([gobject]).help(), '== Governance ==\ngobject "command"...')

    def test_labels_aliases_and_width(self):
        start = SubCommand("start-all", lambda ctx: "started", aliases=("start-missing",),
                           label="start-<mode>", summary="Start remote masternodes configured "
                           "in masternode.conf (<mode>: 'all', 'missing', 'disabled')")
        message, header, subs = _family_from_transcript("rpcm_34_masternode", 12,
                                                        **{"start-<mode>": start})
        masternode = command_family("masternode", category="masternode", help=header,
                                    subcommands=subs, width=12)
        self.assertEqual(masternode.help_text, message)
        self.assertEqual(self.call(masternode, ["start-missing"]), "started")
        self.assertEqual(rpc_error(self.call, masternode, ["start-<mode>"]), (-1, message))

    def test_dispatch_and_errors(self):
        message, gobject = self.gobject()
        self.assertEqual(self.call(gobject, ["count"]), {"objects": 0})
        self.assertEqual(self.call(gobject, ["get", "ab"]), "ab")
        self.assertEqual(self.call(gobject, ["list", 1, 2]), [1, 2])
        for params in ([], ["nosuchsub"], ["Count"]):
            self.assertEqual(rpc_error(self.call, gobject, params), (-1, message))
        self.assertEqual(rpc_error(self.call, gobject, [5]),
                         (-1, "JSON value is not a string as expected"))
        self.assertEqual(rpc_error(self.call, gobject, ["get"]),
                         (-1, "Correct usage is 'gobject get <governance-hash>'"))
        self.assertEqual(rpc_error(self.call, gobject, ["count", 1]), (-1, message))
        self.assertEqual(rpc_error(self.call, gobject, ["get", 5]),
                         (-1, "JSON value is not a string as expected"))
        self.assertEqual(gobject.bind_params({"command": "count"}), ["count"])

    def test_duplicate_sub_commands(self):
        subs = [SubCommand("a", lambda ctx: 1), SubCommand("b", lambda ctx: 2, aliases=("a",))]
        self.assertRaises(PluginError, command_family, "f", category="x", help="f\n",
                          subcommands=subs)


def _context(node=None):
    node = node or FakeNode()
    return RPCContext(node=node, user="u", wallet=None, wallet_name=None,
                      methods=MethodTable(control.METHODS))


def _run(method, params, node=None):
    return method.handler(_context(node), *method.convert(method.bind_params(params)))


class ControlMethodTests(SynchronousTestCase):

    def test_stop_and_uptime(self):
        node = FakeNode()
        self.assertEqual(_run(control.stop, [], node), "Coin server stopping")
        self.assertEqual(node.shutdowns, 1)
        self.assertEqual(_run(control.uptime, [], node), 31)

    def test_help(self):
        self.assertEqual(_run(control.help_, ["stop"]), "stop\n\nStop Coin server.\n")
        self.assertTrue(_run(control.help_, []).startswith("== Control ==\n"))

    def test_logging(self):
        node = FakeNode()
        self.assertEqual(_run(control.logging_, [], node), dict.fromkeys(
            ["net", "mempool", "http", "rpc", "db"], False))
        result = _run(control.logging_, [["all"], ["http", "db"]], node)
        self.assertEqual(result, {"net": True, "mempool": True, "http": False, "rpc": True,
                                  "db": False})
        self.assertEqual(list(result), node.logging.categories())
        self.assertFalse(any(_run(control.logging_, {"exclude": ["1"]}, node).values()))
        self.assertFalse(any(_run(control.logging_, [["none", "0"]], node).values()))
        self.assertFalse(any(_run(control.logging_, ["net", 5], node).values()))  # not arrays
        self.assertEqual(rpc_error(_run, control.logging_, [["nosuch"]], node),
                         (-8, "unknown logging category nosuch"))
        self.assertEqual(rpc_error(_run, control.logging_, [[5]], node),
                         (-1, "JSON value is not a string as expected"))

    def test_getmemoryinfo(self):
        locked = _run(control.getmemoryinfo, [])["locked"]
        self.assertEqual(list(locked), ["used", "free", "total", "locked", "chunks_used",
                                        "chunks_free"])
        self.assertTrue(all(isinstance(value, int) and value >= 0 for value in locked.values()))
        self.assertGreaterEqual(locked["total"], locked["used"])
        self.assertGreater(locked["chunks_used"], 0)

    def test_getmemoryinfo_mallocinfo(self):
        try:
            xml = _run(control.getmemoryinfo, ["mallocinfo"])
        except RPCError as error:  # not glibc
            self.assertEqual((error.code, error.message),
                             (-8, "mallocinfo is only available when compiled with glibc 2.10+"))
        else:
            self.assertTrue(xml.startswith('<malloc version="1">'), xml[:40])
        self.assertEqual(rpc_error(_run, control.getmemoryinfo, ["x"]), (-8, "unknown mode x"))
        self.assertEqual(rpc_error(_run, control.getmemoryinfo, [5]),
                         (-1, "JSON value is not a string as expected"))

    def test_echo(self):
        self.assertEqual(_run(control.echo, [1, None, {"a": [2]}]), [1, None, {"a": [2]}])
        self.assertEqual(_run(control.echojson, []), [])
        self.assertEqual(_run(control.echo, {"args": ["x", 2]}), ["x", 2])
        # Core 0.17's names arg0..arg9: holes before a given one are null, none after it.
        self.assertEqual(_run(control.echojson, {"arg2": [1], "arg0": None}), [None, None, [1]])
        self.assertEqual(rpc_error(_run, control.echo, {"arg10": 1}),
                         (-8, "Unknown named parameter arg10"))
        self.assertEqual(control.echo.help_text.split("\n")[0], 'echo|echojson "message" ...')
