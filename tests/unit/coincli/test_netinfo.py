"""coin-cli -netinfo's report (Core 0.21's layout) and -generate's arguments, without a node."""

from __future__ import annotations

from twisted.trial.unittest import SynchronousTestCase

from coincli.client import generate_args, generated
from coincli.errors import CliError
from coincli.jsonfmt import RawNumber
from coincli.netinfo import parse_level, process, report

NOW = 1_700_000_000
NETWORKINFO = {"protocolversion": RawNumber("70208"), "subversion": "/Coin:0.1.0/",
               "localaddresses": []}


def peer(peer_id: int, addr: str, inbound: bool, relay: bool = True, **extra: object) -> dict:
    fields = {"id": RawNumber(str(peer_id)), "addr": addr, "inbound": inbound, "relaytxes": relay,
              "lastsend": RawNumber(str(NOW - 3)), "lastrecv": RawNumber(str(NOW - 4)),
              "conntime": RawNumber(str(NOW - 600)), "minping": RawNumber("0.0123"),
              "pingtime": RawNumber("0.02"), "version": RawNumber("70208"),
              "subver": "/Coin:0.1.0/"}
    fields.update(extra)
    return fields


class ReportTests(SynchronousTestCase):

    def test_counts_by_network_direction_and_block_relay(self) -> None:
        peers = [peer(1, "10.0.0.1:1", True), peer(2, "[2001:db8::1]:2", True, relay=False),
                 peer(3, "abcdefghijklmnop.onion:9999", False), peer(4, "10.0.0.2:3", False,
                                                                     relay=False),
                 peer(5, "10.0.0.3:4", False)]
        text = report(peers, NETWORKINFO, 0, "main", NOW)
        self.assertEqual(text, "Coin Core v0.1.0 - 70208/Coin:0.1.0/\n\n"
                               "        ipv4    ipv6   onion   total  block-relay\n"
                               "in         1       1       0       2       1\n"
                               "out        2       0       1       3       1\n"
                               "total      3       1       1       5       2\n"
                               "\nLocal addresses: n/a\n")

    def test_local_addresses(self) -> None:
        info = dict(NETWORKINFO, localaddresses=[
            {"address": "192.0.2.7", "port": RawNumber("9999"), "score": RawNumber("4")},
            {"address": "2001:db8::7", "port": RawNumber("9999"), "score": RawNumber("1")}])
        text = report([], info, 0, "test", NOW)
        self.assertTrue(text.startswith("Coin Core v0.1.0 testnet - 70208"), text)
        self.assertTrue(text.endswith(
            "\nLocal addresses\n192.0.2.7       port   9999    score      4"
            "\n2001:db8::7     port   9999    score      1"), text)

    def test_levels(self) -> None:
        peers = [peer(12, "10.0.0.2:3", False), peer(7, "10.0.0.1:1", True, minping=None)]
        lines = report(peers, NETWORKINFO, 4, "regtest", NOW).splitlines()
        self.assertEqual(lines[2:6], [
            "Peer connections sorted by direction and min ping",
            "<-> relay   net  mping   ping send recv  txn  blk  age id address    version",
            " in  full  ipv4            20    3    4             10  7 10.0.0.1:1 "
            "70208/Coin:0.1.0/",
            "out  full  ipv4     12     20    3    4             10 12 10.0.0.2:3 "
            "70208/Coin:0.1.0/"])
        self.assertEqual(lines[6], "                    ms     ms  sec  sec  min  min  min")
        listing = report(peers, NETWORKINFO, 1, "regtest", NOW).splitlines()
        self.assertEqual(listing[3], "<-> relay   net  mping   ping send recv  txn  blk  age id ")
        # Beyond 4 (Core: 5-255) and no peers: counts only.
        self.assertNotIn("Peer connections", report(peers, NETWORKINFO, 5, "main", NOW))
        self.assertNotIn("Peer connections", report([], NETWORKINFO, 4, "main", NOW))

    def test_level_argument(self) -> None:
        self.assertEqual([parse_level(a) for a in ([], ["3"], ["255"], ["256"], ["x"], ["-1"])],
                         [0, 3, 255, 0, 0, 0])

    def test_errors_pass_through(self) -> None:
        error = {"result": None, "error": {"code": -1, "message": "no"}, "id": 0}
        self.assertIs(process(error, {"result": NETWORKINFO, "error": None}, 0, "main", NOW),
                      error)


class GenerateTests(SynchronousTestCase):

    def test_arguments(self) -> None:
        self.assertEqual(generate_args("addr", []), ["generatetoaddress", "1", "addr"])
        self.assertEqual(generate_args("addr", ["4", "1000"]),
                         ["generatetoaddress", "4", "addr", "1000"])
        self.assertEqual(str(self.assertRaises(CliError, generate_args, "a", ["1", "2", "3"])),
                         "too many arguments (maximum 2 for nblocks and maxtries)")
        self.assertEqual(str(self.assertRaises(CliError, generate_args, "a", ["0"])),
                         "the first argument (number of blocks to generate, default: 1) must be "
                         "an integer value greater than zero")

    def test_output(self) -> None:
        self.assertEqual(generated("addr", {"result": ["h"], "error": None, "id": 1})["result"],
                         {"address": "addr", "blocks": ["h"]})
        failed = {"result": None, "error": {"code": -32601}, "id": 1}
        self.assertIs(generated("addr", failed), failed)
