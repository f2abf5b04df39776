"""Kept REST answers: a repeat of the very same GET bytes on a kept-alive connection is written
again unparsed and unrendered while routing the path again gives, at once, an equal body; so
it never outlives what the general path would answer (a new tip, a block's confirmations)."""

from __future__ import annotations

import re
from typing import Any, List, Optional, Tuple

from twisted.internet import reactor
from twisted.internet.address import IPv4Address
from twisted.internet.defer import Deferred, inlineCallbacks
from twisted.internet.task import deferLater
from twisted.internet.testing import StringTransport

from coin.chain.pruning import MIN_BLOCKS_TO_KEEP, prune_to
from coin.frontend.rest import FrontendREST
from coin.http import channel
from coin.logs import DebugCategories
from coin.primitives.hashes import hash_to_hex
from coin.testing.chainbuilder import ChainBuilder
from coin.rest.resource import endpoint_label
from coin.rpc.resource import RPCSite
from tests.unit.rest import test_rest
from tests.unit.rest.test_rest import RESTTestCase

DATE = re.compile(rb"Date: [^\r]*\r\n")


class KeptAsking:
    """A node's site, and GETs on connections to it."""

    site: Any

    def make_site(self, pruned=None) -> None:
        """As a node's: requests not logged (-debug=http off), so answers are kept."""
        super().make_site(pruned)  # type: ignore[misc]
        self.site = RPCSite(self.site.resource, allow=self.site.allow, reactor=reactor,
                            timeout=None, categories=DebugCategories())

    def connect(self) -> Tuple[Any, StringTransport]:
        address = IPv4Address("TCP", "127.0.0.1", 40000)
        protocol = self.site.buildProtocol(address)
        transport = StringTransport(peerAddress=address)
        protocol.makeConnection(transport)
        self.addCleanup(protocol.connectionLost, None)
        return protocol, transport

    @inlineCallbacks
    def ask(self, connection: Tuple[Any, StringTransport], path: str, extra: bytes = b""):
        """The whole answer (Date blanked) to a GET of ``path`` on ``connection``."""
        protocol, transport = connection
        transport.clear()
        protocol.dataReceived(b"GET %s HTTP/1.1\r\nHost: x\r\n%s\r\n" % (path.encode(), extra))
        for _ in range(2000):
            head, sep, body = transport.value().partition(b"\r\n\r\n")
            length = re.search(rb"Content-Length: (\d+)", head)
            if sep and length and len(body) >= int(length.group(1)):
                return DATE.sub(b"Date: -\r\n", transport.value())
            yield deferLater(reactor, 0.002, lambda: None)
        self.fail("no answer for %s" % path)


class KeptRESTTests(KeptAsking, RESTTestCase):
    def paths(self) -> List[str]:
        tip = self.tip_hash()
        return ["/rest/chaininfo.json", "/rest/block/%s.json" % tip, "/rest/block/%s.hex" % tip,
                "/rest/block/notxdetails/%s.json" % tip, "/rest/tx/%s.hex" % self.spend.txid_hex,
                "/rest/tx/%s.json" % self.spend.txid_hex, "/rest/blockhashbyheight/1.json"]

    @inlineCallbacks
    def test_repeats_are_answered_unrendered_and_counted(self):
        rendered: List[bytes] = []
        render = self.rest.render
        self.patch(self.rest, "render", lambda request: rendered.append(request.uri) or render(request))
        observed: List[Tuple[str, int]] = []
        self.rest._observe = lambda label, status: observed.append((label, status))
        connection = self.connect()
        for path in self.paths():
            # The first asking may be answered later (a block read, a JSON rendered in the
            # thread pool): kept from the first answer given at once.
            answers = {(yield self.ask(connection, path)), (yield self.ask(connection, path))}
            del rendered[:], observed[:]
            for _ in range(3):
                answers.add((yield self.ask(connection, path)))
            self.assertEqual((rendered, observed), ([], [(endpoint_label(path.encode()), 200)] * 3),
                             path)
            fresh = yield self.ask(self.connect(), path, b"X-Other: bytes\r\n")
            self.assertEqual(answers, {fresh}, path)

    @inlineCallbacks
    def test_a_kept_answer_follows_the_chain(self):
        connection = self.connect()
        paths = self.paths()
        before = {}
        for path in paths:
            yield self.ask(connection, path)
            before[path] = yield self.ask(connection, path)
        yield self.mine(1)
        changed = 0
        for path in paths:
            again = yield self.ask(connection, path)
            fresh = yield self.ask(self.connect(), path, b"X-Other: bytes\r\n")
            self.assertEqual(again, fresh, path)
            changed += again != before[path]
        # chaininfo, the block's JSON (confirmations, next block), the transaction's JSON.
        self.assertEqual(changed, 4)

    @inlineCallbacks
    def test_not_kept_during_warmup(self):
        connection = self.connect()
        path = "/rest/block/%s.hex" % hash_to_hex(self.tip.hash)
        yield self.ask(connection, path)
        self.warmup.message = "Loading block index..."
        answer = yield self.ask(connection, path)
        self.assertIn(b"503 Service Unavailable", answer)

    @inlineCallbacks
    def test_long_answers_are_not_kept(self):
        """A block's answer can be megabytes: only answers up to MAX_KEPT_RESPONSE are kept."""
        self.patch(channel, "MAX_KEPT_RESPONSE", 400)
        rendered: List[bytes] = []
        render = self.rest.render
        self.patch(self.rest, "render", lambda request: rendered.append(request.uri) or render(request))
        connection = self.connect()
        short, long = "/rest/blockhashbyheight/1.json", "/rest/block/%s.hex" % self.tip_hash()
        for path in (short, long):
            for _ in range(3):
                answer = yield self.ask(connection, path)
            self.assertEqual(len(answer) > 400, path == long)
        self.assertEqual(rendered, [short.encode()] + [long.encode()] * 3)


class StampTests(KeptAsking, RESTTestCase):
    """An endpoint with a stamp (RESTHandlers.stamp) answers a repeat without routing its
    path again while the stamp is unchanged; a moved stamp routes it again."""

    paths = KeptRESTTests.paths

    def count_routes(self) -> List[str]:
        routed: List[str] = []
        route = self.rest.route
        self.patch(self.rest, "route", lambda path, body=b"": routed.append(path) or route(path, body))
        return routed

    @inlineCallbacks
    def test_an_unchanged_stamp_answers_without_routing(self):
        connection = self.connect()
        for path in self.paths():
            yield self.ask(connection, path)
            yield self.ask(connection, path)  # kept from an answer given at once
        routed = self.count_routes()
        for path in self.paths():
            for _ in range(3):
                yield self.ask(connection, path)
        self.assertEqual(routed, [])
        # The mempool's objects have no stamp (they read the clock): routed on each repeat.
        for _ in range(3):
            yield self.ask(connection, "/rest/mempool/info.json")
        self.assertEqual(routed, ["mempool/info.json"] * 3)

    @inlineCallbacks
    def test_a_pool_change_routes_again_once(self):
        pooled = self.builder.spend(self.builder.outputs_of(self.spend)[0])
        yield self.mempool.accept(pooled)
        connection = self.connect()
        path = "/rest/tx/%s.hex" % pooled.txid_hex
        yield self.ask(connection, path)
        kept = yield self.ask(connection, path)
        routed = self.count_routes()
        child = self.builder.spend(self.builder.outputs_of(pooled)[0])
        yield self.mempool.accept(child)
        for _ in range(3):
            self.assertEqual((yield self.ask(connection, path)), kept)
        self.assertEqual(routed, ["tx/%s.hex" % pooled.txid_hex])  # then the new stamp holds

    @inlineCallbacks
    def test_a_changed_status_is_seen_by_a_kept_chaininfo(self):
        connection = self.connect()
        yield self.ask(connection, "/rest/chaininfo.json")
        before = yield self.ask(connection, "/rest/chaininfo.json")
        self.access.warnings.set_misc("This is a test warning")
        after = yield self.ask(connection, "/rest/chaininfo.json")
        self.assertNotEqual(after, before)
        self.assertIn(b'"warnings":"This is a test warning"', after)


    @inlineCallbacks
    def test_a_stamp_that_cannot_be_taken_routes_the_usual_way(self):
        """An error taking a stamp (a store closing, say) costs the shortcut, not the
        answer: without a stamp the repeat is routed again."""
        connection = self.connect()
        path = "/rest/blockhashbyheight/1.json"
        yield self.ask(connection, path)
        expected = yield self.ask(connection, path)  # kept, with a stamp

        def broken(name: str) -> Any:
            raise RuntimeError("store closed")

        self.patch(self.rest, "answer_stamp", broken)
        routed = self.count_routes()
        for _ in range(3):
            self.assertEqual((yield self.ask(connection, path)), expected)
        self.assertEqual(routed, ["blockhashbyheight/1.json"] * 3)
        self.assertEqual(self.flushLoggedErrors(), [])


class PrunedStampTests(KeptAsking, RESTTestCase):
    """A kept block answer on a pruning node: pruning does not publish a new snapshot, so
    the stamp's prune generation is what stops the kept bytes."""

    setUp = test_rest.PrunedChainTests.setUp

    @inlineCallbacks
    def test_a_block_pruned_after_its_answer_was_kept(self):
        state = self.state
        # One more block: the oldest block file left (heights 22 to 43) may then be pruned.
        yield self.access.call(lambda chainstate: ChainBuilder(chainstate).mine(1))
        height = next(e.height for e in state.chain if e.have_data())
        path = "/rest/block/%s.hex" % hash_to_hex(state.at_height(height).hash)
        connection = self.connect()
        yield self.ask(connection, path)
        kept = yield self.ask(connection, path)
        self.assertIn(b"200 OK", kept)
        view = self.access.snapshot()
        yield self.access.call(prune_to, state.height - MIN_BLOCKS_TO_KEEP)
        self.assertFalse(state.at_height(height).have_data())
        self.assertIs(self.access.snapshot(), view)
        answer = yield self.ask(connection, path)
        self.assertIn(b"404 Not Found", answer)
        self.assertIn(b"not available (pruned data)", answer)


class FrontendKeptTests(KeptAsking, RESTTestCase):
    """A front end's kept answers: none while its chain is older than the writer's last
    commit (a repeat waits for it, as any request), and no stamp for chaininfo (it shows
    the replica's lag, which moves with the clock)."""

    paths = KeptRESTTests.paths
    waiting: Optional[Deferred] = None
    lag = 0.0

    def make_site(self, pruned=None) -> None:
        super().make_site(pruned)
        root = self.site.resource
        self.rest = FrontendREST(self.access, None, warmup=self.warmup,
                                 fresh=lambda: self.waiting, lag=lambda: self.lag)
        root.putChild(b"rest", self.rest)

    @inlineCallbacks
    def test_no_kept_answer_while_the_writer_has_a_newer_commit(self):
        connection = self.connect()
        path = "/rest/blockhashbyheight/1.json"
        yield self.ask(connection, path)
        kept = yield self.ask(connection, path)
        self.waiting = Deferred()
        protocol, transport = connection
        transport.clear()
        protocol.dataReceived(b"GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % path.encode())
        self.assertEqual(transport.value(), b"")  # waits for the newer chain
        waiting, self.waiting = self.waiting, None
        waiting.callback(None)
        self.assertEqual(DATE.sub(b"Date: -\r\n", transport.value()), kept)

    @inlineCallbacks
    def test_chaininfo_shows_the_lag_of_now(self):
        connection = self.connect()
        yield self.ask(connection, "/rest/chaininfo.json")
        yield self.ask(connection, "/rest/chaininfo.json")
        self.lag = 2.5
        answer = yield self.ask(connection, "/rest/chaininfo.json")
        self.assertIn(b'"frontend_lag":2.5', answer)
