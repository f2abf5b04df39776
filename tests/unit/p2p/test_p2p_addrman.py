"""The address book: what enters, what is evicted, selection, peers.json."""

from __future__ import annotations

import json
import os
import random
import time

from twisted.trial.unittest import SynchronousTestCase

from coin.p2p.addrman import BUCKET_SIZE, NEW_BUCKETS_PER_SOURCE_GROUP, AddrInfo, AddrMan
from coin.p2p.netaddr import NetAddress

NOW = 1_700_000_000


class FakeClock:
    def __init__(self, now: float = NOW) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def addr(ip: str, port: int = 8333, time: int = NOW - 60, services: int = 1) -> NetAddress:
    return NetAddress(services, ip, port, time)


def spread(n: int, time: int = NOW - 60) -> NetAddress:
    """The n-th address of many /16 groups."""
    return addr("%d.%d.%d.1" % (11 + n // 65536, n // 256 % 256, n % 256), time=time)


def tiny(clock: FakeClock, **kwargs: object) -> AddrMan:
    """A book of one slot per table: every address collides with every other."""
    return AddrMan(None, clock, rng=random.Random(1), key=bytes(32), new_buckets=1,
                   tried_buckets=1, bucket_size=1, **kwargs)


class AddTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.clock = FakeClock()
        self.book = AddrMan(None, self.clock, rng=random.Random(1), key=bytes(32))

    def test_routable_only(self) -> None:
        # Loopback and private addresses never enter the book (on regtest neither): a node
        # must not dial addresses that nobody asked it to.
        added = self.book.add([addr("8.8.8.8"), addr("127.0.0.1"), addr("127.0.0.2"),
                               addr("10.0.0.1"), addr("192.168.1.1"), addr("0.0.0.0"),
                               addr("8.8.4.4", port=0), addr("::1")])
        self.assertEqual(added, 1)
        self.assertEqual([(e.ip, e.port) for e in self.book.entries()], [("8.8.8.8", 8333)])

    def test_allowprivatenet_keeps_rfc1918_only(self) -> None:
        # Dash's -allowprivatenet: private ranges too, still no loopback or link-local.
        self.book.allow_private = True
        added = self.book.add([addr("10.0.0.1"), addr("192.168.1.1"), addr("172.16.0.1"),
                               addr("127.0.0.1"), addr("169.254.1.1"), addr("10.0.0.2", port=0),
                               addr("8.8.8.8")])
        self.assertEqual(added, 4)
        self.assertEqual(sorted(e.ip for e in self.book.entries()),
                         ["10.0.0.1", "172.16.0.1", "192.168.1.1", "8.8.8.8"])

    def test_times(self) -> None:
        self.book.add([addr("1.1.1.1", time=NOW + 3600), addr("2.2.2.2", time=5)])
        self.assertEqual(self.book.get("1.1.1.1", 8333).time, NOW - 5 * 86400)
        self.assertEqual(self.book.get("2.2.2.2", 8333).time, NOW - 5 * 86400)
        source = addr("9.9.9.9")
        self.book.add([addr("3.3.3.3", time=NOW - 100)], source=source, penalty=7200)
        self.assertEqual(self.book.get("3.3.3.3", 8333).time, NOW - 100 - 7200)
        # A newer sighting moves the time forward, never back (by more than an hour).
        self.book.add([addr("3.3.3.3", time=NOW - 10, services=4)])
        info = self.book.get("3.3.3.3", 8333)
        self.assertEqual((info.time, info.services), (NOW - 10, 5))
        self.book.add([addr("3.3.3.3", time=NOW)])
        self.assertEqual(info.time, NOW - 10)

    def test_collision_evicts_only_a_terrible_occupant(self) -> None:
        book = tiny(self.clock)
        self.assertEqual(book.add([addr("1.1.1.1")]), 1)
        # The slot is taken by a good entry: the newcomer is dropped.
        self.assertEqual(book.add([addr("2.2.2.2")]), 0)
        self.assertEqual([i.ip for i in book.entries()], ["1.1.1.1"])
        # Three failures and never a success: terrible, so it gives way.
        for _ in range(3):
            book.attempt("1.1.1.1", 8333)
        self.clock.now += 61
        self.assertEqual(book.add([addr("2.2.2.2", time=int(self.clock.now))]), 1)
        self.assertEqual([i.ip for i in book.entries()], ["2.2.2.2"])
        # Not seen for 30 days: terrible too.
        self.clock.now += 31 * 86400
        self.assertEqual(book.add([addr("3.3.3.3", time=int(self.clock.now))]), 1)
        self.assertEqual([i.ip for i in book.entries()], ["3.3.3.3"])

    def test_one_source_group_reaches_at_most_64_buckets(self) -> None:
        source = addr("9.9.9.9")
        self.book.add([spread(n) for n in range(20000)], source=source)
        buckets = {info.slot // BUCKET_SIZE for info in self.book.entries()}
        self.assertLessEqual(len(buckets), NEW_BUCKETS_PER_SOURCE_GROUP)
        self.assertLessEqual(len(self.book), NEW_BUCKETS_PER_SOURCE_GROUP * BUCKET_SIZE)
        # Another source group lands elsewhere.
        self.book.add([spread(n) for n in range(20000, 21000)], source=addr("7.7.7.7"))
        self.assertGreater(len({i.slot // BUCKET_SIZE for i in self.book.entries()}),
                           len(buckets))

    def test_same_key_same_slots_other_key_other_slots(self) -> None:
        other = AddrMan(None, self.clock, key=bytes(32))
        third = AddrMan(None, self.clock, key=b"\x01" * 32)
        addresses = [spread(n) for n in range(50)]
        for book in (self.book, other, third):
            book.add(addresses, source=addr("9.9.9.9"))

        def slots(book: AddrMan) -> dict:
            return {i.key: i.slot for i in book.entries()}

        self.assertEqual(slots(self.book), slots(other))
        self.assertNotEqual(slots(self.book), slots(third))


class ConstantTimeTests(SynchronousTestCase):
    """Inserting into a big book costs what it costs in a small one (issue #11, F2)."""

    def filled(self, size: int) -> AddrMan:
        """A book of ``size`` addresses from many sources."""
        book = AddrMan(None, FakeClock(), key=bytes(32), rng=random.Random(1))
        n = 0
        while len(book) < size:
            book.add([spread(i) for i in range(n, n + 100)], source=spread(n + 3_000_000))
            n += 100
        for info in book.entries()[size:]:
            book.remove(*info.key)
        return book

    def test_insert_judges_at_most_one_occupant(self) -> None:
        book = self.filled(20000)
        judged = []
        original = AddrInfo.is_terrible

        def counting(info: AddrInfo, now: int) -> bool:
            judged.append(info.key)
            return original(info, now)

        self.patch(AddrInfo, "is_terrible", counting)
        batch = [spread(n) for n in range(5_000_000, 5_001_000)]
        book.add(batch, source=addr("9.9.9.9"))
        self.assertLessEqual(len(judged), len(batch))

    def test_insert_time_flat_from_100_to_20000(self) -> None:
        def cost(book: AddrMan) -> float:
            """The fastest of three 1,000-address batches."""
            costs = []
            for run in range(3):
                first = 6_000_000 + 1000 * run
                batch = [spread(n) for n in range(first, first + 1000)]
                # CPU time, not wall time: on a loaded machine another process can take
                # the core in the middle of a batch.
                start = time.process_time()
                book.add(batch, source=spread(7_000_000 + run))
                costs.append(time.process_time() - start)
            return min(costs)

        small, big = cost(self.filled(100)), cost(self.filled(20000))
        # The old book scanned every entry per insert once full (~2 s per message).
        self.assertLess(big, small * 4 + 0.01)


class TriedTests(SynchronousTestCase):
    def test_good_moves_to_tried_and_collision_returns_occupant_to_new(self) -> None:
        clock = FakeClock()
        book = tiny(clock)
        book.add([addr("1.1.1.1")])
        book.good(addr("1.1.1.1"))
        info = book.get("1.1.1.1", 8333)
        self.assertTrue(info.in_tried)
        self.assertEqual((book.new_count, book.tried_count), (0, 1))
        # The tried slot is taken: its occupant goes back to the new table.
        book.good(addr("2.2.2.2"))
        self.assertTrue(book.get("2.2.2.2", 8333).in_tried)
        self.assertFalse(book.get("1.1.1.1", 8333).in_tried)
        self.assertEqual((book.new_count, book.tried_count), (1, 1))
        # And is chosen from there like any other.
        clock.now += 601
        self.assertEqual(book.select(lambda i: i.ip == "2.2.2.2").ip, "1.1.1.1")


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
        book = AddrMan(None, self.clock, key=bytes(32))
        book.add([spread(i) for i in range(1000)])
        book.add([addr("9.9.9.9", time=NOW - 40 * 86400)])
        self.assertIn(("9.9.9.9", 8333), book)
        answer = book.get_addr()
        self.assertEqual(len(answer), len(book) * 23 // 100)
        self.assertNotIn("9.9.9.9", {a.ip for a in answer})
        self.assertTrue(all(a.time is not None for a in answer))
        self.assertEqual(len(book.get_addr(limit=10)), 10)


class PersistenceTests(SynchronousTestCase):
    def path(self) -> str:
        directory = os.path.abspath(self.mktemp())
        os.makedirs(directory)
        return os.path.join(directory, "peers.json")

    def test_round_trip_keeps_key_tables_and_slots(self) -> None:
        path = self.path()
        clock = FakeClock()
        book = AddrMan(path, clock)
        book.add([addr("1.1.1.1"), addr("2001:4860::8888", port=9999, services=5)])
        book.add([spread(n) for n in range(300)], source=addr("9.9.9.9"))
        book.attempt("1.1.1.1", 8333)
        book.good(addr("8.8.8.8"))
        book.save()
        self.assertFalse(os.path.exists(path + ".new"))
        again = AddrMan(path, clock)
        again.load()
        self.assertEqual(again.key, book.key)
        self.assertFalse(again.dirty)

        def state(b: AddrMan) -> list:
            return sorted((i.ip, i.port, i.services, i.attempts, i.source, i.in_tried, i.slot)
                          for i in b.entries())

        self.assertEqual(state(again), state(book))
        self.assertEqual((again.new_count, again.tried_count), (book.new_count, 1))

    def test_version_1_file_is_rebucketed(self) -> None:
        path = self.path()
        old = {"version": 1, "addresses": [
            {"ip": "1.1.1.1", "port": 8333, "services": 1, "time": NOW - 60, "last_try": 0,
             "last_success": 0, "attempts": 2},
            {"ip": "2.2.2.2", "port": 8333, "services": 1, "time": NOW - 60, "last_try": 0,
             "last_success": 0, "attempts": 0},
            # Earlier builds took loopback addresses on regtest: dropped when read.
            {"ip": "127.0.0.1", "port": 8333, "services": 1, "time": NOW - 60, "last_try": 0,
             "last_success": 0, "attempts": 0}]}
        with open(path, "w") as f:
            json.dump(old, f)
        book = AddrMan(path, FakeClock())
        book.load()
        self.assertEqual(sorted((i.ip, i.attempts, i.in_tried) for i in book.entries()),
                         [("1.1.1.1", 2, False), ("2.2.2.2", 0, False)])
        self.assertTrue(book.dirty)  # written back in the new format
        book.save()
        with open(path) as f:
            self.assertEqual(json.load(f)["version"], 2)

    def test_damaged_file(self) -> None:
        for text in ('{"version": 1, "addresses": [{"ip": "1.1.1.1"}]}',
                     '{"version": 2, "key": "00", "addresses": []}', '{"version": 9}', "[}"):
            path = self.path()
            with open(path, "w") as f:
                f.write(text)
            book = AddrMan(path, FakeClock())
            book.load()
            self.assertEqual(len(book), 0)
            self.assertTrue(book.dirty)
