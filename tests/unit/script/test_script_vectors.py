"""Core/Dash consensus vectors: script_tests, tx_valid, tx_invalid and sighash.

Every row is either applied or skipped by a named rule; the counts per rule
are printed and the number of applied rows is pinned, so a change that
quietly skips more rows fails here.
"""

from __future__ import annotations

import collections
import json
import os
from typing import Dict, List, Tuple

from twisted.trial.unittest import SynchronousTestCase

from coin.consensus.errors import ValidationError
from coin.consensus.tx_check import check_transaction
from coin.primitives.hashes import hash_to_hex
from coin.primitives.script import parse_asm, push_int
from coin.primitives.transaction import OutPoint, Transaction, TxIn, TxOut
from coin.script.flags import parse_flags
from coin.script.interpreter import ScriptError, TransactionSignatureChecker, verify_script
from coin.script.sighash import signature_hash
from tests.unit.primitives.test_primitives_tx_block import vectors_dir

# Rows the current vector files hold; update together with the files.
EXPECTED_SCRIPT_ROWS = 1077
EXPECTED_TX_VALID_ROWS = 83
EXPECTED_TX_INVALID_ROWS = 64
EXPECTED_SIGHASH_ROWS = 500


def _load(name: str) -> list:
    with open(os.path.join(vectors_dir(), name)) as f:
        return json.load(f)


def _is_comment(row: list) -> bool:
    return all(isinstance(item, str) for item in row) and len(row) == 1


def _unsupported_flags(flags_text: str) -> str:
    """Skip reason for a flag set we do not implement, or ""."""
    try:
        parse_flags(flags_text)
    except KeyError as e:
        return "unsupported flag %s" % e.args[0]
    return ""


class _Tally:
    """Counts applied and skipped rows per rule and prints them."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.counts: collections.Counter = collections.Counter()

    def skip(self, reason: str) -> bool:
        """Count the row under ``reason`` (or as applied when empty); True to skip it."""
        self.counts["skipped: " + reason if reason else "applied"] += 1
        return bool(reason)

    def report(self) -> None:
        print("\n%s: %s" % (self.name, ", ".join(
            "%s=%d" % item for item in sorted(self.counts.items()))))


def _script_row_skip(row: list) -> str:
    if _is_comment(row):
        return "comment row"
    if isinstance(row[0], list):
        return "witness row (no segwit here)"
    return _unsupported_flags(row[2])


def _tx_row_skip(row: list) -> str:
    if _is_comment(row):
        return "comment row"
    return _unsupported_flags(row[2])


def build_crediting_tx(script_pubkey: bytes) -> Transaction:
    """Core's BuildCreditingTransaction: coinbase-like, one 0-value output."""
    coinbase_in = TxIn(OutPoint(), push_int(0) + push_int(0))
    return Transaction([coinbase_in], [TxOut(0, script_pubkey)], locktime=0, version=1)


def build_spending_tx(script_sig: bytes, credit: Transaction) -> Transaction:
    """Core's BuildSpendingTransaction: spends output 0 of ``credit``."""
    return Transaction([TxIn(OutPoint(credit.txid, 0), script_sig)], [TxOut(0, b"")],
                       locktime=0, version=1)


def _run_script_row(row: list) -> str:
    """Evaluate one script_tests row; return "OK" or the error name."""
    script_sig = parse_asm(row[0])
    script_pubkey = parse_asm(row[1])
    credit = build_crediting_tx(script_pubkey)
    spend = build_spending_tx(script_sig, credit)
    try:
        verify_script(script_sig, script_pubkey, parse_flags(row[2]),
                      TransactionSignatureChecker(spend, 0))
    except ScriptError as e:
        return e.code
    return "OK"


class ScriptTestsVectors(SynchronousTestCase):

    def test_script_tests(self):
        tally = _Tally("script_tests")
        failures = []
        for row in _load("script_tests.json"):
            if tally.skip(_script_row_skip(row)):
                continue
            got = _run_script_row(row)
            if got != row[3]:
                failures.append("%r: expected %s, got %s" % (row, row[3], got))
        tally.report()
        self.assertEqual(failures, [])
        self.assertEqual(tally.counts["applied"], EXPECTED_SCRIPT_ROWS)


def _prevout_scripts(inputs: list) -> Dict[Tuple[bytes, int], bytes]:
    # Hashes are in RPC order; an index of -1 means 0xffffffff.
    return {(bytes.fromhex(h)[::-1], n & 0xFFFFFFFF): parse_asm(spk)
            for h, n, spk, *_amount in inputs}


def _check_tx_row(row: list) -> str:
    """Core's tx_valid/tx_invalid procedure; return "OK" or why it failed."""
    prevouts = _prevout_scripts(row[0])
    tx = Transaction.from_hex(row[1])
    flags = parse_flags(row[2])
    try:
        check_transaction(tx)
    except ValidationError as e:
        return "CheckTransaction: " + e.reason
    for i, txin in enumerate(tx.vin):
        key = (txin.prevout.txid, txin.prevout.n)
        if key not in prevouts:
            raise AssertionError("bad test, no prevout for input %d: %r" % (i, row))
        try:
            verify_script(txin.script_sig, prevouts[key], flags,
                          TransactionSignatureChecker(tx, i))
        except ScriptError as e:
            return "input %d: %s" % (i, e.code)
    return "OK"


class TxVectors(SynchronousTestCase):

    def _check_file(self, name: str, expect_valid: bool, expected_rows: int) -> None:
        tally = _Tally(name)
        failures = []
        for row in _load(name):
            if tally.skip(_tx_row_skip(row)):
                continue
            result = _check_tx_row(row)
            if (result == "OK") != expect_valid:
                failures.append("%s: %s (flags %s)" % (
                    hash_to_hex(Transaction.from_hex(row[1]).txid), result, row[2]))
        tally.report()
        self.assertEqual(failures, [])
        self.assertEqual(tally.counts["applied"], expected_rows)

    def test_tx_valid(self):
        self._check_file("tx_valid.json", True, EXPECTED_TX_VALID_ROWS)

    def test_tx_invalid(self):
        self._check_file("tx_invalid.json", False, EXPECTED_TX_INVALID_ROWS)


class SighashVectors(SynchronousTestCase):

    def test_sighash(self):
        tally = _Tally("sighash")
        failures: List[str] = []
        for row in _load("sighash.json"):
            if tally.skip("comment row" if _is_comment(row) else ""):
                continue
            raw_tx, script_hex, index, hash_type, expected = row
            got = signature_hash(bytes.fromhex(script_hex), Transaction.from_hex(raw_tx),
                                 index, hash_type)
            if hash_to_hex(got) != expected:
                failures.append("%r: got %s" % (row, hash_to_hex(got)))
        tally.report()
        self.assertEqual(failures, [])
        self.assertEqual(tally.counts["applied"], EXPECTED_SIGHASH_ROWS)
