"""The address book: what enters, what is evicted, selection, peers.json."""

from __future__ import annotations

import os
import random

from twisted.trial.unittest import SynchronousTestCase

from coin.p2p.addrman import AddrMan
from coin.p2p.netaddr import NetAddress

NOW = 1_700_000_000


class FakeClock:
    def __init__(self, now: float = NOW) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def addr(ip: str, port: int = 8333, time: int = NOW - 60, services: int = 1) -> NetAddress:
    return NetAddress(services, ip, port, time)


class AddTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.clock = FakeClock()
        self.book = AddrMan(None, self.clock, max_entries=5, rng=random.Random(1))

    def test_routable_only_by_default(self) -> None:
        added = self.book.add([addr("8.8.8.8"), addr("127.0.0.1"), addr("10.0.0.1"),
                               addr("192.168.1.1"), addr("0.0.0.0"), addr("8.8.4.4", port=0)])
        self.assertEqual(added, 1)
        self.assertIn(("8.8.8.8", 8333), self.book)

    def test_unroutable_when_allowed(self) -> None:
        book = AddrMan(None, self.clock, allow_unroutable=True)
        self.assertEqual(book.add([addr("127.0.0.1"), addr("10.0.0.1"), addr("0.0.0.0")]), 2)

    def test_times(self) -> None:
        self.book.add([addr("1.1.1.1", time=NOW + 3600), addr("2.2.2.2", time=5)])
        self.assertEqual(self.book.get("1.1.1.1", 8333).time, NOW - 5 * 86400)
        self.assertEqual(self.book.get("2.2.2.2", 8333).time, NOW - 5 * 86400)
        source = addr("9.9.9.9")
        self.book.add([addr("3.3.3.3", time=NOW - 100)], source=source, penalty=7200)
        self.assertEqual(self.book.get("3.3.3.3", 8333).time, NOW - 100 - 7200)
        # A newer sighting moves the time forward, never back.
        self.book.add([addr("3.3.3.3", time=NOW - 10, services=4)])
        info = self.book.get("3.3.3.3", 8333)
        self.assertEqual((info.time, info.services), (NOW - 10, 5))

    def test_bounded_eviction(self) -> None:
        for i in range(5):
            self.book.add([addr("1.1.1.%d" % (i + 1), time=NOW - 1000 + i)])
        # Two failures on one entry: it goes first.
        self.book.attempt("1.1.1.5", 8333)
        self.book.attempt("1.1.1.5", 8333)
        self.clock.now += 120
        self.book.add([addr("2.2.2.2")])
        self.assertEqual(len(self.book), 5)
        self.assertNotIn(("1.1.1.5", 8333), self.book)
        # Otherwise the oldest.
        self.book.add([addr("3.3.3.3")])
        self.assertNotIn(("1.1.1.1", 8333), self.book)
        # A terrible entry (not seen for 30 days) goes before anything else.
        self.book.add([addr("4.4.4.4", time=NOW - 40 * 86400)])
        self.book.add([addr("5.5.5.5")])
        self.assertNotIn(("4.4.4.4", 8333), self.book)
        self.assertEqual(len(self.book), 5)


class SelectTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.clock = FakeClock()
        self.book = AddrMan(None, self.clock, rng=random.Random(2))
        self.book.add([addr("1.1.1.1"), addr("2.2.2.2")])

    def test_skips_recent_attempts_and_excluded(self) -> None:
        self.book.attempt("1.1.1.1", 8333)
        for _ in range(20):
            self.assertEqual(self.book.select(lambda info: False).ip, "2.2.2.2")
        self.assertIsNone(self.book.select(lambda info: info.ip == "2.2.2.2"))
        self.clock.now += 601
        seen = {self.book.select(lambda info: False).ip for _ in range(50)}
        self.assertEqual(seen, {"1.1.1.1", "2.2.2.2"})

    def test_good_resets_failures(self) -> None:
        self.book.attempt("1.1.1.1", 8333)
        self.assertEqual(self.book.get("1.1.1.1", 8333).attempts, 1)
        self.book.good(addr("1.1.1.1"))
        info = self.book.get("1.1.1.1", 8333)
        self.assertEqual((info.attempts, info.last_success, info.time), (0, NOW, NOW))
        self.book.good(addr("3.3.3.3"))
        self.assertIn(("3.3.3.3", 8333), self.book)
        self.book.good(addr("127.0.0.1"))  # unroutable: never stored
        self.assertEqual(len(self.book), 3)

    def test_get_addr(self) -> None:
        book = AddrMan(None, self.clock)
        book.add([addr("1.1.%d.%d" % (i // 250, i % 250 + 1)) for i in range(1000)])
        book.add([addr("9.9.9.9", time=NOW - 40 * 86400)])
        answer = book.get_addr()
        self.assertEqual(len(answer), 1001 * 23 // 100)
        self.assertNotIn("9.9.9.9", {a.ip for a in answer})
        self.assertTrue(all(a.time is not None for a in answer))
        self.assertEqual(len(book.get_addr(limit=10)), 10)


class PersistenceTests(SynchronousTestCase):
    def test_round_trip(self) -> None:
        directory = os.path.abspath(self.mktemp())
        os.makedirs(directory)
        path = os.path.join(directory, "peers.json")
        clock = FakeClock()
        book = AddrMan(path, clock)
        book.add([addr("1.1.1.1"), addr("2001:4860::8888", port=9999, services=5)])
        book.attempt("1.1.1.1", 8333)
        book.save()
        self.assertFalse(os.path.exists(path + ".new"))
        again = AddrMan(path, clock)
        again.load()
        self.assertEqual(sorted((i.ip, i.port, i.services, i.attempts) for i in again.entries()),
                         [("1.1.1.1", 8333, 1, 1), ("2001:4860::8888", 9999, 5, 0)])

    def test_damaged_file(self) -> None:
        directory = os.path.abspath(self.mktemp())
        os.makedirs(directory)
        path = os.path.join(directory, "peers.json")
        with open(path, "w") as f:
            f.write('{"version": 1, "addresses": [{"ip": "1.1.1.1"}]}')
        book = AddrMan(path, FakeClock())
        book.load()
        self.assertEqual(len(book), 0)
