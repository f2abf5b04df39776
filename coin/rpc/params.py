"""Parsers for RPC parameter values that several method modules share.

Type checks (string, integer, ...) belong to :mod:`coin.rpc.registry`; this
module turns already-typed values into chain objects the way Core 0.17 does.
"""

from __future__ import annotations

import re
from typing import Any

from coin.primitives.hashes import is_hex
from coin.rpc.errors import RPC_INVALID_PARAMETER, RPC_MISC_ERROR, RPCError

#: What C's isspace() skips before the digits (Core's SetHex).
_C_SPACE = " \t\n\v\f\r"
_HEX_RUN = re.compile(r"[0-9a-fA-F]*")


def uint256_from_hex(text: str) -> bytes:
    """Core's ``uint256S``: a 256-bit hash in internal byte order, never an error.

    Core 0.17's blockchain methods read hashes this way, so a malformed one is
    simply an unknown block (rpcm_13: ``getblock "xyz"`` answers -5 "Block not
    found", not -8). Leading whitespace and a ``0x`` prefix are skipped, the
    run of hex digits that follows is read as a number (its last 64 digits
    when longer), and anything after the run is ignored.
    """
    digits = text.lstrip(_C_SPACE)
    if digits[:1] == "0" and digits[1:2] in ("x", "X"):
        digits = digits[2:]
    digits = _HEX_RUN.match(digits).group()[-64:]
    return int(digits or "0", 16).to_bytes(32, "little")




def _require_hex(text: str, name: str, code: int) -> None:
    if not is_hex(text):
        raise RPCError(code, "%s must be hexadecimal string (not '%s')" % (name, text))


def parse_hex_v(value: Any, name: str) -> bytes:
    """Core's ParseHexV: hex text -> bytes, else -8 "<name> must be hexadecimal string"."""
    text = value if isinstance(value, str) else ""
    _require_hex(text, name, RPC_INVALID_PARAMETER)
    return bytes.fromhex(text)


def parse_hash_str(text: str, name: str) -> bytes:
    """Core 0.17's ParseHashStr (prioritisetransaction): hex of any even length, read as
    ``uint256S`` reads it; anything else fails as a plain runtime error, -1."""
    _require_hex(text, name, RPC_MISC_ERROR)
    return uint256_from_hex(text)


def parse_hash_v(value: Any, name: str) -> bytes:
    """Core 0.17's ParseHashV: 64 hex digits (RPC order) -> internal byte order, else -8.

    Unlike :func:`uint256_from_hex`, a malformed hash is an error here, as in the
    raw-transaction, mining and governance methods.
    """
    data = parse_hex_v(value, name)
    if len(data) != 32:
        raise RPCError(RPC_INVALID_PARAMETER,
                       "%s must be of length 64 (not %d)" % (name, 2 * len(data)))
    return data[::-1]
