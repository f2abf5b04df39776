"""RPC authentication and access policy: credentials, cookie, whitelist, allowed IPs, binding.

Nothing here speaks HTTP; the web resource asks these objects and answers 401/403
itself (the delayed 401 lives there, on the reactor's clock).
"""

from __future__ import annotations

import binascii
import hmac
import ipaddress
import os
import re
import secrets
from pathlib import Path
from typing import Iterable, Sequence

from twisted.internet.interfaces import IAddress

from coin.config.hostport import split_host_port
from coin.config.errors import ConfigError
from coin.config.rpcauth import RpcAuth, parse_rpcauth, password_hmac

#: User name of cookie authentication.
COOKIE_USER = "__cookie__"


def generate_cookie(path: str | os.PathLike[str]) -> str:
    """Write ``__cookie__:<64 hex digits>`` to ``path`` (mode 0600) and return the password.

    The file is written under a temporary name and renamed, so a client never reads a
    half-written cookie.
    """
    password = secrets.token_hex(32)
    path = Path(path)
    temporary = path.with_name(path.name + ".tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, f"{COOKIE_USER}:{password}".encode("ascii"))
    finally:
        os.close(fd)
    os.replace(temporary, path)
    return password


def delete_cookie(path: str | os.PathLike[str]) -> None:
    """Remove the cookie file at shutdown; a missing file is fine."""
    try:
        Path(path).unlink()
    except FileNotFoundError:
        pass


class Authenticator:
    """Checks HTTP basic credentials against every configured credential.

    Sources: ``rpcuser:rpcpassword`` (or the cookie) and each ``rpcauth`` entry. Every
    credential is compared, in constant time, whatever matched earlier, so timing does
    not reveal which user name exists (``coin.config.rpcauth.check_rpcauth`` stops at
    the first match, hence the loop here; the hash itself is that module's).
    """

    def __init__(self, userpass: tuple[str, str] | None = None,
                 rpcauth: Iterable[RpcAuth] = (), cookie_path: Path | None = None) -> None:
        self._userpass = (None if userpass is None
                          else ":".join(userpass).encode("utf-8", "surrogateescape"))
        self._rpcauth = list(rpcauth)
        #: The cookie file this authenticator created, to delete at shutdown.
        self.cookie_path = cookie_path

    @classmethod
    def from_options(cls, *, rpcuser: str = "", rpcpassword: str = "",
                     rpcauth: Sequence[str] = (),
                     cookie_path: str | os.PathLike[str]) -> Authenticator:
        """Core's InitRPCAuthentication: without -rpcpassword, write a fresh cookie.

        A malformed ``-rpcauth`` entry raises ConfigError ("Invalid -rpcauth argument.").
        """
        entries = [parse_rpcauth(entry) for entry in rpcauth]
        if rpcpassword:
            return cls((rpcuser, rpcpassword), entries)
        password = generate_cookie(cookie_path)
        return cls((COOKIE_USER, password), entries, Path(cookie_path))

    def authenticate(self, authorization: bytes) -> str | None:
        """The user of an ``Authorization`` header value, or None if it is not valid."""
        if not authorization.startswith(b"Basic "):
            return None
        try:
            userpass = binascii.a2b_base64(authorization[6:].strip())
        except binascii.Error:
            return None
        user, colon, password = userpass.partition(b":")
        if not colon:
            return None
        name = user.decode("utf-8", "surrogateescape")
        secret = password.decode("utf-8", "surrogateescape")
        valid = False
        if self._userpass is not None:
            valid |= hmac.compare_digest(userpass, self._userpass)
        for entry in self._rpcauth:
            same_user = hmac.compare_digest(user, entry.user.encode("utf-8", "surrogateescape"))
            same_hash = hmac.compare_digest(password_hmac(entry.salt, secret).encode("ascii"),
                                            entry.hash.encode("utf-8", "surrogateescape"))
            valid |= same_user & same_hash
        return name if valid else None


class Whitelist:
    """``-rpcwhitelist`` / ``-rpcwhitelistdefault`` (spec Authentication rule 4, Core 0.20).

    Each entry is ``<user>:<method>,<method>...`` (commas or spaces); several entries for
    one user intersect. A user without an entry may call anything unless the default is
    on; it is on when any entry exists and ``-rpcwhitelistdefault`` is not given.
    """

    def __init__(self, entries: Iterable[str] = (), default: bool | None = None) -> None:
        self._allowed: dict[str, frozenset[str]] = {}
        for entry in entries:
            user, colon, methods = entry.partition(":")
            previous = self._allowed.get(user)
            if not colon:
                self._allowed.setdefault(user, frozenset())
                continue
            listed = frozenset(re.split("[, ]", methods))
            self._allowed[user] = listed if previous is None else listed & previous
        self._default = bool(self._allowed) if default is None else default

    def denies_all(self, user: str) -> bool:
        """Whether ``user`` has no entry while the default whitelist (empty) applies."""
        return self._default and user not in self._allowed

    def allowed_methods(self, user: str) -> frozenset[str] | None:
        """The methods ``user`` may call, or None for all of them."""
        if user in self._allowed:
            return self._allowed[user]
        return frozenset() if self._default else None

    def allows(self, user: str, method: str) -> bool:
        allowed = self.allowed_methods(user)
        return allowed is None or method in allowed


_ALLOWIP_HELP = ("Valid are a single IP (e.g. 1.2.3.4), a network/netmask "
                 "(e.g. 1.2.3.4/255.255.255.0) or a network/CIDR (e.g. 1.2.3.4/24).")


class AllowList:
    """``-rpcallowip``: which client addresses may talk to the server at all.

    Loopback (127.0.0.0/8 and ::1) is always allowed, as in Core; IPv4-mapped IPv6
    clients are matched as IPv4.
    """

    def __init__(self, subnets: Iterable[str] = ()) -> None:
        self._networks = [ipaddress.ip_network("127.0.0.0/8"), ipaddress.ip_network("::1/128")]
        for spec in subnets:
            try:
                self._networks.append(ipaddress.ip_network(spec, strict=False))
            except ValueError:
                raise ConfigError(f"Error: Invalid -rpcallowip subnet specification: {spec}. "
                                  + _ALLOWIP_HELP) from None

    def allows(self, address: IAddress) -> bool:
        host = getattr(address, "host", None)
        if not isinstance(host, str):
            return False
        try:
            ip = ipaddress.ip_address(host.split("%", 1)[0])
        except ValueError:
            return False
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        return any(ip in network for network in self._networks)


def rpc_bind_addresses(rpcbind: Sequence[str], rpcallowip: Sequence[str],
                       port: int) -> tuple[list[tuple[str, int]], list[str]]:
    """Where the RPC server listens, and warnings to log (Core 0.18+ policy).

    Loopback only unless both ``-rpcbind`` and ``-rpcallowip`` are given: binding to an
    outside address that no client may use, or allowing clients the server does not
    listen for, is a mistake worth a warning.
    """
    if rpcbind and rpcallowip:
        return [split_host_port(spec, port) for spec in rpcbind], []
    warnings = []
    if rpcallowip:
        warnings.append("option -rpcallowip was specified without -rpcbind; "
                        "this doesn't usually make sense")
    if rpcbind:
        warnings.append("option -rpcbind was ignored because -rpcallowip was not specified, "
                        "refusing to allow everyone to connect")
    return [("::1", port), ("127.0.0.1", port)], warnings
