"""Superblocks (design.md §6, beyond the reference node): the trigger for a superblock
height with enough net yes-funding votes names payments the miner adds to that block's
coinbase, and that other nodes require while SPORK_9 is active.

A trigger's data is sentinel's: ``event_block_height``, ``payment_addresses`` and
``payment_amounts`` (``|``-separated, amounts in coins), ``proposal_hashes``.  The chosen
trigger is recomputed on the reactor thread whenever objects or votes change and kept as
an immutable value the validation worker reads (the ChainState hooks).
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any, Dict, Optional, Sequence, Tuple

from coin.chainparams import COIN, ChainParams
from coin.governance.object import OBJECT_TRIGGER, DataError, GovernanceObject, inner_object
from coin.governance.params import governance_params, is_superblock_height, superblock_budget
from coin.governance.store import GovernanceStore
from coin.governance.vote import SIGNAL_FUNDING, vote_threshold
from coin.primitives.address import try_decode_address
from coin.primitives.transaction import Transaction
from coin.script.standard import destination_script
from coin.spork import SPORK_9_SUPERBLOCKS_ENABLED

#: A superblock's payments: ``(script, amount)`` in coinbase order.
Payments = Tuple[Tuple[bytes, int], ...]


class TriggerError(ValueError):
    """A trigger that cannot be paid (CSuperblock's parse errors)."""


def _amount(text: str) -> int:
    try:
        value = Decimal(text.strip())
    except InvalidOperation:
        raise TriggerError("invalid payment amount %r" % text) from None
    units = value * COIN
    if not value.is_finite() or units != units.to_integral_value() or units <= 0:
        raise TriggerError("invalid payment amount %r" % text)
    return int(units)


def trigger_payments(obj: GovernanceObject, chain: ChainParams) -> Tuple[int, Payments]:
    """``(superblock height, payments)`` of a trigger, or TriggerError: the height must be a
    superblock's, every address this network's, every amount above 0, the total within
    the budget."""
    try:
        fields = inner_object(obj.data_hex)
    except DataError as e:
        raise TriggerError(str(e)) from None
    if not isinstance(fields, dict):
        raise TriggerError("trigger data is not an object")
    height = fields.get("event_block_height")
    addresses, amounts = fields.get("payment_addresses"), fields.get("payment_amounts")
    if not isinstance(height, int) or isinstance(height, bool) or not is_superblock_height(
            height, governance_params(chain)):
        raise TriggerError("event_block_height is not a superblock height")
    if not isinstance(addresses, str) or not isinstance(amounts, str):
        raise TriggerError("payment_addresses and payment_amounts must be strings")
    addresses_list, amounts_list = addresses.split("|"), amounts.split("|")
    if len(addresses_list) != len(amounts_list):
        raise TriggerError("payment_addresses and payment_amounts differ in count")
    payments = []
    for address, amount in zip(addresses_list, amounts_list):
        destination = try_decode_address(address.strip(), chain)
        if destination is None:
            raise TriggerError("invalid payment address %r" % address)
        payments.append((destination_script(destination), _amount(amount)))
    if sum(amount for _, amount in payments) > superblock_budget(height, chain):
        raise TriggerError("payments exceed the superblock budget")
    return height, tuple(payments)


def chosen_triggers(store: GovernanceStore, after: int, chain: ChainParams, min_quorum: int,
                    enabled: int) -> Dict[int, Tuple[GovernanceObject, Payments]]:
    """The trigger paid at each superblock height above ``after``: of the valid live
    triggers for it with net yes-funding >= max(quorum, enabled / 10), the one with most,
    lowest hash on a tie."""
    needed = vote_threshold(min_quorum, enabled)
    best: Dict[int, Tuple[Tuple[int, bytes], GovernanceObject, Payments]] = {}
    for entry in store:
        obj = entry.obj
        if obj.object_type != OBJECT_TRIGGER or entry.flags.delete or entry.expired:
            continue
        try:
            height, payments = trigger_payments(obj, chain)
        except TriggerError:
            continue
        yes = entry.book.tally(SIGNAL_FUNDING).absolute_yes
        if height <= after or yes < needed:
            continue
        rank = (-yes, obj.hash[::-1])
        if height not in best or rank < best[height][0]:
            best[height] = (rank, obj, payments)
    return {height: (obj, payments) for height, (_, obj, payments) in best.items()}


def pays(coinbase: Transaction, payments: Payments) -> bool:
    """Whether the coinbase has an output for each payment (script and amount)."""
    outputs = [(out.script_pubkey, out.value) for out in coinbase.vout]
    for payment in payments:
        if payment not in outputs:
            return False
        outputs.remove(payment)
    return True


class Superblocks:
    """The superblock rule, installed on a ChainState (``state``: ``params``, ``height``,
    ``adjusted_time()`` and the hooks). ``sporks`` says whether SPORK_9 is active;
    ``mnsync`` whether this node has the votes (``is_synced()``): a node that has not
    cannot judge and accepts up to the budget, as the reference does.
    """

    def __init__(self, governance: Any, state: Any, sporks: Any, mnsync: Any) -> None:
        self.governance = governance
        self.state = state
        self.chain: ChainParams = state.params
        self.sporks = sporks
        self.mnsync = mnsync
        #: The payments owed per superblock height (only heights with a chosen trigger).
        self.owed: Dict[int, Payments] = {}
        governance.on_object.append(lambda obj: self.refresh())
        governance.on_vote.append(lambda vote: self.refresh())
        governance.on_update.append(self.refresh)
        state.superblock_check = self.check
        state.superblock_payments = self.payments

    def enabled(self) -> bool:
        """SPORK_9_SUPERBLOCKS_ENABLED."""
        return self.sporks.is_active(SPORK_9_SUPERBLOCKS_ENABLED, int(self.state.adjusted_time()))

    def refresh(self) -> None:
        """Choose the triggers of the coming superblocks again (reactor thread)."""
        chosen = chosen_triggers(self.governance.store, self.state.height, self.chain,
                                 self.governance.params.min_quorum,
                                 self.governance.keys.enabled_count())
        self.owed = {height: payments for height, (_, payments) in chosen.items()}

    def payments(self, height: int) -> Sequence[Tuple[bytes, int]]:
        """What the miner adds to the coinbase at ``height`` (worker thread)."""
        return self.owed.get(height, ()) if self.enabled() else ()

    def check(self, height: int, coinbase: Transaction) -> Optional[int]:
        """How much the coinbase may pay above subsidy and fees at ``height``, or None if it
        breaks the superblock rule (worker thread)."""
        if not self.enabled() or not is_superblock_height(height, governance_params(self.chain)):
            return 0
        if not self.mnsync.is_synced():
            return superblock_budget(height, self.chain)
        owed = self.owed.get(height)
        if owed is None:
            return 0
        return sum(amount for _, amount in owed) if pays(coinbase, owed) else None
