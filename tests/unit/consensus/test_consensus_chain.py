"""Consensus rules that need chain context, on in-memory BlockIndexEntry chains.

Covers Dark Gravity Wave, BIP68 sequence locks, version-majority soft forks
(BIP34/66/65), the contextual header and block checks, and BIP9 versionbits.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import List, Optional

from twisted.trial.unittest import SynchronousTestCase

from coin.chain.index import BlockIndexEntry
from coin.chainparams import COIN, MAIN, REGTEST, TEST
from coin.consensus.errors import REJECT_OBSOLETE, ValidationError
from coin.consensus.pow import compact_to_target, get_next_work_required, target_to_compact
from coin.consensus.softforks import (
    bip34_in_force,
    check_block_contextual,
    check_header_contextual,
    is_super_majority,
    locktime_flags,
    majority_status,
    script_flags_for_block,
)
from coin.consensus.tx_check import (
    LOCKTIME_MEDIAN_TIME_PAST,
    LOCKTIME_VERIFY_SEQUENCE,
    SEQUENCE_LOCKTIME_DISABLE_FLAG,
    SEQUENCE_LOCKTIME_TYPE_FLAG,
    calculate_sequence_locks,
    evaluate_sequence_locks,
    sequence_locks,
)
from coin.consensus.versionbits import (
    ACTIVE,
    DEFINED,
    FAILED,
    LOCKED_IN,
    STARTED,
    VersionBitsCache,
    compute_block_version,
    deployment_since_height,
    deployment_state,
    deployment_statistics,
)
from coin.primitives.block import Block, BlockHeader
from coin.primitives.hashes import sha256
from coin.primitives.script import push_int
from coin.primitives.transaction import OutPoint, Transaction, TxIn, TxOut
from coin.script.flags import (
    SCRIPT_VERIFY_CHECKLOCKTIMEVERIFY,
    SCRIPT_VERIFY_CHECKSEQUENCEVERIFY,
    SCRIPT_VERIFY_DERSIG,
    SCRIPT_VERIFY_P2SH,
)

T0 = 1_600_000_000
SPACING = 150
SIGNAL = 0x20000001
NO_SIGNAL = 0x20000000
_ids = itertools.count(1)


def extend(prev: Optional[BlockIndexEntry], count: int, *, version: int = 1,
           bits: int = REGTEST.pow_limit_bits, spacing: int = SPACING) -> List[BlockIndexEntry]:
    """Append ``count`` entries after ``prev`` (a new genesis at T0 if None)."""
    entries = []
    for _ in range(count):
        height = 0 if prev is None else prev.height + 1
        time = T0 if prev is None else prev.time + spacing
        prev = BlockIndexEntry(sha256(next(_ids).to_bytes(8, "little")), height, prev,
                               version, b"\x00" * 32, time, bits, 0, 0)
        entries.append(prev)
    return entries


def tip_of(prev, count, **kwargs) -> BlockIndexEntry:
    entries = extend(prev, count, **kwargs)
    return entries[-1] if entries else prev


#: Regtest (no retargeting) with the version-majority rules of main and test, window 100.
MAJORITY = dataclasses.replace(REGTEST, majority_rules=TEST.majority_rules)


def with_csv(params, **changes):
    csv = dataclasses.replace(params.deployment("csv"), **changes)
    return dataclasses.replace(params, deployments=(csv,))


class DarkGravityWaveTests(SynchronousTestCase):
    bits = 0x1C0FFFF0
    target = compact_to_target(bits)[0]

    def chain(self, spacing=SPACING, length=30, bits=None):
        return extend(None, length, bits=bits or self.bits, spacing=spacing)

    def next_bits(self, prev, params=MAIN):
        return get_next_work_required(prev, prev.time + SPACING, params)

    def test_pow_limit_until_window_is_full(self):
        self.assertEqual(get_next_work_required(None, T0, MAIN), MAIN.pow_limit_bits)
        chain = self.chain()
        self.assertEqual(self.next_bits(chain[23]), MAIN.pow_limit_bits)
        self.assertNotEqual(self.next_bits(chain[24]), MAIN.pow_limit_bits)

    def test_on_schedule(self):
        # 24 targets but only 23 intervals: on-schedule blocks still get 23/24 of the target.
        prev = self.chain()[-1]
        self.assertEqual(self.next_bits(prev), target_to_compact(self.target * 23 // 24))

    def test_fast_blocks_raise_difficulty_clamped_at_a_third(self):
        self.assertEqual(self.next_bits(self.chain(spacing=100)[-1]),
                         target_to_compact(self.target * 2300 // 3600))
        self.assertEqual(self.next_bits(self.chain(spacing=1)[-1]),
                         target_to_compact(self.target // 3))
        self.assertEqual(self.next_bits(self.chain(spacing=-5)[-1]),
                         target_to_compact(self.target // 3))

    def test_slow_blocks_lower_difficulty_clamped_at_three_times(self):
        self.assertEqual(self.next_bits(self.chain(spacing=300)[-1]),
                         target_to_compact(self.target * 6900 // 3600))
        self.assertEqual(self.next_bits(self.chain(spacing=10_000)[-1]),
                         target_to_compact(self.target * 3))

    def test_capped_at_pow_limit(self):
        chain = self.chain(spacing=10_000, bits=MAIN.pow_limit_bits)
        self.assertEqual(self.next_bits(chain[-1]), MAIN.pow_limit_bits)

    def test_running_average_weights_oldest_block_least(self):
        chain = self.chain()
        prev = chain[-1]
        oldest = prev.get_ancestor(prev.height - 23)
        other = self.target * 4
        oldest.bits = target_to_compact(other)
        chain[0].bits = chain[1].bits = 0x1D00FFFF  # outside the window: ignored
        average = (self.target * 24 + compact_to_target(oldest.bits)[0]) // 25
        self.assertEqual(self.next_bits(prev), target_to_compact(average * 23 // 24))

    def test_regtest_never_retargets(self):
        prev = tip_of(None, 30, bits=0x207FFFF0, spacing=1)
        self.assertEqual(get_next_work_required(prev, prev.time + 10_000, REGTEST), 0x207FFFF0)

    def test_testnet_min_difficulty_after_two_spacings(self):
        prev = self.chain()[-1]
        self.assertEqual(get_next_work_required(prev, prev.time + 301, TEST), TEST.pow_limit_bits)
        self.assertEqual(get_next_work_required(prev, prev.time + 300, TEST), self.next_bits(prev))
        self.assertEqual(get_next_work_required(prev, prev.time + 301, MAIN), self.next_bits(prev))


class SequenceLockTests(SynchronousTestCase):
    def setUp(self):
        self.chain = extend(None, 40)
        self.flags = LOCKTIME_VERIFY_SEQUENCE

    def tx(self, *sequences, version=2):
        return Transaction([TxIn(OutPoint(bytes([i + 1]) * 32, 0), b"", s)
                            for i, s in enumerate(sequences)],
                           [TxOut(COIN, b"\x51")], version=version)

    def test_height_lock(self):
        tx = self.tx(5)
        self.assertEqual(calculate_sequence_locks(tx, self.flags, [20], self.chain[30]), (24, -1))
        self.assertTrue(sequence_locks(tx, self.flags, [20], self.chain[25]))
        self.assertFalse(sequence_locks(tx, self.flags, [20], self.chain[24]))

    def test_time_lock_from_mtp_before_coin_block(self):
        tx = self.tx(SEQUENCE_LOCKTIME_TYPE_FLAG | 2)  # 2 * 512 seconds
        block = self.chain[35]
        coin_time = self.chain[19].median_time_past()
        locks = calculate_sequence_locks(tx, self.flags, [20], block)
        self.assertEqual(locks, (-1, coin_time + 1023))
        # Satisfied once the parent's MTP passes the lock: 1024 s is ~7 blocks of 150 s.
        self.assertFalse(evaluate_sequence_locks(self.chain[26], locks))
        self.assertEqual(self.chain[26].prev.median_time_past(), coin_time + 6 * SPACING)
        self.assertTrue(evaluate_sequence_locks(self.chain[27], locks))

    def test_coin_at_genesis_uses_genesis_mtp(self):
        tx = self.tx(SEQUENCE_LOCKTIME_TYPE_FLAG | 1)
        self.assertEqual(calculate_sequence_locks(tx, self.flags, [0], self.chain[10]),
                         (-1, T0 + 511))

    def test_maximum_over_inputs_and_disabled_inputs_ignored(self):
        tx = self.tx(3, 10, SEQUENCE_LOCKTIME_DISABLE_FLAG | 1000, 0xFFFFFFFF,
                     SEQUENCE_LOCKTIME_TYPE_FLAG | 1)
        locks = calculate_sequence_locks(tx, self.flags, [30, 20, 39, 39, 10], self.chain[39])
        self.assertEqual(locks, (32, self.chain[9].median_time_past() + 511))

    def test_only_enforced_with_flag_and_version_2(self):
        tx = self.tx(5)
        self.assertEqual(calculate_sequence_locks(tx, 0, [39], self.chain[39]), (-1, -1))
        self.assertEqual(calculate_sequence_locks(self.tx(5, version=1), self.flags, [39],
                                                  self.chain[39]), (-1, -1))
        # Core compares the version as unsigned: negative versions enforce BIP68.
        self.assertEqual(calculate_sequence_locks(self.tx(5, version=-1), self.flags, [35],
                                                  self.chain[39]), (39, -1))
        self.assertFalse(sequence_locks(self.tx(5, version=-1), self.flags, [35], self.chain[39]))
        self.assertTrue(sequence_locks(tx, LOCKTIME_MEDIAN_TIME_PAST, [39], self.chain[39]))

    def test_heights_must_align_with_inputs(self):
        self.assertRaises(ValueError, calculate_sequence_locks, self.tx(1, 2), self.flags, [1],
                          self.chain[5])


def coinbase(height: int, script: Optional[bytes] = None) -> Transaction:
    script = push_int(height) + b"\x00" if script is None else script
    return Transaction([TxIn(OutPoint(), script)], [TxOut(50 * COIN, b"\x51")])


def block_after(prev: BlockIndexEntry, txs=(), version: int = 4, time: Optional[int] = None,
                bits: Optional[int] = None, coinbase_script: Optional[bytes] = None) -> Block:
    header = BlockHeader(version, prev.hash, b"\x00" * 32,
                         prev.time + SPACING if time is None else time,
                         prev.bits if bits is None else bits, 0)
    return Block(header, [coinbase(prev.height + 1, coinbase_script), *txs])


class MajorityTests(SynchronousTestCase):
    """Version majority (main/test): window 100, enforce 75, reject 95."""

    def chain(self, old: int, new: int, new_version: int = 4) -> BlockIndexEntry:
        return tip_of(tip_of(None, old, version=1), new, version=new_version)

    def test_counts_only_the_window(self):
        self.assertFalse(is_super_majority(4, self.chain(26, 74), 75, MAJORITY))
        self.assertTrue(is_super_majority(4, self.chain(26, 75), 75, MAJORITY))
        self.assertTrue(is_super_majority(2, self.chain(26, 75), 75, MAJORITY))
        self.assertFalse(is_super_majority(5, self.chain(26, 75), 75, MAJORITY))
        old_majority = tip_of(self.chain(0, 100), 26, version=1)
        self.assertFalse(is_super_majority(4, old_majority, 75, MAJORITY))
        self.assertFalse(is_super_majority(2, None, 1, MAJORITY))

    def test_status(self):
        rule = MAJORITY.majority_rules[2]
        self.assertEqual(majority_status(self.chain(120, 80), rule, MAJORITY), {
            "found": 80, "required_enforce": 75, "required_reject": 95, "window": 100,
            "enforce": True, "reject": False})
        self.assertEqual(majority_status(self.chain(1, 3), rule, MAJORITY)["found"], 3)

    def flags(self, prev, version=4):
        return script_flags_for_block(BlockHeader(version, prev.hash, b"", 0, 0, 0), prev,
                                      MAJORITY, VersionBitsCache())

    def test_script_flags_switch_at_exactly_the_threshold(self):
        self.assertEqual(script_flags_for_block(MAJORITY.genesis.header, None, MAJORITY,
                                                VersionBitsCache()), SCRIPT_VERIFY_P2SH)
        before = self.chain(30, 74)
        self.assertEqual(self.flags(before), SCRIPT_VERIFY_P2SH)
        at = tip_of(before, 1, version=4)
        all_majority_flags = (SCRIPT_VERIFY_P2SH | SCRIPT_VERIFY_DERSIG
                              | SCRIPT_VERIFY_CHECKLOCKTIMEVERIFY)
        self.assertEqual(self.flags(at), all_majority_flags)
        # Only blocks of the new version are held to the new rule.
        self.assertEqual(self.flags(at, version=3), SCRIPT_VERIFY_P2SH | SCRIPT_VERIFY_DERSIG)
        self.assertEqual(self.flags(at, version=2), SCRIPT_VERIFY_P2SH)
        # Block index entries work as headers too.
        self.assertEqual(script_flags_for_block(at, at.prev, MAJORITY, VersionBitsCache()),
                         self.flags(before))

    def test_dersig_from_version_3_majority(self):
        prev = self.chain(25, 75, new_version=3)
        self.assertEqual(self.flags(prev), SCRIPT_VERIFY_P2SH | SCRIPT_VERIFY_DERSIG)


class RegtestHeightTests(SynchronousTestCase):
    """Regtest: Core 0.17's heights, BIP66 at 1,251, BIP65 at 1,351, BIP34 never."""

    def flags(self, prev):
        return script_flags_for_block(BlockHeader(4, prev.hash, b"", 0, 0, 0), prev, REGTEST,
                                      VersionBitsCache())

    def test_script_flags_from_the_heights(self):
        # A window full of version-4 blocks is not enough on regtest ...
        prev = tip_of(None, 1250, version=4)
        self.assertEqual(self.flags(prev), SCRIPT_VERIFY_P2SH)
        # ... the block at 1,251 gets DERSIG, the one at 1,351 CHECKLOCKTIMEVERIFY too.
        prev = tip_of(prev, 1, version=4)
        self.assertEqual(self.flags(prev), SCRIPT_VERIFY_P2SH | SCRIPT_VERIFY_DERSIG)
        prev = tip_of(prev, 99, version=4)
        self.assertEqual(prev.height + 1, 1350)
        self.assertEqual(self.flags(prev), SCRIPT_VERIFY_P2SH | SCRIPT_VERIFY_DERSIG)
        prev = tip_of(prev, 1, version=4)
        self.assertEqual(self.flags(prev), SCRIPT_VERIFY_P2SH | SCRIPT_VERIFY_DERSIG
                         | SCRIPT_VERIFY_CHECKLOCKTIMEVERIFY)

    def test_status_is_the_tips_height(self):
        bip34, bip66, _ = REGTEST.majority_rules
        before = tip_of(None, 1251, version=1)  # tip at 1,250: Core 0.17 says not yet
        self.assertEqual(majority_status(before, bip66, REGTEST), {
            "found": 0, "required_enforce": 75, "required_reject": 95, "window": 100,
            "enforce": False, "reject": False})
        at = tip_of(before, 1, version=3)
        status = majority_status(at, bip66, REGTEST)
        self.assertEqual((status["found"], status["enforce"], status["reject"]), (1, True, True))
        self.assertEqual(majority_status(tip_of(at, 100, version=4), bip34, REGTEST)["enforce"],
                         False)


class ContextualHeaderTests(SynchronousTestCase):
    def setUp(self):
        self.prev = tip_of(None, 20, version=4)

    def check(self, block, prev=None, params=REGTEST):
        prev = prev or self.prev
        check_header_contextual(block.header, prev, params, adjusted_time=prev.time + 1000)

    def assertRejected(self, reason, block, prev=None, params=REGTEST):
        err = self.assertRaises(ValidationError, self.check, block, prev, params)
        self.assertEqual(err.reason, reason)
        return err

    def test_valid(self):
        self.check(block_after(self.prev))

    def test_bad_diffbits(self):
        err = self.assertRejected("bad-diffbits", block_after(self.prev, bits=0x207FFFFE))
        self.assertEqual(err.dos, 100)

    def test_time_too_old(self):
        mtp = self.prev.median_time_past()
        self.check(block_after(self.prev, time=mtp + 1))
        err = self.assertRejected("time-too-old", block_after(self.prev, time=mtp))
        self.assertEqual(err.dos, 0)

    def test_time_too_new(self):
        now = self.prev.time + 1000
        self.check(block_after(self.prev, time=now + 7200))
        err = self.assertRejected("time-too-new", block_after(self.prev, time=now + 7201))
        self.assertEqual(err.dos, 0)

    def test_obsolete_versions_rejected_at_reject_majority(self):
        prev = tip_of(tip_of(None, 10, version=2), 94, version=4)
        self.check(block_after(prev, version=3), prev, MAJORITY)
        prev = tip_of(prev, 1, version=4)
        err = self.assertRejected("bad-version(0x00000003)", block_after(prev, version=3), prev,
                                  MAJORITY)
        self.assertEqual((err.dos, err.code, err.debug),
                         (0, REJECT_OBSOLETE, "rejected nVersion=0x00000003 block"))
        self.assertRejected("bad-version(0x00000001)", block_after(prev, version=1), prev,
                            MAJORITY)
        self.assertRejected("bad-version(0xffffffff)", block_after(prev, version=-1), prev,
                            MAJORITY)
        self.check(block_after(prev, version=NO_SIGNAL), prev, MAJORITY)

    def test_regtest_versions_rejected_from_the_rule_heights(self):
        # Core 0.17's regtest: a version-1 block after 100 version-4 blocks is fine ...
        prev = tip_of(None, 112, version=4)
        self.check(block_after(prev, version=1), prev)
        # ... until BIP66's height 1,251 wants version 3, and BIP65's 1,351 version 4.
        prev = tip_of(None, 1249, version=1)
        for height, least in ((1251, 3), (1351, 4)):
            older = least - 1
            prev = tip_of(prev, height - 2 - prev.height, version=older)
            self.check(block_after(prev, version=older), prev)
            prev = tip_of(prev, 1, version=older)
            self.assertEqual(prev.height + 1, height)
            self.assertRejected("bad-version(0x%08x)" % older, block_after(prev, version=older),
                                prev)
            self.check(block_after(prev, version=least), prev)


class ContextualBlockTests(SynchronousTestCase):
    def setUp(self):
        self.cache = VersionBitsCache()

    def check(self, block, prev, params=REGTEST):
        check_block_contextual(block, prev, params, self.cache)

    def assertRejected(self, reason, block, prev, params=REGTEST):
        err = self.assertRaises(ValidationError, self.check, block, prev, params)
        self.assertEqual(err.reason, reason)
        return err

    def locked(self, locktime):
        return Transaction([TxIn(OutPoint(b"\x01" * 32, 0), b"", 0)], [TxOut(1, b"\x51")], locktime)

    def test_nonfinal_by_height(self):
        prev = tip_of(None, 10)
        self.check(block_after(prev, [self.locked(9)], version=1), prev)
        err = self.assertRejected("bad-txns-nonfinal",
                                  block_after(prev, [self.locked(10)], version=1), prev)
        self.assertEqual(err.dos, 10)

    def test_nonfinal_cutoff_is_block_time_until_csv_then_mtp(self):
        params = with_csv(REGTEST, period=10, threshold=8)
        prev = tip_of(None, 10)
        self.assertEqual(locktime_flags(prev, params, self.cache), 0)
        lock = prev.median_time_past() + 1  # after the MTP, before the block's time
        block = block_after(prev, [self.locked(lock)], version=1)
        self.check(block, prev, params)
        self.assertEqual(script_flags_for_block(block.header, prev, params, self.cache),
                         SCRIPT_VERIFY_P2SH)

        prev = tip_of(tip_of(prev, 8, version=SIGNAL), 22, version=NO_SIGNAL)
        self.assertEqual(deployment_state(prev, params, "csv", self.cache), ACTIVE)
        self.assertEqual(locktime_flags(prev, params, self.cache),
                         LOCKTIME_VERIFY_SEQUENCE | LOCKTIME_MEDIAN_TIME_PAST)
        self.assertEqual(script_flags_for_block(block.header, prev, params, self.cache),
                         SCRIPT_VERIFY_P2SH | SCRIPT_VERIFY_CHECKSEQUENCEVERIFY)
        lock = prev.median_time_past()
        self.assertRejected("bad-txns-nonfinal",
                            block_after(prev, [self.locked(lock)], version=1), prev, params)
        self.check(block_after(prev, [self.locked(lock - 1)], version=1), prev, params)

    def test_bip34_height_in_coinbase(self):
        prev = tip_of(tip_of(None, 26, version=1), 74, version=2)
        wrong = push_int(prev.height) + b"\x00"
        self.check(block_after(prev, version=2, coinbase_script=wrong), prev, MAJORITY)
        prev = tip_of(prev, 1, version=2)
        self.assertEqual(prev.height, 100)
        self.check(block_after(prev, version=2), prev, MAJORITY)
        self.check(block_after(prev, version=2, coinbase_script=push_int(101)), prev, MAJORITY)
        for script in (wrong, b"\x02\x65\x00", b"\x01"):
            err = self.assertRejected("bad-cb-height",
                                      block_after(prev, version=2, coinbase_script=script), prev,
                                      MAJORITY)
            self.assertEqual(err.dos, 100)
        # A version 1 block is not held to BIP34 (the header check rejects it at 95%).
        self.check(block_after(prev, version=1, coinbase_script=wrong), prev, MAJORITY)

    def test_regtest_never_enforces_bip34(self):
        # Core 0.17's regtest BIP34 height is 100,000,000: no coinbase needs its height.
        prev = tip_of(None, 1400, version=4)
        wrong = push_int(prev.height) + b"\x00"
        self.check(block_after(prev, version=4, coinbase_script=wrong), prev)
        self.assertFalse(bip34_in_force(prev, REGTEST))
        self.assertTrue(bip34_in_force(prev, MAJORITY))


class VersionBitsTests(SynchronousTestCase):
    """Regtest csv: period 144, threshold 108, start 0, no timeout."""

    def setUp(self):
        self.caches = {}
        self.first_period = extend(None, 144, version=NO_SIGNAL)  # heights 0..143

    def cache(self, params=REGTEST):
        """A node has one set of parameters per cache; tests varying them need one each."""
        return self.caches.setdefault(params.deployment("csv"), VersionBitsCache())

    def state(self, prev, params=REGTEST):
        return deployment_state(prev, params, "csv", self.cache(params))

    def period(self, prev, signalling, version=SIGNAL, others=NO_SIGNAL):
        return tip_of(tip_of(prev, signalling, version=version), 144 - signalling, version=others)

    def test_defined_then_started(self):
        self.assertEqual(self.state(None), DEFINED)
        self.assertEqual(self.state(self.first_period[142]), DEFINED)
        self.assertEqual(self.state(self.first_period[143]), STARTED)
        self.assertEqual(deployment_since_height(self.first_period[143], REGTEST, "csv",
                                                 self.cache()), 144)
        self.assertEqual(deployment_since_height(self.first_period[100], REGTEST, "csv",
                                                 self.cache()), 0)

    def test_lock_in_needs_the_threshold_in_one_period(self):
        started = self.first_period[-1]
        short = self.period(started, 107)
        self.assertEqual(self.state(short), STARTED)
        self.assertEqual(self.state(short.prev), STARTED)
        locked = self.period(short, 108)
        self.assertEqual(self.state(locked), LOCKED_IN)
        self.assertEqual(deployment_since_height(locked, REGTEST, "csv", self.cache()), 432)
        active = self.period(locked, 0)
        self.assertEqual(self.state(active.prev), LOCKED_IN)
        self.assertEqual(self.state(active), ACTIVE)
        self.assertEqual(self.state(tip_of(active, 500, version=1)), ACTIVE)
        self.assertEqual(deployment_since_height(tip_of(active, 10), REGTEST, "csv",
                                                 self.cache()), 576)
        # A fresh cache computes the same from scratch.
        self.assertEqual(deployment_state(active, REGTEST, "csv", VersionBitsCache()), ACTIVE)

    def test_only_versionbits_versions_signal(self):
        started = self.first_period[-1]
        self.assertEqual(self.state(self.period(started, 144, version=0x60000001)), STARTED)
        self.assertEqual(self.state(self.period(started, 144, version=0x20000002)), STARTED)
        self.assertEqual(self.state(self.period(started, 108, version=0x3FFFFFFF)), LOCKED_IN)

    def test_forks_keep_their_own_states(self):
        started = self.first_period[-1]
        yes = self.period(started, 120)
        no = self.period(started, 10)
        self.assertEqual(self.state(yes), LOCKED_IN)
        self.assertEqual(self.state(no), STARTED)
        self.assertEqual(self.state(yes), LOCKED_IN)

    def test_block_version(self):
        def version(prev):
            return compute_block_version(prev, REGTEST, self.cache())
        self.assertEqual(version(None), NO_SIGNAL)
        self.assertEqual(version(self.first_period[-1]), SIGNAL)
        locked = self.period(self.first_period[-1], 144)
        self.assertEqual(version(locked), SIGNAL)
        self.assertEqual(version(self.period(locked, 0)), NO_SIGNAL)

    def test_statistics(self):
        started = self.first_period[-1]
        prev = tip_of(tip_of(started, 40, version=SIGNAL), 36, version=NO_SIGNAL)
        self.assertEqual(deployment_statistics(prev, REGTEST, "csv"), {
            "period": 144, "threshold": 108, "elapsed": 76, "count": 40, "possible": True})
        prev = tip_of(prev, 1, version=NO_SIGNAL)
        stats = deployment_statistics(prev, REGTEST, "csv")
        self.assertEqual((stats["elapsed"], stats["count"], stats["possible"]), (77, 40, False))
        boundary = self.period(started, 144)
        self.assertEqual(deployment_statistics(boundary, REGTEST, "csv")["elapsed"], 0)

    def test_timeout_fails_started_deployment(self):
        started = self.first_period[-1]
        full = self.period(started, 144)
        params = with_csv(REGTEST, timeout=full.median_time_past())
        self.assertEqual(self.state(started, params), STARTED)
        # The timeout wins over a period that reached the threshold.
        self.assertEqual(self.state(full, params), FAILED)
        self.assertEqual(self.state(self.period(full, 144), params), FAILED)
        self.assertEqual(compute_block_version(full, params, self.cache(params)), NO_SIGNAL)
        self.assertEqual(deployment_since_height(full, params, "csv", self.cache(params)), 288)

    def test_timeout_before_start_goes_straight_to_failed(self):
        params = with_csv(REGTEST, start_time=T0, timeout=T0)
        self.assertEqual(self.state(self.first_period[-1], params), FAILED)

    def test_defined_before_start_time(self):
        later = self.period(self.period(self.first_period[-1], 144), 144)
        params = with_csv(REGTEST, start_time=later.median_time_past() + 1)
        self.assertEqual(self.state(later, params), DEFINED)
        params = with_csv(REGTEST, start_time=later.median_time_past())
        self.assertEqual(self.state(later, params), STARTED)
