"""Spending from a wallet: coin selection, fees, change, signing (Core's CreateTransaction).

Coin selection prefers well-confirmed coins: first coins from others with 6
confirmations and own change with 1, then anything with 1, then own
unconfirmed change (Core's -spendzeroconfchange).  Within a tier it takes an
exact single match, else the better (less overshoot, then fewer inputs) of
the smallest single coin covering target plus a minimum change and the
largest-first run of smaller coins.  Change below the dust threshold goes to
the fee instead of making a dust output.

The fee rate is settxfee's, else the estimator's for ``conf_target`` blocks,
else the fallback fee; never below the minimum relay fee or the pool's floor,
never above ``-maxtxfee`` in total.  The fee is computed on the signed size
and the transaction rebuilt until the fee it carries suffices.
"""

from __future__ import annotations

from typing import List, NamedTuple, Optional, Sequence

from coin.mempool.policy import FeeRate, dust_threshold
from coin.primitives.transaction import OutPoint, Transaction, TxIn, TxOut
from coin.script.sign import sign_transaction
from coin.wallet.wallet import Output, Wallet

#: Core's MIN_CHANGE (CENT): change smaller than this is avoided when possible.
MIN_CHANGE = 1_000_000
#: Core's DEFAULT_FALLBACK_FEE (base units per kB) when there is no estimate.
DEFAULT_FALLBACK_FEE = 20_000
#: Core's DEFAULT_TX_CONFIRM_TARGET.
DEFAULT_CONFIRM_TARGET = 6
#: Sequence of wallet inputs: final, no replaceability (this coin has no RBF).
WALLET_SEQUENCE = 0xFFFFFFFF


class SpendError(Exception):
    """The transaction cannot be made; ``code`` is the RPC error (-4, -6, ...)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.rpc_code = code
        self.message = message


RPC_WALLET_ERROR = -4
RPC_WALLET_INSUFFICIENT_FUNDS = -6


class Recipient(NamedTuple):
    script_pubkey: bytes
    amount: int
    subtract_fee: bool = False


class Created(NamedTuple):
    tx: Transaction
    fee: int
    #: Index of the change output, -1 without change.
    change_pos: int


class FeePolicy(NamedTuple):
    """What limits the fee: relay floor, pool floor, an estimate, and -maxtxfee."""

    min_relay: FeeRate
    pool_floor: FeeRate
    estimate: Optional[FeeRate]
    max_fee: int

    def rate(self, pay_tx_fee: int) -> FeeRate:
        rate = FeeRate(pay_tx_fee) if pay_tx_fee else (
            self.estimate if self.estimate is not None else FeeRate(DEFAULT_FALLBACK_FEE))
        return max(rate, self.min_relay, self.pool_floor)


def _pick(coins: Sequence[Output], target: int) -> Optional[List[Output]]:
    """One tier's selection, or None when the tier cannot pay ``target``."""
    usable = sorted((c for c in coins if c.spendable), key=lambda c: c.txout.value)
    for coin in usable:
        if coin.txout.value == target:
            return [coin]
    larger = next((c for c in usable if c.txout.value >= target + MIN_CHANGE), None)
    smaller = [c for c in usable if c.txout.value < target + MIN_CHANGE]
    total = sum(c.txout.value for c in smaller)
    if total == target:
        return smaller
    if total < target:
        return [larger] if larger is not None else None
    run: List[Output] = []
    running = 0
    goal = target + MIN_CHANGE if total >= target + MIN_CHANGE else target
    for coin in reversed(smaller):
        run.append(coin)
        running += coin.txout.value
        if running >= goal:
            break
    if larger is not None and (larger.txout.value, 1) <= (running, len(run)):
        return [larger]
    return run


def select_coins(coins: Sequence[Output], target: int) -> Optional[List[Output]]:
    """Core's tiers of SelectCoinsMinConf (see the module docstring)."""
    tiers = (lambda c: c.depth >= (1 if c.wtx.from_me else 6),
             lambda c: c.depth >= 1,
             lambda c: c.depth >= 1 or (c.depth == 0 and c.wtx.from_me))
    for accept in tiers:
        chosen = _pick([c for c in coins if accept(c)], target)
        if chosen is not None:
            return chosen
    return None


def create_transaction(wallet: Wallet, recipients: Sequence[Recipient], fees: FeePolicy,
                       coins: Optional[Sequence[Output]] = None,
                       change_script: Optional[bytes] = None) -> Created:
    """Select, build and sign a transaction paying ``recipients`` (raises SpendError)."""
    if not recipients:
        raise SpendError(RPC_WALLET_ERROR, "Transaction must have at least one recipient")
    if any(r.amount < 0 for r in recipients):
        raise SpendError(RPC_WALLET_ERROR, "Transaction amounts must not be negative")
    rate = fees.rate(wallet.pay_tx_fee)
    available = list(coins) if coins is not None else wallet.available_coins()
    send_total = sum(r.amount for r in recipients)
    subtracting = sum(1 for r in recipients if r.subtract_fee)
    if change_script is None:
        change_script = wallet.new_change_script()
    fee = 0
    for _ in range(20):
        outputs = _outputs(recipients, fee if subtracting else 0, subtracting, fees.min_relay)
        target = send_total + (0 if subtracting else fee)
        chosen = select_coins(available, target)
        if chosen is None:
            raise SpendError(RPC_WALLET_INSUFFICIENT_FUNDS, "Insufficient funds")
        value_in = sum(c.txout.value for c in chosen)
        change = value_in - target
        change_pos = -1
        change_out = TxOut(change, change_script)
        if change > 0 and change >= dust_threshold(change_out, fees.min_relay):
            change_pos = len(outputs)
            outputs.append(change_out)
        elif subtracting and change > 0:
            # Dust change goes to the first subtracting recipient rather than the fee.
            first = next(i for i, r in enumerate(recipients) if r.subtract_fee)
            outputs[first] = TxOut(outputs[first].value + change, outputs[first].script_pubkey)
        tx = _sign(wallet, chosen, outputs)
        needed = rate.get_fee(tx.size)
        paid = value_in - tx.total_out()
        if fees.max_fee and needed > fees.max_fee:
            raise SpendError(RPC_WALLET_ERROR, "Fee exceeds maximum configured by -maxtxfee")
        if paid >= needed and (subtracting == 0 or fee >= needed):
            return Created(tx, paid, change_pos)
        fee = needed
    raise SpendError(RPC_WALLET_ERROR, "Transaction too large for fee policy")


def _outputs(recipients: Sequence[Recipient], fee: int, subtracting: int,
             dust_relay_fee: FeeRate) -> List[TxOut]:
    """Recipient outputs with ``fee`` taken from the subtracting ones (first pays the rest)."""
    outputs: List[TxOut] = []
    first = True
    for recipient in recipients:
        value = recipient.amount
        if recipient.subtract_fee:
            value -= fee // subtracting
            if first:
                value -= fee % subtracting
                first = False
        out = TxOut(value, recipient.script_pubkey)
        if value < 0 or value < dust_threshold(out, dust_relay_fee):
            if recipient.subtract_fee and fee:
                if value < 0:
                    raise SpendError(RPC_WALLET_ERROR,
                                     "The transaction amount is too small to pay the fee")
                raise SpendError(RPC_WALLET_ERROR, "The transaction amount is too small to send "
                                 "after the fee has been deducted")
            raise SpendError(RPC_WALLET_ERROR, "Transaction amount too small")
        outputs.append(out)
    return outputs


def _sign(wallet: Wallet, chosen: Sequence[Output], outputs: List[TxOut]) -> Transaction:
    unsigned = Transaction([TxIn(OutPoint(c.wtx.txid, c.n), b"", WALLET_SEQUENCE) for c in chosen],
                           outputs, 0, 1)
    signed, complete = sign_transaction(unsigned, [c.txout.script_pubkey for c in chosen],
                                        wallet.keys)
    if not complete:
        raise SpendError(RPC_WALLET_ERROR, "Signing transaction failed")
    return signed
