"""coin.chain.verify called directly on a chain state: Core's VerifyDB check levels.

The same checks run behind the verifychain RPC (tests/unit/rpc/test_rpc_blockchain.py); here they
run without an RPC layer or a worker thread, as a GUI or a plugin would call them.
"""

from __future__ import annotations

import os
import shutil

from twisted.trial.unittest import SynchronousTestCase

from coin.chain.chainstate import ChainState
from coin.chain.verify import DEFAULT_CHECKBLOCKS, DEFAULT_CHECKLEVEL, verify_chain
from coin.primitives.coin import Coin
from coin.testing.chainbuilder import open_chain

# The blockchain RPC tests' prepared chain: block SPEND_HEIGHT spends block 1's coinbase.
from tests.unit.rpc.test_rpc_blockchain import SPEND_HEIGHT, TIP_HEIGHT, template


class VerifyChainTests(SynchronousTestCase):
    def setUp(self) -> None:
        prepared = template()
        self.spend_txid = prepared.spend_txid
        self.datadir = self.mktemp()
        shutil.copytree(prepared.datadir, self.datadir)
        self.chain: ChainState = open_chain(self.datadir)
        self.addCleanup(self.chain.close)

    def flip_byte(self, name: str, pos: int) -> None:
        with open(os.path.join(self.datadir, "blocks", name), "r+b") as f:
            f.seek(pos)
            byte = f.read(1)[0]
            f.seek(pos)
            f.write(bytes([byte ^ 0xFF]))

    def test_clean_chain_verifies_at_every_level_and_depth(self) -> None:
        self.assertEqual((DEFAULT_CHECKLEVEL, DEFAULT_CHECKBLOCKS), (3, 6))
        self.assertTrue(verify_chain(self.chain))
        for level in (-5, 0, 1, 2, 3, 4, 9):
            for depth in (-5, 0, 1, TIP_HEIGHT, 1000):
                self.assertTrue(verify_chain(self.chain, level, depth), (level, depth))

    def test_a_chain_of_genesis_alone_verifies(self) -> None:
        chain = open_chain(self.mktemp())
        self.addCleanup(chain.close)
        self.assertTrue(verify_chain(chain, 4, 0))

    def test_damaged_header_fails_level_0(self) -> None:
        tip = self.chain.tip
        self.flip_byte("blk%05d.dat" % tip.file_no, tip.data_pos + 4)
        self.assertFalse(verify_chain(self.chain, 0, 1))
        # Depth counts from the tip: the damaged block is always the first checked.
        self.assertFalse(verify_chain(self.chain, 4, 0))

    def test_damaged_transaction_fails_level_1(self) -> None:
        tip = self.chain.tip
        size = len(self.chain.read_block(tip).serialize())
        self.flip_byte("blk%05d.dat" % tip.file_no, tip.data_pos + size - 1)
        self.assertTrue(verify_chain(self.chain, 0, 1))
        self.assertFalse(verify_chain(self.chain, 1, 1))

    def test_damaged_undo_fails_level_2_within_depth(self) -> None:
        entry = self.chain.at_height(SPEND_HEIGHT)
        self.flip_byte("rev%05d.dat" % entry.undo_file, entry.undo_pos + 2)
        self.assertTrue(verify_chain(self.chain, 1, 0))
        self.assertFalse(verify_chain(self.chain, 2, 0))
        self.assertTrue(verify_chain(self.chain, 2, TIP_HEIGHT - SPEND_HEIGHT))

    def test_missing_output_fails_level_3(self) -> None:
        self.chain.store.coins.spend((self.spend_txid, 0))
        self.assertTrue(verify_chain(self.chain, 2, 0))
        self.assertFalse(verify_chain(self.chain, 3, 0))
        self.assertFalse(verify_chain(self.chain, 4, 0))
        self.assertTrue(verify_chain(self.chain, 3, TIP_HEIGHT - SPEND_HEIGHT))

    def test_stray_coin_fails_level_3(self) -> None:
        # The coinbase the spend consumed is back: undoing the spend would overwrite it.
        source = self.chain.read_block(self.chain.at_height(1)).txs[0]
        out = source.vout[0]
        self.chain.store.coins.add((source.txid, 0),
                                   Coin(out.value, out.script_pubkey, 1, True, source.version))
        self.assertTrue(verify_chain(self.chain, 3, TIP_HEIGHT - SPEND_HEIGHT))
        self.assertFalse(verify_chain(self.chain, 3, TIP_HEIGHT - SPEND_HEIGHT + 1))
