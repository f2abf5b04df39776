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
from coin.chain.ibd import guess_verification_progress
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
        "verificationprogress": real_to_json(
            guess_verification_progress(params.tx_data, tip, best_header)),
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
