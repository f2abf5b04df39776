"""Coin methods: getbalance, getunconfirmedbalance, getreceivedbyaddress, getreceivedbylabel,
listunspent, lockunspent and listlockunspent.

Registered through the ``coin.rpc`` entry point ``wallet_coins``.  Reads run
through :func:`coin.wallet.access.in_wallet`, under the wallet's lock.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from coin.primitives.address import try_decode_address
from coin.primitives.hashes import hash_to_hex
from coin.rpc.context import RPCContext
from coin.rpc.errors import (
    RPC_INVALID_PARAMETER, RPC_METHOD_DEPRECATED, RPC_WALLET_ERROR, RPCError,
)
from coin.rpc.methods.rawtransactions import check_object
from coin.rpc.methods.wallet import (
    ADDRESS_ARG, decode_destination, is_final, ismine_filter, label_from_value,
)
from coin.primitives.hashes import is_hex
from coin.rpc.params import uint256_from_hex
from coin.rpc.registry import (
    ARR, BOOL, INT, INT64, OBJ, STR, Arg, ReadByHandler, amount_from_value, example_cli, example_rpc,
    rpc_method,
)
from coin.script.standard import destination_script
from coin.views.amounts import amount_to_json
from coin.views.wallet import unspent_json
from coin.wallet.access import in_wallet
from coin.wallet.keystore import ISMINE_NO
from coin.wallet.labels import received_by_label
from coin.wallet.wallet import Output, Wallet

MAX_DEPTH = 9999999

_GETBALANCE_HELP = ("Returns the total available balance.\n"
                    "The available balance is what the wallet considers currently spendable, and "
                    "is\nthus affected by options which limit spendability such as "
                    "-spendzeroconfchange.")


@rpc_method(
    "getbalance", category="wallet", needs_wallet=True,
    signature='getbalance ( "account" minconf include_watchonly )',
    args=[Arg("account", STR, default=None, aliases=("dummy",),
              help='Remains for backward compatibility. Must be excluded or set to "*".'),
          Arg("minconf", INT, default=0,
              help="Only include transactions confirmed at least this many times."),
          Arg("include_watchonly", BOOL, default=False,
              help="Also include balance in watch-only addresses (see 'importaddress')")],
    help=_GETBALANCE_HELP,
    result="amount              (numeric) The total amount in COIN received for this wallet.",
    examples=("\nThe total amount in the wallet with 1 or more confirmations\n"
              + example_cli("getbalance")
              + "\nThe total amount in the wallet at least 6 blocks confirmed\n"
              + example_cli("getbalance", '"*" 6')
              + "\nAs a json rpc call\n" + example_rpc("getbalance", '"*", 6')))
async def getbalance(ctx: RPCContext, account: Optional[str], minconf: int,
                     include_watchonly: bool) -> Any:
    if account is not None and account != "*":
        raise RPCError(RPC_METHOD_DEPRECATED,
                       'dummy first argument must be excluded or set to "*".')
    wallet = ctx.wallet
    return amount_to_json(await in_wallet(wallet, wallet.balance, ismine_filter(include_watchonly),
                                          minconf, slow=True))


@rpc_method(
    "getunconfirmedbalance", category="wallet", needs_wallet=True,
    help="Returns the server's total unconfirmed balance")
async def getunconfirmedbalance(ctx: RPCContext) -> Any:
    wallet = ctx.wallet
    return amount_to_json(await in_wallet(wallet, wallet.unconfirmed_balance, slow=True))


#: getreceivedbyaddress's and getreceivedbylabel's.
#: Read once getreceivedbyaddress has checked the address, as Core reads it.
_MINCONF = ReadByHandler("minconf", INT, default=1,
                         help="Only include transactions confirmed at least this many times.")


@rpc_method(
    "getreceivedbyaddress", category="wallet", needs_wallet=True,
    args=[Arg("address", STR, help="The coin address for transactions."),
          _MINCONF],
    help=("Returns the total amount received by the given address in transactions with at "
          "least minconf confirmations."),
    result="amount   (numeric) The total amount in COIN received at this address.",
    examples=("\nThe amount from transactions with at least 1 confirmation\n"
              + example_cli("getreceivedbyaddress", '"1D1ZrZNe3JUo7ZycKEYQQiQAWd9y54F4XX"')
              + "\nThe amount including unconfirmed transactions, zero confirmations\n"
              + example_cli("getreceivedbyaddress", '"1D1ZrZNe3JUo7ZycKEYQQiQAWd9y54F4XX" 0')
              + "\nThe amount with at least 6 confirmations\n"
              + example_cli("getreceivedbyaddress", '"1D1ZrZNe3JUo7ZycKEYQQiQAWd9y54F4XX" 6')
              + "\nAs a json rpc call\n"
              + example_rpc("getreceivedbyaddress", '"1D1ZrZNe3JUo7ZycKEYQQiQAWd9y54F4XX", 6')))
async def getreceivedbyaddress(ctx: RPCContext, address: str, minconf: Any) -> Any:
    wallet = ctx.wallet
    script = destination_script(decode_destination(ctx, address, "Invalid Coin address"))

    def received() -> int:
        if wallet.is_mine(script) == ISMINE_NO:
            raise RPCError(RPC_WALLET_ERROR, "Address not found in wallet")
        min_depth = _MINCONF.read(minconf)
        return sum(out.value for wtx in wallet.txs.values()
                   if not wtx.tx.is_coinbase() and is_final(wallet, wtx)
                   and wallet.depth(wtx) >= min_depth
                   for out in wtx.tx.vout if out.script_pubkey == script)

    return amount_to_json(await in_wallet(wallet, received, slow=True))


#: Core 0.17 reads minconf before the label.
_LABEL = ReadByHandler("label", STR, help='The selected label, may be the default label using "".')


@rpc_method(
    "getreceivedbylabel", category="wallet", needs_wallet=True,
    args=[_LABEL, _MINCONF],
    help=("Returns the total amount received by addresses with <label> in transactions with "
          "at least [minconf] confirmations."),
    result="amount              (numeric) The total amount in COIN received for this label.",
    examples=("\nAmount received by the default label with at least 1 confirmation\n"
              + example_cli("getreceivedbylabel", '""')
              + "\nAmount received at the tabby label including unconfirmed amounts with zero "
              "confirmations\n" + example_cli("getreceivedbylabel", '"tabby" 0')
              + "\nThe amount with at least 6 confirmations\n"
              + example_cli("getreceivedbylabel", '"tabby" 6')
              + "\nAs a json rpc call\n" + example_rpc("getreceivedbylabel", '"tabby", 6')))
async def getreceivedbylabel(ctx: RPCContext, label: Any, minconf: Any) -> Any:
    wallet = ctx.wallet
    min_depth = _MINCONF.read(minconf)
    name = label_from_value(_LABEL.read(label))
    return amount_to_json(await in_wallet(wallet, received_by_label, wallet, name, min_depth,
                                          slow=True))


_OUTPOINT_FIELDS = {"txid": "string", "vout": "number"}
_VOUT = Arg("vout", INT)
_OBJECT = Arg("output", OBJ)
_COUNT = Arg("maximumCount", INT64)


@rpc_method(
    "listunspent", category="wallet", needs_wallet=True,
    signature='listunspent ( minconf maxconf  ["addresses",...] [include_unsafe] [query_options])',
    args=[Arg("minconf", INT, default=1, typecheck=True,
              help="The minimum confirmations to filter"),
          Arg("maxconf", INT, default=MAX_DEPTH, typecheck=True,
              help="The maximum confirmations to filter"),
          Arg("addresses", ARR, default=None, typecheck=True,
              help="A json array of coin addresses to filter"),
          Arg("include_unsafe", BOOL, default=True, typecheck=True,
              help="Include outputs that are not safe to spend\n"
                   '                  See description of "safe" attribute below.'),
          Arg("query_options", OBJ, default=None,
              help='JSON with query options\n    {\n'
                   '      "minimumAmount"    (numeric or string, default=0) Minimum value of '
                   "each UTXO in COIN\n"
                   '      "maximumAmount"    (numeric or string, default=unlimited) Maximum '
                   "value of each UTXO in COIN\n"
                   '      "maximumCount"     (numeric or string, default=unlimited) Maximum '
                   "number of UTXOs\n"
                   '      "minimumSumAmount" (numeric or string, default=unlimited) Minimum sum '
                   "value of all UTXOs in COIN\n    }")],
    help=("Returns array of unspent transaction outputs\n"
          "with between minconf and maxconf (inclusive) confirmations.\n"
          "Optionally filter to only include txouts paid to specified addresses."),
    result=("[                   (array of json object)\n  {\n"
            '    "txid" : "txid",          (string) the transaction id \n'
            '    "vout" : n,               (numeric) the vout value\n'
            '    "address" : "address",    (string) the coin address\n'
            '    "label" : "label",        (string) The associated label, or "" for the default '
            "label\n"
            '    "redeemScript" : n        (string) The redeemScript if scriptPubKey is P2SH\n'
            '    "scriptPubKey" : "key",   (string) the script key\n'
            '    "amount" : x.xxx,         (numeric) the transaction output amount in COIN\n'
            '    "confirmations" : n,      (numeric) The number of confirmations\n'
            '    "spendable" : xxx,        (bool) Whether we have the private keys to spend this '
            "output\n"
            '    "solvable" : xxx,         (bool) Whether we know how to spend this output, '
            "ignoring the lack of keys\n"
            '    "safe" : xxx              (bool) Whether this output is considered safe to spend. '
            "Unconfirmed transactions\n"
            "                              from outside keys are considered unsafe\n"
            "                              and are not eligible for spending by fundrawtransaction "
            "and sendtoaddress.\n"
            "  }\n  ,...\n]"),
    examples=(example_cli("listunspent")
              + example_cli("listunspent", '6 9999999 "[\\"1PGFqEzfmQch1gKD3ra4k18PNj3tTUUSqg\\",'
                            '\\"1LtvqCaApEdUGFkpKMM4MstjcaL4dKg8SP\\"]"')
              + example_rpc("listunspent", '6, 9999999 "[\\"1PGFqEzfmQch1gKD3ra4k18PNj3tTUUSqg\\",'
                            '\\"1LtvqCaApEdUGFkpKMM4MstjcaL4dKg8SP\\"]"')
              + example_cli("listunspent", "6 9999999 '[]' true '{ \"minimumAmount\": 0.005 }'")
              + example_rpc("listunspent", '6, 9999999, [] , true, { "minimumAmount": 0.005 } ')))
async def listunspent(ctx: RPCContext, minconf: int, maxconf: int,
                      addresses: Optional[List[Any]], include_unsafe: bool,
                      query_options: Optional[Dict[str, Any]]) -> List[Any]:
    wanted: set = set()
    for item in addresses or ():
        text = ADDRESS_ARG.convert(item)
        destination = decode_destination(ctx, text, "Invalid Coin address: " + text)
        if destination in wanted:
            raise RPCError(RPC_INVALID_PARAMETER, "Invalid parameter, duplicated address: " + text)
        wanted.add(destination)
    options = query_options or {}
    low = amount_from_value(options["minimumAmount"]) if "minimumAmount" in options else 0
    high = amount_from_value(options["maximumAmount"]) if "maximumAmount" in options else None
    sum_goal = (amount_from_value(options["minimumSumAmount"])
                if "minimumSumAmount" in options else None)
    most = _COUNT.convert(options["maximumCount"]) if "maximumCount" in options else 0
    wallet = ctx.wallet

    def unspent() -> List[Any]:
        chosen: List[Output] = []
        total = 0
        coins = wallet.coins_by_outpoint(only_safe=not include_unsafe, min_depth=minconf,
                                         max_depth=maxconf)
        for coin in coins:
            value = coin.txout.value
            if value < low or (high is not None and value > high):
                continue
            chosen.append(coin)
            total += value
            if (sum_goal is not None and total >= sum_goal) or (most > 0 and len(chosen) >= most):
                break
        result = []
        for coin in chosen:
            if wanted:
                address = wallet.address_of(coin.txout.script_pubkey)
                if address is None or try_decode_address(address, wallet.params) not in wanted:
                    continue
            result.append(unspent_json(wallet, coin))
        return result

    return await in_wallet(wallet, unspent, slow=True)


def _read_outpoint(wallet: Wallet, value: Any, unlock: bool) -> Tuple[bytes, int]:
    """One lockunspent entry, checked as Core 0.17 does."""
    entry = _OBJECT.convert(value)
    check_object(entry, _OUTPOINT_FIELDS)
    # Core 0.17: any even-length hex is read as a number (uint256S), so a short txid is
    # simply unknown.
    if not is_hex(entry["txid"]):
        raise RPCError(RPC_INVALID_PARAMETER, "Invalid parameter, expected hex txid")
    n = _VOUT.convert(entry["vout"])
    if n < 0:
        raise RPCError(RPC_INVALID_PARAMETER, "Invalid parameter, vout must be positive")
    txid = uint256_from_hex(entry["txid"])
    wtx = wallet.txs.get(txid)
    if wtx is None:
        raise RPCError(RPC_INVALID_PARAMETER, "Invalid parameter, unknown transaction")
    if n >= len(wtx.tx.vout):
        raise RPCError(RPC_INVALID_PARAMETER, "Invalid parameter, vout index out of bounds")
    if wallet.is_spent((txid, n)):
        raise RPCError(RPC_INVALID_PARAMETER, "Invalid parameter, expected unspent output")
    locked = (txid, n) in wallet.locked_coins
    if unlock and not locked:
        raise RPCError(RPC_INVALID_PARAMETER, "Invalid parameter, expected locked output")
    if not unlock and locked:
        raise RPCError(RPC_INVALID_PARAMETER, "Invalid parameter, output already locked")
    return txid, n


_LOCK_EXAMPLE = ('"[{\\"txid\\":\\"a08e6907dbbd3d809776dbfc5d82e371b764ed838b5655e72f463568df1aadf0'
                 '\\",\\"vout\\":1}]"')
_LOCK_EXAMPLES = ("\nList the unspent transactions\n" + example_cli("listunspent")
                  + "\nLock an unspent transaction\n"
                  + example_cli("lockunspent", "false " + _LOCK_EXAMPLE)
                  + "\nList the locked transactions\n" + example_cli("listlockunspent")
                  + "\nUnlock the transaction again\n"
                  + example_cli("lockunspent", "true " + _LOCK_EXAMPLE))


@rpc_method(
    "lockunspent", category="wallet", needs_wallet=True,
    signature='lockunspent unlock ([{"txid":"txid","vout":n},...])',
    args=[Arg("unlock", BOOL, typecheck=True,
              help="Whether to unlock (true) or lock (false) the specified transactions"),
          Arg("transactions", ARR, default=None, typecheck=True,
              help="A json array of objects. Each object the txid (string) vout (numeric)\n"
                   "     [           (json array of json objects)\n       {\n"
                   '         "txid":"id",    (string) The transaction id\n'
                   '         "vout": n         (numeric) The output number\n'
                   "       }\n       ,...\n     ]")],
    help=("Updates list of temporarily unspendable outputs.\n"
          "Temporarily lock (unlock=false) or unlock (unlock=true) specified transaction outputs.\n"
          "If no transaction outputs are specified when unlocking then all current locked "
          "transaction outputs are unlocked.\n"
          "A locked transaction output will not be chosen by automatic coin selection, when "
          "spending coins.\n"
          "Locks are stored in memory only. Nodes start with zero locked outputs, and the locked "
          "output list\nis always cleared (by virtue of process exit) when a node stops or fails.\n"
          "Also see the listunspent call"),
    result="true|false    (boolean) Whether the command was successful or not",
    examples=_LOCK_EXAMPLES + "\nAs a json rpc call\n"
    + example_rpc("lockunspent", "false, " + _LOCK_EXAMPLE))
async def lockunspent(ctx: RPCContext, unlock: bool, transactions: Optional[List[Any]]) -> bool:
    wallet = ctx.wallet

    def update() -> bool:
        if transactions is None:
            if unlock:
                wallet.unlock_all_coins()
            return True
        # Every entry is checked before any lock changes (Core: atomically).
        outpoints = [_read_outpoint(wallet, value, unlock) for value in transactions]
        wallet.lock_coins(outpoints, lock=not unlock)
        return True

    return await in_wallet(wallet, update)


@rpc_method(
    "listlockunspent", category="wallet", needs_wallet=True,
    help=("Returns list of temporarily unspendable outputs.\n"
          "See the lockunspent call to lock and unlock transactions for spending."),
    result=("[\n  {\n"
            '    "txid" : "transactionid",     (string) The transaction id locked\n'
            '    "vout" : n                      (numeric) The vout value\n'
            "  }\n  ,...\n]"),
    examples=_LOCK_EXAMPLES + "\nAs a json rpc call\n" + example_rpc("listlockunspent"))
async def listlockunspent(ctx: RPCContext) -> List[Any]:
    wallet = ctx.wallet

    def locked() -> List[Any]:
        return [{"txid": hash_to_hex(txid), "vout": n} for txid, n in sorted(wallet.locked_coins)]

    return await in_wallet(wallet, locked)


#: What the ``wallet_coins`` entry point registers.
METHODS = [getbalance, getunconfirmedbalance, getreceivedbyaddress, getreceivedbylabel,
           listunspent, lockunspent, listlockunspent]
