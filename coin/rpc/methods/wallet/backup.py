"""Backup methods: backupwallet, importprivkey, importaddress, importpubkey, dumpprivkey,
dumpwallet, importwallet, importmulti, importprunedfunds and removeprunedfunds.

Registered through the ``coin.rpc`` entry point ``wallet_backup``.  An import that
rescans first reserves the wallet (one user rescan at a time, see
:class:`coin.wallet.rescan.Rescanner`); the key material work is in
:mod:`coin.wallet.backup`, always one database transaction.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Dict, Iterator, List, Optional, Tuple

import coincurve
from twisted.internet.defer import Deferred

from coin.primitives.address import AddressError, decode_wif
from coin.rpc.context import RPCContext
from coin.rpc.errors import (
    RPC_INVALID_ADDRESS_OR_KEY, RPC_INVALID_PARAMETER, RPC_MISC_ERROR, RPC_TYPE_ERROR, RPC_WALLET_ERROR,
    RPCError,
)
from coin.rpc.methods.rawtransactions import decode_transaction, read_merkle_block
from coin.rpc.methods.wallet import wallet_service
from coin.rpc.params import uint256_from_hex
from coin.primitives.hashes import is_hex
from coin.rpc.registry import ARR, BOOL, OBJ, STR, Arg, example_cli, example_rpc, rpc_method
from coin.wallet.access import in_wallet
from coin.wallet.addresses import ensure_unlocked
from coin.wallet.backup import (
    dump_privkey, import_address_or_script, import_key, import_multi_request, import_pubkey,
    import_timestamp,
)
from coin.wallet.errors import WalletError
from coin.wallet.rescan import TIMESTAMP_WINDOW, Reservation
from coin.wallet.wallet import BlockRef, Wallet

_RESCAN_NOTE = (
    "\n\nNote: This call can take minutes to complete if rescan is true, during that time, other "
    "rpc calls\nmay report that the imported %s exists but related transactions are still "
    "missing, leading to temporarily incorrect/bogus balances and unspent outputs until rescan "
    "completes.")


def _check_rescan_allowed(ctx: RPCContext, message: str = "Rescan is disabled in pruned mode"
                          ) -> None:
    if getattr(ctx.node.chain.state, "prune_mode", False):
        raise RPCError(RPC_WALLET_ERROR, message)


@contextmanager
def _import_reservation(ctx: RPCContext, rescan: bool) -> Iterator[Optional[Reservation]]:
    """An import's rescan reservation (none without ``rescan``); -4 in pruned mode."""
    if rescan:
        _check_rescan_allowed(ctx)
    with wallet_service(ctx).rescanner.maybe_reserve(ctx.wallet, rescan) as reservation:
        yield reservation


@rpc_method(
    "backupwallet", category="wallet", needs_wallet=True,
    args=[Arg("destination", STR, help="The destination directory or file")],
    help=("Safely copies current wallet file to destination, which can be a directory or a "
          "path with filename."),
    examples=(example_cli("backupwallet", '"backup.dat"')
              + example_rpc("backupwallet", '"backup.dat"')))
def backupwallet(ctx: RPCContext, destination: str) -> Deferred:
    # SQLite's online backup copies one consistent snapshot; no need to stop the wallet.
    return wallet_service(ctx).backup(ctx.wallet, destination).addCallback(lambda _: None)


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
    service = wallet_service(ctx)
    with _import_reservation(ctx, rescan) as reservation:
        ensure_unlocked(wallet)
        try:
            secret, compressed = decode_wif(privkey, wallet.params)
            coincurve.PrivateKey(secret)
        except (AddressError, ValueError):
            raise RPCError(RPC_INVALID_ADDRESS_OR_KEY, "Invalid private key encoding") from None
        await service.store_and_rescan(wallet, reservation, import_key, secret, compressed,
                                       label)
    return None


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
    service = wallet_service(ctx)
    with _import_reservation(ctx, rescan) as reservation:
        await service.store_and_rescan(wallet, reservation, import_address_or_script, script,
                                       label, p2sh)
    return None


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
    service = wallet_service(ctx)
    with _import_reservation(ctx, rescan) as reservation:
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
        await service.store_and_rescan(wallet, reservation, import_pubkey, data, label)
    return None


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
    ensure_unlocked(wallet)
    return in_wallet(wallet, dump_privkey, wallet, address)


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
    return {"filename": await wallet_service(ctx).dump_wallet(ctx.wallet, filename)}


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
    await wallet_service(ctx).import_wallet(wallet, filename)
    return None


_IMPORTMULTI_REQUESTS = """\
  [     (array of json objects)
    {
      "scriptPubKey": "<script>" | { "address":"<address>" }, (string / json, required) Type of \
scriptPubKey (string for script, json for address)
      "timestamp": timestamp | "now"                        , (integer / string, required) Creation \
time of the key in seconds since epoch (Jan 1 1970 GMT),
                                                              or the string "now" to substitute the \
current synced blockchain time. The timestamp of the oldest
                                                              key will determine how far back \
blockchain rescans need to begin for missing wallet transactions.
                                                              "now" can be specified to bypass \
scanning, for keys which are known to never have been used, and
                                                              0 can be specified to scan the \
entire blockchain. Blocks up to 2 hours before the earliest key
                                                              creation time of all keys being \
imported by the importmulti call will be scanned.
      "redeemscript": "<script>"                            , (string, optional) Allowed only if \
the scriptPubKey is a P2SH address or a P2SH scriptPubKey
      "pubkeys": ["<pubKey>", ... ]                         , (array, optional) Array of strings \
giving pubkeys that must occur in the output or redeemscript
      "keys": ["<key>", ... ]                               , (array, optional) Array of strings \
giving private keys whose corresponding public keys must occur in the output or redeemscript
      "internal": <true>                                    , (boolean, optional, default: false) \
Stating whether matching outputs should be treated as not incoming payments
      "watchonly": <true>                                   , (boolean, optional, default: false) \
Stating whether matching outputs should be considered watched even when they're not spendable, \
only allowed if keys are empty
      "label": <label>                                      , (string, optional, default: '') \
Label to assign to the address (aka account), only allowed with internal=false
    }
  ,...
  ]"""

_IMPORTMULTI_EXAMPLE = ('\'[{ "scriptPubKey": { "address": "<my address>" }, "timestamp":1455191478 }, '
                        '{ "scriptPubKey": { "address": "<my 2nd address>" }, "label": "example 2", '
                        '"timestamp": 1455191480 }]\'')


@rpc_method(
    "importmulti", category="wallet", needs_wallet=True,
    signature='importmulti "requests" ( "options" )',
    args=[Arg("requests", ARR, typecheck=True,
              help="Data to be imported\n" + _IMPORTMULTI_REQUESTS),
          Arg("options", OBJ, default=None, typecheck=True, help=(
              "\n  {\n"
              '     "rescan": <false>,         (boolean, optional, default: true) Stating if '
              "should rescan the blockchain after all imports\n  }"))],
    help=("Import addresses/scripts (with private or public keys, redeem script (P2SH)), "
          "rescanning all addresses in one-shot-only (rescan can be disabled via options). "
          "Requires a new wallet backup."),
    result=("\nNote: This call can take minutes to complete if rescan is true, during that "
            "time, other rpc calls\nmay report that the imported keys, addresses or scripts "
            "exists but related transactions are still missing.\n"),
    examples=("\n> coin-cli importmulti " + _IMPORTMULTI_EXAMPLE + "\n"
              + "> coin-cli importmulti '[{ \"scriptPubKey\": { \"address\": \"<my address>\" "
              '}, "timestamp":1455191478 }]\' \'{ "rescan": false}\'\n'
              "\nResponse is an array with the same size as the input that has the execution "
              "result :\n"
              '  [{ "success": true } , { "success": false, "error": { "code": -1, "message": '
              '"Internal Server Error"} }, ... ]\n'))
async def importmulti(ctx: RPCContext, requests: List[Any], options: Optional[Dict[str, Any]]
                      ) -> List[Any]:
    wallet = ctx.wallet
    rescan = True
    if options is not None and "rescan" in options:
        rescan = options["rescan"]
        if not isinstance(rescan, bool):
            raise RPCError(RPC_TYPE_ERROR, "JSON value is not a boolean as expected")
    service = wallet_service(ctx)
    with service.rescanner.maybe_reserve(wallet, rescan) as reservation:
        ensure_unlocked(wallet)
        tip = ctx.node.chain.state.tip
        now = tip.median_time_past()
        results, lowest = await in_wallet(wallet, _import_all, wallet, requests, now, tip.time,
                                          write=True)
        if reservation is not None and any(r["success"] for r in results) and requests:
            scanned = await service.rescan_from_time(wallet, reservation, lowest)
            await service.reaccept(wallet)
            if scanned > lowest:
                results = [_rescan_failed(result, import_timestamp(request, now), scanned)
                           for request, result in zip(requests, results)]
    return results


def _rescan_failed(result: Dict[str, Any], timestamp: int, scanned: int) -> Dict[str, Any]:
    """Core's answer for a key born before the first block the rescan could read."""
    if scanned <= timestamp or "error" in result:
        return result
    message = ("Rescan failed for key with creation timestamp %d. There was an error reading a "
               "block from time %d, which is after or within %d seconds of key creation, and "
               "could contain transactions pertaining to the key. As a result, transactions "
               "and coins using this key may not appear in the wallet. This error could be "
               "caused by pruning or data corruption (see coind log for details) and could "
               "be dealt with by downloading and rescanning the relevant blocks (see -reindex "
               "and -rescan options)." % (timestamp, scanned - TIMESTAMP_WINDOW - 1,
                                          TIMESTAMP_WINDOW))
    return {"success": False, "error": {"code": RPC_MISC_ERROR, "message": message}}


def _import_all(wallet: Wallet, requests: List[Any], now: int, tip_time: int
                ) -> Tuple[List[Dict[str, Any]], int]:
    """Every request in turn (timestamps checked first, as Core): the per-request results
    and the earliest timestamp (at most the tip's time) to rescan from."""
    for request in requests:
        import_timestamp(request, now)
    results: List[Dict[str, Any]] = []
    lowest = tip_time
    for request in requests:
        timestamp = max(import_timestamp(request, now), 1)
        try:
            import_multi_request(wallet, request, timestamp)
            results.append({"success": True})
        except WalletError as e:
            results.append({"success": False, "error": {"code": e.rpc_code, "message": e.message}})
        lowest = min(lowest, timestamp)
    return results, lowest


#: What the ``wallet_backup`` entry point registers.
@rpc_method(
    "importprunedfunds", category="wallet", needs_wallet=True,
    signature="importprunedfunds",
    args=[Arg("rawtransaction", STR, help="A raw transaction in hex funding an already-existing "
              "address in wallet"),
          Arg("txoutproof", STR, help="The hex output from gettxoutproof that contains the "
              "transaction")],
    help=("Imports funds without rescan. Corresponding address or script must previously be "
          "included in wallet. Aimed towards pruned wallets. The end-user is responsible to "
          "import additional transactions that subsequently spend the imported outputs or rescan "
          "after the point in the blockchain the transaction is included."))
async def importprunedfunds(ctx: RPCContext, rawtransaction: str, txoutproof: str) -> None:
    """Core 0.17: the proof must name the transaction and a block of the active chain."""
    tx = decode_transaction(rawtransaction)
    merkle_block = read_merkle_block(txoutproof)
    root, matched = merkle_block.tree.extract_matches()
    if root != merkle_block.header.merkle_root:
        raise RPCError(RPC_INVALID_ADDRESS_OR_KEY, "Something wrong with merkleblock")
    view = ctx.node.chain.snapshot()
    entry = view.lookup(merkle_block.header.hash)
    if entry is None or not view.contains(entry):
        raise RPCError(RPC_INVALID_ADDRESS_OR_KEY, "Block not found in chain")
    index = next((i for i, txid in matched if txid == tx.txid), None)
    if index is None:
        raise RPCError(RPC_INVALID_ADDRESS_OR_KEY, "Transaction given doesn't exist in proof")
    block = BlockRef(entry.hash, entry.height, index)
    if not await in_wallet(ctx.wallet, ctx.wallet.import_pruned, tx, block, write=True):
        raise RPCError(RPC_INVALID_ADDRESS_OR_KEY,
                       "No addresses in wallet correspond to included transaction")


_TXID_EXAMPLE = '"a8d0c0184dde994a09ec054286f1ce581bebf46446a512166eae7628734ea0a5"'


@rpc_method(
    "removeprunedfunds", category="wallet", needs_wallet=True,
    signature='removeprunedfunds "txid"',
    args=[Arg("txid", STR, help="The hex-encoded id of the transaction you are deleting")],
    help=("Deletes the specified transaction from the wallet. Meant for use with pruned wallets "
          "and as a companion to importprunedfunds. This will affect wallet balances."),
    examples=(example_cli("removeprunedfunds", _TXID_EXAMPLE) + "\nAs a JSON-RPC call\n"
              + example_rpc("removeprunedfunds", _TXID_EXAMPLE)))
async def removeprunedfunds(ctx: RPCContext, txid: str) -> None:
    if not await in_wallet(ctx.wallet, ctx.wallet.remove_transaction, uint256_from_hex(txid),
                           write=True):
        raise RPCError(RPC_INVALID_PARAMETER, "Transaction does not exist in wallet.")


METHODS = [backupwallet, importprivkey, importaddress, importpubkey, dumpprivkey, dumpwallet,
           importwallet, importmulti, importprunedfunds, removeprunedfunds]
