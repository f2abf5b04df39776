"""Dash's governance methods, answered from the node's real state.

Registered through the ``coin.rpc`` entry point ``governance`` (the masternode methods are
in :mod:`coin.rpc.methods.masternode`, ``spork`` in :mod:`coin.rpc.methods.spork`).
Governance objects are the node's own (coin.governance: created, checked, kept and listed
here). Messages, codes and help texts are the reference node's (Dash 0.12.3 on Core 0.17,
rpcm_30..rpcm_42). Choices:

- ``gobject count`` returns an object with the counts (Dash 0.13's fields), not
  the reference's formatted string (shared/reference/README.md).
- ``gobject prepare`` refuses with Core's -32601 when no wallet is loaded (the
  reference would crash); a fee transaction the mempool refuses is an error, not a
  txid that never confirms.
- ``getgovernanceinfo`` and ``getsuperblockbudget`` answer this chain's parameters
  (design.md §6), not the reference's constants.
- Votes are signed with the masternode keys of ``masternode.conf`` (vote-many, vote-alias)
  or of ``-masternodeprivkey`` (vote-conf), counted against the node's masternode list
  and relayed.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any, Callable, Dict, Optional, Tuple

import coincurve

from coin.consensus.tx_check import format_money
from coin.governance.collateral import CollateralError, burn_script, minimum_fee
from coin.governance.object import (
    NULL_HASH, OBJECT_PROPOSAL, OBJECT_TRIGGER, OBJECT_WATCHDOG, GovernanceObject, data_as_string,
    outpoint_text, parse_hex_prefix,
)
from coin.governance.params import (
    MAX_OBJECT_DATA_SIZE, WATCHDOG_MAX_SECONDS, governance_params, superblock_budget,
    superblocks_around,
)
from coin.governance.service import GovernanceService, KnownTx, MasternodeSigner, ObjectError
from coin.governance.store import Entry
from coin.governance.validator import ProposalError, validate_proposal
from coin.governance.vote import (
    OUTCOMES, SIGNAL_DELETE, SIGNAL_ENDORSED, SIGNAL_FUNDING, SIGNAL_VALID, SIGNALS, Vote, VoteError,
    vote_is_valid,
)
from coin.primitives.address import AddressError, decode_wif
from coin.primitives.hashes import hash_to_hex
from coin.primitives.transaction import OutPoint
from coin.rpc.context import RPCContext
from coin.rpc.errors import (
    RPC_INTERNAL_ERROR, RPC_INVALID_ADDRESS_OR_KEY, RPC_INVALID_PARAMETER,
    RPC_METHOD_NOT_FOUND, RPC_MISC_ERROR, RPC_WALLET_NOT_FOUND, RPC_WALLET_NOT_SPECIFIED, RPCError,
)
from coin.rpc.jsonrpc import encode_json, parse_json
from coin.rpc.methods.wallet import wallet_service
from coin.rpc.methods.wallet.spending import _fee_policy
from coin.rpc.params import parse_hash_v
from coin.rpc.registry import (
    ANY, INT, INT64, STR, Arg, RPCMethod, SubCommand, command_family, example_cli, example_rpc,
    rpc_method,
)
from coin.views.amounts import amount_to_json
from coin.wallet.access import in_wallet
from coin.wallet.addresses import ensure_unlocked
from coin.wallet.keystore import WalletLocked
from coin.wallet.service import TransactionRejected
from coin.wallet.spend import Recipient, SpendError
from coin.wallet.wallet import Wallet

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

def _governance(ctx: RPCContext) -> GovernanceService:
    return ctx.node.governance


_BAD_CAST = "bad lexical cast: source type value could not be interpreted as target"


def _lexical_int(value: Any, low: int, high: int, sign: bool = True) -> int:
    """boost::lexical_cast to a C integer type: digits (and a sign), in range, or -1 with
    boost's message (the RPC server passes the exception on)."""
    text = _text(value)
    digits = text[1:] if sign and text[:1] in "+-" else text
    significant = digits.lstrip("0")
    if not (digits.isascii() and digits.isdigit()) or len(significant) > 20:
        raise RPCError(RPC_MISC_ERROR, _BAD_CAST)
    number = -int(significant or "0") if text[:1] == "-" else int(significant or "0")
    if not low <= number <= high:
        raise RPCError(RPC_MISC_ERROR, _BAD_CAST)
    return number


def _parent_hash(value: Any, name: str) -> bytes:
    """"0" attaches to the root (the zero hash); anything else must be a hash."""
    if _text(value) == "0":
        return NULL_HASH
    return parse_hash_v(value, name)


def _new_object(ctx: RPCContext, parent: bytes, revision: Any, time: Any, data: Any,
                fee_txid: bytes = NULL_HASH) -> GovernanceObject:
    """The object a user describes; proposals are checked as the reference's validator does."""
    revision = _lexical_int(revision, -2**31, 2**31 - 1)
    time = _lexical_int(time, -2**31, 2**31 - 1)
    obj = GovernanceObject(parent, revision, time, fee_txid, _text(data))
    if obj.object_type == OBJECT_PROPOSAL:
        _validate_proposal(ctx, obj.data_hex)
    return obj


def _validate_proposal(ctx: RPCContext, data_hex: str) -> None:
    try:
        validate_proposal(data_hex, ctx.node.chain.params)
    except ProposalError as e:
        raise _invalid("Invalid proposal data, error messages:" + str(e)) from None


def _not_valid(obj: GovernanceObject, why: Exception) -> RPCError:
    return RPCError(RPC_INTERNAL_ERROR, "Governance object is not valid - %s - %s"
                    % (hash_to_hex(obj.hash), why))


def _gobject_check(ctx: RPCContext, *rest: Any) -> Dict[str, str]:
    if len(rest) != 1:
        raise _invalid("Correct usage is 'gobject check <data-hex>'")
    obj = GovernanceObject(NULL_HASH, 1, ctx.node.chain.clock.adjusted_time(), NULL_HASH,
                           _text(rest[0]))
    if obj.object_type != OBJECT_PROPOSAL:
        raise _invalid("Invalid object type, only proposals can be validated")
    _validate_proposal(ctx, obj.data_hex)
    return {"Object status": "OK"}


def _prepare_wallet(ctx: RPCContext) -> Wallet:
    """The wallet paying the fee: the one named in the URI, or the only one loaded."""
    wallets = ctx.node.wallets
    if ctx.wallet_name is not None:
        if ctx.wallet_name not in wallets:
            raise RPCError(RPC_WALLET_NOT_FOUND, "Requested wallet does not exist or is not loaded")
        return wallets[ctx.wallet_name]
    if not wallets:
        raise RPCError(RPC_METHOD_NOT_FOUND, _NO_WALLET)
    if len(wallets) > 1:
        raise RPCError(RPC_WALLET_NOT_SPECIFIED, "Wallet file not specified (must request wallet "
                       "RPC through /wallet/<filename> uri-path).")
    return next(iter(wallets.values()))


_COLLATERAL_FAILED = ("Error making collateral transaction for governance object. Please check "
                      "your wallet balance and make sure your wallet is unlocked.")


async def _gobject_prepare(ctx: RPCContext, *rest: Any) -> str:
    """Burn the fee for the object in a wallet transaction; the txid is the fee-txid."""
    wallet = _prepare_wallet(ctx)
    if len(rest) != 4:
        raise _invalid("Correct usage is 'gobject prepare <parent-hash> <revision> <time> "
                       "<data-hex>'")
    obj = _new_object(ctx, _parent_hash(rest[0], "fee-txid, parameter 1"), rest[1], rest[2], rest[3])
    if obj.object_type in (OBJECT_TRIGGER, OBJECT_WATCHDOG):
        raise _invalid("Trigger and watchdog objects need not be prepared (however only "
                       "masternodes can create them)")
    governance = _governance(ctx)
    try:
        governance.check_locally(obj)
    except ObjectError as e:
        raise _not_valid(obj, e) from None
    fee = minimum_fee(obj.object_type, governance.params)
    try:
        ensure_unlocked(wallet)
        created = await wallet_service(ctx).send(
            wallet, [Recipient(burn_script(obj.hash), fee)], _fee_policy(ctx, None, "UNSET", None))
    except (WalletLocked, SpendError, TransactionRejected):
        raise RPCError(RPC_INTERNAL_ERROR, _COLLATERAL_FAILED) from None
    return created.tx.txid_hex


async def _wallet_copy(ctx: RPCContext, txid: bytes) -> Optional[KnownTx]:
    """A loaded wallet's copy of the fee transaction (``prepare`` made it there), for when
    the chain cannot find it without -txindex (read under the wallet's lock: an old one is
    read from its file)."""
    for wallet in ctx.node.wallets.values():
        wtx = await in_wallet(wallet, wallet.txs.get, txid)
        if wtx is not None:
            return wtx.tx, wtx.block.hash if wtx.block is not None else None
    return None


async def _gobject_submit(ctx: RPCContext, *rest: Any) -> str:
    if not 4 <= len(rest) <= 5:
        raise _invalid("Correct usage is 'gobject submit <parent-hash> <revision> <time> "
                       "<data-hex> <fee-txid>'")
    fee_txid = parse_hash_v(rest[4], "fee-txid, parameter 6") if len(rest) == 5 else NULL_HASH
    parent = _parent_hash(rest[0], "parent object hash, parameter 2")
    obj = _new_object(ctx, parent, rest[1], rest[2], rest[3], fee_txid)
    governance = _governance(ctx)
    if obj.object_type in (OBJECT_TRIGGER, OBJECT_WATCHDOG):
        signer = _active_signer(ctx)
        if signer is None or governance.keys.key_id(signer.outpoint) is None:
            raise _invalid("Only valid masternodes can submit this type of object")
        obj = governance.signed_by(obj, signer)
    elif len(rest) != 5:
        raise _invalid("The fee-txid parameter must be included to submit this type of object")
    try:
        governance.check_locally(obj)
    except ObjectError as e:
        raise _not_valid(obj, e) from None
    if not governance.rate_check(obj):
        raise _invalid("Object creation rate limit exceeded")
    try:
        await governance.submit(obj, await _wallet_copy(ctx, fee_txid))
    except (ObjectError, CollateralError) as e:
        raise _not_valid(obj, e) from None
    return hash_to_hex(obj.hash)


def _gobject_count(ctx: RPCContext, *ignored: Any) -> Dict[str, int]:
    store = _governance(ctx).store
    types = [entry.obj.object_type for entry in store]
    proposals, triggers = types.count(OBJECT_PROPOSAL), types.count(OBJECT_TRIGGER)
    return {"objects_total": len(types), "proposals": proposals, "triggers": triggers,
            "other": len(types) - proposals - triggers, "erased": len(store.erased),
            "votes": store.vote_count()}


_LIST_SIGNALS = ("valid", "funding", "delete", "endorsed", "all")
_LIST_TYPES = {"proposals": OBJECT_PROPOSAL, "triggers": OBJECT_TRIGGER,
               "watchdogs": OBJECT_WATCHDOG, "all": None}


def _object_head(obj: GovernanceObject) -> Dict[str, Any]:
    """The fields ``list`` and ``get`` both start with."""
    head = {"DataHex": obj.data_hex, "DataString": data_as_string(obj.data_hex),
            "Hash": hash_to_hex(obj.hash), "CollateralHash": hash_to_hex(obj.collateral_hash),
            "ObjectType": obj.object_type, "CreationTime": obj.time}
    if obj.signed:
        head["SigningMasternode"] = outpoint_text(obj.masternode.prevout)
    return head


def _tally_json(entry: Entry, signal: int) -> Dict[str, int]:
    tally = entry.book.tally(signal)
    return {"AbsoluteYesCount": tally.absolute_yes, "YesCount": tally.yes, "NoCount": tally.no,
            "AbstainCount": tally.abstain}


def _flags_json(governance: GovernanceService, entry: Entry, validity_key: str) -> Dict[str, Any]:
    reason = governance.local_validity(entry.obj)
    return {validity_key: not reason, "IsValidReason": reason,
            "fCachedValid": entry.flags.valid, "fCachedFunding": entry.flags.funding,
            "fCachedDelete": entry.flags.delete, "fCachedEndorsed": entry.flags.endorsed}


def _gobject_list(ctx: RPCContext, command: str, *rest: Any) -> Any:
    """list and diff (since the last diff): objects by hash, filtered by flag and type."""
    if len(rest) > 2:
        raise _invalid("Correct usage is 'gobject [list|diff] ( signal type )'")
    signal = _text(rest[0]) if rest else "valid"
    if signal not in _LIST_SIGNALS:
        return "Invalid signal, should be 'valid', 'funding', 'delete', 'endorsed' or 'all'"
    kind = _text(rest[1]) if len(rest) == 2 else "all"
    if kind not in _LIST_TYPES:
        return "Invalid type, should be 'proposals', 'triggers', 'watchdogs' or 'all'"
    governance = _governance(ctx)
    since = governance.store.last_diff_time if command == "diff" else 0
    governance.store.last_diff_time = int(ctx.node.chain.clock.now())
    result = {}
    for entry in governance.store:
        obj = entry.obj
        if obj.time < since or (signal != "all" and not getattr(entry.flags, signal)):
            continue
        if _LIST_TYPES[kind] not in (None, obj.object_type):
            continue
        result[hash_to_hex(obj.hash)] = {**_object_head(obj), **_tally_json(entry, SIGNAL_FUNDING),
                                         **_flags_json(governance, entry, "fBlockchainValidity")}
    return result


def _entry(ctx: RPCContext, value: Any, name: str, unknown: str) -> Entry:
    entry = _governance(ctx).store.get(parse_hash_v(value, name))
    if entry is None:
        raise _invalid(unknown)
    return entry


def _gobject_get(ctx: RPCContext, *rest: Any) -> Any:
    if len(rest) != 1:
        raise _invalid("Correct usage is 'gobject get <governance-hash>'")
    entry = _entry(ctx, rest[0], "GovObj hash", "Unknown governance object")
    return {**_object_head(entry.obj),
            "FundingResult": _tally_json(entry, SIGNAL_FUNDING),
            "ValidResult": _tally_json(entry, SIGNAL_VALID),
            "DeleteResult": _tally_json(entry, SIGNAL_DELETE),
            "EndorsedResult": _tally_json(entry, SIGNAL_ENDORSED),
            **_flags_json(_governance(ctx), entry, "fLocalValidity")}


def _votes_json(votes: Any) -> Dict[str, str]:
    return {hash_to_hex(vote.hash): vote.text() for vote in votes}


def _gobject_getvotes(ctx: RPCContext, *rest: Any) -> Any:
    if len(rest) != 1:
        raise RPCError(RPC_MISC_ERROR, "Correct usage is 'gobject getvotes <governance-hash>'")
    entry = _entry(ctx, rest[0], "Governance hash", "Unknown governance-hash")
    return _votes_json(entry.book.votes.values())


def _gobject_getcurrentvotes(ctx: RPCContext, *rest: Any) -> Any:
    if len(rest) not in (1, 3):
        raise RPCError(RPC_MISC_ERROR, "Correct usage is 'gobject getcurrentvotes "
                       "<governance-hash> [txid vout_index]'")
    object_hash = parse_hash_v(rest[0], "Governance hash")
    masternode = None
    if len(rest) == 3:
        masternode = OutPoint(parse_hash_v(rest[1], "Masternode Collateral hash"),
                              _lexical_int(rest[2], 0, 0xFFFFFFFF, sign=False))
    entry = _governance(ctx).store.get(object_hash)
    if entry is None:
        raise _invalid("Unknown governance-hash")
    return _votes_json(entry.book.current_votes(masternode))


def _gobject_deserialize(ctx: RPCContext, *rest: Any) -> str:
    """The object data (hex of JSON text) as compact JSON text; "null" if it is not JSON."""
    if len(rest) != 1:
        raise _invalid("Correct usage is 'gobject deserialize <data-hex>'")
    try:
        value = parse_json(parse_hex_prefix(_text(rest[0])))
    except RPCError:
        return "null"
    return encode_json(value).decode("utf-8")


def _gobject_list_all(ctx: RPCContext, *rest: Any) -> Any:
    return _gobject_list(ctx, "list", *rest)


def _gobject_diff(ctx: RPCContext, *rest: Any) -> Any:
    return _gobject_list(ctx, "diff", *rest)


def _read_vote(rest: tuple, count: int, usage: str) -> Tuple[bytes, int, int]:
    """A vote's hash, signal, outcome (and alias), checked in Dash's order."""
    if len(rest) != count:
        raise _invalid(usage)
    object_hash = parse_hash_v(rest[0], "Object hash")
    signal, outcome = (_text(value) for value in rest[1:3])
    for value in rest[3:]:
        _text(value)
    _check_signal_and_outcome(signal, outcome)
    return object_hash, SIGNALS[signal], OUTCOMES[outcome]


def _check_signal_and_outcome(signal: str, outcome: str) -> None:
    if signal not in SIGNALS:
        raise _invalid("Invalid vote signal. Please using one of the following: "
                       "(funding|valid|delete|endorsed) OR `custom sentinel code` ")
    if outcome not in OUTCOMES:
        raise _invalid("Invalid vote outcome. Please use one of the following: "
                       "'yes', 'no' or 'abstain'")


def _failed(message: str) -> Dict[str, str]:
    return {"result": "failed", "errorMessage": message}


def _cast(ctx: RPCContext, signer: Optional[MasternodeSigner], vote: Tuple[bytes, int, int]
          ) -> Dict[str, str]:
    """One masternode's vote as vote-conf/-many/-alias report it."""
    if signer is None or _governance(ctx).keys.key_id(signer.outpoint) is None:
        return _failed("Can't find masternode by collateral output")
    try:
        _governance(ctx).vote(signer, *vote)
    except VoteError as e:
        return _failed(str(e))
    return {"result": "success"}


def _vote_result(detail: Dict[str, Dict[str, str]]) -> Dict[str, Any]:
    succeeded = sum(1 for status in detail.values() if status["result"] == "success")
    return {"overall": "Voted successfully %d time(s) and failed %d time(s)."
                       % (succeeded, len(detail) - succeeded),
            "detail": detail}


def _active_signer(ctx: RPCContext) -> Optional[MasternodeSigner]:
    """This node's own masternode (-masternodeprivkey), once it knows its outpoint."""
    active = ctx.node.masternodes.active
    if active is None or active.outpoint is None:
        return None
    return MasternodeSigner(active.outpoint, active.key, active.compressed)


def _gobject_vote_conf(ctx: RPCContext, *rest: Any) -> Dict[str, Any]:
    vote = _read_vote(rest, 3, "Correct usage is 'gobject vote-conf <governance-hash> "
                      "[funding|valid|delete] [yes|no|abstain]'")
    return _vote_result({"coin.conf": _cast(ctx, _active_signer(ctx), vote)})


def _conf_votes(ctx: RPCContext, vote: Tuple[bytes, int, int], alias: Optional[str] = None
                ) -> Dict[str, Any]:
    """Votes of the masternode.conf entries (all, or the one named ``alias``)."""
    detail: Dict[str, Dict[str, str]] = {}
    for entry in ctx.node.masternodes.conf_entries:
        if alias is not None and entry.alias != alias:
            continue
        try:
            secret, compressed = decode_wif(entry.private_key, ctx.node.chain.params)
        except (AddressError, ValueError):
            detail[entry.alias] = _failed("Masternode signing error, could not set key correctly")
            continue
        try:
            outpoint = OutPoint(bytes.fromhex(entry.txid)[::-1], int(entry.index))
        except ValueError:
            continue  # the reference skips an unreadable output index silently
        detail[entry.alias] = _cast(ctx, MasternodeSigner(
            outpoint, coincurve.PrivateKey(secret), compressed), vote)
    return _vote_result(detail)


def _gobject_vote_many(ctx: RPCContext, *rest: Any) -> Dict[str, Any]:
    return _conf_votes(ctx, _read_vote(rest, 3, "Correct usage is 'gobject vote-many "
                                       "<governance-hash> [funding|valid|delete] [yes|no|abstain]'"))


def _gobject_vote_alias(ctx: RPCContext, *rest: Any) -> Dict[str, Any]:
    vote = _read_vote(rest, 4, "Correct usage is 'gobject vote-alias <governance-hash> "
                      "[funding|valid|delete] [yes|no|abstain] <alias-name>'")
    return _conf_votes(ctx, vote, _text(rest[3]))


def _gobject_sub(name: str, handler: Callable[..., Any], summary: str) -> SubCommand:
    return SubCommand(name, handler, args=_REST, summary=summary)


gobject = command_family(
    "gobject", category="governance", width=18,
    help='gobject "command"...\nManage governance objects\n',
    subcommands=[
        _gobject_sub("check", _gobject_check, "Validate governance object data (proposal only)"),
        _gobject_sub("prepare", _gobject_prepare,
                     "Prepare governance object by signing and creating tx"),
        _gobject_sub("submit", _gobject_submit, "Submit governance object to network"),
        _gobject_sub("deserialize", _gobject_deserialize,
                     "Deserialize governance object from hex string to JSON"),
        _gobject_sub("count", _gobject_count, "Count governance objects and votes"),
        _gobject_sub("get", _gobject_get, "Get governance object by hash"),
        _gobject_sub("getvotes", _gobject_getvotes,
                     "Get all votes for a governance object hash (including old votes)"),
        _gobject_sub("getcurrentvotes", _gobject_getcurrentvotes,
                     "Get only current (tallying) votes for a governance object hash (does not "
                     "include old votes)"),
        _gobject_sub("list", _gobject_list_all,
                     "List governance objects (can be filtered by signal and/or object type)"),
        _gobject_sub("diff", _gobject_diff, "List differences since last diff"),
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


_VOTERAW_HELP = ("voteraw <masternode-tx-hash> <masternode-tx-index> <governance-hash> "
                 "<vote-signal> [yes|no|abstain] <time> <vote-sig>\n"
                 "Compile and relay a governance vote with provided external signature instead of "
                 "signing vote internally\n")
_INT, _INT64 = Arg("value", INT), Arg("value", INT64)


def _voteraw(ctx: RPCContext, *params: Any) -> str:
    """A vote signed elsewhere (by the masternode's key), checked and counted here."""
    if len(params) != 7:
        raise RPCError(RPC_MISC_ERROR, _VOTERAW_HELP)
    masternode = OutPoint(parse_hash_v(params[0], "mn tx hash"), _INT.convert(params[1]) & 0xFFFFFFFF)
    object_hash = parse_hash_v(params[2], "Governance hash")
    signal, outcome = _text(params[3]), _text(params[4])
    _check_signal_and_outcome(signal, outcome)
    time = _INT64.convert(params[5])
    try:
        signature = base64.b64decode(_text(params[6]), validate=True)
    except binascii.Error:
        raise RPCError(RPC_INVALID_ADDRESS_OR_KEY, "Malformed base64 encoding") from None
    governance = _governance(ctx)
    key_id = governance.keys.key_id(masternode)
    if key_id is None:
        raise RPCError(RPC_INTERNAL_ERROR, "Failure to find masternode in list : "
                       + outpoint_text(masternode))
    vote = Vote(masternode, object_hash, SIGNALS[signal], OUTCOMES[outcome], time, signature)
    if not vote_is_valid(vote, key_id, int(governance.now())):
        raise RPCError(RPC_INTERNAL_ERROR, "Failure to verify vote.")
    try:
        governance.add_vote(vote)
    except VoteError as e:
        raise RPCError(RPC_INTERNAL_ERROR, "Error voting : %s" % e) from None
    return "Voted successfully"


voteraw = RPCMethod(name="voteraw", category="governance", handler=_voteraw,
                    help_text=_VOTERAW_HELP, args=(Arg("args", ANY, variadic=True),))


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
    params = governance_params(ctx.node.chain.params)
    last, following = superblocks_around(ctx.node.chain.state.height, params)
    return {"governanceminquorum": params.min_quorum,
            "masternodewatchdogmaxseconds": WATCHDOG_MAX_SECONDS,
            "proposalfee": amount_to_json(params.proposal_fee),
            "superblockcycle": params.superblock_cycle,
            "lastsuperblock": last,
            "nextsuperblock": following,
            "maxgovobjdatasize": MAX_OBJECT_DATA_SIZE}


@rpc_method(
    "getsuperblockbudget", category="governance",
    signature="getsuperblockbudget index",
    args=[Arg("index", INT, help="The block index")],
    help="Returns the absolute maximum sum of superblock payments allowed.",
    result="n                (numeric) The absolute maximum sum of superblock payments allowed, "
           "in COIN",
    examples=example_cli("getsuperblockbudget", "1000") + example_rpc("getsuperblockbudget", "1000"))
def getsuperblockbudget(ctx: RPCContext, index: int) -> str:
    """The budget as FormatMoney text, as the reference answers it (a string, not a number)."""
    if index < 0:
        raise _invalid("Block height out of range")
    return format_money(superblock_budget(index, ctx.node.chain.params))


#: What the ``governance`` entry point registers.
METHODS = [gobject, voteraw, getgovernanceinfo, getsuperblockbudget]
