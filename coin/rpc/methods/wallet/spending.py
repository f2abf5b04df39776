"""Spending methods: settxfee, sendtoaddress, sendmany, fundrawtransaction (Core's
"== Rawtransactions ==") and signrawtransactionwithwallet.

Registered through the ``coin.rpc`` entry point ``wallet_spending``.  A send is one
call of :meth:`coin.wallet.service.WalletService.send`, which builds, signs,
records and submits on the validation worker; a transaction the pool refuses is
abandoned at once, giving its coins back.

Wallet comments (sendtoaddress's comment/comment_to, sendmany's comment) are
accepted but not kept.
"""

from __future__ import annotations

import random
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

from coin.consensus.errors import ValidationError
from coin.consensus.tx_check import format_money
from coin.mempool.policy import FeeRate
from coin.mempool.service import MempoolService
from coin.primitives.transaction import Transaction
from coin.rpc.context import RPCContext
from coin.rpc.errors import (
    RPC_INVALID_ADDRESS_OR_KEY, RPC_INVALID_PARAMETER, RPC_TYPE_ERROR, RPC_WALLET_ERROR,
    RPC_WALLET_INSUFFICIENT_FUNDS, RPCError,
)
from coin.rpc.methods.mempool import _conf_target, _format_state
from coin.rpc.methods.rawtransactions import (
    PREVTXS_HELP, PREVTXS_SIGNATURE, SIGHASH_HELP, SIGN_RESULT, check_object, decode_transaction,
    sign_transaction_json,
)
from coin.rpc.methods.wallet import ADDRESS_ARG, decode_destination, wallet_service
from coin.rpc.registry import (
    AMOUNT, ANY, ARR, BOOL, INT, OBJ, STR, Arg, amount_from_value, example_cli, example_rpc,
    json_type_name, rpc_method,
)
from coin.script.standard import destination_script
from coin.views.amounts import amount_to_json
from coin.wallet.access import in_wallet
from coin.wallet.addresses import ensure_unlocked
from coin.wallet.keystore import ISMINE_SPENDABLE
from coin.wallet.service import TransactionRejected
from coin.wallet.spend import FeePolicy, Recipient, SpendError

_ESTIMATE_MODES = ("UNSET", "ECONOMICAL", "CONSERVATIVE")


def _fee_policy(ctx: RPCContext, conf_target: Optional[int], estimate_mode: str,
                replaceable: Optional[bool], fixed: Optional[FeeRate] = None) -> FeePolicy:
    """Core's GetMinimumFeeRate inputs for a coin control's target, mode and feeRate."""
    service: MempoolService = ctx.node.mempool
    settings = wallet_service(ctx).fee_settings  # -txconfirmtarget, -fallbackfee, -mintxfee
    target = settings.confirm_target if conf_target is None else _conf_target(ctx, conf_target)
    if estimate_mode not in _ESTIMATE_MODES:
        raise RPCError(RPC_INVALID_PARAMETER, "Invalid estimate_mode parameter")
    # The call's replaceable, else -walletrbf; estimates are conservative unless the
    # transaction signals replaceability (Core).
    signal_rbf = settings.wallet_rbf if replaceable is None else replaceable
    conservative = {"ECONOMICAL": False, "CONSERVATIVE": True}.get(estimate_mode,
                                                                    not signal_rbf)
    with service.pool.lock:
        rate, _ = service.estimator.estimate_smart_fee(target, conservative)
        floor = service.pool.get_min_fee()
    return FeePolicy(min_relay=service.policy.min_relay_fee, pool_floor=floor,
                     estimate=FeeRate(rate) if rate is not None else None,
                     max_fee=service.max_tx_fee, fixed=fixed, use_pay_tx_fee=conf_target is None,
                     fallback=FeeRate(settings.fallback_fee), min_tx=FeeRate(settings.min_tx_fee),
                     signal_rbf=signal_rbf)


def _reject_reason(error: Exception) -> str:
    """Why the pool refused a wallet transaction, as Core words it."""
    return _format_state(error) if isinstance(error, ValidationError) else "Missing inputs"


async def _send(ctx: RPCContext, recipients: List[Recipient], fees: FeePolicy,
                rejected: str, on_spend_error: Callable[[SpendError], RPCError]) -> str:
    try:
        created = await wallet_service(ctx).send(ctx.wallet, recipients, fees)
    except SpendError as e:
        raise on_spend_error(e) from None
    except TransactionRejected as e:
        raise RPCError(RPC_WALLET_ERROR, rejected + _reject_reason(e.error)) from None
    return created.tx.txid_hex


@rpc_method(
    "settxfee", category="wallet", needs_wallet=True,
    args=[Arg("amount", AMOUNT, help="The transaction fee in COIN/kB")],
    help=("Set the transaction fee per kB. Overwrites the paytxfee parameter."),
    result="true|false        (boolean) Returns true if successful",
    examples=example_cli("settxfee", "0.00001") + example_rpc("settxfee", "0.00001"))
def settxfee(ctx: RPCContext, amount: int) -> bool:
    ctx.wallet.pay_tx_fee = amount
    return True


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
    destination = decode_destination(ctx, address, "Invalid address")
    if amount <= 0:
        raise RPCError(RPC_TYPE_ERROR, "Invalid amount for send")
    fees = _fee_policy(ctx, conf_target, estimate_mode, replaceable)
    wallet = ctx.wallet
    ensure_unlocked(wallet)
    balance = await in_wallet(wallet, wallet.balance, slow=True)
    if amount > balance:
        raise RPCError(RPC_WALLET_INSUFFICIENT_FUNDS, "Insufficient funds")

    def failed(error: SpendError) -> RPCError:
        if not subtractfeefromamount and amount + error.fee_required > balance:
            return RPCError(RPC_WALLET_ERROR, "Error: This transaction requires a transaction fee "
                            "of at least %s" % format_money(error.fee_required))
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
    subtract = [ADDRESS_ARG.convert(item) for item in subtractfeefrom or ()]
    fees = _fee_policy(ctx, conf_target, estimate_mode, replaceable)
    seen: set = set()
    recipients = []
    for text, value in amounts.items():
        destination = decode_destination(ctx, text, "Invalid Coin address: " + text)
        if destination in seen:
            raise RPCError(RPC_INVALID_PARAMETER, "Invalid parameter, duplicated address: " + text)
        seen.add(destination)
        amount = amount_from_value(value)
        if amount <= 0:
            raise RPCError(RPC_TYPE_ERROR, "Invalid amount for send")
        recipients.append(Recipient(destination_script(destination), amount, text in subtract))
    wallet = ctx.wallet
    ensure_unlocked(wallet)
    if sum(r.amount for r in recipients) > await in_wallet(wallet, wallet.legacy_balance,
                                                           ISMINE_SPENDABLE, minconf):
        raise RPCError(RPC_WALLET_INSUFFICIENT_FUNDS, "Wallet has insufficient funds")
    random.shuffle(recipients)
    return await _send(ctx, recipients, fees, "Transaction commit failed:: ",
                       lambda e: RPCError(RPC_WALLET_INSUFFICIENT_FUNDS, e.message))


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
        change_script = destination_script(decode_destination(
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
                   '     "changePosition"         (numeric, optional, default random) The index of '
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
    funded, fee, change_pos = await fund_transaction(ctx, decode_transaction(hexstring), options)
    return {"hex": funded.serialize().hex(), "fee": amount_to_json(fee), "changepos": change_pos}


async def fund_transaction(ctx: RPCContext, tx: Transaction,
                           options: Any) -> Tuple[Transaction, int, int]:
    """Core's FundTransaction: ``(funded tx, fee, change position)``; walletcreatefundedpsbt too."""
    opts = _read_fund_options(ctx, options)
    if not tx.vout:
        raise RPCError(RPC_INVALID_PARAMETER, "TX must have at least one output")
    if opts.change_position != -1 and not 0 <= opts.change_position <= len(tx.vout):
        raise RPCError(RPC_INVALID_PARAMETER, "changePosition out of bounds")
    recipients = _fund_outputs(tx, opts.subtract)
    fees = _fee_policy(ctx, opts.conf_target, opts.estimate_mode, opts.replaceable, opts.fee_rate)
    try:
        created = await wallet_service(ctx).fund(ctx.wallet, tx, recipients, fees,
                                                 opts.change_script, opts.watching, opts.lock)
    except SpendError as e:
        raise RPCError(RPC_WALLET_ERROR, e.message) from None
    outputs = list(created.tx.vout)
    change_pos = created.change_pos
    if change_pos >= 0 and opts.change_position != -1:
        # Where the caller asked; without changePosition the wallet's random position (Core).
        outputs.insert(opts.change_position, outputs.pop(change_pos))
        change_pos = opts.change_position
    # The given inputs as they were (signed or not), then the added ones, unsigned.
    funded = Transaction(list(tx.vin) + list(created.tx.vin[len(tx.vin):]), outputs,
                         tx.locktime, tx.version, tx.tx_type, tx.extra_payload)
    return funded, created.fee, change_pos


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
    ensure_unlocked(wallet)

    def known(key: Tuple[bytes, int]) -> Optional[Tuple[bytes, int]]:
        """An output of a wallet transaction the wallet does not see spent (on the worker)."""
        with wallet.lock:
            wtx = wallet.txs.get(key[0])
            if wtx is None or key[1] >= len(wtx.tx.vout) or wallet.is_spent(key):
                return None
            out = wtx.tx.vout[key[1]]
            return out.script_pubkey, out.value

    return await sign_transaction_json(ctx, tx, wallet.keys, prevtxs, sighashtype, False, known)


_BUMP_OPTIONS: Dict[str, Optional[str]] = {
    "confTarget": "number", "totalFee": "number", "replaceable": "bool", "estimate_mode": "string"}
_TOTAL_FEE = Arg("totalFee", INT)


@rpc_method(
    "bumpfee", category="wallet", needs_wallet=True,
    signature='bumpfee "txid" ( options ) ',
    args=[Arg("txid", STR, typecheck=True, help="The txid to be bumped"),
          Arg("options", OBJ, default=None, typecheck=True, help=(
              "\n   {\n"
              '     "confTarget"        (numeric, optional) Confirmation target (in blocks)\n'
              '     "totalFee"          (numeric, optional) Total fee (NOT feerate) to pay, in '
              "satoshis.\n                         In rare cases, the actual fee paid might be "
              "slightly higher than the specified\n                         totalFee if the tx "
              "change output has to be removed because it is too close to\n"
              "                         the dust threshold.\n"
              '     "replaceable"       (boolean, optional, default true) Whether the new '
              "transaction should still be\n                         marked bip-125 replaceable. "
              "If true, the sequence numbers in the transaction will\n"
              "                         be left unchanged from the original. If false, any input "
              "sequence numbers in the\n                         original transaction that were "
              "less than 0xfffffffe will be increased to 0xfffffffe\n"
              "                         so the new transaction will not be explicitly bip-125 "
              "replaceable (though it may\n                         still be replaceable in "
              "practice, for example if it has unconfirmed ancestors which\n"
              "                         are replaceable).\n"
              '     "estimate_mode"     (string, optional, default=UNSET) The fee estimate mode, '
              'must be one of:\n         "UNSET"\n         "ECONOMICAL"\n'
              '         "CONSERVATIVE"\n   }'))],
    help=("Bumps the fee of an opt-in-RBF transaction T, replacing it with a new transaction B.\n"
          "An opt-in RBF transaction with the given txid must be in the wallet.\n"
          "The command will pay the additional fee by decreasing (or perhaps removing) its "
          "change output.\nIf the change output is not big enough to cover the increased fee, "
          "the command will currently fail\ninstead of adding new inputs to compensate. (A "
          "future implementation could improve this.)\nThe command will fail if the wallet or "
          "mempool contains a transaction that spends one of T's outputs.\nBy default, the new "
          "fee will be calculated automatically using estimatesmartfee.\nThe user can specify a "
          "confirmation target for estimatesmartfee.\nAlternatively, the user can specify "
          "totalFee, or use RPC settxfee to set a higher fee rate.\nAt a minimum, the new fee "
          "rate must be high enough to pay an additional new relay fee (incrementalfee\n"
          "returned by getnetworkinfo) to enter the node's mempool."),
    result=("{\n"
            '  "txid":    "value",   (string)  The id of the new transaction\n'
            '  "origfee":  n,         (numeric) Fee of the replaced transaction\n'
            '  "fee":      n,         (numeric) Fee of the new transaction\n'
            '  "errors":  [ str... ] (json array of strings) Errors encountered during '
            "processing (may be empty)\n}"),
    examples="\nBump the fee, get the new transaction's txid\n" + example_cli("bumpfee",
                                                                              "<txid>"))
async def bumpfee(ctx: RPCContext, txid: str, options: Optional[Dict[str, Any]]
                  ) -> Dict[str, Any]:
    """Core 0.17's bumpfee: options checked in its order, then the wallet unlocked (-13)."""
    given: Dict[str, Any] = {}
    if options is not None:
        check_object(options, _BUMP_OPTIONS, allow_null=True, strict=True)
        given = {key: value for key, value in options.items() if value is not None}
    conf_target, total_fee = None, 0
    if "confTarget" in given and "totalFee" in given:
        raise RPCError(RPC_INVALID_PARAMETER, "confTarget and totalFee options should not both be "
                       "set. Please provide either a confirmation target for fee estimation or "
                       "an explicit total fee for the transaction.")
    if "confTarget" in given:
        conf_target = _CONF_TARGET.convert(given["confTarget"])
    elif "totalFee" in given:
        total_fee = _TOTAL_FEE.convert(given["totalFee"])
        if total_fee <= 0:
            raise RPCError(RPC_INVALID_PARAMETER, "Invalid totalFee %s (must be greater than 0)"
                           % format_money(total_fee))
    fees = _fee_policy(ctx, conf_target, given.get("estimate_mode", "UNSET"),
                       given.get("replaceable", True))
    ensure_unlocked(ctx.wallet)
    try:
        raw = bytes.fromhex(txid)[::-1]
    except ValueError:
        raw = b""  # Core's SetHex accepts anything: no such wallet transaction
    try:
        bumped, refusal = await wallet_service(ctx).bump(ctx.wallet, raw, fees, total_fee)
    except SpendError as e:
        raise RPCError(e.rpc_code, e.message) from None
    errors = [] if refusal is None else [
        "Error: The transaction was rejected: " + _reject_reason(refusal)]
    return {"txid": bumped.tx.txid_hex, "origfee": amount_to_json(bumped.old_fee),
            "fee": amount_to_json(bumped.new_fee), "errors": errors}


#: What the ``wallet_spending`` entry point registers.
METHODS = [settxfee, sendtoaddress, sendmany, fundrawtransaction, signrawtransactionwithwallet,
           bumpfee]
