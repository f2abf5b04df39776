"""Transaction methods: listreceivedbyaddress, listreceivedbylabel, listtransactions, listsinceblock,
gettransaction, abandontransaction, rescanblockchain, abortrescan and
resendwallettransactions.

Registered through the ``coin.rpc`` entry point ``wallet_transactions``.  JSON
objects come from :mod:`coin.views.wallet`; rescans run in chunks on the
validation worker under the wallet service's reservation.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from coin.primitives.address import Destination, try_decode_address
from coin.primitives.hashes import hash_to_hex
from coin.mempool.pool import Mempool
from coin.rpc.context import RPCContext
from coin.rpc.errors import (
    RPC_INVALID_ADDRESS_OR_KEY, RPC_INVALID_PARAMETER, RPC_WALLET_ERROR, RPCError,
)
from coin.rpc.methods.wallet import is_final, ismine_filter, wallet_service
from coin.rpc.params import uint256_from_hex
from coin.rpc.registry import BOOL, INT, STR, Arg, ReadByHandler, example_cli, example_rpc, rpc_method
from coin.script.standard import destination_script
from coin.views.wallet import (
    gettransaction_json, received_by_label_json, received_json, transaction_entries,
)
from coin.wallet.access import in_wallet
from coin.wallet.keystore import ISMINE_WATCH_ONLY
from coin.wallet.labels import book_order
from coin.wallet.wallet import Wallet, WalletTx


def _pool(ctx: RPCContext) -> Mempool:
    return ctx.node.mempool.pool


def _txid_order(wallet: Wallet) -> List[WalletTx]:
    """Wallet transactions in Core's mapWallet order (txid, internal byte order)."""
    return sorted(wallet.txs.values(), key=lambda wtx: wtx.txid)


def _wallet_tx(wallet: Wallet, txid: bytes) -> WalletTx:
    wtx = wallet.txs.get(txid)
    if wtx is None:
        raise RPCError(RPC_INVALID_ADDRESS_OR_KEY, "Invalid or non-wallet transaction id")
    return wtx


def _received_args(what: str) -> List[Arg]:
    """The arguments listreceivedbyaddress and listreceivedbylabel share."""
    return [Arg("minconf", INT, default=1,
                help="The minimum number of confirmations before payments are included."),
            Arg("include_empty", BOOL, default=False,
                help="Whether to include %s that haven't received any payments." % what),
            Arg("include_watchonly", BOOL, default=False,
                help="Whether to include watch-only addresses (see 'importaddress').")]


@rpc_method(
    "listreceivedbyaddress", category="wallet", needs_wallet=True,
    signature="listreceivedbyaddress ( minconf include_empty include_watchonly address_filter )",
    args=_received_args("addresses") + [
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
    rows = await in_wallet(wallet, _list_received, wallet, minconf, include_empty,
                           ismine_filter(include_watchonly), only, slow=True)
    return [received_json(*row) for row in rows]


@rpc_method(
    "listreceivedbylabel", category="wallet", needs_wallet=True,
    signature="listreceivedbylabel ( minconf include_empty include_watchonly)",
    args=_received_args("labels"),
    help="List received transactions by label.",
    result=("[\n  {\n"
            '    "involvesWatchonly" : true,   (bool) Only returned if imported addresses were '
            "involved in transaction\n"
            '    "account" : "accountname",    (string) DEPRECATED. Backwards compatible alias for '
            "label.\n"
            '    "amount" : x.xxx,             (numeric) The total amount received by addresses '
            "with this label\n"
            '    "confirmations" : n,          (numeric) The number of confirmations of the most '
            "recent transaction included\n"
            '    "label" : "label"           (string) The label of the receiving address. The '
            'default label is "".\n'
            "  }\n  ,...\n]"),
    examples=(example_cli("listreceivedbylabel") + example_cli("listreceivedbylabel", "6 true")
              + example_rpc("listreceivedbylabel", "6, true, true")))
async def listreceivedbylabel(ctx: RPCContext, minconf: int, include_empty: bool,
                              include_watchonly: bool) -> List[Any]:
    wallet = ctx.wallet
    rows = await in_wallet(wallet, _list_received, wallet, minconf, include_empty,
                           ismine_filter(include_watchonly), None, slow=True)
    return _by_label(rows)


#: One address's tally: address, label, amount, lowest confirmations (None: no payment),
#: txids, whether watch-only outputs were involved.
Received = Tuple[str, str, int, Optional[int], List[bytes], bool]


def _list_received(wallet: Wallet, minconf: int, include_empty: bool, filter_: int,
                   only: Optional[Destination]) -> List[Received]:
    """Core's ListReceived by address: tally the wallet, answer in address-book order."""
    # address -> [amount, lowest confirmations, txids, watch-only]
    tally: Dict[str, list] = {}
    for wtx in _txid_order(wallet):
        if wtx.tx.is_coinbase() or not is_final(wallet, wtx):
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
    result: List[Received] = []
    for address, label, _purpose, destination in book_order(wallet):
        if only is not None and destination != only:
            continue
        item = tally.get(address)
        if item is None and not include_empty:
            continue
        if not wallet.is_mine(destination_script(destination)) & filter_:
            continue
        amount, confirmations, txids, watch_only = item or (0, None, [], False)
        result.append((address, label, amount, confirmations, txids, watch_only))
    return result


def _by_label(rows: List[Received]) -> List[Any]:
    """Core's ListReceived by label: the address tallies summed per label, labels sorted
    (the watch-only flag is the last address's, as Core's)."""
    labels: Dict[str, list] = {}
    for _address, label, amount, confirmations, _txids, watch_only in rows:
        item = labels.setdefault(label, [0, None, False])
        item[0] += amount
        if confirmations is not None:
            item[1] = confirmations if item[1] is None else min(item[1], confirmations)
        item[2] = watch_only
    return [received_by_label_json(label, *labels[label]) for label in sorted(labels)]


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


#: Read after the dummy is checked, as Core reads them.
_LIST_ARGS = (ReadByHandler("count", INT, default=10, help="The number of transactions to return"),
              ReadByHandler("skip", INT, default=0, help="The number of transactions to skip"),
              ReadByHandler("include_watchonly", BOOL, default=False,
                            help="Include transactions to watch-only addresses (see "
                                 "'importaddress')"))


@rpc_method(
    "listtransactions", category="wallet", needs_wallet=True,
    signature="listtransactions (dummy count skip include_watchonly)",
    args=[Arg("dummy", STR, default=None, aliases=("account",),
              help='If set, should be "*" for backwards compatibility.'),
          *_LIST_ARGS],
    help="Returns up to 'count' most recent transactions skipping the first 'from' transactions.",
    result="[\n  {\n" + _TX_ENTRY_FIELDS + "\n  }\n]",
    examples=("\nList the most recent 10 transactions in the systems\n"
              + example_cli("listtransactions") + "\nList transactions 100 to 120\n"
              + example_cli("listtransactions", '"*" 20 100') + "\nAs a json rpc call\n"
              + example_rpc("listtransactions", '"*", 20, 100')))
async def listtransactions(ctx: RPCContext, dummy: Optional[str], *raw: Any) -> List[Any]:
    if dummy is not None and dummy != "*":
        raise RPCError(RPC_INVALID_PARAMETER, 'Dummy value must be set to "*"')
    count, skip, include_watchonly = (arg.read(value) for arg, value in zip(_LIST_ARGS, raw))
    if count < 0:
        raise RPCError(RPC_INVALID_PARAMETER, "Negative count")
    if skip < 0:
        raise RPCError(RPC_INVALID_PARAMETER, "Negative from")
    wallet = ctx.wallet
    filter_ = ismine_filter(include_watchonly)
    state, pool = ctx.node.chain.state, _pool(ctx)

    def page() -> List[Any]:
        collected: List[Any] = []
        for wtx in wallet.newest_first():
            collected.extend(transaction_entries(wallet, wtx, 0, True, filter_, state, pool))
            if len(collected) >= count + skip:
                break
        # Newest transactions first, each one's entries in order; Core reverses the page.
        return list(reversed(collected[skip:skip + count]))

    return await in_wallet(wallet, page, slow=True)


#: Read once the block is looked up, as Core reads them.
_SINCE_ARGS = (
    ReadByHandler("target_confirmations", INT, default=1,
                  help="Return the nth block hash from the main chain. e.g. 1 would mean the best "
                       "block hash. Note: this is not used as a filter, but only affects "
                       "[lastblock] in the return value"),
    ReadByHandler("include_watchonly", BOOL, default=False,
                  help="Include transactions to watch-only addresses (see 'importaddress')"),
    ReadByHandler("include_removed", BOOL, default=True,
                  help='Show transactions that were removed due to a reorg in the "removed" '
                       "array\n                                                           (not "
                       "guaranteed to work on pruned nodes)"))


@rpc_method(
    "listsinceblock", category="wallet", needs_wallet=True,
    signature=('listsinceblock ( "blockhash" target_confirmations include_watchonly '
               "include_removed )"),
    args=[Arg("blockhash", STR, default=None,
              help="The block hash to list transactions since"),
          *_SINCE_ARGS],
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
async def listsinceblock(ctx: RPCContext, blockhash: Optional[str], *raw: Any) -> Dict[str, Any]:
    chain = ctx.node.chain
    state = chain.snapshot()
    since = None   # the block asked for, or its fork point with the active chain
    asked = None
    if blockhash:
        # Core 0.17 reads the hash with SetHex: a malformed one is an unknown block (-5).
        asked = state.lookup(uint256_from_hex(blockhash))
        if asked is None:
            raise RPCError(RPC_INVALID_ADDRESS_OR_KEY, "Block not found")
        since = asked if state.contains(asked) else state.find_fork(state.tip, asked)
    target_confirmations = _SINCE_ARGS[0].read(raw[0])
    if target_confirmations < 1:
        raise RPCError(RPC_INVALID_PARAMETER, "Invalid parameter")
    include_watchonly, include_removed = (arg.read(value)
                                          for arg, value in zip(_SINCE_ARGS[1:], raw[1:]))
    detached = []  # blocks of the branch the asked-for block is on, tip first
    walk = asked
    while include_removed and walk is not since:
        detached.append(walk)
        walk = walk.prev
    blocks = [await chain.read_block(entry) for entry in detached]
    wallet = ctx.wallet
    filter_ = ismine_filter(include_watchonly)
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
    txid_bytes = uint256_from_hex(txid)  # Core 0.17: SetHex, so a malformed id is unknown (-5)

    def describe() -> Dict[str, Any]:
        return gettransaction_json(wallet, _wallet_tx(wallet, txid_bytes),
                                   ismine_filter(include_watchonly), ctx.node.chain.state, _pool(ctx))

    return await in_wallet(wallet, describe)


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
    await wallet_service(ctx).abandon(wallet, uint256_from_hex(txid))
    return None


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
    start, stop = await wallet_service(ctx).rescan_blockchain(ctx.wallet, start_height,
                                                             stop_height)
    return {"start_height": start, "stop_height": stop}


@rpc_method(
    "abortrescan", category="wallet", needs_wallet=True,
    help="Stops current wallet rescan triggered by an RPC call, e.g. by an importprivkey call.",
    examples=("\nImport a private key\n" + example_cli("importprivkey", '"mykey"')
              + "\nAbort the running wallet rescan\n" + example_cli("abortrescan")
              + "\nAs a JSON-RPC call\n" + example_rpc("abortrescan")))
def abortrescan(ctx: RPCContext) -> bool:
    return wallet_service(ctx).rescanner.abort(ctx.wallet)


@rpc_method(
    "resendwallettransactions", category="wallet", needs_wallet=True,
    help=("Immediately re-broadcast unconfirmed wallet transactions to all peers.\n"
          "Intended only for testing; the wallet code periodically re-broadcasts\n"
          "automatically.\n"
          "Returns an RPC error if -walletbroadcast is set to false.\n"
          "Returns array of transaction ids that were re-broadcast."))
async def resendwallettransactions(ctx: RPCContext) -> List[str]:
    service = wallet_service(ctx)
    if not service.broadcast:
        raise RPCError(RPC_WALLET_ERROR,
                       "Error: Wallet transaction broadcasting is disabled with -walletbroadcast")
    relayed = await service.resend(ctx.wallet)
    for tx in relayed:
        ctx.node.tx_relay.tx_added(tx)
    return [tx.txid_hex for tx in relayed]


#: What the ``wallet_transactions`` entry point registers.
METHODS = [listreceivedbyaddress, listreceivedbylabel, listtransactions, listsinceblock, gettransaction,
           abandontransaction, rescanblockchain, abortrescan, resendwallettransactions]
