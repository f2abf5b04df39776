"""Labels and address groupings: what getaddressesbylabel, listlabels, getreceivedbylabel,
listreceivedbylabel and listaddressgroupings read from a wallet (Core 0.17's
GetLabelAddresses, GetAddressGroupings and GetAddressBalances).

Callers hold the wallet's lock (:func:`coin.wallet.access.in_wallet`).  Amounts are in
base units.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Set, Tuple

from coin.consensus.tx_check import is_final_tx
from coin.primitives.address import Destination, try_decode_address
from coin.wallet.keystore import ISMINE_ALL, ISMINE_NO
from coin.wallet.wallet import Wallet, WalletTx

#: An address-book row: (address, label, purpose, destination).
BookEntry = Tuple[str, str, str, Destination]


def destination_order(destination: Destination) -> Tuple[bool, bytes]:
    """Core's CTxDestination order (std::map): key hashes first, then script hashes."""
    return destination.kind != "pubkeyhash", destination.hash160


def book_order(wallet: Wallet) -> List[BookEntry]:
    """The address book as Core's mapAddressBook iterates it."""
    entries = [(address, label, purpose, try_decode_address(address, wallet.params))
               for address, (label, purpose) in wallet.names.items()]
    return sorted((e for e in entries if e[3] is not None), key=lambda e: destination_order(e[3]))


def addresses_with_label(wallet: Wallet, label: str) -> List[Tuple[str, str]]:
    """(address, purpose) of each address-book entry named ``label``, in book order."""
    return [(address, purpose) for address, name, purpose, _ in book_order(wallet)
            if name == label]


def labels(wallet: Wallet, purpose: str) -> List[str]:
    """The distinct labels, sorted; only those of addresses with ``purpose`` unless empty."""
    return sorted({label for label, their_purpose in wallet.names.values()
                   if not purpose or their_purpose == purpose})


def received_by_label(wallet: Wallet, label: str, min_depth: int) -> int:
    """Core's getreceivedbylabel: own outputs to the label's addresses at least
    ``min_depth`` deep, in final non-coinbase transactions."""
    addresses = {address for address, _ in addresses_with_label(wallet, label)}
    tip = wallet.chain.tip
    total = 0
    for wtx in wallet.txs.values():
        if wtx.tx.is_coinbase() or not is_final_tx(wtx.tx, tip.height + 1,
                                                   tip.median_time_past()):
            continue
        if wallet.depth(wtx) < min_depth:
            continue
        for out in wtx.tx.vout:
            if (wallet.address_of(out.script_pubkey) in addresses
                    and wallet.is_mine(out.script_pubkey) != ISMINE_NO):
                total += out.value
    return total


def _grouping_of_inputs(wallet: Wallet, wtx: WalletTx) -> Set[str]:
    """The own addresses ``wtx`` spends from, with its change addresses when there are any."""
    group: Set[str] = set()
    if wtx.tx.is_coinbase():
        return group
    for txin in wtx.tx.vin:
        prev = wallet.txs.get(txin.prevout.txid)
        if prev is None or txin.prevout.n >= len(prev.tx.vout):
            continue
        script = prev.tx.vout[txin.prevout.n].script_pubkey
        address = wallet.address_of(script)
        if wallet.is_mine(script) & ISMINE_ALL and address is not None:
            group.add(address)
    if group:
        group.update(address for address in map(wallet.address_of, (
            out.script_pubkey for out in wtx.tx.vout if wallet.is_change(out)))
            if address is not None)
    return group


def _merge(groups: List[Set[str]]) -> List[Set[str]]:
    """Join groups sharing an address until none overlap (Core's merge of groupings)."""
    merged: List[Set[str]] = []
    owner: Dict[str, int] = {}
    for group in groups:
        hits = sorted({owner[a] for a in group if a in owner})
        target = set(group)
        for index in hits:
            target |= merged[index]
            merged[index] = set()
        merged.append(target)
        for address in target:
            owner[address] = len(merged) - 1
    return [group for group in merged if group]


def address_balances(wallet: Wallet) -> Dict[str, int]:
    """Core's GetAddressBalances: unspent own outputs of trusted, mature transactions per
    address (received ones need a confirmation, our own sends none)."""
    balances: Dict[str, int] = {}
    for wtx in wallet.txs.values():
        if not wallet.is_trusted(wtx) or wallet.blocks_to_maturity(wtx) > 0:
            continue
        if wallet.depth(wtx) < (0 if wallet.debit(wtx.tx, ISMINE_ALL) > 0 else 1):
            continue
        for n, out in enumerate(wtx.tx.vout):
            address = wallet.address_of(out.script_pubkey)
            if wallet.is_mine(out.script_pubkey) == ISMINE_NO or address is None:
                continue
            spent = wallet.is_spent((wtx.txid, n))
            balances[address] = balances.get(address, 0) + (0 if spent else out.value)
    return balances


def address_groupings(wallet: Wallet) -> List[List[Tuple[str, int, Optional[str]]]]:
    """listaddressgroupings: groups of own addresses revealed as one owner's by common
    spending or change, each address with its balance and label (None: not in the book).

    Core orders groups by their position in memory; here by their first address, and the
    addresses of a group in Core's destination order.
    """
    groups: List[Set[str]] = []
    for wtx in wallet.txs.values():
        spent_together = _grouping_of_inputs(wallet, wtx)
        if spent_together:
            groups.append(spent_together)
        groups.extend({address} for address in map(wallet.address_of, (
            out.script_pubkey for out in wtx.tx.vout
            if wallet.is_mine(out.script_pubkey) != ISMINE_NO)) if address is not None)
    balances = address_balances(wallet)

    def key(address: str) -> Tuple[bool, bytes]:
        return destination_order(try_decode_address(address, wallet.params))

    ordered = sorted((sorted(group, key=key) for group in _merge(groups)),
                     key=lambda group: key(group[0]))
    return [[(address, balances.get(address, 0), wallet.label_of(address)) for address in group]
            for group in ordered]
