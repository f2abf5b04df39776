"""Parsers for RPC parameter values that several method modules share.

Type checks (string, integer, ...) belong to :mod:`coin.rpc.registry`; this
module turns already-typed values into chain objects the way Core 0.17 does.
"""

from __future__ import annotations

import re

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
