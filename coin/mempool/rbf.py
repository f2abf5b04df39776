"""BIP125 opt-in replace-by-fee: who signals, and whether a replacement may evict.

Core 0.17's rules (validation.cpp, policy/rbf.cpp): a pool transaction can be
replaced only if it signals itself (any input's nSequence <= 0xfffffffd); the
inherited signalling of an unconfirmed ancestor counts only for the
``bip125-replaceable`` the wallet reports, never for acceptance, as in Core.
"""

from __future__ import annotations

from typing import Dict, Set

from coin.consensus.errors import (
    REJECT_DUPLICATE, REJECT_INSUFFICIENTFEE, REJECT_INVALID, REJECT_NONSTANDARD, ValidationError,
)
from coin.consensus.tx_check import format_money
from coin.mempool.policy import FeeRate
from coin.mempool.pool import Mempool, MempoolEntry
from coin.primitives.transaction import Transaction

#: Core's MAX_BIP125_RBF_SEQUENCE: an input with a lower or equal nSequence opts in.
MAX_BIP125_RBF_SEQUENCE = 0xFFFFFFFD
#: Core's maxDescendantsToVisit: at most this many transactions (with descendants) evicted.
MAX_REPLACEMENT_CANDIDATES = 100

#: Core's RBFTransactionState as the wallet prints it.
RBF_YES = "yes"
RBF_NO = "no"
RBF_UNKNOWN = "unknown"


def signals_rbf(tx: Transaction) -> bool:
    """Core's SignalsOptInRBF: the transaction itself opts in."""
    return any(txin.sequence <= MAX_BIP125_RBF_SEQUENCE for txin in tx.vin)


def rbf_state(pool: Mempool, tx: Transaction) -> str:
    """Core's IsRBFOptIn: ``yes`` if ``tx`` or an unconfirmed pool ancestor signals,
    ``unknown`` if it does not signal and is not in the pool, else ``no``."""
    if signals_rbf(tx):
        return RBF_YES
    with pool.lock:
        entry = pool.get(tx.txid)
        if entry is None:
            return RBF_UNKNOWN
        if any(signals_rbf(ancestor.tx) for ancestor in pool.ancestors_of(entry)):
            return RBF_YES
    return RBF_NO


def find_conflicts(pool: Mempool, tx: Transaction, enabled: bool) -> Dict[bytes, MempoolEntry]:
    """Pool transactions spending an input of ``tx``; ``txn-mempool-conflict`` unless each
    one signals and replacement is enabled (``-mempoolreplacement``)."""
    conflicts: Dict[bytes, MempoolEntry] = {}
    for txin in tx.vin:
        entry = pool.spenders.get((txin.prevout.txid, txin.prevout.n))
        if entry is None or entry.txid in conflicts:
            continue
        if not (enabled and signals_rbf(entry.tx)):
            raise ValidationError("txn-mempool-conflict", code=REJECT_DUPLICATE)
        conflicts[entry.txid] = entry
    return conflicts


def check_replacement(pool: Mempool, tx: Transaction, conflicts: Dict[bytes, MempoolEntry],
                      ancestors: Set[MempoolEntry], modified_fee: int, size: int,
                      incremental_relay_fee: FeeRate) -> Set[MempoolEntry]:
    """BIP125's rules for ``tx`` replacing ``conflicts``; returns every entry to evict
    (the conflicts and their descendants).  Reasons, codes and debug texts are Core's."""
    txid_hex = tx.txid_hex
    for ancestor in ancestors:
        if ancestor.txid in conflicts:
            raise ValidationError("bad-txns-spends-conflicting-tx", "%s spends conflicting "
                                  "transaction %s" % (txid_hex, ancestor.tx.txid_hex),
                                  dos=10, code=REJECT_INVALID)
    if not conflicts:
        return set()
    new_rate = FeeRate.from_fee(modified_fee, size)
    conflict_parents: Set[bytes] = set()
    count = 0
    for entry in conflicts.values():
        old_rate = FeeRate.from_fee(entry.modified_fee, entry.size)
        if new_rate.sat_per_kb <= old_rate.sat_per_kb:
            raise ValidationError("insufficient fee", "rejecting replacement %s; new feerate %s "
                                  "<= old feerate %s" % (txid_hex, new_rate.to_string(),
                                                          old_rate.to_string()),
                                  code=REJECT_INSUFFICIENTFEE)
        conflict_parents.update(txin.prevout.txid for txin in entry.tx.vin)
        count += entry.count_with_descendants
    if count > MAX_REPLACEMENT_CANDIDATES:
        raise ValidationError("too many potential replacements",
                              "rejecting replacement %s; too many potential replacements "
                              "(%d > %d)\n" % (txid_hex, count, MAX_REPLACEMENT_CANDIDATES),
                              code=REJECT_NONSTANDARD)
    evicted: Set[MempoolEntry] = set()
    for entry in conflicts.values():
        evicted |= pool.calculate_descendants(entry)
    for index, txin in enumerate(tx.vin):
        parent = txin.prevout.txid
        if parent not in conflict_parents and parent in pool.entries:
            raise ValidationError("replacement-adds-unconfirmed", "replacement %s adds "
                                  "unconfirmed input, idx %d" % (txid_hex, index),
                                  code=REJECT_NONSTANDARD)
    evicted_fees = sum(entry.modified_fee for entry in evicted)
    if modified_fee < evicted_fees:
        raise ValidationError("insufficient fee", "rejecting replacement %s, less fees than "
                              "conflicting txs; %s < %s" % (txid_hex, format_money(modified_fee),
                                                            format_money(evicted_fees)),
                              code=REJECT_INSUFFICIENTFEE)
    extra, relay = modified_fee - evicted_fees, incremental_relay_fee.get_fee(size)
    if extra < relay:
        raise ValidationError("insufficient fee", "rejecting replacement %s, not enough "
                              "additional fees to relay; %s < %s"
                              % (txid_hex, format_money(extra), format_money(relay)),
                              code=REJECT_INSUFFICIENTFEE)
    return evicted
