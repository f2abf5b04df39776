"""The P2PKH fast path from a transaction's bytes (coin.script.rawcheck) against the
interpreter: same verdict, same first failing input and message, on the vectors and on
random multi-input transactions."""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

from hypothesis import given
from hypothesis import strategies as st
from twisted.trial.unittest import SynchronousTestCase

from coin.chain.scriptcheck import first_script_failure, interpreter_failure
from coin.primitives.hashes import hash160
from coin.primitives.script import push_data
from coin.primitives.transaction import OutPoint, Transaction, TxIn, TxOut
from coin.script.flags import (
    SCRIPT_VERIFY_CHECKLOCKTIMEVERIFY, SCRIPT_VERIFY_CHECKSEQUENCEVERIFY, SCRIPT_VERIFY_DERSIG,
    SCRIPT_VERIFY_P2SH, STANDARD_SCRIPT_VERIFY_FLAGS, parse_flags,
)
from coin.script.interpreter import TransactionSignatureChecker, verify_script
from coin.script.rawcheck import RawSpends
from coin.script.sign import create_signature
from coin.script.sighash import (
    SIGHASH_ANYONECANPAY, SIGHASH_NONE, SIGHASH_SINGLE, serialize_script_code, signature_hash,
)
from coin.script.standard import p2pkh_script
from tests.unit.script.test_script_properties import FLAG_SETS, KEYS, p2pkh_spends
from tests.unit.script.test_script_vectors import _load, _prevout_scripts, _tx_row_skip

#: What blocks are checked with once every soft fork is active.
BLOCK_FLAGS = (SCRIPT_VERIFY_P2SH | SCRIPT_VERIFY_DERSIG | SCRIPT_VERIFY_CHECKLOCKTIMEVERIFY
               | SCRIPT_VERIFY_CHECKSEQUENCEVERIFY)


def reference_failure(tx: Transaction, scripts: Sequence[bytes],
                      flags: int) -> Optional[Tuple[int, str]]:
    """The reference: every input through the interpreter, first failure or None."""
    for index, script_pubkey in enumerate(scripts):
        message = interpreter_failure(tx, index, script_pubkey, flags)
        if message is not None:
            return index, message
    return None


@st.composite
def skeletons(draw) -> Transaction:
    """An unsigned transaction of 1-4 inputs (maybe a DIP2 special one)."""
    inputs = [TxIn(OutPoint(bytes([i + 1]) * 32, draw(st.integers(0, 3))), b"",
                   draw(st.sampled_from([0xFFFFFFFF, 0xFFFFFFFE, 7])))
              for i in range(draw(st.integers(1, 4)))]
    outputs = [TxOut(draw(st.integers(0, 10 ** 8)), b"\x51" * draw(st.integers(0, 3)))
               for _ in range(draw(st.integers(1, 3)))]
    if draw(st.booleans()):
        return Transaction(inputs, outputs, draw(st.integers(0, 500)), version=3, tx_type=5,
                           extra_payload=draw(st.binary(max_size=40)))
    return Transaction(inputs, outputs, draw(st.integers(0, 500)), version=draw(st.sampled_from([1, 2])))


@st.composite
def other_spends(draw, tx: Transaction, index: int) -> Tuple[bytes, bytes]:
    """A spend the fast path leaves to the interpreter: pay-to-pubkey, anyone-can-spend,
    or a P2PKH spend whose pushes are not both direct."""
    key = draw(st.sampled_from(KEYS))
    pubkey = key.public_key.format()
    kind = draw(st.sampled_from(["p2pk", "true", "pushdata1"]))
    if kind == "p2pk":
        script_pubkey = push_data(pubkey) + b"\xac"
        return push_data(create_signature(key, script_pubkey, tx, index)), script_pubkey
    if kind == "true":
        return b"", b"\x51"
    script_pubkey = p2pkh_script(hash160(pubkey))
    sig = create_signature(key, script_pubkey, tx, index)
    return b"\x4c" + bytes([len(sig)]) + sig + push_data(pubkey), script_pubkey


@st.composite
def signed_transactions(draw) -> Tuple[Transaction, List[bytes]]:
    """A transaction and the scripts its inputs spend: mostly P2PKH (maybe broken)."""
    skeleton = draw(skeletons())
    spends = [draw(st.one_of(p2pkh_spends(skeleton, i), other_spends(skeleton, i))
                   if draw(st.integers(0, 4)) == 0 else p2pkh_spends(skeleton, i))
              for i in range(len(skeleton.vin))]
    vin = [TxIn(txin.prevout, script_sig, txin.sequence)
           for txin, (script_sig, _) in zip(skeleton.vin, spends)]
    tx = Transaction(vin, skeleton.vout, skeleton.locktime, skeleton.version,
                     skeleton.tx_type, skeleton.extra_payload)
    return tx, [script_pubkey for _, script_pubkey in spends]


class RawCheckProperties(SynchronousTestCase):

    @given(signed_transactions(), st.one_of(FLAG_SETS, st.just(BLOCK_FLAGS)))
    def test_same_first_failure_as_the_interpreter(self, signed, flags):
        tx, scripts = signed
        expected = reference_failure(tx, scripts, flags)
        self.assertEqual(first_script_failure(tx.serialize(), scripts, flags), expected)
        self.assertEqual(first_script_failure(tx, scripts, flags), expected)

    @given(signed_transactions(), st.one_of(FLAG_SETS, st.just(BLOCK_FLAGS)))
    def test_fast_path_accepts_only_what_the_interpreter_accepts(self, signed, flags):
        tx, scripts = signed
        spends = RawSpends(tx.serialize())
        for index, script_pubkey in enumerate(scripts):
            if spends.verify_p2pkh(index, script_pubkey, flags):
                verify_script(tx.vin[index].script_sig, script_pubkey, flags,
                              TransactionSignatureChecker(tx, index))

    @given(skeletons(), st.data())
    def test_plain_spends_take_the_fast_path(self, skeleton, data):
        """Every valid SIGHASH_ALL P2PKH spend is accepted from the bytes, under the block
        flags and the standard ones but LOW_S (left to the interpreter)."""
        key = data.draw(st.sampled_from(KEYS))
        pubkey = key.public_key.format(data.draw(st.booleans()))
        script_pubkey = p2pkh_script(hash160(pubkey))
        vin = [TxIn(txin.prevout,
                    push_data(create_signature(key, script_pubkey, skeleton, i)) + push_data(pubkey),
                    txin.sequence)
               for i, txin in enumerate(skeleton.vin)]
        tx = Transaction(vin, skeleton.vout, skeleton.locktime, skeleton.version,
                         skeleton.tx_type, skeleton.extra_payload)
        spends = RawSpends(tx.serialize())
        for flags in (BLOCK_FLAGS, STANDARD_SCRIPT_VERIFY_FLAGS):
            self.assertEqual([spends.verify_p2pkh(i, script_pubkey, flags) for i in range(len(vin))],
                             [flags == BLOCK_FLAGS] * len(vin))


class RawCheckVectors(SynchronousTestCase):

    def test_sighash_all_vectors(self):
        """Core's sighash.json rows of the SIGHASH_ALL kind (any hash type whose low bits
        are neither NONE nor SINGLE, without ANYONECANPAY), hashed from the bytes."""
        checked = 0
        for row in _load("sighash.json"):
            if len(row) != 5:
                continue
            raw_tx, script_hex, index, hash_type, _ = row
            base = hash_type & 0x1F
            if hash_type & SIGHASH_ANYONECANPAY or base in (SIGHASH_NONE, SIGHASH_SINGLE):
                continue
            tx = Transaction.from_hex(raw_tx)
            script = bytes.fromhex(script_hex)
            got = RawSpends(tx.serialize()).sighash_all(index, serialize_script_code(script),
                                                        hash_type & 0xFFFFFFFF)
            self.assertEqual(got, signature_hash(script, tx, index, hash_type), row)
            checked += 1
        self.assertGreater(checked, 100)

    def test_tx_vectors_same_first_failure(self):
        """tx_valid and tx_invalid: the same verdict and message from the bytes."""
        checked = 0
        for name in ("tx_valid.json", "tx_invalid.json"):
            for row in _load(name):
                if _tx_row_skip(row):
                    continue
                prevouts = _prevout_scripts(row[0])
                tx = Transaction.from_hex(row[1])
                scripts = [prevouts[(txin.prevout.txid, txin.prevout.n)] for txin in tx.vin]
                flags = parse_flags(row[2])
                self.assertEqual(first_script_failure(tx.serialize(), scripts, flags),
                                 reference_failure(tx, scripts, flags), row)
                checked += 1
        self.assertGreater(checked, 140)
