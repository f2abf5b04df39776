"""Wallet management methods: createwallet, loadwallet, unloadwallet, listwallets,
getwalletinfo, and ``generate`` (Core's "== Generating ==", mining to the wallet).

Registered through the ``coin.rpc`` entry point ``wallet_management``.
"""

from __future__ import annotations

import os
from typing import Dict, List, Optional

from twisted.internet.defer import Deferred

from coin.consensus.errors import ValidationError
from coin.primitives.hashes import hash_to_hex
from coin.rpc.context import RPCContext
from coin.rpc.errors import (
    RPC_INTERNAL_ERROR, RPC_INVALID_PARAMETER, RPC_MISC_ERROR, RPC_WALLET_ERROR,
    RPC_WALLET_NOT_FOUND, RPCError,
)
from coin.rpc.methods.wallet import wallet_service
from coin.rpc.registry import BOOL, INT, STR, Arg, example_cli, example_rpc, rpc_method
from coin.views.wallet import wallet_info_json
from coin.wallet.access import in_wallet
from coin.wallet.addresses import mining_script
from coin.wallet.service import WALLET_FILE

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
    service = wallet_service(ctx)
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
    service = wallet_service(ctx)
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
    service = wallet_service(ctx)
    if ctx.wallet_name is not None:
        if wallet_name is not None:
            raise RPCError(RPC_INVALID_PARAMETER, "Both the RPC endpoint wallet and wallet_name "
                           "parameter were provided (only one allowed)")
        wallet_name = ctx.wallet_name
    elif wallet_name is None:
        raise RPCError(RPC_MISC_ERROR, "JSON value is not a string as expected")
    await service.remove(wallet_name)
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
    service = ctx.node.wallet_service
    return list(service.wallets) if service is not None else []


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
    return in_wallet(ctx.wallet, wallet_info_json, ctx.wallet)


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
    script = await in_wallet(wallet, mining_script, wallet, write=True)
    try:
        hashes = await ctx.node.mining.generate(script, nblocks, maxtries % (1 << 64))
    except ValidationError:
        raise RPCError(RPC_INTERNAL_ERROR, "ProcessNewBlock, block not accepted") from None
    return [hash_to_hex(h) for h in hashes]


#: What the ``wallet_management`` entry point registers.
METHODS = [createwallet, loadwallet, unloadwallet, listwallets, getwalletinfo, generate]
