"""Initial-download progress: Core's verification-progress estimate and the progress log."""

from __future__ import annotations

import re
from typing import List

from twisted.logger import formatEvent, globalLogPublisher
from twisted.trial.unittest import SynchronousTestCase

from coin.chain.ibd import ProgressLog, guess_verification_progress, progress_line
from coin.chain.index import BlockIndexEntry
from coin.chainparams import ChainTxData
from coin.testing.chainbuilder import ChainBuilder, open_chain

#: Core 0.17's main-network ChainTxData (its chainparams.cpp), as a realistic example.
CORE_MAIN_TX_DATA = ChainTxData(1532884444, 331282217, 2.4)
NONE = ChainTxData()


def chain_of(tx_counts: List[int], start_time: int = 1_000_000) -> List[BlockIndexEntry]:
    """Index entries with the given per-block transaction counts, 150 s apart."""
    entries: List[BlockIndexEntry] = []
    prev = None
    total = 0
    for height, count in enumerate(tx_counts):
        entry = BlockIndexEntry(bytes([height % 256]) * 32, height, prev, 4, b"\0" * 32,
                                start_time + 150 * height, 0x207FFFFF, 0, height + 1)
        total += count
        entry.tx_count, entry.chain_tx = count, total
        entries.append(entry)
        prev = entry
    return entries


class GuessVerificationProgressTests(SynchronousTestCase):

    def test_core_formula_before_the_recorded_point(self) -> None:
        # Core: nChainTx / (nTxCount + (now - nTime) * dTxRate) while below the recorded count.
        (tip,) = chain_of([100_000_000])
        now = CORE_MAIN_TX_DATA.time + 1000
        self.assertAlmostEqual(guess_verification_progress(CORE_MAIN_TX_DATA, tip, None, now),
                               100_000_000 / (331282217 + 1000 * 2.4))

    def test_core_formula_past_the_recorded_point(self) -> None:
        # Past the recorded count: nChainTx / (nChainTx + (now - tip time) * dTxRate).
        (tip,) = chain_of([400_000_000], start_time=CORE_MAIN_TX_DATA.time + 10_000)
        now = tip.time + 3600
        self.assertAlmostEqual(guess_verification_progress(CORE_MAIN_TX_DATA, tip, None, now),
                               400_000_000 / (400_000_000 + 3600 * 2.4))

    def test_no_tx_data_uses_the_known_headers(self) -> None:
        entries = chain_of([1] + [3] * 99)
        tip, best_header = entries[49], entries[99]
        # 50 headers above the tip, at the tip's average of the sampled blocks (3 a block).
        expected = tip.chain_tx / (tip.chain_tx + 50 * 3)
        self.assertAlmostEqual(guess_verification_progress(NONE, tip, best_header, 0), expected)
        self.assertEqual(guess_verification_progress(NONE, best_header, best_header, 0), 1.0)

    def test_the_larger_estimate_wins(self) -> None:
        entries = chain_of([1] * 10, start_time=CORE_MAIN_TX_DATA.time)
        tip = entries[4]
        with_headers = guess_verification_progress(NONE, tip, entries[9], tip.time)
        self.assertAlmostEqual(with_headers, 5 / 10)
        # Core's extrapolation from the recorded history is far larger: it decides.
        self.assertLess(guess_verification_progress(CORE_MAIN_TX_DATA, tip, entries[9], tip.time),
                        1e-6)

    def test_unknown_tip(self) -> None:
        tip = chain_of([0])[0]
        self.assertEqual(guess_verification_progress(NONE, tip, None, 0), 0.0)
        self.assertEqual(guess_verification_progress(NONE, None, None, 0), 0.0)


class ProgressLineTests(SynchronousTestCase):

    def test_core_update_tip_fields_then_rates_and_eta(self) -> None:
        tip = chain_of([1] * 11)[10]
        tip.chainwork = 1 << 40
        line = progress_line(tip, 0.25, 3 << 20, 1234, 12.5, 100.0)
        self.assertEqual(line, (
            "UpdateTip: new best=%s height=10 version=0x00000004 log2_work=40 tx=11 "
            "date='1970-01-12T14:11:40Z' progress=0.250000 cache=3.0MiB(1234txo) "
            "blocks/s=12.5 tx/s=100.0 eta=0:00:00" % tip.hash[::-1].hex()))
        # 33 transactions to go at 100 tx/s: under a second; at 0.1 tx/s: 5.5 minutes.
        self.assertTrue(line.endswith("eta=0:00:00"))
        self.assertTrue(progress_line(tip, 0.25, 0, 0, 0.0, 0.1).endswith("eta=0:05:30"))
        self.assertTrue(progress_line(tip, 0.25, 0, 0, 0.0, 0.0).endswith("eta=unknown"))
        self.assertTrue(progress_line(tip, 1.0, 0, 0, 0.0, 0.0).endswith("eta=0:00:00"))


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class ProgressLogTests(SynchronousTestCase):
    """The log on a real chain state, with a fake monotonic clock."""

    def setUp(self) -> None:
        self.chain = open_chain(self.mktemp())
        self.addCleanup(self.chain.close)
        self.clock = FakeTime()
        self.chain.progress = ProgressLog(10.0, monotonic=self.clock)
        self.lines: List[str] = []

        def observe(event: dict) -> None:
            text = formatEvent(event)
            if text.startswith("UpdateTip:"):
                self.lines.append(text)

        globalLogPublisher.addObserver(observe)
        self.addCleanup(globalLogPublisher.removeObserver, observe)
        self.builder = ChainBuilder(self.chain)

    def mine_for(self, blocks: int, seconds_each: float) -> None:
        for _ in range(blocks):
            self.clock.now += seconds_each
            self.builder.mine(1)

    def test_a_line_every_interval_while_in_initial_download(self) -> None:
        # A fresh regtest chain (genesis from 2011, block times after it) is in IBD.
        self.mine_for(1, 1.0)  # starts the measurement
        self.mine_for(25, 1.0)  # lines at 10 and 20 seconds
        self.assertEqual(len(self.lines), 2)
        fields = dict(re.findall(r"(\S+)=(\S+)", self.lines[1]))
        self.assertEqual(fields["height"], "21")
        self.assertEqual((fields["blocks/s"], fields["tx/s"]), ("1.0", "1.0"))
        self.assertEqual(fields["progress"], "1.000000")  # no headers above the tip
        self.assertRegex(fields["cache"], r"^\d+\.\dMiB\(\d+txo\)$")

    def test_no_line_out_of_initial_download(self) -> None:
        self.chain.clock.set_mock_time(int(self.chain.tip.time))  # the tip is recent
        self.builder._start_time = int(self.chain.tip.time)
        self.mine_for(30, 1.0)
        self.assertEqual(self.lines, [])
