"""Wallet transactions and outputs as JSON, in Core 0.17's field order.

``wallet_tx_fields`` is Core's WalletTxToJSON, ``transaction_entries`` its
ListTransactions (one entry per sent and per received output, as
listtransactions, listsinceblock and gettransaction's ``details`` show them),
``gettransaction_json`` the whole gettransaction object and
``unspent_json`` one listunspent entry.  The caller holds the wallet's lock.

``time`` is the time the wallet first saw the transaction (Core's GetTxTime
without the "smart time" adjustment); wallet comments are not kept, so no
``comment``/``to`` fields appear.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from coin.chain.chainstate import ChainState
from coin.chain.snapshot import ChainSnapshot
from coin.mempool.pool import Mempool
from coin.mempool.rbf import rbf_state
from coin.primitives.address import Destination, encode_address, try_decode_address
from coin.primitives.hashes import hash_to_hex
from coin.script.standard import TX_MULTISIG, destination_script, extract_destinations, solve
from coin.views.amounts import amount_to_json
from coin.views.script import describe_address
from coin.wallet.addresses import p2pkh_address
from coin.wallet.keystore import ISMINE_SPENDABLE, ISMINE_WATCH_ONLY
from coin.wallet.wallet import Output, Wallet, WalletTx

def bip125_replaceable(wtx: WalletTx, depth: int, pool: Mempool) -> str:
    """Core's IsRBFOptIn as gettransaction reports it: "yes", "no" or "unknown"."""
    return "no" if depth > 0 else rbf_state(pool, wtx.tx)


def wallet_tx_fields(wallet: Wallet, wtx: WalletTx, chain: ChainState | ChainSnapshot,
                     pool: Mempool) -> Dict[str, Any]:
    """Core's WalletTxToJSON: confirmations, block or trust, txid, conflicts, times."""
    depth = wallet.depth(wtx)
    out: Dict[str, Any] = {"confirmations": depth}
    if wtx.tx.is_coinbase():
        out["generated"] = True
    if depth > 0:
        out["blockhash"] = hash_to_hex(wtx.block.hash)
        out["blockindex"] = wtx.block.index
        out["blocktime"] = chain.lookup(wtx.block.hash).time
    else:
        out["trusted"] = wallet.is_trusted(wtx)
    out["txid"] = wtx.tx.txid_hex
    out["walletconflicts"] = [hash_to_hex(t) for t in wallet.conflicts(wtx)]
    out["time"] = wtx.time_received
    out["timereceived"] = wtx.time_received
    out["bip125-replaceable"] = bip125_replaceable(wtx, depth, pool)
    # Core's mapValue entries, by key: bumpfee's replaced_by_txid and replaces_txid.
    for key, other in sorted(wallet.tx_values.get(wtx.txid, {}).items()):
        out[key] = hash_to_hex(other)
    return out


def _watch_only_address(wallet: Wallet, address: Optional[str]) -> bool:
    """Core's ``IsMine(wallet, destination) & ISMINE_WATCH_ONLY``."""
    if address is None:
        return False
    destination = try_decode_address(address, wallet.params)
    return bool(wallet.is_mine(destination_script(destination)) & ISMINE_WATCH_ONLY)


def _category(wallet: Wallet, wtx: WalletTx, depth: int) -> str:
    if not wtx.tx.is_coinbase():
        return "receive"
    if depth < 1:
        return "orphan"
    return "immature" if wallet.blocks_to_maturity(wtx) > 0 else "generate"


def transaction_entries(wallet: Wallet, wtx: WalletTx, min_depth: int, long: bool,
                        filter_: int, chain: ChainState | ChainSnapshot,
                        pool: Mempool) -> List[Dict[str, Any]]:
    """Core 0.17's ListTransactions for one wallet transaction (all accounts)."""
    received, sent, fee = wallet.amounts(wtx, filter_)
    involves_watch_only = wallet.debit(wtx.tx, ISMINE_WATCH_ONLY) > 0
    fields = wallet_tx_fields(wallet, wtx, chain, pool) if long else {}
    entries: List[Dict[str, Any]] = []
    for address, value, n in sent:
        entry: Dict[str, Any] = {}
        if involves_watch_only or _watch_only_address(wallet, address):
            entry["involvesWatchonly"] = True
        if address is not None:
            entry["address"] = address
        entry["category"] = "send"
        entry["amount"] = amount_to_json(-value)
        label = wallet.label_of(address) if address is not None else None
        if label is not None:
            entry["label"] = label
        entry["vout"] = n
        entry["fee"] = amount_to_json(-fee)
        entry.update(fields)
        entry["abandoned"] = wtx.abandoned
        entries.append(entry)
    depth = wallet.depth(wtx)
    if received and depth >= min_depth:
        category = _category(wallet, wtx, depth)
        for address, value, n in received:
            entry = {}
            if involves_watch_only or _watch_only_address(wallet, address):
                entry["involvesWatchonly"] = True
            if address is not None:
                entry["address"] = address
            entry["category"] = category
            entry["amount"] = amount_to_json(value)
            label = wallet.label_of(address) if address is not None else None
            if label is not None:
                entry["label"] = label
            entry["vout"] = n
            entry.update(fields)
            entries.append(entry)
    return entries


def gettransaction_json(wallet: Wallet, wtx: WalletTx, filter_: int,
                        chain: ChainState | ChainSnapshot, pool: Mempool) -> Dict[str, Any]:
    """gettransaction: net amount, fee (own spends), WalletTxToJSON, details, hex."""
    tx = wtx.tx
    # Core's GetCredit counts nothing of an immature (or orphaned) coinbase.
    credit = 0 if wallet.blocks_to_maturity(wtx) > 0 else wallet.credit(tx, filter_)
    debit = wallet.debit(tx, filter_)
    fee = tx.total_out() - debit if debit > 0 else 0
    out: Dict[str, Any] = {"amount": amount_to_json(credit - debit - fee)}
    if debit > 0:
        out["fee"] = amount_to_json(fee)
    out.update(wallet_tx_fields(wallet, wtx, chain, pool))
    out["details"] = transaction_entries(wallet, wtx, 0, False, filter_, chain, pool)
    out["hex"] = tx.serialize().hex()
    return out


def unspent_json(wallet: Wallet, coin: Output) -> Dict[str, Any]:
    """One listunspent entry (Core 0.17's order; redeemScript for known P2SH scripts)."""
    script = coin.txout.script_pubkey
    out: Dict[str, Any] = {"txid": hash_to_hex(coin.wtx.txid), "vout": coin.n}
    address = wallet.address_of(script)
    if address is not None:
        out["address"] = address
        label = wallet.label_of(address)
        if label is not None:
            out["label"] = label
        destination = try_decode_address(address, wallet.params)
        if destination.kind == "scripthash":
            redeem = wallet.keys.get_script(destination.hash160)
            if redeem is not None:
                out["redeemScript"] = redeem.hex()
    out["scriptPubKey"] = script.hex()
    out["amount"] = amount_to_json(coin.txout.value)
    out["confirmations"] = coin.depth
    out["spendable"] = coin.spendable
    out["solvable"] = coin.solvable
    out["safe"] = coin.safe
    return out


def received_json(address: str, label: str, amount: int, confirmations: Optional[int],
                  txids: List[bytes], watch_only: bool) -> Dict[str, Any]:
    """One listreceivedbyaddress entry (Core 0.17 still shows ``account``)."""
    out: Dict[str, Any] = {"involvesWatchonly": True} if watch_only else {}
    out["address"] = address
    out.update(received_by_label_json(label, amount, confirmations, False))
    out["txids"] = [hash_to_hex(t) for t in txids]
    return out


def received_by_label_json(label: str, amount: int, confirmations: Optional[int],
                           watch_only: bool) -> Dict[str, Any]:
    """One listreceivedbylabel entry (with ``account``, as listreceivedbyaddress's)."""
    out: Dict[str, Any] = {"involvesWatchonly": True} if watch_only else {}
    out.update({"account": label, "amount": amount_to_json(amount),
                "confirmations": confirmations if confirmations is not None else 0,
                "label": label})
    return out


def hex160(key_id: bytes) -> str:
    """A Hash160 id (hdseedid, hdmasterkeyid) as Core's uint160::GetHex prints it: reversed."""
    return key_id[::-1].hex()


def wallet_info_json(wallet: Wallet) -> Dict[str, Any]:
    """getwalletinfo's object."""
    info = wallet.info()
    result: Dict[str, Any] = {
        "walletname": info["walletname"], "walletversion": info["walletversion"],
        "balance": amount_to_json(info["balance"]),
        "unconfirmed_balance": amount_to_json(info["unconfirmed_balance"]),
        "immature_balance": amount_to_json(info["immature_balance"]),
        "txcount": info["txcount"], "keypoololdest": info["keypoololdest"],
        "keypoolsize": info["keypoolsize"],
        "keypoolsize_hd_internal": info["keypoolsize_hd_internal"]}
    if wallet.keys.encrypted:
        result["unlocked_until"] = info["unlocked_until"] or 0
    result["paytxfee"] = amount_to_json(info["paytxfee"])
    if info["hdmasterkeyid"] is not None:
        result["hdmasterkeyid"] = hex160(info["hdmasterkeyid"])
    return result


def _describe_destination(wallet: Wallet, destination: Destination) -> Dict[str, Any]:
    """Core's DescribeWalletAddressVisitor."""
    result: Dict[str, Any] = dict(describe_address(destination))
    if destination.kind == "pubkeyhash":
        pubkey = wallet.keys.by_hash.get(destination.hash160)
        if pubkey is not None:
            result["pubkey"] = pubkey.hex()
            result["iscompressed"] = len(pubkey) == 33
    else:
        redeem = wallet.keys.scripts.get(destination.hash160)
        if redeem is not None:
            result.update(_describe_subscript(wallet, redeem))
    return result


def _describe_subscript(wallet: Wallet, script: bytes) -> Dict[str, Any]:
    """Core's ProcessSubScript (with the legacy ``addresses`` list)."""
    kind, solutions = solve(script)
    result: Dict[str, Any] = {"script": kind, "hex": script.hex()}
    addresses: List[str] = []
    dest_kind, destinations, _ = extract_destinations(script)
    if dest_kind != TX_MULTISIG and len(destinations) == 1:
        embedded_dest = destinations[0]
        embedded = _describe_destination(wallet, embedded_dest)
        address = encode_address(embedded_dest, wallet.params)
        embedded["address"] = address
        embedded["scriptPubKey"] = script.hex()
        if "pubkey" in embedded:
            result["pubkey"] = embedded["pubkey"]
        result["embedded"] = embedded
        addresses.append(address)
    elif kind == TX_MULTISIG:
        result["sigsrequired"] = solutions[0][0]
        keys = solutions[1:-1]
        addresses.extend(p2pkh_address(wallet, key) for key in keys)
        result["pubkeys"] = [key.hex() for key in keys]
    result["addresses"] = addresses
    return result


def address_info_json(wallet: Wallet, destination: Destination) -> Dict[str, Any]:
    """getaddressinfo's object."""
    address = encode_address(destination, wallet.params)
    script = destination_script(destination)
    mine = wallet.is_mine(script)
    result: Dict[str, Any] = {"address": address, "scriptPubKey": script.hex(),
                              "ismine": bool(mine & ISMINE_SPENDABLE),
                              "iswatchonly": bool(mine & ISMINE_WATCH_ONLY)}
    result.update(_describe_destination(wallet, destination))
    entry = wallet.names.get(address)
    if entry is not None:
        result["label"] = entry[0]
    if destination.kind == "pubkeyhash":
        pubkey = wallet.keys.by_hash.get(destination.hash160)
        record = wallet.keys.keys.get(pubkey) if pubkey is not None else None
        if record is not None:
            result["timestamp"] = record.created
            seed_id = wallet.keys.hd_master_key_id
            if record.hd_path and seed_id is not None:
                result["hdkeypath"] = record.hd_path
                result["hdseedid"] = hex160(seed_id)
                result["hdmasterkeyid"] = hex160(seed_id)
    result["labels"] = [] if entry is None else [{"name": entry[0], "purpose": entry[1]}]
    return result
