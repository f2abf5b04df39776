"""The registry of known options: each program (coind, coin-cli) builds one.

Core rejects unknown command-line options and ignores unknown coin.conf keys,
so the parser needs to know, per program, which names exist and which of them
hold integers. Components add their own options to the registry the program
passes to :func:`coin.config.parse_args`.
"""

from __future__ import annotations

#: The configuration file read from the datadir unless -conf names another.
CONF_FILENAME = "coin.conf"

#: The value kinds the parser checks: ``int`` values must parse at load time;
#: ``bool`` and ``str`` values are never rejected (Core reads ``-foo=yes`` as 0).
KINDS = ("str", "int", "bool")

#: Help layout of Core: option at 2 columns, text at 7, wrapped to 79.
_OPT_INDENT = 2
_MSG_INDENT = 7
_SCREEN_WIDTH = 79


class Option:
    """One known option. ``name`` has no leading dash; ``meta`` is the help placeholder."""

    __slots__ = ("name", "help", "default", "kind", "repeatable", "category", "meta",
                 "debug_only", "hidden", "refused", "node_does")

    def __init__(self, name: str, help: str, default: object, kind: str, repeatable: bool,
                 category: str, meta: str, debug_only: bool, hidden: bool, refused: str = "",
                 node_does: bool = False) -> None:
        self.name = name
        self.help = help
        self.default = default
        self.kind = kind
        self.repeatable = repeatable
        self.category = category
        self.meta = meta
        self.debug_only = debug_only
        self.hidden = hidden
        #: Why this node refuses the option ("" if it implements it).
        self.refused = refused
        #: For a refused flag, the value the node already behaves as: that value
        #: (``-upnp=0`` for a node without UPnP) is accepted, the other refused.  A refused
        #: text or number option is accepted only when off ("0", empty or negated).
        self.node_does = node_does

    def __repr__(self) -> str:
        return "Option(%r)" % self.name


class OptionRegistry:
    """Known options by name, in registration order."""

    def __init__(self, category_order: tuple[str, ...] = ()) -> None:
        self._options: dict[str, Option] = {}
        #: Categories -help shows first, in this order (Core's); others follow as registered.
        self.category_order = category_order

    def add(self, name: str, help: str, *, default: object = None, kind: str = "str",
            repeatable: bool = False, category: str = "Options", meta: str = "",
            debug_only: bool = False, hidden: bool = False, refused: str = "",
            node_does: bool = False) -> None:
        """Register ``-name``; registering a name twice is a programming error.

        ``refused`` registers a Core option this node does not implement: it parses (a
        Core-era command line is not "Invalid parameter"), but a value other than
        ``node_does`` stops start-up with "not supported by this node: <refused>".
        """
        if name.startswith("-"):
            raise ValueError("option names are registered without the dash: %r" % name)
        if name.startswith("no"):
            raise ValueError("-%s would read as the negation of -%s" % (name, name[2:]))
        if kind not in KINDS:
            raise ValueError("unknown option kind %r for -%s" % (kind, name))
        if name in self._options:
            raise ValueError("option -%s registered twice" % name)
        self._options[name] = Option(name, help, default, kind, repeatable, category, meta,
                                     debug_only, hidden, refused, node_does)

    def __contains__(self, name: object) -> bool:
        return name in self._options

    def __getitem__(self, name: str) -> Option:
        return self._options[name]

    def __iter__(self):
        return iter(self._options.values())

    def help_text(self, show_debug: bool = False) -> str:
        """Core's ``-help`` option list: categories in registration order, names sorted."""
        import textwrap  # only -help pays for it

        by_category: dict[str, list[Option]] = {}
        for option in self._options.values():
            if option.hidden or (option.debug_only and not show_debug):
                continue
            by_category.setdefault(option.category, []).append(option)
        rank = {category: i for i, category in enumerate(self.category_order)}
        parts = []
        for category, options in sorted(by_category.items(),
                                        key=lambda item: rank.get(item[0], len(rank))):
            parts.append(category + ":\n\n")
            for option in sorted(options, key=lambda o: o.name):
                shown = option.help
                if option.refused:
                    shown += " (not supported by this node: %s)" % option.refused
                text = textwrap.fill(shown, width=_SCREEN_WIDTH,
                                     initial_indent=" " * _MSG_INDENT,
                                     subsequent_indent=" " * _MSG_INDENT,
                                     break_on_hyphens=False)
                parts.append("%s-%s%s\n%s\n\n"
                             % (" " * _OPT_INDENT, option.name, option.meta, text))
        return "".join(parts)


def add_common_options(registry: OptionRegistry) -> None:
    """Options every program shares: where the data and coin.conf are, which chain."""
    registry.add("conf", "Specify configuration file. Relative paths will be prefixed by "
                 "datadir location. (default: %s)" % CONF_FILENAME, meta="=<file>")
    registry.add("datadir", "Specify data directory", meta="=<dir>")
    registry.add("includeconf", "Specify additional configuration file, relative to the "
                 "-datadir path (only useable from configuration file, not command line)",
                 repeatable=True, meta="=<file>")
    category = "Chain selection options"
    registry.add("chain", "Use the chain <chain> (default: main). Allowed values: main, test, "
                 "regtest", category=category, meta="=<chain>")
    registry.add("regtest", "Enter regression test mode, which uses a special chain in which "
                 "blocks can be solved instantly. This is intended for regression testing "
                 "tools and app development.", kind="bool", default=False,
                 category=category, debug_only=True)
    registry.add("testnet", "Use the test chain", kind="bool", default=False,
                 category=category)
