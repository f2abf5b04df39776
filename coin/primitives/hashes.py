"""Hash functions of the chain and the two byte orders a hash is shown in.

Hashes are kept in *internal* byte order (as SHA256d produces them); RPC, REST
and logs show them reversed, as Core does.
"""

from __future__ import annotations

import hashlib
import re
from typing import Callable

_sha256 = hashlib.sha256
_HEX64 = re.compile(r"[0-9a-fA-F]{64}\Z")
_HEX_PAIRS = re.compile(r"(?:[0-9a-fA-F]{2})+\Z")


def sha256(data: bytes) -> bytes:
    return _sha256(data).digest()


def sha256d(data: bytes) -> bytes:
    """Double SHA-256: transaction ids, block hashes, checksums."""
    return _sha256(_sha256(data).digest()).digest()


def _ripemd160_factory() -> Callable[[bytes], bytes]:
    """A RIPEMD-160 constructor: OpenSSL's if it has one, else pycryptodome's."""
    try:
        prototype = hashlib.new("ripemd160")
    except ValueError:  # OpenSSL 3 without the legacy provider
        from Crypto.Hash import RIPEMD160

        return lambda data: RIPEMD160.new(data).digest()

    def ripemd160(data: bytes) -> bytes:
        h = prototype.copy()
        h.update(data)
        return h.digest()

    return ripemd160


ripemd160 = _ripemd160_factory()


def hash160(data: bytes) -> bytes:
    """RIPEMD-160 of SHA-256: key and script hashes in addresses."""
    return ripemd160(_sha256(data).digest())


def hash_to_hex(h: bytes) -> str:
    """Internal-order hash -> RPC hex (reversed)."""
    return h[::-1].hex()


def hex_to_hash(s: str) -> bytes:
    """RPC hex (reversed) -> internal-order hash; raises ValueError if malformed."""
    if not _HEX64.match(s):
        raise ValueError("hash must be 64 hex characters")
    return bytes.fromhex(s)[::-1]


def is_hex_hash(s: str) -> bool:
    """True for exactly 64 hex digits (Core's IsHex + length check)."""
    return _HEX64.match(s) is not None


def is_hex(text: str) -> bool:
    """Core's IsHex: a non-empty, even-length run of hex digits and nothing else."""
    return _HEX_PAIRS.match(text) is not None
