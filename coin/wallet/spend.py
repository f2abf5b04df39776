"""Spending from a wallet: coin selection, fees, change, signing (Core's CreateTransaction).

Coin selection prefers well-confirmed coins: first coins from others with 6
confirmations and own change with 1, then anything with 1, then own
unconfirmed change (Core's -spendzeroconfchange).  Within a tier it takes an
exact single match, else the better (less overshoot, then fewer inputs) of
the smallest single coin covering target plus a minimum change and the
largest-first run of smaller coins.  Change below the dust threshold goes to
the fee instead of making a dust output.  As Core's CreateTransaction, the change
output goes at a random position among the outputs and the selected coins are
spent in a random order, so that neither gives away which output is the change.

The fee rate is settxfee's, else the estimator's for ``conf_target`` blocks,
else the fallback fee; never below the minimum relay fee or the pool's floor,
never above ``-maxtxfee`` in total (fundrawtransaction's ``feeRate`` is used as
given).  The fee is computed on the signed size and the transaction rebuilt
until the fee it carries suffices; a fee found too high after a rebuild goes
back to the change, as Core does.  Unsigned transactions (fundrawtransaction)
are measured with placeholder signatures of Core's dummy size (72 bytes).
"""

from __future__ import annotations

import bisect
import heapq
import random
from typing import Callable, Iterable, Iterator, List, NamedTuple, Optional, Sequence, Set, Tuple

from sortedcontainers import SortedList

from coin.consensus.tx_check import format_money
from coin.mempool.policy import FeeRate, dust_threshold, spend_cost
from coin.mempool.pool import Mempool
from coin.mempool.rbf import MAX_BIP125_RBF_SEQUENCE, signals_rbf
from coin.primitives.script import push_minimal
from coin.primitives.transaction import CURRENT_TX_VERSION, OutPoint, Transaction, TxIn, TxOut
from coin.script.sign import sign_transaction
from coin.script.standard import TX_MULTISIG, TX_PUBKEY, TX_PUBKEYHASH, TX_SCRIPTHASH, solve
from coin.wallet.errors import (
    RPC_INVALID_ADDRESS_OR_KEY, RPC_INVALID_PARAMETER, RPC_WALLET_ERROR,
    RPC_WALLET_INSUFFICIENT_FUNDS,
)
from coin.wallet.keystore import ISMINE_SPENDABLE
from coin.wallet.wallet import Outpoint, Output, Wallet, WalletTx

#: Core's MIN_CHANGE (CENT): change smaller than this is avoided when possible.
MIN_CHANGE = 1_000_000
#: Core's DEFAULT_FALLBACK_FEE (base units per kB) when there is no estimate.
DEFAULT_FALLBACK_FEE = 20_000
#: Core's DEFAULT_TX_CONFIRM_TARGET.
DEFAULT_CONFIRM_TARGET = 6
#: Core's DEFAULT_TRANSACTION_MINFEE (base units per kB): -mintxfee.
DEFAULT_TRANSACTION_MINFEE = 1_000
#: Sequence of wallet inputs that do not signal replaceability: Core's SEQUENCE_FINAL - 1, so
#: the anti-fee-sniping lock time is enforced.
WALLET_SEQUENCE = 0xFFFFFFFE
#: Core's anti-fee-sniping: one transaction in ANTI_SNIPING_ODDS gets a lock time up to
#: ANTI_SNIPING_MAX_AGE - 1 blocks back (for the privacy of transactions sent late).
ANTI_SNIPING_ODDS = 10
ANTI_SNIPING_MAX_AGE = 100
#: The random source of the lock time, the change position and the input order when the
#: caller gives none (a seeded walk of wallet operations replaces it to stay reproducible).
DEFAULT_RNG: random.Random = random.SystemRandom()
#: A placeholder signature for sizing unsigned inputs (Core's DummySignatureCreator: 72 bytes).
DUMMY_SIGNATURE = bytes(72)


class SpendError(Exception):
    """The transaction cannot be made; ``code`` is the RPC error (-4, -6, ...)."""

    def __init__(self, code: int, message: str, fee_required: int = 0) -> None:
        super().__init__(message)
        self.rpc_code = code
        self.message = message
        #: The fee the last attempt needed (Core's nFeeRequired, for sendtoaddress's message).
        self.fee_required = fee_required


class Recipient(NamedTuple):
    script_pubkey: bytes
    amount: int
    subtract_fee: bool = False


class Created(NamedTuple):
    tx: Transaction
    fee: int
    #: Index of the change output, -1 without change.
    change_pos: int


class WalletFeeSettings(NamedTuple):
    """Core's wallet fee options: -paytxfee (a new wallet's settxfee), -fallbackfee (no
    estimate), -mintxfee (the wallet's floor) and -txconfirmtarget (no target named);
    rates in base units per kB."""

    pay_tx_fee: int = 0
    fallback_fee: int = DEFAULT_FALLBACK_FEE
    min_tx_fee: int = DEFAULT_TRANSACTION_MINFEE
    confirm_target: int = DEFAULT_CONFIRM_TARGET
    #: -walletrbf: sends signal BIP125 replaceability unless the call says otherwise.
    wallet_rbf: bool = False


class FeePolicy(NamedTuple):
    """What limits the fee: relay floor, pool floor, an estimate, and -maxtxfee.

    ``fixed`` (fundrawtransaction's feeRate) is used as it is, without the
    floors; ``use_pay_tx_fee`` is false when the caller named a confirmation
    target, which takes precedence over settxfee (Core's GetMinimumFeeRate).
    """

    min_relay: FeeRate
    pool_floor: FeeRate
    estimate: Optional[FeeRate]
    max_fee: int
    fixed: Optional[FeeRate] = None
    use_pay_tx_fee: bool = True
    #: -fallbackfee and -mintxfee (Core's GetRequiredFeeRate takes the larger of it and
    #: the relay minimum).
    fallback: FeeRate = FeeRate(DEFAULT_FALLBACK_FEE)
    min_tx: FeeRate = FeeRate(DEFAULT_TRANSACTION_MINFEE)
    #: Inputs opt in to BIP125 replacement (Core's CCoinControl::signalRbf).
    signal_rbf: bool = False

    def rate(self, pay_tx_fee: int) -> FeeRate:
        if self.fixed is not None:
            return self.fixed
        rate = FeeRate(pay_tx_fee) if pay_tx_fee and self.use_pay_tx_fee else (
            self.estimate if self.estimate is not None else self.fallback)
        return max(rate, self.min_relay, self.pool_floor, self.min_tx)


class _Tier:
    """The spendable coins of one selection tier in (value, wallet order) order: a few
    coins checked in full (``small``) merged with the wallet index's value-sorted deep
    coins (``big``, less those in ``skip``), so a pick reads only what it takes."""

    def __init__(self, small: List[Tuple[tuple, Output]], big: Optional[SortedList] = None,
                 skip: Set[Outpoint] = frozenset(),
                 make: Optional[Callable[[tuple], Output]] = None) -> None:
        self.small = sorted(small, key=lambda item: item[0])
        self.keys = [key for key, _ in self.small]
        self.big = big if big is not None else SortedList()
        self.skip = skip
        self.make = make

    def _big(self, keys: Iterable[tuple]) -> Iterator[Tuple[tuple, Output]]:
        for key in keys:
            if (key[3], key[2]) not in self.skip:
                yield key, self.make(key)

    def first_at_least(self, value: int) -> Optional[Tuple[tuple, Output]]:
        found = [item for item in (next(self._big(self.big.irange(minimum=(value,))), None),)
                 if item is not None]
        index = bisect.bisect_left(self.keys, (value,))
        if index < len(self.small):
            found.append(self.small[index])
        return min(found, key=lambda item: item[0], default=None)

    def below(self, key: Optional[tuple]) -> Iterator[Tuple[tuple, Output]]:
        """Coins before ``key`` (all without one), largest first."""
        index = len(self.small) if key is None else bisect.bisect_left(self.keys, key)
        big = self.big.irange(maximum=key, inclusive=(True, False), reverse=True)
        return heapq.merge((self.small[i] for i in range(index - 1, -1, -1)), self._big(big),
                           key=lambda item: item[0], reverse=True)


def _pick(tier: _Tier, target: int) -> Optional[List[Output]]:
    """One tier's selection, or None when the tier cannot pay ``target``: an exact coin,
    else the better of the smallest coin covering target plus MIN_CHANGE and the run of
    the largest smaller coins reaching that goal (or target, when they cannot)."""
    exact = tier.first_at_least(target)
    if exact is not None and exact[0][0] == target:
        return [exact[1]]
    larger = tier.first_at_least(target + MIN_CHANGE)
    run: List[Tuple[int, Output]] = []
    running = 0
    for key, coin in tier.below(larger[0] if larger is not None else None):
        run.append((key[0], coin))
        running += key[0]
        if running >= target + MIN_CHANGE:
            break
    else:  # every smaller coin is in the run: ``running`` is their total
        if running == target:
            return [coin for _, coin in reversed(run)]
        if running < target:
            return [larger[1]] if larger is not None else None
        running, count = 0, 0
        while running < target:
            running += run[count][0]
            count += 1
        run = run[:count]
    if larger is not None and (larger[0][0], 1) <= (running, len(run)):
        return [larger[1]]
    return [coin for _, coin in run]


#: Core's selection tiers (SelectCoinsMinConf): others' coins from 6 confirmations and own
#: change from 1, then anything from 1, then own unconfirmed change.
_TIERS: Tuple[Callable[[Output], bool], ...] = (
    lambda c: c.depth >= (1 if c.wtx.from_me else 6),
    lambda c: c.depth >= 1,
    lambda c: c.depth >= 1 or (c.depth == 0 and c.wtx.from_me))


def _select(tiers: Callable[[Callable[[Output], bool]], _Tier], target: int,
            zero_conf_change: bool) -> Optional[List[Output]]:
    for accept in _TIERS if zero_conf_change else _TIERS[:2]:
        chosen = _pick(tiers(accept), target)
        if chosen is not None:
            return chosen
    return None


def _listed_tiers(coins: Sequence[Output]) -> Callable[[Callable[[Output], bool]], _Tier]:
    """Tiers over a list of coins, ties in list order."""
    def tier(accept: Callable[[Output], bool]) -> _Tier:
        return _Tier([((c.txout.value, i), c) for i, c in
                      enumerate(c for c in coins if accept(c)) if c.spendable])

    return tier


def select_coins(coins: Sequence[Output], target: int,
                 zero_conf_change: bool = True) -> Optional[List[Output]]:
    """Core's tiers of SelectCoinsMinConf (see the module docstring); the last one only
    with ``zero_conf_change`` (-spendzeroconfchange)."""
    return _select(_listed_tiers(coins), target, zero_conf_change)


def _indexed_tiers(wallet: Wallet, taken: Set[Outpoint]
                   ) -> Optional[Callable[[Callable[[Output], bool]], _Tier]]:
    """Tiers over the wallet's coin index (None when the index cannot answer): its sorted
    coins pass every tier; the doubtful ones are checked in full."""
    index = wallet.coins
    if not index.usable():
        return None
    big, shallow, doubtful = index.selection()
    tip = wallet.chain.tip.height
    txs = wallet.txs
    recent = [c for wtx in doubtful if wtx.txid in index.by_tx
              for c in wallet.coins_of(wtx, index.by_tx[wtx.txid])
              if c.spendable and c.outpoint not in taken]

    def make(key: tuple) -> Output:
        wtx = txs[key[3]]
        return Output(wtx, key[2], tip - wtx.block.height + 1, True, True, True)

    def tier(accept: Callable[[Output], bool]) -> _Tier:
        return _Tier([((c.txout.value, c.wtx.order_pos, c.n, c.wtx.txid), c)
                      for c in recent if accept(c)], big, shallow | taken, make)

    return tier


def anti_fee_sniping_locktime(height: int, rng: random.Random) -> int:
    """Core's lock time for a wallet transaction: the tip's height, so that only the next
    block can take it (a miner gains nothing by re-mining the tip to collect its fee), and
    one time in ten up to 99 blocks earlier, so that transactions sent late do not stand out."""
    if rng.randrange(ANTI_SNIPING_ODDS) == 0:
        return max(0, height - rng.randrange(ANTI_SNIPING_MAX_AGE))
    return height


def create_transaction(wallet: Wallet, recipients: Sequence[Recipient], fees: FeePolicy,
                       coins: Optional[Sequence[Output]] = None,
                       change_script: Optional[bytes] = None,
                       preset: Sequence[Output] = (), sign: bool = True,
                       rng: Optional[random.Random] = None) -> Created:
    """Select, build and sign a transaction paying ``recipients`` (raises SpendError).

    ``preset`` coins are always spent, first and in their order (fundrawtransaction's
    inputs keep their place, as Core's FundTransaction); more are selected only when they
    do not cover the target, and spent in an order shuffled by ``rng`` (Core shuffles the
    selected coins before signing).  The change output is inserted at a position drawn
    from ``rng`` among the recipients' outputs (``Created.change_pos``).  With
    ``sign=False`` the inputs are left unsigned and the fee is sized for Core's dummy
    signatures.  Inputs have sequence 0xfffffffd with ``fees.signal_rbf``, else
    0xfffffffe; the lock time is :func:`anti_fee_sniping_locktime`'s from ``rng``
    (fundrawtransaction keeps the given transaction's own, as Core does).
    """
    if not recipients:
        raise SpendError(RPC_WALLET_ERROR, "Transaction must have at least one recipient")
    if any(r.amount < 0 for r in recipients):
        raise SpendError(RPC_WALLET_ERROR, "Transaction amounts must not be negative")
    if rng is None:
        rng = DEFAULT_RNG
    rate = fees.rate(wallet.pay_tx_fee)
    sequence = MAX_BIP125_RBF_SEQUENCE if fees.signal_rbf else WALLET_SEQUENCE
    locktime = anti_fee_sniping_locktime(wallet.chain.tip.height, rng)
    preset = list(preset)
    taken = {c.outpoint for c in preset}
    tiers = _indexed_tiers(wallet, taken) if coins is None else None
    if tiers is None:
        available = [c for c in (coins if coins is not None else wallet.available_coins())
                     if c.outpoint not in taken]
        tiers = _listed_tiers(available)
    preset_value = sum(c.txout.value for c in preset)
    send_total = sum(r.amount for r in recipients)
    subtracting = sum(1 for r in recipients if r.subtract_fee)
    if change_script is None:
        change_script = wallet.new_change_script()
    fee = 0
    for _ in range(20):
        outputs = _outputs(recipients, fee if subtracting else 0, subtracting, fees.min_relay)
        target = send_total + (0 if subtracting else fee)
        chosen = list(preset)
        if target > preset_value:
            extra = _select(tiers, target - preset_value, wallet.spend_zero_conf_change)
            if extra is None:
                raise SpendError(RPC_WALLET_INSUFFICIENT_FUNDS, "Insufficient funds", fee)
            rng.shuffle(extra)
            chosen += extra
        value_in = sum(c.txout.value for c in chosen)
        change = value_in - target
        change_pos = -1
        change_out = TxOut(change, change_script)
        if change > 0 and change >= dust_threshold(change_out, fees.min_relay):
            change_pos = rng.randrange(len(outputs) + 1)
            outputs.insert(change_pos, change_out)
        elif subtracting and change > 0:
            # Dust change goes to the first subtracting recipient rather than the fee.
            first = next(i for i, r in enumerate(recipients) if r.subtract_fee)
            outputs[first] = TxOut(outputs[first].value + change, outputs[first].script_pubkey)
        # Sized with dummy signatures (at least as long as real ones); signed once at the end.
        tx, size = _build(wallet, chosen, outputs, False, locktime, sequence)
        needed = rate.get_fee(size)
        paid = value_in - tx.total_out()
        if fees.max_fee and needed > fees.max_fee:
            raise SpendError(RPC_WALLET_ERROR, "Fee exceeds maximum configured by -maxtxfee")
        if paid >= needed and (subtracting == 0 or fee >= needed):
            if sign:
                tx, size = _build(wallet, chosen, outputs, True, locktime, sequence)
            # The fee is the rate times the final size: what the last attempt left over goes
            # back to the change (or to the recipient paying the fee, after the change when
            # that went before it).
            adjust = next((i + (0 <= change_pos <= i) for i, r in enumerate(recipients)
                           if r.subtract_fee), change_pos)
            if adjust >= 0 and paid != rate.get_fee(size):
                tx, paid = _settle(wallet, chosen, outputs, adjust, rate, fees.min_relay, sign,
                                   tx, size, sequence)
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


def _settle(wallet: Wallet, chosen: Sequence[Output], outputs: List[TxOut], adjust: int,
            rate: FeeRate, dust_relay_fee: FeeRate, sign: bool, tx: Transaction,
            size: int, sequence: int) -> Tuple[Transaction, int]:
    """Move the difference between the fee paid and the fee the size needs into output
    ``adjust`` until they agree.  A new signature may be a byte longer or shorter, and
    two amounts can send each other back and forth; then the signatures are made again with
    extra nonce entropy (Core's CKey::Sign test case), leaving the lock time and sequences
    as they are.  Falls back to the last version paying enough."""
    value_in = sum(c.txout.value for c in chosen)
    best = tx
    entropy = 0
    tried = {(outputs[adjust].value, entropy)}
    for _ in range(32):
        diff = value_in - tx.total_out() - rate.get_fee(size)
        if diff >= 0:
            best = tx
        if diff == 0:
            break
        out = outputs[adjust]
        value = out.value + diff
        if value < dust_threshold(TxOut(value, out.script_pubkey), dust_relay_fee):
            break
        outputs[adjust] = TxOut(value, out.script_pubkey)
        while (value, entropy) in tried:
            entropy += 1
        tried.add((value, entropy))
        tx, size = _build(wallet, chosen, outputs, sign, tx.locktime, sequence, entropy)
    return best, value_in - best.total_out()


def _build(wallet: Wallet, chosen: Sequence[Output], outputs: List[TxOut], sign: bool,
           locktime: int, sequence: int, entropy: int = 0) -> Tuple[Transaction, int]:
    """The transaction (signed, or unsigned) and the size its fee is computed on; signatures
    with nonce ``entropy`` when not 0."""
    unsigned = Transaction([TxIn(OutPoint(c.wtx.txid, c.n), b"", sequence) for c in chosen],
                           list(outputs), locktime, CURRENT_TX_VERSION)
    scripts = [c.txout.script_pubkey for c in chosen]
    if not sign:
        dummies = [dummy_script_sig(wallet, script) for script in scripts]
        if any(d is None for d in dummies):
            raise SpendError(RPC_WALLET_ERROR, "Signing transaction failed")
        sized = Transaction([TxIn(i.prevout, d, i.sequence) for i, d in zip(unsigned.vin, dummies)],
                            list(outputs), locktime, CURRENT_TX_VERSION)
        return unsigned, sized.size
    signed, complete = sign_transaction(unsigned, scripts, wallet.keys, entropy=entropy)
    if not complete:
        raise SpendError(RPC_WALLET_ERROR, "Signing transaction failed")
    return signed, signed.size


def dummy_script_sig(wallet: Wallet, script_pubkey: bytes, allow_p2sh: bool = True) -> Optional[bytes]:
    """A scriptSig of the size a real one would have (Core's DummySignTx), or None when
    the wallet cannot solve the script (unknown public key or redeem script)."""
    kind, solutions = solve(script_pubkey)
    items: List[bytes]
    if kind == TX_PUBKEY:
        items = [DUMMY_SIGNATURE]
    elif kind == TX_PUBKEYHASH:
        pubkey = wallet.keys.by_hash.get(solutions[0])
        if pubkey is None:
            return None
        items = [DUMMY_SIGNATURE, pubkey]
    elif kind == TX_MULTISIG:
        items = [b""] + [DUMMY_SIGNATURE] * solutions[0][0]
    elif kind == TX_SCRIPTHASH and allow_p2sh:
        redeem = wallet.keys.get_script(solutions[0])
        inner = dummy_script_sig(wallet, redeem, False) if redeem is not None else None
        if inner is None:
            return None
        return inner + push_minimal(redeem)
    else:
        return None
    return b"".join(push_minimal(item) for item in items)


#: Core's WALLET_INCREMENTAL_RELAY_FEE: bumpfee raises the rate by at least this per kB.
WALLET_INCREMENTAL_RELAY_FEE = 5_000
#: Core's DEFAULT_DISCARD_FEE: change worth less than spending it at this rate is dropped.
DEFAULT_DISCARD_FEE = 10_000


class Bumped(NamedTuple):
    tx: Transaction
    old_fee: int
    new_fee: int


def bump_preconditions(wallet: Wallet, pool: Mempool, txid: bytes) -> WalletTx:
    """Core's feebumper PreconditionChecks (raises SpendError with bumpfee's code)."""
    wtx = wallet.txs.get(txid)
    if wtx is None:
        raise SpendError(RPC_INVALID_ADDRESS_OR_KEY, "Invalid or non-wallet transaction id")
    if any(wallet.spends.get((txid, n)) for n in range(len(wtx.tx.vout))):
        raise SpendError(RPC_INVALID_PARAMETER, "Transaction has descendants in the wallet")
    with pool.lock:
        entry = pool.get(txid)
        if entry is not None and entry.count_with_descendants > 1:
            raise SpendError(RPC_INVALID_PARAMETER, "Transaction has descendants in the mempool")
    if wallet.depth(wtx) != 0:
        raise SpendError(RPC_WALLET_ERROR, "Transaction has been mined, or is conflicted with "
                         "a mined transaction")
    if not signals_rbf(wtx.tx):
        raise SpendError(RPC_WALLET_ERROR, "Transaction is not BIP 125 replaceable")
    replaced_by = wallet.tx_values.get(txid, {}).get("replaced_by_txid")
    if replaced_by is not None:
        raise SpendError(RPC_WALLET_ERROR, "Cannot bump transaction %s which was already "
                         "bumped by transaction %s" % (wtx.tx.txid_hex, replaced_by[::-1].hex()))
    if not wallet.is_all_from_me(wtx.tx, ISMINE_SPENDABLE):
        raise SpendError(RPC_WALLET_ERROR,
                         "Transaction contains inputs that don't belong to this wallet")
    return wtx


def bump_fee(wallet: Wallet, pool: Mempool, txid: bytes, fees: FeePolicy, total_fee: int,
             incremental_relay_fee: FeeRate, discard_rate: FeeRate) -> Bumped:
    """Core 0.17's feebumper::CreateTransaction and SignTransaction: the same transaction
    with its change output lowered to pay a higher fee (``total_fee``, or the wallet's
    rate, at least the old rate plus the wallet's increment).  Raises SpendError."""
    wtx = bump_preconditions(wallet, pool, txid)
    tx = wtx.tx
    change = [n for n, out in enumerate(tx.vout) if wallet.is_change(out)]
    if len(change) > 1:
        raise SpendError(RPC_WALLET_ERROR, "Transaction has multiple change outputs")
    if not change:
        raise SpendError(RPC_WALLET_ERROR, "Transaction does not have a change output")
    spent = [wallet.txs[i.prevout.txid].tx.vout[i.prevout.n].script_pubkey for i in tx.vin]
    dummies = [dummy_script_sig(wallet, script) for script in spent]
    if any(d is None for d in dummies):
        raise SpendError(RPC_INVALID_ADDRESS_OR_KEY,
                         "Transaction contains inputs that cannot be signed")
    max_size = Transaction([TxIn(i.prevout, d, i.sequence) for i, d in zip(tx.vin, dummies)],
                           tx.vout, tx.locktime, tx.version).size
    old_fee = wallet.debit(tx, ISMINE_SPENDABLE) - tx.total_out()
    old_rate = FeeRate.from_fee(old_fee, tx.size)
    required = max(fees.min_tx, fees.min_relay).get_fee(max_size)
    if total_fee > 0:
        minimum = old_rate.get_fee(max_size) + incremental_relay_fee.get_fee(max_size)
        if total_fee < minimum:
            raise SpendError(RPC_INVALID_PARAMETER, "Insufficient totalFee, must be at least %s "
                             "(oldFee %s + incrementalFee %s)" % (
                                 format_money(minimum), format_money(old_rate.get_fee(max_size)),
                                 format_money(incremental_relay_fee.get_fee(max_size))))
        if total_fee < required:
            raise SpendError(RPC_INVALID_PARAMETER, "Insufficient totalFee (cannot be less "
                             "than required fee %s)" % format_money(required))
        new_fee = total_fee
    else:
        new_fee = max(fees.rate(wallet.pay_tx_fee).get_fee(max_size), required)
        if fees.max_fee:
            new_fee = min(new_fee, fees.max_fee)  # Core's GetMinimumFee caps at -maxtxfee
        increment = max(incremental_relay_fee.sat_per_kb, WALLET_INCREMENTAL_RELAY_FEE)
        floor = old_rate.sat_per_kb + 1 + increment
        if FeeRate.from_fee(new_fee, max_size).sat_per_kb < floor:
            new_fee = FeeRate(floor).get_fee(max_size)
    new_rate = FeeRate.from_fee(new_fee, max_size)
    if fees.max_fee and new_fee > fees.max_fee:
        raise SpendError(RPC_WALLET_ERROR, "Specified or calculated fee %s is too high (cannot "
                         "be higher than maxTxFee %s)" % (format_money(new_fee),
                                                           format_money(fees.max_fee)))
    pool_rate = fees.pool_floor
    if new_rate.sat_per_kb < pool_rate.sat_per_kb:
        raise SpendError(RPC_WALLET_ERROR, "New fee rate (%s) is lower than the minimum fee rate "
                         "(%s) to get into the mempool -- the totalFee value should be at least "
                         "%s or the settxfee value should be at least %s to add transaction" % (
                             format_money(new_rate.sat_per_kb), format_money(pool_rate.sat_per_kb),
                             format_money(pool_rate.get_fee(max_size)),
                             format_money(pool_rate.sat_per_kb)))
    outputs = list(tx.vout)
    n = change[0]
    delta = new_fee - old_fee
    if outputs[n].value < delta:
        raise SpendError(RPC_WALLET_ERROR, "Change output is too small to bump the fee")
    lowered = TxOut(outputs[n].value - delta, outputs[n].script_pubkey)
    if lowered.value <= spend_cost(lowered, discard_rate):
        new_fee += lowered.value  # dust change goes to the fee (Core)
        del outputs[n]
    else:
        outputs[n] = lowered
    # Not replaceable on request: every input at least 0xfffffffe (Core).
    unsigned = Transaction([TxIn(i.prevout, b"", i.sequence if fees.signal_rbf else
                                 max(i.sequence, MAX_BIP125_RBF_SEQUENCE + 1)) for i in tx.vin],
                           outputs, tx.locktime, tx.version)
    signed, complete = sign_transaction(unsigned, spent, wallet.keys)
    if not complete:
        raise SpendError(RPC_WALLET_ERROR, "Can't sign transaction.")
    return Bumped(signed, old_fee, new_fee)
