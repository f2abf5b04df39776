"""Transaction rules: context-free checks, finality, BIP68 sequence locks, inputs, sigops.

These run for every transaction of every connected block, so they avoid
per-call allocations beyond what the rule needs.

Spent outputs are passed as a sequence of :class:`~coin.primitives.coin.Coin`
aligned with ``tx.vin`` (``None`` where the output is missing or spent).  The
block-connect loop fetches the coins anyway (it must spend them and write
undo data), so handing the list over is the cheapest interface: no lookups,
no mapping protocol, one pass.

DIP2 transaction types: the serializer splits the 32-bit version field into
``version`` and ``tx_type`` from genesis.  We know no special transaction
types, so :func:`check_transaction` rejects every non-zero type with
``bad-txns-type``, exactly as Dash Core's ContextualCheckTransaction does
once DIP3 is active: version >= 3 with an unknown type, and version < 3 with
any non-zero type.  (Before DIP3 Dash accepted the latter as a normal
transaction with a large version; we have no such history to stay compatible
with, and rejecting keeps the type space free for future special types.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Sequence, Tuple

from coin.chainparams import COIN, COINBASE_MATURITY, MAX_BLOCK_SIZE, MAX_MONEY
from coin.consensus.errors import ValidationError
from coin.primitives.script import is_p2sh, legacy_sigop_count, p2sh_sigop_count
from coin.primitives.transaction import (
    LOCKTIME_THRESHOLD,
    SEQUENCE_FINAL,
    SEQUENCE_LOCKTIME_DISABLE_FLAG,
    SEQUENCE_LOCKTIME_GRANULARITY,
    SEQUENCE_LOCKTIME_MASK,
    SEQUENCE_LOCKTIME_TYPE_FLAG,
    TX_TYPE_NORMAL,
    Transaction,
)

if TYPE_CHECKING:
    from coin.chain.index import BlockIndexEntry
    from coin.primitives.coin import Coin

# Flags for the lock-time functions (Core's LOCKTIME_*).
LOCKTIME_VERIFY_SEQUENCE = 1 << 0
LOCKTIME_MEDIAN_TIME_PAST = 1 << 1


def check_transaction(tx: Transaction) -> None:
    """Core's CheckTransaction: rules that need no chain state; raises ValidationError."""
    vin = tx.vin
    if not vin:
        raise ValidationError("bad-txns-vin-empty", dos=10)
    if not tx.vout:
        raise ValidationError("bad-txns-vout-empty", dos=10)
    if tx.size > MAX_BLOCK_SIZE:
        raise ValidationError("bad-txns-oversize", dos=100)

    value_out = 0
    for txout in tx.vout:
        value = txout.value
        if value < 0:
            raise ValidationError("bad-txns-vout-negative", dos=100)
        if value > MAX_MONEY:
            raise ValidationError("bad-txns-vout-toolarge", dos=100)
        value_out += value
        if value_out > MAX_MONEY:
            raise ValidationError("bad-txns-txouttotal-toolarge", dos=100)

    if len(vin) > 1 and len({(txin.prevout.txid, txin.prevout.n) for txin in vin}) != len(vin):
        raise ValidationError("bad-txns-inputs-duplicate", dos=100)

    if tx.is_coinbase():
        size = len(vin[0].script_sig)
        if size < 2 or size > 100:
            raise ValidationError("bad-cb-length", dos=100)
    else:
        for txin in vin:
            if txin.prevout.is_null():
                raise ValidationError("bad-txns-prevout-null", dos=10)

    if tx.tx_type != TX_TYPE_NORMAL:
        raise ValidationError("bad-txns-type", dos=100)


def is_final_tx(tx: Transaction, block_height: int, block_time: int) -> bool:
    """Core's IsFinalTx: may ``tx`` be in a block at this height and lock-time cutoff?"""
    locktime = tx.locktime
    if locktime == 0:
        return True
    if locktime < (block_height if locktime < LOCKTIME_THRESHOLD else block_time):
        return True
    for txin in tx.vin:
        if txin.sequence != SEQUENCE_FINAL:
            return False
    return True


def calculate_sequence_locks(tx: Transaction, flags: int, prev_heights: Sequence[int],
                             block: BlockIndexEntry) -> Tuple[int, int]:
    """Core's CalculateSequenceLocks: ``(min_height, min_time)`` BIP68 demands of ``tx``.

    Both are the *last invalid* height / median time past (nLockTime
    semantics), -1 when unconstrained.  ``prev_heights[i]`` is the height of
    the block that created input ``i``'s coin (the mempool uses tip + 1 for
    unconfirmed parents); ``block`` is the entry of the block that would
    contain ``tx`` (for the mempool, an entry at tip + 1 whose ``prev`` is the
    tip).  Unlike Core, ``prev_heights`` is not modified: callers that want
    the heights of the inputs that matter can skip disabled inputs themselves.
    """
    # The version is compared as unsigned, so negative (int16) versions enforce BIP68 too.
    if not flags & LOCKTIME_VERIFY_SEQUENCE or (tx.version & 0xFFFFFFFF) < 2:
        return -1, -1
    min_height = -1
    min_time = -1
    for txin, coin_height in zip(tx.vin, prev_heights, strict=True):
        sequence = txin.sequence
        if sequence & SEQUENCE_LOCKTIME_DISABLE_FLAG:
            continue
        if sequence & SEQUENCE_LOCKTIME_TYPE_FLAG:
            # Measured from the median time past of the block before the coin's block.
            ancestor = block.get_ancestor(max(coin_height - 1, 0))
            assert ancestor is not None  # the coin is in this block's chain
            coin_time = ancestor.median_time_past()
            seconds = (sequence & SEQUENCE_LOCKTIME_MASK) << SEQUENCE_LOCKTIME_GRANULARITY
            lock = coin_time + seconds - 1
            if lock > min_time:
                min_time = lock
        else:
            lock = coin_height + (sequence & SEQUENCE_LOCKTIME_MASK) - 1
            if lock > min_height:
                min_height = lock
    return min_height, min_time


def evaluate_sequence_locks(block: BlockIndexEntry, lock_pair: Tuple[int, int]) -> bool:
    """Core's EvaluateSequenceLocks: are the locks satisfied in ``block`` (which has a parent)?"""
    min_height, min_time = lock_pair
    assert block.prev is not None
    return min_height < block.height and min_time < block.prev.median_time_past()


def sequence_locks(tx: Transaction, flags: int, prev_heights: Sequence[int],
                   block: BlockIndexEntry) -> bool:
    """Core's SequenceLocks: True when ``tx``'s BIP68 locks allow it in ``block``."""
    return evaluate_sequence_locks(block, calculate_sequence_locks(tx, flags, prev_heights, block))


def check_tx_inputs(tx: Transaction, spent: Sequence[Optional[Coin]], spend_height: int,
                    coinbase_maturity: int = COINBASE_MATURITY) -> int:
    """Core's Consensus::CheckTxInputs; returns the fee.

    ``spent`` holds the coins ``tx`` spends, aligned with ``tx.vin`` (``None``
    for a missing or already spent output); ``spend_height`` is the height of
    the block that spends them.  Scripts are not checked here.
    """
    coins = [coin for coin in spent if coin is not None]
    if len(coins) != len(spent):
        raise ValidationError("bad-txns-inputs-missingorspent", "inputs missing/spent", dos=100)
    value_in = 0
    for coin in coins:
        if coin.coinbase and spend_height - coin.height < coinbase_maturity:
            depth = spend_height - coin.height
            raise ValidationError("bad-txns-premature-spend-of-coinbase",
                                  "tried to spend coinbase at depth %d" % depth)
        value = coin.value
        value_in += value
        if value < 0 or value > MAX_MONEY or value_in > MAX_MONEY:
            raise ValidationError("bad-txns-inputvalues-outofrange", dos=100)
    value_out = tx.total_out()
    if value_in < value_out:
        raise ValidationError("bad-txns-in-belowout", "value in (%s) < value out (%s)" % (
            format_money(value_in), format_money(value_out)), dos=100)
    fee = value_in - value_out
    # Only reachable for a transaction that skipped check_transaction (negative outputs).
    if fee > MAX_MONEY:
        raise ValidationError("bad-txns-fee-outofrange", dos=100)
    return fee


def legacy_sigops(tx: Transaction) -> int:
    """Core's GetLegacySigOpCount: inaccurate sigops of all scriptSigs and scriptPubKeys."""
    count = 0
    for txin in tx.vin:
        count += legacy_sigop_count(txin.script_sig, False)
    for txout in tx.vout:
        count += legacy_sigop_count(txout.script_pubkey, False)
    return count


def p2sh_sigops(tx: Transaction, spent: Sequence[Coin]) -> int:
    """Core's GetP2SHSigOpCount: sigops of the redeem scripts of P2SH inputs.

    ``spent`` is aligned with ``tx.vin`` as for :func:`check_tx_inputs` (which
    must have accepted it, so no entry is None).
    """
    if tx.is_coinbase():
        return 0
    count = 0
    for txin, coin in zip(tx.vin, spent, strict=True):
        script_pubkey = coin.script_pubkey
        if is_p2sh(script_pubkey):
            count += p2sh_sigop_count(txin.script_sig, script_pubkey)
    return count


def format_money(amount: int) -> str:
    """Core's FormatMoney: at least two decimals, trailing zeros trimmed (debug text only)."""
    sign = "-" if amount < 0 else ""
    text = "%d.%08d" % divmod(abs(amount), COIN)
    return sign + text.rstrip("0").ljust(len(text) - 6, "0")
