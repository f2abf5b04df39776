"""The HTTP channel's limits: bare-LF lines, header size, header deadline, connection cap,
and large bodies parsed off the reactor thread."""

from __future__ import annotations

import threading

import simplejson
from hypothesis import given, settings, strategies as st
from twisted.internet.address import IPv4Address
from twisted.internet.defer import Deferred, gatherResults
from twisted.internet.error import ConnectionDone
from twisted.logger import LogLevel, globalLogPublisher
from twisted.python.failure import Failure
from twisted.trial.unittest import SynchronousTestCase, TestCase

from coin.logs import DebugCategories
from coin.rpc import jsonrpc
from coin.rpc.jsonrpc import LARGE_RESULT, RPCLimits, parse_json
from coin.rpc.registry import rpc_method
from coin.rpc.resource import MAX_HEADER_BYTES, MAX_REQUEST_LINE, OVERLOAD_LINGER
from coin.views.amounts import amount_to_json, real_to_json

from tests.rpchelpers import Server, post, split_response

GET_COUNT = b'{"method":"getblockcount","id":7}'
#: A result large enough to be encoded in the thread pool.
MANY = {"k%d" % n: {"fee": amount_to_json(n), "difficulty": real_to_json(n / 3), "name": "\u00e9",
                    "depends": []} for n in range(LARGE_RESULT + 1)}


@rpc_method("many", category="hidden")
def echo_many(ctx):
    return MANY


#: What ``slow`` answers with, once a test fires it.
_SLOW: list = []


@rpc_method("slow", category="hidden")
def slow(ctx):
    answer: Deferred = Deferred()
    _SLOW.append(answer)
    return answer


class IdleTimerTests(SynchronousTestCase):
    """One idle timer per connection: reset per request, never replaced, never cutting an answer."""

    def test_a_slow_answer_is_not_cut_and_idleness_counts_from_it(self):
        server = Server(methods=[slow])
        self.addCleanup(_SLOW.clear)
        protocol, transport = server.connect()
        protocol.dataReceived(post(b'{"method":"slow","id":1}'))
        server.clock.advance(75)  # well past the 30 s timeout, still answering
        self.assertFalse(transport.disconnecting)
        _SLOW.pop().callback(5)
        self.assertIn(b'{"result":5,"error":null,"id":1}', transport.value())
        server.clock.advance(29)
        self.assertFalse(transport.disconnecting)
        server.clock.advance(1.5)
        self.assertTrue(transport.disconnecting)

    def test_requests_arm_no_new_timers(self):
        server = Server()
        protocol, transport = server.connect()
        [idle] = server.clock.getDelayedCalls()
        for _ in range(20):
            protocol.dataReceived(post(GET_COUNT))
            self.assertEqual(server.clock.getDelayedCalls(), [idle])
        self.assertEqual(transport.value().count(b"HTTP/1.1 200 OK"), 20)


class ShutdownTests(SynchronousTestCase):
    """When the server stops, kept-alive connections close once their answers are sent."""

    def test_idle_connections_close_and_busy_ones_after_their_answer(self):
        server = Server(methods=[slow])
        self.addCleanup(_SLOW.clear)
        idle, idle_transport = server.connect()
        idle.dataReceived(post(GET_COUNT))
        busy, busy_transport = server.connect()
        busy.dataReceived(post(b'{"method":"slow","id":1}'))
        server.site.stopFactory()
        self.assertTrue(idle_transport.disconnecting)
        self.assertFalse(busy_transport.disconnecting)
        _SLOW.pop().callback(5)
        self.assertIn(b'{"result":5,"error":null,"id":1}', busy_transport.value())
        self.assertTrue(busy_transport.disconnecting)
        for channel in (idle, busy):  # the transports close: no timer of theirs is left
            channel.connectionLost(Failure(ConnectionDone()))
        self.assertEqual((server.clock.getDelayedCalls(), server.site.connections), ([], 0))


class LineEndingTests(SynchronousTestCase):
    def test_bare_lf_request_is_answered(self):
        # libevent reads LF and CRLF lines alike; Twisted alone waited for CRLF until the
        # idle timeout.
        raw = post(GET_COUNT).replace(b"\r\n", b"\n")
        status, _, body = split_response(Server().exchange(raw))
        self.assertEqual((status, body), (b"HTTP/1.1 200 OK", b'{"result":111,"error":null,"id":7}\n'))

    def test_mixed_line_endings(self):
        raw = post(GET_COUNT).replace(b"Host: 127.0.0.1\r\n", b"Host: 127.0.0.1\n")
        self.assertTrue(Server().exchange(raw).startswith(b"HTTP/1.1 200 OK"))

    def test_a_stray_cr_inside_a_header_is_still_refused(self):
        raw = post(GET_COUNT, extra=b"X-A: b\rc\r\n")
        self.assertTrue(Server().exchange(raw).startswith(b"HTTP/1.1 400 Bad Request"))


class HeaderSizeTests(SynchronousTestCase):
    def assert_400_and_closed(self, raw):
        protocol, transport = Server().connect()
        protocol.dataReceived(raw)
        self.assertTrue(transport.value().startswith(b"HTTP/1.1 400 Bad Request\r\n"))
        self.assertTrue(transport.disconnecting)

    def test_one_header_line_over_the_limit(self):
        # Twisted's line reader closed without a word; doc/rpc.md promises 400.
        self.assert_400_and_closed(post(GET_COUNT, extra=b"X-Big: " + b"a" * MAX_HEADER_BYTES
                                        + b"\r\n"))

    def test_unterminated_line_over_the_limit(self):
        self.assert_400_and_closed(b"POST / HTTP/1.1\r\nX-Big: " + b"a" * (MAX_HEADER_BYTES + 1))

    def test_all_headers_together_over_the_limit(self):
        self.assert_400_and_closed(post(GET_COUNT, extra=b"".join(
            b"X-%d: %s\r\n" % (n, b"a" * 6000) for n in range(3))))

    def test_request_line_over_cores_limit(self):
        # A 9 KB path: Core (libevent, MAX_HEADERS_SIZE) answers 400, not the path's 404.
        path = b"/rest/block/" + b"a" * (MAX_REQUEST_LINE - 10) + b".json"
        self.assert_400_and_closed(b"GET " + path + b" HTTP/1.1\r\nHost: x\r\n\r\n")

    def test_request_line_at_cores_limit_is_read(self):
        path = b"/x" * ((MAX_REQUEST_LINE - len(b"GET  HTTP/1.1")) // 2)
        reply = Server().exchange(b"GET " + path + b" HTTP/1.1\r\nHost: x\r\n\r\n")
        self.assertFalse(reply.startswith(b"HTTP/1.1 400"), reply[:40])

    def test_headers_at_the_limit_are_fine(self):
        raw = post(GET_COUNT, extra=b"X-Big: " + b"a" * 8000 + b"\r\n")
        self.assertTrue(Server().exchange(raw).startswith(b"HTTP/1.1 200 OK"))


class HeaderDeadlineTests(SynchronousTestCase):
    def test_trickled_headers_are_cut_off_at_the_deadline(self):
        server = Server()
        protocol, transport = server.connect()
        protocol.dataReceived(b"POST / HTTP/1.1\r\n")
        for n in range(5):  # a byte every 20 s keeps the 30 s idle timer from firing
            server.clock.advance(20 if n < 1 else 5)
            protocol.dataReceived(b"X-%d: y\r\n" % n)
            if transport.disconnecting:
                break
        self.assertLessEqual(server.clock.seconds(), 30)
        server.clock.advance(0.1)
        self.assertTrue(transport.disconnecting)

    def test_slow_but_complete_headers_and_kept_alive_requests_are_fine(self):
        server = Server()
        protocol, transport = server.connect()
        raw = post(GET_COUNT)
        for _ in range(3):
            protocol.dataReceived(raw[:10])
            server.clock.advance(25)
            protocol.dataReceived(raw[10:])
            server.clock.advance(25)  # idle between requests: the idle timeout's business
        self.assertEqual(transport.value().count(b"HTTP/1.1 200 OK"), 3)
        self.assertFalse(transport.disconnecting)

    def test_deadline_comes_from_the_site_timeout(self):
        server = Server()
        server.site.timeOut = 2
        protocol, transport = server.connect()
        protocol.dataReceived(b"POST / HTTP/1.1\r\n")
        server.clock.advance(1.5)
        protocol.dataReceived(b"X-A: b\r\n")
        server.clock.advance(0.6)
        self.assertTrue(transport.disconnecting)
        # No timer outlives the connection: the idle timer, reset by the trickled bytes,
        # used to fire later and leave a 15 s abort timer behind (an in-process node's
        # shutdown showed them).
        protocol.connectionLost(Failure(ConnectionDone()))
        self.assertEqual(server.clock.getDelayedCalls(), [])


class ConnectionCapTests(SynchronousTestCase):
    def test_connections_past_the_cap_get_503_and_are_closed(self):
        server = Server()
        server.site.max_connections = 3
        held = [server.connect() for _ in range(3)]
        protocol, transport = server.connect()
        status, headers, body = split_response(transport.value())
        self.assertEqual((status, body),
                         (b"HTTP/1.1 503 Service Unavailable", b"Too many connections: the limit is 3\n"))
        self.assertIn((b"Connection", b"close"), headers)
        self.assertTrue(transport.disconnecting)
        # Refused connections linger (their input dropped) until the client closes or
        # OVERLOAD_LINGER passes; past as many again, they are closed without a word.
        others = [server.connect()[1] for _ in range(2)]
        self.assertEqual([t.value()[:12] for t in others], [b"HTTP/1.1 503"] * 2)
        self.assertEqual(server.site.lingering, 3)
        self.assertIsNone(server.site.buildProtocol(IPv4Address("TCP", "127.0.0.1", 1)))
        server.clock.advance(OVERLOAD_LINGER)
        self.assertTrue(all(t.disconnecting for t in others))
        # Nothing of a refused connection is counted, and a closed one frees its place.
        protocol.connectionLost(Failure(ConnectionDone()))
        self.assertEqual(server.site.lingering, 2)
        held[0][0].connectionLost(Failure(ConnectionDone()))
        self.assertEqual(server.site.connections, 2)
        self.assertTrue(server.exchange(post(GET_COUNT)).startswith(b"HTTP/1.1 200 OK"))


class RequestLogTests(SynchronousTestCase):
    """Core logs each request only under ``-debug=http``; with it off no event is even built."""

    def logged(self, categories: DebugCategories) -> list:
        events: list = []
        globalLogPublisher.addObserver(events.append)
        self.addCleanup(globalLogPublisher.removeObserver, events.append)
        server = Server(categories=categories)
        self.assertTrue(server.exchange(post(GET_COUNT, path=b"/wallet/")).startswith(b"HTTP/1.1 200"))
        return [e for e in events if e.get("log_format", "").startswith("Received a")]

    def test_off_by_default_and_on_with_the_category(self) -> None:
        self.assertEqual(self.logged(DebugCategories()), [])
        [event] = self.logged(DebugCategories(["http"]))
        self.assertEqual((event["method"], event["uri"], event["log_level"]),
                         ("POST", "/wallet/", LogLevel.debug))

    def test_the_logging_rpc_turns_it_on_at_run_time(self) -> None:
        categories = DebugCategories()
        self.assertEqual(self.logged(categories), [])
        categories.set_enabled("http", True)
        self.assertEqual(len(self.logged(categories)), 1)


class LargeBodyTests(TestCase):
    """Bodies over the threshold are parsed in the thread pool with the same results."""

    def test_answers_match_the_reactor_parse(self):
        small = Server()
        big = Server(limits=RPCLimits(thread_parse=10))
        bodies = [GET_COUNT, b'[' + b','.join([GET_COUNT] * 50) + b']', b'{"method":',
                  b'{"method":"getblockhash","params":[1' + b'1' * 5000 + b'],"id":1}',
                  b'{"method":"echojson","params":[0.00000001,{"a":1,"a":2}],"id":1e-8}',
                  b'[' * 600 + b']' * 600]

        def compare(replies, body):
            self.assertEqual(replies[0], replies[1], body[:50])

        checks = []
        for body in bodies:
            expected = self.successResultOf(small.core.handle(body, "u"))  # synchronous
            threaded = big.core.handle(body, "u")
            checks.append(threaded.addCallback(lambda reply, e=expected, b=body: compare((e, reply), b)))
        return gatherResults(checks, consumeErrors=True)

    def test_large_bodies_are_parsed_off_the_reactor_thread(self):
        threads = []
        real = jsonrpc.parse_json
        self.patch(jsonrpc, "parse_json",
                   lambda *args: threads.append(threading.get_ident()) or real(*args))
        server = Server(limits=RPCLimits(thread_parse=1000))
        self.successResultOf(server.core.handle(GET_COUNT, "u"))
        big = b'{"method":"getblockcount","id":7,"pad":"%s"}' % (b"x" * 2000)

        def parsed(reply):
            self.assertEqual(reply.body, b'{"result":111,"error":null,"id":7}\n')
            self.assertEqual(threads[0], threading.get_ident())
            self.assertNotEqual(threads[1], threading.get_ident())

        return server.core.handle(big, "u").addCallback(parsed)

    def test_large_results_are_encoded_piece_by_piece_in_a_thread(self):
        # simplejson's C encoder holds the GIL for a whole value: in one piece, a thread
        # did not spare the reactor (0.5 s for 200,000 mempool entries).
        threads = []
        real = jsonrpc.encode_json_in_pieces
        self.patch(jsonrpc, "encode_json_in_pieces",
                   lambda value: threads.append(threading.get_ident()) or real(value))
        server = Server(methods=[echo_many])

        def encoded(reply):
            self.assertEqual(reply.body, b'{"result":%s,"error":null,"id":1}\n'
                             % jsonrpc.encode_json(MANY))
            self.assertEqual(len(threads), 1)
            self.assertNotEqual(threads[0], threading.get_ident())

        return server.core.handle(b'{"method":"many","id":1}', "u").addCallback(encoded)

    def test_pieces_give_the_same_text(self):
        values = [MANY, [MANY["k1"]] * 300, [[1] * 200] * 200, {"x": [MANY] * 2},
                  {n: 1 for n in range(200)}, [], {}, ("a", 1), {"s": ["\ud800"] * 200}]
        for value in values:
            self.assertEqual(jsonrpc.encode_json_in_pieces(value), jsonrpc.encode_json(value))

    @given(st.one_of(st.text(), st.integers(), st.none(), st.booleans(),
                     st.text(alphabet=st.characters(max_codepoint=127))))
    @settings(max_examples=500, deadline=None)
    def test_scalars_skipping_the_encoder_are_encoded_as_by_it(self, value):
        try:
            expected = jsonrpc._ENCODER.encode(value).encode("utf-8")
        except UnicodeEncodeError:
            expected = jsonrpc._ASCII_ENCODER.encode(value).encode("ascii")
        self.assertEqual(jsonrpc.encode_json(value), expected)

    def test_integers_past_4300_digits_are_out_of_range_not_a_parse_error(self):
        value = parse_json(b"[" + b"7" * 5000 + b"]")[0]
        self.assertEqual(str(value), "7" * 5000)
        raw = Server().exchange(post(b'{"method":"getblockhash","params":[' + b"1" * 5000
                                     + b'],"id":1}'))
        self.assertEqual(simplejson.loads(split_response(raw)[2])["error"],
                         {"code": -1, "message": "JSON integer out of range"})
