"""The node's warnings, each provoked for real: unknown block versions on a real chain, a
longer invalid chain submitted to it, peers' clocks far from ours."""

from __future__ import annotations

from typing import List

from twisted.trial.unittest import SynchronousTestCase

from coin.chain.warnings import (
    CLOCK_WARNING, INVALID_CHAIN_WARNING, UNKNOWN_RULES_WARNING, UNKNOWN_VERSIONS_WARNING,
    ChainWarningMonitor, NodeWarnings,
)
from coin.consensus.versionbits import VERSIONBITS_TOP_BITS
from coin.p2p.connman import MAX_TIME_ADJUSTMENT, TimeData
from coin.primitives.block import Block
from coin.testing.chainbuilder import ChainBuilder, open_chain

#: A version bit no deployment of this chain uses.
UNKNOWN_BIT = 5
#: Regtest's signalling window and threshold (the csv deployment's).
PERIOD, THRESHOLD = 144, 108


class ChainWarningTestCase(SynchronousTestCase):
    """A fresh regtest chain with a monitor subscribed, as the node wires it."""

    def setUp(self) -> None:
        self.chain = open_chain(self.mktemp())
        self.addCleanup(self.chain.close)
        self.builder = ChainBuilder(self.chain)
        self.warnings = NodeWarnings()
        self.ibd = False
        self.chain.subscribe(ChainWarningMonitor(self.warnings, self.chain, lambda: self.ibd))

    def mine(self, count: int, version: int = 0) -> List[Block]:
        """``count`` blocks on the tip; with ``version``, that block version."""
        blocks = []
        for _ in range(count):
            block = self.builder.build(version=version or None)
            self.chain.process_block(block)
            blocks.append(block)
        return blocks


class UnknownVersionTests(ChainWarningTestCase):
    unknown = VERSIONBITS_TOP_BITS | 1 << UNKNOWN_BIT

    def test_no_warning_for_our_own_versions(self) -> None:
        self.mine(PERIOD + 10)
        self.assertEqual(self.warnings.text(), "")

    def test_most_of_the_last_100_blocks_unexpected(self) -> None:
        self.mine(50, self.unknown)
        self.mine(50)
        self.assertEqual(self.warnings.text(), "")  # 50 of 100: not more than half
        self.mine(1, self.unknown)
        self.assertEqual(self.warnings.text(), "")  # the oldest unknown one left the window
        self.mine(50, self.unknown)
        self.assertEqual(self.warnings.text(), UNKNOWN_VERSIONS_WARNING)

    def test_unknown_rules_activated(self) -> None:
        self.mine(PERIOD - 1)  # the first period ends at height 143
        self.mine(THRESHOLD, self.unknown)
        self.mine(PERIOD - THRESHOLD)
        # Locked in for the next period: logged, not shown (Core); more than half of the
        # last 100 blocks are unexpected, though.
        self.assertEqual(self.chain.height, 2 * PERIOD - 1)
        self.assertEqual(self.warnings.text(), UNKNOWN_VERSIONS_WARNING)
        self.mine(PERIOD - 1)
        self.assertEqual(self.warnings.text(), UNKNOWN_VERSIONS_WARNING)
        self.mine(1)  # the block after this tip is the first with the rules active
        self.assertEqual(self.warnings.text(), UNKNOWN_RULES_WARNING % UNKNOWN_BIT)
        self.assertEqual(self.warnings.text(),
                         "Warning: unknown new rules activated (versionbit 5)")

    def test_nothing_during_initial_block_download(self) -> None:
        self.ibd = True
        self.mine(60, self.unknown)
        self.assertEqual(self.warnings.text(), "")
        self.ibd = False
        self.mine(1)
        self.assertEqual(self.warnings.text(), UNKNOWN_VERSIONS_WARNING)


class InvalidChainTests(ChainWarningTestCase):
    def submit_invalid_chain(self, length: int) -> None:
        """``length`` blocks on the tip whose first pays itself too much (fails to connect)."""
        bad = self.builder.build(fees=1)
        parent = self.chain.accept_block(bad)
        for _ in range(length - 1):
            parent = self.chain.accept_block(self.builder.build(parent=parent))
        self.chain.activate_best_chain()

    def test_seven_blocks_more_work_than_the_tip(self) -> None:
        self.mine(10)
        self.submit_invalid_chain(7)
        self.assertEqual(self.chain.height, 10)
        self.assertEqual(self.chain.best_invalid.height, 17)
        self.assertEqual(self.warnings.text(), INVALID_CHAIN_WARNING)
        # Our chain catching up within six blocks clears it.
        self.mine(1)
        self.assertEqual(self.warnings.text(), "")

    def test_six_blocks_are_not_enough(self) -> None:
        self.mine(10)
        self.submit_invalid_chain(6)
        self.assertEqual(self.chain.best_invalid.height, 16)
        self.assertEqual(self.warnings.text(), "")

    def test_it_outranks_a_miscellaneous_warning(self) -> None:
        self.mine(3)
        self.warnings.set_misc(CLOCK_WARNING)
        self.submit_invalid_chain(8)
        self.assertEqual(self.warnings.text(), INVALID_CHAIN_WARNING)
        self.mine(2)
        self.assertEqual(self.warnings.text(), CLOCK_WARNING)

    def test_invalidating_our_own_blocks_is_no_invalid_chain(self) -> None:
        # As Core: the invalidated block counts, not the descendants it takes along.
        self.mine(10)
        self.chain.invalidate_block(self.chain.at_height(2).hash)
        self.assertEqual((self.chain.height, self.chain.best_invalid.height), (1, 2))
        self.assertEqual(self.warnings.text(), "")
        self.chain.reconsider_block(self.chain.best_invalid.hash)
        self.assertEqual((self.chain.height, self.chain.best_invalid), (10, None))


class ClockTests(SynchronousTestCase):
    far = MAX_TIME_ADJUSTMENT + 60

    def test_peers_all_far_from_our_clock(self) -> None:
        warnings = NodeWarnings()
        data = TimeData(warnings)
        for n in range(3):
            data.add("10.0.0.%d" % n, self.far)
        self.assertEqual(warnings.text(), "")  # fewer than five samples (ours included)
        data.add("10.0.0.9", self.far)
        self.assertEqual(data.offset, 0)  # too far to follow
        self.assertEqual(warnings.text(), CLOCK_WARNING)
        self.assertIn("Please check that your computer's date and time are correct!",
                      warnings.text())

    def test_one_peer_close_to_our_clock_is_enough(self) -> None:
        warnings = NodeWarnings()
        data = TimeData(warnings)
        data.add("10.0.0.1", 4 * 60)
        for n in range(2, 7):
            data.add("10.0.0.%d" % n, self.far)
        self.assertEqual(data.offset, 0)
        self.assertEqual(warnings.text(), "")

    def test_an_offset_within_the_limit_is_followed(self) -> None:
        warnings = NodeWarnings()
        data = TimeData(warnings)
        for n in range(5):
            data.add("10.0.0.%d" % n, 600)
        self.assertEqual((data.offset, warnings.text()), (600, ""))
