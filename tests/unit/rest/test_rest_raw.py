"""REST .hex/.bin of blocks: the stored bytes, from the page cache on the reactor or from a
thread (each path forced), and kept per block hash."""

from __future__ import annotations

from twisted.internet.defer import inlineCallbacks
from twisted.trial.unittest import SynchronousTestCase

from coin.primitives.hashes import hash_to_hex
from coin.rest.cache import BodyCache
from tests.unit.rest.test_rest import RESTTestCase


class RawBlockPathTests(RESTTestCase):

    def count_hops(self) -> list:
        hops: list = []
        handlers = self.rest.handlers
        hop = handlers._in_thread
        self.patch(handlers, "_in_thread", lambda f: hops.append(f) or hop(f))
        return hops

    def heights(self) -> range:
        """Every third block (each request holds a connection of the site's 256 here)."""
        return range(0, self.state.height + 1, 3)

    @inlineCallbacks
    def read_all(self, fmt: str):
        """Blocks of the chain in ``fmt``, each read afresh (the body cache emptied)."""
        bodies = []
        for height in self.heights():
            self.rest.handlers._block_raw.clear()
            r = yield self.get("/rest/block/%s.%s" % (hash_to_hex(self.state.at_height(
                height).hash), fmt))
            self.assertEqual(r.status, 200, r.body)
            bodies.append(r.body)
        return bodies

    @inlineCallbacks
    def test_the_page_cache_path_and_the_thread_path_answer_the_stored_bytes(self):
        yield self.get("/rest/block/%s.bin" % self.tip_hash())  # flushes the writer's buffer
        expected = [self.state.read_block(self.state.at_height(h)).serialize()
                    for h in self.heights()]
        hops = self.count_hops()
        on_reactor = yield self.read_all("bin")
        on_reactor_hex = yield self.read_all("hex")
        self.assertEqual(hops, [])
        self.rest.handlers.read_on_reactor = False
        on_thread = yield self.read_all("bin")
        on_thread_hex = yield self.read_all("hex")
        self.assertEqual(len(hops), 2 * len(expected))
        self.assertEqual(on_reactor, expected)
        self.assertEqual(on_thread, expected)
        hexes = [raw.hex().encode() + b"\n" for raw in expected]
        self.assertEqual((on_reactor_hex, on_thread_hex), (hexes, hexes))

    @inlineCallbacks
    def test_bodies_are_kept_by_hash_across_new_tips(self):
        raw = self.spend_block.serialize()
        path = "/rest/block/%s" % self.tip_hash()
        reads = []
        real = self.state.read_raw_block
        self.patch(self.state, "read_raw_block",
                   lambda entry, wait=True: reads.append(entry) or real(entry, wait))
        for _ in range(3):
            for fmt, body in (("bin", raw), ("hex", raw.hex().encode() + b"\n")):
                r = yield self.get("%s.%s" % (path, fmt))
                self.assertEqual(r.body, body)
        self.assertEqual(len(reads), 2)  # once per format
        yield self.mine(1)  # the bytes of a block never change with the chain
        r = yield self.get(path + ".bin")
        self.assertEqual((r.body, len(reads)), (raw, 2))


class BodyCacheTests(SynchronousTestCase):
    def test_bounded_by_bytes_least_recently_used_dropped(self):
        cache = BodyCache(10)
        cache.put("a", (b"t", b"1234"))
        cache.put("b", (b"t", b"1234"))
        self.assertEqual(cache.get("a"), (b"t", b"1234"))  # now b is the oldest
        cache.put("c", (b"t", b"1234"))
        self.assertEqual((cache.get("b"), len(cache)), (None, 2))
        cache.put("huge", (b"t", b"x" * 11))  # over the limit alone: not kept
        self.assertEqual((cache.get("huge"), cache.get("a"), cache.get("c")),
                         (None, (b"t", b"1234"), (b"t", b"1234")))
