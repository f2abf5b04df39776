"""The lean HTTP/1.1 channel: llhttp parsing, the node's own resources answered directly.

twisted.web spends most of a small request in its line reader, ``Headers`` objects and
``Request`` bookkeeping; the node's own endpoints (JSON-RPC on ``/`` and ``/wallet/``,
REST under ``/rest/``) need none of it. :class:`LeanChannel` parses with httptools (the
llhttp binding), hands each request to the resource the site's tree names for its path,
and, when that resource is one of the node's own (``serves_lean_requests``), renders it
with a :class:`LeanRequest` that keeps only what those resources use. Any other resource
(a plugin's page) gets an ordinary twisted.web request (``site.requestFactory``) over
this channel, so the resource tree stays the one place where paths are mounted.

The wire behaviour is the one twisted.web + ``CoreHTTPRequest`` gave (doc/rpc.md):
response header order, ``Date``/``Content-Length`` on HTTP/1.1 only, HTTP/1.0 closed
after its answer, pipelined requests answered in order, ``100 Continue``, 400 and close
on malformed input and oversized request lines or headers, 413 on oversized bodies,
the idle timeout and the header deadline.
"""

from __future__ import annotations

import functools
import io
import tempfile
import time
from collections import deque
from typing import IO, Any, Callable
from urllib.parse import unquote_to_bytes

import httptools
from twisted.internet import tcp
from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IAddress, IDelayedCall
from twisted.internet.protocol import Protocol, connectionDone
from twisted.python.failure import Failure
from twisted.web import http
from twisted.web.http import datetimeToString
from twisted.web.http_headers import Headers

#: Seconds after the idle timeout closes a connection before it is aborted (twisted.web's).
ABORT_TIMEOUT = 15
#: Bodies larger than this are kept in a temporary file (twisted.web's threshold).
SPOOL_BYTES = 100_000
#: Headers in one request at most (twisted.web's maxHeaders).
MAX_HEADER_COUNT = 500
#: Parsed requests waiting for their turn before the channel stops reading.
MAX_PIPELINED = 32
#: Answers kept by the bytes of their request (:meth:`LeanRequest.keep_answer`): entries at
#: most (all dropped when full), the longest request kept, and the longest answer kept (a
#: REST block can be megabytes: 4,096 answers of at most 8 KiB hold 32 MiB at most).
MAX_KEPT_ANSWERS = 4096
MAX_KEPT_REQUEST = 2048
MAX_KEPT_RESPONSE = 8192
BAD_REQUEST = b"HTTP/1.1 400 Bad Request\r\n\r\n"
CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
#: Methods llhttp does not know are answered like twisted.web did (405, not 400): the
#: request is parsed as this one, then given its own name back.
_STAND_IN_METHOD = b"OPTIONS"
_TOKEN_BYTES = b"!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
#: Bytes twisted.web allowed in a request target.
_TARGET_BYTES = bytes(range(33, 177))


def http_date(when: float | None = None) -> bytes:
    """The ``Date`` header value for now (or ``when``), formatted once a second."""
    now = int(time.time() if when is None else when)
    if now != _date[0]:
        _date[:] = [now, datetimeToString(now)]
    return _date[1]


_date: list[Any] = [None, b""]


class _Refused(Exception):
    """The request broke a limit: ``answer`` is written in its turn and the connection closed."""

    def __init__(self, answer: bytes) -> None:
        super().__init__(answer)
        self.answer = answer


@functools.lru_cache(maxsize=256)
def canonical_name(name: bytes) -> bytes:
    """The capitalisation twisted.web's ``Headers`` writes (``content-type`` -> ``Content-Type``)."""
    headers = Headers()
    headers.setRawHeaders(name, [b""])
    return next(iter(headers.getAllRawHeaders()))[0]


class _Message:
    """One parsed request."""

    __slots__ = ("method", "uri", "version", "headers", "header_bytes", "body", "persistent",
                 "raw")

    def __init__(self) -> None:
        self.method = b""
        self.uri = b""
        self.version = b"HTTP/1.1"
        #: lower-cased name -> values in arrival order
        self.headers: dict[bytes, list[bytes]] = {}
        #: Header lines' bytes so far (name, value and their separator each).
        self.header_bytes = 0
        #: The body's chunks, or a temporary file once it passes SPOOL_BYTES.
        self.body: list[bytes] | IO[bytes] = []
        self.persistent = True
        #: All of the request's bytes, when they came in one read of their own (see
        #: :meth:`LeanChannel.keep`), else None.
        self.raw: bytes | None = None


class LeanRequest:
    """The part of ``twisted.web.server.Request`` the node's own resources use."""

    code = 200
    finished = False
    startedWriting = False

    def __init__(self, channel: LeanChannel, message: _Message) -> None:
        self.channel = channel
        self.site = channel.site
        self.method = message.method
        self.uri = message.uri
        self.clientproto = message.version
        self.path = path = message.uri.split(b"?", 1)[0]
        self.prepath: list[bytes] = []
        self.postpath = ([b""] if path == b"/" else
                         [unquote_to_bytes(segment) for segment in path[1:].split(b"/")])
        self._message = message
        self._content: IO[bytes] | None = None
        self._headers: dict[bytes, tuple[bytes, bytes]] = {}
        self._body: list[bytes] = []
        self._finish_waiters: list[Deferred[None]] = []
        self._lost: Failure | None = None
        self._still: Callable[[LeanChannel], bool] | None = None

    @property
    def content(self) -> IO[bytes]:
        """The body as a file at its start (made when first asked for)."""
        if self._content is None:
            self._content = _content(self._message.body)
        return self._content

    def body(self) -> bytes:
        """The whole body: what ``content.read()`` gives, without the file when it is short."""
        body = self._message.body
        if isinstance(body, list) and self._content is None:
            return body[0] if len(body) == 1 else b"".join(body)
        return self.content.read()

    def getHeader(self, name: bytes) -> bytes | None:
        values = self._message.headers.get(name.lower())
        return values[-1] if values else None

    def getClientAddress(self) -> IAddress:
        return self.channel.transport.getPeer()

    def notifyFinish(self) -> Deferred[None]:
        waiter: Deferred[None] = Deferred()
        if self._lost is not None:
            waiter.errback(self._lost)
        elif self.finished:
            waiter.callback(None)
        else:
            self._finish_waiters.append(waiter)
        return waiter

    def setResponseCode(self, code: int) -> None:
        self.code = code

    def keep_answer(self, still: Callable[[LeanChannel], bool]) -> None:
        """The answer about to be written may be written again, byte for byte but its Date,
        to the very same request bytes on a connection for which ``still(channel)`` is True
        (a resource's own checks: credentials, a cached result still current...). Such a
        repeat is answered without parsing or routing it (:meth:`LeanChannel.keep`)."""
        self._still = still

    def setHeader(self, name: bytes, value: bytes) -> None:
        self._headers[name.lower()] = (name, value)

    def write(self, data: bytes) -> None:
        """The whole answer is written at finish(): the node's resources write it once."""
        if self._lost is None and not self.finished:
            self.startedWriting = True
            self._body.append(data)

    def finish(self) -> None:
        if self._lost is not None or self.finished:
            return
        self.finished = True
        needs_body = self.method != b"HEAD" and self.code not in (204, 304)
        response = self._head() + (b"".join(self._body) if needs_body else b"")
        self.channel.write(response)
        if self._still is not None:
            self.channel.keep(self._message, response, self._still)
        self.site.log(self)
        waiters, self._finish_waiters = self._finish_waiters, []
        for waiter in waiters:
            waiter.callback(None)
        self.channel.requestDone(self)

    def connectionLost(self, reason: Failure) -> None:
        self._lost = reason
        waiters, self._finish_waiters = self._finish_waiters, []
        for waiter in waiters:
            waiter.errback(reason)

    def _head(self) -> bytes:
        """Status line and headers as ``CoreHTTPRequest`` arranged them (see there)."""
        headers = self._headers
        length = headers.pop(b"content-length", None)
        for name in (b"server", b"date", b"connection"):
            headers.pop(name, None)
        needs_body = self.method != b"HEAD" and self.code >= 200 and self.code not in (204, 304)
        http11 = self.clientproto == b"HTTP/1.1"
        with_length = http11 and needs_body and length is not None
        close = _asks_to_close(self._message)
        key = (self.clientproto, self.code, needs_body, with_length, close, *headers.values())
        template = _HEADS.get(key)
        if template is None:
            template = _head_template(self.clientproto, self.code, needs_body, with_length, close,
                                      headers)
            if len(_HEADS) >= MAX_HEAD_TEMPLATES:
                _HEADS.clear()
            _HEADS[key] = template
        before, after = template
        if not http11:
            return before + after
        if length is not None and with_length:
            return b"".join((before, http_date(), b"\r\nContent-Length: ", length[1], after))
        return b"".join((before, http_date(), after))


#: Status line and headers of the answers given so far, by what decides them (see _head).
_HEADS: dict[tuple[Any, ...], tuple[bytes, bytes]] = {}
MAX_HEAD_TEMPLATES = 256


def _head_template(version: bytes, code: int, needs_body: bool, with_length: bool, close: bool,
                   headers: dict[bytes, tuple[bytes, bytes]]) -> tuple[bytes, bytes]:
    """The head around its Date and Content-Length values: ``(before, after)``; for HTTP/1.0
    (no Date) ``before + after`` is the head."""
    lines = [b"%s %d %s\r\n" % (version, code, http.RESPONSES.get(code, b"Unknown Status"))]
    lines += [b"%s: %s\r\n" % (canonical_name(name), value) for name, value in headers.values()]
    before = b"".join(lines)
    if version == b"HTTP/1.1":
        before += b"Date: "
        lines = [b"\r\n"]
    else:
        lines = []
    if needs_body and b"content-type" not in headers:
        lines.append(b"Content-Type: text/html; charset=ISO-8859-1\r\n")
    if close:
        lines.append(b"Connection: close\r\n")
    lines.append(b"\r\n")
    return before, b"".join(lines)


def _valid_request_line(line: bytes) -> bool:
    """twisted.web's rules: ``token SP target SP HTTP/1.x``, one space each, target printable."""
    parts = line.split(b" ")
    if len(parts) != 3:
        return False
    method, target, version = parts
    return (bool(method) and not method.translate(None, _TOKEN_BYTES) and bool(target)
            and not target.translate(None, _TARGET_BYTES) and version in (b"HTTP/1.1", b"HTTP/1.0"))


def _asks_to_close(message: _Message) -> bool:
    connection = message.headers.get(b"connection")
    return bool(connection) and connection[0].strip().lower() == b"close"


class LeanChannel(Protocol):
    """HTTP/1.1 over one connection, parsed by llhttp; see the module docstring."""

    #: The Authorization value this connection has proved: its later requests with the same
    #: value skip the throttle while the authenticator still knows it as valid.
    authorized: bytes | None = None

    def __init__(self, site: Any) -> None:
        self.site = self.factory = site
        self.timeOut: float | None = site.timeOut
        self.callLater: Callable[..., IDelayedCall] = site.reactor.callLater
        self._seconds: Callable[[], float] = site.reactor.seconds
        self._last_active = 0.0
        self._parser = self._new_parser()
        self._message: _Message | None = None
        self._head_bytes = self._body_bytes = self._header_count = 0
        self._queue: deque[_Message | bytes] = deque()
        self._current: Any = None
        self._closing = False
        #: Set at shutdown: close as soon as no request is left to answer.
        self._close_when_idle = False
        #: Reading paused: too many requests waiting, or the transport's buffer is full.
        self._paused = self._transport_full = False
        self._idle: IDelayedCall | None = None
        self._headers_deadline: IDelayedCall | None = None
        self._abort: IDelayedCall | None = None
        self._allowed: bool | None = None
        self._skipped_empty_line = False
        #: The start of a request whose first line is still incomplete.
        self._pending = b""
        self._real_method: bytes | None = None
        #: request bytes -> (still, response up to the Date value, response after it):
        #: the site's answers kept for repeats (see keep); None: the site keeps none.
        self._kept: dict[bytes, tuple[Callable[[LeanChannel], bool], bytes, bytes]] | None = \
            getattr(site, "kept_answers", None)

    def _new_parser(self) -> httptools.HttpRequestParser:
        parser = httptools.HttpRequestParser(self)
        # libevent reads LF and CRLF lines alike (EVBUFFER_EOL_CRLF).
        parser.set_dangerous_leniencies(lenient_optional_cr_before_lf=True)
        return parser

    # ------------------------------------------------------------------ connection

    def connectionMade(self) -> None:
        # The transport tells us when its buffer is full (a client that sends and does
        # not read): then nothing more is answered or read until it drains.
        self.transport.registerProducer(self, True)
        self._restart_idle()

    def pauseProducing(self) -> None:
        self._transport_full = True
        self.transport.pauseProducing()

    def resumeProducing(self) -> None:
        self._transport_full = False
        if not self._paused and not self._closing:
            self.transport.resumeProducing()
        self._serve_next()

    def stopProducing(self) -> None:
        """The connection is going: connectionLost does the cleaning up."""

    def connectionLost(self, reason: Failure = connectionDone) -> None:
        self._closing = True
        for call in (self._idle, self._headers_deadline, self._abort):
            if call is not None and call.active():
                call.cancel()
        self._idle = self._headers_deadline = self._abort = None
        self._queue.clear()
        if self._current is not None:
            current, self._current = self._current, None
            current.connectionLost(reason)
        self.site.connection_closed(self)

    def loseConnection(self) -> None:
        self._closing = True
        self.transport.loseConnection()

    def close_when_idle(self) -> None:
        """Shutdown: close now if nothing is being answered, else after the answers queued."""
        self._close_when_idle = True
        if self._current is None and not self._queue:
            self.loseConnection()

    def _restart_idle(self) -> None:
        """Idleness counts from now. The connection's one idle timer is not moved for this (a
        request would pay for a timer reset twice): when it fires it looks at the time of the
        last activity and waits for the rest, if any."""
        if not self.timeOut:
            return
        self._last_active = self._seconds()
        if self._idle is None:
            self._idle = self.callLater(self.timeOut, self._idle_expired)

    def _idle_expired(self) -> None:
        self._idle = None
        if self._current is not None or self._queue:
            self._restart_idle()  # busy answering: not idle
            return
        left = self._last_active + (self.timeOut or 0) - self._seconds()
        if left > 0:
            self._idle = self.callLater(left, self._idle_expired)
        else:
            self._timed_out()

    def _timed_out(self) -> None:
        # Either deadline may fire first: the other must not fire again later.
        for call in (self._idle, self._headers_deadline):
            if call is not None and call.active():
                call.cancel()
        self._idle = self._headers_deadline = None
        self._abort = self.callLater(ABORT_TIMEOUT, self.transport.abortConnection)
        self.loseConnection()

    # ------------------------------------------------------------------ input

    def dataReceived(self, data: bytes) -> None:
        if self._closing:
            return
        kept = self._kept.get(data) if self._kept and len(data) <= MAX_KEPT_REQUEST else None
        if kept is not None and self._answer_kept(*kept):
            return
        if self._current is None and self._idle is not None:
            self._restart_idle()
        # A head begun now must be complete within the timeout; most arrive whole in this
        # read, so the deadline is only set (below) if this one did not.
        may_start_deadline = (self._headers_deadline is None and self.timeOut
                              and self._current is None and not self._queue
                              and self._head_bytes >= 0)
        try:
            if self._message is None:
                received, pending = data, self._pending
                data, self._pending = pending + data, b""
                data = self._request_line_first(data)
                if data:
                    completed = len(self._queue)
                    self._feed(data, True)
                    message = self._queue[-1] if len(self._queue) == completed + 1 else None
                    if (data is received and not pending and self._message is None
                            and isinstance(message, _Message)):
                        message.raw = received  # one whole request, nothing more
            else:
                self._feed(data, False)
        except _Refused as refused:
            self._queue.append(refused.answer)
        except httptools.HttpParserError:
            self._queue.append(BAD_REQUEST)
        if self._queue and isinstance(self._queue[-1], bytes):
            self._closing = True  # nothing after a refusal is read
        elif may_start_deadline and self._head_bytes >= 0 and (
                self._pending or self._message is not None):
            self._headers_deadline = self.callLater(self.timeOut, self._timed_out)
        self._serve_next()

    def _answer_kept(self, still: Callable[[LeanChannel], bool], before: bytes, after: bytes
                     ) -> bool:
        """Answer a repeat of a request whose answer was kept (``before`` and ``after`` its
        Date), if nothing else is under way on this connection and the resource's checks
        still hold; False: parse it as usual."""
        if (self._current is not None or self._queue or self._message is not None
                or self._pending or self._skipped_empty_line or self._transport_full
                or self._close_when_idle or not self._allows_peer() or self.site.logs_requests()):
            return False
        if not still(self):
            return False
        write_now(self.transport, before + http_date() + after)
        self._restart_idle()  # after the answer is on its way: it waits for nothing here
        return True

    def keep(self, message: _Message, response: bytes,
             still: Callable[[LeanChannel], bool]) -> None:
        """Keep ``response`` for repeats of ``message`` (see :meth:`LeanRequest.keep_answer`):
        only a kept-alive HTTP/1.1 request that came whole in one read of its own, without
        ``Expect``, so that a repeat of its bytes is parsed and answered the same way."""
        kept = self._kept
        raw = message.raw
        if (kept is None or raw is None or len(raw) > MAX_KEPT_REQUEST
                or len(response) > MAX_KEPT_RESPONSE or not message.persistent
                or message.version != b"HTTP/1.1" or b"expect" in message.headers
                or self.site.logs_requests()):  # never given then (_answer_kept)
            return
        date = response.find(b"\r\nDate: ") + 8
        if date < 8:
            return
        if len(kept) >= MAX_KEPT_ANSWERS:
            kept.clear()
        kept[raw] = (still, response[:date], response[date + len(http_date()):])

    def _request_line_first(self, data: bytes) -> bytes:
        """At a request's start, wait for its whole first line, check it and end it with CRLF.

        llhttp accepts a bare LF after header lines (the leniency set above) but not
        after the request line, and is more lenient than twisted.web was about the line
        itself (leading empty lines, repeated spaces). The request line of a request
        pipelined behind another in the same read is left to llhttp as it is.
        """
        if not self._skipped_empty_line and data.startswith((b"\n", b"\r\n")):
            # One empty line before a request is let pass (twisted.web's, for old browsers
            # that sent one after a POST body); a second one is a bad request line.
            data = data[data.index(b"\n") + 1:]
            self._skipped_empty_line = True
        end = data.find(b"\n")
        if end < 0:
            if len(data) > self.site.max_request_line:
                raise _Refused(BAD_REQUEST)
            self._pending = data
            return b""
        line = data[:end - 1] if end > 0 and data[end - 1] == 0x0D else data[:end]
        if len(line) > self.site.max_request_line or not _valid_request_line(line):
            raise _Refused(BAD_REQUEST)
        if len(line) == end:
            return data[:end] + b"\r" + data[end:]
        return data

    def _feed(self, data: bytes, at_boundary: bool) -> None:
        completed = len(self._queue)
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserCallbackError as error:
            cause = error.__cause__ or error.__context__
            raise cause if isinstance(cause, _Refused) else error
        except httptools.HttpParserInvalidMethodError:
            if not (at_boundary and len(self._queue) == completed):
                raise
            self._retry_unknown_method(data)
            return
        if self._message is not None and self._head_bytes >= 0:
            # Headers still incomplete: llhttp buffers them out of sight, so count here
            # (all of the chunk if the request began before it or at its start).
            if not at_boundary or len(self._queue) == completed:
                self._head_bytes += len(data)
            if self._head_bytes > self.site.max_header_bytes:
                raise _Refused(BAD_REQUEST)

    def _retry_unknown_method(self, data: bytes) -> None:
        """twisted.web took any token as a method (405 later); llhttp refuses unknown ones."""
        token, space, rest = data.partition(b" ")
        if not space or not token or token.translate(None, _TOKEN_BYTES):
            raise httptools.HttpParserError("bad method")
        self._parser = self._new_parser()
        self._real_method = token
        self._feed(_STAND_IN_METHOD + b" " + rest, True)

    # httptools callbacks

    def on_message_begin(self) -> None:
        self._message = _Message()
        self._head_bytes = self._body_bytes = self._header_count = 0
        self._skipped_empty_line = False

    def on_url(self, url: bytes) -> None:
        message = self._message
        message.uri += url
        method = self._real_method or self._parser.get_method()
        if len(method) + len(message.uri) + len(b"  HTTP/1.1") > self.site.max_request_line:
            raise _Refused(BAD_REQUEST)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._header_count += 1
        if self._header_count > MAX_HEADER_COUNT:
            raise _Refused(BAD_REQUEST)
        message = self._message
        assert message is not None  # llhttp calls on_message_begin first
        message.header_bytes += len(name) + len(value) + 2
        key = name.lower()
        values = message.headers.get(key)
        if values is None:
            message.headers[key] = [value]
        else:
            values.append(value)

    def on_headers_complete(self) -> None:
        message = self._message
        parser = self._parser
        message.method = self._real_method or parser.get_method()
        self._real_method = None
        message.version = b"HTTP/" + parser.get_http_version().encode("ascii")
        if message.version not in (b"HTTP/1.1", b"HTTP/1.0"):
            raise _Refused(BAD_REQUEST)  # as twisted.web: HTTP/0.9 or 2.0 here is a mistake
        size = len(message.method) + len(message.uri) + len(message.version) + 2 + message.header_bytes
        if size > self.site.max_header_bytes:
            raise _Refused(BAD_REQUEST)
        self._head_bytes = -1
        if self._headers_deadline is not None and self._headers_deadline.active():
            self._headers_deadline.cancel()
        self._headers_deadline = None
        connection = message.headers.get(b"connection")
        tokens = connection[0].lower().split(b" ") if connection else []
        message.persistent = message.version == b"HTTP/1.1" and b"close" not in tokens
        length = message.headers.get(b"content-length")
        if length and length[-1].strip().isdigit() and int(length[-1]) > self.site.max_body:
            raise _Refused(self._too_large())
        expect = message.headers.get(b"expect")
        if (expect and message.version == b"HTTP/1.1" and expect[-1].lower() == b"100-continue"
                and self._current is None and not self._queue):
            self.transport.write(CONTINUE)

    def on_body(self, body: bytes) -> None:
        message = self._message
        self._body_bytes += len(body)
        if self._body_bytes > self.site.max_body:
            raise _Refused(self._too_large())
        if isinstance(message.body, list):
            message.body.append(body)
            if self._body_bytes > SPOOL_BYTES:
                # As twisted.web: large bodies wait on disk, so memory stays bounded.
                spool = tempfile.TemporaryFile()
                spool.writelines(message.body)
                message.body = spool
        else:
            message.body.write(body)

    def on_message_complete(self) -> None:
        self._queue.append(self._message)
        self._message = None
        self._head_bytes = 0  # the next bytes start a head (and its deadline)
        if len(self._queue) > MAX_PIPELINED and not self._paused:
            self._paused = True
            self.transport.pauseProducing()

    def _too_large(self) -> bytes:
        body = b"Request body too large: the limit is %d bytes\n" % self.site.max_body
        return (b"HTTP/1.1 413 Request Entity Too Large\r\nContent-Type: text/plain\r\nDate: "
                + http_date() + b"\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
                % len(body) + body)

    # ------------------------------------------------------------------ serving

    def _serve_next(self) -> None:
        while self._current is None and self._queue and not self._transport_full:
            item = self._queue.popleft()
            if isinstance(item, bytes):
                self.transport.write(item)
                self._queue.clear()
                self.loseConnection()
                return
            self._serve(item)
        if self._paused and len(self._queue) <= MAX_PIPELINED // 2 and not self._closing:
            self._paused = False
            if not self._transport_full:
                self.transport.resumeProducing()

    def _serve(self, message: _Message) -> None:
        request = LeanRequest(self, message)
        self._current = request
        site = self.site
        if not self._allows_peer():
            _empty_reply(request, http.FORBIDDEN)
        elif message.method not in site.known_methods:
            _empty_reply(request, http.NOT_ALLOWED)
        else:
            target = site.getResourceFor(request)
            if getattr(target, "serves_lean_requests", False) and message.uri != b"*":
                target.render(request)
            else:
                self._hand_to_twisted_web(message)

    def _allows_peer(self) -> bool:
        """Whether the site's allow-list lets the client in (asked once: one peer per
        connection)."""
        if self._allowed is None:
            self._allowed = self.site.allow.allows(self.transport.getPeer())
        return self._allowed

    def _hand_to_twisted_web(self, message: _Message) -> None:
        """A resource the node does not own gets a full twisted.web request."""
        request = self._current = self.site.requestFactory(self, False)
        for name, values in message.headers.items():
            request.requestHeaders.setRawHeaders(name, values)
        body = _content(message.body).read()
        request.gotLength(len(body))
        request.handleContentChunk(body)
        if not message.persistent and message.version == b"HTTP/1.1":
            request.responseHeaders.setRawHeaders(b"Connection", [b"close"])
        request.requestReceived(message.method, message.uri, message.version)

    def requestDone(self, request: Any) -> None:
        """Called by the finished request: next in line, or close (HTTP/1.0, ``close``)."""
        if request is not self._current:
            return
        self._current = None
        message = getattr(request, "_message", None)
        persistent = (message.persistent if message is not None
                      else request.clientproto == b"HTTP/1.1" and not _asks_to_close_raw(request))
        if not persistent:
            self._queue.clear()
            self.loseConnection()
            return
        if self._close_when_idle and not self._queue:
            self.loseConnection()
            return
        self._restart_idle()
        self._serve_next()

    # ------------------------------------------------------------------ what twisted.web's Request calls

    def getPeer(self) -> IAddress:
        return self.transport.getPeer()

    def getHost(self) -> IAddress:
        return self.transport.getHost()

    def isSecure(self) -> bool:
        return False

    def writeHeaders(self, version: bytes, code: bytes, reason: bytes, headers: Headers) -> None:
        lines = [version, b" ", code, b" ", reason, b"\r\n"]
        for name, values in headers.getAllRawHeaders():
            for value in values:
                lines += [name, b": ", value, b"\r\n"]
        lines.append(b"\r\n")
        self.transport.writeSequence(lines)

    def write(self, data: bytes) -> None:
        """Sent at once when nothing else is waiting to go (see :func:`write_now`)."""
        write_now(self.transport, data)

    def writeSequence(self, data: list[bytes]) -> None:
        self.transport.writeSequence(data)

    def registerProducer(self, producer: Any, streaming: bool) -> None:
        """A handed-off request's producer takes the channel's place for a while."""
        self.transport.unregisterProducer()
        self.transport.registerProducer(producer, streaming)

    def unregisterProducer(self) -> None:
        self.transport.unregisterProducer()
        self.transport.registerProducer(self, True)

    def _respondToBadRequestAndDisconnect(self) -> None:
        self.transport.write(BAD_REQUEST)
        self.loseConnection()


def write_now(transport: Any, data: bytes) -> None:
    """``transport.write(data)``, but on a TCP connection with nothing buffered the bytes go
    to the socket now.

    ``transport.write`` only buffers and asks the reactor for a writable event: two
    ``epoll_ctl`` calls and a reactor turn per answer, more than the answer itself costs
    (most answers fit the socket's buffer). What the socket does not take, and anything
    while earlier bytes are still buffered (order), goes the usual way.
    """
    if (isinstance(transport, tcp.Connection) and transport.connected and not transport.disconnecting
            and not transport._writeDisconnected and not transport._tempDataLen
            and transport.offset == len(transport.dataBuffer)):
        try:
            sent = transport.socket.send(data)
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError:
            sent = 0  # the reactor meets the error when it writes, and closes as usual
        if sent == len(data):
            return
        data = data[sent:]
    transport.write(data)


def _asks_to_close_raw(request: http.Request) -> bool:
    connection = request.requestHeaders.getRawHeaders(b"Connection") or [b""]
    return b"close" in connection[0].lower().split(b" ")


def _content(body: list[bytes] | IO[bytes]) -> IO[bytes]:
    """A request body as the file ``request.content`` is, at its start."""
    if isinstance(body, list):
        return io.BytesIO(b"".join(body))
    body.seek(0)
    return body


def _empty_reply(request: LeanRequest, code: int) -> None:
    """403/405 before routing, as ``CoreHTTPRequest`` answered them."""
    request.setResponseCode(code)
    request.setHeader(b"Content-Length", b"0")
    request.write(b"")
    request.finish()
