"""-maxuploadtarget's cycle accounting (Core 0.17's CConnman outbound limit) on a fake clock."""

from __future__ import annotations

from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from coin.chainparams import MAX_BLOCK_SIZE
from coin.p2p.upload import UPLOAD_TIMEFRAME, UploadTarget

START = 1_700_000_000
MIB = 1024 * 1024


class UploadTargetTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.clock = Clock()
        self.clock.advance(START)

    def test_no_target_is_cores_shape(self) -> None:
        upload = UploadTarget(0, self.clock.seconds)
        upload.record(10 ** 12)
        self.assertEqual(upload.summary(), {
            "timeframe": 86400, "target": 0, "target_reached": False,
            "serve_historical_blocks": True, "bytes_left_in_cycle": 0, "time_left_in_cycle": 0})

    def test_historical_blocks_stop_while_a_block_reserve_is_kept(self) -> None:
        """Core keeps room for one full block per 10 minutes left in the cycle."""
        target = 300 * MIB
        upload = UploadTarget(target, self.clock.seconds)
        self.assertEqual(upload.time_left(), UPLOAD_TIMEFRAME)  # no cycle yet
        threshold = target - UPLOAD_TIMEFRAME // 600 * MAX_BLOCK_SIZE
        upload.record(threshold - 1)
        self.assertFalse(upload.reached(historical=True))
        upload.record(1)
        self.assertTrue(upload.reached(historical=True))
        self.assertFalse(upload.reached())
        self.clock.advance(600)  # one block interval less to keep room for
        self.assertEqual(upload.time_left(), UPLOAD_TIMEFRAME - 600)
        self.assertFalse(upload.reached(historical=True))
        summary = upload.summary()
        self.assertEqual((summary["target"], summary["bytes_left_in_cycle"],
                          summary["serve_historical_blocks"], summary["target_reached"]),
                         (target, target - threshold, True, False))

    def test_a_tiny_target_never_serves_history_and_cycles_reset(self) -> None:
        upload = UploadTarget(MIB, self.clock.seconds)
        self.assertTrue(upload.reached(historical=True))  # the reserve alone exceeds it
        upload.record(MIB - 1)
        self.assertEqual((upload.reached(), upload.bytes_left()), (False, 1))
        upload.record(5)
        self.assertEqual((upload.reached(), upload.bytes_left()), (True, 0))
        self.clock.advance(UPLOAD_TIMEFRAME)
        self.assertEqual(upload.time_left(), 0)
        upload.record(7)  # still the old cycle: it ends after the full timeframe
        self.assertTrue(upload.reached())
        self.clock.advance(1)
        upload.record(7)  # a new cycle starts with this send
        self.assertEqual((upload.reached(), upload.bytes_left(), upload.time_left()),
                         (False, MIB - 7, UPLOAD_TIMEFRAME))
