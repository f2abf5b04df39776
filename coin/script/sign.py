"""Signing inputs that spend the standard templates (Core's ProduceSignature).

Signatures are RFC 6979 deterministic and low-S (libsecp256k1 via coincurve),
DER-encoded with the hashtype byte appended.  Every produced scriptSig is
checked with the interpreter under the standard flags, so ``complete`` means
"this input now verifies", not merely "a signature was made".
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple, Union

from coincurve import PrivateKey
from coincurve._libsecp256k1 import ffi, lib

from coin.primitives.hashes import hash160
from coin.primitives.script import push_data, push_minimal
from coin.primitives.transaction import Transaction, TxIn
from coin.script.flags import SCRIPT_VERIFY_STRICTENC, STANDARD_SCRIPT_VERIFY_FLAGS
from coin.script.interpreter import (
    BaseSignatureChecker, ScriptError, TransactionSignatureChecker, eval_script, verify_script,
)
from coin.script.sighash import (
    SIGHASH_ALL, SIGHASH_ANYONECANPAY, SIGHASH_SINGLE, SighashCache, signature_hash,
)
from coin.script.standard import (
    TX_MULTISIG,
    TX_PUBKEY,
    TX_PUBKEYHASH,
    TX_SCRIPTHASH,
    solve,
)


class KeyStore:
    """Private keys by the hash160 of their public key, redeem scripts by their hash160."""

    __slots__ = ("_keys", "_scripts")

    def __init__(self) -> None:
        self._keys: Dict[bytes, Tuple[PrivateKey, bytes]] = {}
        self._scripts: Dict[bytes, bytes] = {}

    def add_key(self, key: Union[PrivateKey, bytes], compressed: bool = True) -> bytes:
        """Add a key (object or 32-byte secret); return its serialized public key."""
        if not isinstance(key, PrivateKey):
            key = PrivateKey(key)
        pubkey = key.public_key.format(compressed)
        self._keys[hash160(pubkey)] = (key, pubkey)
        return pubkey

    def add_script(self, redeem_script: bytes) -> bytes:
        """Add a P2SH redeem script; return its hash160."""
        script_hash = hash160(redeem_script)
        self._scripts[script_hash] = redeem_script
        return script_hash

    def get_key(self, key_hash: bytes) -> Optional[Tuple[PrivateKey, bytes]]:
        """``(private key, serialized public key)`` for a pubkey hash, or None."""
        return self._keys.get(key_hash)

    def get_script(self, script_hash: bytes) -> Optional[bytes]:
        return self._scripts.get(script_hash)


def create_signature(privkey: PrivateKey, script_code: bytes, tx: Transaction, index: int,
                     hash_type: int = SIGHASH_ALL, cache: Optional[SighashCache] = None,
                     entropy: int = 0) -> bytes:
    """DER signature of input ``index`` plus the hashtype byte.

    ``entropy`` other than 0 is RFC6979's extra data (Core's CKey::Sign ``test_case``):
    another valid signature of the same message, whose encoding may be a byte shorter or
    longer (the wallet's fee settlement signs again this way)."""
    msg = signature_hash(script_code, tx, index, hash_type, cache)
    if entropy:
        nonce = (lib.secp256k1_nonce_function_rfc6979,
                 ffi.new("unsigned char[32]", entropy.to_bytes(4, "little") + bytes(28)))
        der = privkey.sign(msg, hasher=None, custom_nonce=nonce)
    else:
        der = privkey.sign(msg, hasher=None)
    return der + bytes((hash_type & 0xFF,))


def _sign_template(script: bytes, keystore: KeyStore, tx: Transaction, index: int,
                   hash_type: int, cache: SighashCache, allow_p2sh: bool = True,
                   entropy: int = 0) -> Tuple[List[bytes], bool]:
    """Stack items satisfying ``script`` (Core's SignStep) and whether all were found."""
    kind, solutions = solve(script)
    if kind == TX_PUBKEY:
        entry = keystore.get_key(hash160(solutions[0]))
        if entry is None:
            return [], False
        return [create_signature(entry[0], script, tx, index, hash_type, cache, entropy)], True
    if kind == TX_PUBKEYHASH:
        entry = keystore.get_key(solutions[0])
        if entry is None:
            return [], False
        key, pubkey = entry
        return [create_signature(key, script, tx, index, hash_type, cache, entropy), pubkey], True
    if kind == TX_MULTISIG:
        required = solutions[0][0]
        items = [b""]  # the dummy element CHECKMULTISIG pops
        for pubkey in solutions[1:-1]:
            if len(items) > required:
                break
            entry = keystore.get_key(hash160(pubkey))
            if entry is not None:
                items.append(create_signature(entry[0], script, tx, index, hash_type, cache, entropy))
        complete = len(items) > required
        # Core pads a partial signature with empty ones, so CHECKMULTISIG can still check
        # (and combinerawtransaction find) the signatures it has.
        return items + [b""] * (required + 1 - len(items)), complete
    if kind == TX_SCRIPTHASH and allow_p2sh:
        redeem_script = keystore.get_script(solutions[0])
        if redeem_script is None:
            return [], False
        items, complete = _sign_template(redeem_script, keystore, tx, index, hash_type,
                                         cache, allow_p2sh=False, entropy=entropy)
        return items + [redeem_script], complete
    return [], False


def sign_transaction(tx: Transaction, spent_script_pubkeys: Sequence[bytes], keystore: KeyStore,
                     hash_type: int = SIGHASH_ALL, entropy: int = 0) -> Tuple[Transaction, bool]:
    """Sign every input we hold keys for; return ``(new_tx, all_inputs_complete)``.
    ``entropy``: as :func:`create_signature`'s.

    ``spent_script_pubkeys[i]`` is the output script input ``i`` spends.  An
    input that cannot be completed keeps its existing scriptSig when it has
    one (partial signatures are not merged); otherwise it gets whatever
    partial signature could be made.
    """
    if len(spent_script_pubkeys) != len(tx.vin):
        raise ValueError("need one spent scriptPubKey per input")
    cache = SighashCache(tx)
    new_vin = []
    all_complete = True
    for index, (txin, script_pubkey) in enumerate(zip(tx.vin, spent_script_pubkeys, strict=True)):
        items, _ = _sign_template(script_pubkey, keystore, tx, index, hash_type, cache,
                                  entropy=entropy)
        script_sig = b"".join(push_minimal(item) for item in items)
        try:
            verify_script(script_sig, script_pubkey, STANDARD_SCRIPT_VERIFY_FLAGS,
                          TransactionSignatureChecker(tx, index, cache))
            complete = True
        except ScriptError:
            complete = False
            if txin.script_sig:
                script_sig = txin.script_sig
        all_complete = all_complete and complete
        new_vin.append(TxIn(txin.prevout, script_sig, txin.sequence))
    signed = Transaction(new_vin, tx.vout, tx.locktime, tx.version, tx.tx_type,
                         tx.extra_payload)
    return signed, all_complete


def sign_p2pkh_input(tx: Transaction, index: int, privkey: PrivateKey, script_pubkey: bytes,
                     hash_type: int = SIGHASH_ALL,
                     cache: Optional[SighashCache] = None) -> bytes:
    """scriptSig ``<sig> <pubkey>`` for a P2PKH input, without solving or verifying.

    For chain builders and benchmarks; the key's compressed or uncompressed
    form is chosen to match the hash in ``script_pubkey``.
    """
    key_hash = script_pubkey[3:23]
    pubkey = privkey.public_key.format(True)
    if hash160(pubkey) != key_hash:
        pubkey = privkey.public_key.format(False)
        if hash160(pubkey) != key_hash:
            raise ValueError("key does not match the P2PKH script")
    sig = create_signature(privkey, script_pubkey, tx, index, hash_type, cache)
    return push_data(sig) + push_data(pubkey)


def sign_and_verify(tx: Transaction, spent: Sequence[Optional[bytes]], keystore: KeyStore,
                    hash_type: int = SIGHASH_ALL) -> Tuple[Transaction, List[Tuple[int, str]]]:
    """Core 0.17's SignTransaction: sign what ``keystore`` can, then verify every input.

    ``spent[i]`` is the script input ``i`` spends, None when that output is unknown.
    Returns the signed transaction and, per input that does not verify, its index and
    Core's reason (the RPC shows them as its ``errors``).
    """
    single = hash_type & ~SIGHASH_ANYONECANPAY == SIGHASH_SINGLE
    # Only sign SIGHASH_SINGLE when there is a corresponding output (Core).
    scripts = [b"" if script is None or (single and i >= len(tx.vout)) else script
               for i, script in enumerate(spent)]
    signed, _ = sign_transaction(tx, scripts, keystore, hash_type)
    cache = SighashCache(signed)
    failures = []
    for index, script in enumerate(spent):
        if script is None:
            failures.append((index, "Input not found or already spent"))
            continue
        try:
            verify_script(signed.vin[index].script_sig, script, STANDARD_SCRIPT_VERIFY_FLAGS,
                          TransactionSignatureChecker(signed, index, cache))
        except ScriptError as e:
            failures.append((index, "Unable to sign input, invalid stack size (possibly missing key)"
                             if e.code == "INVALID_STACK_OPERATION" else e.message))
    return signed, failures


class _SignatureExtractor(TransactionSignatureChecker):
    """A checker that keeps each signature that verifies, by its key's hash160 (Core's
    SignatureExtractorChecker): what a partially signed input's own verification finds."""

    __slots__ = ("found",)

    def __init__(self, tx: Transaction, index: int, cache: SighashCache) -> None:
        super().__init__(tx, index, cache)
        self.found: Dict[bytes, bytes] = {}

    def check_sig(self, sig: bytes, pubkey: bytes, script_code: bytes) -> bool:
        if not super().check_sig(sig, pubkey, script_code):
            return False
        self.found.setdefault(hash160(pubkey), sig)
        return True


def _extract_signatures(tx: Transaction, index: int, script_pubkey: bytes, script_sig: bytes,
                        cache: SighashCache) -> Tuple[Dict[bytes, bytes], Optional[bytes], bool]:
    """One copy's signatures by key hash, its redeem script and whether it verifies (Core's
    DataFromTransaction): what its verification checks, then its multisig signatures matched
    to the keys in order."""
    checker = _SignatureExtractor(tx, index, cache)
    try:
        verify_script(script_sig, script_pubkey, STANDARD_SCRIPT_VERIFY_FLAGS, checker)
        return checker.found, None, True
    except ScriptError:
        pass
    stack: List[bytes] = []
    try:
        eval_script(stack, script_sig, SCRIPT_VERIFY_STRICTENC, BaseSignatureChecker())
    except ScriptError:
        stack = []
    kind, solutions = solve(script_pubkey)
    script = script_pubkey
    redeem_script: Optional[bytes] = None
    if kind == TX_SCRIPTHASH and stack and stack[-1]:
        script = redeem_script = stack.pop()
        kind, solutions = solve(script)
    if kind == TX_MULTISIG:
        pubkeys = solutions[1:-1]
        first = 0
        for sig in stack:
            for i in range(first, len(pubkeys)):
                if hash160(pubkeys[i]) in checker.found or checker.check_sig(sig, pubkeys[i], script):
                    first = i + 1
                    break
    return checker.found, redeem_script, False


def combine_signatures(tx: Transaction, index: int, script_pubkey: bytes,
                       script_sigs: Sequence[bytes]) -> bytes:
    """Input ``index``'s scriptSig merged from the ``script_sigs`` of several partially signed
    copies of ``tx`` (Core 0.17's combinerawtransaction: DataFromTransaction, merge, then
    ProduceSignature without keys).

    The first copy whose scriptSig already verifies wins. Otherwise the signatures that verify
    are gathered per public key (multisig, bare or in P2SH) and put back in key order, with
    the redeem script the first copy that has one gives; a template that cannot be rebuilt
    from the gathered data gets an empty scriptSig, as in Core.
    """
    cache = SighashCache(tx)
    signatures: Dict[bytes, bytes] = {}
    redeem_script: Optional[bytes] = None
    for script_sig in script_sigs:
        found, script, complete = _extract_signatures(tx, index, script_pubkey, script_sig, cache)
        if complete:
            return script_sig
        if script is not None and redeem_script is None:
            redeem_script = script
        for key_id, signature in found.items():
            signatures.setdefault(key_id, signature)
    kind, solutions = solve(script_pubkey)
    suffix: List[bytes] = []
    if kind == TX_SCRIPTHASH:
        if redeem_script is None or hash160(redeem_script) != solutions[0]:
            return b""
        suffix = [redeem_script]
        kind, solutions = solve(redeem_script)
    if kind != TX_MULTISIG:
        return b"".join(push_minimal(item) for item in suffix)
    required = solutions[0][0]
    items = [b""]
    for pubkey in solutions[1:-1]:
        sig = signatures.get(hash160(pubkey))
        if sig is not None and len(items) <= required:
            items.append(sig)
    items += [b""] * (required + 1 - len(items))
    return b"".join(push_minimal(item) for item in items + suffix)
