"""Core-style arguments layered over coin.conf (the rules are in doc/config.md).

A :class:`Config` is filled in two steps, as Core's ArgsManager is, because a
program must be able to answer ``-help`` between them: parse the command line
(unknown or malformed options are errors), then resolve the datadir, read
coin.conf and select the network. Lookups then follow Core's precedence:
command line (last value wins), the selected network's ``[section]``, the top
part of the file (first value wins), except that the network-sensitive options
in :data:`NETWORK_ONLY` are taken from the top part only on the main network.
"""

from __future__ import annotations

import os

from coin.config.conffile import Entry, read_config_file
from coin.config.errors import ConfigError
from coin.config.networks import NETWORKS
from coin.config.options import CONF_FILENAME, OptionRegistry

#: Options that, written in the top part of coin.conf, apply to the main network
#: only (Core 0.17's section-only arguments): one file can serve several networks
#: without them listening on, or connecting to, each other's ports and peers.
NETWORK_ONLY = frozenset({"addnode", "bind", "connect", "port", "rpcbind", "rpcport", "wallet"})

#: The auth cookie coind writes and coin-cli reads, in the network datadir.
COOKIE_FILENAME = ".cookie"

_CMDLINE_ERROR = "Error parsing command line arguments: "
_CONFFILE_ERROR = "Error reading configuration file: "


def default_datadir(environ: dict[str, str] | None = None) -> str:
    """``$HOME/.coin`` (``/.coin`` without HOME, as Core)."""
    env = os.environ if environ is None else environ
    return os.path.join(env.get("HOME") or "/", ".coin")


def interpret_bool(value: str) -> bool:
    """Core's InterpretBool: empty is true, else C ``atoi(value) != 0`` (so "yes" is false)."""
    if value == "":
        return True
    text = value.lstrip(" \t\n\v\f\r")
    if text[:1] in ("+", "-"):
        text = text[1:]
    digits = len(text) - len(text.lstrip("0123456789"))
    return text[:digits].strip("0") != ""


def _is_integer(value: str) -> bool:
    digits = value[1:] if value[:1] in ("+", "-") else value
    return digits.isascii() and digits.isdigit()


class Config:
    """The arguments and coin.conf settings of one program run."""

    def __init__(self, registry: OptionRegistry, environ: dict[str, str] | None = None) -> None:
        self.registry = registry
        self._environ = os.environ if environ is None else environ
        # Value lists; an empty list records a negation (-nofoo).
        self._cmdline: dict[str, list[str]] = {}
        self._file: dict[tuple[str | None, str], list[str]] = {}
        #: The positional arguments: everything from the first one without a dash.
        self.args: list[str] = []
        #: "main", "test" or "regtest" once :meth:`read_config_files` has run.
        self.network: str | None = None
        #: Absolute base data directory (without the network subfolder).
        self.datadir = ""
        #: Absolute path of the configuration file (which need not exist).
        self.conf_path = ""
        #: Messages for the program's log (Core logs these and carries on).
        self.warnings: list[str] = []

    # -- step 1 ---------------------------------------------------------------

    def parse_command_line(self, argv: list[str]) -> None:
        """Read options up to the first argument without a dash (argv has no program name)."""
        #: The arguments as given (a node starts its -rpcworkers with them).
        self.command_line = list(argv)
        for index, arg in enumerate(argv):
            key, _, value = arg.partition("=")
            if not key.startswith("-"):
                self.args = list(argv[index:])
                return
            if key.startswith("--"):
                key = key[1:]
            if key == "-":
                continue
            section, dot, name = key[1:].partition(".")
            if not dot:
                section, name = None, section
            name, value, negated = self._interpret_negation(name, value)
            if name not in self.registry:
                shown = "-" + (section + "." if section is not None else "") + name
                raise ConfigError(_CMDLINE_ERROR + "Invalid parameter " + shown)
            if section is not None:
                self.warnings.append("Ignoring -%s.%s on the command line: network sections "
                                     "apply only in the configuration file" % (section, name))
                continue
            if name == "includeconf" and not negated:
                raise ConfigError(_CMDLINE_ERROR + "-includeconf cannot be used from "
                                  "commandline; -includeconf=" + value)
            self._record(self._cmdline, name, name, value, negated, _CMDLINE_ERROR)

    # -- step 2 ---------------------------------------------------------------

    def read_config_files(self) -> None:
        """Check the datadir, read coin.conf (and its includes), select the network."""
        self.datadir = self._resolve_datadir('Error: Specified data directory "%s" does not '
                                             'exist.')
        self.conf_path = os.path.join(self.datadir, self.get("conf", CONF_FILENAME))
        if not self.is_negated("conf"):  # -noconf: no configuration file at all
            self._apply_file(self._read_conf())
        first_network = self._select_network()
        if self._cmdline.get("includeconf") != []:  # -noincludeconf: include nothing
            self._read_includes(first_network)
        self.network = self._select_network()
        self.datadir = self._resolve_datadir(_CONFFILE_ERROR + 'specified data directory "%s" '
                                             'does not exist.')
        self._warn_about_sections()
        self._refuse_unsupported()

    # -- lookups --------------------------------------------------------------

    def get(self, name: str, default: str | None = None) -> str | None:
        """The text of ``-name``: "0" if negated; if absent, ``default`` or the registered one."""
        sources = self._sources(name)
        if not sources:
            if default is not None:
                return default
            registered = self.registry[name].default
            if isinstance(registered, bool):
                return "1" if registered else "0"
            return None if registered is None else str(registered)
        values, last_wins = sources[0]
        if not values:
            return "0"
        return values[-1] if last_wins else values[0]

    def get_bool(self, name: str, default: bool | None = None) -> bool:
        """``-name`` as Core reads a flag: ``-name`` and ``-name=1`` are true, ``-noname`` false."""
        if not self._sources(name):
            return bool(default if default is not None else self.registry[name].default)
        return interpret_bool(self.get(name))

    def get_int(self, name: str, default: int | None = None) -> int | None:
        """``-name`` as an integer (checked when read); 0 if negated."""
        if not self._sources(name):
            return default if default is not None else self.registry[name].default
        return int(self.get(name))

    def get_all(self, name: str) -> list[str]:
        """Every value of a repeatable option, command line first; [] if negated."""
        if not self.registry[name].repeatable:
            raise ValueError("-%s is not a repeatable option" % name)
        sources = self._sources(name)
        if not sources or not sources[0][0]:
            return []
        return [value for values, _ in sources for value in values]

    def is_set(self, name: str) -> bool:
        """Whether ``-name`` was given at all (a negation counts), as Core's IsArgSet."""
        return bool(self._sources(name))

    def is_negated(self, name: str) -> bool:
        """Whether the deciding occurrence of ``-name`` is ``-noname``."""
        sources = self._sources(name)
        return bool(sources) and not sources[0][0]

    def force_set(self, name: str, value: str) -> None:
        """Override ``-name`` as if it alone were on the command line (Core's ForceSetArg)."""
        self._cmdline.pop(name, None)
        self._record(self._cmdline, name, name, value, False, "")

    @property
    def net_datadir(self) -> str:
        """The network's data directory: the datadir plus "", "testnet3" or "regtest"."""
        subdir = NETWORKS[self.network or "main"].datadir_subdir
        return os.path.join(self.datadir, subdir) if subdir else self.datadir

    def resolve_path(self, path: str, net_specific: bool = True) -> str:
        """``path`` made absolute against the network datadir (or the base datadir)."""
        base = self.net_datadir if net_specific else self.datadir
        return os.path.abspath(os.path.join(base, path))

    def cookie_path(self) -> str:
        """Where coind writes, and coin-cli reads, the RPC auth cookie (-rpccookiefile)."""
        return self.resolve_path(self.get("rpccookiefile", COOKIE_FILENAME))

    # -- internals ------------------------------------------------------------

    def _sources(self, name: str) -> list[tuple[list[str], bool]]:
        """The value lists that apply to ``name``, highest precedence first."""
        if name not in self.registry:
            raise KeyError("-%s is not a registered option" % name)
        sources = []
        if name in self._cmdline:
            sources.append((self._cmdline[name], True))
        if self.network is not None and (self.network, name) in self._file:
            sources.append((self._file[self.network, name], False))
        if self.network in (None, "main") or name not in NETWORK_ONLY:
            if (None, name) in self._file:
                sources.append((self._file[None, name], False))
        return sources

    def _interpret_negation(self, name: str, value: str) -> tuple[str, str, bool]:
        """``noname`` -> (name, "", True); ``noname=0`` is the double negative name=1."""
        if not name.startswith("no"):
            return name, value, False
        name = name[2:]
        if interpret_bool(value):
            return name, "", True
        self.warnings.append("Warning: parsed potentially confusing double-negative -%s=%s"
                             % (name, value))
        return name, "1", False

    def _record(self, store: dict, key: object, name: str, value: str, negated: bool,
                error_prefix: str) -> None:
        if negated:
            store[key] = []
            return
        if self.registry[name].kind == "int" and not _is_integer(value):
            raise ConfigError('%sInvalid integer value "%s" for -%s' % (error_prefix, value, name))
        store.setdefault(key, []).append(value)

    def _apply_file(self, entries: list[Entry]) -> None:
        for _lineno, section, raw_name, value in entries:
            name, value, negated = self._interpret_negation(raw_name, value)
            if name not in self.registry:
                shown = (section + "." if section is not None else "") + raw_name
                self.warnings.append("Ignoring unknown configuration value " + shown)
                continue
            self._record(self._file, (section, name), name, value, negated, _CONFFILE_ERROR)

    def _select_network(self) -> str:
        """Core's GetChainName, from the command line and the top part of the file only."""
        self.network = None
        regtest = self.get_bool("regtest")
        testnet = self.get_bool("testnet")
        if regtest + testnet + self.is_set("chain") > 1:
            raise ConfigError("Error: Invalid combination of -regtest, -testnet and -chain. "
                              "Can use at most one.")
        if regtest:
            return "regtest"
        if testnet:
            return "test"
        chain = self.get("chain", "main")
        if chain not in NETWORKS:
            raise ConfigError("Error: CreateBaseChainParams: Unknown chain %s." % chain)
        return chain

    def _read_conf(self) -> list[Entry]:
        """coin.conf's settings; a missing default file is fine, a missing -conf is not."""
        try:
            return read_config_file(self.conf_path)
        except OSError as e:
            if self.is_set("conf") or not isinstance(e, FileNotFoundError):
                raise ConfigError('%sspecified config file "%s" could not be opened.'
                                  % (_CONFFILE_ERROR, self.conf_path)) from None
            return []

    def _read_includes(self, network: str) -> None:
        """Read -includeconf files named in coin.conf (top part and network section)."""
        for name in self._take_includes((None, network)):
            try:
                entries = read_config_file(os.path.join(self.datadir, name))
            except OSError:
                raise ConfigError(_CONFFILE_ERROR + "Failed to include configuration file "
                                  + name) from None
            self._apply_file(entries)
        for name in self._take_includes((None, network, self._select_network())):
            self.warnings.append("warning: -includeconf cannot be used from included files; "
                                 "ignoring -includeconf=" + name)

    def _take_includes(self, sections: tuple[str | None, ...]) -> list[str]:
        names: list[str] = []
        for section in dict.fromkeys(sections):
            names += self._file.pop((section, "includeconf"), [])
        return names

    def _resolve_datadir(self, missing_message: str) -> str:
        if not self.is_set("datadir"):
            return default_datadir(self._environ)
        value = self.get("datadir")
        if not value or not os.path.isdir(value):
            raise ConfigError(missing_message % value)
        return os.path.abspath(value)

    def _refuse_unsupported(self) -> None:
        """Stop on a Core option this node registers as refused, unless it is given the
        value the node already behaves as (``-upnp=0``, ``-noproxy``)."""
        for option in self.registry:
            if not option.refused or not self.is_set(option.name):
                continue
            values = (self.get_all(option.name) if option.repeatable
                      else [self.get(option.name)]) or ["0"]
            if option.kind == "bool":
                refused = any(interpret_bool(value) != option.node_does for value in values)
            else:  # a text or number: only off ("0", empty, negated) is what the node does
                refused = any(value not in ("", "0") for value in values)
            if refused:
                raise ConfigError("Error: -%s is not supported by this node: %s"
                                  % (option.name, option.refused))

    def _warn_about_sections(self) -> None:
        unknown = {section for section, _ in self._file
                   if section is not None and section not in NETWORKS}
        for section in sorted(unknown):
            self.warnings.append("Warning: Section [%s] is not recognized." % section)
        if self.network == "main":
            return
        for name in sorted(NETWORK_ONLY):
            if (name in self._cmdline or (self.network, name) in self._file
                    or (None, name) not in self._file):
                continue
            self.warnings.append("Warning: Config setting for -%s only applied on %s network "
                                 "when in [%s] section." % (name, self.network, self.network))


def parse_args(argv: list[str], known: OptionRegistry,
               environ: dict[str, str] | None = None) -> Config:
    """Both steps at once, for programs without a -help to answer in between."""
    config = Config(known, environ)
    config.parse_command_line(argv)
    config.read_config_files()
    return config
