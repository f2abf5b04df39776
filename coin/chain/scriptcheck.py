"""Script verification of a transaction's inputs during block connect."""

from __future__ import annotations

from typing import Sequence

from coin.consensus.errors import ValidationError
from coin.primitives.coin import Coin
from coin.primitives.transaction import Transaction
from coin.script.interpreter import ScriptError, TransactionSignatureChecker, verify_script


def verify_transaction_scripts(tx: Transaction, spent: Sequence[Coin], flags: int) -> None:
    """Verify every input of ``tx`` against the coin it spends.

    Raises ``ValidationError('mandatory-script-verify-flag-failed (...)')``
    naming the script error, as Core reports it for blocks.
    """
    for index, (txin, coin) in enumerate(zip(tx.vin, spent)):
        try:
            verify_script(txin.script_sig, coin.script_pubkey, flags,
                          TransactionSignatureChecker(tx, index))
        except ScriptError as e:
            raise ValidationError("mandatory-script-verify-flag-failed (%s)" % e.message,
                                  "input %d of %s" % (index, tx.txid_hex)) from None
