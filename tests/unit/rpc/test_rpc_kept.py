"""Kept answers (the core's answer cache, the channel's kept responses) answer exactly what
the general path answers, and only while what they depend on holds.

- The core keeps the answer of a call of a ``chain_only`` method by method and parameters
  (each with its type), whatever its id, in a single call or a batch, and by request body,
  and gives it again only while the chain snapshot it was computed from is the published
  one, the request's own id spliced in byte for byte as the general path prints it (ids of
  every JSON type); other parameters, wallet paths, other methods are not shared;
  the whitelist and warm-up are checked on every answer; metrics count every answer.
- The channel writes a kept response again to the same request bytes on a connection that
  proved the same, still valid, credentials: not after the chain moved, the credentials
  changed, for another user's bytes, for ``Connection: close`` or HTTP/1.0, nor while
  requests are logged (-debug=http); Date is the current second's; pipelined repeats are
  answered in order.
- A front end gives a kept answer only once its freshness look says the chain is the
  writer's last commit.
"""

from __future__ import annotations

import base64
import json
import os
import re
import tempfile
from typing import Any, Callable

from hypothesis import given, settings
from hypothesis import strategies as st
from twisted.internet.defer import Deferred
from twisted.trial.unittest import SynchronousTestCase

from coin.frontend.rpc import FrontendCore
from coin.http import channel
from coin.logs import DebugCategories
from coin.rpc.auth import Authenticator, Whitelist
from coin.rpc.registry import INT, Arg, rpc_method
from coin.rpc.errors import RPC_INVALID_PARAMETER, RPCError
from coin.rpc.jsonrpc import (
    ANSWER_CACHE_ENTRIES, ANSWER_CACHE_PARAMS, ANSWER_CACHE_TEXT, JSONRPCCore,
)

from tests.rpchelpers import FakeNode, Server, post, reference_wallets, reply_body, split_response


class Chain:
    """A chain whose published snapshot is replaced on every change, as the node's."""

    def __init__(self) -> None:
        self.hashes = ["%064x" % height for height in range(5)]
        self.published = object()

    def snapshot(self) -> object:
        return self.published

    def move(self, hashes: list[str]) -> None:
        """A new tip, invalidateblock or a reorg: new hashes and a new snapshot."""
        self.hashes = hashes
        self.published = object()


class Methods:
    """Chain-only methods reading ``chain``, counting the calls that reach a handler; with
    ``chain_only=False`` the same methods without the flag (always the general path)."""

    def __init__(self, chain: Chain, chain_only: bool = True) -> None:
        self.calls = self.other_calls = 0

        @rpc_method("getbestblockhash", category="blockchain", chain_only=chain_only)
        def getbestblockhash(ctx: Any) -> str:
            self.calls += 1
            return chain.hashes[-1]

        @rpc_method("getblockhash", category="blockchain", chain_only=chain_only,
                    args=[Arg("height", INT)])
        def getblockhash(ctx: Any, height: int) -> str:
            self.calls += 1
            if not 0 <= height < len(chain.hashes):
                raise RPCError(RPC_INVALID_PARAMETER, "Block height out of range")
            return chain.hashes[height]

        @rpc_method("getmininginfo", category="mining")
        def getmininginfo(ctx: Any) -> int:
            self.other_calls += 1
            return self.other_calls

        self.table = [getbestblockhash, getblockhash, getmininginfo]


def call(method: str, params: list[Any], request_id: Any = 1) -> bytes:
    return json.dumps({"method": method, "params": params, "id": request_id}).encode()


class KeptTestCase(SynchronousTestCase):
    def setUp(self) -> None:
        self.chain = Chain()
        self.methods = Methods(self.chain)
        self.observed: list[tuple[str, int]] = []
        self.server = self.make_server()

    def make_server(self, methods: Methods | None = None, **kwargs: Any) -> Server:
        node = FakeNode(wallets=reference_wallets(""))
        node.chain = self.chain
        kwargs.setdefault("categories", DebugCategories())
        server = Server(node=node, methods=(methods or self.methods).table, **kwargs)
        server.core._observe = lambda method, status, seconds: self.observed.append(
            (method, status))
        return server

    def result(self, reply: Any) -> Any:
        if isinstance(reply, Deferred):
            reply = self.successResultOf(reply)
        return json.loads(reply.body)

    def assert_same_as_general_path(self, steps: list[tuple[Any, ...]],
                                    requests: Callable[[tuple[Any, ...]], list[bytes]]) -> None:
        """Run ``steps``, chain moves (``("move", hashes)``) and request steps (``(kind,
        connection 0 or 1, ...)``, sent as ``requests(step)``), on a node with kept answers
        and on one without: each read is answered with the same bytes (but the Date)."""
        self.chain = Chain()
        kept = self.make_server(Methods(self.chain))
        general = self.make_server(Methods(self.chain, chain_only=False))
        connections = [(kept.connect(), general.connect()) for _ in range(2)]
        for step in steps:
            if step[0] == "move":
                self.chain.move(step[1])
                continue
            for raw in requests(step):
                answers = []
                for protocol, transport in connections[step[1]]:
                    transport.clear()
                    protocol.dataReceived(raw)
                    answers.append(_DATE.sub(b"Date: -", transport.value()))  # (a second may turn)
                self.assertEqual(answers[0], answers[1], raw)


class CoreTests(KeptTestCase):
    def test_answer_follows_the_snapshot(self) -> None:
        core = self.server.core
        body = call("getbestblockhash", [])
        for _ in range(3):
            self.assertEqual(self.result(core.respond(body, "u"))["result"], "%064x" % 4)
        # Kept from the second request on: the third answer was the kept one.
        self.assertEqual(self.methods.calls, 2)
        self.chain.move(self.chain.hashes[:3])  # invalidateblock
        self.assertEqual(self.result(core.respond(body, "u"))["result"], "%064x" % 2)
        self.chain.move(self.chain.hashes + ["ab" * 32, "cd" * 32])  # a reorg, longer
        self.assertEqual(self.result(core.respond(body, "u"))["result"], "cd" * 32)
        self.assertEqual(self.methods.calls, 4)

    def test_requests_asked_once_are_not_kept(self) -> None:
        core = self.server.core
        for request_id in range(5):
            core.respond(call("getbestblockhash", [], request_id), "u")
            self.assertFalse(core.keeps(call("getbestblockhash", [], request_id)))
        core.respond(call("getbestblockhash", [], 4), "u")
        self.assertTrue(core.keeps(call("getbestblockhash", [], 4)))

    def test_errors_follow_the_snapshot_too(self) -> None:
        core = self.server.core
        body = call("getblockhash", [6])
        self.assertEqual(self.result(core.respond(body, "u"))["error"]["message"],
                         "Block height out of range")
        self.chain.move(self.chain.hashes + ["%064x" % h for h in (5, 6)])
        self.assertEqual(self.result(core.respond(body, "u"))["result"], "%064x" % 6)

    def test_ids_and_params_are_not_shared(self) -> None:
        core = self.server.core
        answers = [self.result(core.respond(call("getblockhash", [height], request_id), "u"))
                   for height, request_id in [(1, 1), (2, 1), (1, "x"), (1, 1.5), (1, None)]]
        self.assertEqual([(a["result"], a["id"]) for a in answers],
                         [("%064x" % 1, 1), ("%064x" % 2, 1), ("%064x" % 1, "x"),
                          ("%064x" % 1, 1.5), ("%064x" % 1, None)])
        self.assertFalse(core.keeps(call("getblockhash", [3])))

    def test_big_parameters_are_not_kept(self) -> None:
        """A client cannot make the cache hold big values: a call with a long string, a big
        integer or many parameters is answered the usual way every time, nothing noted."""
        core = self.server.core
        for params in (["1" * (ANSWER_CACHE_TEXT + 1)], [1 << ANSWER_CACHE_TEXT],
                       [1] * (ANSWER_CACHE_PARAMS + 1)):
            answers = [self.result(core.respond(call("getblockhash", params, request_id), "u"))
                       for request_id in range(3)]
            self.assertEqual(len({json.dumps(a["error"]) for a in answers}), 1)
            self.assertEqual([a["id"] for a in answers], [0, 1, 2])
            noted = list(core._answers.entries) + list(core._answers._asked_calls)
            self.assertFalse([key for key in noted if type(key) is tuple and key[2] == tuple(params)])

    def test_requests_with_new_ids_do_not_push_out_a_calls_mark(self) -> None:
        """A call asked once stays noted however many one-off bodies (new ids) come after
        it: asked again, its answer is kept."""
        core = self.server.core
        core.respond(call("getblockhash", [2], "first"), "u")
        for request_id in range(ANSWER_CACHE_ENTRIES + 1):
            core.respond(call("getbestblockhash", [], request_id), "u")
        calls = self.methods.calls
        for request_id in range(3):
            core.respond(call("getblockhash", [2], request_id), "u")
        self.assertEqual(self.methods.calls, calls + 1)

    def test_only_single_chain_only_calls_on_root_are_kept(self) -> None:
        core = self.server.core
        batch = b"[" + call("getbestblockhash", []) + b"]"
        other = call("getmininginfo", [])
        wallet = call("getbestblockhash", [], "w")
        for body, wallet_name in [(batch, None), (other, None), (wallet, "")]:
            core.respond(body, "u", wallet_name)
            self.assertFalse(core.keeps(body), body)
        self.assertEqual([self.result(core.respond(other, "u"))["result"] for _ in range(2)],
                         [2, 3])

    def test_batch_calls_follow_the_snapshot(self) -> None:
        core = self.server.core
        batch = b"[" + b",".join([call("getblockhash", [2]), call("getblockhash", [2], "2"),
                                  call("getblockhash", [True]), call("getbestblockhash", [])]) + b"]"
        first = self.result(core.respond(batch, "u"))
        self.assertEqual([(a["result"], a["id"]) for a in first],
                         [("%064x" % 2, 1), ("%064x" % 2, "2"), (None, 1), ("%064x" % 4, 1)])
        for _ in range(2):
            self.assertEqual(self.result(core.respond(batch, "u")), first)
        # A call's answer is kept without its id, from the key's second request on: the
        # second getblockhash(2) already took it (the bool is refused before the handler).
        self.assertEqual(self.methods.calls, 4)
        self.chain.move(["ab" * 32] * 3)  # a reorg to a shorter chain
        again = self.result(core.respond(batch, "u"))
        self.assertEqual([(a["result"], a["id"]) for a in again],
                         [("ab" * 32, 1), ("ab" * 32, "2"), (None, 1), ("ab" * 32, 1)])
        self.assertEqual(self.methods.calls, 6)
        self.assertEqual(self.observed, [("getblockhash", 200), ("getblockhash", 200),
                                         ("getblockhash", 500), ("getbestblockhash", 200)] * 4)

    def test_whitelist_and_warmup_checked_on_every_answer(self) -> None:
        server = self.make_server(whitelist=Whitelist(["alice:getmininginfo", "u:getbestblockhash"]))
        body = call("getbestblockhash", [])
        self.assertEqual(server.core.respond(body, "u").status, 200)
        self.assertEqual(server.core.respond(body, "alice").status, 403)
        server.warmup.set("Loading block index...")
        self.assertEqual(self.result(server.core.respond(body, "u"))["error"]["code"], -28)
        server.warmup.finish()
        self.assertEqual(server.core.respond(body, "u").status, 200)

    def test_every_answer_is_counted(self) -> None:
        body = call("getbestblockhash", [])
        for _ in range(3):
            self.server.core.respond(body, "u")
        self.assertEqual(self.observed, [("getbestblockhash", 200)] * 3)


class FreshIdTests(KeptTestCase):
    """Real clients send a new id with every request: they share one kept answer."""

    def test_fresh_ids_share_the_answer_and_follow_the_snapshot(self) -> None:
        core = self.server.core
        answers = [self.result(core.respond(call("getblockhash", [3], n), "u"))
                   for n in range(5)]
        self.assertEqual([(a["result"], a["id"]) for a in answers],
                         [("%064x" % 3, n) for n in range(5)])
        self.assertEqual(self.methods.calls, 2)  # kept from the key's second request on
        self.assertEqual(self.result(core.respond(call("getblockhash", [2], 5), "u"))["result"],
                         "%064x" % 2)  # other parameters: not shared
        self.chain.move(["ab" * 32] * 4)  # a reorg to another branch
        self.assertEqual(self.result(core.respond(call("getblockhash", [3], 6), "u")),
                         {"result": "ab" * 32, "error": None, "id": 6})
        self.chain.move(self.chain.hashes[:3])  # invalidateblock
        self.assertEqual(self.result(core.respond(call("getblockhash", [3], 7), "u"))["error"],
                         {"code": -8, "message": "Block height out of range"})
        self.assertEqual(self.observed, [("getblockhash", 200)] * 7 + [("getblockhash", 500)])

    def test_single_calls_and_batch_calls_share_answers(self) -> None:
        core = self.server.core
        for n in range(2):
            core.respond(call("getbestblockhash", [], n), "u")
        batch = b"[" + call("getbestblockhash", [], "a") + b"," + call("getbestblockhash", [], None) + b"]"
        self.assertEqual([(a["result"], a["id"]) for a in self.result(core.respond(batch, "u"))],
                         [("%064x" % 4, "a"), ("%064x" % 4, None)])
        self.assertEqual(self.methods.calls, 2)

    def test_whitelist_and_warmup_checked_for_every_id(self) -> None:
        server = self.make_server(whitelist=Whitelist(["alice:getmininginfo", "u:getbestblockhash"]))
        for n in range(3):
            self.assertEqual(server.core.respond(call("getbestblockhash", [], n), "u").status, 200)
        self.assertEqual(server.core.respond(call("getbestblockhash", [], 9), "alice").status, 403)
        server.warmup.set("Loading block index...")
        self.assertEqual(self.result(server.core.respond(call("getbestblockhash", [], 10), "u")),
                         {"result": None, "error": {"code": -28, "message": "Loading block index..."},
                          "id": 10})

    def test_a_wallet_path_is_not_answered_from_the_cache(self) -> None:
        core = self.server.core
        for n in range(3):
            core.respond(call("getbestblockhash", [], n), "u")
        calls = self.methods.calls
        core.respond(call("getbestblockhash", [], 3), "u", "")
        self.assertEqual(self.methods.calls, calls + 1)


#: Ids as a client may write them: every JSON type, numbers with fractions, exponents and
#: many digits (past int()'s 4,300 too), text with escapes and any Unicode.
_NUMBER_TEXT = st.one_of(
    st.integers().map(str),
    st.integers(-(10 ** 40), 10 ** 40).map(str),
    st.just("9" * 4400),
    st.from_regex(r"-?(0|[1-9][0-9]{0,25})(\.[0-9]{1,25})?([eE][+-]?[0-9]{1,3})?", fullmatch=True))
_STRING_TEXT = st.builds(lambda text, ascii_only: json.dumps(text, ensure_ascii=ascii_only),
                         st.text(st.characters(blacklist_categories=("Cs",))), st.booleans())
_ID_TEXT = st.recursive(
    st.one_of(_NUMBER_TEXT, _STRING_TEXT, st.sampled_from(["null", "true", "false"])),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3).map(lambda items: "[" + ", ".join(items) + "]"),
        st.lists(st.tuples(_STRING_TEXT, inner), max_size=3).map(
            lambda members: "{" + ",".join("%s:%s" % member for member in members) + "}")),
    max_leaves=6)
_KEYED_CALLS = st.sampled_from([
    '"method":"getbestblockhash","params":[]', '"method":"getbestblockhash"',
    '"params":null,"method":"getbestblockhash"', '"method":"getblockhash","params":[1]',
    '"method":"getblockhash","params":[6]', '"method":"getblockhash","params":["1"]',
    '"method":"getblockhash","params":[true]', '"method":"getblockhash","params":[1,2]',
    '"method":"getmininginfo","params":[]'])


class FreshIdsSameAsGeneralPathTests(KeptTestCase):
    """Any call with any id, alone or in a batch, after the same call with other ids: the
    bytes (and status) the general path gives."""

    @settings(max_examples=200, deadline=None)
    @given(call_text=_KEYED_CALLS, ids=st.lists(_ID_TEXT, min_size=3, max_size=5))
    def test_spliced_ids_are_the_general_paths(self, call_text: str, ids: list[str]) -> None:
        self.chain = Chain()
        kept = self.make_server(Methods(self.chain)).core
        general = self.make_server(Methods(self.chain, chain_only=False)).core
        bodies = [("{%s,\"id\":%s}" % (call_text, request_id)).encode() for request_id in ids]
        bodies.append(b"[" + b",".join(bodies) + b"]")
        for body in bodies * 2:
            answers = [core.respond(body, "u") for core in (kept, general)]
            self.assertEqual(answers[0], answers[1], body)


class ChannelTests(KeptTestCase):
    def connect(self) -> tuple[Any, Any]:
        return self.server.connect()

    def exchange(self, connection: tuple[Any, Any], raw: bytes) -> bytes:
        protocol, transport = connection
        transport.clear()
        protocol.dataReceived(raw)
        return transport.value()

    def test_repeats_are_answered_as_the_first(self) -> None:
        connection = self.connect()
        request = post(call("getblockhash", [2]))
        first = self.exchange(connection, request)
        answers = [self.exchange(connection, request) for _ in range(3)]
        self.assertEqual(answers, [first] * 3)
        self.assertEqual(self.methods.calls, 2)  # the third and fourth were kept answers
        self.assertEqual(len(self.server.site.kept_answers), 1)
        self.assertEqual(self.observed, [("getblockhash", 200)] * 4)

    def test_fresh_ids_answered_by_the_channel_each_with_its_id(self) -> None:
        connection = self.connect()
        answers = [reply_body(self.exchange(connection, post(call("getblockhash", [2], n))))
                   for n in (1, 2, 3, "x", 12345)]
        self.assertEqual([(a["result"], a["id"]) for a in answers],
                         [("%064x" % 2, n) for n in (1, 2, 3, "x", 12345)])
        self.assertEqual(self.methods.calls, 2)  # from the third on: the channel's template
        self.assertEqual(len(self.server.site.kept_answers), 1)
        self.assertEqual(self.observed, [("getblockhash", 200)] * 5)
        other = reply_body(self.exchange(connection, post(call("getblockhash", [3], 6))))
        self.assertEqual((other["result"], other["id"]), ("%064x" % 3, 6))
        self.chain.move(["ab" * 32] * 3)  # a reorg
        moved = reply_body(self.exchange(connection, post(call("getblockhash", [2], 7))))
        self.assertEqual((moved["result"], moved["id"]), ("ab" * 32, 7))

    def test_a_new_connection_gets_a_kept_answer_at_its_first_request(self) -> None:
        """A client opening a connection per call (coin-cli) is answered from the kept
        answers too once its credentials were proved, unless its address is held by the
        throttle or not allowed."""
        parsed: list[bytes] = []
        respond = JSONRPCCore.respond
        self.patch(JSONRPCCore, "respond", lambda core, body, *rest: parsed.append(body) or respond(
            core, body, *rest))
        self.server = self.make_server()
        request = post(call("getblockhash", [2]))
        first = self.exchange(self.connect(), request)
        self.exchange(self.connect(), request)
        self.assertEqual(len(parsed), 2)
        self.assertEqual(self.exchange(self.connect(), request), first)
        self.assertEqual(len(parsed), 2)  # the channel's kept answer
        for n in range(60):  # wrong guesses from the same address: its requests wait
            self.server.connect()[0].dataReceived(post(call("getblockcount", []),
                                                       auth=base64.b64encode(b"u:x%d" % n)))
        held = self.connect()
        self.assertEqual(self.exchange(held, request), b"")
        self.assertEqual(len(parsed), 2)
        for _ in range(1600):  # its turn comes after the guesses' (one per 250 ms)
            self.server.clock.advance(0.01)
        self.assertEqual(_DATE.sub(b"", held[1].value()), _DATE.sub(b"", first))

    def test_a_new_connection_from_an_address_not_allowed_is_refused(self) -> None:
        request = post(call("getblockhash", [2]))
        for _ in range(2):
            self.exchange(self.connect(), request)
        protocol, transport = self.server.connect("10.1.2.3")
        protocol.dataReceived(request)
        self.assertTrue(transport.value().startswith(b"HTTP/1.1 403 Forbidden"))

    def test_date_is_the_current_seconds(self) -> None:
        connection = self.connect()
        request = post(call("getbestblockhash", []))
        first = self.exchange(connection, request)
        later = self.exchange(connection, request)
        self.assertEqual(first, later)
        self.patch(channel.time, "time", lambda: 2_000_000_000.0)
        headers = dict(split_response(self.exchange(connection, request))[1])
        self.assertEqual(headers[b"Date"], b"Wed, 18 May 2033 03:33:20 GMT")

    def test_not_after_the_chain_moved(self) -> None:
        connection = self.connect()
        request = post(call("getbestblockhash", []))
        self.exchange(connection, request)
        self.exchange(connection, request)
        self.chain.move(self.chain.hashes[:2])
        reply = json.loads(split_response(self.exchange(connection, request))[2])
        self.assertEqual(reply["result"], "%064x" % 1)

    def serve_with_cookie(self, password: str) -> Callable[[str], None]:
        """Serve with cookie authentication only; returns what replaces the cookie and has
        the authenticator read it again, as when the writer restarts."""
        cookie = os.path.join(tempfile.mkdtemp(), ".cookie")
        authenticator = Authenticator(None, [])

        def write(password: str) -> None:
            with open(cookie, "w") as f:
                f.write("__cookie__:" + password)
            authenticator.read_cookie(cookie)

        write(password)
        self.server = self.make_server(authenticator=authenticator)
        return write

    def test_not_for_other_credentials_or_changed_ones(self) -> None:
        rotate_cookie = self.serve_with_cookie("one")
        connection = self.connect()
        one = base64.b64encode(b"__cookie__:one")
        request = post(call("getbestblockhash", []), auth=one)
        self.assertTrue(self.exchange(connection, request).startswith(b"HTTP/1.1 200"))
        self.assertTrue(self.exchange(connection, request).startswith(b"HTTP/1.1 200"))
        rotate_cookie("two")  # the writer restarted with a new cookie
        protocol, transport = connection
        transport.clear()
        protocol.dataReceived(request)
        self.assertEqual(transport.value(), b"")  # in the throttle's turn, not answered
        self.server.clock.advance(1)
        self.assertTrue(transport.value().startswith(b"HTTP/1.1 401"))

    def test_a_new_connection_with_a_replaced_cookie_is_checked(self) -> None:
        """A new connection takes credentials unchecked only while the authenticator still
        knows them: after the cookie is replaced its first request waits its turn and is
        refused, though its bytes are those of a kept answer."""
        rotate_cookie = self.serve_with_cookie("one")
        request = post(call("getbestblockhash", []), auth=base64.b64encode(b"__cookie__:one"))
        for _ in range(2):
            self.assertTrue(self.exchange(self.connect(), request).startswith(b"HTTP/1.1 200"))
        rotate_cookie("two")
        protocol, transport = self.connect()
        protocol.dataReceived(request)
        self.assertEqual(transport.value(), b"")  # checked: a wrong password waits 250 ms
        self.server.clock.advance(1)
        self.assertTrue(transport.value().startswith(b"HTTP/1.1 401"))

    def test_not_kept_when_the_connection_closes_after(self) -> None:
        for request in (post(call("getbestblockhash", []), extra=b"Connection: close\r\n"),
                        post(call("getbestblockhash", [])).replace(b"HTTP/1.1", b"HTTP/1.0")):
            protocol, transport = self.connect()
            for _ in range(2):  # the second one on a connection that proved its credentials
                protocol.dataReceived(post(call("getbestblockhash", [], "warm")))
            protocol.dataReceived(request)
            self.assertTrue(transport.disconnecting)
        self.assertEqual(len(self.server.site.kept_answers), 1)  # the "warm" one only

    def test_pipelined_repeats_answered_in_order(self) -> None:
        connection = self.connect()
        one, two = post(call("getblockhash", [1])), post(call("getblockhash", [2]))
        single = [self.exchange(connection, raw) for raw in (one, two, one, two)]
        both = self.exchange(connection, one + two + one)
        self.assertEqual(both, single[0] + single[1] + single[0])

    def test_each_request_logged_under_debug_http(self) -> None:
        categories = DebugCategories()
        self.server = self.make_server(categories=categories)
        logged: list[Any] = []
        self.server.site.log = logged.append
        connection = self.connect()
        request = post(call("getbestblockhash", []))
        answers = {self.exchange(connection, request) for _ in range(3)}
        self.assertEqual(len(logged), 2)  # the third was a kept answer
        categories.set_enabled("http", True)
        answers.add(self.exchange(connection, request))
        self.assertEqual(len(logged), 3)
        self.assertEqual(len(answers), 1)


_CALLS = st.sampled_from([
    call("getbestblockhash", []), call("getbestblockhash", [], 2), call("getblockhash", [0]),
    call("getblockhash", [3]), call("getblockhash", [3], "x"), call("getblockhash", [6]),
    call("getblockhash", ["3"]), call("getblockhash", [1, 2]), b'{"method":"getblockhash"}',
    b"[" + call("getblockhash", [1]) + b"]", call("getmininginfo", []), b'{"method":',
    # Batches: calls told apart by parameter and id types, errors, other methods.
    b"[" + b",".join([call("getblockhash", [1]), call("getblockhash", [True]),
                      call("getblockhash", [1], True), call("getblockhash", [1], "1"),
                      call("getblockhash", [6]), call("getbestblockhash", [], 1.0),
                      b'{"method":"getbestblockhash","id":1}', call("getmininginfo", []),
                      b'{"method":"getblockhash","params":[1.0],"id":1}', b"7"]) + b"]",
    b"[" + call("getblockhash", [3]) + b"," + call("getbestblockhash", [], None) + b"]",
])
#: Chains the node may move to: a new block, invalidateblock, a reorg to another branch.
_CHAINS = st.lists(st.sampled_from(["%064x" % n for n in range(3)] + ["ab" * 32, "cd" * 32]),
                   min_size=1, max_size=7)
_STEPS = st.lists(st.one_of(
    st.tuples(st.just("request"), st.integers(0, 1), _CALLS, st.booleans()),
    st.tuples(st.just("move"), _CHAINS)), max_size=40)


_DATE = re.compile(rb"Date: [^\r]*")


class SameAsGeneralPathTests(KeptTestCase):
    """Any sequence of requests (repeated, on two connections, some pipelined) and chain
    moves: the node with kept answers sends the bytes the general path sends."""

    @settings(max_examples=150, deadline=None)
    @given(steps=_STEPS)
    def test_kept_answers_are_the_general_paths(self, steps: list[tuple[Any, ...]]) -> None:
        self.assert_same_as_general_path(
            steps, lambda step: [post(step[2]) * (2 if step[3] else 1)])  # twice: pipelined


#: Calls as clients write them (wrk, python-bitcoinrpc's spaces, bitcoin-core's id first),
#: with ``%s`` for the id; ids the channel splices and others (taking the usual way).
_TEMPLATES = st.sampled_from([
    '{"method":"getblockhash","params":[1],"id":%s}', '{"method":"getblockhash","params":[6],"id":%s}',
    '{"version": "1.1", "method": "getblockhash", "params": [2], "id": %s}',
    '{"id":%s,"method":"getbestblockhash","params":[]}',
    '{"method":"getbestblockhash","id":%s}',
    '{"method":"getblockhash","params":["\\"id\\":1"],"id":%s}',
    '{"id":%s,"id":3,"method":"getbestblockhash"}',
    '{"method":"getmininginfo","params":[],"id":%s}', '[{"method":"getblockhash","params":[1],"id":%s}]'])
_IDS = st.one_of(st.integers(-99, 9999).map(str), st.integers().map(str), st.text(
    st.characters(max_codepoint=0x7e)).map(json.dumps), st.sampled_from([
    "0", "-0", "01", "1.0", "1e3", "null", "true", '"x"', '""', '"a\\"b"', '"\\u00e9"', '"\u00e9"',
    '"id"', "[1]", '{"a":1}', "12345678901234567890123"]))


class FreshIdsChannelTests(KeptTestCase):
    """Requests with any id (new ones, repeated ones, on two connections, some pipelined)
    and chain moves: the node answering from the channel's templates sends the bytes the
    general path sends."""

    @settings(max_examples=150, deadline=None)
    @given(steps=st.lists(st.one_of(
        st.tuples(st.just("requests"), st.integers(0, 1), _TEMPLATES,
                  st.lists(st.tuples(_IDS, st.booleans()), min_size=3, max_size=6)),
        st.tuples(st.just("move"), _CHAINS)), min_size=1, max_size=8))
    def test_spliced_answers_are_the_general_paths(self, steps: list[tuple[Any, ...]]) -> None:
        self.assert_same_as_general_path(steps, lambda step: [
            post((step[2] % request_id).encode("utf-8")) * (2 if twice else 1)  # twice: pipelined
            for request_id, twice in step[3]])


class FrontendTests(KeptTestCase):
    def test_kept_answer_waits_for_the_writers_last_commit(self) -> None:
        waiting: list[Deferred] = []
        core = self.server.core
        frontend = FrontendCore(core, writer=None, whitelist=Whitelist(),
                                fresh=lambda: waiting[-1] if waiting else None)
        body = call("getbestblockhash", [])
        self.assertEqual(self.result(frontend.respond(body, "u"))["result"], "%064x" % 4)
        reply = frontend.respond(body, "u")
        self.assertTrue(frontend.answer_holds(body, "u", reply))
        waiting.append(Deferred())  # the writer committed: a reload is under way
        self.assertFalse(frontend.answer_holds(body, "u", reply))
        answer = frontend.respond(body, "u")
        self.assertNoResult(answer)
        self.chain.move(self.chain.hashes + ["ee" * 32])
        waiting.pop().callback(None)
        self.assertEqual(self.result(answer)["result"], "ee" * 32)

    def test_answer_kept_by_call_waits_for_the_writers_last_commit(self) -> None:
        waiting: list[Deferred] = []
        frontend = FrontendCore(self.server.core, writer=None, whitelist=Whitelist(),
                                fresh=lambda: waiting[-1] if waiting else None)
        for n in range(2):
            self.assertEqual(self.result(frontend.respond(call("getbestblockhash", [], n), "u")),
                             {"result": "%064x" % 4, "error": None, "id": n})
        kept = frontend.last_kept
        self.assertIsNotNone(kept)
        self.assertTrue(frontend.call_holds(kept[0], "u", kept[1]))
        waiting.append(Deferred())  # the writer committed: a reload is under way
        self.assertFalse(frontend.call_holds(kept[0], "u", kept[1]))
        answer = frontend.respond(call("getbestblockhash", [], 2), "u")
        self.assertIsNone(frontend.last_kept)
        self.assertNoResult(answer)
        self.chain.move(self.chain.hashes + ["ee" * 32])
        waiting.pop().callback(None)
        self.assertEqual(self.result(answer)["result"], "ee" * 32)
        self.assertFalse(frontend.call_holds(kept[0], "u", kept[1]))  # the chain moved
