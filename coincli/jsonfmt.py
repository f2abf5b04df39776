"""JSON as coin-cli reads and writes it, matching Core's UniValue byte for byte.

Numbers keep the text they arrived with (``50.00000000`` and ``2.464473435555347e-05``
print unchanged, and a ``0.10000000`` argument is sent as typed); output uses
UniValue's layout: ``"key": value``, 2-space indent, and empty containers printed
as ``[`` newline ``]``; strings escape only quotes, backslashes and control
characters, leaving non-ASCII text as UTF-8.
"""

from __future__ import annotations

import json


class RawNumber(str):
    """A JSON number held as its source text."""

    __slots__ = ()


def _reject_constant(name: str) -> None:
    raise ValueError("%s is not JSON" % name)


def loads(text: str) -> object:
    """Parse JSON text; ValueError (or RecursionError) if it is not JSON."""
    return json.loads(text, parse_int=RawNumber, parse_float=RawNumber,
                      parse_constant=_reject_constant)


_ESCAPES = {ch: "\\u%04x" % ch for ch in range(0x20)}
_ESCAPES.update({ord('"'): '\\"', ord("\\"): "\\\\", ord("\b"): "\\b", ord("\f"): "\\f",
                 ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t", 0x7f: "\\u007f"})


def _quote(text: str) -> str:
    return '"' + text.translate(_ESCAPES) + '"'


def dumps(value: object, indent: int = 0) -> str:
    """``value`` as UniValue's ``write(indent)`` renders it (compact when indent is 0)."""
    out: list[str] = []
    _write(value, indent, 1, out)
    return "".join(out)


def _write(value: object, indent: int, level: int, out: list[str]) -> None:
    if value is None:
        out.append("null")
    elif value is True or value is False:
        out.append("true" if value else "false")
    elif isinstance(value, RawNumber):
        out.append(value)
    elif isinstance(value, str):
        out.append(_quote(value))
    elif isinstance(value, int):
        out.append(str(value))
    elif isinstance(value, (dict, list)):
        is_object = isinstance(value, dict)
        out.append("{" if is_object else "[")
        if indent:
            out.append("\n")
        items = list(value.items()) if is_object else value
        for i, item in enumerate(items):
            if indent:
                out.append(" " * (indent * level))
            if is_object:
                key, item = item
                out.append(_quote(key) + (": " if indent else ":"))
            _write(item, indent, level + 1, out)
            if i != len(items) - 1:
                out.append(",")
            if indent:
                out.append("\n")
        if indent:
            out.append(" " * (indent * (level - 1)))
        out.append("}" if is_object else "]")
    else:
        raise TypeError("cannot write %r as JSON" % (value,))
