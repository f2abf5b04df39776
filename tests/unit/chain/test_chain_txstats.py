"""getchaintxstats' window, computed by the chain package over a snapshot (no RPC)."""

from __future__ import annotations

from twisted.trial.unittest import SynchronousTestCase

from coin.chain.txstats import MONTH, BadTxStatsWindow, ChainTxStats, chain_tx_stats
from coin.chainparams import REGTEST
from coin.testing.chainbuilder import ChainBuilder, open_chain

SPACING = REGTEST.target_spacing


class ChainTxStatsTests(SynchronousTestCase):
    """101 blocks, one with two spends at 102, then three more: 108 transactions by 105."""

    def setUp(self) -> None:
        self.chain = open_chain(self.mktemp())
        self.addCleanup(lambda: self.chain.close())
        builder = ChainBuilder(self.chain)
        builder.mine(101)
        spends = [builder.spend(builder.coinbase_outputs[n]) for n in (0, 1)]
        builder.mine(1, txs=spends)
        builder.mine(3)
        self.view = self.chain.published
        self.tip = self.view.tip

    def mtp(self, height: int) -> int:
        return self.view.at_height(height).median_time_past()

    def test_windows(self) -> None:
        tip = self.tip
        self.assertEqual((tip.height, tip.chain_tx), (105, 108))
        # Four blocks ending at the tip: their coinbases and the two spends.
        four = chain_tx_stats(self.view, tip, 4, SPACING)
        self.assertEqual(four, ChainTxStats(tip, 4, 6, self.mtp(105) - self.mtp(101)))
        self.assertEqual(four.rate, 6 / four.interval)
        # The default window: a month of blocks, here cut to the height - 1.
        self.assertEqual(chain_tx_stats(self.view, tip, None, SPACING),
                         ChainTxStats(tip, 104, 106, self.mtp(105) - self.mtp(1)))
        self.assertEqual(chain_tx_stats(self.view, tip, None, MONTH // 10).block_count, 10)
        empty = chain_tx_stats(self.view, tip, 0, SPACING)
        self.assertEqual((empty.block_count, empty.tx_count, empty.rate), (0, 0, None))
        genesis = self.view.at_height(0)
        self.assertEqual(chain_tx_stats(self.view, genesis, None, SPACING).block_count, 0)

    def test_refusals(self) -> None:
        message = "Invalid block count: should be between 0 and the block's height - 1"
        for entry, nblocks in ((self.tip, -1), (self.tip, 105), (self.view.at_height(5), 5),
                               (self.view.at_height(0), 1)):
            error = self.assertRaises(BadTxStatsWindow, chain_tx_stats, self.view, entry,
                                      nblocks, SPACING)
            self.assertEqual((error.rpc_code, error.message), (-8, message))
        [fork] = ChainBuilder(self.chain).mine(1, parent=self.view.at_height(100))
        off_chain = self.chain.lookup(fork.hash)
        error = self.assertRaises(BadTxStatsWindow, chain_tx_stats, self.chain.published,
                                  off_chain, 1, SPACING)
        self.assertEqual((error.rpc_code, error.message), (-8, "Block is not in main chain"))
