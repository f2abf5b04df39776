"""The chain-info object (getblockchaininfo, REST /chaininfo) in the spec's order.

``chain, blocks, headers, bestblockhash, difficulty, mediantime,
verificationprogress, chainwork, pruned, [pruneheight], softforks,
bip9_softforks`` — Core 0.12.1's fields, with ``bip9_softforks`` the array of
``{id, status}`` the spec describes.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Protocol

from coin.chain.index import BlockIndexEntry
from coin.chainparams import ChainParams, MajorityRule
from coin.consensus.pow import get_difficulty
from coin.consensus.softforks import majority_status
from coin.consensus.versionbits import VersionBitsCache, deployment_state
from coin.primitives.hashes import hash_to_hex
from coin.views.amounts import real_to_json
from coin.views.chain import ChainView


class ChainInfoSource(ChainView, Protocol):
    """What :func:`chain_info_json` reads of :class:`coin.chain.chainstate.ChainState`."""

    @property
    def tip(self) -> Optional[BlockIndexEntry]:
        """The active tip."""

    best_header: Optional[BlockIndexEntry]
    versionbits: VersionBitsCache


def verification_progress(tip: BlockIndexEntry) -> float:
    """Core's GuessVerificationProgress with empty ChainTxData (as every network here has).

    With no recorded transaction count and rate, Core's estimate of all
    transactions is the tip's own ``chain_tx``: 1.0 once that is known, 0.0
    before.  (A network given ChainTxData would extrapolate from it instead.)
    """
    return 1.0 if tip.chain_tx else 0.0


def _softfork_json(rule: MajorityRule, tip: BlockIndexEntry,
                   params: ChainParams) -> Dict[str, Any]:
    status = majority_status(tip, rule, params)
    out: Dict[str, Any] = {"id": rule.name, "version": rule.version}
    for which in ("enforce", "reject"):
        out[which] = {"status": status[which], "found": status["found"],
                      "required": status["required_" + which], "window": status["window"]}
    return out


def chain_info_json(chainstate: ChainInfoSource, params: ChainParams, *, pruned: bool = False,
                    prune_height: Optional[int] = None) -> Dict[str, Any]:
    """The chain-info object; ``pruneheight`` appears when ``pruned`` and known.

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
        "verificationprogress": real_to_json(verification_progress(tip)),
        "chainwork": "%064x" % tip.chainwork,
        "pruned": pruned,
    }
    if pruned and prune_height is not None:
        out["pruneheight"] = prune_height
    out["softforks"] = [_softfork_json(rule, tip, params) for rule in params.majority_rules]
    out["bip9_softforks"] = [
        {"id": d.name, "status": deployment_state(tip, params, d.name, chainstate.versionbits)}
        for d in params.deployments]
    return out
