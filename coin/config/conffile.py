"""coin.conf syntax: ``name=value`` lines, ``#`` comments, ``[section]`` headers.

The rules are Core's (0.18 wording of the errors, which names the line): a line
is cut at the first ``#``, trimmed of spaces, tabs, CR and LF; ``[x]`` starts
section ``x``; ``name=value`` splits at the first ``=``; anything else is an
error. Lines are split on LF only, as ``std::getline`` does.
"""

from __future__ import annotations

from coin.config.errors import ConfigError

_BLANKS = " \t\r\n"
_PREFIX = "Error reading configuration file: "

#: One setting: (line number, section or None for the top part, name, value).
#: ``[regtest]`` followed by ``rpcport=1`` and a top-level ``regtest.rpcport=1``
#: both give section ``"regtest"``, name ``"rpcport"``.
Entry = tuple[int, "str | None", str, str]


def parse_config_text(text: str) -> list[Entry]:
    """The settings of a coin.conf text, in file order; ConfigError on a bad line."""
    entries: list[Entry] = []
    prefix = ""
    for lineno, line in enumerate(text.split("\n"), 1):
        used_hash = "#" in line
        line = line.partition("#")[0].strip(_BLANKS)
        if not line:
            continue
        if line[0] == "[" and line[-1] == "]":
            prefix = line[1:-1] + "."
            continue
        if line[0] == "-":
            raise ConfigError("%sparse error on line %d: %s, options in configuration file "
                              "must be specified without leading -" % (_PREFIX, lineno, line))
        key, eq, value = line.partition("=")
        if not eq:
            hint = ""
            if line.startswith("no"):
                hint = (", if you intended to specify a negated option, use %s=1 instead"
                        % line)
            raise ConfigError("%sparse error on line %d: %s%s" % (_PREFIX, lineno, line, hint))
        key = prefix + key.strip(_BLANKS)
        if used_hash and "rpcpassword" in key:
            raise ConfigError("%sparse error on line %d, using # in rpcpassword can be "
                              "ambiguous and should be avoided" % (_PREFIX, lineno))
        section, dot, name = key.partition(".")
        if dot:
            entries.append((lineno, section, name, value.strip(_BLANKS)))
        else:
            entries.append((lineno, None, key, value.strip(_BLANKS)))
    return entries


def read_config_file(path: str) -> list[Entry]:
    """The settings in the file at ``path``; OSError if it cannot be read."""
    with open(path, "rb") as f:
        data = f.read()
    return parse_config_text(data.decode("utf-8", "surrogateescape"))
