"""Calls a front end does not answer itself, passed on to the writer over HTTP.

The front end has checked the caller's credentials (and whitelist) already; the writer
is called with the front end's own credential: the one in the ``-writer`` URL, else the
one a node hands its workers (``COIN_WRITER_AUTH`` in the environment), else its own
-rpcuser/-rpcpassword, else the cookie in the data directory, re-read when it changes (the
writer writes a new one at each start).
"""

from __future__ import annotations

import base64
import json
import os
from typing import Any, FrozenSet, NamedTuple, Optional, Tuple
from urllib.parse import unquote, urlsplit

from twisted.internet.defer import Deferred, inlineCallbacks, succeed
from twisted.logger import Logger
from twisted.web.client import (
    Agent, HTTPConnectionPool, RequestNotSent, RequestTransmissionFailed, ResponseFailed,
    _HTTP11ClientFactory, readBody,
)
from twisted.web.http_headers import Headers
from twisted.web.iweb import IBodyProducer
from zope.interface import implementer

log = Logger()

#: The environment variable a node passes its workers' writer credential in (not argv: ps).
WRITER_AUTH_ENV = "COIN_WRITER_AUTH"
#: Seconds a forwarded call may take before the writer counts as unavailable.
FORWARD_TIMEOUT = 900.0
#: Methods that change nothing at the writer (chain, mempool, network and wallet reads):
#: a call made only of these may be sent again when the connection it went out on closed
#: before the answer came.  Any other call is sent again only if it never left.
READ_ONLY_METHODS: FrozenSet[str] = frozenset((
    "getbestblockhash", "getblock", "getblockchaininfo", "getblockcount", "getblockhash",
    "getblockheader", "getchaintips", "getchaintxstats", "getdifficulty", "getrawtransaction",
    "gettxout", "gettxoutproof", "gettxoutsetinfo", "verifytxoutproof", "getmempoolinfo",
    "getrawmempool", "getmempoolentry", "getmempoolancestors", "getmempooldescendants",
    "estimatesmartfee", "estimaterawfee", "getnetworkinfo", "getpeerinfo",
    "getconnectioncount", "getnettotals", "getaddednodeinfo", "listbanned", "getmininginfo",
    "getnetworkhashps", "uptime", "help", "getmemoryinfo", "validateaddress",
    "decoderawtransaction", "decodescript", "getbalance", "getunconfirmedbalance",
    "getwalletinfo", "listunspent", "listtransactions", "listsinceblock", "gettransaction",
    "getreceivedbyaddress", "listreceivedbyaddress", "getaddressinfo", "listwallets",
    "listaddressgroupings", "listlockunspent",
))
#: A kept-alive connection that failed under a request: the writer closed it (idle timeout,
#: restart) as the request went out, or died while answering.
_CONNECTION_FAILED = (RequestNotSent, RequestTransmissionFailed, ResponseFailed)


class WriterUnavailable(Exception):
    """The writer could not be reached (down, restarting, or refusing the credential)."""


class Answer(NamedTuple):
    """The writer's HTTP answer: status, Content-Type (None if it sent none), body."""

    status: int
    content_type: Optional[bytes]
    body: bytes


@implementer(IBodyProducer)
class _Bytes:
    """A request body already in memory."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self.length = len(data)

    def startProducing(self, consumer: Any) -> Deferred:
        consumer.write(self._data)
        return succeed(None)

    def pauseProducing(self) -> None:
        pass

    def resumeProducing(self) -> None:
        pass

    def stopProducing(self) -> None:
        pass


def parse_writer_url(url: str) -> Tuple[bytes, Optional[Tuple[str, str]]]:
    """``(base URL without credentials, (user, password) or None)``; ValueError if bad."""
    parts = urlsplit(url)
    if parts.scheme != "http" or not parts.hostname or parts.port is None:
        # Not the URL itself in the message: it may hold a password.
        raise ValueError("-writer must be http://[user:password@]host:port/")
    host = "[%s]" % parts.hostname if ":" in parts.hostname else parts.hostname
    base = ("http://%s:%d" % (host, parts.port)).encode("ascii")
    credentials = None
    if parts.username is not None:
        credentials = (unquote(parts.username), unquote(parts.password or ""))
    return base, credentials


class _QuietFactory(_HTTP11ClientFactory):
    """No "Starting factory" log line for each connection to the writer."""

    noisy = False


class WriterClient:
    """Forwards raw HTTP requests to the writer on kept-alive connections."""

    def __init__(self, reactor: Any, url: str, cookie_path: str,
                 userpass: Optional[Tuple[str, str]] = None,
                 environ: Optional[dict] = None) -> None:
        self._base, credentials = parse_writer_url(url)
        environ = os.environ if environ is None else environ
        if credentials is None and environ.get(WRITER_AUTH_ENV):
            user, _, password = environ[WRITER_AUTH_ENV].partition(":")
            credentials = (user, password)
        credentials = credentials or userpass
        self._fixed = _basic(*credentials) if credentials is not None else None
        self._cookie_path = cookie_path
        self._cookie: Optional[Tuple[float, bytes]] = None
        pool = HTTPConnectionPool(reactor, persistent=True)
        pool._factory = _QuietFactory
        pool.maxPersistentPerHost = 16
        pool.retryAutomatically = False
        self._pool = pool
        self._agent = Agent(reactor, pool=pool, connectTimeout=10)
        #: For a request sent again: always a new connection (closed after its answer).
        self._fresh_agent = Agent(reactor, pool=HTTPConnectionPool(reactor, persistent=False),
                                  connectTimeout=10)
        self._reactor = reactor

    @property
    def url(self) -> str:
        """The writer's address, without credentials (for getblockchaininfo and logs)."""
        return self._base.decode("ascii") + "/"

    def _authorization(self) -> bytes:
        if self._fixed is not None:
            return self._fixed
        try:
            mtime = os.stat(self._cookie_path).st_mtime
            if self._cookie is None or self._cookie[0] != mtime:
                with open(self._cookie_path, "rb") as f:
                    self._cookie = (mtime, b"Basic " + base64.b64encode(f.read().strip()))
        except OSError as e:
            raise WriterUnavailable("no credential for the writer (cookie %s: %s)"
                                    % (self._cookie_path, e.strerror)) from None
        return self._cookie[1]

    @inlineCallbacks
    def request(self, method: bytes, path: bytes, body: bytes = b"", authenticate: bool = True,
                content_type: Optional[bytes] = None):
        """Fires with the writer's :class:`Answer`; fails with WriterUnavailable.

        A request whose kept-alive connection fails under it is sent once more, on a new
        connection, when it never left or it only reads (:func:`read_only`): a call that
        may have run at the writer is never run twice."""
        headers = Headers()
        if authenticate:
            headers.setRawHeaders(b"Authorization", [self._authorization()])
        if content_type is not None:
            headers.setRawHeaders(b"Content-Type", [content_type])
        try:
            try:
                response, data = yield self._exchange(self._agent, method, path, headers, body)
            except _CONNECTION_FAILED as e:
                if not isinstance(e, RequestNotSent) and not read_only(method, path, body):
                    raise
                log.debug("Sending {path} to the writer again: {error}",
                          path=path.decode("ascii", "replace"), error=e)
                response, data = yield self._exchange(self._fresh_agent, method, path, headers,
                                                      body)
        except Exception as e:
            raise WriterUnavailable("writer %s unreachable: %s" % (self.url, e)) from None
        if response.code == 401 and authenticate:
            raise WriterUnavailable("writer %s refused this front end's credential" % self.url)
        types = response.headers.getRawHeaders(b"Content-Type")
        return Answer(response.code, types[0] if types else None, data)

    @inlineCallbacks
    def _exchange(self, agent: Agent, method: bytes, path: bytes, headers: Headers,
                  body: bytes):
        """``(response, body)`` of one request through ``agent``, within FORWARD_TIMEOUT."""
        producer = _Bytes(body) if body or method == b"POST" else None
        d = agent.request(method, self._base + path, headers, producer)
        timeout = self._reactor.callLater(FORWARD_TIMEOUT, d.cancel)
        try:
            response = yield d
            data = yield readBody(response)
        finally:
            if timeout.active():
                timeout.cancel()
        return response, data

    def close(self) -> Deferred:
        return self._pool.closeCachedConnections()


def read_only(method: bytes, path: bytes, body: bytes) -> bool:
    """Whether sending this request twice changes nothing at the writer: REST (reads only),
    or JSON-RPC calls (one, or a batch) of :data:`READ_ONLY_METHODS` only."""
    if method in (b"GET", b"HEAD") or path.startswith(b"/rest/"):
        return True
    try:
        request = json.loads(body)
    except (ValueError, RecursionError):
        return False
    calls = request if isinstance(request, list) else [request]
    return bool(calls) and all(isinstance(call, dict) and isinstance(call.get("method"), str)
                               and call["method"] in READ_ONLY_METHODS for call in calls)


def _basic(user: str, password: str) -> bytes:
    token = ("%s:%s" % (user, password)).encode("utf-8", "surrogateescape")
    return b"Basic " + base64.b64encode(token)
