"""The RPC hot path's shortcuts answer exactly what the general path answers.

- A call answered at once (no Deferred, :meth:`JSONRPCCore.respond`) and the same call
  answered through a Deferred give the same bytes, alone and item by item in a batch
  (order, per-item errors, ids echoed, non-objects, unknown methods, bad parameters).
- The converters decided once per method shape (:attr:`RPCMethod.convert`) agree with
  :func:`convert_params` on every argument list, errors included.
- Answers over the channel: head templates reused across statuses and content types give
  the heads the general arrangement gives; Date is the current second's.
"""

from __future__ import annotations

import dataclasses
import re
from decimal import Decimal
from typing import Any

import simplejson
from hypothesis import given, settings
from hypothesis import strategies as st
from twisted.internet.defer import fail, succeed
from twisted.python.failure import Failure
from twisted.trial.unittest import SynchronousTestCase
from twisted.web.http import datetimeToString

from coin.http import channel as channel_module
from coin.rpc.errors import RPCError
from coin.rpc.jsonrpc import JSONRPCCore, Reply, RPCLimits, Warmup
from coin.rpc.auth import Whitelist
from coin.rpc.registry import (
    AMOUNT, ANY, BOOL, INT, INT64, STR, Arg, MethodTable, RPCMethod, convert_params,
)

from tests.rpchelpers import REFERENCE_METHODS, FakeNode, Server, post, reference_wallets


def _later(method: RPCMethod) -> RPCMethod:
    """``method`` answering through a Deferred: the general (slow) path of the core."""
    def handler(*args: Any) -> Any:
        try:
            return succeed(method.handler(*args))
        except Exception:
            return fail(Failure())
    return dataclasses.replace(method, handler=handler)


def _core(methods: list[RPCMethod]) -> JSONRPCCore:
    from twisted.internet.task import Clock
    return JSONRPCCore(MethodTable(methods), FakeNode(wallets=reference_wallets("")),
                       whitelist=Whitelist(), warmup=Warmup(None), clock=Clock(),
                       limits=RPCLimits(max_batch=50))


_JSON_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-2 ** 70, 2 ** 70),
                          st.text(max_size=4),
                          st.floats(allow_nan=False, allow_infinity=False))
_PARAMS = st.one_of(
    st.none(), st.lists(_JSON_SCALARS, max_size=3),
    st.dictionaries(st.sampled_from(["height", "x", "args"]), _JSON_SCALARS, max_size=2),
    _JSON_SCALARS)
_OBJECTS = st.one_of(
    st.fixed_dictionaries(
        {"method": st.sampled_from(["getblockcount", "getbestblockhash", "getblockhash",
                                    "getwalletinfo", "nosuchmethod"]),
         "params": _PARAMS, "id": _JSON_SCALARS}),
    st.fixed_dictionaries({"id": _JSON_SCALARS}),            # no method
    st.fixed_dictionaries({"method": _JSON_SCALARS}))        # a method that is no string
_CALLS = st.one_of(_OBJECTS, _JSON_SCALARS, st.lists(_JSON_SCALARS, max_size=2))  # + not objects


class CorePathTests(SynchronousTestCase):

    def setUp(self) -> None:
        self.now = _core(list(REFERENCE_METHODS))
        self.later = _core([_later(method) for method in REFERENCE_METHODS])

    def answer(self, core: JSONRPCCore, body: bytes) -> Reply:
        answer = core.respond(body, "u")
        return answer if isinstance(answer, Reply) else self.successResultOf(answer)

    @settings(max_examples=150, deadline=None)
    @given(st.lists(_CALLS, max_size=12))
    def test_a_batch_at_once_is_the_batch_through_deferreds(self, calls: list[Any]) -> None:
        body = simplejson.dumps(calls).encode()
        now = self.now.respond(body, "u")
        self.assertIsInstance(now, Reply)  # every call answered at once: no Deferred at all
        self.assertEqual(now, self.answer(self.later, body))

    @settings(max_examples=150, deadline=None)
    @given(st.lists(_OBJECTS, max_size=8))
    def test_each_batch_item_is_the_single_call(self, calls: list[dict[str, Any]]) -> None:
        batch = self.answer(self.now, simplejson.dumps(calls).encode())
        singles = [self.answer(self.later, simplejson.dumps(call).encode()) for call in calls]
        self.assertEqual(batch.status, 200)
        self.assertEqual(batch.body, b"[" + b",".join(s.body[:-1] for s in singles) + b"]\n")


_ARG_TYPES = [STR, INT, INT64, BOOL, AMOUNT, ANY, (INT, BOOL)]
_ARGS = st.lists(st.builds(
    lambda n, kind, default, typecheck: Arg("a%d" % n, kind, default=default, typecheck=typecheck),
    st.integers(0, 9), st.sampled_from(_ARG_TYPES),
    st.sampled_from([Arg.__dataclass_fields__["default"].default, None, 0, "d"]),
    st.booleans()), max_size=3, unique_by=lambda arg: arg.name)
_VALUES = st.lists(st.one_of(_JSON_SCALARS, st.decimals(allow_nan=False, allow_infinity=False,
                                                        places=3)), max_size=4)


def _outcome(convert: Any, params: list[Any]) -> Any:
    try:
        return list(convert(params))
    except RPCError as error:
        return ("error", error.code, error.message)


class ConverterTests(SynchronousTestCase):

    @settings(max_examples=300, deadline=None)
    @given(_ARGS, st.booleans(), _VALUES)
    def test_method_converters_agree_with_convert_params(self, args: list[Arg], variadic: bool,
                                                         params: list[Any]) -> None:
        args = sorted(args, key=lambda arg: not arg.required)  # required ones first, as declared
        if variadic:
            args.append(Arg("rest", STR, variadic=True))
        method = RPCMethod("m", "test", lambda ctx, *a: None, "usage", tuple(args))
        self.assertEqual(_outcome(method.convert, params),
                         _outcome(lambda p: convert_params(args, p, "usage"), params))

    def test_a_decimal_height_is_out_of_range_as_before(self) -> None:
        method = RPCMethod("m", "test", lambda ctx, h: None, "usage", (Arg("h", INT),))
        for value in (Decimal("1.5"), True, 1 << 31, "7"):
            self.assertEqual(_outcome(method.convert, [value]),
                             _outcome(lambda p: convert_params(method.args, p, "usage"), [value]))


class _Raw(Arg):
    """An argument whose class reads values its own way (network.py's disconnectnode)."""

    def convert(self, value: Any) -> Any:
        return ("raw", value)


class OwnConverterTests(SynchronousTestCase):
    def test_an_argument_class_with_its_own_convert_keeps_it(self) -> None:
        for args, params in (((_Raw("a", INT),), ["x"]),
                             ((Arg("a", ANY), _Raw("b", INT64, default=None)), ["y", "x"])):
            method = RPCMethod("m", "test", lambda ctx, *a: None, "usage", args)
            self.assertEqual(list(method.convert(params))[-1], ("raw", "x"))


class HeadTemplateTests(SynchronousTestCase):
    """Answers of several kinds on one connection: each head as the general arrangement."""

    def test_heads_in_turn(self) -> None:
        server = Server()
        protocol, transport = server.connect()
        exchanges = [
            (post(b'{"method":"getblockcount","id":1}'),
             b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nDate: %s\r\n"
             b"Content-Length: 35\r\n\r\n"),
            (post(b'{"method":"nosuch","id":1}'),
             b"HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nDate: %s\r\n"
             b"Content-Length: 76\r\n\r\n"),
            (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
             b"HTTP/1.1 405 Method Not Allowed\r\nDate: %s\r\nContent-Length: 41\r\n"
             b"Content-Type: text/html; charset=ISO-8859-1\r\n\r\n"),
            (post(b"{}", path=b"/nowhere"),
             b"HTTP/1.1 404 Not Found\r\nDate: %s\r\nContent-Length: 0\r\n"
             b"Content-Type: text/html; charset=ISO-8859-1\r\n\r\n"),
            (post(b'{"method":"getblockcount","id":1}', auth=None),
             b'HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm="jsonrpc"\r\n'
             b"Date: %s\r\nContent-Length: 0\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\n"),
            (post(b'{"method":"getblockcount","id":1}', extra=b"Connection: close\r\n"),
             b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nDate: %s\r\n"
             b"Content-Length: 35\r\nConnection: close\r\n\r\n"),
        ]
        for _ in range(2):  # the second time from the templates made the first time
            for request, head in exchanges:
                protocol, transport = server.connect()
                protocol.dataReceived(request)
                answer = transport.value().split(b"\r\n\r\n")[0] + b"\r\n\r\n"
                self.assertEqual(re.sub(rb"Date: [^\r]*", b"Date: %s", answer), head)

    def test_http_1_0_has_no_date(self) -> None:
        raw = Server().exchange(post(b'{"method":"getblockcount","id":1}').replace(
            b"HTTP/1.1", b"HTTP/1.0"))
        self.assertTrue(raw.startswith(b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n"
                                       b"\r\n{"), raw)

    def test_date_follows_the_clock(self) -> None:
        for when in (1_700_000_000.2, 1_700_000_000.7, 1_700_000_001.0, 1_600_000_000.0):
            self.assertEqual(channel_module.http_date(when), datetimeToString(int(when)))
