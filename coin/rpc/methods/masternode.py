"""Masternode methods: masternode, masternodelist, masternodebroadcast, mnsync, sentinelping.

Registered through the ``coin.rpc`` entry point ``masternode``; the state behind them is the
node's :class:`coin.masternode.service.MasternodeService` (``ctx.node.masternodes``).  Modes,
formats, help texts and errors are the reference node's (dimecoin 2.3.0.0,
src/rpc/masternode.cpp).  Where this differs, and why:

- ``masternodebroadcast relay`` checks every broadcast against the UTXO set, "fast" or
  not (the reference's fast mode adds an unchecked broadcast to its list).
- ``sentinelping`` answers true and records nothing, as the reference does.
- ``masternode winners`` caps its look-back at the chain height, so a huge count cannot
  stall the node (the reference lists negative heights too).
"""

from __future__ import annotations

import base64
from typing import Any, Callable, Dict, List

import coincurve

from coin.masternode import signing
from coin.masternode.conf import MasternodeEntry
from coin.masternode.manager import MasternodeError
from coin.masternode.record import Masternode
from coin.masternode.service import BroadcastError, MasternodeService
from coin.masternode.sync import SyncError
from coin.p2p.messages import MasternodeBroadcastMessage
from coin.primitives.address import Destination, encode_address, encode_wif
from coin.primitives.hashes import hash160
from coin.primitives.serialize import ByteReader, DeserializationError, compact_size
from coin.primitives.transaction import OutPoint
from coin.rpc.context import RPCContext
from coin.rpc.errors import (
    RPC_CLIENT_IN_INITIAL_DOWNLOAD, RPC_DESERIALIZATION_ERROR, RPC_INTERNAL_ERROR,
    RPC_INVALID_PARAMETER, RPC_METHOD_NOT_FOUND, RPC_MISC_ERROR, RPC_WALLET_NOT_FOUND,
    RPC_WALLET_NOT_SPECIFIED, RPCError,
)
from coin.primitives.hashes import is_hex
from coin.rpc.registry import (
    ANY, STR, Arg, RPCMethod, SubCommand, command_family, example_cli, example_rpc,
)
from coin.wallet.addresses import ensure_unlocked

_STR = Arg("value", STR)
_REST = (Arg("args", ANY, variadic=True),)
_NO_WALLET = "Method not found (wallet method is disabled because no wallet is loaded)"


def _text(value: Any) -> str:
    """UniValue's get_str(): -1 "JSON value is not a string as expected" otherwise."""
    return _STR.convert(value)


def _invalid(message: str) -> RPCError:
    return RPCError(RPC_INVALID_PARAMETER, message)


def _service(ctx: RPCContext) -> MasternodeService:
    return ctx.node.masternodes


def _wallet(ctx: RPCContext) -> Any:
    """Core's GetWalletForJSONRPCRequest + EnsureWalletIsAvailable, then unlocked."""
    wallets = ctx.node.wallets
    if ctx.wallet_name is not None:
        wallet = wallets.get(ctx.wallet_name)
        if wallet is None:
            raise RPCError(RPC_WALLET_NOT_FOUND, "Requested wallet does not exist or is not loaded")
    elif len(wallets) == 1:
        wallet = next(iter(wallets.values()))
    elif not wallets:
        raise RPCError(RPC_METHOD_NOT_FOUND, _NO_WALLET)
    else:
        raise RPCError(RPC_WALLET_NOT_SPECIFIED, "Wallet file not specified (must request wallet "
                       "RPC through /wallet/<filename> uri-path).")
    ensure_unlocked(wallet)
    return wallet


def _outpoint_text(outpoint: OutPoint) -> str:
    """The reference's COutPoint::ToString() (full txid), the key of every list."""
    return "COutPoint(%s, %d)" % (outpoint.txid[::-1].hex(), outpoint.n)


def _payee(ctx: RPCContext, mn: Masternode) -> str:
    return encode_address(Destination("pubkeyhash", hash160(mn.broadcast.collateral_pubkey)),
                          ctx.node.chain.params)


def _addr(mn: Masternode) -> str:
    return signing.service_string(mn.broadcast.ip, mn.broadcast.port)


# ------------------------------------------------------------------ masternodelist

_LIST_MODES = ("activeseconds", "addr", "full", "info", "lastseen", "lastpaidtime",
               "lastpaidblock", "protocol", "payee", "pubkey", "rank", "status")

_MASTERNODELIST_HELP = """\
masternodelist ( "mode" "filter" )
Get a list of masternodes in different modes

Arguments:
1. "mode"      (string, optional/required to use filter, defaults = status) The mode to run \
list in
2. "filter"    (string, optional) Filter results. Partial match by outpoint by default in all \
modes,
                                    additional matches in some modes are also available

Available modes:
  activeseconds  - Print number of seconds masternode recognized by the network as enabled
                   (since latest issued "masternode start/start-many/start-alias")
  addr           - Print ip address associated with a masternode (can be additionally \
filtered, partial match)
  full           - Print info in format 'status protocol payee lastseen activeseconds \
lastpaidtime lastpaidblock IP'
                   (can be additionally filtered, partial match)
  info           - Print info in format 'status protocol payee lastseen activeseconds \
sentinelversion sentinelstate IP'
                   (can be additionally filtered, partial match)
  lastpaidblock  - Print the last block height a node was paid on the network
  lastpaidtime   - Print the last time a node was paid on the network
  lastseen       - Print timestamp of when a masternode was last seen on the network
  payee          - Print Coin address associated with a masternode (can be additionally \
filtered,
                   partial match)
  protocol       - Print protocol of a masternode (can be additionally filtered, exact match)
  pubkey         - Print the masternode (not collateral) public key
  rank           - Print rank of a masternode based on current block
  status         - Print masternode status: PRE_ENABLED / ENABLED / EXPIRED / WATCHDOG_EXPIRED \
/ NEW_START_REQUIRED /
                   UPDATE_REQUIRED / POSE_BAN / OUTPOINT_SPENT (can be additionally filtered, \
partial match)
"""

_LIST_ARGS = (Arg("mode", STR, default="status"), Arg("filter", STR, default=""))


def _full(ctx: RPCContext, mn: Masternode) -> str:
    return "%18s %d %s %d %8d %10d %6d %s" % (
        mn.state_name, mn.broadcast.protocol_version, _payee(ctx, mn), mn.last_ping.sig_time,
        mn.active_seconds(), mn.last_paid_time, mn.last_paid_height, _addr(mn))


def _info(ctx: RPCContext, mn: Masternode) -> str:
    return "%18s %d %s %d %8d %s %s" % (
        mn.state_name, mn.broadcast.protocol_version, _payee(ctx, mn), mn.last_ping.sig_time,
        mn.active_seconds(), "current" if mn.last_ping.sentinel_current else "expired",
        _addr(mn))


#: mode -> (value of a masternode, text also matched by the filter or None).
_MODES: Dict[str, Callable[[RPCContext, Masternode], Any]] = {
    "activeseconds": lambda ctx, mn: mn.active_seconds(),
    "addr": lambda ctx, mn: _addr(mn),
    "full": _full,
    "info": _info,
    "lastpaidblock": lambda ctx, mn: mn.last_paid_height,
    "lastpaidtime": lambda ctx, mn: mn.last_paid_time,
    "lastseen": lambda ctx, mn: mn.last_ping.sig_time,
    "payee": _payee,
    "protocol": lambda ctx, mn: mn.broadcast.protocol_version,
    "pubkey": lambda ctx, mn: mn.broadcast.masternode_pubkey.hex(),
    "status": lambda ctx, mn: mn.state_name,
}
#: Modes whose value the filter also searches (partial match; "protocol": exact).
_VALUE_FILTERED = ("addr", "full", "info", "payee", "status")


def _masternode_list(ctx: RPCContext, mode: str, filter: str) -> Dict[str, Any]:
    if mode not in _LIST_MODES:
        raise RPCError(RPC_MISC_ERROR, _MASTERNODELIST_HELP)
    service = _service(ctx)
    result: Dict[str, Any] = {}
    if mode == "rank":
        # The reference ranks by the tip's own hash (its GetMasternodeRanks).
        ranked = service.manager.ranked(service.tip_height + 101, service.block_hash_at)
        for rank, mn in enumerate(ranked, 1):
            key = _outpoint_text(mn.outpoint)
            if filter in key:
                result[key] = rank
        return result
    value_of = _MODES[mode]
    for mn in sorted(service.manager, key=lambda mn: mn.outpoint.key()):
        key, value = _outpoint_text(mn.outpoint), value_of(ctx, mn)
        if filter and filter not in key:
            if mode == "protocol" and filter == str(value):
                pass
            elif mode not in _VALUE_FILTERED or filter not in value:
                continue
        result[key] = value
    return result


masternodelist = RPCMethod(name="masternodelist", category="masternode",
                           handler=_masternode_list, help_text=_MASTERNODELIST_HELP,
                           args=_LIST_ARGS)


# ------------------------------------------------------------------ masternode

def _masternode_count(ctx: RPCContext, *rest: Any) -> Any:
    if len(rest) > 1:
        raise _invalid("Too many parameters")
    service = _service(ctx)
    if not rest:
        return len(service.manager)
    mode = _text(rest[0])
    if mode == "enabled":
        return service.manager.count_enabled()
    _, qualify = service.payments.next_in_queue(service.tip_height + 1, service.tip_height,
                                                service.now(), service.block_hash_at)
    if mode == "qualify":
        return qualify
    if mode == "all":
        return "Total: %d (Enabled: %d / Qualify: %d)" % (
            len(service.manager), service.manager.count_enabled(), qualify)
    return None  # the reference falls through to the end of the command ("ps" too)


def _winner_at(ahead: int) -> Callable[..., Any]:
    """current (next block) and winner (ten blocks ahead): the local queue's pick."""

    def handler(ctx: RPCContext, *ignored: Any) -> Any:
        service = _service(ctx)
        height = service.tip_height + ahead
        mn, _ = service.payments.next_in_queue(height, service.tip_height, service.now(),
                                               service.block_hash_at)
        if mn is None:
            return "unknown"
        return {"height": height, "IP:port": _addr(mn),
                "protocol": mn.broadcast.protocol_version,
                "outpoint": _outpoint_text(mn.outpoint), "payee": _payee(ctx, mn),
                "lastseen": mn.last_ping.sig_time, "activeseconds": mn.active_seconds()}

    return handler


def _masternode_genkey(ctx: RPCContext, *ignored: Any) -> str:
    """A new masternode private key (uncompressed, as Dash makes them)."""
    return encode_wif(coincurve.PrivateKey().secret, ctx.node.chain.params, compressed=False)


def _masternode_outputs(ctx: RPCContext, *ignored: Any) -> Dict[str, str]:
    return {txid: str(n) for txid, n in _service(ctx).collateral_outputs(_wallet(ctx))}


async def _start(ctx: RPCContext, service: MasternodeService, entry: MasternodeEntry,
                 wallet: Any, status: Dict[str, Any]) -> bool:
    """Create, add and relay one broadcast; the outcome goes into ``status``."""
    try:
        mnb = service.create_broadcast(entry, wallet)
        await service.submit_broadcast(mnb)
    except (BroadcastError, MasternodeError) as e:
        status["result"] = "failed"
        status["errorMessage"] = str(e)
        return False
    status["result"] = "successful"
    return True


async def _masternode_start_alias(ctx: RPCContext, *rest: Any) -> Dict[str, Any]:
    wallet = _wallet(ctx)
    if not rest:
        raise _invalid("Please specify an alias")
    alias = _text(rest[0])
    status: Dict[str, Any] = {"alias": alias}
    service = _service(ctx)
    entry = service.conf_entry(alias)
    if entry is None:
        status.update(result="failed",
                      errorMessage="Could not find alias in config. Verify with list-conf.")
        return status
    await _start(ctx, service, entry, wallet, status)
    return status


def _start_mode(mode: str) -> Callable[..., Any]:
    async def handler(ctx: RPCContext, *ignored: Any) -> Dict[str, Any]:
        wallet = _wallet(ctx)
        service = _service(ctx)
        if mode != "all" and not service.sync.is_list_synced():
            raise RPCError(RPC_CLIENT_IN_INITIAL_DOWNLOAD,
                           "You can't use this command until masternode list is synced")
        good = bad = 0
        detail: Dict[str, Any] = {}
        for entry in service.conf_entries:
            mn = service.manager.get(OutPoint(bytes.fromhex(entry.txid)[::-1], int(entry.index))) \
                if is_hex(entry.txid) and len(entry.txid) == 64 and entry.index.isdigit() else None
            if (mode == "missing" and mn is not None) or \
                    (mode == "disabled" and mn is not None and mn.is_enabled()):
                continue
            status: Dict[str, Any] = {"alias": entry.alias}
            if await _start(ctx, service, entry, wallet, status):
                good += 1
            else:
                bad += 1
            detail["status"] = status  # the reference's object repeats the key "status"
        return {"overall": "Successfully started %d masternodes, failed to start %d, total %d"
                % (good, bad, good + bad), "detail": detail}

    return handler


def _masternode_status(ctx: RPCContext, *ignored: Any) -> Dict[str, Any]:
    service = _service(ctx)
    active = service.active
    if active is None:
        raise RPCError(RPC_INTERNAL_ERROR, "This is not a masternode")
    out: Dict[str, Any] = {
        "outpoint": _outpoint_text(active.outpoint or OutPoint()),
        "service": active.service or "[::]:0"}
    mn = service.manager.get(active.outpoint) if active.outpoint is not None else None
    if mn is not None:
        out["payee"] = _payee(ctx, mn)
    out["status"] = active.status(service.mn_params.min_confirmations)
    return out


def _masternode_list_conf(ctx: RPCContext, *ignored: Any) -> List[Dict[str, Any]]:
    service = _service(ctx)
    result = []
    for entry in service.conf_entries:
        found = None
        if is_hex(entry.txid) and len(entry.txid) == 64 and entry.index.isdigit():
            found = service.manager.get(OutPoint(bytes.fromhex(entry.txid)[::-1], int(entry.index)))
        result.append({"alias": entry.alias, "address": entry.address,
                       "privateKey": entry.private_key, "txHash": entry.txid,
                       "outputIndex": entry.index,
                       "status": found.state_name if found is not None else "MISSING"})
    return result


def _atoi(text: str) -> int:
    """glibc's atoi: optional blanks and sign, then digits (0 if none), read as strtol
    (clamped to 64 bits) and cut to a C int. Thousands of digits are no ValueError."""
    text = text.lstrip(" \t\n\v\f\r")
    sign = -1 if text[:1] == "-" else 1
    digits = text[1:] if text[:1] in "+-" and text else text
    run = len(digits) - len(digits.lstrip("0123456789"))
    significant = digits[:run].lstrip("0")
    value = sign * (int(significant or "0") if len(significant) <= 19 else 1 << 63)
    value = max(-(1 << 63), min((1 << 63) - 1, value))
    return (value + (1 << 31)) % (1 << 32) - (1 << 31)


def _masternode_winners(ctx: RPCContext, *rest: Any) -> Dict[str, str]:
    service = _service(ctx)
    height = service.tip_height
    last = _atoi(_text(rest[0])) if rest else 10
    wanted = _text(rest[1]) if len(rest) == 2 else ""
    if len(rest) > 2:
        raise _invalid("Correct usage is 'masternode winners ( \"count\" \"filter\" )'")
    params = ctx.node.chain.params

    def address_of(script: bytes) -> str:
        return encode_address(Destination("pubkeyhash", script[3:23]), params)

    result = {}
    for h in range(height - min(last, height), height + 20):
        text = service.payments.payments_string(h, address_of)
        if not wanted or wanted in text:
            result[str(h)] = text
    return result


def _masternode_connect(ctx: RPCContext, *rest: Any) -> str:
    if not rest:
        raise _invalid("Masternode address required")
    address = _text(rest[0])
    p2p = _service(ctx).p2p
    if not p2p.connect_to(address):
        raise RPCError(RPC_INTERNAL_ERROR, "Couldn't connect to masternode %s" % address)
    return "successfully connected"


def _masternode_sub(name: str, handler: Callable[..., Any], summary: str,
                    **options: Any) -> SubCommand:
    return SubCommand(name, handler, args=options.pop("args", _REST), summary=summary, **options)


def _family_help(name: str, purpose: str) -> str:
    """The head of a Dash command family's help, before its list of commands."""
    return ('%s "command"...\n%s\n\nArguments:\n1. "command"        (string or set of strings, '
            "required) The command to execute\n" % (name, purpose))


_masternode_family = command_family(
    "masternode", category="masternode", width=12,
    help=_family_help("masternode", "Set of commands to execute masternode related actions"),
    subcommands=[
        _masternode_sub("count", _masternode_count, "Print number of all known masternodes "
                        "(optional: 'ps', 'enabled', 'all', 'qualify')"),
        _masternode_sub("current", _winner_at(1), "Print info on current masternode "
                        "winner to be paid the next block (calculated locally)"),
        _masternode_sub("genkey", _masternode_genkey, "Generate new masternodeprivkey"),
        _masternode_sub("outputs", _masternode_outputs, "Print masternode compatible outputs"),
        _masternode_sub("start-alias", _masternode_start_alias, "Start single remote masternode "
                        "by assigned alias configured in masternode.conf"),
        _masternode_sub("start-all", _start_mode("all"), "Start remote masternodes configured "
                        "in masternode.conf (<mode>: 'all', 'missing', 'disabled')",
                        label="start-<mode>"),
        _masternode_sub("status", _masternode_status, "Print masternode status information"),
        _masternode_sub("list", _masternode_list, "Print list of all known masternodes (see "
                        "masternodelist for more info)", args=_LIST_ARGS,
                        usage=_MASTERNODELIST_HELP),
        _masternode_sub("list-conf", _masternode_list_conf,
                        "Print masternode.conf in JSON format"),
        _masternode_sub("winner", _winner_at(10),
                        "Print info on next masternode winner to vote for"),
        _masternode_sub("winners", _masternode_winners, "Print list of masternode winners"),
    ])

#: Commands the reference accepts without listing them in its help.
_UNLISTED: Dict[str, Callable[..., Any]] = {
    "start-missing": _start_mode("missing"),
    "start-disabled": _start_mode("disabled"),
    "connect": _masternode_connect,
    "debug": lambda ctx, *rest: None,  # accepted, then the reference falls through: null
}


def _masternode(ctx: RPCContext, command: str, *rest: Any) -> Any:
    if command == "start-many":
        raise _invalid("DEPRECATED, please use start-all instead")
    unlisted = _UNLISTED.get(command)
    if unlisted is not None:
        return unlisted(ctx, *rest)
    return _masternode_family.handler(ctx, command, *rest)


masternode = RPCMethod(name="masternode", category="masternode", handler=_masternode,
                       help_text=_masternode_family.help_text, args=_masternode_family.args)


# ------------------------------------------------------------------ masternodebroadcast

def _decode_broadcasts(text: str) -> List[MasternodeBroadcastMessage]:
    """A serialized vector of broadcasts; -22 when it does not parse."""
    failure = RPCError(RPC_DESERIALIZATION_ERROR, "Masternode broadcast message decode failed")
    if not is_hex(text):
        raise failure
    r = ByteReader(bytes.fromhex(text))
    try:
        count = r.read_compact_size()
        # Pings inside a vector carry every optional field, so each entry's end is known.
        broadcasts = [MasternodeBroadcastMessage.read(r) for _ in range(count)]
        r.assert_end()
    except (DeserializationError, ValueError):
        raise failure from None
    return broadcasts


def _encode_broadcasts(broadcasts: List[MasternodeBroadcastMessage]) -> str:
    return (compact_size(len(broadcasts)) + b"".join(m.serialize() for m in broadcasts)).hex()


def _signature_ok(mnb: MasternodeBroadcastMessage) -> bool:
    return signing.verify(mnb.collateral_pubkey, mnb.signature, signing.broadcast_string(mnb))


def _hash_text(mnb: MasternodeBroadcastMessage) -> str:
    return mnb.hash[::-1].hex()


async def _create(ctx: RPCContext, entries: List[MasternodeEntry], detail: Dict[str, Any]
                  ) -> List[MasternodeBroadcastMessage]:
    """Broadcasts for ``entries`` signed offline (not added, not relayed)."""
    service, wallet = _service(ctx), _wallet(ctx)
    created = []
    for entry in entries:
        status: Dict[str, Any] = {"alias": entry.alias}
        try:
            created.append(service.create_broadcast(entry, wallet, offline=True))
            status["result"] = "successful"
        except BroadcastError as e:
            status.update(result="failed", errorMessage=str(e))
        detail[entry.alias] = status
    return created


async def _broadcast_create_alias(ctx: RPCContext, *rest: Any) -> Dict[str, Any]:
    if not rest:
        raise _invalid("Please specify an alias")
    alias = _text(rest[0])
    entry = _service(ctx).conf_entry(alias)
    if entry is None:
        _wallet(ctx)
        return {"alias": alias, "result": "not found",
                "errorMessage": "Could not find alias in config. Verify with list-conf."}
    detail: Dict[str, Any] = {}
    created = await _create(ctx, [entry], detail)
    status = detail[alias]
    if created:
        status["hex"] = _encode_broadcasts(created)
    return status


async def _broadcast_create_all(ctx: RPCContext, *ignored: Any) -> Dict[str, Any]:
    entries = _service(ctx).conf_entries
    detail: Dict[str, Any] = {}
    created = await _create(ctx, entries, detail)
    failed = len(entries) - len(created)
    return {"overall": "Successfully created broadcast messages for %d masternodes, failed to "
                       "create %d, total %d" % (len(created), failed, len(entries)),
            # The reference's object repeats the key "status"; the last entry remains.
            "detail": {"status": status for status in detail.values()},
            "hex": _encode_broadcasts(created)}


def _ping_json(mnb: MasternodeBroadcastMessage) -> Dict[str, Any]:
    ping = mnb.last_ping
    return {"outpoint": _outpoint_text(ping.outpoint), "blockHash": ping.block_hash[::-1].hex(),
            "sigTime": ping.sig_time, "vchSig": base64.b64encode(ping.signature).decode()}


def _broadcast_decode(ctx: RPCContext, *rest: Any) -> Dict[str, Any]:
    if len(rest) != 1:
        raise _invalid("Correct usage is 'masternodebroadcast decode \"hexstring\"'")
    good = bad = 0
    result: Dict[str, Any] = {}
    for mnb in _decode_broadcasts(_text(rest[0])):
        if _signature_ok(mnb):
            good += 1
            result[_hash_text(mnb)] = {
                "outpoint": _outpoint_text(mnb.outpoint),
                "addr": signing.service_string(mnb.ip, mnb.port),
                "pubKeyCollateralAddress": hash160(mnb.collateral_pubkey)[::-1].hex(),
                "pubKeyMasternode": hash160(mnb.masternode_pubkey)[::-1].hex(),
                "vchSig": base64.b64encode(mnb.signature).decode(),
                "sigTime": mnb.sig_time, "protocolVersion": mnb.protocol_version,
                "nLastDsq": 0, "lastPing": _ping_json(mnb)}
        else:
            bad += 1
            result[_hash_text(mnb)] = {
                "errorMessage": "Masternode broadcast signature verification failed"}
    result["overall"] = ("Successfully decoded broadcast messages for %d masternodes, failed "
                         "to decode %d, total %d" % (good, bad, good + bad))
    return result


_RELAY_USAGE = ("masternodebroadcast relay \"hexstring\" ( fast )\n"
                "\nArguments:\n"
                "1. \"hex\"      (string, required) Broadcast messages hex string\n"
                "2. fast       (string, optional) If none, using safe method\n")


async def _broadcast_relay(ctx: RPCContext, *rest: Any) -> Dict[str, Any]:
    if not 1 <= len(rest) <= 2:
        raise _invalid(_RELAY_USAGE)
    service = _service(ctx)
    good = bad = 0
    result: Dict[str, Any] = {}
    for mnb in _decode_broadcasts(_text(rest[0])):
        entry: Dict[str, Any] = {"outpoint": _outpoint_text(mnb.outpoint),
                                 "addr": signing.service_string(mnb.ip, mnb.port)}
        accepted = False
        if _signature_ok(mnb):
            try:
                accepted = await service.submit_broadcast(mnb)
            except MasternodeError:
                accepted = False
        if accepted:
            good += 1
            entry[_hash_text(mnb)] = "successful"
        else:
            bad += 1
            entry["errorMessage"] = "Masternode broadcast signature verification failed"
        result[_hash_text(mnb)] = entry
    result["overall"] = ("Successfully relayed broadcast messages for %d masternodes, failed to "
                         "relay %d, total %d" % (good, bad, good + bad))
    return result


masternodebroadcast = command_family(
    "masternodebroadcast", category="masternode", width=13,
    help=_family_help("masternodebroadcast",
                      "Set of commands to create and relay masternode broadcast messages"),
    subcommands=[
        _masternode_sub("create-alias", _broadcast_create_alias, "Create single remote "
                        "masternode broadcast message by assigned alias configured in "
                        "masternode.conf"),
        _masternode_sub("create-all", _broadcast_create_all, "Create remote masternode "
                        "broadcast messages for all masternodes configured in masternode.conf"),
        _masternode_sub("decode", _broadcast_decode, "Decode masternode broadcast message"),
        _masternode_sub("relay", _broadcast_relay,
                        "Relay masternode broadcast message to the network"),
    ])


# ------------------------------------------------------------------ mnsync, sentinelping

def _mnsync(ctx: RPCContext, mode: str) -> Any:
    sync = _service(ctx).sync
    if mode == "status":
        return {"AssetID": sync.asset, "AssetName": sync.name,
                "AssetStartTime": sync.asset_start, "Attempt": sync.attempt,
                "IsBlockchainSynced": sync.blockchain_synced(),
                "IsMasternodeListSynced": sync.is_list_synced(),
                "IsWinnersListSynced": sync.is_winners_synced(), "IsSynced": sync.is_synced(),
                "IsFailed": sync.is_failed()}
    if mode == "next":
        try:
            sync.next()
        except SyncError as e:
            raise RPCError(RPC_MISC_ERROR, str(e)) from None
        return "sync updated to " + sync.name
    if mode == "reset":
        sync.reset()
        sync.next()
        return "success"
    return "failure"


mnsync = RPCMethod(
    name="mnsync", category="masternode", handler=_mnsync, args=(Arg("mode", STR),),
    help_text=("mnsync [status|next|reset]\n"
               "Returns the sync status, updates to the next step or resets it entirely.\n"))

_SENTINEL_HELP = ("sentinelping version\n"
                  "\nSentinel ping.\n"
                  "\nArguments:\n"
                  "1. version           (string, required) Sentinel version in the form "
                  "\"x.x.x\"\n"
                  "\nResult:\n"
                  "state                (boolean) Ping result\n"
                  "\nExamples:\n" + example_cli("sentinelping", "1.0.2")
                  + example_rpc("sentinelping", "1.0.2"))


def _sentinelping(ctx: RPCContext, version: Any) -> bool:
    return True


sentinelping = RPCMethod(name="sentinelping", category="masternode", handler=_sentinelping,
                         help_text=_SENTINEL_HELP, args=(Arg("version", ANY),))

#: What the ``masternode`` entry point registers.
METHODS = [masternode, masternodelist, masternodebroadcast, mnsync, sentinelping]
