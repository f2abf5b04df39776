"""The proposal fee: a transaction burning the fee in ``OP_RETURN <object hash>``."""

from __future__ import annotations

from typing import Optional

from coin.chainparams import COIN, MAX_MONEY
from coin.governance.object import (
    OBJECT_PROPOSAL, OBJECT_TRIGGER, OBJECT_WATCHDOG, GovernanceObject, txin_text,
)
from coin.governance.params import GovernanceParams
from coin.primitives.hashes import hash_to_hex
from coin.primitives.transaction import Transaction

OP_RETURN = 0x6A
#: Fewer confirmations than this and the object is refused outright (MIN_RELAY_FEE_CONFIRMATIONS).
MIN_RELAY_FEE_CONFIRMATIONS = 1


class CollateralError(ValueError):
    """The fee transaction does not pay for the object; ``str()`` is the reference's text.

    ``missing_confirmations``: the transaction is good but not yet deep enough, and the
    object may be kept aside until it is (the reference's fMissingConfirmations).
    """

    def __init__(self, message: str, missing_confirmations: bool = False) -> None:
        super().__init__(message)
        self.missing_confirmations = missing_confirmations


def minimum_fee(object_type: int, params: GovernanceParams) -> int:
    """What the object must burn: the proposal fee; nothing for masternode-signed objects."""
    if object_type == OBJECT_PROPOSAL:
        return params.proposal_fee
    if object_type in (OBJECT_TRIGGER, OBJECT_WATCHDOG):
        return 0
    return MAX_MONEY


def burn_script(object_hash: bytes) -> bytes:
    """``OP_RETURN <32-byte object hash>``."""
    return bytes((OP_RETURN, 32)) + object_hash


def tx_text(tx: Transaction) -> str:
    """CTransaction::ToString (Dash 0.12.3's), which the reference puts in its message."""
    lines = ["CTransaction(hash=%s, ver=%d, vin.size=%d, vout.size=%d, nLockTime=%d)" % (
        hash_to_hex(tx.txid)[:10], tx.version, len(tx.vin), len(tx.vout), tx.locktime)]
    lines += ["    " + txin_text(txin) for txin in tx.vin]
    lines += ["    CTxOut(nValue=%d.%08d, scriptPubKey=%s)" % (out.value // COIN, out.value % COIN,
                                                             out.script_pubkey.hex()[:30])
              for out in tx.vout]
    return "".join(line + "\n" for line in lines)


def check_collateral(obj: GovernanceObject, tx: Optional[Transaction], confirmations: int,
                     params: GovernanceParams) -> None:
    """Raise CollateralError unless ``tx`` (None: not found) burns the fee for ``obj`` and
    has ``params.fee_confirmations`` (IsCollateralValid)."""
    if tx is None:
        raise CollateralError("Can't find collateral tx %s" % hash_to_hex(obj.collateral_hash))
    wanted = burn_script(obj.hash)
    fee = minimum_fee(obj.object_type, params)
    if not any(out.script_pubkey == wanted and out.value >= fee for out in tx.vout):
        raise CollateralError("Couldn't find opReturn %s in %s" % (hash_to_hex(obj.hash),
                                                                   tx_text(tx)))
    needed = params.fee_confirmations
    if confirmations < needed:
        message = ("Collateral requires at least %d confirmations to be relayed throughout the "
                   "network (it has only %d)" % (needed, confirmations))
        if confirmations >= MIN_RELAY_FEE_CONFIRMATIONS:
            raise CollateralError(message + ", pre-accepted -- waiting for required confirmations",
                                  missing_confirmations=True)
        raise CollateralError(message + ", rejected -- try again later")
