"""Blockchain methods through a node in this process, over HTTP and through coin-cli.

Each test's node starts on a copy of one 12-block chain; tests only read it.
"""

from __future__ import annotations

import json
import threading
import time

from tests.inprocess import InProcessNode, NodeTestCase
from tests.nodeharness import MINER_ADDRESS

HEIGHT = 12


def chain(node: InProcessNode) -> None:
    """What every test reads (built once per process, each test on a copy of it)."""
    node.rpc("generatetoaddress", HEIGHT, MINER_ADDRESS)


class BlockchainIntegrationTests(NodeTestCase):
    def setUp(self) -> None:
        self.node = self.start_node(chain=chain)

    def test_cli_getblockhash_out_of_range(self) -> None:
        # cli_06: exit status 8 and the error on stderr, nothing on stdout.
        result = self.node.cli("getblockhash", "-1")
        self.assertEqual((result.returncode, result.stdout, result.stderr),
                         (8, "", "error code: -8\nerror message:\nBlock height out of range\n"))

    def test_cli_named_getblock(self) -> None:
        # cli_12: -named getblock blockhash=... verbosity=0 prints the hex alone.
        n = self.node
        blockhash = n.rpc("getblockhash", 5)
        raw = n.rpc("getblock", blockhash, 0)
        self.assertEqual(n.cli("-named", "getblock", "blockhash=" + blockhash,
                               "verbosity=0").stdout, raw + "\n")
        self.assertEqual(n.cli("-named", "getblock", "blockhash=" + blockhash,
                               "verbose=false").stdout, raw + "\n")
        printed = n.cli("-named", "getblock", "blockhash=" + blockhash, "verbosity=1").stdout
        self.assertEqual(json.loads(printed), n.rpc("getblock", blockhash))
        self.assertTrue(printed.startswith('{\n  "hash": "%s",\n  "confirmations": %d,\n'
                                           % (blockhash, HEIGHT - 5 + 1)), printed)
        self.assertEqual(n.cli("-named", "getblockhash", "height=5").stdout, blockhash + "\n")

    def test_getblockchaininfo_shape(self) -> None:
        n = self.node
        info = n.rpc("getblockchaininfo")
        self.assertEqual(list(info), ["chain", "blocks", "headers", "bestblockhash", "difficulty",
                                      "mediantime", "verificationprogress", "initialblockdownload",
                                      "chainwork", "size_on_disk", "pruned", "softforks",
                                      "bip9_softforks", "warnings"])
        self.assertEqual((info["chain"], info["blocks"], info["headers"], info["bestblockhash"]),
                         ("regtest", HEIGHT, HEIGHT, n.rpc("getbestblockhash")))
        printed = n.cli("getblockchaininfo").stdout
        self.assertTrue(printed.startswith(
            '{\n  "chain": "regtest",\n  "blocks": %d,\n  "headers": %d,\n  "bestblockhash": "%s",\n'
            '  "difficulty": 4.656542373906925e-10,\n' % (HEIGHT, HEIGHT, info["bestblockhash"])),
            printed)
        self.assertEqual(json.loads(printed), info)

    def test_cli_scalars(self) -> None:
        n = self.node
        self.assertEqual(n.cli("getblockcount").stdout, "%d\n" % HEIGHT)
        self.assertEqual(n.cli("getbestblockhash").stdout, n.rpc("getblockhash", HEIGHT) + "\n")
        self.assertEqual(n.cli("verifychain", "1", "5").stdout, "true\n")  # cli_27
        self.assertEqual(n.cli("gettxout", "00" * 32, "0").stdout, "")  # null prints nothing

    def test_malformed_hash_over_http(self) -> None:
        # rpcm_13, byte for byte.
        status, headers, body = self.node.post(
            b'{"jsonrpc": "1.0", "id": 13, "method": "getblock", "params": ["xyz"]}')
        self.assertEqual((status, headers["content-type"], body), (
            500, "application/json",
            b'{"result":null,"error":{"code":-5,"message":"Block not found"},"id":13}\n'))

    def test_waiting_call_does_not_block_the_server(self) -> None:
        n = self.node
        answers = []
        waiter = threading.Thread(target=lambda: answers.append(n.rpc("waitfornewblock", 3000)))
        started = time.monotonic()
        waiter.start()
        time.sleep(0.2)
        self.assertEqual(n.rpc("getblockcount"), HEIGHT)
        self.assertLess(time.monotonic() - started, 2.5)  # answered while the wait goes on
        waiter.join(10)
        self.assertGreaterEqual(time.monotonic() - started, 2.9)
        self.assertEqual(answers, [{"hash": n.rpc("getbestblockhash"), "height": HEIGHT}])
