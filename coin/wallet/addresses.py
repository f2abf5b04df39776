"""Address-level wallet operations: fresh addresses, labels, the key pool, message signing.

Each function runs with the wallet's lock held (see :func:`coin.wallet.access.in_wallet`)
and raises errors that name their RPC code (:mod:`coin.wallet.errors`).
"""

from __future__ import annotations

from typing import Optional

import coincurve

from coin.primitives.address import Destination, encode_address, try_decode_address
from coin.primitives.hashes import hash160
from coin.primitives.message import sign_message
from coin.script.standard import destination_script, p2pkh_script
from coin.wallet.errors import (
    RPC_INVALID_ADDRESS_OR_KEY, RPC_TYPE_ERROR, RPC_WALLET_ERROR, WalletError,
)
from coin.wallet.keystore import WalletLocked
from coin.wallet.wallet import PURPOSE_RECEIVE, PURPOSE_SEND, Wallet

PRIVATE_KEYS_DISABLED = "Error: Private keys are disabled for this wallet"


def ensure_unlocked(wallet: Wallet) -> None:
    """Core's EnsureWalletIsUnlocked (-13)."""
    if wallet.keys.locked:
        raise WalletLocked()


def check_can_derive(wallet: Wallet) -> None:
    """A wallet without private keys has no key pool to take addresses from (-4)."""
    if wallet.keys.private_keys_disabled:
        raise WalletError(RPC_WALLET_ERROR, PRIVATE_KEYS_DISABLED)


def p2pkh_address(wallet: Wallet, pubkey: bytes) -> str:
    return encode_address(Destination("pubkeyhash", hash160(pubkey)), wallet.params)


def new_change_address(wallet: Wallet) -> Optional[str]:
    """getrawchangeaddress: a key from the internal pool; KeypoolEmpty when none is left."""
    return wallet.address_of(wallet.new_change_script())


def set_label(wallet: Wallet, destination: Destination, label: str) -> None:
    """setlabel: a receiving entry for the wallet's own scripts, a sending one otherwise."""
    address = encode_address(destination, wallet.params)
    purpose = PURPOSE_RECEIVE if wallet.is_mine(destination_script(destination)) else PURPOSE_SEND
    wallet.set_name(address, label, purpose)


def public_key_of_address(wallet: Wallet, address: str) -> bytes:
    """Core's AddrToPubKey: the full public key the wallet knows for a P2PKH ``address``."""
    destination = try_decode_address(address, wallet.params)
    if destination is None:
        raise WalletError(RPC_INVALID_ADDRESS_OR_KEY, "Invalid address: " + address)
    if destination.kind != "pubkeyhash":
        raise WalletError(RPC_INVALID_ADDRESS_OR_KEY, "%s does not refer to a key" % address)
    pubkey = wallet.keys.by_hash.get(destination.hash160)
    if pubkey is None:
        raise WalletError(RPC_INVALID_ADDRESS_OR_KEY,
                          "no full public key for address %s" % address)
    return pubkey


def add_multisig_script(wallet: Wallet, redeem_script: bytes, label: str) -> None:
    """addmultisigaddress: the wallet learns the redeem script (its P2SH outputs become
    solvable, and its own if it holds enough keys) and files the address as sending."""
    wallet.keys.add_script(redeem_script)
    address = encode_address(Destination("scripthash", hash160(redeem_script)), wallet.params)
    wallet.set_name(address, label, PURPOSE_SEND)


def refill_keypool(wallet: Wallet, size: Optional[int]) -> None:
    """keypoolrefill: top the pool up to ``size`` (default -keypool)."""
    ensure_unlocked(wallet)
    wallet.keys.top_up(size)
    if len(wallet.keys.pool) < (size or 0):
        raise WalletError(RPC_WALLET_ERROR, "Error refreshing keypool.")


def key_of_address(wallet: Wallet, address: str, invalid: WalletError, not_a_key: WalletError,
                   unknown: WalletError) -> bytes:
    """The public key behind a P2PKH ``address`` whose secret the (unlocked) wallet holds;
    each caller words the three refusals its own way, as Core does."""
    ensure_unlocked(wallet)
    destination = try_decode_address(address, wallet.params)
    if destination is None:
        raise invalid
    if destination.kind != "pubkeyhash":
        raise not_a_key
    pubkey = wallet.keys.by_hash.get(destination.hash160)
    if pubkey is None or not wallet.keys.have_secret(pubkey):
        raise unknown
    return pubkey


def sign_message_with(wallet: Wallet, address: str, message: str) -> str:
    """signmessage: the base64 signature of ``message`` by ``address``'s key."""
    pubkey = key_of_address(wallet, address, WalletError(RPC_TYPE_ERROR, "Invalid address"),
                            WalletError(RPC_TYPE_ERROR, "Address does not refer to key"),
                            WalletError(RPC_WALLET_ERROR, "Private key not available"))
    key = coincurve.PrivateKey(wallet.keys.secret_of(pubkey))
    return sign_message(key, message, compressed=len(pubkey) == 33)


def mining_script(wallet: Wallet) -> bytes:
    """Core's GetScriptForMining: a fresh receiving key from the pool (no address-book entry)."""
    return p2pkh_script(hash160(wallet.keys.take_from_pool(internal=False)))
