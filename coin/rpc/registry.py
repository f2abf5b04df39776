"""RPC method specs, argument checking, help text and entry-point discovery.

Every method is declared once as an :class:`RPCMethod`: name, category, arguments,
help text, whether it runs against a wallet, and a handler ``handler(ctx, *args)``
where ``ctx`` is an :class:`~coin.rpc.context.RPCContext` (the typed contract of
:mod:`coin.rpc.plugin`). Modules list their methods in a module-level sequence that an
entry point of group ``coin.rpc`` names; the node's own methods register exactly like a
third-party package's (style.md item 9), but a third-party distribution's load only when
``-rpcplugin`` names it (:func:`load_plugins`).

Argument errors follow Core 0.17: a wrong argument count answers -1 with the method's
help text, a value of the wrong JSON type answers -1 with UniValue's getter message
("JSON value is not an integer as expected"), or -3 "Expected type X, got Y" for
arguments declared with ``typecheck=True`` (Core's RPCTypeCheck).
"""

from __future__ import annotations

import enum
import importlib.metadata
import inspect
import re
from dataclasses import dataclass
from decimal import Decimal
from functools import cached_property
from typing import Any, Callable, Iterable, Iterator, NamedTuple, Sequence

import simplejson
from twisted.logger import Logger

from coin.views.amounts import AmountError, parse_amount
from coin.rpc.errors import RPC_INVALID_PARAMETER, RPC_MISC_ERROR, RPC_TYPE_ERROR, RPCError

log = Logger()

#: The entry-point group every RPC plugin registers under.
ENTRY_POINT_GROUP = "coin.rpc"
#: The distribution whose entry points are the built-in methods: they always load.
BUILTIN_DISTRIBUTION = "coin"
#: ``-rpcplugin=<distribution>:optional`` skips that plugin, with a warning, if it fails.
OPTIONAL_SUFFIX = ":optional"


class PluginError(Exception):
    """A method spec or plugin is unusable; the node refuses to start."""


class ArgType(enum.Enum):
    """The JSON types an argument may take, with Core's conversion rules."""

    STR = "string"
    INT = "int"        # Core's get_int: 32-bit
    INT64 = "int64"    # Core's get_int64
    BOOL = "bool"
    REAL = "real"      # a double, for non-amount numbers
    AMOUNT = "amount"  # coins as number or string -> integer base units (AmountFromValue)
    OBJ = "object"
    ARR = "array"
    ANY = "any"


STR, INT, INT64, BOOL, REAL, AMOUNT, OBJ, ARR, ANY = ArgType

#: How each type is named in an "Arguments:" help line.
_HELP_LABEL = {STR: "string", INT: "numeric", INT64: "numeric", BOOL: "boolean",
               REAL: "numeric", AMOUNT: "numeric", OBJ: "json object", ARR: "json array",
               ANY: "any"}
#: The JSON type RPCTypeCheck expects for each type (uvTypeName spelling).
_TYPECHECK_NAME = {STR: "string", INT: "number", INT64: "number", BOOL: "bool",
                   REAL: "number", AMOUNT: "number", OBJ: "object", ARR: "array"}


def json_type_name(value: Any) -> str:
    """Core's uvTypeName of a parsed JSON value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, Decimal, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, Decimal, float)) and not isinstance(value, bool)


_PY_TYPE = {STR: str, BOOL: bool, OBJ: dict, ARR: list}


def _accepts(kind: ArgType, value: Any) -> bool:
    """Whether ``value`` has the JSON type ``kind`` reads (before range checks)."""
    if kind in (INT, INT64, REAL):
        return _is_number(value)
    if kind is AMOUNT:
        return _is_number(value) or isinstance(value, str)
    return kind is ANY or isinstance(value, _PY_TYPE[kind])


def _misc(message: str) -> RPCError:
    return RPCError(RPC_MISC_ERROR, message)


def _get_int(value: Any, bits: int) -> int:
    if not _is_number(value):
        raise _misc("JSON value is not an integer as expected")
    if not isinstance(value, int) or not -(1 << (bits - 1)) <= value < 1 << (bits - 1):
        raise _misc("JSON integer out of range")
    return value


def _get_int32(value: Any) -> int:
    if type(value) is int and -0x80000000 <= value < 0x80000000:
        return value  # the common case, checked first
    return _get_int(value, 32)


def _get_real(value: Any) -> float:
    if not _is_number(value):
        raise _misc("JSON value is not a number as expected")
    result = float(value)
    if result in (float("inf"), float("-inf")):
        raise _misc("JSON double out of range")
    return result


def amount_from_value(value: Any) -> int:
    """Core's AmountFromValue for AMOUNT arguments: coins -> base units, or -3."""
    try:
        return parse_amount(value)
    except AmountError as e:
        raise RPCError(RPC_TYPE_ERROR, e.message) from None


def _typed(kind: ArgType, message: str) -> Callable[[Any], Any]:
    def get(value: Any) -> Any:
        if not isinstance(value, _PY_TYPE[kind]):
            raise _misc(message)
        return value
    return get


_CONVERT: dict[ArgType, Callable[[Any], Any]] = {
    STR: _typed(STR, "JSON value is not a string as expected"),
    INT: _get_int32,
    INT64: lambda value: _get_int(value, 64),
    BOOL: _typed(BOOL, "JSON value is not a boolean as expected"),
    REAL: _get_real,
    AMOUNT: amount_from_value,
    OBJ: _typed(OBJ, "JSON value is not an object as expected"),
    ARR: _typed(ARR, "JSON value is not an array as expected"),
    ANY: lambda value: value,
}


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


#: Default of an argument that must be given.
REQUIRED: Any = _Required()


@dataclass(frozen=True)
class Arg:
    """One argument: its name(s), accepted type(s), default and one-line help.

    ``type`` may be a tuple: the value is read as the first type whose JSON type it has
    (Core's ``isNum() ? get_int() : get_bool()`` pattern); if none matches, the last
    type's error is raised. An optional argument given as JSON null takes its default.
    ``aliases`` are further names for named parameters (Core's ``"verbosity|verbose"``).
    A ``variadic`` last argument collects all remaining positional values.
    """

    name: str
    type: ArgType | tuple[ArgType, ...]
    default: Any = REQUIRED
    help: str = ""
    aliases: tuple[str, ...] = ()
    typecheck: bool = False
    variadic: bool = False

    # Cached: both are read for every argument of every call.
    @cached_property
    def types(self) -> tuple[ArgType, ...]:
        return self.type if isinstance(self.type, tuple) else (self.type,)

    @cached_property
    def required(self) -> bool:
        return self.default is REQUIRED and not self.variadic

    @property
    def label(self) -> str:
        """The argument as help shows it: string arguments are quoted, as in Core."""
        return f'"{self.name}"' if self.types[0] is STR else self.name

    def convert(self, value: Any) -> Any:
        """The handler's value for the JSON ``value`` given at this position."""
        if value is None and not self.required and not self.variadic:
            return self.default
        types = self.types
        if self.typecheck and types[0] is not ANY and not any(_accepts(t, value) for t in types):
            raise RPCError(RPC_TYPE_ERROR, "Expected type %s, got %s"
                           % (_TYPECHECK_NAME[types[0]], json_type_name(value)))
        for kind in types[:-1]:
            if _accepts(kind, value):
                return _CONVERT[kind](value)
        return self._last_converter(value)

    @cached_property
    def _last_converter(self) -> Callable[[Any], Any]:
        return _CONVERT[self.types[-1]]  # (an Enum's hash is Python code: look it up once)

    @cached_property
    def converter(self) -> Callable[[Any], Any]:
        """:meth:`convert` with what depends only on the declaration decided once: for an
        argument of one type without ``typecheck``, the type's own conversion (unless a
        subclass reads its values in a way of its own)."""
        if self.typecheck or len(self.types) > 1 or type(self).convert is not Arg.convert:
            return self.convert
        get = self._last_converter
        if self.required or self.variadic:
            return get
        default = self.default
        return lambda value: default if value is None else get(value)

    def help_line(self, position: int) -> str:
        kinds = " or ".join(dict.fromkeys(_HELP_LABEL[t] for t in self.types))
        if self.required:
            presence = "required"
        elif self.default is None or self.variadic:
            presence = "optional"
        else:
            presence = "optional, default=" + simplejson.dumps(self.default, default=str)
        return f"{position}. {self.label:<15}({kinds}, {presence}) {self.help}".rstrip() + "\n"


@dataclass(frozen=True)
class ReadByHandler(Arg):
    """An argument handed over as raw JSON, read by the handler when Core reads it.

    Core reads arguments in its handler's order, so a later argument's type error can
    come after an earlier argument's own error (disconnectnode's ``nodeid`` once it has
    checked that ``address`` and ``nodeid`` are not both given; getchaintxstats's
    ``nblocks`` after its block hash is looked up). Help shows the declared type.
    """

    def convert(self, value: Any) -> Any:
        return value

    def read(self, value: Any) -> Any:
        """The value as the declared type reads it (its default when JSON null)."""
        return super().convert(value)


class _Layout(NamedTuple):
    """Arguments without the variadic one, the variadic one, how many are required."""

    fixed: tuple[Arg, ...]
    rest: Arg | None
    required: int


def _layout(args: Sequence[Arg]) -> _Layout:
    fixed = tuple(arg for arg in args if not arg.variadic)
    return _Layout(fixed, args[-1] if args and args[-1].variadic else None,
                   sum(arg.required for arg in fixed))


def convert_params(args: Sequence[Arg], params: Sequence[Any], usage: str,
                   layout: _Layout | None = None) -> list[Any]:
    """Check the count of positional ``params`` against ``args`` and convert each.

    A wrong count raises -1 with ``usage`` (Core answers the help text). ``layout`` is
    ``args``' :func:`_layout`, if the caller keeps it.
    """
    fixed, rest, required = layout or _layout(args)
    given = len(params)
    if given < required or (rest is None and given > len(fixed)):
        raise _misc(usage)
    values = [arg.converter(value) for arg, value in zip(fixed, params)]
    if given < len(fixed):
        values.extend(arg.default for arg in fixed[given:])
    elif rest is not None:
        values.extend(rest.converter(value) for value in params[len(fixed):])
    return values


@dataclass(frozen=True)
class RPCMethod:
    """A registered RPC method.

    ``help_text`` is the complete text ``help <name>`` prints; its first line is the
    method's entry in the ``help`` listing. Category "hidden" keeps a method out of it.
    ``chain_only`` declares that the answer (result or error) depends only on the
    parameters and the published chain snapshot, and that the handler answers at once:
    the core may then reuse an encoded answer until the snapshot changes.
    """

    name: str
    category: str
    handler: Callable[..., Any]
    help_text: str
    args: tuple[Arg, ...] = ()
    needs_wallet: bool = False
    chain_only: bool = False

    def bind_params(self, params: list[Any] | dict[str, Any]) -> list[Any]:
        """Positional parameters from a request's ``params`` (array or object).

        Named parameters map onto declared names and aliases; unspecified positions
        before a given one are filled with null (Core 0.17). A key ``args`` holding an
        array supplies leading positional values (Core 25); a named parameter that
        lands on one of those positions is an error.
        """
        if isinstance(params, list):
            return params
        named = dict(params)
        slots: list[Any] = []
        given_at: dict[int, str] = {}
        hole = 0
        for index, arg in enumerate(a for a in self.args if not a.variadic):
            key = next((n for n in (arg.name, *arg.aliases) if n in named), None)
            if key is None:
                hole += 1
                continue
            slots.extend([None] * hole)
            hole = 0
            slots.append(named.pop(key))
            given_at[index] = key
        leading = named.get("args")
        if isinstance(leading, list):
            del named["args"]
            clash = [given_at[i] for i in sorted(given_at) if i < len(leading)]
            if clash:
                raise RPCError(RPC_INVALID_PARAMETER, "Parameter %s specified twice both as "
                               "positional and as named argument" % clash[0])
            slots = list(leading) + slots[len(leading):]
        if named:
            raise RPCError(RPC_INVALID_PARAMETER, "Unknown named parameter " + next(iter(named)))
        return slots

    def convert(self, params: Sequence[Any]) -> Sequence[Any]:
        """The handler's arguments for positional ``params``; errors as Core's."""
        return self._converter(params)

    @cached_property
    def _converter(self) -> Callable[[Sequence[Any]], Sequence[Any]]:
        """:func:`convert_params` for this method's arguments, with the commonest shapes
        (no argument; one, given) decided once: a batch runs it for every call."""
        layout = self._layout
        if layout.rest is None and not layout.fixed:
            def convert_none(params: Sequence[Any]) -> Sequence[Any]:
                if params:
                    raise _misc(self.help_text)
                return ()
            return convert_none
        if layout.rest is None and len(layout.fixed) == 1:
            converter = layout.fixed[0].converter

            def convert_one(params: Sequence[Any]) -> Sequence[Any]:
                if len(params) == 1:
                    return (converter(params[0]),)
                return convert_params(self.args, params, self.help_text, layout)
            return convert_one
        return lambda params: convert_params(self.args, params, self.help_text, layout)

    @cached_property
    def _layout(self) -> _Layout:
        return _layout(self.args)


def example_cli(method: str, args: str = "") -> str:
    """Core's HelpExampleCli line."""
    return f"> coin-cli {method} {args}\n"


def example_rpc(method: str, args: str = "") -> str:
    """Core's HelpExampleRpc line (with the reference node's port, byte for byte)."""
    return ("> curl --user myusername --data-binary '{\"jsonrpc\": \"1.0\", \"id\":\"curltest\", "
            f"\"method\": \"{method}\", \"params\": [{args}] }}' "
            "-H 'content-type: text/plain;' http://127.0.0.1:8332/\n")


def signature_line(name: str, args: Sequence[Arg]) -> str:
    """``name req ( opt1 opt2 )`` as Core's RPCHelpMan prints it."""
    parts = [name]
    optional = False
    for arg in args:
        if not arg.required and not optional:
            parts.append("(")
            optional = True
        parts.append(arg.label + ("..." if arg.variadic else ""))
    if optional:
        parts.append(")")
    return " ".join(parts)


def compose_help(name: str, args: Sequence[Arg], description: str = "", result: str = "",
                 examples: str = "", signature: str | None = None) -> str:
    """Core's help layout: signature, description, Arguments, Result, Examples."""

    def section(text: str) -> str:
        return text if text.endswith("\n") else text + "\n"

    text = (signature if signature is not None else signature_line(name, args)) + "\n"
    if description:
        text += "\n" + section(description)
    if args:
        text += "\nArguments:\n" + "".join(arg.help_line(i) for i, arg in enumerate(args, 1))
    if result:
        text += "\nResult:\n" + section(result)
    if examples:
        text += "\nExamples:\n" + section(examples)
    return text


def rpc_method(name: str, *, category: str, args: Sequence[Arg] = (), help: str = "",
               result: str = "", examples: str = "", signature: str | None = None,
               needs_wallet: bool = False, chain_only: bool = False
               ) -> Callable[[Callable[..., Any]], RPCMethod]:
    """Decorator turning ``handler(ctx, *args)`` into an :class:`RPCMethod`.

    The help text is composed from ``help`` (the description), the argument lines,
    ``result`` and ``examples``; ``signature`` overrides the generated first line.
    """

    def declare(handler: Callable[..., Any]) -> RPCMethod:
        return RPCMethod(name=name, category=category, handler=handler, args=tuple(args),
                         needs_wallet=needs_wallet, chain_only=chain_only,
                         help_text=compose_help(name, args, help, result, examples, signature))

    return declare


@dataclass(frozen=True)
class SubCommand:
    """One sub-command of a family such as ``gobject`` or ``masternode``.

    ``handler(ctx, *args)`` gets the values after the sub-command word, checked against
    ``args``; a wrong count answers -1 with ``usage`` (Dash's "Correct usage is ...")
    or, when empty, with the family's help. ``label`` replaces the name in the list
    (e.g. ``start-<mode>`` for the aliases ``start-all``, ``start-missing``).
    """

    name: str
    handler: Callable[..., Any]
    args: tuple[Arg, ...] = ()
    summary: str = ""
    usage: str = ""
    label: str | None = None
    aliases: tuple[str, ...] = ()


def command_family(name: str, *, category: str, help: str, subcommands: Sequence[SubCommand],
                   width: int | None = None, needs_wallet: bool = False) -> RPCMethod:
    """An RPC method whose first positional word selects a :class:`SubCommand`.

    ``help`` is the text before the "Available commands:" list (signature line first);
    the list shows each label padded to ``width`` (default: the longest). A missing or
    unknown sub-command answers -1 with the whole help text, as Dash does.
    """
    by_name: dict[str, SubCommand] = {}
    for sub in subcommands:
        problem = _handler_problem(sub.handler, sub.args)
        if problem:
            raise PluginError(f"{name} {sub.name}: {problem}")
        for word in (sub.name, *sub.aliases):
            if word in by_name:
                raise PluginError(f"{name}: sub-command {word!r} is declared twice")
            by_name[word] = sub
    pad = width if width is not None else max((len(s.label or s.name) for s in subcommands),
                                              default=0)
    help_text = help + "\nAvailable commands:\n" + "".join(
        f"  {(sub.label or sub.name):<{pad}} - {sub.summary}\n" for sub in subcommands)

    def dispatch(ctx: Any, command: str, *args: Any) -> Any:
        sub = by_name.get(command)
        if sub is None:
            raise _misc(help_text)
        return sub.handler(ctx, *convert_params(sub.args, args, sub.usage or help_text))

    return RPCMethod(name=name, category=category, handler=dispatch, help_text=help_text,
                     args=(Arg("command", STR, help="The command to execute"),
                           Arg("args", ANY, variadic=True)),
                     needs_wallet=needs_wallet)


def _spec_problem(method: RPCMethod) -> str | None:
    """Why ``method`` cannot be registered, or None."""
    if not isinstance(method.name, str) or not method.name or method.name.split() != [method.name]:
        return "method name must be a non-empty string without whitespace"
    if not isinstance(method.category, str) or not method.category:
        return f"{method.name}: category must be a non-empty string"
    if not isinstance(method.help_text, str) or not method.help_text:
        return f"{method.name}: help text must be a non-empty string"
    if not callable(method.handler):
        return f"{method.name}: handler is not callable"
    names: set[str] = set()
    seen_optional = False
    for position, arg in enumerate(method.args):
        if not isinstance(arg, Arg) or not all(isinstance(t, ArgType) for t in arg.types):
            return f"{method.name}: argument {position + 1} is not an Arg of ArgType types"
        for word in (arg.name, *arg.aliases):
            if word in names:
                return f"{method.name}: argument name {word!r} is used twice"
            names.add(word)
        if arg.variadic and position != len(method.args) - 1:
            return f"{method.name}: only the last argument may be variadic"
        if arg.required and seen_optional:
            return f"{method.name}: required argument {arg.name!r} follows an optional one"
        seen_optional = seen_optional or not arg.required
    problem = _handler_problem(method.handler, method.args)
    return f"{method.name}: {problem}" if problem else None


_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def _handler_problem(handler: Callable[..., Any], args: Sequence[Arg]) -> str | None:
    """Why ``handler`` cannot serve ``args``, or None.

    It must take the context, then one positional parameter per fixed argument under the
    argument's name (named JSON parameters bind by these names, so a mismatch is a bug
    waiting for the first named call) or a ``*values`` taking the rest, and ``*values``
    for a variadic last argument.
    """
    try:
        signature = inspect.signature(handler)
    except (TypeError, ValueError):
        return None  # a builtin without a signature: nothing more to check
    fixed = [arg for arg in args if not arg.variadic]
    variadic = bool(args) and args[-1].variadic
    extra = 2 if variadic else 0
    try:
        signature.bind(None, *([None] * (len(fixed) + extra)))
    except TypeError:
        return (f"handler must accept the context and {len(fixed)} argument(s)"
                + (" plus any number more" if variadic else ""))
    parameters = list(signature.parameters.values())[1:]
    for position, (arg, parameter) in enumerate(zip(fixed, parameters), 1):
        if parameter.kind is inspect.Parameter.VAR_POSITIONAL:
            break  # ``*values`` takes this argument and the rest as one tuple
        if parameter.kind not in _POSITIONAL or parameter.name != arg.name:
            return (f"handler parameter {position} is {parameter.name!r} but the declared "
                    f"argument is {arg.name!r}")
    if variadic and not any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters):
        return f"handler must take *{args[-1].name} for the variadic argument"
    return None


class MethodTable:
    """The methods a server answers, by name, with where each came from."""

    def __init__(self, methods: Iterable[RPCMethod] = (), origin: str = "<direct>") -> None:
        self._methods: dict[str, RPCMethod] = {}
        self._origins: dict[str, str] = {}
        #: Names of the methods declared ``chain_only`` (the core's answer cache asks).
        self.chain_only: set[str] = set()
        for method in methods:
            self.add(method, origin)

    def add(self, method: RPCMethod, origin: str = "<direct>") -> None:
        """Register ``method``; a bad spec or a duplicate name raises PluginError."""
        self.add_all([(method, origin)])

    def add_all(self, methods: Sequence[tuple[RPCMethod, str]]) -> None:
        """Register each ``(method, origin)``, all or none: PluginError before any is added."""
        origins = dict(self._origins)
        for method, origin in methods:
            if not isinstance(method, RPCMethod):
                raise PluginError(f"RPC plugin {origin}: {method!r} is not an RPCMethod")
            problem = _spec_problem(method)
            if problem:
                raise PluginError(f"RPC plugin {origin}: {problem}")
            if method.name in origins:
                raise PluginError(f"RPC method {method.name!r} is registered twice: by "
                                  f"{origins[method.name]} and by {origin}")
            origins[method.name] = origin
        for method, origin in methods:
            self._methods[method.name] = method
            if method.chain_only:
                self.chain_only.add(method.name)
        self._origins = origins

    def get(self, name: str) -> RPCMethod | None:
        return self._methods.get(name)

    def origin(self, name: str) -> str:
        """The plugin (distribution and entry point) that registered ``name``."""
        return self._origins[name]

    def __contains__(self, name: object) -> bool:
        return name in self._methods

    def __iter__(self) -> Iterator[RPCMethod]:
        return iter(self._methods.values())

    def __len__(self) -> int:
        return len(self._methods)

    def help(self, command: str | None = None) -> str:
        """Core's ``help``: one method's text, or every visible method by category."""
        if command:
            method = self._methods.get(command)
            return method.help_text if method else f"help: unknown command: {command}"
        lines: list[str] = []
        category = None
        visible = (m for m in self._methods.values() if m.category != "hidden")
        for method in sorted(visible, key=lambda m: m.category + m.name):
            if method.category != category:
                if category is not None:
                    lines.append("")
                category = method.category
                lines.append(f"== {category[:1].upper()}{category[1:]} ==")
            lines.append(method.help_text.split("\n", 1)[0])
        return "\n".join(lines)


def _origin(entry_point: importlib.metadata.EntryPoint) -> str:
    dist = entry_point.dist
    where = f"entry point {entry_point.name} = {entry_point.value}"
    return f"{dist.name} {dist.version} ({where})" if dist is not None else where


def canonical_name(distribution: str) -> str:
    """A distribution name as pip compares them (PEP 503): case, ``-``, ``_``, ``.`` ignored."""
    return re.sub(r"[-_.]+", "-", distribution).lower()


@dataclass(frozen=True)
class PluginRequest:
    """One ``-rpcplugin`` value: a distribution to load, and whether it may be skipped."""

    distribution: str
    optional: bool = False

    @classmethod
    def parse(cls, value: str) -> PluginRequest:
        """``<distribution>`` or ``<distribution>:optional``; anything else is PluginError."""
        name, optional = value, value.endswith(OPTIONAL_SUFFIX)
        if optional:
            name = value[:-len(OPTIONAL_SUFFIX)]
        if not re.fullmatch(r"[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?", name):
            raise PluginError(f"-rpcplugin={value}: expected a distribution name, optionally "
                              f"followed by {OPTIONAL_SUFFIX}")
        return cls(name, optional)


def _load_entry_point(entry_point: importlib.metadata.EntryPoint) -> list[tuple[RPCMethod, str]]:
    """The ``(method, origin)`` pairs one entry point names; PluginError naming it if unusable."""
    origin = _origin(entry_point)
    try:
        loaded = entry_point.load()
    except Exception as exc:
        raise PluginError(f"RPC plugin {origin} failed to load: {exc!r}") from exc
    if isinstance(loaded, RPCMethod):
        loaded = [loaded]
    elif not isinstance(loaded, (list, tuple)):
        raise PluginError(f"RPC plugin {origin}: expected an RPCMethod or a list of them, "
                          f"got {type(loaded).__name__}")
    return [(method, origin) for method in loaded]


def _load_distribution(table: MethodTable,
                       entry_points: Sequence[importlib.metadata.EntryPoint]) -> None:
    """Add every method of one distribution's entry points, all or none."""
    ordered = sorted(entry_points, key=lambda ep: ep.name)
    table.add_all([pair for entry_point in ordered for pair in _load_entry_point(entry_point)])


def load_plugins(plugins: Iterable[str] = (), *, group: str = ENTRY_POINT_GROUP,
                 entry_points: Iterable[importlib.metadata.EntryPoint] | None = None
                 ) -> MethodTable:
    """The method table: the built-in methods, then each plugin ``-rpcplugin`` names.

    ``plugins`` are ``-rpcplugin`` values in the order given. Entry points of the
    ``coin`` distribution (or without one: passed in directly) always load; another
    distribution's load only when named. A named plugin that is not installed, fails to
    import, declares a bad spec or a method name already taken raises PluginError naming
    it and the reason (the node refuses to start); with ``:optional`` it is logged and
    skipped instead, none of its methods registered. No method at all means coin itself
    is not installed.
    """
    requests = [PluginRequest.parse(value) for value in plugins]
    if entry_points is None:
        entry_points = importlib.metadata.entry_points(group=group)
    by_distribution: dict[str | None, list[importlib.metadata.EntryPoint]] = {}
    for entry_point in entry_points:
        dist = entry_point.dist
        key = canonical_name(dist.name) if dist is not None else None
        by_distribution.setdefault(key, []).append(entry_point)
    table = MethodTable()
    for key in (None, BUILTIN_DISTRIBUTION):
        _load_distribution(table, by_distribution.get(key, []))
    loaded = {None, BUILTIN_DISTRIBUTION}
    for request in requests:
        key = canonical_name(request.distribution)
        if key in loaded:
            continue  # named twice, or the built-ins named: already there
        loaded.add(key)
        try:
            found = by_distribution.get(key)
            if not found:
                raise PluginError(f"RPC plugin {request.distribution} is not installed: no "
                                  f"distribution of that name has {group!r} entry points")
            _load_distribution(table, found)
        except PluginError as e:
            if not request.optional:
                raise
            log.warn("Skipping optional RPC plugin {plugin}: {error}",
                     plugin=request.distribution, error=str(e))
    if not len(table):
        raise PluginError(f"no RPC methods are registered in entry-point group {group!r}; "
                          "is coin installed (pip install -e .)?")
    return table
