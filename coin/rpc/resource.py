"""The twisted.web face of the RPC server: site, request, resource tree.

``RPCSite`` + :class:`~coin.http.channel.LeanChannel` (+ ``CoreHTTPRequest`` for resources
mounted by others) give the HTTP behaviour of Core's libevent server (client address
allow-list, body size limit, header set and order, bare-LF lines) and this node's limits on
what a client may hold (connections, header deadline, header size); ``RPCRoot`` serves
JSON-RPC on ``/`` and ``/wallet/<name>`` through :class:`~coin.rpc.jsonrpc.JSONRPCCore`
and keeps the ``rest`` child slot for the REST resource. Everything returns
NOT_DONE_YET and nothing blocks. See doc/rpc.md for why txjsonrpc-ng's resource is not
the base class.
"""

from __future__ import annotations

import re
from functools import partial
from typing import Any, Callable
from urllib.parse import unquote_to_bytes

from twisted.internet.defer import CancelledError, Deferred
from twisted.internet.interfaces import IAddress, IDelayedCall, IReactorTime
from twisted.internet.protocol import Protocol, connectionDone
from twisted.logger import Logger
from twisted.python.failure import Failure
from twisted.web import resource, server
from twisted.web.http import datetimeToString

from coin.config.node import DEFAULT_RPC_MAX_CONNECTIONS, DEFAULT_RPC_SERVER_TIMEOUT
from coin.http.channel import LeanChannel
from coin.logs import DebugCategories
from coin.rpc.auth import AllowList, Authenticator, AuthThrottle, describe_peer
from coin.rpc.errors import (
    HTTP_BAD_METHOD, HTTP_FORBIDDEN, HTTP_NOT_FOUND, HTTP_PAYLOAD_TOO_LARGE, HTTP_UNAUTHORIZED,
    RPCError, map_exception,
)
from coin.rpc.jsonrpc import (
    JSON_CONTENT_TYPE, DEFAULT_MAX_BODY, JSONRPCCore, Reply, encode_json, parse_json,
)
from coin.http.lifetime import cancel_when_gone

#: Idle seconds before the server drops an HTTP connection, and the time a request's
#: headers may take from their first byte (Core's -rpcservertimeout).
DEFAULT_SERVER_TIMEOUT = DEFAULT_RPC_SERVER_TIMEOUT
#: Open RPC/REST connections at most (-rpcmaxconnections); more are answered 503 and closed.
DEFAULT_MAX_CONNECTIONS = DEFAULT_RPC_MAX_CONNECTIONS
#: Bytes of request line plus headers (one line or all together) before 400 and close.
MAX_HEADER_BYTES = 16384
#: Core's MAX_HEADERS_SIZE, which libevent applies to the request line alone: a longer
#: one (a very long path) is 400 Bad Request, not a 404 for the path.
MAX_REQUEST_LINE = 8192
HTTP_SERVICE_UNAVAILABLE = 503
#: Seconds a refused connection stays open after its 503, its input read and dropped.
OVERLOAD_LINGER = 2.0
WWW_AUTHENTICATE = b'Basic realm="jsonrpc"'
POST_ONLY = b"JSONRPC server handles only POST requests"
#: libevent's default Content-Type for replies that set none.
DEFAULT_CONTENT_TYPE = b"text/html; charset=ISO-8859-1"
#: HTTP methods the server knows; others get 405 before routing (Core's HTTP_BADMETHOD).
KNOWN_METHODS = (b"GET", b"POST", b"HEAD", b"PUT")

_log = Logger()
#: Core logs each request under -debug=http; coin.logs maps twisted.web.* to that category
#: (this module's own namespace maps to -debug=rpc).
_http_log = Logger(namespace="twisted.web.server")


class CoreHTTPRequest(server.Request):
    """A request behaving like Core's libevent server where a client could tell.

    - clients outside ``-rpcallowip`` get 403, unknown HTTP methods 405, on any path;
    - a body over the limit gets 413 and the connection closed, judged by
      Content-Length before any of it is stored (or as chunked data arrives);
    - response headers: no ``Server``; the resource's own headers first, then
      ``Date`` (HTTP/1.1), ``Content-Length``, the default Content-Type, and
      ``Connection: close`` when the client asked for it.
    """

    defaultContentType = None
    _rejected = False
    _received = 0

    def gotLength(self, length: int | None) -> None:
        if length is not None and length > self.channel.site.max_body:
            self._reject_body()
            return
        super().gotLength(length)

    def handleContentChunk(self, data: bytes) -> None:
        if self._rejected:
            return
        self._received += len(data)
        if self._received > self.channel.site.max_body:
            self.content.close()
            self._reject_body()
            return
        super().handleContentChunk(data)

    def _reject_body(self) -> None:
        """Answer 413 at once, outside the request cycle, and drop the connection."""
        self._rejected = True
        self.content = None
        self.requestHeaders.removeHeader(b"Expect")  # no "100 Continue" after this
        body = b"Request body too large: the limit is %d bytes\n" % self.channel.site.max_body
        self.channel.transport.write(
            b"HTTP/1.1 %d Request Entity Too Large\r\nContent-Type: text/plain\r\n"
            % HTTP_PAYLOAD_TOO_LARGE + b"Date: " + datetimeToString()
            + b"\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body)
        self.channel.loseConnection()

    def requestReceived(self, command: bytes, path: bytes, version: bytes) -> None:
        if not self._rejected:
            super().requestReceived(command, path, version)

    def process(self) -> None:
        if not self.channel.site.allow.allows(self.getClientAddress()):
            self._early_reply(HTTP_FORBIDDEN)
        elif self.method not in KNOWN_METHODS:
            self._early_reply(HTTP_BAD_METHOD)
        else:
            super().process()

    def _early_reply(self, code: int) -> None:
        self.setResponseCode(code)
        self.setHeader(b"Content-Length", b"0")
        self.write(b"")
        self.finish()

    def write(self, data: bytes) -> None:
        if not self.startedWriting:
            self._arrange_headers()
        super().write(data)

    def _arrange_headers(self) -> None:
        headers = self.responseHeaders
        date = (headers.getRawHeaders(b"Date") or [datetimeToString()])[0]
        length = headers.getRawHeaders(b"Content-Length")
        for name in (b"Server", b"Date", b"Content-Length", b"Connection"):
            headers.removeHeader(name)
        needs_body = self.method != b"HEAD" and self.code >= 200 and self.code not in (204, 304)
        http11 = self.clientproto == b"HTTP/1.1"
        if http11:
            headers.setRawHeaders(b"Date", [date])
        if http11 and needs_body and length:
            headers.setRawHeaders(b"Content-Length", length)
        if needs_body and not headers.hasHeader(b"Content-Type"):
            headers.setRawHeaders(b"Content-Type", [DEFAULT_CONTENT_TYPE])
        connection = self.requestHeaders.getRawHeaders(b"Connection") or [b""]
        if connection[0].strip().lower() == b"close":
            headers.setRawHeaders(b"Connection", [b"close"])


class _Overloaded(Protocol):
    """A connection past the cap: ``503 Service Unavailable`` at once, then closed.

    The answer is followed by a half-close, and what the client sends meanwhile is read
    and dropped for up to OVERLOAD_LINGER seconds (the "lingering close" of HTTP
    servers): closing with its request unread would send a reset that can destroy the
    503 before the client reads it.
    """

    def __init__(self, site: RPCSite) -> None:
        self._site = site
        self._linger: IDelayedCall | None = None

    def connectionMade(self) -> None:
        self._site.lingering += 1
        body = b"Too many connections: the limit is %d\n" % self._site.max_connections
        self.transport.write(
            b"HTTP/1.1 %d Service Unavailable\r\nContent-Type: text/plain\r\n"
            % HTTP_SERVICE_UNAVAILABLE + b"Date: " + datetimeToString()
            + b"\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body)
        getattr(self.transport, "loseWriteConnection", self.transport.loseConnection)()
        self._linger = self._site.reactor.callLater(OVERLOAD_LINGER,
                                                    self.transport.abortConnection)

    def dataReceived(self, data: bytes) -> None:
        """Dropped: the request is not served."""

    def connectionLost(self, reason: Failure = connectionDone) -> None:
        self._site.lingering -= 1
        if self._linger is not None and self._linger.active():
            self._linger.cancel()


class _NoDelayChannel(LeanChannel):
    """The channel with Nagle's algorithm off: an answer is written whole at once, and a
    large one (a batch's) must not have its last segment held back until the client
    acknowledges the others (which it may delay)."""

    def connectionMade(self) -> None:
        set_no_delay = getattr(self.transport, "setTcpNoDelay", None)
        if set_no_delay is not None:
            set_no_delay(True)
        super().connectionMade()


class RPCSite(server.Site):
    """The HTTP server for RPC and REST: Core's limits and access rules on every path."""

    requestFactory = CoreHTTPRequest
    noisy = False
    known_methods = KNOWN_METHODS
    max_header_bytes = MAX_HEADER_BYTES
    max_request_line = MAX_REQUEST_LINE

    def __init__(self, root: RPCRoot, *, allow: AllowList,
                 max_body: int = DEFAULT_MAX_BODY, timeout: float = DEFAULT_SERVER_TIMEOUT,
                 max_connections: int = DEFAULT_MAX_CONNECTIONS,
                 reactor: IReactorTime | None = None,
                 categories: DebugCategories | None = None) -> None:
        super().__init__(root, parsePOSTFormSubmission=False, timeout=timeout, reactor=reactor)
        self.allow = allow
        #: The node's debug categories: the request log is built only while "http" is on.
        self._categories = categories
        self.max_body = max_body
        self.max_connections = max_connections
        #: HTTP connections open now (counted up here, down by the channel).
        self.connections = 0
        #: Refused connections still open after their 503 (at most max_connections).
        self.lingering = 0
        #: The open connections, closed at shutdown.
        self._channels: set[LeanChannel] = set()
        #: Answers the channels keep for repeated requests (LeanRequest.keep_answer).
        self.kept_answers = KeptAnswers()

    def protocol(self) -> LeanChannel:  # type: ignore[override]
        """Factory.buildProtocol calls ``self.protocol()``: our channel, plain TCP only."""
        return _NoDelayChannel(self)

    def buildProtocol(self, addr: IAddress | None) -> Protocol | None:
        if self.connections >= self.max_connections:
            # Debug only: a flood of connections must not flood the log as well.
            _http_log.debug("Refused HTTP connection from {peer}: {count} open "
                            "(-rpcmaxconnections)", peer=describe_peer(addr),
                            count=self.connections)
            # Past twice the cap, not even a 503: the connection is closed at once.
            return _Overloaded(self) if self.lingering < self.max_connections else None
        self.connections += 1
        channel = self.protocol()
        self._channels.add(channel)
        return channel

    def connection_closed(self, channel: LeanChannel) -> None:
        self.connections -= 1
        self._channels.discard(channel)

    def startFactory(self) -> None:
        """Nothing to open: requests are logged through twisted.logger (:meth:`log`), so
        twisted.web's access-log file, and the timer that refreshes its date string every
        second (a reactor call that delays whatever request arrives meanwhile), are not
        started."""

    def stopFactory(self) -> None:
        """Its last port closed (shutdown): kept-alive connections close once their answer
        is sent (as libevent's server in Core closes them), and the root's timers go."""
        super().stopFactory()
        for channel in list(self._channels):
            channel.close_when_idle()
        self.resource.stop()

    def logs_requests(self) -> bool:
        """Whether each request is logged (``-debug=http``): a kept answer is then not used,
        as it bypasses the request (and its log line)."""
        return self._categories is None or self._categories.is_enabled("http")

    def log(self, request: server.Request) -> None:
        """Requests are logged only with ``-debug=http`` (as Core), not as an access log.

        Checked here, before the event is built: formatting it cost about a tenth of a
        request's time with the category off."""
        if not self.logs_requests():
            return
        _http_log.debug("Received a {method} request for {uri} from {peer}",
                        method=request.method.decode("ascii", "replace"),
                        uri=request.uri.decode("ascii", "replace"),
                        peer=describe_peer(request.getClientAddress()))


class IdSplicing:
    """A kept answer's check (``still(channel)``, see LeanRequest.keep_answer) for an answer
    that fits the same call with any id: :class:`KeptAnswers` then answers those too."""

    __slots__ = ("_still",)

    def __init__(self, still: Callable[[LeanChannel], bool]) -> None:
        self._still = still

    def __call__(self, channel: LeanChannel) -> bool:
        return self._still(channel)


#: A request's id where its answer prints it byte for byte as written (JSONRPCCore prints
#: the id it parsed): an integer without a sign or zero the parse would drop, or a string of
#: printable ASCII without escapes. Other ids (and bodies without one) take the usual way.
_ID_TOKEN = re.compile(rb'"id": ?(0|-?[1-9][0-9]{0,17}|"[\x20\x21\x23-\x5b\x5d-\x7e]*")')
_LENGTH = b"\r\nContent-Length: "


def _without_id(data: bytes) -> tuple[bytes, int, bytes] | None:
    """One whole request (head and a body of its Content-Length) without its Content-Length
    value and its id: ``(the rest, the id's offset in the body, the id)``; None if it has
    no such id."""
    head_end = data.find(b"\r\n\r\n") + 4
    length = data.find(_LENGTH, 0, head_end)
    if head_end < 4 or length < 0:
        return None
    value_start = length + len(_LENGTH)
    value_end = data.find(b"\r\n", value_start)
    match = _ID_TOKEN.search(data, head_end)
    if match is None or data[value_start:value_end] != b"%d" % (len(data) - head_end):
        return None
    start, end = match.span(1)
    return data[:value_start] + data[value_end:start] + data[end:], start - head_end, match[1]


def _is_the_id(body: bytes, offset: int, token: bytes) -> bool:
    """Whether ``token`` at ``offset`` of ``body`` is its call's id (not a parameter's text):
    another value there changes the id and nothing else."""
    probe = body[:offset] + b'"probe"' + body[offset + len(token):]
    try:
        original, probed = parse_json(body), parse_json(probe)
    except RPCError:
        return False
    if type(original) is not dict or type(probed) is not dict or probed.pop("id", None) != "probe":
        return False
    original.pop("id", None)
    return original == probed


class KeptAnswers:
    """The answers channels keep (LeanChannel.keep): by the request's bytes, and, for an
    answer that fits any id (:class:`IdSplicing`), by the request's bytes without their id
    and Content-Length value, each request's id then spliced into the answer (where the
    general path prints it: before the closing ``}``), with its Content-Length.

    Real clients send a new id with every request: this answers them as cheaply as the
    repeats of one request's bytes.
    """

    def __init__(self) -> None:
        self._exact: dict[bytes, tuple[Any, ...]] = {}
        #: request without id -> (still, response up to Date, id offset, the head after the
        #: Content-Length value, the body before the id)
        self._by_call: dict[bytes, tuple[Any, ...]] = {}

    def __len__(self) -> int:
        return len(self._exact) + len(self._by_call)

    def clear(self) -> None:
        self._exact.clear()
        self._by_call.clear()

    def __setitem__(self, raw: bytes, kept: tuple[Any, bytes, bytes]) -> None:
        still, before, after = kept
        if type(still) is not IdSplicing:
            self._exact[raw] = kept
            return
        split = _without_id(raw)
        if split is None or not after.startswith(_LENGTH):
            return
        key, offset, token = split
        value_end = after.find(b"\r\n", len(_LENGTH))
        head_end = after.find(b"\r\n\r\n", value_end) + 4
        body = after[head_end:]
        if head_end < 4 or not body.endswith(b'"id":%s}\n' % token):
            return
        known = self._by_call.get(key)
        # The same request but for its id, found at the same offset, was proved (the parse
        # twice) when its template was made: only its check and response are new.
        if (known is None or known[2] != offset) and not _is_the_id(
                raw[raw.find(b"\r\n\r\n") + 4:], offset, token):
            return
        self._by_call[key] = (still, before, offset, after[value_end:head_end],
                              body[:len(body) - len(token) - 2])

    def get(self, data: bytes) -> tuple[Any, bytes, bytes] | None:
        """``(still, response up to its Date value, response after it)`` for ``data``."""
        kept = self._exact.get(data)
        if kept is not None or not self._by_call:
            return kept
        split = _without_id(data)
        if split is None:
            return None
        kept = self._by_call.get(split[0])
        if kept is None or kept[2] != split[1]:
            return None
        still, before, _, head, body_before_id = kept
        body = b"%s%s}\n" % (body_before_id, split[2])
        return still, before, b"%s%d%s%s" % (_LENGTH, len(body), head, body)


def _respond(request: server.Request, status: int, body: bytes = b"",
             content_type: bytes | None = None, headers: tuple[tuple[bytes, bytes], ...] = ()
             ) -> None:
    request.setResponseCode(status)
    for name, value in headers:
        request.setHeader(name, value)
    if content_type is not None:
        request.setHeader(b"Content-Type", content_type)
    request.setHeader(b"Content-Length", b"%d" % len(body))
    request.write(body)
    request.finish()


class _NotFound(resource.Resource):
    isLeaf = True
    serves_lean_requests = True

    def render(self, request: server.Request) -> int:
        _respond(request, HTTP_NOT_FOUND)
        return server.NOT_DONE_YET


class _JSONRPCEndpoint:
    """POST check, authentication (in turn, see AuthThrottle), then the core; shared by
    ``/`` and ``/wallet/``."""

    def __init__(self, core: JSONRPCCore, authenticator: Authenticator,
                 clock: IReactorTime) -> None:
        #: ``respond`` (a Reply, or a Deferred of one) of a core that has it, else ``handle``.
        self._respond = getattr(core, "respond", core.handle)
        #: A core that keeps answers of chain-only calls (see JSONRPCCore.keeps).
        self._keeps = getattr(core, "keeps", None) if hasattr(core, "answer_holds") else None
        self._answer_holds: Callable[[bytes, str, Reply], bool] = getattr(
            core, "answer_holds", lambda body, user, reply: False)
        self._core = core
        self._authenticator = authenticator
        self._throttle = AuthThrottle(clock)

    def stop(self) -> None:
        self._throttle.stop()

    def serve(self, request: server.Request, wallet_name: str | None) -> int:
        if request.method != b"POST":
            _respond(request, HTTP_BAD_METHOD, POST_ONLY)
            return server.NOT_DONE_YET
        authorization = request.getHeader(b"Authorization")
        if authorization is None:
            _respond(request, HTTP_UNAUTHORIZED, headers=((b"WWW-Authenticate", WWW_AUTHENTICATE),))
            return server.NOT_DONE_YET
        user = self._proved_user(request.channel, authorization)
        if user is not None:
            # No turn to wait for, no check to run, no Deferred.
            body = _body(request)
            answer = self._respond(body, user, wallet_name)
            if (type(answer) is Reply and wallet_name is None and self._keeps is not None
                    and hasattr(request, "keep_answer")):
                self._keep(request, authorization, user, body, answer)
        else:
            answer = self._throttle.authenticate(
                request.getClientAddress(), partial(self._authenticator.authenticate, authorization))
            answer.addCallback(self._authenticated, request, wallet_name)
        if isinstance(answer, Reply):
            _send_reply(request, answer)  # answered at once, as most calls are
        elif answer.called and isinstance(answer.result, Reply):
            _send_reply(request, answer.result)
        else:
            self._send_later(request, answer)
        return server.NOT_DONE_YET

    def _keep(self, request: Any, authorization: bytes, user: str, body: bytes,
              answer: Reply) -> None:
        """Let the channel answer repeats of this request: of its very bytes if the core
        keeps the answer by body, and of the same call with any id if the core answered
        it from its answer cache (:class:`IdSplicing`)."""
        assert self._keeps is not None  # (serve keeps answers only then)
        if self._keeps(body):
            request.keep_answer(partial(self._still_holds, authorization, user, body, answer))
            return
        kept = getattr(self._core, "last_kept", None)
        if kept is not None:
            request.keep_answer(IdSplicing(partial(
                self._call_still_holds, authorization, user, *kept)))

    def _proved_user(self, channel: LeanChannel, authorization: bytes) -> str | None:
        """The user of credentials proved before and still valid, if this connection may
        use them unchecked: it proved them itself, or it proved none yet and its address's
        requests are checked at once (none of its guesses wait their turn: the check would
        run now and give the same user). The connection has then proved them."""
        proved_here = getattr(channel, "authorized", None)
        if proved_here != authorization and (proved_here is not None
                                             or not self._throttle.checks_at_once(channel.getPeer())):
            return None
        user = self._authenticator.proved(authorization)
        if user is not None:
            channel.authorized = authorization
        return user

    def _proved(self, channel: LeanChannel, authorization: bytes, user: str) -> bool:
        """The connection may use these credentials unchecked (:meth:`_proved_user`), still
        valid for ``user``."""
        return self._proved_user(channel, authorization) == user

    def _call_still_holds(self, authorization: bytes, user: str, key: tuple[Any, ...],
                          entry: tuple[str, Any], channel: LeanChannel) -> bool:
        """:meth:`_still_holds` for an answer kept by call (JSONRPCCore.call_holds)."""
        return (self._proved(channel, authorization, user)
                and self._core.call_holds(key, user, entry))

    def _still_holds(self, authorization: bytes, user: str, body: bytes, reply: Reply,
                     channel: LeanChannel) -> bool:
        """Whether ``reply`` is still the answer to ``body`` from ``user`` on ``/`` over
        ``channel`` (kept by the channel for repeats): the connection proved these still
        valid credentials, and the core says the answer holds (and counts it)."""
        return (self._proved(channel, authorization, user)
                and self._answer_holds(body, user, reply))

    def _authenticated(self, user: str | None, request: server.Request,
                       wallet_name: str | None) -> Reply | Deferred[Reply]:
        if user is None:
            return Reply(HTTP_UNAUTHORIZED, b"", None)
        request.channel.authorized = request.getHeader(b"Authorization")
        return self._respond(_body(request), user, wallet_name)

    @staticmethod
    def _send_later(request: server.Request, answer: Deferred[Reply]) -> None:
        lost = cancel_when_gone(request, answer)

        def send(reply: Reply) -> None:
            if not lost:
                _send_reply(request, reply)

        def failed(reason: Failure) -> None:
            # Cancelled: the client went away. Anything else is a bug in the core.
            if reason.check(CancelledError) or lost:
                return
            status, error = map_exception(reason)
            body = b'{"result":null,"error":' + encode_json(error) + b',"id":null}\n'
            _respond(request, status, body, JSON_CONTENT_TYPE)

        answer.addCallbacks(send, failed)


def _body(request: server.Request) -> bytes:
    """The request body (a :class:`LeanRequest` has it without a file object)."""
    body = getattr(request, "body", None)
    return body() if body is not None else request.content.read()


def _send_reply(request: server.Request, reply: Reply) -> None:
    headers = (((b"WWW-Authenticate", WWW_AUTHENTICATE),)
               if reply.status == HTTP_UNAUTHORIZED else ())
    _respond(request, reply.status, reply.body, reply.content_type, headers)


class _WalletEndpoint(resource.Resource):
    """``/wallet/<name>``: the rest of the raw URI, URL-decoded, names the wallet."""

    isLeaf = True
    serves_lean_requests = True
    _PREFIX = b"/wallet/"

    def __init__(self, endpoint: _JSONRPCEndpoint) -> None:
        super().__init__()
        self._endpoint = endpoint

    def render(self, request: server.Request) -> int:
        if not request.uri.startswith(self._PREFIX):
            _respond(request, HTTP_NOT_FOUND)
            return server.NOT_DONE_YET
        name = unquote_to_bytes(request.uri[len(self._PREFIX):]).decode("utf-8", "surrogateescape")
        return self._endpoint.serve(request, name)


class RPCRoot(resource.Resource):
    """``/`` (JSON-RPC), ``/wallet/`` and ``/wallet/<name>``; ``putChild(b"rest", ...)``
    adds the REST tree. Any other path is 404 with an empty body, like Core."""

    serves_lean_requests = True

    def __init__(self, core: JSONRPCCore, authenticator: Authenticator,
                 clock: IReactorTime) -> None:
        super().__init__()
        self._endpoint = _JSONRPCEndpoint(core, authenticator, clock)
        self._wallet = _WalletEndpoint(self._endpoint)
        self._not_found = _NotFound()

    def stop(self) -> None:
        """The server stopped: no timer of its own may outlive it."""
        self._endpoint.stop()

    def getChild(self, path: bytes, request: server.Request) -> Any:
        if path == b"":
            return self
        if path == b"wallet":
            return self._wallet
        return self._not_found

    def render(self, request: server.Request) -> int:
        if request.uri != b"/":
            _respond(request, HTTP_NOT_FOUND)
            return server.NOT_DONE_YET
        return self._endpoint.serve(request, None)
