"""AcceptToMemoryPool: every check a transaction passes before it joins the pool.

Runs on the validation worker thread, so the UTXO set, the tip and the pool
are one consistent view.  Checks follow Core 0.17's order and reject reasons
(``ValidationError`` carries reason, debug text and reject code); a missing
input raises :class:`MissingInputs` instead, which RPC reports as -25.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Sequence

from coin.chain.chainstate import ChainState
from coin.chain.index import BlockIndexEntry
from coin.consensus.errors import (
    REJECT_DUPLICATE, REJECT_INSUFFICIENTFEE, REJECT_INVALID, REJECT_NONSTANDARD, ValidationError,
)
from coin.consensus.tx_check import (
    LOCKTIME_MEDIAN_TIME_PAST, LOCKTIME_VERIFY_SEQUENCE, check_transaction, check_tx_inputs,
    is_final_tx, legacy_sigops, p2sh_sigops, sequence_locks,
)
from coin.mempool.coinview import coins_with_pool
from coin.mempool.policy import (
    MAX_STANDARD_TX_SIGOPS, FeeRate, are_inputs_standard, check_standard_tx, compute_priority,
    input_priority, modified_size,
)
from coin.mempool.pool import (
    REMOVED_REORG, REMOVED_REPLACED, AncestorLimits, LimitError, Mempool, MempoolEntry, UNLIMITED,
)
from coin.mempool.rbf import check_replacement, find_conflicts
from coin.primitives.coin import Coin
from coin.primitives.transaction import Transaction
from coin.script.flags import MANDATORY_SCRIPT_VERIFY_FLAGS, STANDARD_SCRIPT_VERIFY_FLAGS
from coin.script.interpreter import ScriptError, TransactionSignatureChecker, verify_script
from coin.script.sighash import SighashCache
from coin.views.utxo import MEMPOOL_HEIGHT

#: Core's REJECT_HIGHFEE (a policy code outside the P2P reject range).
REJECT_HIGHFEE = 0x100
#: The lock-time rules the mempool applies whatever the soft-fork state (Core).
STANDARD_LOCKTIME_VERIFY_FLAGS = LOCKTIME_VERIFY_SEQUENCE | LOCKTIME_MEDIAN_TIME_PAST


class MissingInputs(Exception):
    """An input is neither in the UTXO set nor in the pool (an orphan, or spent)."""


class AlreadyInChain(Exception):
    """Submitted again: an output of the transaction is unspent in the UTXO set."""

    #: Core's RPC_VERIFY_ALREADY_IN_CHAIN and message (the mempool does not import the RPC layer).
    rpc_code = -27
    message = "transaction already in block chain"


@dataclass
class PoolPolicy:
    """The relay options (-minrelaytxfee, -maxmempool, -limit*, -acceptnonstdtxn, ...)."""

    min_relay_fee: FeeRate = field(default_factory=lambda: FeeRate(1000))
    incremental_relay_fee: FeeRate = field(default_factory=lambda: FeeRate(1000))
    require_standard: bool = True
    #: Largest OP_RETURN output script relayed; None with -datacarrier=0.
    max_datacarrier: Optional[int] = 83
    permit_bare_multisig: bool = True
    limits: AncestorLimits = field(default_factory=AncestorLimits)
    max_usage: int = 300_000_000
    expiry_seconds: int = 336 * 60 * 60
    #: -mempoolreplacement: BIP125 replacement of transactions that opt in.
    replacement: bool = True


@dataclass
class Accepted:
    """What a successful (or test-only) acceptance found."""

    tx: Transaction
    fee: int
    size: int
    entry: Optional[MempoolEntry] = None
    #: The pool entries a BIP125 replacement evicted (conflicts and their descendants).
    replaced: List[MempoolEntry] = field(default_factory=list)


def next_block_entry(tip: BlockIndexEntry) -> BlockIndexEntry:
    """A stand-in index entry for the block after ``tip`` (Core's dummy for BIP68 checks)."""
    return BlockIndexEntry(b"\0" * 32, tip.height + 1, tip, 0, b"\0" * 32, 0, 0, 0, 0)


def verify_standard_scripts(tx: Transaction, spent: Sequence[Coin]) -> None:
    """Scripts with the standard flags; a failure only the policy flags catch is policy."""
    cache = SighashCache(tx)
    for index, (txin, coin) in enumerate(zip(tx.vin, spent)):
        try:
            verify_script(txin.script_sig, coin.script_pubkey, STANDARD_SCRIPT_VERIFY_FLAGS,
                          TransactionSignatureChecker(tx, index, cache))
            continue
        except ScriptError as error:
            message = error.message
        try:
            verify_script(txin.script_sig, coin.script_pubkey, MANDATORY_SCRIPT_VERIFY_FLAGS,
                          TransactionSignatureChecker(tx, index, cache))
        except ScriptError:
            raise ValidationError("mandatory-script-verify-flag-failed (%s)" % message,
                                  dos=100, code=REJECT_INVALID) from None
        raise ValidationError("non-mandatory-script-verify-flag (%s)" % message,
                              code=REJECT_NONSTANDARD)


def accept_to_mempool(chainstate: ChainState, pool: Mempool, tx: Transaction,
                      policy: PoolPolicy, *, now: int, max_fee: int = 0,
                      test_only: bool = False, bypass_limits: bool = False,
                      accept_time: Optional[int] = None) -> Accepted:
    """Check ``tx`` against the chain and the pool and add it (unless ``test_only``).

    ``bypass_limits`` is for transactions returning from disconnected blocks:
    no fee floors, no family limits, no trimming.  ``max_fee`` (0: none) is
    sendrawtransaction's absurd-fee guard.
    """
    txid = tx.txid
    check_transaction(tx)
    if tx.is_coinbase():
        raise ValidationError("coinbase", dos=100)
    if policy.require_standard:
        check_standard_tx(tx, policy.min_relay_fee, policy.max_datacarrier,
                          policy.permit_bare_multisig)
    tip = chainstate.tip
    if not is_final_tx(tx, tip.height + 1, tip.median_time_past()):
        raise ValidationError("non-final", code=REJECT_NONSTANDARD)
    if txid in pool.entries:
        raise ValidationError("txn-already-in-mempool", code=REJECT_DUPLICATE)
    conflicts = find_conflicts(pool, tx, policy.replacement)

    spent = coins_with_pool(chainstate, pool, [(i.prevout.txid, i.prevout.n) for i in tx.vin])
    if any(coin is None for coin in spent):
        outputs = chainstate.store.coins.fetch([(txid, n) for n in range(len(tx.vout))])
        if any(coin is not None for coin in outputs):
            raise ValidationError("txn-already-known", code=REJECT_DUPLICATE)
        raise MissingInputs()
    coins: List[Coin] = [c for c in spent if c is not None]

    next_block = next_block_entry(tip)
    prev_heights = [tip.height + 1 if c.height == MEMPOOL_HEIGHT else c.height for c in coins]
    if not sequence_locks(tx, STANDARD_LOCKTIME_VERIFY_FLAGS, prev_heights, next_block):
        raise ValidationError("non-BIP68-final", code=REJECT_NONSTANDARD)
    fee = check_tx_inputs(tx, coins, tip.height + 1, chainstate.params.coinbase_maturity)
    if policy.require_standard and not are_inputs_standard(tx, coins):
        raise ValidationError("bad-txns-nonstandard-inputs", code=REJECT_NONSTANDARD)
    sigops = legacy_sigops(tx) + p2sh_sigops(tx, coins)
    if sigops > MAX_STANDARD_TX_SIGOPS:
        raise ValidationError("bad-txns-too-many-sigops", "%d" % sigops, code=REJECT_NONSTANDARD)

    size = tx.size
    modified = fee + pool.deltas.get(txid, 0)
    if not bypass_limits:
        floor = pool.get_min_fee(policy.max_usage).get_fee(size)
        if floor > 0 and modified < floor:
            raise ValidationError("mempool min fee not met", "%d < %d" % (modified, floor),
                                  code=REJECT_INSUFFICIENTFEE)
        floor = policy.min_relay_fee.get_fee(size)
        if modified < floor:
            raise ValidationError("min relay fee not met", "%d < %d" % (modified, floor),
                                  code=REJECT_INSUFFICIENTFEE)
    if max_fee and fee > max_fee:
        raise ValidationError("absurdly-high-fee", "%d > %d" % (fee, max_fee), code=REJECT_HIGHFEE)

    try:
        ancestors = pool.calculate_ancestors(tx, size,
                                             UNLIMITED if bypass_limits else policy.limits)
    except LimitError as error:
        raise ValidationError("too-long-mempool-chain", str(error),
                              code=REJECT_NONSTANDARD) from None
    evicted = check_replacement(pool, tx, conflicts, ancestors, modified, size,
                                policy.incremental_relay_fee)

    verify_standard_scripts(tx, coins)
    if test_only:
        return Accepted(tx, fee, size)

    priority_inputs, in_chain_value = input_priority(
        [None if c.height == MEMPOOL_HEIGHT else c for c in coins], tip.height)
    entry = MempoolEntry(
        tx, fee, accept_time if accept_time is not None else now, tip.height,
        starting_priority=compute_priority(priority_inputs, tx), in_chain_value=in_chain_value,
        mod_size=modified_size(tx), sigops=sigops,
        spends_coinbase=any(c.coinbase for c in coins))
    if evicted:
        # No ancestor of tx is evicted (bad-txns-spends-conflicting-tx), so its set holds.
        pool.remove_staged(evicted, REMOVED_REPLACED)
    pool.add(entry, ancestors)
    if not bypass_limits:
        limit_pool_size(pool, policy, now)
        if txid not in pool.entries:
            raise ValidationError("mempool full", code=REJECT_INSUFFICIENTFEE)
    return Accepted(tx, fee, size, entry, sorted(evicted))


def limit_pool_size(pool: Mempool, policy: PoolPolicy, now: int) -> None:
    """Core's LimitMempoolSize: expire old entries, then trim to -maxmempool."""
    pool.expire(now - policy.expiry_seconds)
    pool.trim_to_size(policy.max_usage)


def remove_for_reorg(chainstate: ChainState, pool: Mempool) -> None:
    """Drop entries a reorg made invalid for the next block (Core's removeForReorg).

    Non-final transactions, BIP68-locked ones and spends of now-immature
    coinbase outputs leave with their descendants.
    """
    tip = chainstate.tip
    next_block = next_block_entry(tip)
    mtp = tip.median_time_past()
    maturity = chainstate.params.coinbase_maturity
    doomed = []
    entries = list(pool.entries.values())
    for entry in entries:
        tx = entry.tx
        keys = [(i.prevout.txid, i.prevout.n) for i in tx.vin]
        chain_keys = [k for k in keys if k[0] not in pool.entries]
        coins = dict(zip(chain_keys, chainstate.store.coins.fetch(chain_keys)))
        heights = []
        bad = not is_final_tx(tx, tip.height + 1, mtp)
        for key in keys:
            coin = coins.get(key)
            if key[0] in pool.entries:
                heights.append(tip.height + 1)
            elif coin is None:
                bad = True
                break
            else:
                heights.append(coin.height)
                if coin.coinbase and tip.height + 1 - coin.height < maturity:
                    bad = True
        if not bad and not sequence_locks(tx, STANDARD_LOCKTIME_VERIFY_FLAGS, heights, next_block):
            bad = True
        if bad:
            doomed.append(tx)
    for tx in doomed:
        pool.remove_recursive(tx, REMOVED_REORG)
