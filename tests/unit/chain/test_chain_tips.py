"""The tips of the block tree and their statuses, on a real chain state (no RPC)."""

from __future__ import annotations

from twisted.trial.unittest import SynchronousTestCase

from coin.chain.tips import ChainTip, TipStatus, chain_tips
from coin.testing.chainbuilder import ChainBuilder, open_chain


class ChainTipsTests(SynchronousTestCase):

    def setUp(self) -> None:
        self.chain = open_chain(self.mktemp())
        self.addCleanup(lambda: self.chain.close())
        self.builder = ChainBuilder(self.chain)

    def summary(self) -> list:
        return [(t.entry.height, t.entry.hash, t.branch_length, t.fork.hash, t.status)
                for t in chain_tips(self.chain)]

    def test_genesis_only(self) -> None:
        genesis = self.chain.tip
        self.assertEqual(chain_tips(self.chain), [ChainTip(genesis, genesis, TipStatus.ACTIVE)])
        self.assertEqual(chain_tips(self.chain)[0].branch_length, 0)

    def test_every_status_over_a_forked_chain(self) -> None:
        chain, builder = self.chain, self.builder
        builder.mine(10)
        main_10 = chain.tip
        # Branch A from 8 takes over (9..11), then the main chain comes back (11..13):
        # A's tip was connected once, so it is a valid fork.
        fork_a = builder.mine(3, parent=chain.at_height(8))
        self.assertEqual(chain.tip.hash, fork_a[-1].hash)
        builder.mine(3, parent=main_10)
        self.assertEqual(chain.height, 13)
        active = chain.tip
        # A block stored on 5 but never connected (less work): valid-headers.
        stored = chain.accept_block(builder.build(parent=chain.at_height(5)))
        # Two headers without data on 12, as high as the tip: headers-only.
        parent_12 = chain.at_height(12)
        headers = [builder.build(parent=parent_12, time=parent_12.time + n).header
                   for n in (1, 2)]
        for header in headers:
            chain.accept_header(header)
        # A block mined on the tip, then invalidated: the tip goes back, the block is invalid.
        [bad] = builder.mine(1)
        chain.invalidate_block(bad.hash)
        self.assertIs(chain.tip, active)

        header_rows = sorted(((13, h.hash, 1, parent_12.hash, TipStatus.HEADERS_ONLY)
                              for h in headers), key=lambda row: row[1][::-1])
        self.assertEqual(self.summary(), [
            (14, bad.hash, 1, active.hash, TipStatus.INVALID),
            # Same height: the active tip first, then by hash as hex shows it.
            (13, active.hash, 0, active.hash, TipStatus.ACTIVE),
            *header_rows,
            (11, fork_a[-1].hash, 3, chain.at_height(8).hash, TipStatus.VALID_FORK),
            (6, stored.hash, 1, chain.at_height(5).hash, TipStatus.VALID_HEADERS),
        ])

    def test_reconsidered_block_is_active_again(self) -> None:
        self.builder.mine(3)
        tip = self.chain.tip
        self.chain.invalidate_block(tip.hash)
        self.assertEqual([t.status for t in chain_tips(self.chain)],
                         [TipStatus.INVALID, TipStatus.ACTIVE])
        self.chain.reconsider_block(tip.hash)
        self.assertEqual(chain_tips(self.chain), [ChainTip(tip, tip, TipStatus.ACTIVE)])
