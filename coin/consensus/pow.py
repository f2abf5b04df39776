"""Proof of work: compact targets, chain work, and the difficulty rules."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Tuple

if TYPE_CHECKING:
    from coin.chain.index import BlockIndexEntry
    from coin.chainparams import ChainParams


def block_proof(bits: int) -> int:
    """Expected hashes for a block at ``bits`` (Core's GetBlockProof)."""
    target = compact_to_target(bits)[0]
    if target <= 0:
        return 0
    return (1 << 256) // (target + 1)


def compact_to_target(bits: int) -> Tuple[int, bool, bool]:
    """Decode compact ``bits``: ``(target, negative, overflow)`` as Core's SetCompact."""
    size = bits >> 24
    word = bits & 0x007FFFFF
    if size <= 3:
        target = word >> (8 * (3 - size))
    else:
        target = word << (8 * (size - 3))
    negative = word != 0 and (bits & 0x00800000) != 0
    overflow = word != 0 and (size > 34 or (word > 0xFF and size > 33) or (word > 0xFFFF and size > 32))
    return target, negative, overflow


def target_to_compact(target: int) -> int:
    """Encode a target as compact ``bits`` (Core's GetCompact)."""
    size = (target.bit_length() + 7) // 8
    if size <= 3:
        compact = target << (8 * (3 - size))
    else:
        compact = target >> (8 * (size - 3))
    if compact & 0x00800000:
        compact >>= 8
        size += 1
    return compact | (size << 24)


def check_proof_of_work(hash: bytes, bits: int, params: ChainParams) -> bool:
    """Core's CheckProofOfWork: ``bits`` is a sane target and ``hash`` meets it.

    ``hash`` is in internal byte order, i.e. a little-endian uint256.
    """
    target, negative, overflow = compact_to_target(bits)
    if negative or overflow or target == 0 or target > params.pow_limit:
        return False
    return int.from_bytes(hash, "little") <= target


def get_next_work_required(prev: Optional[BlockIndexEntry], header_time: int,
                           params: ChainParams) -> int:
    """Compact target the block after ``prev`` (with time ``header_time``) must carry.

    Regtest never retargets; testnet allows a minimum-difficulty block once
    more than two target spacings have passed since ``prev``; otherwise
    Dark Gravity Wave v3 (design.md §2).
    """
    if prev is None:
        return params.pow_limit_bits
    if params.pow_no_retargeting:
        return prev.bits
    if (params.pow_allow_min_difficulty_blocks
            and header_time > prev.time + 2 * params.target_spacing):
        return params.pow_limit_bits
    return dark_gravity_wave(prev, params)


def dark_gravity_wave(prev: BlockIndexEntry, params: ChainParams) -> int:
    """Dash Core's DarkGravityWave (v3) over the ``dgw_past_blocks`` ending at ``prev``.

    The "average" is Dash's running formula ``(avg * n + target) / (n + 1)``,
    which weights the oldest blocks least (it is not a plain mean), and the
    actual timespan covers one interval fewer than the target timespan; both
    are consensus and reproduced as is.  Chain targets never exceed
    ``pow_limit`` (< 2**240 on the retargeting networks), so the 256-bit
    products Core computes cannot wrap and Python integers give its values.
    """
    past_blocks = params.dgw_past_blocks
    if prev.height < past_blocks:
        return params.pow_limit_bits
    entry = prev
    average = compact_to_target(entry.bits)[0]
    for count in range(2, past_blocks + 1):
        parent = entry.prev
        assert parent is not None  # prev.height >= past_blocks
        entry = parent
        average = (average * count + compact_to_target(entry.bits)[0]) // (count + 1)

    target_timespan = past_blocks * params.target_spacing
    actual_timespan = prev.time - entry.time
    if actual_timespan < target_timespan // 3:
        actual_timespan = target_timespan // 3
    if actual_timespan > target_timespan * 3:
        actual_timespan = target_timespan * 3

    target = average * actual_timespan // target_timespan
    if target > params.pow_limit:
        target = params.pow_limit
    return target_to_compact(target)


def get_difficulty(bits: int) -> float:
    """Core's GetDifficulty: how many times harder than ``0x1d00ffff`` (floating point).

    Computed with Core's exact sequence of double operations so RPC output
    matches digit for digit.  A zero mantissa gives ``inf`` as C's division does.
    """
    mantissa = bits & 0x00FFFFFF
    if mantissa == 0:
        return float("inf")
    shift = (bits >> 24) & 0xFF
    difficulty = float(0x0000FFFF) / float(mantissa)
    while shift < 29:
        difficulty *= 256.0
        shift += 1
    while shift > 29:
        difficulty /= 256.0
        shift -= 1
    return difficulty
