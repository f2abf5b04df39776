"""Block locators and getheaders runs over a real chain state."""

from __future__ import annotations

from twisted.trial.unittest import SynchronousTestCase

from coin.chain.locator import block_locator, fork_in_locator, headers_after
from coin.testing.chainbuilder import ChainBuilder, open_chain


class LocatorTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.chain = open_chain(self.mktemp())
        self.addCleanup(self.chain.close)
        self.builder = ChainBuilder(self.chain)
        self.builder.mine(40)

    def test_locator_steps(self):
        locator = block_locator(self.chain.tip)
        heights = [self.chain.lookup(h).height for h in locator]
        # Ten single steps, then doubling, always ending at genesis (Core's GetLocator).
        self.assertEqual(heights, [40, 39, 38, 37, 36, 35, 34, 33, 32, 31, 30, 29, 27, 23, 15, 0])
        self.assertEqual(block_locator(self.chain.chain[0]), [self.chain.chain[0].hash])
        self.assertEqual(block_locator(None), [])

    def test_fork_and_headers_after(self):
        side = self.builder.mine(2, parent=self.chain.at_height(30))  # a shorter branch
        side_entry = self.chain.lookup(side[-1].hash)
        self.assertFalse(self.chain.contains(side_entry))
        fork = fork_in_locator(self.chain, block_locator(side_entry))
        self.assertEqual(fork.height, 30)
        self.assertEqual(fork_in_locator(self.chain, [b"\x01" * 32]).height, 0)
        run = headers_after(self.chain, fork, b"\x00" * 32, 2000)
        self.assertEqual([e.height for e in run], list(range(31, 41)))
        stop = self.chain.at_height(33).hash
        self.assertEqual([e.height for e in headers_after(self.chain, fork, stop, 2000)],
                         [31, 32, 33])
        self.assertEqual(len(headers_after(self.chain, self.chain.chain[0], b"", 5)), 5)
