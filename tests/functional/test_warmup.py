"""During start-up coind answers RPC with -28 (warming up) instead of refusing connections."""

from __future__ import annotations

import json
import time

from tests.inprocess import NodeTestCase
from coin.testing.chainbuilder import ChainBuilder, open_chain

#: Enough blocks that -reindex outlasts the first request by a second or more here: in this
#: process that request follows the listener's bind within milliseconds (a coind process needed
#: 5,000 blocks to outlast its own start-up).
BLOCKS = 1000


class WarmupTests(NodeTestCase):
    def test_rpc_answers_minus_28_until_the_chain_is_loaded(self) -> None:
        datadir = self.mktemp()
        chain = open_chain(datadir + "/regtest")
        ChainBuilder(chain).mine(BLOCKS)
        tip = chain.tip.hash[::-1].hex()
        chain.close()

        node = self.start_node("-reindex", datadir=datadir, wait=False)
        warming = []
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                status, headers, body = node.post(b'{"method":"getblockcount","id":1}')
            except OSError:
                time.sleep(0.02)
                continue
            reply = json.loads(body)
            if reply["error"] is None:
                break
            warming.append((status, headers["content-type"], reply))
            time.sleep(0.05)
        node.wait_ready()
        self.assertTrue(warming, "the node never answered while warming up")
        messages = [reply["error"]["message"] for _, _, reply in warming]
        self.assertIn("Loading block index...", messages)
        self.assertEqual(messages, sorted(messages))  # "Loading b..." never after "Loading w..."
        for status, content_type, reply in warming:
            self.assertEqual((status, content_type), (500, "application/json"))
            self.assertEqual(reply["error"]["code"], -28)
            # Core's messages, in order: the chain first, then the wallets.
            self.assertIn(reply["error"]["message"], ("Loading block index...", "Loading wallet..."))
            self.assertIsNone(reply["result"])
        self.assertEqual(node.rpc("getblockcount"), BLOCKS)
        self.assertEqual(node.rpc("getbestblockhash"), tip)
        node.stop()
