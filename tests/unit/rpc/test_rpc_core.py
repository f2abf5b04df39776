"""The JSON-RPC core and the web resource, against the reference node's recordings.

Replays recorded requests through a real ``RPCSite`` over ``StringTransport`` and
compares status line, headers (except the Date value) and body byte for byte; then
tests the core directly: envelope, batches, limits, warm-up, wallets, cancellation.
"""

from __future__ import annotations

import threading
from decimal import Decimal
from typing import Any

import simplejson
from hypothesis import given
from hypothesis import strategies as st
from twisted.internet.address import IPv6Address
from twisted.internet.defer import Deferred, inlineCallbacks, succeed
from twisted.internet.error import ConnectionDone
from twisted.internet.task import Clock
from twisted.python.failure import Failure
from twisted.trial.unittest import SynchronousTestCase, TestCase
from twisted.web import resource

from coin.rpc import jsonrpc as jsonrpc_module
from coin.rpc.auth import AllowList, Whitelist
from coin.rpc.errors import RPCError
from coin.rpc.jsonrpc import (
    ANSWER_CACHE_PARAMS, ANSWER_CACHE_TEXT, JSONRPCCore, Reply, RPCLimits, Warmup, call_key,
    encode_json, parse_json,
)
from coin.rpc.registry import ANY, Arg, MethodTable, rpc_method
from coin.views.amounts import amount_to_json
from coin.rpc.resource import RPCRoot, RPCSite

from tests.rpchelpers import (
    REFERENCE_METHODS, FakeNode, Server, post, reference_wallets, reply_body, split_response,
    transcript,
)


def _comparable(status_line, headers, body):
    # The recorder replaced the brand name in bodies but not in Content-Length, so the
    # expected length is the body's own; the Date value differs per run.
    fixed = []
    for name, value in headers:
        if name == b"Date":
            value = b"<date>"
        elif name == b"Content-Length" and body:
            value = b"%d" % len(body)
        fixed.append((name, value))
    return status_line, fixed, body


class TranscriptTests(SynchronousTestCase):
    """Recorded exchanges, replayed through RPCSite, must come back byte for byte."""

    def replay(self, name, server=None, delay=0.0):
        server = server or Server()
        recorded = transcript(name)
        protocol, transport = server.connect()
        protocol.dataReceived(recorded.request)
        if delay:
            self.assertEqual(transport.value(), b"", name)
            server.clock.advance(delay)
        self.assertEqual(_comparable(*split_response(transport.value())),
                         _comparable(recorded.status_line, recorded.headers, recorded.body),
                         name)

    def test_envelope(self):
        for name in ("rpc_01_single_v1_id_number", "rpc_02_single_v1_id_string",
                     "rpc_03_single_no_id", "rpc_04_single_v2_id_number",
                     "rpc_05_single_no_jsonrpc_field_no_params", "rpc_06_id_null",
                     "rpc_07_id_object", "rpc_08_id_float", "rpc_30_extra_unknown_top_level_field",
                     "rpc_31_with_content_type_header"):
            self.replay(name)

    def test_params(self):
        for name in ("rpc_09_named_params_getblockhash", "rpc_10_named_params_unknown_name",
                     "rpc_11_named_params_empty_object", "rpc_12_positional_params_getblockhash",
                     "rpc_23_params_not_array_or_object", "rpc_24_getblockhash_wrong_type_string",
                     "rpc_25_getblockhash_minus_1", "rpc_26_getblockhash_too_large",
                     "rpc_27_getblockhash_too_many_params", "rpc_28_getblockhash_no_params",
                     "rpc_29_getblockhash_float"):
            self.replay(name)

    def test_batches(self):
        for name in ("rpc_13_batch_3_one_failing", "rpc_14_batch_empty",
                     "rpc_15_batch_with_non_object_and_unknown_method"):
            self.replay(name)

    def test_errors(self):
        for name in ("rpc_16_invalid_json", "rpc_17_body_json_string", "rpc_18_body_json_number",
                     "rpc_19_empty_body", "rpc_20_unknown_method", "rpc_21_missing_method",
                     "rpc_22_method_not_string", "rpcm_43_getinfo"):
            self.replay(name)

    def test_http_versions_and_connection_close(self):
        self.replay("rpc_32_http10_request")
        self.replay("rpc_33_connection_close")

    def test_methods_and_paths(self):
        for name in ("http_01_get_root_with_auth", "http_02_get_root_no_auth", "http_03_put_root",
                     "http_04_post_unknown_path", "http_05_post_unknown_path_no_auth",
                     "http_06_post_root_with_query"):
            self.replay(name)

    def test_head_is_405_without_a_body(self):
        # libevent sends the 405 text after the headers of a HEAD reply (and then stalls
        # for 2 s); HTTP forbids a body there, so only status and headers are matched.
        server = Server()
        recorded = transcript("http_07_head_root")
        status, headers, body = split_response(server.exchange(recorded.request))
        self.assertEqual(_comparable(status, headers, b""),
                         _comparable(recorded.status_line, recorded.headers, b""))
        self.assertEqual(body, b"")

    def test_authentication(self):
        self.replay("auth_01_missing_auth")
        for name in ("auth_02_wrong_password", "auth_03_wrong_user", "auth_04_non_basic_scheme",
                     "auth_05_garbage_base64", "rpcauth_02_alice_wrong_password"):
            self.replay(name, delay=0.25)
        for name in ("rpcauth_01_alice_correct_password", "rpcauth_03_rpcuser_still_works"):
            self.replay(name)

    def test_single_wallet(self):
        for name in ("wallet_01_post_wallet_slash_getwalletinfo",
                     "wallet_02_post_wallet_unknown_getwalletinfo",
                     "wallet_03_post_wallet_unknown_nonwallet_method",
                     "wallet_04_post_wallet_no_slash"):
            self.replay(name)

    def test_several_wallets(self):
        for name in ("mwallet_01_root_getwalletinfo_multiwallet",
                     "mwallet_02_wallet_w2_getwalletinfo",
                     "mwallet_03_wallet_empty_name_getwalletinfo",
                     "mwallet_04_wallet_unknown_getwalletinfo",
                     "mwallet_05_wallet_w2_getblockcount",
                     "mwallet_06_root_getbalance_multiwallet", "mwallet_07_wallet_urlencoded_name",
                     "mwallet_08_wallet_w2_subpath", "mwallet_09_listwallets",
                     "mwallet_10_batch_on_wallet_path", "rpcauth_04_alice_wallet_path"):
            self.replay(name, Server(node=FakeNode(wallets=reference_wallets("", "w2"))))

    def test_warmup(self):
        self.replay("warmup_01_rpc_during_startup", Server(warmup="Verifying wallet(s)..."))

    def test_help_and_control(self):
        for name in ("rpcm_28_help_getblockhash", "rpcm_29_help_nosuchcmd", "rpcm_50_uptime"):
            self.replay(name)

    def test_getmemoryinfo_shape(self):
        recorded = reply_body(b"\r\n\r\n" + transcript("rpcm_51_getmemoryinfo").body)
        answer = reply_body(Server().exchange(transcript("rpcm_51_getmemoryinfo").request))
        self.assertEqual(list(answer["result"]["locked"]), list(recorded["result"]["locked"]))
        self.assertTrue(all(isinstance(v, int) for v in answer["result"]["locked"].values()))


def _core(methods=(), *, node=None, whitelist=None, warmup=None, clock=None, **limits):
    return JSONRPCCore(MethodTable(list(methods) + REFERENCE_METHODS),
                       node if node is not None else FakeNode(wallets=reference_wallets("")),
                       whitelist=whitelist or Whitelist(), warmup=Warmup(warmup),
                       clock=clock or Clock(), limits=RPCLimits(**limits))


class CoreTests(SynchronousTestCase):
    """JSONRPCCore on its own: bytes in, (status, body) out."""

    def answer(self, core, body, user="u", wallet=None):
        if not isinstance(body, bytes):
            body = simplejson.dumps(body).encode()
        return self.successResultOf(core.handle(body, user, wallet))

    def test_every_kind_of_handler_answer_in_a_batch(self):
        """Answered at once (no Deferred made), later, as a coroutine, raised, returned as
        a Failure: each is rendered as before, in order."""
        later: Deferred = Deferred()

        @rpc_method("kinds", category="hidden", args=[Arg("kind", ANY)])
        def kinds(ctx, kind):
            if kind == "now":
                return 1
            if kind == "later":
                return later
            if kind == "raised":
                raise RPCError(-8, "raised")
            if kind == "failure":
                return Failure(RPCError(-8, "returned"))

            async def coroutine():
                return 3
            return coroutine()

        core = _core([kinds])
        calls = [{"id": n, "method": "kinds", "params": [kind]}
                 for n, kind in enumerate(["now", "later", "coroutine", "raised", "failure"])]
        batch = core.handle(simplejson.dumps(calls).encode(), "u", None)
        self.assertNoResult(batch)
        later.callback(2)
        self.assertEqual(reply_body(b"\r\n\r\n" + self.successResultOf(batch).body), [
            {"result": 1, "error": None, "id": 0}, {"result": 2, "error": None, "id": 1},
            {"result": 3, "error": None, "id": 2},
            {"result": None, "error": {"code": -8, "message": "raised"}, "id": 3},
            {"result": None, "error": {"code": -8, "message": "returned"}, "id": 4}])
        self.assertEqual(self.answer(core, calls[0]), Reply(200, b'{"result":1,"error":null,"id":0}\n'))
        self.assertEqual(self.answer(core, calls[4]).status, 500)

    def test_each_call_gets_its_own_user_and_wallet(self):
        """Contexts are reused while user and wallet stay the same, never across them."""

        @rpc_method("whoami", category="hidden")
        def whoami(ctx):
            return [ctx.user, ctx.wallet_name, ctx.wallet]

        @rpc_method("mywallet", category="hidden", needs_wallet=True)
        def mywallet(ctx):
            return [ctx.user, ctx.wallet_name, ctx.wallet["walletname"]]

        core = _core([whoami, mywallet], node=FakeNode(wallets=reference_wallets("", "w2")))
        batch = [{"id": 0, "method": "whoami"}, {"id": 1, "method": "mywallet"},
                 {"id": 2, "method": "whoami"}]
        for user, wallet_name in [("a", None), ("b", None), ("b", "w2"), ("b", ""), ("a", "w2")]:
            results = [reply_body(b"\r\n\r\n" + self.answer(core, call, user, wallet_name).body)
                       ["result"] for call in batch]
            results.append(reply_body(b"\r\n\r\n" + self.answer(core, batch, user, wallet_name)
                                      .body))
            # No wallet named, two loaded: -19, no result.
            self.assertEqual(results[1], None if wallet_name is None
                             else [user, wallet_name, wallet_name])
            self.assertEqual(results[0], [user, wallet_name, None])
            self.assertEqual(results[2], [user, wallet_name, None])
            self.assertEqual([r["result"] for r in results[3]], results[:3])

    def test_reply_is_compact_ordered_and_newline_terminated(self):
        reply = self.answer(_core(), {"id": "x", "method": "getblockcount"})
        self.assertEqual(reply, Reply(200, b'{"result":111,"error":null,"id":"x"}\n'))

    def test_parse_errors(self):
        for body in (b"\xff", b"{", b"[1] x", b"NaN", b"[Infinity]", b"\xef\xbb\xbf{}", b"",
                     b'{"id": 1e400000000000}x'):
            self.assertEqual(self.answer(_core(), body), Reply(
                500, b'{"result":null,"error":{"code":-32700,"message":"Parse error"},'
                     b'"id":null}\n'), body)

    def test_half_surrogate_pairs_are_parse_errors(self):
        # UniValue refuses them; simplejson would hand methods strings no database can store.
        for body in (b'{"method":"getnewaddress","params":["\\udc80"]}',
                     b'{"method":"setlabel","params":["x","a\\ud800"]}', b'{"\\udfff":1}',
                     b'{"method":"x","params":{"label":["\\udc00\\ud800"]}}'):
            self.assertEqual(self.answer(_core(), body), Reply(
                500, b'{"result":null,"error":{"code":-32700,"message":"Parse error"},'
                     b'"id":null}\n'), body)
        self.assertEqual(parse_json(b'["\\ud83d\\ude00", "\\\\udc80", "\\u00e9"]'),
                         ["\U0001f600", "\\udc80", "\u00e9"])

    def test_nesting_limit(self):
        core = _core(max_depth=8)
        self.assertEqual(self.answer(core, b'{"id":[[[[[[[1]]]]]]],"method":"getblockcount"}'
                                     ).status, 200)
        self.assertEqual(reply_body(b"\r\n\r\n" + self.answer(
            core, b'{"id":[[[[[[[[1]]]]]]]],"method":"getblockcount"}').body)["error"],
            {"code": -32700, "message": "Parse error"})
        # far beyond the interpreter's recursion limit: still just a parse error
        deep = b"[" * 100_000 + b"]" * 100_000
        self.assertEqual(self.answer(_core(), deep).status, 500)

    def test_batch_limit(self):
        reply = self.answer(_core(max_batch=2), [{"method": "getblockcount"}] * 3)
        self.assertEqual(reply, Reply(400, b'{"result":null,"error":{"code":-32600,"message":'
                                           b'"Batch too large: at most 2 requests"},"id":null}\n'))
        self.assertEqual(self.answer(_core(max_batch=2), [{"method": "getblockcount"}] * 2).status,
                         200)

    def test_decimal_amounts_exact_both_ways(self):
        @rpc_method("amounts", category="test", args=[Arg("value", ANY)])
        def amounts(ctx, value):
            return {"in": value, "fixed": Decimal("50.00000000"), "sum": value + Decimal("0.2")}

        reply = self.answer(_core([amounts]), b'{"id":1,"method":"amounts","params":[0.1]}')
        self.assertEqual(reply.body, b'{"result":{"in":0.1,"fixed":50.00000000,"sum":0.3},'
                                     b'"error":null,"id":1}\n')

    def test_text_is_utf8_and_lone_surrogates_are_escaped(self):
        self.assertEqual(encode_json("é€"), '"é€"'.encode())
        self.assertEqual(encode_json(["\ud800"]), b'["\\ud800"]')

    def test_unexpected_exceptions_are_logged_not_leaked(self):
        @rpc_method("broken", category="test")
        def broken(ctx):
            raise ValueError("secret internals")

        @rpc_method("unserializable", category="test")
        def unserializable(ctx):
            return {"x": object()}

        core = _core([broken, unserializable])
        for method in ("broken", "unserializable"):
            reply = self.answer(core, {"id": 7, "method": method})
            self.assertEqual(reply, Reply(500, b'{"result":null,"error":{"code":-32603,'
                                               b'"message":"Internal error"},"id":7}\n'))
        self.assertEqual(len(self.flushLoggedErrors(ValueError)), 1)
        self.assertEqual(len(self.flushLoggedErrors(TypeError)), 1)

    def test_deferred_results(self):
        pending = Deferred()

        @rpc_method("later", category="test")
        def later(ctx):
            return pending

        answer = _core([later]).handle(b'[{"id":1,"method":"later"},{"id":2,"method":"getblockcount"}]',
                                       "u")
        self.assertNoResult(answer)
        pending.callback("done")
        self.assertEqual(self.successResultOf(answer).body,
                         b'[{"result":"done","error":null,"id":1},'
                         b'{"result":111,"error":null,"id":2}]\n')

    def test_async_handlers(self):
        pending = Deferred()

        @rpc_method("coroutine", category="test", args=[Arg("n", ANY)])
        async def coroutine(ctx, n):
            return n + await pending

        answer = _core([coroutine]).handle(b'{"id":1,"method":"coroutine","params":[1]}', "u")
        self.assertNoResult(answer)
        pending.callback(2)
        self.assertEqual(self.successResultOf(answer).body, b'{"result":3,"error":null,"id":1}\n')

    def test_cancel_stops_batch_and_cancels_call(self):
        cancelled = []
        ran = []

        @rpc_method("hang", category="test")
        def hang(ctx):
            ran.append("hang")
            return Deferred(lambda d: cancelled.append(d))

        @rpc_method("after", category="test")
        def after(ctx):
            ran.append("after")

        answer = _core([hang, after]).handle(
            b'[{"method":"hang"},{"method":"after"}]', "u")
        answer.cancel()
        self.failureResultOf(answer)
        self.assertEqual((ran, len(cancelled)), (["hang"], 1))
        self.assertEqual(self.flushLoggedErrors(), [])

    def test_long_batch_yields_to_the_reactor(self):
        clock = Clock()

        @rpc_method("slow", category="test")
        def slow(ctx):
            clock.advance(0.03)
            return 1

        answer = _core([slow], clock=clock).handle(
            b"[" + b",".join([b'{"method":"slow"}'] * 4) + b"]", "u")
        self.assertNoResult(answer)  # paused after 0.06 s of work
        clock.advance(0)
        self.assertEqual(self.successResultOf(answer).body.count(b'"result":1'), 4)

    def test_warmup(self):
        core = _core(warmup="Loading block index...")
        expected = b'{"result":null,"error":{"code":-28,"message":"Loading block index..."},"id":1}'
        for method in ("getblockcount", "nosuchmethod", "help"):
            self.assertEqual(self.answer(core, {"id": 1, "method": method}),
                             Reply(500, expected + b"\n"))
        self.assertEqual(self.answer(core, [{"id": 1, "method": "getblockcount"}]).body,
                         b"[" + expected + b"]\n")

    def test_warmup_finish(self):
        warmup = Warmup()
        core = JSONRPCCore(MethodTable(REFERENCE_METHODS), FakeNode(), whitelist=Whitelist(),
                           warmup=warmup, clock=Clock())
        self.assertIn(b"RPC server started", self.answer(core, {"method": "getblockcount"}).body)
        warmup.set("Verifying blocks...")
        self.assertIn(b"Verifying blocks...", self.answer(core, {"method": "getblockcount"}).body)
        warmup.finish()
        self.assertEqual(self.answer(core, {"method": "getblockcount"}).status, 200)

    def test_wallet_selection(self):
        def error_of(core, wallet=None):
            reply = self.answer(core, {"id": 1, "method": "getwalletinfo"}, wallet=wallet)
            return reply.status, reply_body(b"\r\n\r\n" + reply.body)["error"]

        none = _core(node=FakeNode())
        self.assertEqual(error_of(none), (404, {
            "code": -32601,
            "message": "Method not found (wallet method is disabled because no wallet is loaded)"}))
        two = _core(node=FakeNode(wallets=reference_wallets("", "w2")))
        self.assertEqual(error_of(two)[1]["code"], -19)
        self.assertEqual(error_of(two, "w3")[1]["code"], -18)
        self.assertEqual(error_of(two, "w2"), (200, None))
        self.assertEqual(self.answer(two, {"method": "getblockcount"}, wallet="w3").status, 200)

    def test_params_shapes(self):
        core = _core()
        for params in (None, []):
            self.assertEqual(self.answer(core, {"id": 1, "method": "getblockcount",
                                                "params": params}).status, 200)
        for params in ("x", 5, True):
            self.assertEqual(self.answer(core, {"id": 1, "method": "getblockcount",
                                                "params": params}).status, 400)

    def test_whitelisted_single_call(self):
        calls = []

        @rpc_method("record", category="test")
        def record(ctx):
            calls.append(ctx.user)

        whitelist = Whitelist(["alice:getblockcount"])
        core = _core([record], whitelist=whitelist)
        self.assertEqual(self.answer(core, {"method": "getblockcount"}, user="alice").status, 200)
        self.assertEqual(self.answer(core, {"method": "record"}, user="alice"),
                         Reply(403, b"", None))
        # no entry while entries exist: the default (empty) whitelist applies, even to junk
        self.assertEqual(self.answer(core, {"method": "getblockcount"}, user="bob"),
                         Reply(403, b"", None))
        self.assertEqual(self.answer(core, b'"x"', user="bob"), Reply(403, b"", None))
        self.assertEqual(self.answer(core, b"{", user="bob").status, 500)
        self.assertEqual(calls, [])

    def test_whitelisted_batch_is_refused_whole(self):
        calls = []

        @rpc_method("record", category="test")
        def record(ctx):
            calls.append(1)

        core = _core([record], whitelist=Whitelist(["alice:record,getblockcount"]))
        self.assertEqual(self.answer(core, [{"method": "record"}, {"method": "getbalance"}],
                                     user="alice"), Reply(403, b"", None))
        self.assertEqual(calls, [])
        self.assertEqual(self.answer(core, [{"method": "record"}, 5], user="alice"), Reply(
            400, b'{"result":null,"error":{"code":-32600,"message":"Invalid Request object"},'
                 b'"id":null}\n'))
        self.assertEqual(self.answer(core, [{"method": 5}], user="alice"), Reply(
            500, b'{"result":null,"error":{"code":-32700,"message":'
                 b'"JSON value is not a string as expected"},"id":null}\n'))
        self.assertEqual(self.answer(core, [{"method": "record"}], user="alice").status, 200)
        self.assertEqual(calls, [1])

    def test_parse_json_numbers(self):
        self.assertEqual(parse_json(b'[1, 1.5, -0.00000001, 1e3]'),
                         [1, Decimal("1.5"), Decimal("-0.00000001"), Decimal("1e3")])


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text()
    | st.decimals(allow_nan=False, allow_infinity=False),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20)


#: JSON texts that stress a parser: number spellings, escapes, odd whitespace, and the
#: same texts with one byte changed, inserted or cut.
_SCALARS = st.sampled_from([
    "0", "-0", "1", "-1", "1.50", "-0.0", "1e5", "1E+5", "1e-400", "1e99999", "2.5E-8",
    "1" * 30, "-" + "9" * 400, "9" * 4300, "9" * 5000, "1.0" + "0" * 50, "true", "false",
    "null", '""', '"a"', '"\\u00e9"', '"\\ud800"', '"\\udc80\\ud800"', '"\\ud83d\\ude00"',
    '"\\/"', '"\x7f"', '"é€"',
])
_TOKENS = _SCALARS | st.sampled_from([
    "01", "1.", ".5", "NaN", "Infinity", "-", "tru", '"\\x"', '"\x01"', "[", "]", "{", "}",
    ",", ":", " ", "\t", "\n", "\r", "\x0c", "\ufeff", "\x00",
])
_TEXTS = st.one_of(
    json_values.map(lambda v: simplejson.dumps(v, use_decimal=True)),
    json_values.map(lambda v: simplejson.dumps(v, use_decimal=True, indent="\t")),
    st.lists(_TOKENS, max_size=12).map("".join),
    st.lists(_SCALARS, max_size=6).map(lambda items: "[" + ",".join(items) + "]"),
    st.lists(st.tuples(st.sampled_from(['"a"', '"b"', '"\\u0061"']), _SCALARS), max_size=4).map(
        lambda pairs: "{" + ",".join("%s:%s" % pair for pair in pairs) + "}"),
)


def _mutated(draw: Any) -> bytes:
    body = draw(_TEXTS).encode("utf-8", "surrogatepass")
    if body and draw(st.booleans()):
        at = draw(st.integers(0, len(body) - 1))
        byte = bytes([draw(st.integers(0, 255))])
        body = draw(st.sampled_from([body[:at] + byte + body[at + 1:], body[:at] + byte + body[at:],
                                     body[:at]]))
    return body


def _shape(value: Any) -> Any:
    """A parsed value with every type and every number's text made visible."""
    if isinstance(value, dict):
        return ("dict", [(key, _shape(item)) for key, item in value.items()])
    if isinstance(value, list):
        return ("list", [_shape(item) for item in value])
    return (type(value).__name__, str(value))


def _parsed(body: bytes, **kwargs: Any) -> Any:
    try:
        return _shape(parse_json(body, **kwargs))
    except RPCError as exc:
        return (exc.code, exc.message)


class PropertyTests(SynchronousTestCase):

    @given(st.composite(_mutated)())
    def test_c_parser_reads_as_simplejson(self, body):
        """msgspec's parser, with simplejson behind it for what it refuses, gives what
        simplejson alone gives (its pure-Python scanner, the same as its C one): values,
        types, number texts, key order, and the same parse errors."""
        self.assertEqual(_parsed(body), _parsed(body, yielding=True))

    @given(json_values)
    def test_any_id_comes_back_unchanged(self, request_id):
        body = simplejson.dumps({"id": request_id, "method": "getblockcount"}, use_decimal=True)
        reply = self.successResultOf(_core().handle(body.encode(), "u"))
        self.assertEqual(simplejson.loads(reply.body, use_decimal=True)["id"], request_id)

    @given(st.binary(max_size=300) | json_values.map(
        lambda v: simplejson.dumps(v, use_decimal=True).encode()))
    def test_any_body_gets_a_json_rpc_answer(self, body):
        reply = self.successResultOf(_core().handle(body, "u"))
        self.assertIn(reply.status, (200, 400, 404, 500))
        parsed = simplejson.loads(reply.body)
        for response in parsed if isinstance(parsed, list) else [parsed]:
            self.assertEqual(list(response), ["result", "error", "id"])
        self.assertEqual(self.flushLoggedErrors(), [])

    @given(st.binary(max_size=200))
    def test_any_body_over_http_never_leaks_a_traceback(self, body):
        raw = Server().exchange(post(body))
        status, headers, answer = split_response(raw)
        self.assertIn(status.split(b" ")[1], (b"200", b"400", b"404", b"500"))
        self.assertNotIn(b"Traceback", answer)
        simplejson.loads(answer)
        self.assertEqual(self.flushLoggedErrors(), [])


_key_params = st.lists(st.one_of(
    st.integers() | st.integers(min_value=2 ** 250, max_value=2 ** 260), st.booleans(), st.none(),
    st.text(max_size=8) | st.text(min_size=250, max_size=260), st.floats(allow_nan=False),
    st.lists(st.integers(), max_size=2)), max_size=10)


class CallKeyTests(SynchronousTestCase):
    """The answer cache's key: equal keys must mean the same answer."""

    @given(_key_params, _key_params)
    def test_equal_keys_print_the_same_parameters(self, first, second):
        keys = [call_key({"method": "getblockhash", "params": p}) for p in (first, second)]
        if None not in keys:
            self.assertEqual(keys[0] == keys[1], encode_json(first) == encode_json(second))

    @given(_key_params)
    def test_only_small_scalars_are_keyed(self, params):
        keyable = len(params) <= ANSWER_CACHE_PARAMS and all(
            p is None or type(p) is bool
            or (type(p) is int and p.bit_length() <= ANSWER_CACHE_TEXT)
            or (type(p) is str and len(p) <= ANSWER_CACHE_TEXT) for p in params)
        key = call_key({"method": "getblockhash", "params": params})
        self.assertEqual(key is not None, keyable)

    def test_true_is_not_one(self):
        self.assertNotEqual(call_key({"method": "m", "params": [True]}),
                            call_key({"method": "m", "params": [1]}))


class ResourceTests(SynchronousTestCase):
    """HTTP behaviour around the core: limits, addresses, disconnects, the rest slot."""

    def test_no_server_header(self):
        raw = Server().exchange(post(b'{"method":"getblockcount"}'))
        self.assertNotIn(b"Server:", raw)
        self.assertNotIn(b"TwistedWeb", raw)

    def test_body_over_limit_by_content_length(self):
        server = Server(limits=RPCLimits(max_body=100))
        protocol, transport = server.connect()
        protocol.dataReceived(b"POST / HTTP/1.1\r\nAuthorization: Basic dTpw\r\n"
                              b"Expect: 100-continue\r\nContent-Length: 101\r\n\r\n")
        status, headers, body = split_response(transport.value())
        self.assertEqual(status, b"HTTP/1.1 413 Request Entity Too Large")
        self.assertIn((b"Connection", b"close"), headers)
        self.assertEqual(body, b"Request body too large: the limit is 100 bytes\n")
        self.assertNotIn(b"100 Continue", transport.value())
        self.assertTrue(transport.disconnecting)
        protocol.dataReceived(b"x" * 101)  # the rest of the body is dropped unread
        self.assertEqual(transport.value().count(b"HTTP/1.1"), 1)

    def test_body_at_limit_is_served(self):
        body = b'{"method":"getblockcount"}'
        server = Server(limits=RPCLimits(max_body=len(body)))
        self.assertIn(b" 200 OK", server.exchange(post(body)))

    def test_chunked_body_over_limit(self):
        server = Server(limits=RPCLimits(max_body=10))
        raw = server.exchange(b"POST / HTTP/1.1\r\nAuthorization: Basic dTpw\r\n"
                              b"Transfer-Encoding: chunked\r\n\r\n8\r\n12345678\r\n"
                              b"8\r\n12345678\r\n0\r\n\r\n")
        self.assertTrue(raw.startswith(b"HTTP/1.1 413 "))
        self.assertEqual(raw.count(b"HTTP/1.1"), 1)

    def test_client_outside_allowed_addresses(self):
        for path in (b"/", b"/foo", b"/rest/chaininfo.json"):
            raw = Server().exchange(post(b"{}", path), "10.1.2.3")
            self.assertEqual(_comparable(*split_response(raw)), _comparable(
                b"HTTP/1.1 403 Forbidden", [(b"Date", b""), (b"Content-Length", b"0"),
                                            (b"Content-Type", b"text/html; charset=ISO-8859-1")],
                b""))
        allowed = Server(allow=AllowList(["10.0.0.0/8"]))
        self.assertIn(b" 200 OK", allowed.exchange(post(b'{"method":"getblockcount"}'),
                                                   "10.1.2.3"))

    def test_ipv4_mapped_loopback_is_allowed(self):
        address = IPv6Address("TCP", "::ffff:127.0.0.1", 40000)
        self.assertIn(b" 200 OK", Server().exchange(post(b'{"method":"getblockcount"}'), address))

    def test_unknown_http_method(self):
        raw = Server().exchange(b"DELETE / HTTP/1.1\r\nHost: x\r\n\r\n")
        status, headers, body = split_response(raw)
        self.assertEqual((status, body), (b"HTTP/1.1 405 Method Not Allowed", b""))

    def test_client_disconnect_cancels_the_call(self):
        cancelled = []

        @rpc_method("hang", category="test")
        def hang(ctx):
            return Deferred(lambda d: cancelled.append(d))

        server = Server(methods=REFERENCE_METHODS + [hang])
        protocol, transport = server.connect()
        protocol.dataReceived(post(b'{"method":"hang"}'))
        protocol.connectionLost(Failure(ConnectionDone()))
        self.assertEqual((len(cancelled), transport.value()), (1, b""))
        self.assertEqual(self.flushLoggedErrors(), [])

    def test_disconnect_during_the_401_delay(self):
        server = Server()
        protocol, transport = server.connect()
        protocol.dataReceived(post(b"{}", auth=b"dTp4"))
        protocol.connectionLost(Failure(ConnectionDone()))
        server.clock.advance(1)
        self.assertEqual(transport.value(), b"")
        # The answer's timer is gone; only the (rate-limited) failure log's window is left.
        self.assertEqual([call.func.__name__ for call in server.clock.getDelayedCalls()],
                         ["_close_log_window"])

    def test_rest_child_slot(self):
        class Rest(resource.Resource):
            isLeaf = True

            def render_GET(self, request):
                request.setHeader(b"Content-Type", b"application/json")
                return b'{"rest":true}\n'

        server = Server()
        server.root.putChild(b"rest", Rest())
        status, headers, body = split_response(server.exchange(
            b"GET /rest/chaininfo.json HTTP/1.1\r\nHost: x\r\n\r\n"))
        self.assertEqual((status, body), (b"HTTP/1.1 200 OK", b'{"rest":true}\n'))
        self.assertEqual([name for name, _ in headers], [b"Content-Type", b"Date", b"Content-Length"])

    def test_a_failing_core_answers_internal_error(self):
        class BrokenCore:
            def handle(self, body, user, wallet_name):
                return succeed(None).addCallback(lambda _: 1 / 0)

        server = Server()
        server.site = RPCSite(RPCRoot(BrokenCore(), server.authenticator, server.clock),
                              allow=AllowList(), reactor=server.clock)
        status, _, body = split_response(server.exchange(post(b"{}")))
        self.assertEqual((status, body), (b"HTTP/1.1 500 Internal Server Error",
                                          b'{"result":null,"error":{"code":-32603,"message":'
                                          b'"Internal error"},"id":null}\n'))
        self.assertEqual(len(self.flushLoggedErrors(ZeroDivisionError)), 1)

    def test_a_started_site_runs_no_timer(self):
        """twisted.web's access-log date timer (a reactor call every second, a stall in the
        latency tail) is not started: requests are logged through twisted.logger."""
        server = Server()
        server.site.doStart()
        self.addCleanup(server.site.doStop)
        self.assertEqual(server.clock.getDelayedCalls(), [])

    def test_rpc_error_class(self):
        error = RPCError(-8, "Block height out of range")
        self.assertEqual((error.code, error.message, str(error)),
                         (-8, "Block height out of range", "Block height out of range (code -8)"))


class LargeResultTests(TestCase):
    """Big results are encoded in the thread pool; the bytes are the same."""

    @inlineCallbacks
    def test_large_result_encoded_off_the_reactor(self):
        seen = []

        def record_thread(value):
            seen.append(threading.current_thread() is threading.main_thread())
            return value

        @rpc_method("many", category="test")
        def many(ctx):
            return [amount_to_json(1)] * 1500

        core = _core([many])
        original = jsonrpc_module.encode_json
        self.patch(jsonrpc_module, "encode_json", lambda value: original(record_thread(value)))
        reply = yield core.handle(b'{"id":1,"method":"many"}', "u")
        self.assertEqual(reply.body, b'{"result":[' + b",".join([b"0.00000001"] * 1500)
                         + b'],"error":null,"id":1}\n')
        self.assertTrue(seen and not any(seen), seen)  # never on the reactor (main) thread
