"""Contextual header and block checks, and the soft forks that decide them.

BIP34/66/65 activate by version majority (Core 0.12's IsSuperMajority; the
numbers are ``ChainParams.majority_*``) or, where the rule has a ``height``
(regtest), from that height on as in Core 0.17; CSV (BIP68/112/113) by BIP9
(:mod:`coin.consensus.versionbits`).

Convention: every function takes ``prev``, the parent of the block being
checked, plus the block's header (or anything with ``version`` / ``time``,
such as its own BlockIndexEntry) where the block's own fields matter.  The
genesis block is never checked contextually, so ``prev`` is never None for
the checks; the flag functions accept None and then report genesis rules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, Optional

from coin.chainparams import MAX_FUTURE_BLOCK_TIME
from coin.consensus.errors import REJECT_OBSOLETE, ValidationError
from coin.consensus.pow import get_next_work_required
from coin.consensus.tx_check import (
    LOCKTIME_MEDIAN_TIME_PAST,
    LOCKTIME_VERIFY_SEQUENCE,
    is_final_tx,
)
from coin.consensus.versionbits import ACTIVE, VersionBitsCache, deployment_state
from coin.primitives.script import push_int
from coin.script.flags import (
    SCRIPT_VERIFY_CHECKLOCKTIMEVERIFY,
    SCRIPT_VERIFY_CHECKSEQUENCEVERIFY,
    SCRIPT_VERIFY_DERSIG,
    SCRIPT_VERIFY_P2SH,
)

if TYPE_CHECKING:
    from coin.chain.index import BlockIndexEntry
    from coin.chainparams import ChainParams, MajorityRule
    from coin.primitives.block import Block, BlockHeader

#: Script flag each majority rule switches on (BIP34 changes the coinbase instead).
_RULE_SCRIPT_FLAGS = {
    "bip66": SCRIPT_VERIFY_DERSIG,
    "bip65": SCRIPT_VERIFY_CHECKLOCKTIMEVERIFY,
}


def _rule(params: ChainParams, name: str) -> MajorityRule:
    for rule in params.majority_rules:
        if rule.name == name:
            return rule
    raise KeyError(name)


def is_super_majority(min_version: int, prev: Optional[BlockIndexEntry], required: int,
                      params: ChainParams) -> bool:
    """Are at least ``required`` of the last ``majority_window`` blocks up to ``prev``
    of ``min_version`` or later?  Stops walking as soon as the answer is known."""
    found = 0
    remaining = params.majority_window
    entry = prev
    while entry is not None and found < required <= found + remaining:
        if entry.version >= min_version:
            found += 1
        entry = entry.prev
        remaining -= 1
    return found >= required


def rule_in_force(rule: MajorityRule, prev: Optional[BlockIndexEntry], params: ChainParams,
                  required: Optional[int] = None) -> bool:
    """Has ``rule`` taken effect for the block after ``prev``?

    From its ``height`` on where it has one; otherwise once ``required``
    (default: the enforce majority) of the last window carry its version.
    """
    if rule.height is not None:
        return (prev.height + 1 if prev is not None else 0) >= rule.height
    return is_super_majority(rule.version, prev,
                             params.majority_enforce if required is None else required, params)


def rule_enforced(rule: MajorityRule, version: int, prev: Optional[BlockIndexEntry],
                  params: ChainParams) -> bool:
    """Does ``rule`` apply to a block of ``version`` after ``prev``?

    As in Core, only blocks that themselves carry the new version are held
    to the new rule; older versions are rejected outright once the reject
    majority (or the rule's height) is reached (see :func:`check_header_contextual`).
    """
    return version >= rule.version and rule_in_force(rule, prev, params)


def bip34_in_force(prev: Optional[BlockIndexEntry], params: ChainParams) -> bool:
    """Whether coinbases after ``prev`` are unique by BIP34 (so BIP30 may be skipped)."""
    return rule_in_force(_rule(params, "bip34"), prev, params)


def majority_status(prev: Optional[BlockIndexEntry], rule: MajorityRule,
                    params: ChainParams) -> Dict[str, Any]:
    """Counts for getblockchaininfo's ``softforks`` entry of ``rule`` at tip ``prev``.

    For a rule with a ``height`` both statuses are Core 0.17's: whether the tip
    has reached that height; the counts stay informative.
    """
    found = 0
    remaining = params.majority_window
    entry = prev
    while entry is not None and remaining:
        if entry.version >= rule.version:
            found += 1
        entry = entry.prev
        remaining -= 1
    if rule.height is not None:
        enforce = reject = prev is not None and prev.height >= rule.height
    else:
        enforce, reject = found >= params.majority_enforce, found >= params.majority_reject
    return {
        "found": found,
        "required_enforce": params.majority_enforce,
        "required_reject": params.majority_reject,
        "window": params.majority_window,
        "enforce": enforce,
        "reject": reject,
    }


def check_header_contextual(header: BlockHeader, prev: BlockIndexEntry, params: ChainParams,
                            adjusted_time: int) -> None:
    """Core's ContextualCheckBlockHeader: difficulty, timestamps, obsolete versions.

    ``adjusted_time`` is the network-adjusted current time in Unix seconds.
    """
    if header.bits != get_next_work_required(prev, header.time, params):
        raise ValidationError("bad-diffbits", "incorrect proof of work", dos=100)
    if header.time <= prev.median_time_past():
        raise ValidationError("time-too-old", "block's timestamp is too early")
    if header.time > adjusted_time + MAX_FUTURE_BLOCK_TIME:
        raise ValidationError("time-too-new", "block timestamp too far in the future")
    version = header.version
    for rule in params.majority_rules:
        if version < rule.version and rule_in_force(rule, prev, params, params.majority_reject):
            shown = version & 0xFFFFFFFF
            raise ValidationError("bad-version(0x%08x)" % shown,
                                  "rejected nVersion=0x%08x block" % shown, code=REJECT_OBSOLETE)


def check_block_contextual(block: Block, prev: BlockIndexEntry, params: ChainParams,
                           cache: VersionBitsCache) -> None:
    """Core's ContextualCheckBlock: all transactions final, BIP34 height in the coinbase.

    Run after :func:`coin.consensus.block_check.check_block` (the first
    transaction must be the coinbase).
    """
    height = prev.height + 1
    header = block.header
    if locktime_flags(prev, params, cache) & LOCKTIME_MEDIAN_TIME_PAST:
        cutoff = prev.median_time_past()
    else:
        cutoff = header.time
    for tx in block.txs:
        if not is_final_tx(tx, height, cutoff):
            raise ValidationError("bad-txns-nonfinal", "non-final transaction", dos=10)

    if rule_enforced(_rule(params, "bip34"), header.version, prev, params):
        if not block.txs[0].vin[0].script_sig.startswith(push_int(height)):
            raise ValidationError("bad-cb-height", "block height mismatch in coinbase",
                                  dos=100)


def locktime_flags(prev: Optional[BlockIndexEntry], params: ChainParams,
                   cache: VersionBitsCache) -> int:
    """LOCKTIME_* flags for the block after ``prev``: BIP68 and BIP113 once CSV is active."""
    if deployment_state(prev, params, "csv", cache) == ACTIVE:
        return LOCKTIME_VERIFY_SEQUENCE | LOCKTIME_MEDIAN_TIME_PAST
    return 0


def script_flags_for_block(header: BlockHeader | BlockIndexEntry,
                           prev: Optional[BlockIndexEntry], params: ChainParams,
                           cache: VersionBitsCache) -> int:
    """Consensus script flags for the block with ``header`` after ``prev``.

    P2SH from genesis (design.md §3); DERSIG and CHECKLOCKTIMEVERIFY for
    blocks of version 3 / 4 once the enforce majority (or the rule's height) is reached;
    CHECKSEQUENCEVERIFY once CSV is ACTIVE.
    """
    flags = SCRIPT_VERIFY_P2SH
    version = header.version
    for rule in params.majority_rules:
        flag = _RULE_SCRIPT_FLAGS.get(rule.name)
        if flag and rule_enforced(rule, version, prev, params):
            flags |= flag
    if deployment_state(prev, params, "csv", cache) == ACTIVE:
        flags |= SCRIPT_VERIFY_CHECKSEQUENCEVERIFY
    return flags
