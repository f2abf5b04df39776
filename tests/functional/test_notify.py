"""-blocknotify, -walletnotify and -alertnotify of a real node: the commands run through the
shell and write files the tests read; a slow command does not hold blocks back."""

from __future__ import annotations

import os
import time
from typing import List

from coin.chainparams import REGTEST
from coin.consensus.versionbits import VERSIONBITS_TOP_BITS
from coin.mining.assembler import create_coinbase, solve
from coin.primitives.block import Block, BlockHeader
from coin.primitives.merkle import merkle_root
from tests.functional.test_masternode import OP_TRUE
from tests.functional.test_p2p_base import wait_until
from tests.functional.test_zmq import start_with_conf
from tests.inprocess import InProcessNode, NodeTestCase
from tests.nodeharness import MINER_ADDRESS


def lines(path: str) -> List[str]:
    try:
        with open(path) as f:
            return f.read().splitlines()
    except FileNotFoundError:
        return []


def submit_versioned_block(node: InProcessNode, version: int) -> str:
    """A block on the tip with ``version`` (bits the node does not know), as a miner sends it."""
    tip = node.rpc("getblock", node.rpc("getbestblockhash"))
    coinbase = create_coinbase(tip["height"] + 1, OP_TRUE, 1000)
    root, _ = merkle_root([coinbase.txid])
    header = BlockHeader(version, bytes.fromhex(tip["hash"])[::-1], root, tip["time"] + 1,
                         int(tip["bits"], 16), 0)
    block = solve(Block(header, [coinbase]), REGTEST)
    assert node.rpc("submitblock", block.serialize().hex()) is None
    return block.hash[::-1].hex()


class HookTests(NodeTestCase):
    def test_blocknotify_runs_for_each_new_tip(self) -> None:
        out = os.path.abspath(self.mktemp())
        node = start_with_conf(self, ["blocknotify=echo %%s >> '%s'" % out])
        mined = node.rpc("generatetoaddress", 3, node.state)
        wait_until(lambda: len(lines(out)) == 3, "three -blocknotify lines")
        self.assertEqual(sorted(lines(out)), sorted(mined))
        # invalidateblock connects nothing: no command (Core's UpdatedBlockTip).
        node.rpc("invalidateblock", mined[-1])
        node.rpc("generatetoaddress", 0, node.state)
        time.sleep(0.3)
        self.assertEqual(len(lines(out)), 3)

    def test_slow_blocknotify_does_not_delay_blocks(self) -> None:
        out = os.path.abspath(self.mktemp())
        node = start_with_conf(self, ["blocknotify=sleep 5; echo %%s >> '%s'" % out])
        started = time.monotonic()
        mined = [node.rpc("generatetoaddress", 1, node.state)[0] for _ in range(3)]
        # Waiting for the commands would take 10 s at least (two of them before the third
        # block); a loaded machine can take a few seconds for three blocks.
        self.assertLess(time.monotonic() - started, 9)
        self.assertEqual(lines(out), [])
        wait_until(lambda: len(lines(out)) == 3, "three slow -blocknotify lines", timeout=20)
        self.assertEqual(sorted(lines(out)), sorted(mined))

    def test_walletnotify_names_the_transaction_and_the_wallet(self) -> None:
        out = os.path.abspath(self.mktemp())
        node = start_with_conf(self, ["walletnotify=echo %%s %%w >> '%s'" % out])
        node.rpc("createwallet", "it's mine")
        address = node.rpc("getnewaddress", path="/wallet/it's%20mine")
        txid = node.rpc("sendtoaddress", address, 1, path="/wallet/")
        # New to both wallets on pool entry, changed (confirmed) in both by the block.
        wait_until(lambda: len(lines(out)) == 2, "two -walletnotify lines")
        self.assertEqual(sorted(lines(out)), sorted([txid + " ", txid + " it's mine"]))
        node.rpc("generatetoaddress", 1, MINER_ADDRESS)  # a coinbase neither wallet owns
        wait_until(lambda: len(lines(out)) >= 4, "-walletnotify lines for the block")
        time.sleep(0.3)
        self.assertEqual(sorted(lines(out)), sorted([txid + " ", txid + " it's mine"] * 2))

    def test_alertnotify_on_unknown_block_versions_once(self) -> None:
        out = os.path.abspath(self.mktemp())
        node = start_with_conf(self, ["alertnotify=echo %%s >> '%s'" % out])
        for _ in range(51):
            submit_versioned_block(node, VERSIONBITS_TOP_BITS | 1 << 12)
        expected = "Warning: Unknown block versions being mined! It's possible unknown rules are in effect"
        wait_until(lambda: expected in node.rpc("getblockchaininfo")["warnings"], "the warning")
        # Core's SanitizeString: "!" and "'" are not among the safe characters.
        wait_until(lambda: lines(out), "the -alertnotify line")
        self.assertEqual(lines(out), ["Warning: Unknown block versions being mined Its possible "
                                      "unknown rules are in effect"])
        submit_versioned_block(node, VERSIONBITS_TOP_BITS | 1 << 12)
        node.rpc("generatetoaddress", 1, node.state)
        time.sleep(0.3)
        self.assertEqual(len(lines(out)), 1)  # Core's DoWarning alerts once per process
