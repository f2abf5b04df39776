"""The lean HTTP channel's parser boundary (hypothesis): requests split at every byte,
pipelined requests, header and body limits, garbage; and the hand-off of resources the
node does not own to twisted.web."""

from __future__ import annotations

import re

from hypothesis import given, settings, strategies as st
from twisted.internet import protocol, reactor
from twisted.internet.defer import Deferred, inlineCallbacks
from twisted.internet.error import ConnectionDone
from twisted.internet.protocol import ClientCreator
from twisted.internet.task import deferLater
from twisted.python.failure import Failure
from twisted.trial.unittest import SynchronousTestCase, TestCase
from twisted.web import resource, server, static

from coin.http.channel import MAX_HEADER_COUNT, SPOOL_BYTES, write_now
from coin.rpc.resource import MAX_HEADER_BYTES

from tests.rpchelpers import Server, post, split_response

COUNT = b'{"method":"getblockcount","id":%d}'
PIPELINE = (post(COUNT % 1) + b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
            + post(COUNT % 2, path=b"/wallet/") + b"GET /nowhere HTTP/1.1\r\n\r\n"
            + post(COUNT % 3))
DATE = re.compile(rb"Date: [^\r]*\r\n")


def answer(server: Server, chunks: list[bytes]) -> tuple[bytes, bool]:
    """What one connection wrote back for ``chunks`` (dates blanked), and whether it closed."""
    protocol, transport = server.connect()
    for chunk in chunks:
        protocol.dataReceived(chunk)
    closed = transport.disconnecting
    protocol.connectionLost(Failure(ConnectionDone()))
    return DATE.sub(b"Date: -\r\n", transport.value()), closed


def cut(raw: bytes, points: list[int]) -> list[bytes]:
    edges = [0] + sorted(set(points)) + [len(raw)]
    return [raw[a:b] for a, b in zip(edges, edges[1:]) if b > a]


class SplitTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.server = Server()
        self.whole = answer(self.server, [PIPELINE])

    def test_pipelined_requests_are_answered_in_order(self):
        replies, closed = self.whole
        self.assertFalse(closed)
        statuses = re.findall(rb"HTTP/1.1 (\d+) ", replies)
        self.assertEqual(statuses, [b"200", b"405", b"200", b"404", b"200"])
        self.assertEqual(re.findall(rb'"id":(\d+)\}', replies), [b"1", b"2", b"3"])

    def test_split_at_every_byte_gives_the_same_answers(self):
        for point in range(1, len(PIPELINE)):
            self.assertEqual(answer(self.server, [PIPELINE[:point], PIPELINE[point:]]), self.whole,
                             point)

    def test_one_byte_at_a_time(self):
        self.assertEqual(answer(self.server, [bytes([b]) for b in PIPELINE]), self.whole)

    @given(st.lists(st.integers(1, len(PIPELINE) - 1), max_size=12))
    @settings(max_examples=200, deadline=None)
    def test_any_split_gives_the_same_answers(self, points):
        self.assertEqual(answer(self.server, cut(PIPELINE, points)), self.whole)


class LimitTests(SynchronousTestCase):
    @given(st.integers(0, 2 * MAX_HEADER_BYTES), st.lists(st.integers(1, 3 * MAX_HEADER_BYTES),
                                                          max_size=3))
    @settings(max_examples=60, deadline=None)
    def test_headers_over_the_limit_are_400_and_closed(self, size, points):
        raw = post(COUNT % 1, extra=b"X-Big: " + b"a" * size + b"\r\n")
        replies, closed = answer(Server(), cut(raw, points))
        head = len(raw) - len(COUNT % 1)
        if head > MAX_HEADER_BYTES + 200:
            self.assertEqual((replies, closed), (b"HTTP/1.1 400 Bad Request\r\n\r\n", True))
        elif head < MAX_HEADER_BYTES - 200:
            self.assertEqual((split_response(replies)[0], closed), (b"HTTP/1.1 200 OK", False))

    @given(st.integers(MAX_HEADER_COUNT - 3, MAX_HEADER_COUNT + 3))
    @settings(max_examples=10, deadline=None)
    def test_more_than_500_headers_are_400_and_closed(self, count):
        raw = post(COUNT % 1, extra=b"".join(b"X-%d: y\r\n" % n for n in range(count - 3)))
        replies, closed = answer(Server(), [raw])  # post() adds Host, Authorization, Length
        if count > MAX_HEADER_COUNT:
            self.assertEqual((replies, closed), (b"HTTP/1.1 400 Bad Request\r\n\r\n", True))
        else:
            self.assertEqual((split_response(replies)[0], closed), (b"HTTP/1.1 200 OK", False))

    @given(st.integers(-3, 3), st.booleans())
    @settings(max_examples=30, deadline=None)
    def test_bodies_over_the_limit_are_413_and_closed(self, delta, chunked):
        server = Server()
        limit = server.site.max_body = 1000
        body = b" " * (limit - len(COUNT % 1) + delta) + COUNT % 1
        if chunked:
            raw = (b"POST / HTTP/1.1\r\nAuthorization: Basic dTpw\r\nTransfer-Encoding: chunked"
                   b"\r\n\r\n%x\r\n%s\r\n0\r\n\r\n" % (len(body), body))
        else:
            raw = post(body)
        replies, closed = answer(server, [raw])
        status = split_response(replies)[0]
        if len(body) > limit:
            self.assertEqual((status, closed), (b"HTTP/1.1 413 Request Entity Too Large", True))
        else:
            self.assertEqual((status, closed), (b"HTTP/1.1 200 OK", False))


class GarbageTests(SynchronousTestCase):
    @given(st.binary(max_size=300), st.lists(st.integers(1, 300), max_size=4))
    @settings(max_examples=300, deadline=None)
    def test_garbage_is_answered_or_closed_never_a_crash(self, garbage, points):
        server = Server()
        protocol, transport = server.connect()
        for chunk in cut(garbage, points):
            protocol.dataReceived(chunk)
        written = transport.value()
        self.assertTrue(written == b"" or written.startswith((b"HTTP/1.1 ", b"HTTP/1.0 ")),
                        written[:60])
        protocol.connectionLost(Failure(ConnectionDone()))
        self.assertEqual(server.site.connections, 0)

    @given(st.binary(max_size=200))
    @settings(max_examples=200, deadline=None)
    def test_garbage_after_a_request_leaves_its_answer_first(self, garbage):
        replies, _ = answer(Server(), [post(COUNT % 1) + garbage])
        self.assertTrue(replies.startswith(b"HTTP/1.1 200 OK\r\n"), replies[:60])

    def test_a_body_past_the_spool_size_is_answered(self):
        body = b'{"method":"getblockcount","id":9,"pad":"%s"}' % (b"x" * (SPOOL_BYTES + 10))
        replies, closed = answer(Server(), cut(post(body), [300, 70000]))
        self.assertTrue(replies.endswith(b'{"result":111,"error":null,"id":9}\n'), replies[:80])
        self.assertFalse(closed)

    def test_unknown_method_is_405_not_400(self):
        # llhttp refuses methods it does not know; twisted.web (and Core) answer 405.
        replies, closed = answer(Server(), [b"BREW / HTTP/1.1\r\nHost: x\r\n\r\n"])
        self.assertEqual(split_response(replies)[0], b"HTTP/1.1 405 Method Not Allowed")
        self.assertFalse(closed)

    def test_request_lines_read_as_twisted_web_read_them(self):
        # (request, status line, closed): what the twisted.web channel answered.
        cases = [(b"\r\nGET / HTTP/1.1\r\n\r\n", b"HTTP/1.1 405 Method Not Allowed", False),
                 (b"\r\n\r\nGET / HTTP/1.1\r\n\r\n", b"HTTP/1.1 400 Bad Request", True),
                 (b"GET /  HTTP/1.1\r\n\r\n", b"HTTP/1.1 400 Bad Request", True),
                 (b"GET / HTTP/1.1 x\r\n\r\n", b"HTTP/1.1 400 Bad Request", True),
                 (b"GET * HTTP/1.1\r\n\r\n", b"HTTP/1.1 405 Method Not Allowed", False)]
        for raw, status, closed in cases:
            for split in (len(raw), 1):
                replies, was_closed = answer(Server(), cut(raw, [split]))
                self.assertEqual((split_response(replies)[0], was_closed), (status, closed), raw)
        star, _ = answer(Server(), [b"GET * HTTP/1.1\r\n\r\n"])
        self.assertIn(b"Allow: OPTIONS\r\n", star)

    def test_versions_other_than_1_0_and_1_1_are_400(self):
        for version in (b"HTTP/2.0", b"HTTP/0.9"):
            replies, closed = answer(Server(), [b"GET / %s\r\nHost: x\r\n\r\n" % version])
            self.assertEqual((replies, closed), (b"HTTP/1.1 400 Bad Request\r\n\r\n", True))

    def test_bare_lf_request_line_split_before_its_end(self):
        raw = post(COUNT % 1).replace(b"\r\n", b"\n")
        self.assertEqual(answer(Server(), [raw[:5], raw[5:]]), answer(Server(), [raw]))


class SlowReaderTests(SynchronousTestCase):
    def test_a_full_transport_stops_answers_and_reading_until_it_drains(self):
        # A client that pipelines and never reads must not grow the server's buffers.
        protocol, transport = Server().connect()
        self.assertIs(transport.producer, protocol)
        protocol.pauseProducing()  # what the transport does when its buffer is full
        protocol.dataReceived(post(COUNT % 1) + post(COUNT % 2))
        self.assertEqual((transport.value(), transport.producerState), (b"", "paused"))
        protocol.resumeProducing()
        self.assertEqual(re.findall(rb'"id":(\d+)\}', transport.value()), [b"1", b"2"])
        self.assertEqual(transport.producerState, "producing")
        protocol.connectionLost(Failure(ConnectionDone()))


class DeadlineTests(SynchronousTestCase):
    def test_trickled_headers_of_a_kept_alive_request_are_cut_off(self):
        server = Server()
        protocol, transport = server.connect()
        protocol.dataReceived(post(COUNT % 1))
        protocol.dataReceived(b"POST / HTTP/1.1\r\n")
        for n in range(2):  # bytes keep the 30 s idle timer from firing
            server.clock.advance(20 if n < 1 else 5)
            protocol.dataReceived(b"X-%d: y\r\n" % n)
        server.clock.advance(5.1)  # 30 s after the head's first byte
        self.assertEqual(transport.value().count(b"HTTP/1.1 200 OK"), 1)
        self.assertTrue(transport.disconnecting)


class Page(resource.Resource):
    """A plugin's page: an ordinary twisted.web resource."""

    isLeaf = True

    def render_GET(self, request):
        request.setHeader(b"Content-Type", b"text/plain")
        return b"page at %s" % request.uri


class HandOffTests(SynchronousTestCase):
    def test_other_resources_get_twisted_web_requests_on_the_same_connection(self):
        server = Server()
        server.root.putChild(b"plugin", Page())
        replies, closed = answer(server, [b"GET /plugin/x?y HTTP/1.1\r\nHost: x\r\n\r\n"
                                          + post(COUNT % 4)])
        first, second = replies.split(b"HTTP/1.1 200 OK\r\n")[1:]
        self.assertIn(b"Content-Length: 19\r\n", first)
        self.assertTrue(first.endswith(b"\r\n\r\npage at /plugin/x?y"))
        self.assertTrue(second.endswith(b'{"result":111,"error":null,"id":4}\n'))
        self.assertFalse(closed)

    def test_a_handed_off_resource_with_a_producer(self):
        # static.File streams through a producer registered on the channel, which then
        # takes the transport back for the next request.
        path = self.mktemp()
        with open(path, "wb") as f:
            f.write(b"x" * 5000)
        server = Server()
        server.root.putChild(b"file", static.File(path))
        protocol, transport = server.connect()
        protocol.dataReceived(b"GET /file HTTP/1.1\r\n\r\n" + post(COUNT % 5))
        for _ in range(10):
            if transport.producer is not None and transport.producer is not protocol:
                transport.producer.resumeProducing()
        replies = transport.value()
        self.assertIn(b"\r\n\r\n" + b"x" * 5000 + b"HTTP/1.1 200 OK", replies)
        self.assertTrue(replies.endswith(b'{"result":111,"error":null,"id":5}\n'))
        self.assertIs(transport.producer, protocol)
        protocol.connectionLost(Failure(ConnectionDone()))

    def test_http_1_0_is_closed_after_the_handed_off_answer(self):
        server = Server()
        server.root.putChild(b"plugin", Page())
        replies, closed = answer(server, [b"GET /plugin HTTP/1.0\r\n\r\n" + post(COUNT % 4)])
        self.assertTrue(replies.startswith(b"HTTP/1.0 200 OK\r\n"))
        self.assertEqual(replies.count(b"HTTP/1."), 1)
        self.assertTrue(closed)


class IdleTests(SynchronousTestCase):
    """One coarse idle timer per connection: not moved per request, yet idleness still
    counts from the last activity."""

    def test_idleness_counts_from_the_last_answer(self):
        server = Server()
        timeout = server.site.timeOut
        protocol, transport = server.connect()
        server.clock.advance(timeout - 5)
        for n in range(50):
            protocol.dataReceived(post(COUNT % n))
        self.assertEqual(len(server.clock.getDelayedCalls()), 1)  # no timer per request
        server.clock.advance(timeout - 0.1)  # past the first deadline, not the last answer's
        self.assertFalse(transport.disconnecting)
        server.clock.advance(0.2)
        self.assertTrue(transport.disconnecting)
        self.assertEqual(transport.value().count(b"HTTP/1.1 200 OK"), 50)


class Large(resource.Resource):
    """One of the node's own resources with a long answer (more than a socket buffer)."""

    isLeaf = True
    serves_lean_requests = True
    body = bytes(range(256)) * 16384  # 4 MiB

    def render(self, request):
        request.setHeader(b"Content-Length", b"%d" % len(self.body))
        request.write(self.body)
        request.finish()
        return server.NOT_DONE_YET


class _Collect(protocol.Protocol):
    def __init__(self, done: Deferred) -> None:
        self.done, self.data = done, []

    def dataReceived(self, data: bytes) -> None:
        self.data.append(data)

    def connectionLost(self, reason: Failure = ConnectionDone()) -> None:
        self.done.callback(b"".join(self.data))


class SocketTests(TestCase):
    """Over a real loopback socket, where answers go to the socket at once when nothing is
    buffered: a long answer, partly buffered, keeps its place before the next ones."""

    @inlineCallbacks
    def test_a_long_answer_then_short_ones_arrive_whole_and_in_order(self):
        node = Server()
        node.root.putChild(b"large", Large())
        port = reactor.listenTCP(0, node.site, interface="127.0.0.1")
        self.addCleanup(port.stopListening)
        done: Deferred = Deferred()
        client = yield ClientCreator(reactor, _Collect, done).connectTCP(
            "127.0.0.1", port.getHost().port)
        client.transport.write(b"GET /large HTTP/1.1\r\nHost: x\r\n\r\n" + post(COUNT % 1)
                               + b"GET /large HTTP/1.1\r\nHost: x\r\n\r\n"
                               + post(COUNT % 2, extra=b"Connection: close\r\n"))
        replies = yield done
        parts = replies.split(b"HTTP/1.1 200 OK\r\n")
        self.assertEqual(len(parts), 5)
        self.assertTrue(parts[1].endswith(b"\r\n\r\n" + Large.body))
        self.assertTrue(parts[2].endswith(b'{"result":111,"error":null,"id":1}\n'))
        self.assertTrue(parts[3].endswith(b"\r\n\r\n" + Large.body))
        self.assertTrue(parts[4].endswith(b'{"result":111,"error":null,"id":2}\n'))

    @inlineCallbacks
    def test_bytes_buffered_by_the_transport_go_first(self):
        node = Server()
        port = reactor.listenTCP(0, node.site, interface="127.0.0.1")
        self.addCleanup(port.stopListening)
        done: Deferred = Deferred()
        yield ClientCreator(reactor, _Collect, done).connectTCP("127.0.0.1", port.getHost().port)
        while not node.site._channels:
            yield deferLater(reactor, 0.01, lambda: None)
        transport = next(iter(node.site._channels)).transport
        write_now(transport, b"one ")  # nothing buffered: straight to the socket
        self.assertEqual(transport._tempDataLen, 0)
        transport.write(b"two ")  # buffered until the reactor's next turn
        write_now(transport, b"three")  # must not overtake it
        self.assertEqual(transport._tempDataBuffer, [b"two ", b"three"])
        transport.loseConnection()
        self.assertEqual((yield done), b"one two three")
