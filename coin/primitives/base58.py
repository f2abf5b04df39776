"""Base58 and Base58Check encoding."""

from __future__ import annotations

from coin.primitives.hashes import sha256d

ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_INDEX = {c: i for i, c in enumerate(ALPHABET)}


class Base58Error(ValueError):
    """Not valid Base58 / Base58Check text."""


#: Every two-digit string, so that encoding takes half the big-number divisions.
_PAIRS = [high + low for high in ALPHABET for low in ALPHABET]


def b58encode(data: bytes) -> str:
    n = int.from_bytes(data, "big")
    out = []
    while n:
        n, rem = divmod(n, 58 * 58)
        out.append(_PAIRS[rem])
    pad = len(data) - len(data.lstrip(b"\x00"))
    # The top pair may start with a zero digit ("1"), which is not part of the number.
    return "1" * pad + "".join(reversed(out)).lstrip("1")


def b58decode(text: str) -> bytes:
    n = 0
    for c in text:
        try:
            n = n * 58 + _INDEX[c]
        except KeyError:
            raise Base58Error("invalid base58 character") from None
    body = n.to_bytes((n.bit_length() + 7) // 8, "big") if n else b""
    pad = len(text) - len(text.lstrip("1"))
    return b"\x00" * pad + body


def b58check_encode(payload: bytes) -> str:
    return b58encode(payload + sha256d(payload)[:4])


def b58check_decode(text: str) -> bytes:
    raw = b58decode(text)
    if len(raw) < 4 or sha256d(raw[:-4])[:4] != raw[-4:]:
        raise Base58Error("invalid checksum")
    return raw[:-4]
