"""The chain-info object (getblockchaininfo, REST /chaininfo) in the spec's order.

``chain, blocks, headers, bestblockhash, difficulty, mediantime,
verificationprogress, [initialblockdownload], chainwork, [size_on_disk], pruned,
[pruneheight, automatic_pruning, prune_target_size], softforks, bip9_softforks,
[warnings]`` — Core 0.12.1's fields, with ``bip9_softforks`` the array of
``{id, status}`` the spec describes, and Core 0.17's extras where Core 0.17 and the
reference put them (bracketed; doc/views.md "Chain info extras").
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Protocol

from coin.chain.access import ChainStatus
from coin.chain.index import BlockIndexEntry
from coin.chainparams import ChainParams, MajorityRule
from coin.consensus.pow import get_difficulty
from coin.consensus.softforks import majority_status
from coin.consensus.versionbits import VersionBitsCache, deployment_state
from coin.primitives.hashes import hash_to_hex
from coin.views.amounts import real_to_json
from coin.views.chain import ChainView


class ChainInfoSource(ChainView, Protocol):
    """What :func:`chain_info_json` reads: a :class:`coin.chain.snapshot.ChainSnapshot`."""

    @property
    def tip(self) -> Optional[BlockIndexEntry]:
        """The active tip."""

    @property
    def best_header(self) -> Optional[BlockIndexEntry]:
        """The most-work valid header known."""

    @property
    def versionbits(self) -> VersionBitsCache:
        """The BIP9 state cache."""


#: Blocks whose transaction counts give the average used to extrapolate missing blocks.
PROGRESS_SAMPLE_BLOCKS = 1000


def verification_progress(tip: BlockIndexEntry,
                          best_header: Optional[BlockIndexEntry] = None) -> float:
    """Core's GuessVerificationProgress, with headers standing in for ChainTxData.

    Core divides the tip's ``chain_tx`` by an estimate of all transactions in the chain
    (from the ChainTxData recorded in its chain parameters).  No network here records
    one, so the estimate comes from the headers we know: the tip's ``chain_tx`` plus, for
    every header above the tip, the average transactions per block of the last
    ``PROGRESS_SAMPLE_BLOCKS`` blocks.  Synced (no header above the tip): 1.0; nothing
    known about the tip's transactions: 0.0.
    """
    if not tip.chain_tx:
        return 0.0
    if best_header is None or best_header.height <= tip.height:
        return 1.0
    base = tip.get_ancestor(max(0, tip.height - PROGRESS_SAMPLE_BLOCKS))
    sampled = tip.height - base.height
    if sampled > 0 and base.chain_tx:
        per_block = (tip.chain_tx - base.chain_tx) / sampled
    else:
        per_block = tip.chain_tx / (tip.height + 1)
    remaining = (best_header.height - tip.height) * max(per_block, 1.0)
    return tip.chain_tx / (tip.chain_tx + remaining)


def _softfork_json(rule: MajorityRule, tip: BlockIndexEntry,
                   params: ChainParams) -> Dict[str, Any]:
    status = majority_status(tip, rule, params)
    out: Dict[str, Any] = {"id": rule.name, "version": rule.version}
    for which in ("enforce", "reject"):
        out[which] = {"status": status[which], "found": status["found"],
                      "required": status["required_" + which], "window": status["window"]}
    return out


def chain_info_json(chainstate: ChainInfoSource, params: ChainParams,
                    status: ChainStatus) -> Dict[str, Any]:
    """The chain-info object; ``pruneheight`` and ``automatic_pruning`` appear when
    pruning (``pruneheight`` if known), ``prune_target_size`` when pruning automatically.

    Soft-fork states are those for the block after the tip, as Core reports them.
    """
    tip = chainstate.tip
    assert tip is not None, "a loaded chain always has genesis"
    best_header = chainstate.best_header
    out: Dict[str, Any] = {
        "chain": params.name,
        "blocks": chainstate.height,
        "headers": best_header.height if best_header is not None else -1,
        "bestblockhash": hash_to_hex(tip.hash),
        "difficulty": real_to_json(get_difficulty(tip.bits)),
        "mediantime": tip.median_time_past(),
        "verificationprogress": real_to_json(verification_progress(tip, best_header)),
        "initialblockdownload": status.initial_block_download,
        "chainwork": "%064x" % tip.chainwork,
        "size_on_disk": status.size_on_disk,
        "pruned": status.pruned,
    }
    if status.pruned:
        if status.prune_height is not None:
            out["pruneheight"] = status.prune_height
        out["automatic_pruning"] = status.prune_target is not None
        if status.prune_target is not None:
            out["prune_target_size"] = status.prune_target
    out["softforks"] = [_softfork_json(rule, tip, params) for rule in params.majority_rules]
    out["bip9_softforks"] = [
        {"id": d.name, "status": deployment_state(tip, params, d.name, chainstate.versionbits)}
        for d in params.deployments]
    out["warnings"] = status.warnings
    return out
