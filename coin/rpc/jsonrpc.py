"""The JSON-RPC protocol core: request bytes in, ``(status, body)`` out.

Independent of any HTTP layer: the caller authenticates, then hands over the body, the
authenticated user and the wallet name from the path. Envelope rules, statuses and
messages follow the reference node (Core 0.17 with Core 0.20's rpcwhitelist); see
doc/rpc.md for every rule and limit.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from decimal import Decimal
from collections.abc import Coroutine
from typing import Any, Callable, Hashable, Iterator, NamedTuple

import msgspec
import simplejson
from simplejson.decoder import scanstring
from simplejson.errors import JSONDecodeError
from simplejson.scanner import py_make_scanner
from twisted.internet.defer import (
    CancelledError, Deferred, DeferredLock, fail, maybeDeferred, succeed,
)
from twisted.internet.interfaces import IReactorTime
from twisted.internet.task import deferLater
from twisted.python.failure import Failure

from coin.rpc.auth import Whitelist
from coin.rpc.context import NodeFacade, RPCContext, request_wallet
from coin.rpc.errors import (
    HTTP_FORBIDDEN, HTTP_OK, RPC_IN_WARMUP, RPC_INVALID_REQUEST, RPC_METHOD_NOT_FOUND,
    RPC_PARSE_ERROR, RPCError, map_exception,
)
from coin.rpc.registry import MethodTable
from coin.threads import ThreadRunner
from coin.views.encode import JSONView, encode_view

JSON_CONTENT_TYPE = b"application/json"

#: Largest request body accepted (Core's MAX_SIZE, 32 MiB); enforced by the HTTP layer.
DEFAULT_MAX_BODY = 0x02000000
#: Most requests in one batch.
DEFAULT_MAX_BATCH = 10_000
#: Deepest nesting of arrays/objects in a request (UniValue's MAX_JSON_DEPTH).
DEFAULT_MAX_DEPTH = 512
#: A batch gives the reactor a turn after running this long (seconds).
BATCH_SLICE = 0.05
#: Bodies larger than this (bytes) are parsed in the thread pool, one at a time.
DEFAULT_THREAD_PARSE = 1 << 20


@dataclass(frozen=True)
class RPCLimits:
    """Bounds on what one request may cost; see doc/rpc.md."""

    max_body: int = DEFAULT_MAX_BODY
    max_batch: int = DEFAULT_MAX_BATCH
    max_depth: int = DEFAULT_MAX_DEPTH
    thread_parse: int = DEFAULT_THREAD_PARSE


class Reply(NamedTuple):
    """An HTTP answer: status, body, and Content-Type (None: the server's default)."""

    status: int
    body: bytes
    content_type: bytes | None = JSON_CONTENT_TYPE


FORBIDDEN = Reply(HTTP_FORBIDDEN, b"", None)


class Warmup:
    """Start-up state: while ``message`` is set every call answers -28 with it."""

    def __init__(self, message: str | None = "RPC server started") -> None:
        self.message = message
        #: Fires (with None) when start-up is over, for code that embeds the node.
        self.done: Deferred[None] = Deferred()

    def set(self, message: str) -> None:
        """Report the current start-up step (e.g. "Loading block index...")."""
        self.message = message

    def finish(self) -> None:
        """Start-up is over: calls run from now on."""
        self.message = None
        if not self.done.called:
            self.done.callback(None)


_ENCODER = simplejson.JSONEncoder(separators=(",", ":"), ensure_ascii=False,
                                  use_decimal=True, allow_nan=False)
_ASCII_ENCODER = simplejson.JSONEncoder(separators=(",", ":"), ensure_ascii=True,
                                        use_decimal=True, allow_nan=False)


#: Integers this small are printed directly (larger ones meet Python's digit limit there).
_INT_FAST = 1 << 64


def encode_json(value: Any) -> bytes:
    """Compact JSON with Decimals printed exactly and non-ASCII text as UTF-8 (as Core).

    Strings that cannot be UTF-8 (lone surrogates) fall back to ``\\u`` escapes. The
    commonest results (hashes, heights, ids, null) skip the encoder's Python-level setup;
    view objects (blocks, transactions) and lists of them take orjson's C encoder, which
    prints them the same.
    """
    kind = type(value)
    if kind is JSONView or (kind is list and all(type(item) is JSONView for item in value)):
        try:
            return encode_view(value)
        except TypeError:
            pass  # a lone surrogate, a huge int...: the rules below
    if kind is str and value.isascii() and value.isprintable() and '"' not in value \
            and "\\" not in value:
        return b'"%s"' % value.encode("ascii")
    if kind is int and -_INT_FAST < value < _INT_FAST:
        return b"%d" % value
    if value is None:
        return b"null"
    try:
        return _ENCODER.encode(value).encode("utf-8")
    except UnicodeEncodeError:
        return _ASCII_ENCODER.encode(value).encode("ascii")


#: Containers with more entries than this are encoded entry by entry in a thread.
_PIECE_ENTRIES = 100


def _pieces(value: Any) -> Iterator[bytes]:
    if isinstance(value, dict) and len(value) > _PIECE_ENTRIES and all(
            isinstance(key, str) for key in value):
        yield b"{"
        for i, (key, item) in enumerate(value.items()):
            yield (b",%s:" if i else b"%s:") % encode_json(key)
            yield from _pieces(item)
        yield b"}"
    elif isinstance(value, list) and len(value) > _PIECE_ENTRIES:
        yield b"["
        for i, item in enumerate(value):
            if i:
                yield b","
            yield from _pieces(item)
        yield b"]"
    else:
        yield encode_json(value)


def encode_json_in_pieces(value: Any) -> bytes:
    """:func:`encode_json` for large results, run in a thread: simplejson's C encoder holds
    the GIL for a whole value (half a second for 200,000 mempool entries, during which
    the reactor thread stops), so large lists and objects are encoded entry by entry.
    The text is the same, except that a lone surrogate escapes only its own entry."""
    return b"".join(_pieces(value))


class JSONNumber(Decimal):
    """A request number with a fraction or exponent: a Decimal that prints as it was written.

    UniValue keeps a number's text, so Core echoes ``0.00000001`` (``echojson``, ids) as
    sent; a plain Decimal would print ``1E-8``. Arithmetic gives plain Decimals.
    """

    __slots__ = ("_text",)

    def __new__(cls, text: str) -> "JSONNumber":
        number = super().__new__(cls, text)
        number._text = text
        return number

    def __str__(self) -> str:
        return self._text


_CONTAINERS = frozenset((list, dict))  # what the decoders make of arrays and objects


def _too_deep(value: Any, limit: int) -> bool:
    """Whether arrays and objects nest deeper than ``limit``, walked a level at a time."""
    level = [value]
    for _ in range(limit):
        level = [child for item in level
                 for child in (item.values() if type(item) is dict else item)
                 if type(child) in _CONTAINERS]
        if not level:
            return False
    return True


_SURROGATE = re.compile("[\ud800-\udfff]")  # a lone half of a UTF-16 pair


def _has_lone_surrogate(value: Any) -> bool:
    """Whether a string (key or value) holds half a surrogate pair, which is not text."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def _parse_int(text: str) -> int | JSONNumber:
    """An integer, or beyond int()'s 4,300 digits a Decimal (UniValue keeps any number;
    the argument check then says "JSON integer out of range", as Core)."""
    try:
        return int(text)
    except ValueError:
        return JSONNumber(text)


_WHITESPACE = re.compile(r"[ \t\n\r]*")


def _parse_object(state: tuple[str, int], encoding: str, strict: bool, scan_once: Any,
                  *ignored: Any) -> tuple[dict[str, Any], int]:
    """A JSON object, each member stored as it is read.

    simplejson's own collects the members in a list and builds the dict in one C call
    (about a second for two million keys, holding the GIL); this keeps each step short,
    so the reactor thread gets its turns while a large body is parsed in a thread.
    Duplicate keys keep the last value, as simplejson's.
    """
    text, end = state
    members: dict[str, Any] = {}
    end = _WHITESPACE.match(text, end).end()
    if text[end:end + 1] == "}":
        return members, end + 1
    while True:
        if text[end:end + 1] != '"':
            raise JSONDecodeError("Expecting property name enclosed in double quotes", text, end)
        key, end = scanstring(text, end + 1, encoding, strict)
        end = _WHITESPACE.match(text, end).end()
        if text[end:end + 1] != ":":
            raise JSONDecodeError("Expecting ':' delimiter", text, end)
        members[key], end = scan_once(text, _WHITESPACE.match(text, end + 1).end())
        end = _WHITESPACE.match(text, end).end()
        delimiter, end = text[end:end + 1], end + 1
        if delimiter == "}":
            return members, end
        if delimiter != ",":
            raise JSONDecodeError("Expecting ',' delimiter", text, end - 1)
        end = _WHITESPACE.match(text, end).end()


def _yielding_decoder() -> simplejson.JSONDecoder:
    """A decoder whose every step is Python code: slower than the C scanner (which holds
    the GIL for a whole body), but a thread running it lets the reactor thread run."""
    decoder = simplejson.JSONDecoder(parse_float=JSONNumber, parse_int=_parse_int)
    decoder.parse_object = _parse_object
    decoder.scan_once = py_make_scanner(decoder)
    return decoder


_DECODER = simplejson.JSONDecoder(parse_float=JSONNumber, parse_int=_parse_int)
#: msgspec's C decoder, 5-8x faster than simplejson's; numbers with a fraction or exponent
#: come with their text, as from simplejson. Whatever it refuses (errors, a lone surrogate
#: escape, integers past its range) is parsed again by simplejson, whose answer stands.
_FAST_DECODER = msgspec.json.Decoder(float_hook=JSONNumber)


def parse_json(body: bytes, max_depth: int = DEFAULT_MAX_DEPTH, yielding: bool = False) -> Any:
    """Parse a request body; numbers with a fraction or exponent become Decimal
    (:class:`JSONNumber`, which prints back the request's text).

    Invalid UTF-8, invalid JSON, NaN/Infinity and nesting beyond ``max_depth`` raise
    -32700 "Parse error". So does a ``\\u`` escape of half a surrogate pair, as in
    UniValue: it is not text, and a method would change state before its database refused it.
    ``yielding`` selects the pure-Python scanner, for large bodies parsed in a thread (same
    results).
    """
    try:
        text = body.decode("utf-8")
        if text.startswith("\ufeff"):  # simplejson skips a byte-order mark; UniValue does not
            raise ValueError("byte-order mark")
        if yielding:
            value = _yielding_decoder().decode(text)
        else:
            try:
                value = _FAST_DECODER.decode(body)
            except msgspec.DecodeError:
                value = _DECODER.decode(text)
    except (ValueError, RecursionError):
        raise RPCError(RPC_PARSE_ERROR, "Parse error") from None
    if body.count(b"[") + body.count(b"{") > max_depth and _too_deep(value, max_depth):
        raise RPCError(RPC_PARSE_ERROR, "Parse error")
    # Only an escape can make one: strict UTF-8 decoding refuses encoded surrogates.
    if b"\\u" in body and _has_lone_surrogate(value):
        raise RPCError(RPC_PARSE_ERROR, "Parse error")
    return value


def parse_call(request: Any) -> tuple[str, list[Any] | dict[str, Any]]:
    """Method name and params of one request object (Core's JSONRPCRequest::parse)."""
    if not isinstance(request, dict):
        raise RPCError(RPC_INVALID_REQUEST, "Invalid Request object")
    method = request.get("method")
    if method is None:
        raise RPCError(RPC_INVALID_REQUEST, "Missing method")
    if not isinstance(method, str):
        raise RPCError(RPC_INVALID_REQUEST, "Method must be a string")
    params = request.get("params")
    if params is None:
        return method, []
    if not isinstance(params, (list, dict)):
        raise RPCError(RPC_INVALID_REQUEST, "Params must be an array or object")
    return method, params


def _response(result: bytes, error: dict[str, Any] | None, request_id: Any) -> bytes:
    return b'{"result":%b,"error":%b,"id":%b}' % (
        result, b"null" if error is None else encode_json(error), encode_json(request_id))


#: Results that are neither Deferreds, coroutines nor Failures, told apart by exact type
#: (an ``isinstance(result, Coroutine)`` check is an ABC lookup, slow next to a cheap call).
_PLAIN_RESULTS = frozenset({str, int, bool, type(None), list, dict, JSONView})


#: Results with more top-level entries than this are encoded in the thread pool.
LARGE_RESULT = 1000
#: Answers of chain-only calls kept per chain snapshot (the cache is emptied when full), and
#: the longest request body whose answer is kept.
ANSWER_CACHE_ENTRIES = 4096
ANSWER_CACHE_BODY = 512
#: A call is kept by its parameters only while they are this small (at most this many,
#: strings of at most this many characters, integers of at most this many bits), and an
#: answer only up to this many bytes: a client cannot make the cache hold big values.
ANSWER_CACHE_PARAMS = 8
ANSWER_CACHE_TEXT = 256
ANSWER_CACHE_ANSWER = 4096


def call_key(request: dict[str, Any]) -> tuple[Any, ...] | None:
    """A call's key in the answer cache: what its answer depends on besides the chain and
    the id (method and parameters; Core reads nothing else of a call object), or None when
    a parameter is of another kind (numbers with a fraction echo their text...). Integers,
    strings, booleans and null print the same JSON when equal, and each is keyed with its
    type (``True`` is not ``1``). The id is not part of it: the answer is kept without it
    and each request's id spliced in."""
    method = request.get("method")
    params = request.get("params")
    if params is None:
        params = ()  # absent or null: no parameters, as parse_call has it
    elif type(params) is not list:
        return None
    if type(method) is not str or len(method) > ANSWER_CACHE_TEXT or len(params) > ANSWER_CACHE_PARAMS:
        return None
    for param in params:
        kind = type(param)
        if kind is int:
            if param.bit_length() > ANSWER_CACHE_TEXT:
                return None
        elif kind is str:
            if len(param) > ANSWER_CACHE_TEXT:
                return None
        elif kind is not bool and param is not None:
            return None
    return method, tuple(map(type, params)), tuple(params)


class AnswerCache:
    """Encoded answers of calls to ``chain_only`` methods: by :func:`call_key`, a call's
    ``(status, response object without its id)`` (the bytes up to ``"id":``; single calls
    and batch calls share them); by request body, a single call's whole :class:`Reply`
    (which lets the channel answer repeated bytes unparsed).

    A key names the method and parameters, a body those and the id, so equal ones get equal
    answers while the published chain snapshot stays the same: each answer is kept with the
    snapshot it was computed from and given again only while that snapshot is the current
    one (the validation thread publishes a new one at every tip change, reorg,
    invalidateblock...). A hit skips dispatch and encoding (a body's, parsing too); the
    whitelist and warm-up are still checked. Answers are kept from a body's or key's second
    request on (:meth:`asked_before`).
    """

    def __init__(self, current: Callable[[], object]) -> None:
        #: The published chain snapshot now (identity is all that is compared).
        self._current = current
        self._view: object = None
        #: body or call key -> (method, answer), under ``_view`` or an older snapshot (read
        #: directly for a quick "not kept"; emptied in place, never replaced)
        self.entries: dict[Hashable, tuple[str, Any]] = {}
        #: Bodies, and call keys, asked once (each emptied when full; apart, so that the
        #: bodies of requests that never repeat, a new id each time, do not push out the
        #: marks of the calls they make).
        self._asked_bodies: set[bytes] = set()
        self._asked_calls: set[Hashable] = set()

    def asked_before(self, body: Hashable) -> bool:
        """Whether ``body`` (a request body or a call key) was asked before (it is noted now
        if not). Keeping an answer costs more than giving it (about 4 µs with the channel's
        copy): requests that never repeat must not pay for it, repeated ones pay once."""
        asked = self._asked_bodies if type(body) is bytes else self._asked_calls
        if body in asked:
            return True
        if len(asked) >= ANSWER_CACHE_ENTRIES:
            asked.clear()
        asked.add(body)
        return False

    def get(self, body: Hashable) -> tuple[str, Any] | None:
        """The method and answer kept for ``body`` under the current snapshot, if any."""
        hit = self.entries.get(body)
        if hit is not None and self._current() is not self._view:
            self.entries.clear()
            return None
        return hit

    def view(self) -> object:
        """The snapshot an answer about to be computed will read (see :meth:`put`)."""
        return self._current()

    def put(self, view: object, body: Hashable, method: str, reply: Any) -> None:
        """Keep ``reply``, computed from ``view``, unless the snapshot moved meanwhile."""
        if self._current() is not view:
            return
        if view is not self._view or len(self.entries) >= ANSWER_CACHE_ENTRIES:
            self.entries.clear()
            self._view = view
        self.entries[body] = (method, reply)


class JSONRPCCore:
    """Parse, check the whitelist, dispatch and render; usable from any HTTP layer."""

    def __init__(self, methods: MethodTable, node: NodeFacade, *, whitelist: Whitelist,
                 warmup: Warmup, clock: IReactorTime, limits: RPCLimits = RPCLimits(),
                 in_thread: ThreadRunner | None = None,
                 observe: Callable[[str, int, float], None] | None = None) -> None:
        self.methods = methods
        self.limits = limits
        self._node = node
        self._whitelist = whitelist
        self._warmup = warmup
        self._clock = clock
        #: Where large bodies are parsed and large results encoded (the node's pool).
        self._in_thread = in_thread if in_thread is not None else ThreadRunner()
        self._parse_slot = DeferredLock()
        self._last_context: RPCContext | None = None
        #: Told ``(method, HTTP status, seconds)`` after each call (the node's metrics).
        self._observe = observe
        self._answers = AnswerCache(lambda: node.chain.snapshot())
        self._kept_entries = self._answers.entries
        #: ``(call key, kept entry)`` when the last :meth:`respond` answered a single
        #: chain-only call from the answer cache (see :meth:`call_holds`), else None.
        self.last_kept: tuple[tuple[Any, ...], tuple[str, Any]] | None = None

    def handle(self, body: bytes, user: str, wallet_name: str | None = None) -> Deferred[Reply]:
        """Answer one HTTP request body from the authenticated ``user``.

        ``wallet_name`` is the decoded name from a ``/wallet/<name>`` path, or None.
        The Deferred never fails except by cancellation, which stops a batch between
        calls and cancels the call in progress. Bodies over ``limits.thread_parse`` bytes
        are parsed in the thread pool (tens of MB of JSON take seconds).
        """
        answer = self.respond(body, user, wallet_name)
        return succeed(answer) if isinstance(answer, Reply) else answer

    def respond(self, body: bytes, user: str, wallet_name: str | None = None
                ) -> Reply | Deferred[Reply]:
        """:meth:`handle`, but the Reply itself when it is ready at once (most are): the
        HTTP layer's hot path makes no Deferred for them."""
        self.last_kept = None
        if wallet_name is None and len(body) <= ANSWER_CACHE_BODY and body in self._kept_entries:
            kept = self.kept_answer(body, user)
            if kept is not None:
                return kept
        if len(body) > self.limits.thread_parse:
            parsing = self._parse_slot.acquire().addCallback(self._parse_in_thread, body)
            return parsing.addCallbacks(self._dispatch, self._parse_failed,
                                        callbackArgs=(user, wallet_name))
        try:
            request = parse_json(body, self.limits.max_depth)
        except RPCError as exc:
            return self._error_reply(exc, None)
        return self.respond_parsed(request, user, wallet_name, body)

    def respond_parsed(self, request: Any, user: str, wallet_name: str | None = None,
                       body: bytes | None = None) -> Reply | Deferred[Reply]:
        """:meth:`respond` for a body its caller has parsed already (:func:`parse_json`). A
        chain-only call on ``/`` is answered from the answer cache (by :func:`call_key`,
        whatever its id); given the ``body`` too, its whole Reply is kept for that body."""
        self.last_kept = None
        key = self._cached_key(request) if self._cached(wallet_name) else None
        if key is None:
            return self._dispatch(request, user, wallet_name)
        if not self._whitelist.allows(user, key[0]):  # (False too for a user denied all)
            return FORBIDDEN
        view = self._answers.view()
        answer = self._chain_call(key, request.get("id"), request.get("params") or [], user)
        if not isinstance(answer, tuple):
            return answer.addCallback(lambda call: Reply(call[0], call[1] + b"\n"))
        reply = Reply(answer[0], answer[1] + b"\n")
        entry = self._kept_entries.get(key)
        if entry is not None:
            self.last_kept = key, entry
        if (body is not None and len(body) <= ANSWER_CACHE_BODY
                and self._answers.asked_before(body)):
            self._answers.put(view, body, key[0], reply)
        return reply

    def keeps(self, body: bytes) -> bool:
        """Whether an answer to ``body`` was kept (a single call of a chain-only method);
        :meth:`kept_answer` says whether it still holds."""
        return len(body) <= ANSWER_CACHE_BODY and body in self._kept_entries

    def kept_answer(self, body: bytes, user: str) -> Reply | None:
        """The answer kept for ``body`` on ``/`` (see :class:`AnswerCache`), if the chain has
        not moved since and ``user`` may call its method; None: answer it the usual way.
        An answer given counts as a call (the observer is told)."""
        kept = self._kept(body, user)
        return None if kept is None else self._counted(*kept)

    def answer_holds(self, body: bytes, user: str, reply: Reply) -> bool:
        """Whether ``reply``, given to ``body`` from ``user`` on ``/`` before, is the answer
        still (the very one kept); if so it counts as answered, as :meth:`kept_answer`."""
        kept = self._kept(body, user)
        return kept is not None and kept[1] is reply and self._counted(*kept) is reply

    def call_holds(self, key: tuple[Any, ...], user: str, entry: tuple[str, Any]) -> bool:
        """Whether ``entry``, the kept answer of the call ``key`` (:attr:`last_kept`), is its
        answer still (the snapshot has not moved) for ``user``, warm-up over; if so it
        counts as answered. For the HTTP layer, which may then answer another request of
        that call, whatever its id, with its id spliced in."""
        kept = self._answers.get(key)
        if (kept is not entry or self._warmup.message is not None
                or not self._whitelist.allows(user, key[0])):
            return False
        self._counted(*entry)
        return True

    def _kept(self, body: bytes, user: str) -> tuple[str, Reply] | None:
        # (A longer body is never kept: not even hashed.)
        kept = self._answers.get(body) if len(body) <= ANSWER_CACHE_BODY else None
        if (kept is None or self._warmup.message is not None
                or not self._whitelist.allows(user, kept[0])):
            return None
        return kept

    def _counted(self, method: str, answer: Any) -> Any:
        """``answer`` (a Reply, or a batch call's ``(status, bytes)``), counted as a call."""
        if self._observe is not None:
            self._observe(method, answer[0], 0.0)
        return answer

    def answer(self, method: str, params: list[Any] | dict[str, Any], user: str,
               wallet_name: str | None = None) -> Deferred[bytes]:
        """One parsed call's response object (``{"result":..,"error":..,"id":null}``), as
        JSON-RPC would send it: for in-process front ends (coin-qt's /api/call)."""
        answer = self._answer(None, method, params, user, wallet_name)
        if isinstance(answer, tuple):
            return succeed(answer[1])
        return answer.addCallback(lambda reply: reply[1])

    def call(self, method: str, params: list[Any] | dict[str, Any], user: str,
             wallet_name: str | None = None) -> Deferred[Any]:
        """One call's result as Python values (failing with the method's error), for
        in-process readers that build their own view from RPC results (coin-qt's status)."""
        def run() -> Any:
            result = self._invoke(method, params, user, wallet_name)
            return Deferred.fromCoroutine(result) if isinstance(result, Coroutine) else result
        return maybeDeferred(run)

    def _parse_in_thread(self, _: Any, body: bytes) -> Deferred[Any]:
        """Parse holding the slot until the thread is done, even if the client has left
        (so abandoned requests cannot pile up parsing threads)."""
        work = self._in_thread(parse_json, body, self.limits.max_depth, True)
        work.addBoth(self._release_parse_slot)
        # No canceller: a cancelled ``parsed`` ignores the thread's late result.
        parsed: Deferred[Any] = Deferred()
        work.chainDeferred(parsed)
        return parsed

    def _release_parse_slot(self, result: Any) -> Any:
        self._parse_slot.release()
        return result

    def _parse_failed(self, reason: Failure) -> Reply | Failure:
        if reason.check(RPCError):
            return self._error_reply(reason.value, None)
        return reason

    def _dispatch(self, request: Any, user: str, wallet_name: str | None
                  ) -> Reply | Deferred[Reply]:
        if self._whitelist.denies_all(user):
            return FORBIDDEN
        if isinstance(request, dict):
            return self._single(request, user, wallet_name)
        if isinstance(request, list):
            return self._batch(request, user, wallet_name)
        return self._error_reply(RPCError(RPC_PARSE_ERROR, "Top-level object parse error"), None)

    def _error_reply(self, exc: RPCError, request_id: Any) -> Reply:
        status, error = map_exception(exc)
        return Reply(status, _response(b"null", error, request_id) + b"\n")

    def _single(self, request: dict[str, Any], user: str,
                wallet_name: str | None) -> Reply | Deferred[Reply]:
        request_id = request.get("id")
        try:
            method, params = parse_call(request)
        except RPCError as exc:
            return self._error_reply(exc, request_id)
        if not self._whitelist.allows(user, method):
            return FORBIDDEN
        answer = self._answer(request_id, method, params, user, wallet_name)
        if isinstance(answer, tuple):
            return Reply(answer[0], answer[1] + b"\n")
        return answer.addCallback(lambda reply: Reply(reply[0], reply[1] + b"\n"))

    def _batch(self, requests: list[Any], user: str,
               wallet_name: str | None) -> Reply | Deferred[Reply]:
        if len(requests) > self.limits.max_batch:
            return self._error_reply(RPCError(
                RPC_INVALID_REQUEST,
                f"Batch too large: at most {self.limits.max_batch} requests"), None)
        allowed = self._whitelist.allowed_methods(user)
        if allowed is not None:
            # Core 0.20: a restricted user's batch is refused whole if any call is.
            for request in requests:
                if not isinstance(request, dict):
                    return self._error_reply(
                        RPCError(RPC_INVALID_REQUEST, "Invalid Request object"), None)
                method = request.get("method")
                if not isinstance(method, str):
                    return self._error_reply(
                        RPCError(RPC_PARSE_ERROR, "JSON value is not a string as expected"), None)
                if method not in allowed:
                    return FORBIDDEN
        answer = Deferred.fromCoroutine(self._run_batch(requests, user, wallet_name))
        if answer.called and isinstance(answer.result, Reply):
            return answer.result  # every call answered at once
        return answer

    async def _run_batch(self, requests: list[Any], user: str, wallet_name: str | None) -> Reply:
        parts: list[bytes] = []
        append = parts.append
        seconds = self._clock.seconds
        slice_end = seconds() + BATCH_SLICE
        cached = self._cached(wallet_name)
        for request in requests:
            answer = self._batch_call(request, user, wallet_name, cached)
            append(answer if isinstance(answer, bytes) else (await answer)[1])
            if seconds() >= slice_end:
                await deferLater(self._clock, 0, lambda: None)
                slice_end = seconds() + BATCH_SLICE
        return Reply(HTTP_OK, b"[" + b",".join(parts) + b"]\n")

    def _batch_call(self, request: Any, user: str, wallet_name: str | None, cached: bool
                    ) -> bytes | Deferred[tuple[int, bytes]]:
        """One call of a batch: its response object, or a Deferred of ``(status, it)``. With
        ``cached``, a chain-only call goes through the answer cache (:meth:`_chain_call`);
        the batch's whitelist check covered every call already."""
        key = self._cached_key(request) if cached else None
        request_id = request.get("id") if type(request) is dict else None
        if key is not None:
            call = self._chain_call(key, request_id, request.get("params") or [], user)
        else:
            try:
                method, params = parse_call(request)
            except RPCError as exc:
                return _response(b"null", map_exception(exc)[1], request_id)
            call = self._answer(request_id, method, params, user, wallet_name)
        return call[1] if isinstance(call, tuple) else call

    def _cached(self, wallet_name: str | None) -> bool:
        """Whether the answer cache serves this request's chain-only calls: on ``/`` after
        warm-up (warm-up only ever ends, so a batch asks once)."""
        return wallet_name is None and self._warmup.message is None

    def _cached_key(self, request: Any) -> tuple[Any, ...] | None:
        """:func:`call_key` of a call object of a chain-only method, else None."""
        if type(request) is not dict:
            return None
        key = call_key(request)
        return key if key is not None and key[0] in self.methods.chain_only else None

    def _chain_call(self, key: tuple[Any, ...], request_id: Any, params: list[Any], user: str
                    ) -> tuple[int, bytes] | Deferred[tuple[int, bytes]]:
        """:meth:`_answer` for a chain-only call on ``/`` (its :func:`call_key` ``key``),
        the whitelist checked: from the answer cache while the snapshot it was computed
        from is the published one, the request's id spliced in. The id is printed as the
        general path prints it (:func:`_response`), so the bytes are the same."""
        method = key[0]
        kept = self._answers.get(key)
        if kept is not None:
            status, head = self._counted(*kept)
            if type(request_id) is int and -_INT_FAST < request_id < _INT_FAST:
                return status, b"%s%d}" % (head, request_id)  # encode_json's, in one copy
            return status, head + encode_json(request_id) + b"}"
        if not self._answers.asked_before(key):
            return self._answer(request_id, method, params, user, None)
        view = self._answers.view()
        call = self._answer(request_id, method, params, user, None)
        if isinstance(call, tuple) and len(call[1]) <= ANSWER_CACHE_ANSWER:
            status, response = call
            # The response object ends with the id and its closing brace.
            head = response[:len(response) - len(encode_json(request_id)) - 1]
            self._answers.put(view, key, method, (status, head))
        return call

    def _answer(self, request_id: Any, method: str, params: list[Any] | dict[str, Any],
                user: str, wallet_name: str | None
                ) -> tuple[int, bytes] | Deferred[tuple[int, bytes]]:
        """Run one call: ``(status, response object bytes)`` at once when the handler answers
        at once (most do; no Deferred is made for them), else a Deferred of that.
        Each answered call is reported to the observer, if any."""
        if self._observe is None:
            return self._call(request_id, method, params, user, wallet_name)
        started = time.perf_counter()
        answer = self._call(request_id, method, params, user, wallet_name)
        if isinstance(answer, tuple):
            self._observe(method, answer[0], time.perf_counter() - started)
            return answer
        return answer.addCallback(self._observed, method, started)

    def _observed(self, answer: tuple[int, bytes], method: str, started: float
                  ) -> tuple[int, bytes]:
        assert self._observe is not None
        self._observe(method, answer[0], time.perf_counter() - started)
        return answer

    def _call(self, request_id: Any, method: str, params: list[Any] | dict[str, Any],
              user: str, wallet_name: str | None
              ) -> tuple[int, bytes] | Deferred[tuple[int, bytes]]:
        try:
            result = self._invoke(method, params, user, wallet_name)
        except Exception:
            result = Failure()
        if type(result) in _PLAIN_RESULTS:  # most results: no isinstance of an ABC (Deferred's)
            answer = self._rendered(result, request_id)
            return fail(answer) if type(answer) is Failure else answer
        if isinstance(result, Coroutine):
            result = Deferred.fromCoroutine(result)
        if isinstance(result, Deferred):
            return result.addCallbacks(self._rendered, self._failed,
                                       callbackArgs=(request_id,), errbackArgs=(request_id,))
        answer = (self._failed(result, request_id) if isinstance(result, Failure)
                  else self._rendered(result, request_id))
        return fail(answer) if isinstance(answer, Failure) else answer  # a cancellation

    def _invoke(self, name: str, params: list[Any] | dict[str, Any], user: str,
                wallet_name: str | None) -> Any:
        if self._warmup.message is not None:
            raise RPCError(RPC_IN_WARMUP, self._warmup.message)
        method = self.methods.get(name)
        if method is None:
            raise RPCError(RPC_METHOD_NOT_FOUND, "Method not found")
        positional = params if type(params) is list else method.bind_params(params)
        # Core's GetWalletForJSONRPCRequest + EnsureWalletIsAvailable, before the arguments.
        wallet = request_wallet(self._node.wallets, wallet_name) if method.needs_wallet else None
        args = method.convert(positional)
        return method.handler(self._context(user, wallet, wallet_name), *args)

    def _context(self, user: str, wallet: Any, wallet_name: str | None) -> RPCContext:
        """The call's context; the last one is reused (a batch's calls share theirs), as
        contexts are immutable and building one costs more than a cheap call's handler."""
        context = self._last_context
        if (context is None or context.user != user or context.wallet is not wallet
                or context.wallet_name != wallet_name):
            context = self._last_context = RPCContext(
                node=self._node, user=user, wallet=wallet, wallet_name=wallet_name,
                methods=self.methods)
        return context

    def _rendered(self, result: Any, request_id: Any) -> Any:
        if isinstance(result, (list, dict)) and len(result) > LARGE_RESULT:
            # Thousands of entries (listtransactions, getrawmempool true): encode off the
            # reactor so other clients are not kept waiting.
            return self._in_thread(self._encode, result, request_id, encode_json_in_pieces)
        try:
            return HTTP_OK, _response(encode_json(result), None, request_id)
        except Exception:
            return self._failed(Failure(), request_id)

    def _encode(self, result: Any, request_id: Any,
                encode: Callable[[Any], bytes]) -> tuple[int, bytes] | Failure:
        """:meth:`_rendered` in a thread, with ``encode``."""
        try:
            return HTTP_OK, _response(encode(result), None, request_id)
        except Exception:
            return self._failed(Failure(), request_id)

    def _failed(self, reason: Failure, request_id: Any) -> tuple[int, bytes] | Failure:
        if reason.check(CancelledError):
            return reason
        status, error = map_exception(reason)
        return status, _response(b"null", error, request_id)
