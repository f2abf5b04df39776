"""``-rpcauth=<user>:<salt>$<hash>`` entries: making, parsing and checking them.

The hash is HMAC-SHA256 keyed with the salt *as hex text* over the password,
in lower-case hex, as Core's share/rpcauth/rpcauth.py and httprpc.cpp do, so
entries are interchangeable with Core's. Not imported by coin-cli.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from typing import NamedTuple

from coin.config.errors import ConfigError

SALT_BYTES = 16
PASSWORD_BYTES = 32


class RpcAuth(NamedTuple):
    """One parsed -rpcauth entry."""

    user: str
    salt: str
    hash: str


def _encode(text: str) -> bytes:
    # surrogateescape: a password that arrived as non-UTF-8 bytes hashes as those bytes
    return text.encode("utf-8", "surrogateescape")


def password_hmac(salt: str, password: str) -> str:
    """The hex HMAC-SHA256 of ``password`` keyed with the ``salt`` text."""
    return hmac.new(_encode(salt), _encode(password), hashlib.sha256).hexdigest()


def generate_password() -> str:
    """A random URL-safe password (32 bytes, base64), as rpcauth.py makes."""
    return base64.urlsafe_b64encode(os.urandom(PASSWORD_BYTES)).decode("ascii")


def make_rpcauth(user: str, password: str, salt: str | None = None) -> str:
    """The ``<user>:<salt>$<hash>`` value for ``rpcauth=``; a random 16-byte hex salt by default."""
    if salt is None:
        salt = os.urandom(SALT_BYTES).hex()
    return "%s:%s$%s" % (user, salt, password_hmac(salt, password))


def parse_rpcauth(entry: str) -> RpcAuth:
    """Split an entry at ``:`` and ``$`` (Core splits at either); ConfigError unless 3 fields."""
    fields = entry.replace("$", ":").split(":")
    if len(fields) != 3:
        raise ConfigError("Invalid -rpcauth argument.")
    return RpcAuth(*fields)


def check_rpcauth(entries: list[RpcAuth], user: str, password: str) -> bool:
    """Whether ``user``/``password`` matches one of the entries (constant-time compares)."""
    for entry in entries:
        if (hmac.compare_digest(_encode(entry.user), _encode(user))
                and hmac.compare_digest(_encode(password_hmac(entry.salt, password)),
                                        _encode(entry.hash))):
            return True
    return False
