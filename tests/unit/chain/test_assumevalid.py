"""-assumevalid: Core's fScriptChecks, on a chain of headers buried two weeks deep."""

from __future__ import annotations


from twisted.trial.unittest import SynchronousTestCase

from coin.chain.chainstate import ASSUME_VALID_BURIAL
from coin.chain.index import BlockIndexEntry
from coin.chain.scriptcheck import assume_valid_from_option
from coin.chainparams import REGTEST
from coin.consensus.errors import ValidationError
from coin.primitives.block import Block
from coin.testing.chainbuilder import ChainBuilder, open_chain
from tests.unit.chain.test_script_workers import forge

#: Headers past a block for its scripts to be skippable (regtest: 150 s a block).
BURIAL_BLOCKS = ASSUME_VALID_BURIAL // REGTEST.target_spacing


class AssumeValidOptionTest(SynchronousTestCase):
    """-assumevalid's value as Core's uint256S reads it."""

    def test_values(self) -> None:
        block_hash = bytes(range(32))
        hex_hash = block_hash[::-1].hex()
        self.assertEqual(assume_valid_from_option(hex_hash, None), block_hash)
        self.assertEqual(assume_valid_from_option("0x" + hex_hash.upper(), None), block_hash)
        self.assertEqual(assume_valid_from_option("ff", None), b"\xff" + bytes(31))
        self.assertEqual(assume_valid_from_option(None, block_hash), block_hash)
        for none in ("0", "", "00" * 32, "zz"):
            self.assertIsNone(assume_valid_from_option(none, block_hash), none)


class AssumeValidTest(SynchronousTestCase):
    """Blocks 102 (forged signature) and 103 on the headers of a chain buried two weeks
    deep past 103; block 104 on it has a forged signature too."""

    def setUp(self) -> None:
        self.chain = open_chain(self.mktemp())
        self.addCleanup(self.chain.close)
        self.builder = ChainBuilder(self.chain)
        self.builder.mine(101)
        self.fork_point = self.chain.tip
        spendable = self.builder.coinbase_outputs[:3]
        self.bad = self._on_headers([forge(self.builder.spend(spendable[0]), 0)])
        self.assumed = self._on_headers([self.builder.spend(spendable[1])])
        self.after = self._on_headers([forge(self.builder.spend(spendable[2]), 0)])
        self.entry(self.after)

    def _on_headers(self, txs, parent: BlockIndexEntry = None) -> Block:
        """A block on the header tip (or ``parent``), its header accepted, data not."""
        parent = parent or self.chain.best_header
        block = self.builder.build(txs=txs, parent=parent)
        self.chain.accept_header(block.header)
        return block

    def entry(self, block: Block) -> BlockIndexEntry:
        return self.chain.lookup(block.hash)

    def bury(self, count: int) -> None:
        tip = self.chain.best_header
        for _ in range(count):
            tip = self.chain.accept_header(self.builder.build(parent=tip).header)

    def assume(self, block: Block) -> None:
        self.chain.assume_valid = block.hash

    def assertScriptRejected(self, block: Block) -> None:
        err = self.assertRaises(ValidationError, self.chain.process_block, block)
        self.assertTrue(err.reason.startswith("mandatory-script-verify-flag-failed ("),
                        err.reason)

    def test_buried_ancestors_are_not_script_checked(self) -> None:
        # One block more than two weeks of work past block 102 (see the next test).
        self.bury(BURIAL_BLOCKS - 1)
        self.assume(self.assumed)
        # Core accepts an invalid signature below the assumed-valid block.
        self.chain.process_block(self.bad)
        self.chain.process_block(self.assumed)
        self.assertEqual(self.chain.tip.hash, self.assumed.hash)
        # Above it, every script is checked again.
        self.assertScriptRejected(self.after)
        self.assertEqual(self.chain.tip.hash, self.assumed.hash)

    def test_zero_checks_everything(self) -> None:
        self.bury(BURIAL_BLOCKS + 1)
        self.chain.assume_valid = assume_valid_from_option("0", self.assumed.hash)
        self.assertScriptRejected(self.bad)

    def test_not_buried_two_weeks_is_checked(self) -> None:
        # Exactly two weeks of work past block 102: Core still checks (<=).
        self.bury(BURIAL_BLOCKS - 2)
        self.assume(self.assumed)
        self.assertScriptRejected(self.bad)

    def test_other_branch_is_checked(self) -> None:
        self.bury(BURIAL_BLOCKS + 1)
        self.assume(self.assumed)
        # A block at 102 on another branch: not an ancestor of the assumed block.
        other = self.builder.build(txs=[forge(self.builder.spend(
            self.builder.coinbase_outputs[0], fee=20_000), 0)], parent=self.fork_point)
        self.assertScriptRejected(other)
        self.assertEqual(self.chain.tip, self.fork_point)

    def test_best_header_off_the_assumed_chain_is_checked(self) -> None:
        # A longer header chain from 101 that does not contain the assumed block.
        self.assume(self.assumed)
        tip = self.fork_point
        for _ in range(BURIAL_BLOCKS + 5):
            tip = self.chain.accept_header(self.builder.build(parent=tip).header)
        self.assertIs(self.chain.best_header, tip)
        self.assertScriptRejected(self.bad)
