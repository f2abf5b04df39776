"""coin-cli -netinfo and -generate (Core 0.21's conveniences) through the real client."""

from __future__ import annotations

import json
import tempfile
import time
from typing import Tuple

from twisted.trial.unittest import TestCase

from tests.inprocess import NodeTestCase
from tests.nodeharness import NodeProcess, shared_fixture


def _connected_pair() -> Tuple[NodeProcess, NodeProcess]:
    """A listening node and a peer connected to it."""
    node = NodeProcess.start(tempfile.mkdtemp(prefix="coin-netinfo-"), ["-connect=0", "-listen=1"])
    peer = NodeProcess.start(tempfile.mkdtemp(prefix="coin-netinfo-"), [
        "-listen=0", "-connect=127.0.0.1:%d" % node.p2p_port])
    deadline = time.monotonic() + 30
    while not node.rpc("getpeerinfo"):
        if time.monotonic() > deadline:
            raise AssertionError("the peer did not connect")
        time.sleep(0.05)
    return node, peer


class NetinfoTests(TestCase):
    """A listening node and a peer connecting to it: each side's dashboard (the tests only
    read, so they share one pair)."""

    def setUp(self) -> None:
        self.node, self.peer = shared_fixture(NetinfoTests, _connected_pair,
                                              lambda pair: [node.stop() for node in pair])

    def test_counts(self) -> None:
        info = self.node.rpc("getnetworkinfo")
        result = self.node.cli("-netinfo")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout,
                         "Coin Core v0.1.0 regtest - %d%s\n\n"
                         "        ipv4    ipv6   onion   total  block-relay\n"
                         "in         1       0       0       1       0\n"
                         "out        0       0       0       0       0\n"
                         "total      1       0       0       1       0\n"
                         "\nLocal addresses: n/a\n\n"
                         % (info["protocolversion"], info["subversion"]))
        result = self.peer.cli("-netinfo")
        self.assertIn("in         0       0       0       0       0\n"
                      "out        1       0       0       1       0\n", result.stdout)

    def test_level_4_lists_peers_with_address_and_version(self) -> None:
        (peer,) = self.node.rpc("getpeerinfo")
        result = self.node.cli("-netinfo", "4")
        self.assertEqual(result.returncode, 0, result.stderr)
        lines = result.stdout.splitlines()
        self.assertEqual(lines[2], "Peer connections sorted by direction and min ping")
        self.assertTrue(lines[3].startswith("<-> relay   net  mping   ping send recv  txn  blk  "
                                            "age id address"), lines[3])
        row = lines[4].split()
        self.assertEqual(row[:3], ["in", "full", "ipv4"])
        self.assertEqual(row[-2:], [peer["addr"], "%d%s" % (peer["version"], peer["subver"])])
        self.assertIn("in         1       0       0       1       0", result.stdout)

    def test_errors_are_reported(self) -> None:
        result = self.node.cli("-netinfo", "-rpcpassword=wrong")
        self.assertEqual((result.returncode, result.stderr),
                         (1, "error: Authorization failed: Incorrect rpcuser or rpcpassword\n"))


class GenerateTests(NodeTestCase):
    """Against a node of each test's own (they mine): in this process, coin-cli as a user
    runs it."""

    def setUp(self) -> None:
        self.node = self.start_node("-connect=0", "-listen=0")

    def test_one_block_to_a_new_wallet_address(self) -> None:
        result = self.node.cli("-generate")
        self.assertEqual(result.returncode, 0, result.stderr)
        out = json.loads(result.stdout)
        self.assertEqual(sorted(out), ["address", "blocks"])
        self.assertEqual(out["blocks"], [self.node.rpc("getbestblockhash")])
        self.assertTrue(self.node.rpc("getaddressinfo", out["address"])["ismine"])
        coinbase = self.node.rpc("getblock", out["blocks"][0], 2)["tx"][0]
        self.assertEqual(coinbase["vout"][0]["scriptPubKey"]["addresses"], [out["address"]])

    def test_nblocks_and_maxtries(self) -> None:
        result = self.node.cli("-generate", "3", "1000000")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(len(json.loads(result.stdout)["blocks"]), 3)
        self.assertEqual(self.node.rpc("getblockcount"), 3)

    def test_bad_arguments(self) -> None:
        result = self.node.cli("-generate", "0")
        self.assertEqual((result.returncode, result.stderr), (1, (
            "error: the first argument (number of blocks to generate, default: 1) must be an "
            "integer value greater than zero\n")))
        result = self.node.cli("-generate", "1", "2", "3")
        self.assertEqual((result.returncode, result.stderr),
                         (1, "error: too many arguments (maximum 2 for nblocks and maxtries)\n"))
        self.assertEqual(self.node.rpc("getblockcount"), 0)

    def test_without_wallet(self) -> None:
        """getnewaddress's error is shown, as Core shows it, and nothing is mined."""
        node = self.node.restart("-connect=0", "-listen=0", "-disablewallet")
        result = node.cli("-generate")
        self.assertEqual((result.returncode, result.stderr),
                         (89, "error code: -32601\nerror message:\nMethod not found (wallet method is "
                             "disabled because no wallet is loaded)\n"))
        self.assertEqual(node.rpc("getblockcount"), 0)
