"""Wallet RPC methods, split by concern as Core's ``src/wallet/rpc/`` is.

``management`` (loading, creating, listing wallets; getwalletinfo; generate),
``addresses`` (new addresses, labels, the key pool, signmessage), ``backup``
(backupwallet, imports and dumps), ``coins`` (balances, received amounts,
unspent outputs and their locks), ``encryption`` (encryptwallet and the
passphrase calls), ``spending`` (sending, settxfee, fundrawtransaction,
signrawtransactionwithwallet) and ``transactions`` (listings, gettransaction,
abandontransaction, rescans).  Each module is one ``coin.rpc`` entry point.

Handlers only parse their arguments, call one operation of the wallet domain
(:class:`coin.wallet.service.WalletService` and the functions of
:mod:`coin.wallet`) and format its result with :mod:`coin.views.wallet`; no
module here keeps state.  Wallet work runs through
:func:`coin.wallet.access.in_wallet`, under the wallet's lock and never making
the reactor wait for it.  Domain errors carry their RPC code
(:mod:`coin.wallet.errors`).

These are the helpers the modules share.
"""

from __future__ import annotations

from coin.primitives.address import Destination, try_decode_address
from coin.consensus.tx_check import is_final_tx
from coin.rpc.context import RPCContext
from coin.rpc.errors import (
    RPC_INVALID_ADDRESS_OR_KEY, RPC_METHOD_NOT_FOUND, RPC_WALLET_INVALID_LABEL_NAME, RPCError,
)
from coin.rpc.registry import STR, Arg
from coin.wallet.keystore import ISMINE_SPENDABLE, ISMINE_WATCH_ONLY
from coin.wallet.service import WalletService
from coin.wallet.wallet import Wallet, WalletTx

#: An address in a JSON array (listunspent's addresses, sendmany's subtractfeefrom).
ADDRESS_ARG = Arg("address", STR)


def wallet_service(ctx: RPCContext) -> WalletService:
    """The node's wallets; with -disablewallet, wallet methods do not exist (-32601)."""
    service = ctx.node.wallet_service
    if service is None:
        raise RPCError(RPC_METHOD_NOT_FOUND, "Method not found")  # -disablewallet
    return service


def ismine_filter(include_watchonly: bool) -> int:
    """Core's isminefilter for an ``include_watchonly`` argument."""
    return ISMINE_SPENDABLE | ISMINE_WATCH_ONLY if include_watchonly else ISMINE_SPENDABLE


def decode_destination(ctx: RPCContext, text: str, message: str) -> Destination:
    """An address argument; -5 ``message`` when it is not one of this network's."""
    destination = try_decode_address(text, ctx.node.chain.params)
    if destination is None:
        raise RPCError(RPC_INVALID_ADDRESS_OR_KEY, message)
    return destination


def label_from_value(value: str) -> str:
    """Core's LabelFromValue: "*" is no label name (-11)."""
    if value == "*":
        raise RPCError(RPC_WALLET_INVALID_LABEL_NAME, "Invalid label name")
    return value


def is_final(wallet: Wallet, wtx: WalletTx) -> bool:
    """Whether ``wtx`` could be mined in the next block (Core's CheckFinalTx)."""
    tip = wallet.chain.tip
    return is_final_tx(wtx.tx, tip.height + 1, tip.median_time_past())
