"""Wallet methods, part B: balances, transaction lists, locks, fees, sending and funding.

Registered through the ``coin.rpc`` entry point ``wallet_tx``; every method
but ``fundrawtransaction`` (Core's "== Rawtransactions ==") is in "== Wallet ==".
``ctx.wallet`` is the wallet the call is routed to.  Reads run through
:func:`coin.rpc.methods.wallet.in_wallet`, under the wallet's lock (the
validation worker changes the wallet under the same lock) and never making
the reactor wait for it.  JSON objects come from :mod:`coin.views.wallet`.

Sending (sendtoaddress, sendmany) builds, signs, records and submits in one
call on the validation worker, the chain's single writer: no other send can
pick the same coins in between, and the wallet file holds the spend before
the mempool sees it, so a crash right after the reply loses nothing (the
wallet offers it to the pool again when it loads).  A transaction the pool
refuses is marked abandoned at once, giving its coins back.

Wallet comments (sendtoaddress's comment/comment_to, sendmany's comment) are
accepted but not kept.
"""

from __future__ import annotations

import random
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

from coin.chain.chainstate import ChainState
from coin.consensus.errors import ValidationError
from coin.consensus.tx_check import _format_money, is_final_tx
from coin.mempool.accept import MissingInputs
from coin.mempool.pool import Mempool
from coin.mempool.policy import FeeRate
from coin.mempool.service import MempoolService
from coin.primitives.address import Destination, try_decode_address
from coin.primitives.hashes import hash_to_hex
from coin.primitives.transaction import Transaction
from coin.rpc.context import RPCContext
from coin.rpc.errors import (
    RPC_INVALID_ADDRESS_OR_KEY, RPC_INVALID_PARAMETER, RPC_METHOD_DEPRECATED, RPC_TYPE_ERROR,
    RPC_WALLET_ERROR, RPC_WALLET_INSUFFICIENT_FUNDS, RPCError,
)
from coin.rpc.methods.mempool import _conf_target, _format_state
from coin.rpc.methods.wallet import in_wallet
from coin.rpc.methods.rawtransactions import (
    PREVTXS_HELP, PREVTXS_SIGNATURE, SIGHASH_HELP, SIGN_RESULT, check_object, decode_transaction,
    sign_transaction_json,
)
from coin.rpc.params import parse_hash_v
from coin.rpc.registry import (
    AMOUNT, ANY, ARR, BOOL, INT, INT64, OBJ, STR, Arg, amount_from_value, example_cli, example_rpc,
    json_type_name, rpc_method,
)
from coin.script.standard import destination_script
from coin.views.amounts import amount_to_json
from coin.views.wallet import (
    gettransaction_json, received_json, transaction_entries, unspent_json,
)
from coin.wallet.keystore import ISMINE_NO, ISMINE_SPENDABLE, ISMINE_WATCH_ONLY, WalletLocked
from coin.wallet.spend import (
    DEFAULT_CONFIRM_TARGET, Created, FeePolicy, Recipient, SpendError, create_transaction,
)
from coin.wallet.wallet import Output, Wallet, WalletTx

#: Core's nMaxDepth default for listunspent.
MAX_DEPTH = 9999999
_ESTIMATE_MODES = ("UNSET", "ECONOMICAL", "CONSERVATIVE")

# ------------------------------------------------------------------ shared helpers


def _filter(include_watchonly: bool) -> int:
    return ISMINE_SPENDABLE | ISMINE_WATCH_ONLY if include_watchonly else ISMINE_SPENDABLE


def _pool(ctx: RPCContext) -> Mempool:
    return ctx.node.mempool.pool


def _require_unlocked(wallet: Wallet) -> None:
    """Core's EnsureWalletIsUnlocked (-13)."""
    if wallet.keys.locked:
        raise WalletLocked()


def _is_final(wallet: Wallet, wtx: WalletTx) -> bool:
    tip = wallet.chain.tip
    return is_final_tx(wtx.tx, tip.height + 1, tip.median_time_past())


def _txid_order(wallet: Wallet) -> List[WalletTx]:
    """Wallet transactions in Core's mapWallet order (txid, internal byte order)."""
    return sorted(wallet.txs.values(), key=lambda wtx: wtx.txid)


def _decode(ctx: RPCContext, text: str, message: str) -> Destination:
    destination = try_decode_address(text, ctx.node.chain.params)
    if destination is None:
        raise RPCError(RPC_INVALID_ADDRESS_OR_KEY, message)
    return destination


def _wallet_tx(wallet: Wallet, txid: bytes) -> WalletTx:
    wtx = wallet.txs.get(txid)
    if wtx is None:
        raise RPCError(RPC_INVALID_ADDRESS_OR_KEY, "Invalid or non-wallet transaction id")
    return wtx


def _fee_policy(ctx: RPCContext, conf_target: Optional[int], estimate_mode: str,
                replaceable: Optional[bool], fixed: Optional[FeeRate] = None) -> FeePolicy:
    """Core's GetMinimumFeeRate inputs for a coin control's target, mode and feeRate."""
    service: MempoolService = ctx.node.mempool
    target = DEFAULT_CONFIRM_TARGET if conf_target is None else _conf_target(ctx, conf_target)
    if estimate_mode not in _ESTIMATE_MODES:
        raise RPCError(RPC_INVALID_PARAMETER, "Invalid estimate_mode parameter")
    # Estimates are conservative unless the transaction signals replaceability (Core).
    conservative = {"ECONOMICAL": False, "CONSERVATIVE": True}.get(estimate_mode,
                                                                    not replaceable)
    with service.pool.lock:
        rate, _ = service.estimator.estimate_smart_fee(target, conservative)
        floor = service.pool.get_min_fee()
    return FeePolicy(min_relay=service.policy.min_relay_fee, pool_floor=floor,
                     estimate=FeeRate(rate) if rate is not None else None,
                     max_fee=service.max_tx_fee, fixed=fixed, use_pay_tx_fee=conf_target is None)


class _Rejected(Exception):
    """The pool refused a wallet transaction (it has been abandoned)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _send_on_worker(chainstate: ChainState, service: MempoolService, wallet: Wallet,
                    recipients: List[Recipient], fees: FeePolicy) -> Created:
    """Create, record, then submit: one turn of the validation worker."""
    with wallet.lock:
        created = create_transaction(wallet, recipients, fees)
        # In the wallet file before the pool sees it: a crash never forgets the spend.
        wallet.sync_transaction(created.tx, None)
    try:
        service.accept_on_worker(chainstate, created.tx, service.max_tx_fee)
        return created
    except MissingInputs:
        reason = "Missing inputs"
    except ValidationError as e:
        reason = _format_state(e)
    wallet.abandon(created.tx.txid)
    raise _Rejected(reason)


async def _send(ctx: RPCContext, recipients: List[Recipient], fees: FeePolicy,
                rejected: str, on_spend_error: Callable[[SpendError], RPCError]) -> str:
    service = ctx.node.mempool
    try:
        created = await ctx.node.chain.call(_send_on_worker, service, ctx.wallet, recipients, fees)
    except SpendError as e:
        raise on_spend_error(e) from None
    except _Rejected as e:
        raise RPCError(RPC_WALLET_ERROR, rejected + e.reason) from None
    return created.tx.txid_hex


# ------------------------------------------------------------------ balances

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
    return amount_to_json(await in_wallet(wallet, wallet.balance, _filter(include_watchonly),
                                          minconf, slow=True))


@rpc_method(
    "getunconfirmedbalance", category="wallet", needs_wallet=True,
    help="Returns the server's total unconfirmed balance")
async def getunconfirmedbalance(ctx: RPCContext) -> Any:
    wallet = ctx.wallet
    return amount_to_json(await in_wallet(wallet, wallet.unconfirmed_balance, slow=True))


@rpc_method(
    "getreceivedbyaddress", category="wallet", needs_wallet=True,
    args=[Arg("address", STR, help="The coin address for transactions."),
          Arg("minconf", INT, default=1,
              help="Only include transactions confirmed at least this many times.")],
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
async def getreceivedbyaddress(ctx: RPCContext, address: str, minconf: int) -> Any:
    wallet = ctx.wallet
    script = destination_script(_decode(ctx, address, "Invalid Coin address"))

    def received() -> int:
        if wallet.is_mine(script) == ISMINE_NO:
            raise RPCError(RPC_WALLET_ERROR, "Address not found in wallet")
        return sum(out.value for wtx in wallet.txs.values()
                   if not wtx.tx.is_coinbase() and _is_final(wallet, wtx)
                   and wallet.depth(wtx) >= minconf
                   for out in wtx.tx.vout if out.script_pubkey == script)

    return amount_to_json(await in_wallet(wallet, received, slow=True))


def _book_order(wallet: Wallet) -> List[Tuple[str, str, Destination]]:
    """The address book as Core's std::map iterates it: key hashes, then script hashes."""
    entries = [(address, label, try_decode_address(address, wallet.params))
               for address, (label, _purpose) in wallet.names.items()]
    return sorted((e for e in entries if e[2] is not None),
                  key=lambda e: (e[2].kind != "pubkeyhash", e[2].hash160))


@rpc_method(
    "listreceivedbyaddress", category="wallet", needs_wallet=True,
    signature="listreceivedbyaddress ( minconf include_empty include_watchonly address_filter )",
    args=[Arg("minconf", INT, default=1,
              help="The minimum number of confirmations before payments are included."),
          Arg("include_empty", BOOL, default=False,
              help="Whether to include addresses that haven't received any payments."),
          Arg("include_watchonly", BOOL, default=False,
              help="Whether to include watch-only addresses (see 'importaddress')."),
          Arg("address_filter", STR, default=None,
              help="If present, only return information on this address.")],
    help="List balances by receiving address.",
    result=("[\n  {\n"
            '    "involvesWatchonly" : true,        (bool) Only returned if imported addresses '
            "were involved in transaction\n"
            '    "address" : "receivingaddress",  (string) The receiving address\n'
            '    "account" : "accountname",       (string) DEPRECATED. Backwards compatible alias '
            "for label.\n"
            '    "amount" : x.xxx,                  (numeric) The total amount in COIN received '
            "by the address\n"
            '    "confirmations" : n,               (numeric) The number of confirmations of the '
            "most recent transaction included\n"
            '    "label" : "label",               (string) The label of the receiving address. '
            'The default label is "".\n'
            '    "txids": [\n'
            '       "txid",                         (string) The ids of transactions received '
            "with the address \n       ...\n    ]\n  }\n  ,...\n]"),
    examples=(example_cli("listreceivedbyaddress") + example_cli("listreceivedbyaddress", "6 true")
              + example_rpc("listreceivedbyaddress", "6, true, true")))
async def listreceivedbyaddress(ctx: RPCContext, minconf: int, include_empty: bool,
                                include_watchonly: bool, address_filter: Optional[str]) -> List[Any]:
    wallet = ctx.wallet
    only: Optional[Destination] = None
    if address_filter is not None:
        only = try_decode_address(address_filter, wallet.params)
        if only is None:
            raise RPCError(RPC_WALLET_ERROR, "address_filter parameter was invalid")
    return await in_wallet(wallet, _list_received, wallet, minconf, include_empty,
                           _filter(include_watchonly), only, slow=True)


def _list_received(wallet: Wallet, minconf: int, include_empty: bool, filter_: int,
                   only: Optional[Destination]) -> List[Any]:
    """Core's ListReceived by address: tally the wallet, answer in address-book order."""
    # address -> [amount, lowest confirmations, txids, watch-only]
    tally: Dict[str, list] = {}
    for wtx in _txid_order(wallet):
        if wtx.tx.is_coinbase() or not _is_final(wallet, wtx):
            continue
        depth = wallet.depth(wtx)
        if depth < minconf:
            continue
        for out in wtx.tx.vout:
            address = wallet.address_of(out.script_pubkey)
            if address is None:
                continue
            destination = try_decode_address(address, wallet.params)
            if only is not None and destination != only:
                continue
            mine = wallet.is_mine(destination_script(destination))
            if not mine & filter_:
                continue
            item = tally.setdefault(address, [0, None, [], False])
            item[0] += out.value
            item[1] = depth if item[1] is None else min(item[1], depth)
            item[2].append(wtx.txid)
            item[3] = item[3] or bool(mine & ISMINE_WATCH_ONLY)
    result = []
    for address, label, destination in _book_order(wallet):
        if only is not None and destination != only:
            continue
        item = tally.get(address)
        if item is None and not include_empty:
            continue
        if not wallet.is_mine(destination_script(destination)) & filter_:
            continue
        amount, confirmations, txids, watch_only = item or (0, None, [], False)
        result.append(received_json(address, label, amount, confirmations, txids, watch_only))
    return result


# ------------------------------------------------------------------ transactions

_TX_ENTRY_FIELDS = """\
    "address":"address",    (string) The coin address of the transaction.
    "category":"send|receive",  (string) The transaction category.
    "amount": x.xxx,          (numeric) The amount in COIN. This is negative for the 'send' \
category, and is positive
                                        for the 'receive' category,
    "label": "label",       (string) A comment for the address/transaction, if any
    "vout": n,                (numeric) the vout value
    "fee": x.xxx,             (numeric) The amount of the fee in COIN. This is negative and only \
available for the
                                         'send' category of transactions.
    "confirmations": n,       (numeric) The number of confirmations for the transaction. Negative \
confirmations indicate the
                                         transaction conflicts with the block chain
    "trusted": xxx,           (bool) Whether we consider the outputs of this unconfirmed \
transaction safe to spend.
    "blockhash": "hashvalue", (string) The block hash containing the transaction.
    "blockindex": n,          (numeric) The index of the transaction in the block that includes it.
    "blocktime": xxx,         (numeric) The block time in seconds since epoch (1 Jan 1970 GMT).
    "txid": "transactionid", (string) The transaction id.
    "time": xxx,              (numeric) The transaction time in seconds since epoch (midnight Jan 1 \
1970 GMT).
    "timereceived": xxx,      (numeric) The time received in seconds since epoch (midnight Jan 1 1970 GMT).
    "bip125-replaceable": "yes|no|unknown",  (string) Whether this transaction could be replaced \
due to BIP125 (replace-by-fee);
                                                     may be unknown for unconfirmed transactions \
not in the mempool
    "abandoned": xxx          (bool) 'true' if the transaction has been abandoned (inputs are \
respendable). Only available for the
                                         'send' category of transactions."""


@rpc_method(
    "listtransactions", category="wallet", needs_wallet=True,
    signature="listtransactions (dummy count skip include_watchonly)",
    args=[Arg("dummy", STR, default=None,
              help='If set, should be "*" for backwards compatibility.'),
          Arg("count", INT, default=10, help="The number of transactions to return"),
          Arg("skip", INT, default=0, help="The number of transactions to skip"),
          Arg("include_watchonly", BOOL, default=False,
              help="Include transactions to watch-only addresses (see 'importaddress')")],
    help="Returns up to 'count' most recent transactions skipping the first 'from' transactions.",
    result="[\n  {\n" + _TX_ENTRY_FIELDS + "\n  }\n]",
    examples=("\nList the most recent 10 transactions in the systems\n"
              + example_cli("listtransactions") + "\nList transactions 100 to 120\n"
              + example_cli("listtransactions", '"*" 20 100') + "\nAs a json rpc call\n"
              + example_rpc("listtransactions", '"*", 20, 100')))
async def listtransactions(ctx: RPCContext, dummy: Optional[str], count: int, skip: int,
                           include_watchonly: bool) -> List[Any]:
    if dummy is not None and dummy != "*":
        raise RPCError(RPC_INVALID_PARAMETER, 'Dummy value must be set to "*"')
    if count < 0:
        raise RPCError(RPC_INVALID_PARAMETER, "Negative count")
    if skip < 0:
        raise RPCError(RPC_INVALID_PARAMETER, "Negative from")
    wallet = ctx.wallet
    filter_ = _filter(include_watchonly)
    state, pool = ctx.node.chain.state, _pool(ctx)

    def page() -> List[Any]:
        collected: List[Any] = []
        for wtx in reversed(list(wallet.ordered_txs())):
            collected.extend(transaction_entries(wallet, wtx, 0, True, filter_, state, pool))
            if len(collected) >= count + skip:
                break
        # Newest transactions first, each one's entries in order; Core reverses the page.
        return list(reversed(collected[skip:skip + count]))

    return await in_wallet(wallet, page, slow=True)


@rpc_method(
    "listsinceblock", category="wallet", needs_wallet=True,
    signature=('listsinceblock ( "blockhash" target_confirmations include_watchonly '
               "include_removed )"),
    args=[Arg("blockhash", STR, default=None,
              help="The block hash to list transactions since"),
          Arg("target_confirmations", INT, default=1,
              help="Return the nth block hash from the main chain. e.g. 1 would mean the best "
                   "block hash. Note: this is not used as a filter, but only affects [lastblock] "
                   "in the return value"),
          Arg("include_watchonly", BOOL, default=False,
              help="Include transactions to watch-only addresses (see 'importaddress')"),
          Arg("include_removed", BOOL, default=True,
              help='Show transactions that were removed due to a reorg in the "removed" array\n'
                   "                                                           (not guaranteed "
                   "to work on pruned nodes)")],
    help=("Get all transactions in blocks since block [blockhash], or all transactions if "
          "omitted.\n"
          'If "blockhash" is no longer a part of the main chain, transactions from the fork '
          "point onward are included.\n"
          "Additionally, if include_removed is set, transactions affecting the wallet which were "
          'removed are returned in the "removed" array.'),
    result=('{\n  "transactions": [\n' + _TX_ENTRY_FIELDS + "\n  ],\n"
            '  "removed": [\n    <structure is the same as "transactions" above, only present if '
            "include_removed=true>\n    Note: transactions that were re-added in the active chain "
            "will appear as-is in this array, and may thus have a positive confirmation count.\n"
            "  ],\n"
            '  "lastblock": "lastblockhash"     (string) The hash of the block '
            "(target_confirmations-1) from the best block on the main chain. This is typically "
            "used to feed back into listsinceblock the next time you call it. So you would "
            "generally use a target_confirmations of say 6, so you will be continually "
            "re-notified of transactions until they've reached 6 confirmations plus any new ones\n"
            "}"),
    examples=(example_cli("listsinceblock")
              + example_cli("listsinceblock", '"000000000000000bacf66f7497b7dc45ef753ee9a7d38571037'
                            'cdb1a57f663ad" 6')
              + example_rpc("listsinceblock", '"000000000000000bacf66f7497b7dc45ef753ee9a7d3857103'
                            '7cdb1a57f663ad", 6')))
async def listsinceblock(ctx: RPCContext, blockhash: Optional[str], target_confirmations: int,
                         include_watchonly: bool, include_removed: bool) -> Dict[str, Any]:
    chain = ctx.node.chain
    state = chain.snapshot()
    since = None   # the block asked for, or its fork point with the active chain
    detached = []  # blocks of the branch the asked-for block is on, tip first
    if blockhash:
        asked = state.lookup(parse_hash_v(blockhash, "blockhash"))
        if asked is None:
            raise RPCError(RPC_INVALID_ADDRESS_OR_KEY, "Block not found")
        since = asked if state.contains(asked) else state.find_fork(state.tip, asked)
        walk = asked
        while include_removed and walk is not since:
            detached.append(walk)
            walk = walk.prev
    if target_confirmations < 1:
        raise RPCError(RPC_INVALID_PARAMETER, "Invalid parameter")
    blocks = [await chain.read_block(entry) for entry in detached]
    wallet = ctx.wallet
    filter_ = _filter(include_watchonly)
    pool = _pool(ctx)

    def since_block() -> Dict[str, Any]:
        tip = state.tip
        depth = tip.height + 1 - since.height if since is not None else -1
        transactions: List[Any] = []
        for wtx in _txid_order(wallet):
            if depth == -1 or wallet.depth(wtx) < depth:
                transactions.extend(
                    transaction_entries(wallet, wtx, 0, True, filter_, state, pool))
        removed: List[Any] = []
        for block in blocks:
            for tx in block.txs:
                wtx = wallet.txs.get(tx.txid)
                if wtx is not None:
                    # Every confirmation count, even negative ones (Core's -100000000).
                    removed.extend(transaction_entries(wallet, wtx, -100000000, True, filter_,
                                                       state, pool))
        last = state.at_height(tip.height + 1 - target_confirmations)
        result: Dict[str, Any] = {"transactions": transactions}
        if include_removed:
            result["removed"] = removed
        result["lastblock"] = hash_to_hex(last.hash if last is not None else bytes(32))
        return result

    return await in_wallet(wallet, since_block, slow=True)


@rpc_method(
    "gettransaction", category="wallet", needs_wallet=True,
    args=[Arg("txid", STR, help="The transaction id"),
          Arg("include_watchonly", BOOL, default=False,
              help="Whether to include watch-only addresses in balance calculation and details[]")],
    help="Get detailed information about in-wallet transaction <txid>",
    result=("{\n"
            '  "amount" : x.xxx,        (numeric) The transaction amount in COIN\n'
            '  "fee": x.xxx,            (numeric) The amount of the fee in COIN. This is negative '
            "and only available for the \n"
            "                              'send' category of transactions.\n"
            '  "confirmations" : n,     (numeric) The number of confirmations\n'
            '  "blockhash" : "hash",    (string) The block hash\n'
            '  "blockindex" : xx,       (numeric) The index of the transaction in the block that '
            "includes it\n"
            '  "blocktime" : ttt,       (numeric) The time in seconds since epoch (1 Jan 1970 GMT)\n'
            '  "txid" : "transactionid",   (string) The transaction id.\n'
            '  "time" : ttt,            (numeric) The transaction time in seconds since epoch '
            "(1 Jan 1970 GMT)\n"
            '  "timereceived" : ttt,    (numeric) The time received in seconds since epoch '
            "(1 Jan 1970 GMT)\n"
            '  "bip125-replaceable": "yes|no|unknown",  (string) Whether this transaction could '
            "be replaced due to BIP125 (replace-by-fee);\n"
            "                                                   may be unknown for unconfirmed "
            "transactions not in the mempool\n"
            '  "details" : [\n    {\n'
            '      "address" : "address",          (string) The coin address involved in the '
            "transaction\n"
            "      \"category\" : \"send|receive\",    (string) The category, either 'send' or "
            "'receive'\n"
            '      "amount" : x.xxx,                 (numeric) The amount in COIN\n'
            '      "label" : "label",              (string) A comment for the address/transaction, '
            "if any\n"
            '      "vout" : n,                       (numeric) the vout value\n'
            '      "fee": x.xxx,                     (numeric) The amount of the fee in COIN. This '
            "is negative and only available for the \n"
            "                                           'send' category of transactions.\n"
            "      \"abandoned\": xxx                  (bool) 'true' if the transaction has been "
            "abandoned (inputs are respendable). Only available for the \n"
            "                                           'send' category of transactions.\n"
            "    }\n    ,...\n  ],\n"
            '  "hex" : "data"         (string) Raw data for transaction\n}'),
    examples=(example_cli("gettransaction", '"1075db55d416d3ca199f55b6084e2115b9345e16c5cf302fc80e'
                          '9d5fbf5d48d"')
              + example_cli("gettransaction", '"1075db55d416d3ca199f55b6084e2115b9345e16c5cf302fc8'
                            '0e9d5fbf5d48d" true')
              + example_rpc("gettransaction", '"1075db55d416d3ca199f55b6084e2115b9345e16c5cf302fc8'
                            '0e9d5fbf5d48d"')))
async def gettransaction(ctx: RPCContext, txid: str, include_watchonly: bool) -> Dict[str, Any]:
    wallet = ctx.wallet
    txid_bytes = parse_hash_v(txid, "txid")

    def describe() -> Dict[str, Any]:
        return gettransaction_json(wallet, _wallet_tx(wallet, txid_bytes),
                                   _filter(include_watchonly), ctx.node.chain.state, _pool(ctx))

    return await in_wallet(wallet, describe)


def _abandon_on_worker(chainstate: ChainState, wallet: Wallet, txid: bytes) -> None:
    try:
        wallet.abandon(txid)
    except ValueError as e:
        raise RPCError(RPC_INVALID_ADDRESS_OR_KEY, str(e)) from None


@rpc_method(
    "abandontransaction", category="wallet", needs_wallet=True,
    args=[Arg("txid", STR, help="The transaction id")],
    help=("Mark in-wallet transaction <txid> as abandoned\n"
          "This will mark this transaction and all its in-wallet descendants as abandoned which "
          "will allow\nfor their inputs to be respent.  It can be used to replace \"stuck\" or "
          "evicted transactions.\nIt only works on transactions which are not included in a "
          "block and are not currently in the mempool.\nIt has no effect on transactions which "
          "are already abandoned."),
    examples=(example_cli("abandontransaction", '"1075db55d416d3ca199f55b6084e2115b9345e16c5cf302'
                          'fc80e9d5fbf5d48d"')
              + example_rpc("abandontransaction", '"1075db55d416d3ca199f55b6084e2115b9345e16c5cf3'
                            '02fc80e9d5fbf5d48d"')))
async def abandontransaction(ctx: RPCContext, txid: str) -> None:
    wallet = ctx.wallet
    txid_bytes = parse_hash_v(txid, "txid")
    _wallet_tx(wallet, txid_bytes)
    # On the worker, so the tx cannot enter the pool between the check and the change.
    await ctx.node.chain.call(_abandon_on_worker, wallet, txid_bytes)
    return None


# ------------------------------------------------------------------ unspent outputs and locks

_OUTPOINT_FIELDS = {"txid": "string", "vout": "number"}
_VOUT = Arg("vout", INT)
_OBJECT = Arg("output", OBJ)
_ADDRESS = Arg("address", STR)
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
        text = _ADDRESS.convert(item)
        destination = _decode(ctx, text, "Invalid Coin address: " + text)
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
        coins = wallet.available_coins(only_safe=not include_unsafe, min_depth=minconf,
                                       max_depth=maxconf)
        for coin in sorted(coins, key=lambda c: c.outpoint):
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
    txid = parse_hash_v(entry["txid"], "txid")
    n = _VOUT.convert(entry["vout"])
    if n < 0:
        raise RPCError(RPC_INVALID_PARAMETER, "Invalid parameter, vout must be positive")
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
                wallet.locked_coins.clear()
            return True
        # Every entry is checked before any lock changes (Core: atomically).
        outpoints = [_read_outpoint(wallet, value, unlock) for value in transactions]
        for outpoint in outpoints:
            if unlock:
                wallet.locked_coins.discard(outpoint)
            else:
                wallet.locked_coins.add(outpoint)
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


@rpc_method(
    "settxfee", category="wallet", needs_wallet=True,
    args=[Arg("amount", AMOUNT, help="The transaction fee in COIN/kB")],
    help=("Set the transaction fee per kB. Overwrites the paytxfee parameter."),
    result="true|false        (boolean) Returns true if successful",
    examples=example_cli("settxfee", "0.00001") + example_rpc("settxfee", "0.00001"))
def settxfee(ctx: RPCContext, amount: int) -> bool:
    ctx.wallet.pay_tx_fee = amount
    return True


# ------------------------------------------------------------------ sending

_FEE_ARGS = [
    Arg("replaceable", BOOL, default=None,
        help="Allow this transaction to be replaced by a transaction with higher fees via BIP 125"),
    Arg("conf_target", INT, default=None, help="Confirmation target (in blocks)"),
    Arg("estimate_mode", STR, default="UNSET",
        help='The fee estimate mode, must be one of:\n       "UNSET"\n       "ECONOMICAL"\n'
             '       "CONSERVATIVE"'),
]


@rpc_method(
    "sendtoaddress", category="wallet", needs_wallet=True,
    signature=('sendtoaddress "address" amount ( "comment" "comment_to" subtractfeefromamount '
               'replaceable conf_target "estimate_mode")'),
    args=[Arg("address", STR, help="The coin address to send to."),
          Arg("amount", AMOUNT, help="The amount in COIN to send. eg 0.1"),
          Arg("comment", STR, default=None,
              help="A comment used to store what the transaction is for. \n"
                   "                             This is not part of the transaction, just kept "
                   "in your wallet."),
          Arg("comment_to", STR, default=None,
              help="A comment to store the name of the person or organization \n"
                   "                             to which you're sending the transaction. This "
                   "is not part of the \n                             transaction, just kept in "
                   "your wallet."),
          Arg("subtractfeefromamount", BOOL, default=False,
              help="The fee will be deducted from the amount being sent.\n"
                   "                             The recipient will receive less coins than you "
                   "enter in the amount field."),
          *_FEE_ARGS],
    help="Send an amount to a given address.",
    result='"txid"                  (string) The transaction id.',
    examples=(example_cli("sendtoaddress", '"1M72Sfpbz1BPpXFHz9m3CdqATR44Jvaydd" 0.1')
              + example_cli("sendtoaddress", '"1M72Sfpbz1BPpXFHz9m3CdqATR44Jvaydd" 0.1 "donation" '
                            '"seans outpost"')
              + example_cli("sendtoaddress", '"1M72Sfpbz1BPpXFHz9m3CdqATR44Jvaydd" 0.1 "" "" true')
              + example_rpc("sendtoaddress", '"1M72Sfpbz1BPpXFHz9m3CdqATR44Jvaydd", 0.1, "donation",'
                            ' "seans outpost"')))
async def sendtoaddress(ctx: RPCContext, address: str, amount: int, comment: Optional[str],
                        comment_to: Optional[str], subtractfeefromamount: bool,
                        replaceable: Optional[bool], conf_target: Optional[int],
                        estimate_mode: str) -> str:
    destination = _decode(ctx, address, "Invalid address")
    if amount <= 0:
        raise RPCError(RPC_TYPE_ERROR, "Invalid amount for send")
    fees = _fee_policy(ctx, conf_target, estimate_mode, replaceable)
    wallet = ctx.wallet
    _require_unlocked(wallet)
    balance = await in_wallet(wallet, wallet.balance, slow=True)
    if amount > balance:
        raise RPCError(RPC_WALLET_INSUFFICIENT_FUNDS, "Insufficient funds")

    def failed(error: SpendError) -> RPCError:
        if not subtractfeefromamount and amount + error.fee_required > balance:
            return RPCError(RPC_WALLET_ERROR, "Error: This transaction requires a transaction fee "
                            "of at least %s" % _format_money(error.fee_required))
        return RPCError(RPC_WALLET_ERROR, error.message)

    recipient = Recipient(destination_script(destination), amount, subtractfeefromamount)
    return await _send(ctx, [recipient], fees, "Error: The transaction was rejected! Reason "
                       "given: ", failed)


@rpc_method(
    "sendmany", category="wallet", needs_wallet=True,
    signature=('sendmany "" {"address":amount,...} ( minconf "comment" ["address",...] '
               'replaceable conf_target "estimate_mode")'),
    args=[Arg("dummy", STR, help='Must be set to "" for backwards compatibility.'),
          Arg("amounts", OBJ, help="A json object with addresses and amounts\n    {\n"
              '      "address":amount   (numeric or string) The coin address is the key, the '
              "numeric amount (can be string) in COIN is the value\n      ,...\n    }"),
          Arg("minconf", INT, default=1,
              help="Only use the balance confirmed at least this many times."),
          Arg("comment", STR, default=None, help="A comment"),
          Arg("subtractfeefrom", ARR, default=None,
              help="A json array with addresses.\n"
                   "                           The fee will be equally deducted from the amount "
                   "of each selected address.\n"
                   "                           Those recipients will receive less coins than you "
                   "enter in their corresponding amount field.\n"
                   "                           If no addresses are specified here, the sender "
                   "pays the fee.\n    [\n"
                   '      "address"          (string) Subtract fee from this address\n'
                   "      ,...\n    ]"),
          *_FEE_ARGS],
    help="Send multiple times. Amounts are double-precision floating point numbers.",
    result=('"txid"                   (string) The transaction id for the send. Only 1 '
            "transaction is created regardless of \n"
            "                                    the number of addresses."),
    examples=("\nSend two amounts to two different addresses:\n"
              + example_cli("sendmany", '"" "{\\"1D1ZrZNe3JUo7ZycKEYQQiQAWd9y54F4XX\\":0.01,'
                            '\\"1353tsE8YMTA4EuV7dgUXGjNFf9KpVvKHz\\":0.02}"')
              + "\nSend two amounts to two different addresses setting the confirmation and "
              "comment:\n"
              + example_cli("sendmany", '"" "{\\"1D1ZrZNe3JUo7ZycKEYQQiQAWd9y54F4XX\\":0.01,'
                            '\\"1353tsE8YMTA4EuV7dgUXGjNFf9KpVvKHz\\":0.02}" 6 "testing"')
              + "\nAs a json rpc call\n"
              + example_rpc("sendmany", '"", {"1D1ZrZNe3JUo7ZycKEYQQiQAWd9y54F4XX":0.01,'
                            '"1353tsE8YMTA4EuV7dgUXGjNFf9KpVvKHz":0.02}, 6, "testing"')))
async def sendmany(ctx: RPCContext, dummy: str, amounts: Dict[str, Any], minconf: int,
                   comment: Optional[str], subtractfeefrom: Optional[List[Any]],
                   replaceable: Optional[bool], conf_target: Optional[int],
                   estimate_mode: str) -> str:
    if dummy != "":
        raise RPCError(RPC_INVALID_PARAMETER, 'Dummy value must be set to ""')
    subtract = [_ADDRESS.convert(item) for item in subtractfeefrom or ()]
    fees = _fee_policy(ctx, conf_target, estimate_mode, replaceable)
    seen: set = set()
    recipients = []
    for text, value in amounts.items():
        destination = _decode(ctx, text, "Invalid Coin address: " + text)
        if destination in seen:
            raise RPCError(RPC_INVALID_PARAMETER, "Invalid parameter, duplicated address: " + text)
        seen.add(destination)
        amount = amount_from_value(value)
        if amount <= 0:
            raise RPCError(RPC_TYPE_ERROR, "Invalid amount for send")
        recipients.append(Recipient(destination_script(destination), amount, text in subtract))
    wallet = ctx.wallet
    _require_unlocked(wallet)
    if sum(r.amount for r in recipients) > await in_wallet(wallet, wallet.legacy_balance,
                                                           ISMINE_SPENDABLE, minconf):
        raise RPCError(RPC_WALLET_INSUFFICIENT_FUNDS, "Wallet has insufficient funds")
    random.shuffle(recipients)
    return await _send(ctx, recipients, fees, "Transaction commit failed:: ",
                       lambda e: RPCError(RPC_WALLET_INSUFFICIENT_FUNDS, e.message))


# ------------------------------------------------------------------ raw transactions

_FUND_OPTIONS = {"changeAddress": "string", "changePosition": "number", "change_type": "string",
                 "includeWatching": "bool", "lockUnspents": "bool", "feeRate": None,
                 "subtractFeeFromOutputs": "array", "replaceable": "bool",
                 "conf_target": "number", "estimate_mode": "string"}
_POSITION = Arg("position", INT)
_CONF_TARGET = Arg("conf_target", INT)


class _FundOptions(NamedTuple):
    change_script: Optional[bytes] = None
    change_position: int = -1
    watching: bool = False
    lock: bool = False
    fee_rate: Optional[FeeRate] = None
    subtract: Sequence[Any] = ()
    replaceable: Optional[bool] = None
    conf_target: Optional[int] = None
    estimate_mode: str = "UNSET"


def _read_fund_options(ctx: RPCContext, options: Any) -> _FundOptions:
    """fundrawtransaction's options, checked in Core 0.17's order (true: includeWatching)."""
    if options is None or isinstance(options, bool):
        return _FundOptions(watching=bool(options))
    if not isinstance(options, dict):
        raise RPCError(RPC_TYPE_ERROR, "Expected type object, got %s" % json_type_name(options))
    check_object(options, _FUND_OPTIONS, allow_null=True, strict=True)
    given = {key: value for key, value in options.items() if value is not None}
    change_script = None
    if "changeAddress" in given:
        change_script = destination_script(_decode(
            ctx, given["changeAddress"], "changeAddress must be a valid coin address"))
    change_position = _POSITION.convert(given.get("changePosition", -1))
    if "change_type" in given:
        if "changeAddress" in given:
            raise RPCError(RPC_INVALID_PARAMETER,
                           "Cannot specify both changeAddress and address_type options")
        if given["change_type"] != "legacy":
            raise RPCError(RPC_INVALID_ADDRESS_OR_KEY,
                           "Unknown change type '%s'" % given["change_type"])
    fee_rate = FeeRate(amount_from_value(given["feeRate"])) if "feeRate" in given else None
    for key in ("conf_target", "estimate_mode"):
        if key in given and fee_rate is not None:
            raise RPCError(RPC_INVALID_PARAMETER, "Cannot specify both %s and feeRate" % key)
    conf_target = _CONF_TARGET.convert(given["conf_target"]) if "conf_target" in given else None
    return _FundOptions(change_script, change_position, bool(given.get("includeWatching")),
                        bool(given.get("lockUnspents")), fee_rate,
                        given.get("subtractFeeFromOutputs", ()), given.get("replaceable"),
                        conf_target, given.get("estimate_mode", "UNSET"))


def _fund_outputs(tx: Transaction, subtract: Sequence[Any]) -> List[Recipient]:
    """The outputs as recipients, with Core's subtractFeeFromOutputs checks."""
    positions: set = set()
    for value in subtract:
        position = _POSITION.convert(value)
        if position in positions:
            raise RPCError(RPC_INVALID_PARAMETER,
                           "Invalid parameter, duplicated position: %d" % position)
        if position < 0:
            raise RPCError(RPC_INVALID_PARAMETER, "Invalid parameter, negative position: %d"
                           % position)
        if position >= len(tx.vout):
            raise RPCError(RPC_INVALID_PARAMETER, "Invalid parameter, position too large: %d"
                           % position)
        positions.add(position)
    return [Recipient(out.script_pubkey, out.value, n in positions)
            for n, out in enumerate(tx.vout)]


def _preset_inputs(wallet: Wallet, tx: Transaction) -> List[Output]:
    """The transaction's own inputs as wallet outputs (Core requires them in the wallet)."""
    preset = []
    for txin in tx.vin:
        wtx = wallet.txs.get(txin.prevout.txid)
        if wtx is None or txin.prevout.n >= len(wtx.tx.vout):
            raise SpendError(RPC_WALLET_ERROR, "Insufficient funds")
        mine = wallet.is_mine(wtx.tx.vout[txin.prevout.n].script_pubkey)
        preset.append(Output(wtx, txin.prevout.n, wallet.depth(wtx), bool(mine & ISMINE_SPENDABLE),
                             bool(mine & ISMINE_SPENDABLE), wallet.is_trusted(wtx)))
    return preset


def _fund_on_worker(chainstate: ChainState, wallet: Wallet, tx: Transaction,
                    recipients: List[Recipient], fees: FeePolicy, change_script: Optional[bytes],
                    watching: bool, lock: bool) -> Created:
    with wallet.lock:
        preset = _preset_inputs(wallet, tx)
        coins = [c._replace(spendable=True) if watching and c.solvable else c
                 for c in wallet.available_coins(include_watch_only=watching)]
        created = create_transaction(wallet, recipients, fees, coins, change_script, preset,
                                     sign=False)
        if lock:
            wallet.locked_coins.update((txin.prevout.txid, txin.prevout.n)
                                       for txin in created.tx.vin[len(tx.vin):])
        return created


@rpc_method(
    "fundrawtransaction", category="rawtransactions", needs_wallet=True,
    signature='fundrawtransaction "hexstring" ( options iswitness )',
    args=[Arg("hexstring", STR, typecheck=True,
              help="The hex string of the raw transaction"),
          Arg("options", ANY, default=None,
              help="for backward compatibility: passing in a true instead of an object will "
                   'result in {"includeWatching":true}\n   {\n'
                   '     "changeAddress"          (string, optional, default pool address) The '
                   "coin address to receive the change\n"
                   '     "changePosition"         (numeric, optional, default last) The index of '
                   "the change output\n"
                   '     "includeWatching"        (boolean, optional, default false) Also select '
                   "inputs which are watch only\n"
                   '     "lockUnspents"           (boolean, optional, default false) Lock selected '
                   "unspent outputs\n"
                   '     "feeRate"                (numeric, optional, default not set: makes wallet '
                   "determine the fee) Set a specific fee rate in COIN/kB\n"
                   '     "subtractFeeFromOutputs" (array, optional) A json array of integers.\n'
                   "                              The fee will be equally deducted from the amount "
                   "of each specified output.\n"
                   "                              The outputs are specified by their zero-based "
                   "index, before any change output is added.\n"
                   "                                  [vout_index,...]\n"
                   '     "conf_target"            (numeric, optional) Confirmation target (in '
                   "blocks)\n"
                   '     "estimate_mode"          (string, optional, default=UNSET) The fee '
                   "estimate mode\n   }"),
          Arg("iswitness", BOOL, default=None, typecheck=True,
              help="Accepted for compatibility; this chain has no witness serialization")],
    help=("Add inputs to a transaction until it has enough in value to meet its out value.\n"
          "This will not modify existing inputs, and will add at most one change output to the "
          "outputs.\nNo existing outputs will be modified unless \"subtractFeeFromOutputs\" is "
          "specified.\nNote that inputs which were signed may need to be resigned after "
          "completion since in/outputs have been added.\nThe inputs added will not be signed, "
          "use signrawtransactionwithwallet for that.\n"
          "Note that all existing inputs must have their previous output transaction be in the "
          "wallet."),
    result=("{\n"
            '  "hex":       "value", (string)  The resulting raw transaction (hex-encoded string)\n'
            '  "fee":       n,         (numeric) Fee in COIN the resulting transaction pays\n'
            '  "changepos": n          (numeric) The position of the added change output, or -1\n'
            "}"),
    examples=("\nCreate a transaction with no inputs\n"
              + example_cli("createrawtransaction", '"[]" "{\\"myaddress\\":0.01}"')
              + "\nAdd sufficient unsigned inputs to meet the output value\n"
              + example_cli("fundrawtransaction", '"rawtransactionhex"')
              + "\nSign the transaction\n"
              + example_cli("signrawtransactionwithwallet", '"fundedtransactionhex"')
              + "\nSend the transaction\n"
              + example_cli("sendrawtransaction", '"signedtransactionhex"')))
async def fundrawtransaction(ctx: RPCContext, hexstring: str, options: Any,
                             iswitness: Optional[bool]) -> Dict[str, Any]:
    tx = decode_transaction(hexstring)
    opts = _read_fund_options(ctx, options)
    if not tx.vout:
        raise RPCError(RPC_INVALID_PARAMETER, "TX must have at least one output")
    if opts.change_position != -1 and not 0 <= opts.change_position <= len(tx.vout):
        raise RPCError(RPC_INVALID_PARAMETER, "changePosition out of bounds")
    recipients = _fund_outputs(tx, opts.subtract)
    fees = _fee_policy(ctx, opts.conf_target, opts.estimate_mode, opts.replaceable, opts.fee_rate)
    try:
        created = await ctx.node.chain.call(_fund_on_worker, ctx.wallet, tx, recipients, fees,
                                            opts.change_script, opts.watching, opts.lock)
    except SpendError as e:
        raise RPCError(RPC_WALLET_ERROR, e.message) from None
    outputs = list(created.tx.vout)
    change_pos = created.change_pos
    if change_pos >= 0:
        change = outputs.pop(change_pos)
        change_pos = len(outputs) if opts.change_position == -1 else opts.change_position
        outputs.insert(change_pos, change)
    # The given inputs as they were (signed or not), then the added ones, unsigned.
    funded = Transaction(list(tx.vin) + list(created.tx.vin[len(tx.vin):]), outputs,
                         tx.locktime, tx.version, tx.tx_type, tx.extra_payload)
    return {"hex": funded.serialize().hex(), "fee": amount_to_json(created.fee),
            "changepos": change_pos}


@rpc_method(
    "signrawtransactionwithwallet", category="wallet", needs_wallet=True,
    signature='signrawtransactionwithwallet "hexstring" ( %s sighashtype )' % PREVTXS_SIGNATURE,
    args=[Arg("hexstring", STR, typecheck=True, help="The transaction hex string"),
          Arg("prevtxs", ARR, default=None, typecheck=True, help=PREVTXS_HELP),
          Arg("sighashtype", STR, default="ALL", typecheck=True, help=SIGHASH_HELP)],
    help=("Sign inputs for raw transaction (serialized, hex-encoded).\n"
          "The second optional argument (may be null) is an array of previous transaction outputs "
          "that\nthis transaction depends on but may not yet be in the block chain."),
    result=SIGN_RESULT,
    examples=example_cli("signrawtransactionwithwallet", '"myhex"')
    + example_rpc("signrawtransactionwithwallet", '"myhex"'))
async def signrawtransactionwithwallet(ctx: RPCContext, hexstring: str,
                                       prevtxs: Optional[List[Any]],
                                       sighashtype: Optional[str]) -> Dict[str, Any]:
    tx = decode_transaction(hexstring)
    wallet = ctx.wallet
    _require_unlocked(wallet)

    def known(key: Tuple[bytes, int]) -> Optional[Tuple[bytes, int]]:
        """An output of a wallet transaction the wallet does not see spent (on the worker)."""
        with wallet.lock:
            wtx = wallet.txs.get(key[0])
            if wtx is None or key[1] >= len(wtx.tx.vout) or wallet.is_spent(key):
                return None
            out = wtx.tx.vout[key[1]]
            return out.script_pubkey, out.value

    return await sign_transaction_json(ctx, tx, wallet.keys, prevtxs, sighashtype, False, known)


#: What the ``wallet_tx`` entry point registers.
METHODS = [getbalance, getunconfirmedbalance, getreceivedbyaddress, listreceivedbyaddress,
           listtransactions, listsinceblock, gettransaction, abandontransaction, listunspent,
           lockunspent, listlockunspent, settxfee, sendtoaddress, sendmany, fundrawtransaction,
           signrawtransactionwithwallet]
