"""Dash's governance methods, answered from the node's real state.

Registered through the ``coin.rpc`` entry point ``governance`` (the masternode methods are
in :mod:`coin.rpc.methods.masternode`, ``spork`` in :mod:`coin.rpc.methods.spork`). This
node has no governance objects, so every list is empty and every count is 0; the messages,
codes and help texts are the reference node's (Dash 0.12.3 on Core 0.17, rpcm_30..rpcm_42). Choices:

- ``gobject count`` returns an object with the counts (Dash 0.13's fields), not
  the reference's formatted string (shared/reference/README.md).
- Creating, checking and voting on governance objects needs a governance object
  model this node does not have: ``check``/``submit`` say so (-1), ``prepare``
  and the masternode wallet commands first need a wallet (Core's -32601),
  votes fail for want of masternodes exactly as Dash reports it.
- Governance parameters (:data:`GOVERNANCE`) are the reference node's values; the
  chain parameters (design.md §2) define none yet.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, NamedTuple

from coin.chainparams import COIN
from coin.rpc.context import RPCContext
from coin.rpc.errors import (
    RPC_INVALID_PARAMETER, RPC_METHOD_NOT_FOUND,
    RPC_MISC_ERROR, RPCError,
)
from coin.rpc.jsonrpc import encode_json, parse_json
from coin.rpc.params import parse_hash_v
from coin.rpc.registry import (
    ANY, STR, Arg, SubCommand, command_family, example_cli, example_rpc, rpc_method,
)
from coin.views.amounts import amount_to_json

class GovernanceParams(NamedTuple):
    """Dash's governance parameters (its Consensus::Params fields and constants)."""

    min_quorum: int
    watchdog_max_seconds: int
    proposal_fee: int
    superblock_start: int
    superblock_cycle: int
    max_object_size: int


#: The reference node's governance parameters (rpcm_42).
GOVERNANCE = GovernanceParams(min_quorum=10, watchdog_max_seconds=7200, proposal_fee=5 * COIN,
                              superblock_start=43200, superblock_cycle=43200,
                              max_object_size=16384)

GOVERNANCE_UNSUPPORTED = "Governance objects are not supported by this node"
MASTERNODES_UNSUPPORTED = "Masternodes are not supported by this node"
_NO_WALLET = "Method not found (wallet method is disabled because no wallet is loaded)"

_STR = Arg("value", STR)
_REST = (Arg("args", ANY, variadic=True),)


def _text(value: Any) -> str:
    """UniValue's get_str(): -1 "JSON value is not a string as expected" otherwise."""
    return _STR.convert(value)


def _invalid(message: str) -> RPCError:
    return RPCError(RPC_INVALID_PARAMETER, message)


def _wallet_then(ctx: RPCContext, unsupported: str) -> RPCError:
    """Core's EnsureWalletIsAvailable, then why the command still cannot run here."""
    if not ctx.node.wallets:
        return RPCError(RPC_METHOD_NOT_FOUND, _NO_WALLET)
    return RPCError(RPC_MISC_ERROR, unsupported)


# ------------------------------------------------------------------ gobject

def _gobject_count(ctx: RPCContext, *ignored: Any) -> Dict[str, int]:
    return {"objects_total": 0, "proposals": 0, "triggers": 0, "other": 0, "erased": 0,
            "votes": 0}


_LIST_SIGNALS = ("valid", "funding", "delete", "endorsed", "all")
_LIST_TYPES = ("proposals", "triggers", "watchdogs", "all")


def _gobject_list(ctx: RPCContext, *rest: Any) -> Any:
    """list and diff: the filters are checked (Dash answers bad ones as strings), no objects."""
    if len(rest) > 2:
        raise _invalid("Correct usage is 'gobject [list|diff] ( signal type )'")
    if rest and _text(rest[0]) not in _LIST_SIGNALS:
        return "Invalid signal, should be 'valid', 'funding', 'delete', 'endorsed' or 'all'"
    if len(rest) == 2 and _text(rest[1]) not in _LIST_TYPES:
        return "Invalid type, should be 'proposals', 'triggers', 'watchdogs' or 'all'"
    return {}


def _gobject_get(ctx: RPCContext, *rest: Any) -> Any:
    if len(rest) != 1:
        raise _invalid("Correct usage is 'gobject get <governance-hash>'")
    parse_hash_v(rest[0], "GovObj hash")
    raise _invalid("Unknown governance object")


def _gobject_getvotes(ctx: RPCContext, *rest: Any) -> Any:
    if len(rest) != 1:
        raise RPCError(RPC_MISC_ERROR, "Correct usage is 'gobject getvotes <governance-hash>'")
    parse_hash_v(rest[0], "Governance hash")
    raise _invalid("Unknown governance-hash")


def _gobject_getcurrentvotes(ctx: RPCContext, *rest: Any) -> Any:
    if len(rest) not in (1, 3):
        raise RPCError(RPC_MISC_ERROR, "Correct usage is 'gobject getcurrentvotes "
                       "<governance-hash> [txid vout_index]'")
    parse_hash_v(rest[0], "Governance hash")
    if len(rest) == 3:
        parse_hash_v(rest[1], "Masternode Collateral hash")
        vout = _text(rest[2])
        significant = vout.lstrip("0")
        if not (vout.isascii() and vout.isdigit() and len(significant) <= 10
                and int(significant or "0") <= 0xFFFFFFFF):
            # boost::lexical_cast<uint32_t>'s exception, passed on by the RPC server.
            raise RPCError(RPC_MISC_ERROR, "bad lexical cast: source type value could not be "
                           "interpreted as target")
    raise _invalid("Unknown governance-hash")


def _hex_prefix(text: str) -> bytes:
    """Core's ParseHex: hex digit pairs (whitespace between pairs skipped) until the first misfit."""
    out = bytearray()
    i = 0
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        pair = text[i:i + 2]
        if len(pair) < 2 or not all(c in "0123456789abcdefABCDEF" for c in pair):
            return bytes(out)
        out.append(int(pair, 16))
        i += 2


def _gobject_deserialize(ctx: RPCContext, *rest: Any) -> str:
    """The object data (hex of JSON text) as compact JSON text; "null" if it is not JSON."""
    if len(rest) != 1:
        raise _invalid("Correct usage is 'gobject deserialize <data-hex>'")
    try:
        value = parse_json(_hex_prefix(_text(rest[0])))
    except RPCError:
        return "null"
    return encode_json(value).decode("utf-8")


def _gobject_unsupported(usage: str, count: Callable[[int], bool]) -> Callable[..., Any]:
    """check/submit: the argument count is checked, then there is no object model to use."""

    def handler(ctx: RPCContext, *rest: Any) -> Any:
        if not count(len(rest)):
            raise _invalid(usage)
        raise RPCError(RPC_MISC_ERROR, GOVERNANCE_UNSUPPORTED)

    return handler


def _gobject_prepare(ctx: RPCContext, *rest: Any) -> Any:
    raise _wallet_then(ctx, GOVERNANCE_UNSUPPORTED)


_VOTE_SIGNALS = ("funding", "valid", "delete", "endorsed")
_VOTE_OUTCOMES = ("yes", "no", "abstain")


def _read_vote(rest: tuple, count: int, usage: str) -> None:
    """A vote's hash, signal, outcome (and alias), checked in Dash's order."""
    if len(rest) != count:
        raise _invalid(usage)
    parse_hash_v(rest[0], "Object hash")
    signal, outcome = (_text(value) for value in rest[1:3])
    for value in rest[3:]:
        _text(value)
    if signal not in _VOTE_SIGNALS:
        raise _invalid("Invalid vote signal. Please using one of the following: "
                       "(funding|valid|delete|endorsed)")
    if outcome not in _VOTE_OUTCOMES:
        raise _invalid("Invalid vote outcome. Please use one of the following: "
                       "'yes', 'no' or 'abstain'")


def _vote_result(failed: int, detail: Dict[str, Any]) -> Dict[str, Any]:
    return {"overall": "Voted successfully 0 time(s) and failed %d time(s)." % failed,
            "detail": detail}


def _gobject_vote_conf(ctx: RPCContext, *rest: Any) -> Dict[str, Any]:
    _read_vote(rest, 3, "Correct usage is 'gobject vote-conf <governance-hash> "
               "[funding|valid|delete] [yes|no|abstain]'")
    return _vote_result(1, {"coin.conf": {"result": "failed", "errorMessage":
                                          "Can't find masternode by collateral output"}})


def _gobject_vote_many(ctx: RPCContext, *rest: Any) -> Dict[str, Any]:
    # No masternode.conf entries: nothing votes, nothing fails.
    _read_vote(rest, 3, "Correct usage is 'gobject vote-many <governance-hash> "
               "[funding|valid|delete] [yes|no|abstain]'")
    return _vote_result(0, {})


def _gobject_vote_alias(ctx: RPCContext, *rest: Any) -> Dict[str, Any]:
    _read_vote(rest, 4, "Correct usage is 'gobject vote-alias <governance-hash> "
               "[funding|valid|delete] [yes|no|abstain] <alias-name>'")
    return _vote_result(0, {})


def _gobject_sub(name: str, handler: Callable[..., Any], summary: str) -> SubCommand:
    return SubCommand(name, handler, args=_REST, summary=summary)


gobject = command_family(
    "gobject", category="governance", width=18,
    help='gobject "command"...\nManage governance objects\n',
    subcommands=[
        _gobject_sub("check", _gobject_unsupported(
            "Correct usage is 'gobject check <data-hex>'", lambda n: n == 1),
            "Validate governance object data (proposal only)"),
        _gobject_sub("prepare", _gobject_prepare,
                     "Prepare governance object by signing and creating tx"),
        _gobject_sub("submit", _gobject_unsupported(
            "Correct usage is 'gobject submit <parent-hash> <revision> <time> <data-hex> "
            "<fee-txid>'", lambda n: 4 <= n <= 5), "Submit governance object to network"),
        _gobject_sub("deserialize", _gobject_deserialize,
                     "Deserialize governance object from hex string to JSON"),
        _gobject_sub("count", _gobject_count, "Count governance objects and votes"),
        _gobject_sub("get", _gobject_get, "Get governance object by hash"),
        _gobject_sub("getvotes", _gobject_getvotes,
                     "Get all votes for a governance object hash (including old votes)"),
        _gobject_sub("getcurrentvotes", _gobject_getcurrentvotes,
                     "Get only current (tallying) votes for a governance object hash (does not "
                     "include old votes)"),
        _gobject_sub("list", _gobject_list,
                     "List governance objects (can be filtered by signal and/or object type)"),
        _gobject_sub("diff", _gobject_list, "List differences since last diff"),
        _gobject_sub("vote-alias", _gobject_vote_alias,
                     "Vote on a governance object by masternode alias (using masternode.conf "
                     "setup)"),
        # The reference's text (its brand replacement left "bitcoin.conf").
        _gobject_sub("vote-conf", _gobject_vote_conf,
                     "Vote on a governance object by masternode configured in bitcoin.conf"),
        _gobject_sub("vote-many", _gobject_vote_many,
                     "Vote on a governance object by all masternodes (using masternode.conf "
                     "setup)"),
    ])


@rpc_method(
    "getgovernanceinfo", category="governance",
    help="Returns an object containing governance parameters.",
    result=(
        "{\n"
        '  "governanceminquorum": xxxxx,           (numeric) the absolute minimum number of '
        "votes needed to trigger a governance action\n"
        '  "masternodewatchdogmaxseconds": xxxxx,  (numeric) sentinel watchdog expiration time '
        "in seconds\n"
        '  "proposalfee": xxx.xx,                  (numeric) the collateral transaction fee '
        "which must be paid to create a proposal in COIN\n"
        '  "superblockcycle": xxxxx,               (numeric) the number of blocks between '
        "superblocks\n"
        '  "lastsuperblock": xxxxx,                (numeric) the block number of the last '
        "superblock\n"
        '  "nextsuperblock": xxxxx,                (numeric) the block number of the next '
        "superblock\n"
        '  "maxgovobjdatasize": xxxxx,             (numeric) maximum governance object data size '
        "in bytes\n"
        "}"),
    examples=example_cli("getgovernanceinfo") + example_rpc("getgovernanceinfo"))
def getgovernanceinfo(ctx: RPCContext) -> Dict[str, Any]:
    height = ctx.node.chain.state.height
    start, cycle = GOVERNANCE.superblock_start, GOVERNANCE.superblock_cycle
    first = start + (cycle - start % cycle) % cycle
    if height < first:
        last, following = 0, first
    else:
        last = height - height % cycle
        following = last + cycle
    return {"governanceminquorum": GOVERNANCE.min_quorum,
            "masternodewatchdogmaxseconds": GOVERNANCE.watchdog_max_seconds,
            "proposalfee": amount_to_json(GOVERNANCE.proposal_fee),
            "superblockcycle": cycle,
            "lastsuperblock": last,
            "nextsuperblock": following,
            "maxgovobjdatasize": GOVERNANCE.max_object_size}


#: What the ``governance`` entry point registers.
METHODS = [gobject, getgovernanceinfo]
