"""Core-style arguments and coin.conf (coin.config)."""

from __future__ import annotations

import os

from hypothesis import given
from hypothesis import strategies as st
from twisted.trial.unittest import SynchronousTestCase

from coin.config import (
    NETWORKS,
    Config,
    ConfigError,
    OptionRegistry,
    default_datadir,
    interpret_bool,
    parse_args,
    parse_config_text,
)
from coin.config.node import node_options


class _DatadirMixin:
    """Temporary datadirs with a coin.conf, and configs loaded from them."""

    def datadir(self, conf: str | None = None) -> str:
        path = os.path.abspath(self.mktemp())
        os.makedirs(path)
        if conf is not None:
            write(os.path.join(path, "coin.conf"), conf)
        return path

    def load(self, argv: list[str], conf: str | None = None,
             registry: OptionRegistry | None = None) -> Config:
        """Parse ``argv`` (plus -datadir) over a fresh datadir holding ``conf``."""
        return parse_args(["-datadir=" + self.datadir(conf)] + argv,
                          registry or node_options(), environ={})


def write(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(text)


class CommandLineTests(_DatadirMixin, SynchronousTestCase):

    def test_forms(self) -> None:
        """-name=value, --name=value, -name alone (true, empty value), -noname."""
        config = self.load(["-rpcuser=u", "--rpcpassword=p", "-txindex", "-nolisten"])
        self.assertEqual(config.get("rpcuser"), "u")
        self.assertEqual(config.get("rpcpassword"), "p")
        self.assertEqual(config.get("txindex"), "")
        self.assertTrue(config.get_bool("txindex"))
        self.assertFalse(config.get_bool("listen"))
        self.assertEqual(config.get("listen"), "0")
        self.assertTrue(config.is_set("listen"))
        self.assertTrue(config.is_negated("listen"))

    def test_double_negative(self) -> None:
        """-nofoo=0 is foo=1, with a warning; -nofoo=1 is a negation."""
        config = self.load(["-notxindex=0", "-norest=1"])
        self.assertEqual(config.get("txindex"), "1")
        self.assertTrue(config.get_bool("txindex"))
        self.assertTrue(config.is_negated("rest"))
        self.assertIn("Warning: parsed potentially confusing double-negative -txindex=0",
                      config.warnings)

    def test_last_value_wins_and_order_matters(self) -> None:
        config = self.load(["-rpcuser=a", "-rpcuser=b", "-nodebug", "-debug=net",
                            "-wallet=x", "-nowallet"])
        self.assertEqual(config.get("rpcuser"), "b")
        self.assertEqual(config.get_all("debug"), ["net"])
        self.assertEqual(config.get_all("wallet"), [])

    def test_value_keeps_equals_signs_and_spaces(self) -> None:
        config = self.load(["-rpcpassword= a=b "])
        self.assertEqual(config.get("rpcpassword"), " a=b ")

    def test_positional_arguments_start_at_first_non_option(self) -> None:
        """Everything after the first argument without a dash is positional (getblockhash -1)."""
        config = self.load(["getblockhash", "-1", "-rpcuser=x"], registry=_cli_like())
        self.assertEqual(config.args, ["getblockhash", "-1", "-rpcuser=x"])
        self.assertFalse(config.is_set("rpcuser"))

    def test_lone_dash_is_ignored(self) -> None:
        self.assertEqual(self.load(["-", "--", "-=x"]).args, [])

    def test_unknown_option(self) -> None:
        error = self.assertRaises(ConfigError, self.load, ["-foo=1"])
        self.assertEqual(str(error), "Error parsing command line arguments: Invalid parameter -foo")

    def test_unknown_negated_option_is_named_without_no(self) -> None:
        error = self.assertRaises(ConfigError, self.load, ["-nofoo"])
        self.assertEqual(str(error), "Error parsing command line arguments: Invalid parameter -foo")

    def test_rpcwhitelist_is_known(self) -> None:
        """The reference node rejects -rpcwhitelist; the spec requires it."""
        config = self.load(["-rpcwhitelist=u:getblockcount", "-rpcwhitelistdefault=0"])
        self.assertEqual(config.get_all("rpcwhitelist"), ["u:getblockcount"])
        self.assertFalse(config.get_bool("rpcwhitelistdefault"))

    def test_network_prefixed_option_is_accepted_and_ignored(self) -> None:
        config = self.load(["-regtest", "-regtest.rpcport=5"])
        self.assertFalse(config.is_set("rpcport"))
        self.assertTrue(any("-regtest.rpcport" in w for w in config.warnings))
        error = self.assertRaises(ConfigError, self.load, ["-regtest.foo=1"])
        self.assertEqual(str(error),
                         "Error parsing command line arguments: Invalid parameter -regtest.foo")

    def test_bad_integer_names_the_option(self) -> None:
        for argv in (["-rpcport=abc"], ["-rpcport=12abc"], ["-rpcport"], ["-dbcache=1_000"]):
            error = self.assertRaises(ConfigError, self.load, argv)
            self.assertTrue(str(error).startswith("Error parsing command line arguments: "
                                                  "Invalid integer value "), str(error))
            self.assertIn(argv[0].partition("=")[0], str(error))

    def test_integers(self) -> None:
        config = self.load(["-rpcport=+8332", "-dbcache=-5", "-noprune"])
        self.assertEqual(config.get_int("rpcport"), 8332)
        self.assertEqual(config.get_int("dbcache"), -5)
        self.assertEqual(config.get_int("prune"), 0)
        self.assertEqual(config.get_int("maxconnections"), 125)  # registered default
        self.assertEqual(config.get_int("maxconnections", 8), 8)
        self.assertEqual((config.get("maxconnections"), config.get("server")), ("125", "1"))
        self.assertIsNone(config.get_int("port"))

    def test_includeconf_not_allowed_on_command_line(self) -> None:
        error = self.assertRaises(ConfigError, self.load, ["-includeconf=x.conf"])
        self.assertEqual(str(error), "Error parsing command line arguments: -includeconf cannot "
                                     "be used from commandline; -includeconf=x.conf")

    def test_lookups_of_unregistered_names_are_bugs(self) -> None:
        config = self.load([])
        self.assertRaises(KeyError, config.get, "nosuchoption")
        self.assertRaises(ValueError, config.get_all, "rpcport")

    def test_force_set(self) -> None:
        config = self.load(["-rpcpassword=a"], conf="rpcpassword=b\n")
        config.force_set("rpcpassword", "c")
        self.assertEqual(config.get("rpcpassword"), "c")
        self.assertRaises(ConfigError, config.force_set, "rpcport", "x")


def _cli_like() -> OptionRegistry:
    from coincli.options import cli_options
    return cli_options()


class InterpretBoolTests(SynchronousTestCase):

    def test_atoi_semantics(self) -> None:
        """Core reads flags with atoi: only a leading non-zero integer is true."""
        for value, expected in [("", True), ("1", True), ("0", False), ("2", True),
                                ("-1", True), (" 1", True), ("10abc", True), ("00", False),
                                ("yes", False), ("true", False), ("0x1", False), ("+0", False)]:
            self.assertEqual(interpret_bool(value), expected, value)


class ConfigFileSyntaxTests(SynchronousTestCase):

    def test_comments_whitespace_sections(self) -> None:
        text = ("# comment\n  rpcuser = u  # trailing\n\t\n[regtest]\r\nrpcport=1\r\n"
                "main.rpcport=2\n[]\nx=1\n")
        self.assertEqual(parse_config_text(text), [
            (2, None, "rpcuser", "u"),
            (5, "regtest", "rpcport", "1"),
            (6, "regtest", "main.rpcport", "2"),
            (8, "", "x", "1"),
        ])

    def test_dotted_top_level_key_is_a_section(self) -> None:
        self.assertEqual(parse_config_text("test.rpcport=3"), [(1, "test", "rpcport", "3")])

    def test_lines_split_on_lf_only(self) -> None:
        """A form feed or U+2028 inside a value is not a line break (std::getline)."""
        self.assertEqual(parse_config_text("uacomment=a\x0cb\u2028c\n"),
                         [(1, None, "uacomment", "a\x0cb\u2028c")])

    def test_errors(self) -> None:
        prefix = "Error reading configuration file: "
        cases = [
            ("-rpcuser=x", "parse error on line 1: -rpcuser=x, options in configuration file "
                           "must be specified without leading -"),
            ("\nfoo", "parse error on line 2: foo"),
            ("notxindex", "parse error on line 1: notxindex, if you intended to specify a "
                          "negated option, use notxindex=1 instead"),
            ("rpcpassword=ab#cd", "parse error on line 1, using # in rpcpassword can be "
                                  "ambiguous and should be avoided"),
        ]
        for text, message in cases:
            error = self.assertRaises(ConfigError, parse_config_text, text)
            self.assertEqual(str(error), prefix + message)


class ConfigFileTests(_DatadirMixin, SynchronousTestCase):

    def test_command_line_overrides_file(self) -> None:
        config = self.load(["-rpcuser=cmd"], conf="rpcuser=file\nrpcpassword=pw\n")
        self.assertEqual(config.get("rpcuser"), "cmd")
        self.assertEqual(config.get("rpcpassword"), "pw")

    def test_first_value_in_file_wins(self) -> None:
        config = self.load([], conf="rpcuser=a\nrpcuser=b\n")
        self.assertEqual(config.get("rpcuser"), "a")

    def test_negation_in_file(self) -> None:
        config = self.load([], conf="txindex=1\nnotxindex=1\nlisten=0\nnodebug=1\ndebug=rpc\n")
        self.assertFalse(config.get_bool("txindex"))
        self.assertFalse(config.get_bool("listen"))
        self.assertEqual(config.get_all("debug"), ["rpc"])

    def test_repeatable_options_accumulate_command_line_first(self) -> None:
        config = self.load(["-regtest", "-addnode=c"],
                           conf="addnode=top\n[regtest]\naddnode=net1\naddnode=net2\n")
        self.assertEqual(config.get_all("addnode"), ["c", "net1", "net2"])
        config = self.load(["-rpcauth=a"], conf="rpcauth=b\n[main]\nrpcauth=c\n")
        self.assertEqual(config.get_all("rpcauth"), ["a", "c", "b"])

    def test_network_section_applies_only_to_its_network(self) -> None:
        conf = "rpcuser=top\n[test]\nrpcuser=testuser\n[regtest]\nrpcuser=reguser\n"
        self.assertEqual(self.load([], conf).get("rpcuser"), "top")
        self.assertEqual(self.load(["-testnet"], conf).get("rpcuser"), "testuser")
        self.assertEqual(self.load(["-regtest"], conf).get("rpcuser"), "reguser")

    def test_network_only_options_in_top_part_apply_to_main_only(self) -> None:
        conf = "rpcport=1111\nport=2222\nrpcuser=u\n"
        main = self.load([], conf)
        self.assertEqual((main.get_int("rpcport"), main.get_int("port")), (1111, 2222))
        regtest = self.load(["-regtest"], conf)
        self.assertFalse(regtest.is_set("rpcport"))
        self.assertEqual(regtest.get("rpcuser"), "u")
        self.assertIn("Warning: Config setting for -rpcport only applied on regtest network "
                      "when in [regtest] section.", regtest.warnings)
        self.assertEqual(self.load(["-regtest"], conf + "[regtest]\nrpcport=3333\n")
                         .get_int("rpcport"), 3333)
        self.assertEqual(self.load(["-regtest", "-rpcport=4444"], conf).get_int("rpcport"), 4444)

    def test_unknown_keys_are_ignored_with_a_warning(self) -> None:
        config = self.load([], conf="foo=1\n[regtest]\nbar=2\n[other]\nrpcuser=x\n")
        self.assertIn("Ignoring unknown configuration value foo", config.warnings)
        self.assertIn("Ignoring unknown configuration value regtest.bar", config.warnings)
        self.assertIn("Warning: Section [other] is not recognized.", config.warnings)
        self.assertFalse(config.is_set("rpcuser"))

    def test_bad_integer_in_file(self) -> None:
        error = self.assertRaises(ConfigError, self.load, [], "[test]\ndbcache=lots\n")
        self.assertEqual(str(error), 'Error reading configuration file: Invalid integer value '
                                     '"lots" for -dbcache')


class NetworkTests(_DatadirMixin, SynchronousTestCase):

    def test_selection(self) -> None:
        self.assertEqual(self.load([]).network, "main")
        self.assertEqual(self.load(["-testnet"]).network, "test")
        self.assertEqual(self.load(["-regtest"]).network, "regtest")
        self.assertEqual(self.load(["-regtest=0"]).network, "main")
        for chain in ("main", "test", "regtest"):
            self.assertEqual(self.load(["-chain=" + chain]).network, chain)
        self.assertEqual(self.load([], conf="regtest=1\n").network, "regtest")
        self.assertEqual(self.load([], conf="chain=test\n").network, "test")

    def test_network_switches_inside_sections_are_ignored(self) -> None:
        self.assertEqual(self.load([], conf="[main]\ntestnet=1\n").network, "main")

    def test_conflicts(self) -> None:
        message = ("Error: Invalid combination of -regtest, -testnet and -chain. "
                   "Can use at most one.")
        for argv, conf in [(["-regtest", "-testnet"], None), (["-chain=main", "-regtest"], None),
                           (["-testnet"], "chain=test\n"), (["-regtest"], "testnet=1\n")]:
            error = self.assertRaises(ConfigError, self.load, argv, conf)
            self.assertEqual(str(error), message)

    def test_unknown_chain(self) -> None:
        error = self.assertRaises(ConfigError, self.load, ["-chain=signet"])
        self.assertEqual(str(error), "Error: CreateBaseChainParams: Unknown chain signet.")

    def test_table_agrees_with_chainparams(self) -> None:
        from coin.chainparams import get_params
        for name, network in NETWORKS.items():
            params = get_params(name)
            self.assertEqual((network.rpc_port, network.p2p_port, network.datadir_subdir),
                             (params.rpc_port, params.p2p_port, params.datadir_subdir))


class DatadirTests(_DatadirMixin, SynchronousTestCase):

    def test_network_subfolders(self) -> None:
        base = self.datadir()
        for argv, sub in [([], ""), (["-testnet"], "testnet3"), (["-regtest"], "regtest")]:
            config = parse_args(["-datadir=" + base] + argv, node_options(), environ={})
            self.assertEqual(config.datadir, base)
            self.assertEqual(config.net_datadir, os.path.join(base, sub) if sub else base)

    def test_missing_datadir(self) -> None:
        missing = os.path.abspath(self.mktemp())
        error = self.assertRaises(ConfigError, parse_args, ["-datadir=" + missing],
                                  node_options(), {})
        self.assertEqual(str(error), 'Error: Specified data directory "%s" does not exist.'
                         % missing)

    def test_relative_datadir_is_made_absolute(self) -> None:
        base = self.datadir()
        cwd = os.getcwd()
        os.chdir(os.path.dirname(base))
        try:
            config = parse_args(["-datadir=" + os.path.basename(base)], node_options(), {})
        finally:
            os.chdir(cwd)
        self.assertEqual(config.datadir, base)

    def test_default_datadir_from_home(self) -> None:
        home = self.datadir()
        config = parse_args([], node_options(), environ={"HOME": home})
        self.assertEqual(config.datadir, os.path.join(home, ".coin"))
        self.assertEqual(config.conf_path, os.path.join(home, ".coin", "coin.conf"))
        self.assertEqual(default_datadir({}), "/.coin")

    def test_datadir_from_file(self) -> None:
        """A datadir set in the default coin.conf moves the datadir; it must exist too."""
        home = self.datadir()
        os.makedirs(os.path.join(home, ".coin"))
        other = self.datadir()
        write(os.path.join(home, ".coin", "coin.conf"), "datadir=%s\n" % other)
        config = parse_args(["-regtest"], node_options(), environ={"HOME": home})
        self.assertEqual(config.net_datadir, os.path.join(other, "regtest"))
        write(os.path.join(home, ".coin", "coin.conf"), "datadir=/nonexistent/x\n")
        error = self.assertRaises(ConfigError, parse_args, [], node_options(), {"HOME": home})
        self.assertEqual(str(error), 'Error reading configuration file: specified data '
                                     'directory "/nonexistent/x" does not exist.')

    def test_conf_relative_to_datadir(self) -> None:
        base = self.datadir()
        write(os.path.join(base, "other.conf"), "rpcuser=other\n")
        write(os.path.join(base, "coin.conf"), "rpcuser=default\n")
        config = parse_args(["-datadir=" + base, "-conf=other.conf"], node_options(), {})
        self.assertEqual(config.get("rpcuser"), "other")
        self.assertEqual(config.conf_path, os.path.join(base, "other.conf"))

    def test_absolute_conf(self) -> None:
        conf = os.path.join(self.datadir(), "elsewhere.conf")
        write(conf, "rpcuser=abs\n")
        self.assertEqual(self.load(["-conf=" + conf]).get("rpcuser"), "abs")

    def test_missing_conf(self) -> None:
        """A missing default coin.conf is fine; a missing -conf file is an error."""
        self.assertEqual(self.load([]).warnings, [])
        base = self.datadir()
        error = self.assertRaises(ConfigError, parse_args,
                                  ["-datadir=" + base, "-conf=nope.conf"], node_options(), {})
        self.assertEqual(str(error), 'Error reading configuration file: specified config file '
                                     '"%s" could not be opened.' % os.path.join(base, "nope.conf"))

    def test_noconf_reads_no_file(self) -> None:
        self.assertFalse(self.load(["-noconf"], conf="rpcuser=x\n").is_set("rpcuser"))

    def test_paths(self) -> None:
        config = self.load(["-regtest", "-pid=/run/coind.pid"])
        self.assertEqual(config.cookie_path(), os.path.join(config.datadir, "regtest", ".cookie"))
        self.assertEqual(config.resolve_path(config.get("pid")), "/run/coind.pid")
        self.assertEqual(config.resolve_path(config.get("debuglogfile")),
                         os.path.join(config.datadir, "regtest", "debug.log"))
        config = self.load(["-regtest", "-rpccookiefile=auth/c"])
        self.assertEqual(config.cookie_path(),
                         os.path.join(config.datadir, "regtest", "auth", "c"))


class IncludeconfTests(_DatadirMixin, SynchronousTestCase):

    def test_include(self) -> None:
        base = self.datadir("includeconf=extra.conf\nrpcuser=main\n"
                            "[regtest]\nincludeconf=reg.conf\n")
        write(os.path.join(base, "extra.conf"), "rpcpassword=secret\nrpcuser=ignored\n"
                                                "includeconf=deeper.conf\n")
        write(os.path.join(base, "reg.conf"), "[regtest]\nrpcport=5\n")
        config = parse_args(["-datadir=" + base, "-regtest"], node_options(), {})
        self.assertEqual(config.get("rpcpassword"), "secret")
        self.assertEqual(config.get("rpcuser"), "main")
        self.assertEqual(config.get_int("rpcport"), 5)
        self.assertIn("warning: -includeconf cannot be used from included files; ignoring "
                      "-includeconf=deeper.conf", config.warnings)

    def test_missing_include(self) -> None:
        error = self.assertRaises(ConfigError, self.load, [], "includeconf=gone.conf\n")
        self.assertEqual(str(error), "Error reading configuration file: Failed to include "
                                     "configuration file gone.conf")

    def test_noincludeconf(self) -> None:
        config = self.load(["-noincludeconf"], conf="includeconf=gone.conf\n")
        self.assertEqual(config.network, "main")


class RegistryTests(SynchronousTestCase):

    def test_registration_mistakes(self) -> None:
        registry = OptionRegistry()
        registry.add("foo", "Foo")
        self.assertRaises(ValueError, registry.add, "foo", "again")
        self.assertRaises(ValueError, registry.add, "-bar", "dash")
        self.assertRaises(ValueError, registry.add, "nodelay", "reads as -delay negated")
        self.assertRaises(ValueError, registry.add, "baz", "kind", kind="float")

    def test_help_text_layout(self) -> None:
        registry = OptionRegistry()
        registry.add("b", "Second " * 15, meta="=<n>")
        registry.add("a", "First")
        registry.add("hidden", "x", hidden=True)
        registry.add("debugonly", "Debug", debug_only=True, category="Debugging")
        self.assertEqual(registry.help_text(), (
            "Options:\n\n"
            "  -a\n       First\n\n"
            "  -b=<n>\n       " + "Second " * 9 + "Second\n       " + "Second " * 4
            + "Second\n\n"))
        self.assertIn("  -debugonly\n       Debug\n\n", registry.help_text(show_debug=True))


# Option names that cannot collide with the ones the loader treats specially.
_NAMES = st.from_regex(r"[a-z][a-z0-9_-]{0,11}", fullmatch=True).filter(
    lambda n: not n.startswith("no") and n not in ("regtest", "testnet", "chain", "datadir",
                                                   "conf", "includeconf"))
_ARG_VALUES = st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)
# coin.conf values: one line, no comment, nothing the trimming would remove.
_CONF_VALUES = st.text(st.characters(blacklist_categories=("Cs",),
                                     blacklist_characters="#\n"), max_size=20).filter(
    lambda v: v == v.strip(" \t\r\n"))
_SETTINGS = st.dictionaries(_NAMES, st.lists(_ARG_VALUES, min_size=1, max_size=3),
                            min_size=1, max_size=5)


def _registry(names) -> OptionRegistry:
    registry = OptionRegistry()
    for name in ("datadir", "conf", "includeconf", "regtest", "testnet", "chain"):
        registry.add(name, "")
    for name in names:
        registry.add(name, "", repeatable=True)
    return registry


class RoundTripProperties(_DatadirMixin, SynchronousTestCase):

    @given(_SETTINGS)
    def test_command_line_round_trip(self, settings: dict[str, list[str]]) -> None:
        argv = ["-%s=%s" % (name, value) for name, values in settings.items()
                for value in values]
        config = Config(_registry(settings), environ={})
        config.parse_command_line(argv + ["method", "-x=y"])
        self.assertEqual(config.args, ["method", "-x=y"])
        for name, values in settings.items():
            self.assertEqual(config.get_all(name), values)
            self.assertEqual(config.get(name), values[-1])

    @given(st.dictionaries(_NAMES, st.lists(_CONF_VALUES, min_size=1, max_size=3),
                           min_size=1, max_size=5),
           st.sampled_from(["", "  ", "\t"]))
    def test_config_file_round_trip(self, settings: dict[str, list[str]], pad: str) -> None:
        base = self.datadir("".join("%s%s%s=%s%s\n" % (pad, name, pad, pad, value)
                                    for name, values in settings.items() for value in values))
        config = parse_args(["-datadir=" + base], _registry(settings), environ={})
        for name, values in settings.items():
            self.assertEqual(config.get_all(name), values)
            self.assertEqual(config.get(name), values[0])


#: Options of Core 0.17's -help / -help-debug (init.cpp, wallet/init.cpp) that coind
#: refused with "Invalid parameter" before issue #13; each must now parse.
CORE_017_OPTIONS = (
    "alertnotify assumevalid blocknotify blockreconstructionextratxn blocksonly dbbatchsize "
    "feefilter loadblock maxorphantx par shrinkdebugfile discover dns dnsseed enablebip61 "
    "externalip forcednsseed listenonion maxreceivebuffer maxsendbuffer maxtimeadjustment "
    "maxuploadtarget onion onlynet peerbloomfilters proxy proxyrandomize seednode torcontrol "
    "torpassword upnp whitebind whitelist addresstype changetype discardfee fallbackfee "
    "mintxfee paytxfee rescan salvagewallet spendzeroconfchange txconfirmtarget upgradewallet "
    "walletbroadcast walletnotify walletrbf zapwallettxes dblogsize flushwallet privdb "
    "walletrejectlongchains zmqpubhashblock zmqpubhashtx zmqpubrawblock zmqpubrawtx "
    "addrmantest checkblockindex checkblocks checklevel checkmempool checkpoints debugexclude "
    "deprecatedrpc dropmessagestest logips logtimemicros logtimestamps maxsigcachesize "
    "maxtipage mocktime printpriority stopafterblockimport stopatheight vbparams bytespersigop "
    "dustrelayfee mempoolreplacement whitelistforcerelay whitelistrelay blockmaxweight "
    "blockmaxsize blockmintxfee blockversion rpcserialversion rpcthreads rpcworkqueue"
).split()


class CoreOptionTests(_DatadirMixin, SynchronousTestCase):
    """Issue #13: every Core 0.17 option is implemented or refused with a reason."""

    def test_every_core_option_is_known(self):
        registry = node_options()
        self.assertEqual([name for name in CORE_017_OPTIONS if name not in registry], [])
        self.assertIn("allowprivatenet", registry)

    def test_refused_options_name_the_reason(self):
        for option in node_options():
            if not option.refused:
                continue
            value = "0" if option.node_does else ("x" if option.kind == "str" else "1")
            for source in ("cmdline", "conf"):
                argv = ["-%s=%s" % (option.name, value)] if source == "cmdline" else []
                conf = "%s=%s\n" % (option.name, value) if source == "conf" else None
                with self.assertRaises(ConfigError) as caught:
                    self.load(argv, conf)
                self.assertEqual(str(caught.exception),
                                 "Error: -%s is not supported by this node: %s"
                                 % (option.name, option.refused))

    def test_refused_options_accept_what_the_node_does(self):
        # A Core-era test framework's settings: features off (or on) as this node has them.
        config = self.load(["-upnp=0", "-listenonion=0", "-discover=0", "-noproxy",
                            "-shrinkdebugfile=0", "-assumevalid=0", "-feefilter=1",
                            "-walletbroadcast", "-zapwallettxes=0", "-whitelistrelay=1"])
        self.assertFalse(config.get_bool("upnp"))
        # Text and number options are off only as "0", empty or negated (Core's reading).
        self.load(["-proxy=0", "-loadblock=", "-nowhitelist", "-maxorphantx=0"])
        with self.assertRaises(ConfigError):
            self.load(["-loadblock=touch x"])  # atoi-false text is no "off"
        self.assertTrue(config.is_negated("proxy"))

    def test_help_lists_every_option_grouped_as_core(self):
        registry = node_options()
        text, debug = registry.help_text(), registry.help_text(show_debug=True)
        for option in registry:
            if option.hidden:
                continue
            shown = "\n  -%s%s\n" % (option.name, option.meta)
            self.assertIn(shown, debug, option.name)
            self.assertEqual(shown in text, not option.debug_only, option.name)
        self.assertIn("Connect through SOCKS5 proxy (not supported by this node: it has no\n"
                      "       SOCKS5 proxy support yet)", debug)
        from coin.config.node import CATEGORY_ORDER

        shown = [line[:-1] for line in debug.splitlines() if line.endswith("options:")
                 or line == "Options:"]
        self.assertEqual(shown, list(CATEGORY_ORDER))

    def test_address_types_and_mocktime(self):
        from coin.config.node import check_node_values

        for argv in (["-addresstype=legacy", "-changetype=legacy"], ["-regtest", "-mocktime=5"],
                     ["-mocktime=0"], ["-rpcserialversion=0"], ["-rpcserialversion=1"]):
            check_node_values(self.load(argv))
        for argv, message in (
                (["-addresstype=bech32"], "Error: Unknown address type 'bech32' (this chain has "
                 "no segwit: the only type is 'legacy')"),
                (["-changetype=p2sh-segwit"], "Error: Unknown change type 'p2sh-segwit' (this "
                 "chain has no segwit: the only type is 'legacy')"),
                (["-testnet", "-mocktime=5"], "Error: -mocktime is for regression testing "
                 "(-regtest mode) only"),
                (["-rpcserialversion=-1"], "Error: rpcserialversion must be non-negative."),
                (["-rpcserialversion=2"], "Error: unknown rpcserialversion requested.")):
            with self.assertRaises(ConfigError) as caught:
                check_node_values(self.load(argv))
            self.assertEqual(str(caught.exception), message)

    def test_busypoll_takes_0_to_10000_microseconds(self):
        from coin.config.node import check_node_values

        for value in ("0", "200", "10000"):
            config = self.load(["-busypoll=" + value])
            check_node_values(config)
            self.assertEqual(config.get_int("busypoll"), int(value))
        self.assertEqual(self.load([]).get_int("busypoll"), 200)
        for value in ("-1", "10001"):
            with self.assertRaises(ConfigError) as caught:
                check_node_values(self.load(["-busypoll=" + value]))
            self.assertEqual(str(caught.exception),
                             "Error: -busypoll must be from 0 to 10000 microseconds")
