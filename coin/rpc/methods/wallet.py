"""Wallet administration methods (Core 0.17's "== Wallet ==", part A) and ``generate``.

Registered through the ``coin.rpc`` entry point ``wallet``: loading and creating
wallets, addresses and labels, the key pool, imports and dumps, rescans,
encryption and message signing.  Balances, listings and spending are in
:mod:`coin.rpc.methods.wallet_tx`.

Threading: a wallet's state is guarded by :attr:`Wallet.lock`, which the
validation worker also takes while it feeds the wallet blocks.  Handlers run
wallet work through :func:`in_wallet`: inline on the reactor when the lock is
free and the work is quick, otherwise on a pool thread, so the reactor never
waits for a wallet.  Key derivation from a passphrase (25,000 SHA-512 rounds),
encryption, dumps and imports always run on a thread; rescans run in chunks on
the validation worker (:meth:`WalletService.rescan`).  Every change is one
database transaction (:meth:`WalletDB.batch`).

Hash160 identifiers (``hdmasterkeyid``, ``hdseedid``) are printed as Core's
``uint160::GetHex`` does, byte-reversed.
"""

from __future__ import annotations

import calendar
import os
import time
import weakref
from contextlib import contextmanager
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import coincurve
from twisted.internet.defer import Deferred, maybeDeferred
from twisted.internet.threads import deferToThread

from coin import __version__
from coin.consensus.errors import ValidationError
from coin.primitives.address import (
    AddressError, Destination, decode_wif, encode_address, encode_wif, try_decode_address,
)
from coin.primitives.hashes import hash160, hash_to_hex
from coin.rpc.context import RPCContext
from coin.rpc.errors import (
    RPC_INTERNAL_ERROR, RPC_INVALID_ADDRESS_OR_KEY, RPC_INVALID_PARAMETER, RPC_METHOD_NOT_FOUND,
    RPC_MISC_ERROR, RPC_TYPE_ERROR, RPC_WALLET_ENCRYPTION_FAILED, RPC_WALLET_ERROR,
    RPC_WALLET_INVALID_LABEL_NAME,
    RPC_WALLET_KEYPOOL_RAN_OUT, RPC_WALLET_NOT_FOUND, RPC_WALLET_PASSPHRASE_INCORRECT,
    RPC_WALLET_UNLOCK_NEEDED, RPC_WALLET_WRONG_ENC_STATE, RPCError,
)
from coin.rpc.params import is_hex
from coin.rpc.registry import BOOL, INT, INT64, STR, Arg, example_cli, example_rpc, rpc_method
from coin.script.standard import (
    TX_MULTISIG, destination_script, extract_destinations, p2pk_script, p2pkh_script, solve,
)
from coin.views.amounts import amount_to_json
from coin.wallet.crypter import WrongPassphrase
from coin.wallet.hd import ExtKey
from coin.wallet.keystore import ISMINE_SPENDABLE, ISMINE_WATCH_ONLY, KeypoolEmpty
from coin.primitives.message import sign_message
from coin.wallet.service import WALLET_FILE, WalletService
from coin.wallet.wallet import PURPOSE_RECEIVE, PURPOSE_SEND, Wallet

#: Core's TIMESTAMP_WINDOW: a rescan from a key's birth time starts this much earlier.
TIMESTAMP_WINDOW = 2 * 60 * 60
#: walletpassphrase clamps its timeout to this (Core's MAX_SLEEP_TIME).
MAX_SLEEP_TIME = 100_000_000

_UNLOCK_FIRST = "Error: Please enter the wallet passphrase with walletpassphrase first."
_KEYPOOL_RAN_OUT = "Error: Keypool ran out, please call keypoolrefill first"
_PRIVATE_KEYS_DISABLED = "Error: Private keys are disabled for this wallet"
_RESCANNING = "Wallet is currently rescanning. Abort existing rescan or wait."
_PASSPHRASE_INCORRECT = "Error: The wallet passphrase entered was incorrect."
_RESCAN_NOTE = (
    "\n\nNote: This call can take minutes to complete if rescan is true, during that time, other "
    "rpc calls\nmay report that the imported %s exists but related transactions are still "
    "missing, leading to temporarily incorrect/bogus balances and unspent outputs until rescan "
    "completes.")


# ---------------------------------------------------------------------------------- helpers


class _RPCState:
    """What the RPC layer keeps per loaded wallet: the relock timer and rescan reservation."""

    __slots__ = ("relock", "scanning", "aborting", "__weakref__")

    def __init__(self) -> None:
        self.relock: Any = None
        self.scanning = False
        self.aborting = False


_STATES: "weakref.WeakKeyDictionary[Wallet, _RPCState]" = weakref.WeakKeyDictionary()


def _state(wallet: Wallet) -> _RPCState:
    state = _STATES.get(wallet)
    if state is None:
        state = _STATES[wallet] = _RPCState()
    return state


def _service(ctx: RPCContext) -> WalletService:
    service = getattr(ctx.node, "wallet_service", None)
    if service is None:
        raise RPCError(RPC_METHOD_NOT_FOUND, "Method not found")  # -disablewallet
    return service


def _locked_call(wallet: Wallet, write: bool, fn: Callable[..., Any], *args: Any) -> Any:
    with wallet.lock:
        if not write:
            return fn(*args)
        with wallet.db.batch():
            return fn(*args)


def in_wallet(wallet: Wallet, fn: Callable[..., Any], *args: Any, write: bool = False,
              slow: bool = False) -> Deferred:
    """``fn(*args)`` under the wallet's lock (and, with ``write``, in one transaction).

    Quick work runs at once on the reactor when the lock is free; ``slow`` work, or
    any work while another thread holds the lock, runs on a pool thread.
    """
    if not slow and wallet.lock.acquire(blocking=False):
        try:
            return maybeDeferred(_locked_call, wallet, write, fn, *args)
        finally:
            wallet.lock.release()
    return deferToThread(_locked_call, wallet, write, fn, *args)


def _label(value: str) -> str:
    """Core's LabelFromValue."""
    if value == "*":
        raise RPCError(RPC_WALLET_INVALID_LABEL_NAME, "Invalid label name")
    return value


def _address_type(value: Optional[str]) -> None:
    """Core's ParseOutputType: only legacy addresses exist here."""
    if value is not None and value != "legacy":
        raise RPCError(RPC_INVALID_ADDRESS_OR_KEY, "Unknown address type '%s'" % value)


def _ensure_unlocked(wallet: Wallet) -> None:
    if wallet.keys.locked:
        raise RPCError(RPC_WALLET_UNLOCK_NEEDED, _UNLOCK_FIRST)


def _hex160(key_id: bytes) -> str:
    return key_id[::-1].hex()


def _p2pkh_address(wallet: Wallet, pubkey: bytes) -> str:
    return encode_address(Destination("pubkeyhash", hash160(pubkey)), wallet.params)


def _check_rescan_allowed(ctx: RPCContext, message: str = "Rescan is disabled in pruned mode"
                          ) -> None:
    if getattr(ctx.node.chain.state, "prune_mode", False):
        raise RPCError(RPC_WALLET_ERROR, message)


@contextmanager
def _reserve_rescan(wallet: Wallet) -> Iterator[_RPCState]:
    """Core's WalletRescanReserver: one RPC rescan per wallet at a time."""
    state = _state(wallet)
    if state.scanning:
        raise RPCError(RPC_WALLET_ERROR, _RESCANNING)
    state.scanning = True
    state.aborting = False
    try:
        yield state
    finally:
        state.scanning = False
        state.aborting = False


async def _rescan(ctx: RPCContext, wallet: Wallet, state: _RPCState, start: int,
                  stop: Optional[int] = None) -> int:
    """Scan ``start..stop`` on the worker; fires with the last height scanned."""
    return await _service(ctx).rescan(wallet, start, stop, abort=lambda: state.aborting)


async def _rescan_wallet(ctx: RPCContext, wallet: Wallet, state: _RPCState, start: int) -> None:
    """Core's RescanWallet: to the tip from ``start``; -1 when aborted."""
    await _rescan(ctx, wallet, state, start)
    if state.aborting:
        raise RPCError(RPC_MISC_ERROR, "Rescan aborted by user.")


def _height_for_time(ctx: RPCContext, timestamp: int) -> Optional[int]:
    """First active-chain height with a block time at or after ``timestamp - 2h``
    (Core's FindEarliestAtLeast over the running maximum block time), or None."""
    chain = ctx.node.chain.snapshot()
    threshold = timestamp - TIMESTAMP_WINDOW
    if chain.tip.time_max < threshold:
        return None
    low, high = 0, chain.height
    while low < high:
        middle = (low + high) // 2
        if chain.at_height(middle).time_max < threshold:
            low = middle + 1
        else:
            high = middle
    return low


def _now(ctx: RPCContext) -> int:
    return int(ctx.node.chain.clock.now())


def _iso8601(seconds: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


# ---------------------------------------------------------------------------------- loading

_NAME_WARNING = ("{\n"
                 '  "name" :    <wallet_name>,        (string) The wallet name if %s successfully.%s\n'
                 '  "warning" : <warning>,            (string) Warning message if wallet was not '
                 "loaded cleanly.\n}")


@rpc_method(
    "createwallet", category="wallet",
    args=[Arg("wallet_name", STR, help="The name for the new wallet. If this is a path, the "
              "wallet will be created at the path location."),
          Arg("disable_private_keys", BOOL, default=False,
              help="Disable the possibility of private keys (only watchonlys are possible in "
              "this mode).")],
    help="Creates and loads a new wallet.",
    result=_NAME_WARNING % ("created", " If the wallet was created using a full path, the "
                            "wallet_name will be the full path."),
    examples=(example_cli("createwallet", '"testwallet"')
              + example_rpc("createwallet", '"testwallet"')))
async def createwallet(ctx: RPCContext, wallet_name: str,
                       disable_private_keys: bool) -> Dict[str, str]:
    service = _service(ctx)
    if wallet_name in service.wallets:
        raise RPCError(RPC_WALLET_ERROR, "Wallet %s already exists." % wallet_name)
    wallet = await service.load(wallet_name, create=True, must_create=True,
                                disable_private_keys=disable_private_keys)
    return {"name": wallet.name, "warning": ""}


@rpc_method(
    "loadwallet", category="wallet",
    args=[Arg("filename", STR, help="The wallet directory or .dat file.")],
    help=("Loads a wallet from a wallet file or directory.\n"
          "Note that all wallet command-line options used when starting coind will be\n"
          "applied to the new wallet (eg -zapwallettxes, upgradewallet, rescan, etc)."),
    result=_NAME_WARNING % ("loaded", ""),
    examples=example_cli("loadwallet", '"test.dat"') + example_rpc("loadwallet", '"test.dat"'))
async def loadwallet(ctx: RPCContext, filename: str) -> Dict[str, str]:
    service = _service(ctx)
    path = service.path_of(filename)
    directory = os.path.dirname(path)
    if os.path.isdir(directory) and not os.path.lexists(path) and filename:
        raise RPCError(RPC_WALLET_NOT_FOUND, "Directory %s does not contain a %s file."
                       % (filename, WALLET_FILE))
    wallet = await service.load(filename, create=False)
    return {"name": wallet.name, "warning": ""}


@rpc_method(
    "unloadwallet", category="wallet",
    args=[Arg("wallet_name", STR, default=None, help="The name of the wallet to unload.")],
    help=("Unloads the wallet referenced by the request endpoint otherwise unloads the wallet "
          "specified in the argument.\nSpecifying the wallet name on a wallet endpoint is "
          "invalid."),
    examples=example_cli("unloadwallet", "wallet_name") + example_rpc("unloadwallet",
                                                                        "wallet_name"))
async def unloadwallet(ctx: RPCContext, wallet_name: Optional[str]) -> None:
    service = _service(ctx)
    if ctx.wallet_name is not None:
        if wallet_name is not None:
            raise RPCError(RPC_INVALID_PARAMETER, "Both the RPC endpoint wallet and wallet_name "
                           "parameter were provided (only one allowed)")
        wallet_name = ctx.wallet_name
    elif wallet_name is None:
        raise RPCError(RPC_MISC_ERROR, "JSON value is not a string as expected")
    wallet = service.wallets.get(wallet_name)
    if wallet is None:
        raise RPCError(RPC_WALLET_NOT_FOUND, "Requested wallet does not exist or is not loaded")
    state = _state(wallet)
    state.aborting = True
    if state.relock is not None and state.relock.active():
        state.relock.cancel()
    # On the worker, so no block event is being delivered to the wallet as it closes.
    await ctx.node.chain.call(lambda _chainstate: service.unload(wallet_name)
                              if service.wallets.get(wallet_name) is wallet else None)
    return None


@rpc_method(
    "listwallets", category="wallet",
    help=("Returns a list of currently loaded wallets.\n"
          'For full information on the wallet, use "getwalletinfo"'),
    result=("[                         (json array of strings)\n"
            '  "walletname"            (string) the wallet name\n'
            "   ...\n]"),
    examples=example_cli("listwallets") + example_rpc("listwallets"))
def listwallets(ctx: RPCContext) -> List[str]:
    service = getattr(ctx.node, "wallet_service", None)
    return list(service.wallets) if service is not None else []


def _wallet_info(wallet: Wallet) -> Dict[str, Any]:
    info = wallet.info()
    result: Dict[str, Any] = {
        "walletname": info["walletname"], "walletversion": info["walletversion"],
        "balance": amount_to_json(info["balance"]),
        "unconfirmed_balance": amount_to_json(info["unconfirmed_balance"]),
        "immature_balance": amount_to_json(info["immature_balance"]),
        "txcount": info["txcount"], "keypoololdest": info["keypoololdest"],
        "keypoolsize": info["keypoolsize"],
        "keypoolsize_hd_internal": info["keypoolsize_hd_internal"]}
    if wallet.keys.encrypted:
        result["unlocked_until"] = info["unlocked_until"] or 0
    result["paytxfee"] = amount_to_json(info["paytxfee"])
    if info["hdmasterkeyid"] is not None:
        result["hdmasterkeyid"] = _hex160(info["hdmasterkeyid"])
    return result


@rpc_method(
    "getwalletinfo", category="wallet", needs_wallet=True,
    help="Returns an object containing various wallet state info.",
    result=(
        "{\n"
        '  "walletname": xxxxx,             (string) the wallet name\n'
        '  "walletversion": xxxxx,          (numeric) the wallet version\n'
        '  "balance": xxxxxxx,              (numeric) the total confirmed balance of the wallet '
        "in coins\n"
        '  "unconfirmed_balance": xxx,      (numeric) the total unconfirmed balance of the '
        "wallet in coins\n"
        '  "immature_balance": xxxxxx,      (numeric) the total immature balance of the wallet '
        "in coins\n"
        '  "txcount": xxxxxxx,              (numeric) the total number of transactions in the '
        "wallet\n"
        '  "keypoololdest": xxxxxx,         (numeric) the timestamp (seconds since Unix epoch) '
        "of the oldest pre-generated key in the key pool\n"
        '  "keypoolsize": xxxx,             (numeric) how many new keys are pre-generated (only '
        "counts external keys)\n"
        '  "keypoolsize_hd_internal": xxxx, (numeric) how many new keys are pre-generated for '
        "internal use (used for change outputs, only appears if the wallet is using this "
        "feature, otherwise external keys are used)\n"
        '  "unlocked_until": ttt,           (numeric) the timestamp in seconds since epoch '
        "(midnight Jan 1 1970 GMT) that the wallet is unlocked for transfers, or 0 if the "
        "wallet is locked\n"
        '  "paytxfee": x.xxxx,              (numeric) the transaction fee configuration, set in '
        "coins/kB\n"
        '  "hdmasterkeyid": "<hash160>"     (string, optional) the Hash160 of the HD master '
        "pubkey (only present when HD is enabled)\n"
        "}"),
    examples=example_cli("getwalletinfo") + example_rpc("getwalletinfo"))
def getwalletinfo(ctx: RPCContext) -> Deferred:
    return in_wallet(ctx.wallet, _wallet_info, ctx.wallet)


@rpc_method(
    "backupwallet", category="wallet", needs_wallet=True,
    args=[Arg("destination", STR, help="The destination directory or file")],
    help=("Safely copies current wallet file to destination, which can be a directory or a "
          "path with filename."),
    examples=(example_cli("backupwallet", '"backup.dat"')
              + example_rpc("backupwallet", '"backup.dat"')))
def backupwallet(ctx: RPCContext, destination: str) -> Deferred:
    # SQLite's online backup copies one consistent snapshot; no need to stop the wallet.
    return _service(ctx).backup(ctx.wallet, destination).addCallback(lambda _: None)


# ---------------------------------------------------------------------------------- addresses

def _check_can_derive(wallet: Wallet) -> None:
    if wallet.keys.private_keys_disabled:
        raise RPCError(RPC_WALLET_ERROR, _PRIVATE_KEYS_DISABLED)


def _new_address(wallet: Wallet, label: str) -> str:
    try:
        return wallet.new_address(label)
    except KeypoolEmpty:
        raise RPCError(RPC_WALLET_KEYPOOL_RAN_OUT, _KEYPOOL_RAN_OUT) from None


_ADDRESS_TYPE_HELP = 'The address type to use. Options are "legacy".'


@rpc_method(
    "getnewaddress", category="wallet", needs_wallet=True,
    args=[Arg("label", STR, default=None, help=(
              'The label name for the address to be linked to. If not provided, the default '
              'label "" is used. It can also be set to the empty string "" to represent the '
              "default label. The label does not need to exist, it will be created if there "
              "is no label by the given name.")),
          Arg("address_type", STR, default=None, help=_ADDRESS_TYPE_HELP + " Default is "
              "legacy.")],
    help=("Returns a new coin address for receiving payments.\n"
          "If 'label' is specified, it is added to the address book \n"
          "so payments received with the address will be associated with 'label'."),
    result='"address"    (string) The new coin address',
    examples=example_cli("getnewaddress") + example_rpc("getnewaddress"))
def getnewaddress(ctx: RPCContext, label: Optional[str], address_type: Optional[str]) -> Deferred:
    wallet = ctx.wallet
    _check_can_derive(wallet)
    label = _label(label) if label is not None else ""
    _address_type(address_type)
    return in_wallet(wallet, _new_address, wallet, label, write=True)


def _new_change_address(wallet: Wallet) -> str:
    try:
        script = wallet.new_change_script()
    except KeypoolEmpty:
        raise RPCError(RPC_WALLET_KEYPOOL_RAN_OUT, _KEYPOOL_RAN_OUT) from None
    return wallet.address_of(script)


@rpc_method(
    "getrawchangeaddress", category="wallet", needs_wallet=True,
    args=[Arg("address_type", STR, default=None,
              help=_ADDRESS_TYPE_HELP + " Default is legacy.")],
    help=("Returns a new coin address, for receiving change.\n"
          "This is for use with raw transactions, NOT normal use."),
    result='"address"    (string) The address',
    examples=example_cli("getrawchangeaddress") + example_rpc("getrawchangeaddress"))
def getrawchangeaddress(ctx: RPCContext, address_type: Optional[str]) -> Deferred:
    wallet = ctx.wallet
    _check_can_derive(wallet)
    _address_type(address_type)
    return in_wallet(wallet, _new_change_address, wallet, write=True)


def _set_label(wallet: Wallet, address: str, script: bytes, label: str) -> None:
    purpose = PURPOSE_RECEIVE if wallet.is_mine(script) else PURPOSE_SEND
    wallet.set_name(address, label, purpose)


@rpc_method(
    "setlabel", category="wallet", needs_wallet=True,
    args=[Arg("address", STR, help="The coin address to be associated with a label."),
          Arg("label", STR, help="The label to assign to the address.")],
    help="Sets the label associated with the given address.",
    examples=(example_cli("setlabel", '"1D1ZrZNe3JUo7ZycKEYQQiQAWd9y54F4XX" "tabby"')
              + example_rpc("setlabel", '"1D1ZrZNe3JUo7ZycKEYQQiQAWd9y54F4XX", "tabby"')))
def setlabel(ctx: RPCContext, address: str, label: str) -> Deferred:
    wallet = ctx.wallet
    destination = try_decode_address(address, wallet.params)
    if destination is None:
        raise RPCError(RPC_INVALID_ADDRESS_OR_KEY, "Invalid Coin address")
    label = _label(label)
    return in_wallet(wallet, _set_label, wallet, encode_address(destination, wallet.params),
                     destination_script(destination), label, write=True)


def _describe_destination(wallet: Wallet, destination: Destination) -> Dict[str, Any]:
    """Core's DescribeWalletAddressVisitor."""
    result: Dict[str, Any] = {"isscript": destination.kind == "scripthash", "iswitness": False}
    if destination.kind == "pubkeyhash":
        pubkey = wallet.keys.by_hash.get(destination.hash160)
        if pubkey is not None:
            result["pubkey"] = pubkey.hex()
            result["iscompressed"] = len(pubkey) == 33
    else:
        redeem = wallet.keys.scripts.get(destination.hash160)
        if redeem is not None:
            result.update(_describe_subscript(wallet, redeem))
    return result


def _describe_subscript(wallet: Wallet, script: bytes) -> Dict[str, Any]:
    """Core's ProcessSubScript (with the legacy ``addresses`` list)."""
    kind, solutions = solve(script)
    result: Dict[str, Any] = {"script": kind, "hex": script.hex()}
    addresses: List[str] = []
    dest_kind, destinations, _ = extract_destinations(script)
    if dest_kind != TX_MULTISIG and len(destinations) == 1:
        embedded_dest = destinations[0]
        embedded = _describe_destination(wallet, embedded_dest)
        address = encode_address(embedded_dest, wallet.params)
        embedded["address"] = address
        embedded["scriptPubKey"] = script.hex()
        if "pubkey" in embedded:
            result["pubkey"] = embedded["pubkey"]
        result["embedded"] = embedded
        addresses.append(address)
    elif kind == TX_MULTISIG:
        result["sigsrequired"] = solutions[0][0]
        keys = solutions[1:-1]
        addresses.extend(_p2pkh_address(wallet, key) for key in keys)
        result["pubkeys"] = [key.hex() for key in keys]
    result["addresses"] = addresses
    return result


def _address_info(wallet: Wallet, destination: Destination) -> Dict[str, Any]:
    address = encode_address(destination, wallet.params)
    script = destination_script(destination)
    mine = wallet.is_mine(script)
    result: Dict[str, Any] = {"address": address, "scriptPubKey": script.hex(),
                              "ismine": bool(mine & ISMINE_SPENDABLE),
                              "iswatchonly": bool(mine & ISMINE_WATCH_ONLY)}
    result.update(_describe_destination(wallet, destination))
    entry = wallet.names.get(address)
    if entry is not None:
        result["label"] = entry[0]
    if destination.kind == "pubkeyhash":
        pubkey = wallet.keys.by_hash.get(destination.hash160)
        record = wallet.keys.keys.get(pubkey) if pubkey is not None else None
        if record is not None:
            result["timestamp"] = record.created
            seed_id = wallet.keys.hd_master_key_id
            if record.hd_path and seed_id is not None:
                result["hdkeypath"] = record.hd_path
                result["hdseedid"] = _hex160(seed_id)
                result["hdmasterkeyid"] = _hex160(seed_id)
    result["labels"] = [] if entry is None else [{"name": entry[0], "purpose": entry[1]}]
    return result


@rpc_method(
    "getaddressinfo", category="wallet", needs_wallet=True,
    args=[Arg("address", STR, help="The coin address to get the information of.")],
    help="Return information about the given coin address. Some information requires the "
         "address\nto be in the wallet.",
    result=(
        "{\n"
        '  "address" : "address",        (string) The coin address validated\n'
        '  "scriptPubKey" : "hex",       (string) The hex encoded scriptPubKey generated by the '
        "address\n"
        '  "ismine" : true|false,        (boolean) If the address is yours or not\n'
        '  "iswatchonly" : true|false,   (boolean) If the address is watchonly\n'
        '  "isscript" : true|false,      (boolean) If the key is a script\n'
        '  "iswitness" : true|false,     (boolean) If the address is a witness address (always '
        "false here)\n"
        '  "script" : "type"             (string, optional) The output script type. Only if '
        '"isscript" is true and the redeemscript is known. Possible types: nonstandard, pubkey, '
        "pubkeyhash, scripthash, multisig, nulldata\n"
        '  "hex" : "hex",                (string, optional) The redeemscript for the p2sh '
        "address\n"
        '  "pubkeys"                     (string, optional) Array of pubkeys associated with '
        'the known redeemscript (only if "script" is "multisig")\n'
        "    [\n"
        '      "pubkey"\n'
        "      ,...\n"
        "    ]\n"
        '  "sigsrequired" : xxxxx        (numeric, optional) Number of signatures required to '
        'spend multisig output (only if "script" is "multisig")\n'
        '  "pubkey" : "publickeyhex",    (string, optional) The hex value of the raw public '
        "key, for single-key addresses (possibly embedded in P2SH)\n"
        '  "embedded" : {...},           (object, optional) Information about the address '
        "embedded in P2SH, if relevant and known. It includes all getaddressinfo output fields "
        'for the embedded address, excluding metadata ("timestamp", "hdkeypath", "hdseedid") '
        'and relation to the wallet ("ismine", "iswatchonly").\n'
        '  "iscompressed" : true|false,  (boolean) If the address is compressed\n'
        '  "label" :  "label"         (string) The label associated with the address, "" is '
        "the default label\n"
        '  "timestamp" : timestamp,      (number, optional) The creation time of the key if '
        "available in seconds since epoch (Jan 1 1970 GMT)\n"
        '  "hdkeypath" : "keypath"       (string, optional) The HD keypath if the key is HD and '
        "available\n"
        '  "hdseedid" : "<hash160>"      (string, optional) The Hash160 of the HD seed\n'
        '  "hdmasterkeyid" : "<hash160>" (string, optional) alias for hdseedid maintained for '
        "backwards compatibility.\n"
        '  "labels"                      (object) Array of labels associated with the address.\n'
        "    [\n"
        "      { (json object of label data)\n"
        '        "name": "labelname" (string) The label\n'
        '        "purpose": "string" (string) Purpose of address ("send" for sending address, '
        '"receive" for receiving address)\n'
        "      },...\n"
        "    ]\n"
        "}"),
    examples=(example_cli("getaddressinfo", '"1PSSGeFHDnKNxiEyFrD1wcEaHr9hrQDDWc"')
              + example_rpc("getaddressinfo", '"1PSSGeFHDnKNxiEyFrD1wcEaHr9hrQDDWc"')))
def getaddressinfo(ctx: RPCContext, address: str) -> Deferred:
    wallet = ctx.wallet
    destination = try_decode_address(address, wallet.params)
    if destination is None:
        raise RPCError(RPC_INVALID_ADDRESS_OR_KEY, "Invalid address")
    return in_wallet(wallet, _address_info, wallet, destination)


def _refill(wallet: Wallet, size: Optional[int]) -> None:
    _ensure_unlocked(wallet)
    wallet.keys.top_up(size)
    if len(wallet.keys.pool) < (size or 0):
        raise RPCError(RPC_WALLET_ERROR, "Error refreshing keypool.")


@rpc_method(
    "keypoolrefill", category="wallet", needs_wallet=True,
    args=[Arg("newsize", INT, default=None, help="The new keypool size (default: -keypool)")],
    help="Fills the keypool.\nRequires wallet passphrase to be set with walletpassphrase call.",
    examples=example_cli("keypoolrefill") + example_rpc("keypoolrefill"))
def keypoolrefill(ctx: RPCContext, newsize: Optional[int]) -> Deferred:
    wallet = ctx.wallet
    _check_can_derive(wallet)
    if newsize is not None and newsize < 0:
        raise RPCError(RPC_INVALID_PARAMETER, "Invalid parameter, expected valid size.")
    _ensure_unlocked(wallet)
    return in_wallet(wallet, _refill, wallet, newsize or None, slow=True).addCallback(
        lambda _: None)


# ---------------------------------------------------------------------------------- imports

def _import_key(wallet: Wallet, secret: bytes, compressed: bool, label: str) -> bool:
    """importprivkey's store step; True when the key is new (a rescan is worth it)."""
    _ensure_unlocked(wallet)
    pubkey = coincurve.PrivateKey(secret).public_key.format(compressed)
    wallet.set_name(_p2pkh_address(wallet, pubkey), label, PURPOSE_RECEIVE)
    if wallet.keys.have_secret(pubkey):
        return False
    # Its birth is unknown: as Core, time 1, so a time-based rescan covers the whole chain.
    wallet.keys.add_key(secret, compressed, created=1)
    return True


@rpc_method(
    "importprivkey", category="wallet", needs_wallet=True,
    signature='importprivkey "privkey" ( "label" ) ( rescan )',
    args=[Arg("privkey", STR, help="The private key (see dumpprivkey)"),
          Arg("label", STR, default="", help="An optional label"),
          Arg("rescan", BOOL, default=True, help="Rescan the wallet for transactions")],
    help=("Adds a private key (as returned by dumpprivkey) to your wallet. Requires a new "
          "wallet backup.\nHint: use importmulti to import more than one private key."
          + _RESCAN_NOTE % "key"),
    examples=("\nDump a private key\n" + example_cli("dumpprivkey", '"myaddress"')
              + "\nImport the private key with rescan\n" + example_cli("importprivkey", '"mykey"')
              + "\nImport using a label and without rescan\n"
              + example_cli("importprivkey", '"mykey" "testing" false')
              + "\nImport using default blank label and without rescan\n"
              + example_cli("importprivkey", '"mykey" "" false')
              + "\nAs a JSON-RPC call\n"
              + example_rpc("importprivkey", '"mykey", "testing", false')))
async def importprivkey(ctx: RPCContext, privkey: str, label: str, rescan: bool) -> None:
    wallet = ctx.wallet
    if wallet.keys.private_keys_disabled:
        raise RPCError(RPC_WALLET_ERROR,
                       "Cannot import private keys to a wallet with private keys disabled")
    if rescan:
        _check_rescan_allowed(ctx)
    with _reserve_rescan(wallet) if rescan else _no_reservation() as state:
        _ensure_unlocked(wallet)
        try:
            secret, compressed = decode_wif(privkey, wallet.params)
            coincurve.PrivateKey(secret)
        except (AddressError, ValueError):
            raise RPCError(RPC_INVALID_ADDRESS_OR_KEY, "Invalid private key encoding") from None
        added = await in_wallet(wallet, _import_key, wallet, secret, compressed, label,
                                write=True)
        if rescan and added:
            await _rescan_wallet(ctx, wallet, state, 0)
    return None


@contextmanager
def _no_reservation() -> Iterator[None]:
    yield None


def _import_script(wallet: Wallet, script: bytes, label: str, redeem_script: bool) -> None:
    """Core's ImportScript."""
    if not redeem_script and wallet.is_mine(script) == ISMINE_SPENDABLE:
        raise RPCError(RPC_WALLET_ERROR, "The wallet already contains the private key for this "
                       "address or script")
    if script not in wallet.keys.watch:
        wallet.keys.add_watch(script)
    if redeem_script:
        script_hash = hash160(script)
        if script_hash not in wallet.keys.scripts:
            wallet.keys.add_script(script)
        _import_address(wallet, Destination("scripthash", script_hash), label)
        return
    kind, destinations, _ = extract_destinations(script)
    if kind != TX_MULTISIG and len(destinations) == 1:
        wallet.set_name(encode_address(destinations[0], wallet.params), label, PURPOSE_RECEIVE)


def _import_address(wallet: Wallet, destination: Destination, label: str) -> None:
    """Core's ImportAddress."""
    _import_script(wallet, destination_script(destination), label, False)
    wallet.set_name(encode_address(destination, wallet.params), label, PURPOSE_RECEIVE)


def _import_address_or_script(wallet: Wallet, text: str, label: str, p2sh: bool) -> None:
    destination = try_decode_address(text, wallet.params)
    if destination is not None:
        if p2sh:
            raise RPCError(RPC_INVALID_ADDRESS_OR_KEY,
                           "Cannot use the p2sh flag with an address - use a script instead")
        _import_address(wallet, destination, label)
    elif is_hex(text):
        _import_script(wallet, bytes.fromhex(text), label, p2sh)
    else:
        raise RPCError(RPC_INVALID_ADDRESS_OR_KEY, "Invalid Coin address or script")


@rpc_method(
    "importaddress", category="wallet", needs_wallet=True,
    signature='importaddress "address" ( "label" rescan p2sh )',
    args=[Arg("script", STR, aliases=("address",),
              help="The hex-encoded script (or address)"),
          Arg("label", STR, default="", help="An optional label"),
          Arg("rescan", BOOL, default=True, help="Rescan the wallet for transactions"),
          Arg("p2sh", BOOL, default=False, help="Add the P2SH version of the script as well")],
    help=("Adds a script (in hex) or address that can be watched as if it were in your wallet "
          "but cannot be used to spend. Requires a new wallet backup."
          + _RESCAN_NOTE % "address"
          + "\nIf you have the full public key, you should call importpubkey instead of this.\n"
          "\nNote: If you import a non-standard raw script in hex form, outputs sending to it "
          "will be treated\nas change, and not show up in many RPCs."),
    examples=("\nImport an address with rescan\n" + example_cli("importaddress", '"myaddress"')
              + "\nImport using a label without rescan\n"
              + example_cli("importaddress", '"myaddress" "testing" false')
              + "\nAs a JSON-RPC call\n"
              + example_rpc("importaddress", '"myaddress", "testing", false')))
async def importaddress(ctx: RPCContext, script: str, label: str, rescan: bool,
                        p2sh: bool) -> None:
    wallet = ctx.wallet
    if rescan:
        _check_rescan_allowed(ctx)
    with _reserve_rescan(wallet) if rescan else _no_reservation() as state:
        await in_wallet(wallet, _import_address_or_script, wallet, script, label, p2sh,
                        write=True)
        if rescan:
            await _rescan_wallet(ctx, wallet, state, 0)
    return None


def _import_pubkey(wallet: Wallet, pubkey: bytes, label: str) -> None:
    _import_address(wallet, Destination("pubkeyhash", hash160(pubkey)), label)
    _import_script(wallet, p2pk_script(pubkey), label, False)


@rpc_method(
    "importpubkey", category="wallet", needs_wallet=True,
    args=[Arg("pubkey", STR, help="The hex-encoded public key"),
          Arg("label", STR, default="", help="An optional label"),
          Arg("rescan", BOOL, default=True, help="Rescan the wallet for transactions")],
    help=("Adds a public key (in hex) that can be watched as if it were in your wallet but "
          "cannot be used to spend. Requires a new wallet backup." + _RESCAN_NOTE % "pubkey"),
    examples=("\nImport a public key with rescan\n" + example_cli("importpubkey", '"mypubkey"')
              + "\nImport using a label without rescan\n"
              + example_cli("importpubkey", '"mypubkey" "testing" false')
              + "\nAs a JSON-RPC call\n"
              + example_rpc("importpubkey", '"mypubkey", "testing", false')))
async def importpubkey(ctx: RPCContext, pubkey: str, label: str, rescan: bool) -> None:
    wallet = ctx.wallet
    if rescan:
        _check_rescan_allowed(ctx)
    with _reserve_rescan(wallet) if rescan else _no_reservation() as state:
        if not is_hex(pubkey):
            raise RPCError(RPC_INVALID_ADDRESS_OR_KEY, "Pubkey must be a hex string")
        data = bytes.fromhex(pubkey)
        try:
            if len(data) not in (33, 65):
                raise ValueError(data)
            coincurve.PublicKey(data)
        except ValueError:
            raise RPCError(RPC_INVALID_ADDRESS_OR_KEY,
                           "Pubkey is not a valid public key") from None
        await in_wallet(wallet, _import_pubkey, wallet, data, label, write=True)
        if rescan:
            await _rescan_wallet(ctx, wallet, state, 0)
    return None


def _dump_privkey(wallet: Wallet, address: str) -> str:
    _ensure_unlocked(wallet)
    destination = try_decode_address(address, wallet.params)
    if destination is None:
        raise RPCError(RPC_INVALID_ADDRESS_OR_KEY, "Invalid Coin address")
    if destination.kind != "pubkeyhash":
        raise RPCError(RPC_TYPE_ERROR, "Address does not refer to a key")
    pubkey = wallet.keys.by_hash.get(destination.hash160)
    if pubkey is None or not wallet.keys.have_secret(pubkey):
        raise RPCError(RPC_WALLET_ERROR, "Private key for address %s is not known" % address)
    return encode_wif(wallet.keys.secret_of(pubkey), wallet.params, len(pubkey) == 33)


@rpc_method(
    "dumpprivkey", category="wallet", needs_wallet=True,
    args=[Arg("address", STR, help="The coin address for the private key")],
    help=("Reveals the private key corresponding to 'address'.\n"
          "Then the importprivkey can be used with this output"),
    result='"key"                (string) The private key',
    examples=(example_cli("dumpprivkey", '"myaddress"') + example_cli("importprivkey", '"mykey"')
              + example_rpc("dumpprivkey", '"myaddress"')))
def dumpprivkey(ctx: RPCContext, address: str) -> Deferred:
    wallet = ctx.wallet
    _ensure_unlocked(wallet)
    return in_wallet(wallet, _dump_privkey, wallet, address)


# ---------------------------------------------------------------------------------- dump files

def encode_dump_string(text: str) -> str:
    """Core's EncodeDumpString: bytes <= 32, >= 128 and '%' as %xx."""
    return "".join("%%%02x" % b if b <= 32 or b >= 128 or b == 0x25 else chr(b)
                   for b in text.encode("utf-8", "surrogatepass"))


def decode_dump_string(text: str) -> str:
    """Core's DecodeDumpString (lenient: a malformed escape decodes as Core's arithmetic)."""
    data = text.encode("utf-8", "surrogateescape")
    out = bytearray()
    pos = 0
    while pos < len(data):
        c = data[pos]
        if c == 0x25 and pos + 2 < len(data):
            hi, lo = data[pos + 1], data[pos + 2]
            c = ((((hi >> 6) * 9 + ((hi - 48) & 15)) << 4)
                 | ((lo >> 6) * 9 + ((lo - 48) & 15))) & 0xFF
            pos += 2
        out.append(c)
        pos += 1
    return out.decode("utf-8", "replace")


def decode_dump_time(text: str) -> int:
    """Core's DecodeDumpTime: ``YYYY-MM-DDTHH:MM:SSZ`` -> seconds, 0 when unreadable."""
    try:
        return calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%SZ"))
    except ValueError:
        return 0


def _dump_text(wallet: Wallet, now: int, tip: Tuple[int, str, int]) -> str:
    """The whole dumpwallet file, as Core 0.17 writes it."""
    _ensure_unlocked(wallet)
    keys = wallet.keys
    params = wallet.params
    lines = ["# Wallet dump created by Coin v%s\n" % __version__,
             "# * Created on %s\n" % _iso8601(now),
             "# * Best block at time of backup was %d (%s),\n" % (tip[0], tip[1]),
             "#   mined on %s\n" % _iso8601(tip[2]), "\n"]
    seed = keys.seed_secret()
    seed_pubkey = keys.seed_pubkey
    if seed is not None:
        lines.append("# extended private masterkey: %s\n\n"
                     % ExtKey.from_seed(seed).serialize(params.xprv_prefix))
    reserve = {pubkey for pubkey, _, _ in keys.pool.values()}
    entries: List[Tuple[int, bytes, bytes, bytes, Optional[str]]] = []
    hd_times = [record.created for record in keys.keys.values() if record.hd_path]
    for pubkey, record in keys.keys.items():
        if keys.have_secret(pubkey):
            entries.append((record.created, hash160(pubkey), pubkey, keys.secret_of(pubkey),
                            record.hd_path))
    if seed is not None and seed_pubkey is not None:
        entries.append((min(hd_times, default=now), hash160(seed_pubkey), seed_pubkey, seed, "s"))
    entries.sort(key=lambda e: (e[0], e[1]))
    for created, key_id, pubkey, secret, hd_path in entries:
        address = encode_address(Destination("pubkeyhash", key_id), params)
        lines.append("%s %s " % (encode_wif(secret, params, len(pubkey) == 33), _iso8601(created)))
        if address in wallet.names:
            lines.append("label=%s" % encode_dump_string(wallet.names[address][0]))
        elif pubkey == seed_pubkey:
            lines.append("hdseed=1")
        elif pubkey in reserve:
            lines.append("reserve=1")
        else:
            lines.append("change=1")
        lines.append(" # addr=%s%s\n" % (address, " hdkeypath=" + hd_path if hd_path else ""))
    lines.append("\n")
    for script_hash, script in sorted(keys.scripts.items()):
        lines.append("%s 0 script=1 # addr=%s\n"
                     % (script.hex(), encode_address(Destination("scripthash", script_hash),
                                                     params)))
    lines.append("\n# End of dump\n")
    return "".join(lines)


def _write_dump(wallet: Wallet, path: str, now: int, tip: Tuple[int, str, int]) -> None:
    text = _dump_text(wallet, now, tip)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise RPCError(RPC_INVALID_PARAMETER, "%s already exists. If you are sure this is what "
                       "you want, move it out of the way first" % path) from None
    except OSError:
        raise RPCError(RPC_INVALID_PARAMETER, "Cannot open wallet dump file") from None
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)


@rpc_method(
    "dumpwallet", category="wallet", needs_wallet=True,
    args=[Arg("filename", STR,
              help="The filename with path (either absolute or relative to coind)")],
    help=("Dumps all wallet keys in a human-readable format to a server-side file. This does "
          "not allow overwriting existing files.\n"
          "Imported scripts are included in the dumpfile, but corresponding addresses may not "
          "be added automatically by importwallet.\n"
          "Note that if your wallet contains keys which are not derived from your HD seed "
          "(e.g. imported keys), these are not covered by\n"
          "only backing up the seed itself, and must be backed up too (e.g. ensure you back up "
          "the whole dumpfile)."),
    result=("{                           (json object)\n"
            '  "filename" : {        (string) The filename with full absolute path\n'
            "}"),
    examples=example_cli("dumpwallet", '"test"') + example_rpc("dumpwallet", '"test"'))
async def dumpwallet(ctx: RPCContext, filename: str) -> Dict[str, str]:
    wallet = ctx.wallet
    _ensure_unlocked(wallet)
    path = os.path.abspath(filename)
    if os.path.lexists(path):
        raise RPCError(RPC_INVALID_PARAMETER, "%s already exists. If you are sure this is what "
                       "you want, move it out of the way first" % path)
    tip = ctx.node.chain.state.tip
    await in_wallet(wallet, _write_dump, wallet, path, _now(ctx),
                    (tip.height, hash_to_hex(tip.hash), tip.time), slow=True)
    return {"filename": path}


def _import_dump(wallet: Wallet, lines: List[str], tip_time: int) -> Tuple[int, bool]:
    """importwallet's store step: ``(earliest birth time, every line imported)``."""
    _ensure_unlocked(wallet)
    keys = wallet.keys
    params = wallet.params
    time_begin = tip_time
    good = True
    for line in lines:
        if not line or line[0] == "#":
            continue
        fields = line.split(" ")
        if len(fields) < 2:
            continue
        try:
            secret, compressed = decode_wif(fields[0], params)
            pubkey = coincurve.PrivateKey(secret).public_key.format(compressed)
        except (AddressError, ValueError):
            pubkey = None
        if pubkey is not None:
            if keys.have_secret(pubkey):
                continue
            birth = decode_dump_time(fields[1])
            label, labelled = "", True
            for field in fields[2:]:
                if field.startswith("#"):
                    break
                if field in ("change=1", "reserve=1"):
                    labelled = False
                if field.startswith("label="):
                    label, labelled = decode_dump_string(field[6:]), True
            try:
                keys.add_key(secret, compressed, created=birth)
            except Exception:
                good = False
                continue
            if labelled:
                wallet.set_name(_p2pkh_address(wallet, pubkey), label, PURPOSE_RECEIVE)
            time_begin = min(time_begin, birth)
        elif is_hex(fields[0]):
            script = bytes.fromhex(fields[0])
            if hash160(script) in keys.scripts:
                continue
            keys.add_script(script)
            birth = decode_dump_time(fields[1])
            if birth > 0:
                time_begin = min(time_begin, birth)
    return time_begin, good


def _read_lines(path: str) -> List[str]:
    try:
        with open(path, encoding="utf-8", errors="surrogateescape", newline="\n") as f:
            return f.read().split("\n")
    except OSError:
        raise RPCError(RPC_INVALID_PARAMETER, "Cannot open wallet dump file") from None


@rpc_method(
    "importwallet", category="wallet", needs_wallet=True,
    args=[Arg("filename", STR, help="The wallet file")],
    help=("Imports keys from a wallet dump file (see dumpwallet). Requires a new wallet backup "
          "to include imported keys."),
    examples=("\nDump the wallet\n" + example_cli("dumpwallet", '"test"')
              + "\nImport the wallet\n" + example_cli("importwallet", '"test"')
              + "\nImport using the json rpc call\n" + example_rpc("importwallet", '"test"')))
async def importwallet(ctx: RPCContext, filename: str) -> None:
    wallet = ctx.wallet
    _check_rescan_allowed(ctx, "Importing wallets is disabled in pruned mode")
    if wallet.keys.private_keys_disabled:
        raise RPCError(RPC_WALLET_ERROR,
                       "Importing wallets is disabled when private keys are disabled")
    with _reserve_rescan(wallet) as state:
        _ensure_unlocked(wallet)
        lines = await deferToThread(_read_lines, filename)
        tip_time = ctx.node.chain.state.tip.time
        time_begin, good = await in_wallet(wallet, _import_dump, wallet, lines, tip_time,
                                           write=True, slow=True)
        start = _height_for_time(ctx, time_begin)
        if start is not None:
            await _rescan_wallet(ctx, wallet, state, start)
    if not good:
        raise RPCError(RPC_WALLET_ERROR, "Error adding some keys/scripts to wallet")
    return None


# ---------------------------------------------------------------------------------- rescans

@rpc_method(
    "rescanblockchain", category="wallet", needs_wallet=True,
    signature='rescanblockchain ("start_height") ("stop_height")',
    args=[Arg("start_height", INT, default=None,
              help="block height where the rescan should start"),
          Arg("stop_height", INT, default=None,
              help="the last block height that should be scanned")],
    help="Rescan the local blockchain for wallet related transactions.",
    result=("{\n"
            '  "start_height"     (numeric) The block height where the rescan has started. If '
            "omitted, rescan started from the genesis block.\n"
            '  "stop_height"       (numeric) The height of the last rescanned block. If '
            "omitted, rescan stopped at the chain tip.\n"
            "}"),
    examples=(example_cli("rescanblockchain", "100000 120000")
              + example_rpc("rescanblockchain", "100000, 120000")))
async def rescanblockchain(ctx: RPCContext, start_height: Optional[int],
                           stop_height: Optional[int]) -> Dict[str, int]:
    wallet = ctx.wallet
    with _reserve_rescan(wallet) as state:
        chain = ctx.node.chain.state
        tip_height = chain.height
        start = 0
        if start_height is not None:
            if not 0 <= start_height <= tip_height:
                raise RPCError(RPC_INVALID_PARAMETER, "Invalid start_height")
            start = start_height
        if stop_height is not None:
            if not 0 <= stop_height <= tip_height:
                raise RPCError(RPC_INVALID_PARAMETER, "Invalid stop_height")
            if stop_height < start:
                raise RPCError(RPC_INVALID_PARAMETER,
                               "stop_height must be greater than start_height")
        last = await _rescan(ctx, wallet, state, start, stop_height)
        if state.aborting:
            raise RPCError(RPC_MISC_ERROR, "Rescan aborted.")
    return {"start_height": start, "stop_height": last if stop_height is None else stop_height}


@rpc_method(
    "abortrescan", category="wallet", needs_wallet=True,
    help="Stops current wallet rescan triggered by an RPC call, e.g. by an importprivkey call.",
    examples=("\nImport a private key\n" + example_cli("importprivkey", '"mykey"')
              + "\nAbort the running wallet rescan\n" + example_cli("abortrescan")
              + "\nAs a JSON-RPC call\n" + example_rpc("abortrescan")))
def abortrescan(ctx: RPCContext) -> bool:
    state = _state(ctx.wallet)
    if not state.scanning or state.aborting:
        return False
    state.aborting = True
    return True


# ---------------------------------------------------------------------------------- encryption

def _encrypt(wallet: Wallet, passphrase: bytes) -> None:
    # Not inside an outer transaction: encrypt() ends by rewriting the file (VACUUM).
    wallet.keys.encrypt(passphrase)


@rpc_method(
    "encryptwallet", category="wallet", needs_wallet=True,
    args=[Arg("passphrase", STR, help="The pass phrase to encrypt the wallet with. It must be at "
              "least 1 character, but should be long.")],
    help=("Encrypts the wallet with 'passphrase'. This is for first time encryption.\n"
          "After this, any calls that interact with private keys such as sending or signing \n"
          "will require the passphrase to be set prior the making these calls.\n"
          "Use the walletpassphrase call for this, and then walletlock call.\n"
          "If the wallet is already encrypted, use the walletpassphrasechange call."),
    examples=("\nEncrypt your wallet\n" + example_cli("encryptwallet", '"my pass phrase"')
              + "\nNow set the passphrase to use the wallet, such as for signing or sending "
              "coins\n" + example_cli("walletpassphrase", '"my pass phrase"')
              + "\nNow we can do something like sign\n"
              + example_cli("signmessage", '"address" "test message"')
              + "\nNow lock the wallet again by removing the passphrase\n"
              + example_cli("walletlock")
              + "\nAs a json rpc call\n" + example_rpc("encryptwallet", '"my pass phrase"')))
async def encryptwallet(ctx: RPCContext, passphrase: str) -> str:
    wallet = ctx.wallet
    if wallet.keys.private_keys_disabled:
        raise RPCError(RPC_WALLET_ENCRYPTION_FAILED,
                       "Error: wallet does not contain private keys, nothing to encrypt.")
    if wallet.keys.encrypted:
        raise RPCError(RPC_WALLET_WRONG_ENC_STATE,
                       "Error: running with an encrypted wallet, but encryptwallet was called.")
    if not passphrase:
        raise RPCError(RPC_INVALID_PARAMETER, "passphrase can not be empty")
    await in_wallet(wallet, _encrypt, wallet, passphrase.encode("utf-8", "surrogatepass"),
                    slow=True)
    return ("wallet encrypted; The keypool has been flushed and a new HD seed was generated (if "
            "you are using HD). You need to make a new backup.")


def _unlock(wallet: Wallet, passphrase: bytes) -> None:
    try:
        wallet.keys.unlock(passphrase)
    except WrongPassphrase:
        raise RPCError(RPC_WALLET_PASSPHRASE_INCORRECT, _PASSPHRASE_INCORRECT) from None


def _relock(wallet: Wallet) -> None:
    with wallet.lock:
        wallet.keys.lock()


@rpc_method(
    "walletpassphrase", category="wallet", needs_wallet=True,
    args=[Arg("passphrase", STR, help="The wallet passphrase"),
          Arg("timeout", INT64, help="The time to keep the decryption key in seconds; capped at "
              "100000000 (~3 years).")],
    help=("Stores the wallet decryption key in memory for 'timeout' seconds.\n"
          "This is needed prior to performing transactions related to private keys such as "
          "sending coins\n\nNote:\n"
          "Issuing the walletpassphrase command while the wallet is already unlocked will set a "
          "new unlock\ntime that overrides the old one."),
    examples=("\nUnlock the wallet for 60 seconds\n"
              + example_cli("walletpassphrase", '"my pass phrase" 60')
              + "\nLock the wallet again (before 60 seconds)\n" + example_cli("walletlock")
              + "\nAs a JSON-RPC call\n"
              + example_rpc("walletpassphrase", '"my pass phrase", 60')))
async def walletpassphrase(ctx: RPCContext, passphrase: str, timeout: int) -> None:
    wallet = ctx.wallet
    if not wallet.keys.encrypted:
        raise RPCError(RPC_WALLET_WRONG_ENC_STATE, "Error: running with an unencrypted wallet, "
                       "but walletpassphrase was called.")
    if timeout < 0:
        raise RPCError(RPC_INVALID_PARAMETER, "Timeout cannot be negative.")
    timeout = min(timeout, MAX_SLEEP_TIME)
    if not passphrase:
        raise RPCError(RPC_MISC_ERROR, "walletpassphrase <passphrase> <timeout>\n"
                       "Stores the wallet decryption key in memory for <timeout> seconds.")
    await in_wallet(wallet, _unlock, wallet, passphrase.encode("utf-8", "surrogatepass"),
                    slow=True)
    state = _state(wallet)
    if state.relock is not None and state.relock.active():
        state.relock.cancel()
    wallet.keys.unlocked_until = _now(ctx) + timeout
    state.relock = ctx.node.chain.reactor.callLater(timeout, _relock, wallet)
    return None


@rpc_method(
    "walletlock", category="wallet", needs_wallet=True,
    help=("Removes the wallet encryption key from memory, locking the wallet.\n"
          "After calling this method, you will need to call walletpassphrase again\n"
          "before being able to call any methods which require the wallet to be unlocked."),
    examples=("\nSet the passphrase for 2 minutes to perform a transaction\n"
              + example_cli("walletpassphrase", '"my pass phrase" 120')
              + "\nPerform a send (requires passphrase set)\n"
              + example_cli("sendtoaddress", '"1M72Sfpbz1BPpXFHz9m3CdqATR44Jvaydd" 1.0')
              + "\nClear the passphrase since we are done before 2 minutes is up\n"
              + example_cli("walletlock")
              + "\nAs a JSON-RPC call\n" + example_rpc("walletlock")))
def walletlock(ctx: RPCContext) -> Deferred:
    wallet = ctx.wallet
    if not wallet.keys.encrypted:
        raise RPCError(RPC_WALLET_WRONG_ENC_STATE, "Error: running with an unencrypted wallet, "
                       "but walletlock was called.")
    state = _state(wallet)
    if state.relock is not None and state.relock.active():
        state.relock.cancel()
    state.relock = None
    return in_wallet(wallet, wallet.keys.lock)


def _change_passphrase(wallet: Wallet, old: bytes, new: bytes) -> None:
    try:
        wallet.keys.change_passphrase(old, new)
    except WrongPassphrase:
        raise RPCError(RPC_WALLET_PASSPHRASE_INCORRECT, _PASSPHRASE_INCORRECT) from None


@rpc_method(
    "walletpassphrasechange", category="wallet", needs_wallet=True,
    args=[Arg("oldpassphrase", STR, help="The current passphrase"),
          Arg("newpassphrase", STR, help="The new passphrase")],
    help="Changes the wallet passphrase from 'oldpassphrase' to 'newpassphrase'.",
    examples=(example_cli("walletpassphrasechange", '"old one" "new one"')
              + example_rpc("walletpassphrasechange", '"old one", "new one"')))
async def walletpassphrasechange(ctx: RPCContext, oldpassphrase: str, newpassphrase: str) -> None:
    wallet = ctx.wallet
    if not wallet.keys.encrypted:
        raise RPCError(RPC_WALLET_WRONG_ENC_STATE, "Error: running with an unencrypted wallet, "
                       "but walletpassphrasechange was called.")
    if not oldpassphrase or not newpassphrase:
        raise RPCError(RPC_MISC_ERROR, "walletpassphrasechange <oldpassphrase> <newpassphrase>\n"
                       "Changes the wallet passphrase from <oldpassphrase> to <newpassphrase>.")
    await in_wallet(wallet, _change_passphrase, wallet,
                    oldpassphrase.encode("utf-8", "surrogatepass"),
                    newpassphrase.encode("utf-8", "surrogatepass"), write=True, slow=True)
    return None


# ---------------------------------------------------------------------------------- signing

def _sign(wallet: Wallet, address: str, message: str) -> str:
    _ensure_unlocked(wallet)
    destination = try_decode_address(address, wallet.params)
    if destination is None:
        raise RPCError(RPC_TYPE_ERROR, "Invalid address")
    if destination.kind != "pubkeyhash":
        raise RPCError(RPC_TYPE_ERROR, "Address does not refer to key")
    pubkey = wallet.keys.by_hash.get(destination.hash160)
    if pubkey is None or not wallet.keys.have_secret(pubkey):
        raise RPCError(RPC_WALLET_ERROR, "Private key not available")
    key = coincurve.PrivateKey(wallet.keys.secret_of(pubkey))
    return sign_message(key, message, compressed=len(pubkey) == 33)


@rpc_method(
    "signmessage", category="wallet", needs_wallet=True,
    args=[Arg("address", STR, help="The coin address to use for the private key."),
          Arg("message", STR, help="The message to create a signature of.")],
    help=("Sign a message with the private key of an address\n"
          "Requires wallet passphrase to be set with walletpassphrase call."),
    result='"signature"          (string) The signature of the message encoded in base 64',
    examples=("\nUnlock the wallet for 30 seconds\n"
              + example_cli("walletpassphrase", '"mypassphrase" 30')
              + "\nCreate the signature\n"
              + example_cli("signmessage", '"1D1ZrZNe3JUo7ZycKEYQQiQAWd9y54F4XX" "my message"')
              + "\nVerify the signature\n"
              + example_cli("verifymessage", '"1D1ZrZNe3JUo7ZycKEYQQiQAWd9y54F4XX" "signature" '
                            '"my message"')
              + "\nAs json rpc\n"
              + example_rpc("signmessage", '"1D1ZrZNe3JUo7ZycKEYQQiQAWd9y54F4XX", "my message"')))
def signmessage(ctx: RPCContext, address: str, message: str) -> Deferred:
    wallet = ctx.wallet
    _ensure_unlocked(wallet)
    return in_wallet(wallet, _sign, wallet, address, message)


# ---------------------------------------------------------------------------------- generate

def _mining_script(wallet: Wallet) -> bytes:
    """Core's GetScriptForMining: a fresh receiving key from the pool (no address-book entry)."""
    try:
        return p2pkh_script(hash160(wallet.keys.take_from_pool(internal=False)))
    except KeypoolEmpty:
        raise RPCError(RPC_WALLET_KEYPOOL_RAN_OUT, _KEYPOOL_RAN_OUT) from None


@rpc_method(
    "generate", category="generating", needs_wallet=True,
    args=[Arg("nblocks", INT, help="How many blocks are generated immediately."),
          Arg("maxtries", INT, default=1000000,
              help="How many iterations to try (default = 1000000).")],
    help=("Mine up to nblocks blocks immediately (before the RPC call returns) to an address in "
          "the wallet."),
    result="[ blockhashes ]     (array) hashes of blocks generated",
    examples="\nGenerate 11 blocks\n" + example_cli("generate", "11"))
async def generate(ctx: RPCContext, nblocks: int, maxtries: int) -> List[str]:
    wallet = ctx.wallet
    script = await in_wallet(wallet, _mining_script, wallet, write=True)
    try:
        hashes = await ctx.node.chain.generate(script, nblocks, maxtries % (1 << 64))
    except ValidationError:
        raise RPCError(RPC_INTERNAL_ERROR, "ProcessNewBlock, block not accepted") from None
    return [hash_to_hex(h) for h in hashes]


#: What the ``wallet`` entry point registers.
METHODS = [createwallet, loadwallet, unloadwallet, listwallets, getwalletinfo, backupwallet,
           getnewaddress, getrawchangeaddress, setlabel, getaddressinfo, keypoolrefill,
           importprivkey, importaddress, importpubkey, dumpprivkey, dumpwallet, importwallet,
           rescanblockchain, abortrescan, encryptwallet, walletpassphrase, walletlock,
           walletpassphrasechange, signmessage, generate]
