"""Relay policy as pure functions (Core's policy/policy.cpp and policy/feerate.cpp, Dash flavour).

Policy is what *this node* relays and mines, not what blocks may contain:
everything here may be stricter than consensus and may change between
releases.  Nothing touches the chain state; callers pass the spent coins.

Rejections raise :class:`~coin.consensus.errors.ValidationError` with code
``REJECT_NONSTANDARD`` and Core's reason strings, so the mempool can report
them the way Core does (``64: scriptpubkey`` and so on).

Two Core eras meet here on purpose: the standardness rules follow 0.17,
while dust and priority follow 0.12, because our mempool still reports
``startingpriority``/``currentpriority`` and the node has ``-minrelaytxfee``
but no ``-dustrelayfee``.  Hence the dust threshold is three times the fee
at the given (minimum relay) rate; at the defaults both eras give 546.
"""

from __future__ import annotations

from functools import total_ordering
from typing import Optional, Sequence, Tuple

from coin.chainparams import COIN
from coin.consensus.errors import REJECT_NONSTANDARD, ValidationError
from coin.primitives.coin import Coin
from coin.primitives.script import is_push_only, is_unspendable, legacy_sigop_count
from coin.primitives.transaction import TX_TYPE_NORMAL, Transaction, TxOut
from coin.script.interpreter import BaseSignatureChecker, ScriptError, eval_script
from coin.script.standard import (
    MAX_OP_RETURN_RELAY,
    TX_MULTISIG,
    TX_NONSTANDARD,
    TX_NULL_DATA,
    TX_SCRIPTHASH,
    is_standard,
    solve,
)

#: Larger transactions cost peers nearly as much to check as they pay (sighash is O(inputs * size)).
MAX_STANDARD_TX_SIZE = 100_000
#: A 15-of-15 compressed-key P2SH multisig spend needs 1627 bytes; rounded up for slack.
MAX_STANDARD_SCRIPTSIG_SIZE = 1650
#: Accurate sigops allowed in one P2SH redeem script.
MAX_P2SH_SIGOPS = 15
#: Sigops (legacy + P2SH) allowed in one relayed transaction.  Dash's value: the sigop limit
#: of a pre-DIP0001 1 MB block (20000) / 5.  Dash kept it when blocks grew to 2 MB, so it is
#: *not* ``MAX_BLOCK_SIGOPS // 5`` (which would be 8000 here).
MAX_STANDARD_TX_SIGOPS = 4000
MIN_STANDARD_VERSION = 1
#: Dash's TX_MAX_STANDARD_VERSION (version 3 carries DIP2 special transactions).
MAX_STANDARD_VERSION = 3

#: Size of the smallest input that spends a typical output (Core's dust arithmetic).
_SPEND_INPUT_SIZE = 148
#: Bytes of an input that are not scriptSig (outpoint 36 + sequence 4 + one length byte).
_INPUT_OVERHEAD = 41
#: Only this much of each scriptSig is charged when computing the priority size.
_PRIORITY_SCRIPTSIG_CAP = 110

CURRENCY_UNIT = "COIN"


def _div_trunc(a: int, b: int) -> int:
    """C++ integer division (toward zero); Python's ``//`` floors."""
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


@total_ordering
class FeeRate:
    """A fee rate in satoshis per 1000 bytes (Core's CFeeRate).

    An int, never a float, so fee decisions are exact and reproducible.
    """

    __slots__ = ("sat_per_kb",)

    def __init__(self, sat_per_kb: int = 0) -> None:
        self.sat_per_kb = int(sat_per_kb)

    @classmethod
    def from_fee(cls, fee: int, size: int) -> "FeeRate":
        """The rate of paying ``fee`` for ``size`` bytes (0 for an empty size), truncated."""
        if size <= 0:
            return cls(0)
        return cls(_div_trunc(fee * 1000, size))

    def get_fee(self, size: int) -> int:
        """Fee for ``size`` bytes, truncated toward zero.

        A non-zero size at a non-zero rate never costs 0 (it costs 1, or -1
        for a negative rate): otherwise a tiny transaction would be free at any
        positive minimum rate.
        """
        fee = _div_trunc(self.sat_per_kb * size, 1000)
        if fee == 0 and size != 0:
            if self.sat_per_kb > 0:
                return 1
            if self.sat_per_kb < 0:
                return -1
        return fee

    def get_fee_per_k(self) -> int:
        return self.get_fee(1000)

    def to_string(self) -> str:
        """``"0.00001000 COIN/kB"``, as Core's log and RPC help text show rates."""
        sign = "-" if self.sat_per_kb < 0 else ""
        whole, frac = divmod(abs(self.sat_per_kb), COIN)
        return "%s%d.%08d %s/kB" % (sign, whole, frac, CURRENCY_UNIT)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FeeRate):
            return NotImplemented
        return self.sat_per_kb == other.sat_per_kb

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, FeeRate):
            return NotImplemented
        return self.sat_per_kb < other.sat_per_kb

    def __hash__(self) -> int:
        return hash(self.sat_per_kb)

    def __repr__(self) -> str:
        return "FeeRate(%d)" % self.sat_per_kb


# -- dust -----------------------------------------------------------------------------------------

def dust_threshold(txout: TxOut, dust_relay_fee: FeeRate) -> int:
    """The smallest value of ``txout`` worth relaying (Core 0.12's GetDustThreshold).

    An output is dust when spending it would cost more than a third of its
    value at ``dust_relay_fee`` (the node's minimum relay rate): the spend
    needs the output itself plus a ~148-byte input.  A 34-byte P2PKH output
    at 1000 sat/kB gives 3 * 182 = 546.  Unspendable outputs are never dust:
    nobody will ever pay to spend them.
    """
    if is_unspendable(txout.script_pubkey):
        return 0
    return 3 * spend_cost(txout, dust_relay_fee)


def spend_cost(txout: TxOut, rate: FeeRate) -> int:
    """What the output and a ~148-byte input to spend it cost at ``rate`` (Core 0.17's
    GetDustThreshold, which has no factor of three: the wallet's discard rule)."""
    return rate.get_fee(len(txout.serialize()) + _SPEND_INPUT_SIZE)


def is_dust(txout: TxOut, dust_relay_fee: FeeRate) -> bool:
    """Is ``txout`` worth less than it would cost to spend (see :func:`dust_threshold`)?"""
    return txout.value < dust_threshold(txout, dust_relay_fee)


# -- standardness ---------------------------------------------------------------------------------

def _nonstandard(reason: str) -> ValidationError:
    return ValidationError(reason, code=REJECT_NONSTANDARD)


def check_standard_tx(tx: Transaction, dust_relay_fee: FeeRate,
                      max_datacarrier: Optional[int] = MAX_OP_RETURN_RELAY,
                      permit_bare_multisig: bool = True) -> None:
    """Core's IsStandardTx: raise ValidationError(reason, code=REJECT_NONSTANDARD) or return.

    Checks run in Core's order so the first failing rule names the reason:
    version, DIP2 type, size, each input's scriptSig, each output's template
    (and dust), then the one-OP_RETURN rule.  ``max_datacarrier`` is
    ``-datacarriersize`` (whole nulldata script, OP_RETURN included); None
    means ``-datacarrier=0``.  Like Core, the size limit is exclusive.
    """
    if not MIN_STANDARD_VERSION <= tx.version <= MAX_STANDARD_VERSION:
        raise _nonstandard("version")
    # DIP2 special transactions are non-standard until a feature needs them (design.md §3).
    if tx.tx_type != TX_TYPE_NORMAL:
        raise _nonstandard("bad-txns-type")
    if tx.size >= MAX_STANDARD_TX_SIZE:
        raise _nonstandard("tx-size")

    for txin in tx.vin:
        if len(txin.script_sig) > MAX_STANDARD_SCRIPTSIG_SIZE:
            raise _nonstandard("scriptsig-size")
        # Anything but pushes could be malleated by relayers, and P2SH needs pushes anyway.
        if not is_push_only(txin.script_sig):
            raise _nonstandard("scriptsig-not-pushonly")

    data_outputs = 0
    for txout in tx.vout:
        script_pubkey = txout.script_pubkey
        if not is_standard(script_pubkey, max_datacarrier):
            raise _nonstandard("scriptpubkey")
        kind = solve(script_pubkey)[0]
        if kind == TX_NULL_DATA:
            data_outputs += 1
        elif kind == TX_MULTISIG and not permit_bare_multisig:
            raise _nonstandard("bare-multisig")
        elif is_dust(txout, dust_relay_fee):
            raise _nonstandard("dust")

    if data_outputs > 1:
        raise _nonstandard("multi-op-return")


def are_inputs_standard(tx: Transaction, spent: Sequence[Coin]) -> bool:
    """Core's AreInputsStandard: may the scripts ``tx`` spends be relayed?

    ``spent`` is aligned with ``tx.vin``.  Rejects spends of non-template
    outputs, and P2SH spends whose redeem script has more than
    MAX_P2SH_SIGOPS accurate sigops: anyone can fund a P2SH output whose
    redeem script is expensive to check, so the cost is capped at relay.
    """
    if tx.is_coinbase():
        return True
    checker = BaseSignatureChecker()
    for txin, coin in zip(tx.vin, spent, strict=True):
        kind = solve(coin.script_pubkey)[0]
        if kind == TX_NONSTANDARD:
            return False
        if kind == TX_SCRIPTHASH:
            # Run the scriptSig (no flags) only to learn the stack; its top is the redeem script.
            stack: list = []
            try:
                eval_script(stack, txin.script_sig, 0, checker)
            except ScriptError:
                return False
            if not stack:
                return False
            if legacy_sigop_count(stack[-1], True) > MAX_P2SH_SIGOPS:
                return False
    return True


# -- priority (Core 0.12) -------------------------------------------------------------------------

def modified_size(tx: Transaction) -> int:
    """Core's CalculateModifiedSize: the size priority is divided by.

    Each input's outpoint, sequence and up to 110 bytes of scriptSig are
    not charged, so spending many old coins (consolidation) is not punished
    for the bytes it takes to spend them.
    """
    size = tx.size
    for txin in tx.vin:
        offset = _INPUT_OVERHEAD + min(_PRIORITY_SCRIPTSIG_CAP, len(txin.script_sig))
        if size > offset:
            size -= offset
    return size


def input_priority(spent: Sequence[Optional[Coin]], height: int) -> Tuple[float, int]:
    """Core 0.12's GetPriority sum: ``(sum(value * age), in-chain input value)`` at ``height``.

    ``spent`` is aligned with the inputs; None marks an input spending a
    mempool transaction, which has no age yet and contributes nothing (as do
    coins above ``height``).  The in-chain value lets the priority grow as
    blocks arrive (:func:`current_priority`).
    """
    priority = 0.0
    in_chain_value = 0
    for coin in spent:
        if coin is None or coin.height > height:
            continue
        priority += float(coin.value * (height - coin.height))
        in_chain_value += coin.value
    return priority, in_chain_value


def compute_priority(priority_inputs: float, tx: Transaction) -> float:
    """Core's ComputePriority: coin-age per modified byte (0.0 for a zero modified size)."""
    size = modified_size(tx)
    if size == 0:
        return 0.0
    return priority_inputs / size


def current_priority(starting: float, entry_height: int, current_height: int, in_chain_value: int,
                     mod_size: int) -> float:
    """Core 0.12's CTxMemPoolEntry::GetPriority: the entry's priority at ``current_height``.

    In-chain inputs age one block per block; floored at 0 in case the tip
    is below the entry height (after a reorg).
    """
    if mod_size == 0:
        result = starting
    else:
        result = starting + float(current_height - entry_height) * in_chain_value / mod_size
    return result if result > 0 else 0.0
