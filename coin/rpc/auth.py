"""RPC authentication and access policy: credentials, cookie, throttling of wrong
credentials, whitelist, allowed IPs, binding.

Nothing here speaks HTTP; the web resource asks these objects and answers 401/403
itself. :class:`AuthThrottle` decides *when* a credential is checked and when a wrong
one is answered, on the clock it is given.
"""

from __future__ import annotations

import binascii
import functools
import hmac
import ipaddress
import os
import re
import secrets
from collections import deque
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IAddress, IDelayedCall, IReactorTime
from twisted.logger import Logger

from coin.config.hostport import split_host_port
from coin.config.errors import ConfigError
from coin.config.rpcauth import RpcAuth, parse_rpcauth, password_hmac

#: User name of cookie authentication.
COOKIE_USER = "__cookie__"
#: Seconds before wrong credentials are answered (Core's brute-force deterrent), and the
#: spacing of checks from one client address once it has that many failures pending.
WRONG_CREDENTIALS_DELAY = 0.25
#: Wrong guesses one address may have pending before its next check waits for a slot:
#: a short burst, then one check per WRONG_CREDENTIALS_DELAY (4/s).
ADDRESS_FAILURE_BURST = 8
#: Wrong guesses per second over all addresses together (an IPv6 /64 or 127/8 has many).
GLOBAL_FAILURE_RATE = 16
GLOBAL_FAILURE_BURST = 32
#: Seconds between log lines about wrong credentials while they keep coming.
FAILURE_LOG_INTERVAL = 10.0
#: Authorization header values remembered as proved (any valid credential has unboundedly
#: many spellings: base64 ignores stray characters); the memory is emptied when full.
PROVED_CACHE_SIZE = 64

_log = Logger()


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
        self._extra: list[bytes] = []
        #: Authorization header values checked and found valid -> their user. Emptied
        #: whenever the credentials change, so a replaced cookie is refused at once.
        self._proved: dict[bytes, str] = {}
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
        authenticator = cls(None, entries)
        authenticator.create_cookie(cookie_path)
        return authenticator

    def create_cookie(self, path: str | os.PathLike[str]) -> None:
        """Write a fresh cookie at ``path`` and accept it from now on (the daemon builds
        its authenticator first and writes the cookie when it starts)."""
        password = generate_cookie(path)
        self._userpass = ("%s:%s" % (COOKIE_USER, password)).encode("ascii")
        self._proved.clear()
        self.cookie_path = Path(path)

    def read_cookie(self, path: str | os.PathLike[str]) -> None:
        """Accept the cookie another process (a front end's writer) wrote at ``path``;
        OSError if there is none.  Not deleted at shutdown: it is not this one's."""
        with open(path, "rb") as f:
            userpass = f.read().strip()
        if userpass != self._userpass:
            self._userpass = userpass
            self._proved.clear()

    def add_credential(self, user: str, password: str) -> None:
        """Accept one more ``user``:``password`` (a node's internal credential for its
        -rpcworkers), checked like the others."""
        self._extra.append(("%s:%s" % (user, password)).encode("utf-8", "surrogateescape"))
        self._proved.clear()

    def proved(self, authorization: bytes) -> str | None:
        """The user of an ``Authorization`` value that :meth:`authenticate` found valid
        since the credentials last changed, else None (it was not, or not yet, checked).

        A dictionary lookup: its timing tells nothing about the credentials (keyed on the
        whole header value with a secret-keyed hash), and only values already proved are in it.
        """
        return self._proved.get(authorization)

    def authenticate(self, authorization: bytes) -> str | None:
        """The user of an ``Authorization`` header value, or None if it is not valid."""
        user = self._proved.get(authorization)
        if user is not None:
            return user
        user = self._check(authorization)
        if user is not None:
            if len(self._proved) >= PROVED_CACHE_SIZE:
                self._proved.clear()
            self._proved[authorization] = user
        return user

    def _check(self, authorization: bytes) -> str | None:
        """Every credential compared in constant time (see the class docstring)."""
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
        for extra in self._extra:
            valid |= hmac.compare_digest(userpass, extra)
        for entry in self._rpcauth:
            same_user = hmac.compare_digest(user, entry.user.encode("utf-8", "surrogateescape"))
            same_hash = hmac.compare_digest(password_hmac(entry.salt, secret).encode("ascii"),
                                            entry.hash.encode("utf-8", "surrogateescape"))
            valid |= same_user & same_hash
        return name if valid else None


def client_ip(address: IAddress) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The IP of a TCP client (IPv4-mapped IPv6 as IPv4, zone dropped); None otherwise."""
    host = getattr(address, "host", None)
    return _host_ip(host) if isinstance(host, str) else None


#: Hosts whose IP is remembered: every connection asks (the allow-list, the auth throttle),
#: and parsing one costs several microseconds.
HOST_IPS_KEPT = 1024


@functools.lru_cache(maxsize=HOST_IPS_KEPT)
def _host_ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        ip = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def describe_peer(address: Any) -> str:
    """``host:port`` as Core prints a client address (``[v6]:port`` for IPv6)."""
    host, port = getattr(address, "host", None), getattr(address, "port", None)
    if host is None or port is None:
        return str(address)
    return ("[%s]:%d" if ":" in host else "%s:%d") % (host, port)


def _source(address: IAddress) -> str:
    """The unit guesses are counted by: an IPv4 address, an IPv6 /64 (one host's share)."""
    host = getattr(address, "host", None)
    return _host_source(host) if isinstance(host, str) else str(None)


@functools.lru_cache(maxsize=HOST_IPS_KEPT)
def _host_source(host: str) -> str:
    """:func:`_source` of a host (several microseconds for an IPv6 one: asked per connection)."""
    ip = _host_ip(host)
    if isinstance(ip, ipaddress.IPv6Address):
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


class _LeakyBucket:
    """Pending failures that drain one per ``interval``; full at ``capacity``."""

    __slots__ = ("interval", "capacity", "empty_at")

    def __init__(self, interval: float, capacity: int) -> None:
        self.interval = interval
        self.capacity = capacity
        self.empty_at = 0.0

    def ready_at(self) -> float:
        """When the bucket has room for one more failure."""
        return self.empty_at - (self.capacity - 1) * self.interval

    def fill(self, now: float) -> float:
        """Add a failure; returns when it has drained (its answer time)."""
        self.empty_at = max(now, self.empty_at) + self.interval
        return self.empty_at


class AuthThrottle:
    """Checks credentials in turn per client address, so guessing stays slow.

    Core sleeps 250 ms in a worker thread after a wrong password, which blocks every
    client once four guesses are in flight and does not stop a client with many
    connections. Here each address has a leaky bucket of pending failures: while it
    holds fewer than ``ADDRESS_FAILURE_BURST``, a request is checked at once (so a good
    client beside a few wrong guesses is not slowed); when full, further requests from
    that address wait their turn, unchecked, and are checked one per 250 ms. A wrong
    guess is answered when it drains from the bucket (250 ms for a lone one), and a
    client that hangs up early does not get its slot back. A global bucket bounds all
    addresses together. Log lines about failures are rate-limited.
    """

    def __init__(self, clock: IReactorTime, *, delay: float = WRONG_CREDENTIALS_DELAY,
                 burst: int = ADDRESS_FAILURE_BURST, global_rate: float = GLOBAL_FAILURE_RATE,
                 global_burst: int = GLOBAL_FAILURE_BURST,
                 log_interval: float = FAILURE_LOG_INTERVAL) -> None:
        self._clock = clock
        self._delay = delay
        self._burst = burst
        self._global = _LeakyBucket(1.0 / global_rate, global_burst)
        self._buckets: dict[str, _LeakyBucket] = {}
        #: Requests not yet checked, per source, in arrival order: (deferred, check).
        self._waiting: dict[str, deque[tuple[Deferred[str | None], Callable[[], None]]]] = {}
        self._wakeup: IDelayedCall | None = None
        self._sweep_at = 64
        self._log_interval = log_interval
        self._log_window: IDelayedCall | None = None
        self._suppressed = 0
        self._last_peer = ""

    def authenticate(self, address: IAddress,
                     check: Callable[[], str | None]) -> Deferred[str | None]:
        """Fire with ``check()`` (a user name, or None after the penalty) in turn.

        Cancelling the Deferred (client gone) withdraws a request still waiting; a
        wrong guess already checked keeps its place in the bucket.
        """
        source = _source(address)
        # The timer of a wrong guess's answer, once it is checked.
        timer: list[IDelayedCall] = []
        answer: Deferred[str | None] = Deferred(lambda d: self._withdraw(source, d, timer))

        def run() -> None:
            self._check(source, address, answer, check, timer)

        if self._checks_now(source):
            run()
        else:
            self._waiting.setdefault(source, deque()).append((answer, run))
            self._schedule()
        return answer

    def checks_at_once(self, address: IAddress) -> bool:
        """Whether a request from ``address`` would be checked now (:meth:`authenticate`
        runs its check at once)."""
        return self._checks_now(_source(address))

    def _checks_now(self, source: str) -> bool:
        """Nothing of ``source`` waits its turn, and its bucket and the global one have room."""
        return source not in self._waiting and self._ready(source)

    def stop(self) -> None:
        """Shutdown: cancel the timers (requests still waiting went with their connections)."""
        for call in (self._wakeup, self._log_window):
            if call is not None and call.active():
                call.cancel()
        self._wakeup = self._log_window = None

    def _bucket(self, source: str) -> _LeakyBucket:
        bucket = self._buckets.get(source)
        if bucket is None:
            if len(self._buckets) >= self._sweep_at:
                now = self._clock.seconds()
                self._buckets = {key: b for key, b in self._buckets.items()
                                 if b.empty_at > now or key in self._waiting}
                self._sweep_at = max(64, 2 * len(self._buckets))
            bucket = self._buckets[source] = _LeakyBucket(self._delay, self._burst)
        return bucket

    def _ready_at(self, source: str) -> float:
        return max(self._bucket(source).ready_at(), self._global.ready_at())

    def _ready(self, source: str) -> bool:
        return self._ready_at(source) <= self._clock.seconds() + 1e-9

    def _check(self, source: str, address: IAddress, answer: Deferred[str | None],
               check: Callable[[], str | None], timer: list[IDelayedCall]) -> None:
        user = check()
        if user is not None:
            answer.callback(user)
            return
        now = self._clock.seconds()
        self._global.fill(now)
        answer_at = self._bucket(source).fill(now)
        self._log_failure(address)
        # A client that leaves early stops this timer, but its slot in the bucket stays.
        timer.append(self._clock.callLater(answer_at - now, answer.callback, None))

    def _withdraw(self, source: str, answer: Deferred[str | None],
                  timer: list[IDelayedCall]) -> None:
        for call in timer:
            call.cancel()
        queue = self._waiting.get(source, ())
        for item in queue:
            if item[0] is answer:
                queue.remove(item)
                break
        if not queue and self._waiting.get(source) is queue:
            del self._waiting[source]

    def _schedule(self) -> None:
        """Wake up when the earliest waiting source may be checked."""
        if self._wakeup is not None and self._wakeup.active():
            self._wakeup.cancel()
        self._wakeup = None
        if self._waiting:
            when = min(self._ready_at(source) for source in self._waiting)
            self._wakeup = self._clock.callLater(max(0.0, when - self._clock.seconds()),
                                                 self._wake)

    def _wake(self) -> None:
        self._wakeup = None
        for source in list(self._waiting):
            queue = self._waiting.get(source, deque())
            while queue and self._ready(source):
                _, run = queue.popleft()
                run()
            if not queue and self._waiting.get(source) is queue:
                del self._waiting[source]
        self._schedule()

    def _log_failure(self, address: IAddress) -> None:
        """The first failure is logged at once; more within the interval are counted."""
        if self._log_window is None:
            _log.warn("Incorrect RPC password attempt from {peer}", peer=describe_peer(address))
            self._log_window = self._clock.callLater(self._log_interval, self._close_log_window)
        else:
            self._suppressed += 1
            self._last_peer = describe_peer(address)

    def _close_log_window(self) -> None:
        self._log_window = None
        if self._suppressed:
            _log.warn("{count} more incorrect RPC password attempts in the last {seconds:.0f} s, "
                      "the last from {peer}", count=self._suppressed,
                      seconds=self._log_interval, peer=self._last_peer)
            self._suppressed = 0
            self._log_window = self._clock.callLater(self._log_interval, self._close_log_window)


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
        self._unrestricted: set[str] = set()

    def unrestrict(self, user: str) -> None:
        """Let ``user`` call anything whatever the entries (a node's internal credential for
        its -rpcworkers, which checked their callers' whitelist already)."""
        self._unrestricted.add(user)

    def denies_all(self, user: str) -> bool:
        """Whether ``user`` has no entry while the default whitelist (empty) applies."""
        return self._default and user not in self._allowed and user not in self._unrestricted

    def allowed_methods(self, user: str) -> frozenset[str] | None:
        """The methods ``user`` may call, or None for all of them."""
        if user in self._unrestricted:
            return None
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
        ip = client_ip(address)
        return ip is not None and any(ip in network for network in self._networks)


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
