"""The ban list: subnets, expiry, extension, bounds and banlist.json."""

from __future__ import annotations

import ipaddress
import json
import os

from twisted.trial.unittest import SynchronousTestCase

from coin.p2p.banman import (
    REASON_MANUALLY_ADDED,
    REASON_NODE_MISBEHAVING,
    BanMan,
    normalize_ip,
    parse_subnet,
    subnet_text,
)


class FakeClock:
    def __init__(self, now: float = 1_700_000_000) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class ParseTests(SynchronousTestCase):
    def test_forms(self) -> None:
        for text, expected in (
                ("10.0.0.1", "10.0.0.1/32"),
                ("10.0.0.1/24", "10.0.0.0/24"),
                ("10.0.0.1/255.255.0.0", "10.0.0.0/16"),
                ("::1", "::1/128"),
                ("2001:db8::5/32", "2001:db8::/32"),
                ("::ffff:1.2.3.4", "1.2.3.4/32"),
                ("::ffff:1.2.3.4/120", "1.2.3.0/24")):
            self.assertEqual(subnet_text(parse_subnet(text)), expected, text)

    def test_invalid(self) -> None:
        for text in ("", "x", "10.0.0.1/", "10.0.0.1/33", "10.0.0.1/x", " 10.0.0.1",
                     "example.com", "2001:db8::/ffff::", "10.0.0.256"):
            with self.assertRaises(ValueError, msg=text):
                parse_subnet(text)

    def test_normalize(self) -> None:
        self.assertEqual(str(normalize_ip("::ffff:127.0.0.1")), "127.0.0.1")
        self.assertEqual(str(normalize_ip("fe80::1%eth0")), "fe80::1")


class BanTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.clock = FakeClock()
        self.bans = BanMan(None, self.clock, default_bantime=1000)

    def test_ip_and_subnet(self) -> None:
        self.assertTrue(self.bans.ban(parse_subnet("10.0.0.0/8")))
        self.assertTrue(self.bans.is_banned("10.1.2.3"))
        self.assertTrue(self.bans.is_banned("::ffff:10.1.2.3"))
        self.assertFalse(self.bans.is_banned("11.0.0.1"))
        self.assertFalse(self.bans.is_banned("::1"))
        self.assertFalse(self.bans.is_banned("not an ip"))
        self.assertTrue(self.bans.is_subnet_banned(parse_subnet("10.0.0.0/8")))
        self.assertFalse(self.bans.is_subnet_banned(parse_subnet("10.0.0.0/16")))

    def test_times(self) -> None:
        now = int(self.clock.now)
        self.bans.ban(parse_subnet("1.1.1.1"))
        self.bans.ban(parse_subnet("2.2.2.2"), bantime=50)
        self.bans.ban(parse_subnet("3.3.3.3"), bantime=now + 7, absolute=True)
        self.bans.ban(parse_subnet("4.4.4.4"), REASON_NODE_MISBEHAVING)
        self.assertEqual(self.bans.banned(), [
            {"address": "1.1.1.1/32", "banned_until": now + 1000, "ban_created": now,
             "ban_reason": REASON_MANUALLY_ADDED},
            {"address": "2.2.2.2/32", "banned_until": now + 50, "ban_created": now,
             "ban_reason": REASON_MANUALLY_ADDED},
            {"address": "3.3.3.3/32", "banned_until": now + 7, "ban_created": now,
             "ban_reason": REASON_MANUALLY_ADDED},
            {"address": "4.4.4.4/32", "banned_until": now + 1000, "ban_created": now,
             "ban_reason": REASON_NODE_MISBEHAVING}])
        self.clock.now += 7
        self.assertFalse(self.bans.is_banned("3.3.3.3"))
        self.assertEqual([e["address"] for e in self.bans.banned()],
                         ["1.1.1.1/32", "2.2.2.2/32", "4.4.4.4/32"])
        self.clock.now += 1000
        self.assertEqual(self.bans.banned(), [])

    def test_only_extended(self) -> None:
        net = parse_subnet("1.1.1.1")
        self.assertTrue(self.bans.ban(net, bantime=500))
        self.assertFalse(self.bans.ban(net, bantime=100))
        self.assertEqual(self.bans.banned()[0]["banned_until"], int(self.clock.now) + 500)
        self.assertTrue(self.bans.ban(net, bantime=900))
        self.assertEqual(self.bans.banned()[0]["banned_until"], int(self.clock.now) + 900)

    def test_unban_and_clear(self) -> None:
        self.bans.ban(parse_subnet("1.1.1.1"))
        self.bans.ban(parse_subnet("2.0.0.0/8"))
        self.assertFalse(self.bans.unban(parse_subnet("2.0.0.1")))
        self.assertTrue(self.bans.unban(parse_subnet("1.1.1.1")))
        self.assertFalse(self.bans.unban(parse_subnet("1.1.1.1")))
        self.bans.clear()
        self.assertEqual(len(self.bans), 0)

    def test_order_is_cores(self) -> None:
        for text in ("::2", "9.0.0.0/8", "10.0.0.1", "::1", "1.2.3.4"):
            self.bans.ban(parse_subnet(text))
        # IPv4 sorts as ::ffff:a.b.c.d, after ::1 and ::2.
        self.assertEqual([e["address"] for e in self.bans.banned()],
                         ["::1/128", "::2/128", "1.2.3.4/32", "9.0.0.0/8", "10.0.0.1/32"])

    def test_bounded(self) -> None:
        bans = BanMan(None, self.clock, default_bantime=1000, max_entries=3)
        for i in range(3):
            bans.ban(parse_subnet("10.0.0.%d" % i), bantime=100 + i)
        bans.ban(parse_subnet("10.0.0.9"), bantime=500)
        self.assertEqual(len(bans), 3)
        self.assertFalse(bans.is_banned("10.0.0.0"))  # the soonest to expire made room
        self.assertTrue(bans.is_banned("10.0.0.9"))


class PersistenceTests(SynchronousTestCase):
    def test_round_trip_sweeps_expired(self) -> None:
        path = os.path.join(os.path.abspath(self.mktemp()))
        os.makedirs(path)
        path = os.path.join(path, "banlist.json")
        clock = FakeClock()
        bans = BanMan(path, clock)
        bans.ban(parse_subnet("1.2.3.0/24"), REASON_NODE_MISBEHAVING, bantime=100)
        bans.ban(parse_subnet("::1"), bantime=10)
        bans.save()
        self.assertFalse(bans.dirty)
        self.assertFalse(os.path.exists(path + ".new"))
        with open(path) as f:
            self.assertEqual(json.load(f)["version"], 1)
        clock.now += 20
        again = BanMan(path, clock)
        again.load()
        self.assertEqual(again.banned(), [
            {"address": "1.2.3.0/24", "banned_until": int(clock.now) + 80,
             "ban_created": int(clock.now) - 20, "ban_reason": REASON_NODE_MISBEHAVING}])
        self.assertTrue(again.is_subnet_banned(ipaddress.ip_network("1.2.3.0/24")))

    def test_damaged_file_is_ignored(self) -> None:
        directory = os.path.abspath(self.mktemp())
        os.makedirs(directory)
        path = os.path.join(directory, "banlist.json")
        for content in ("{not json", '{"version": 99, "banned": []}',
                        '{"version": 1, "banned": [{"address": "x"}]}'):
            with open(path, "w") as f:
                f.write(content)
            bans = BanMan(path, FakeClock())
            bans.load()
            self.assertEqual(bans.banned(), [])
            self.assertTrue(bans.dirty)
        bans.save()
        again = BanMan(path, FakeClock())
        again.load()
        self.assertEqual(again.banned(), [])
