"""Script verification of a transaction's inputs during block connect.

The same two functions run in the node and in the ``-par`` worker processes
(coin.chain.workers), so a failure reads the same wherever it was found.
"""

from __future__ import annotations

import string
from typing import Optional, Sequence, Tuple, Union

from coin.consensus.errors import ValidationError
from coin.primitives.coin import Coin
from coin.primitives.transaction import Transaction
from coin.script.interpreter import ScriptError, TransactionSignatureChecker, verify_script
from coin.script.rawcheck import RawSpends


def first_script_failure(tx: Union[Transaction, bytes], scripts: Sequence[bytes],
                         flags: int) -> Optional[Tuple[int, str]]:
    """``(input index, script error)`` of the first input of ``tx`` that fails, or None.

    ``tx`` may be the serialized transaction (a worker gets only the bytes): plain
    P2PKH spends are checked from the bytes (coin.script.rawcheck); the transaction is
    parsed only if an input needs the interpreter, which also words every failure.
    """
    raw = tx if isinstance(tx, bytes) else tx.serialize()
    spends = RawSpends(raw)
    for index, script_pubkey in enumerate(scripts):
        if spends.verify_p2pkh(index, script_pubkey, flags):
            continue
        if isinstance(tx, bytes):
            tx = Transaction.deserialize(raw)
        message = interpreter_failure(tx, index, script_pubkey, flags)
        if message is not None:
            return index, message
    return None


def interpreter_failure(tx: Transaction, index: int, script_pubkey: bytes,
                        flags: int) -> Optional[str]:
    """The interpreter's script error for input ``index`` of ``tx``, or None if it passes."""
    try:
        verify_script(tx.vin[index].script_sig, script_pubkey, flags,
                      TransactionSignatureChecker(tx, index))
    except ScriptError as e:
        return e.message
    return None


def script_failure_error(txid_hex: str, index: int, message: str) -> ValidationError:
    """The rejection Core reports for a block whose input fails its script."""
    return ValidationError("mandatory-script-verify-flag-failed (%s)" % message,
                           "input %d of %s" % (index, txid_hex))


def verify_transaction_scripts(tx: Transaction, spent: Sequence[Coin], flags: int) -> None:
    """Verify every input of ``tx`` against the coin it spends.

    Raises ``ValidationError('mandatory-script-verify-flag-failed (...)')``
    naming the script error, as Core reports it for blocks.
    """
    failure = first_script_failure(tx, [coin.script_pubkey for coin in spent], flags)
    if failure is not None:
        raise script_failure_error(tx.txid_hex, *failure)


def assume_valid_from_option(value: Optional[str], default: Optional[bytes]) -> Optional[bytes]:
    """-assumevalid as Core reads it (uint256S: hex digits up to the first other character,
    an optional 0x); unset means the chain's default, zero (or -noassumevalid) means none."""
    if value is None:
        return default
    text = value.strip()
    if text[:2].lower() == "0x":
        text = text[2:]
    digits = text[:len(text) - len(text.lstrip(string.hexdigits))][-64:]
    block_hash = bytes.fromhex(digits.rjust(64, "0"))[::-1]
    return block_hash if any(block_hash) else None
