"""Signing and finalizing PSBT inputs (Core 0.17's SignPSBTInput).

A signer adds a partial signature for every key it holds; the finalizer
builds the scriptSig from the partial signatures once they satisfy the
spent script (P2PK, P2PKH, bare or P2SH multisig), verifies it, and then
keeps only the final scriptSig, as Core does.
"""

from __future__ import annotations

from typing import Callable, Container, List, Optional, Protocol, Tuple

from coincurve import PrivateKey

from coin.primitives.hashes import hash160
from coin.primitives.psbt import PSBT, PSBTInput
from coin.primitives.script import push_minimal
from coin.script.flags import STANDARD_SCRIPT_VERIFY_FLAGS
from coin.script.interpreter import ScriptError, TransactionSignatureChecker, verify_script
from coin.script.sighash import SIGHASH_ALL, SighashCache
from coin.script.sign import KeyStore, create_signature
from coin.script.standard import TX_MULTISIG, TX_PUBKEY, TX_PUBKEYHASH, TX_SCRIPTHASH, solve


class SigningProvider(Protocol):
    """What signing needs of a key store: :class:`~coin.script.sign.KeyStore`, a wallet's."""

    def get_key(self, key_hash: bytes) -> Optional[Tuple[PrivateKey, bytes]]: ...

    def get_script(self, script_hash: bytes) -> Optional[bytes]: ...


def keys_looked_up(script_pubkey: bytes, redeem_script: bytes, provider: SigningProvider,
                   pubkey_of: Callable[[bytes], Optional[bytes]],
                   signed_before: Container[bytes], signed: Container[bytes]) -> List[bytes]:
    """The keys Core 0.17's ProduceSignature finds in the wallet while solving a script.

    Those are its SignatureData.misc_pubkeys, which walletprocesspsbt's ``bip32derivs``
    reports: the key of a P2PKH; a P2PK or multisig key unless a signature for it was
    there before (Core takes that signature without looking the key up); multisig keys
    only until enough signatures are in hand (``signed``: there before or made now).
    ``pubkey_of`` maps a key hash, or a key, to the key when the wallet has it.
    """
    kind, solutions = solve(script_pubkey)
    if kind == TX_SCRIPTHASH:
        redeem = provider.get_script(solutions[0]) or redeem_script
        if hash160(redeem) != solutions[0] or solve(redeem)[0] == TX_SCRIPTHASH:
            return []
        kind, solutions = solve(redeem)
    if kind == TX_PUBKEYHASH:
        pubkey = pubkey_of(solutions[0])
        return [] if pubkey is None else [pubkey]
    if kind == TX_PUBKEY:
        wanted = [] if solutions[0] in signed_before else [solutions[0]]
    elif kind == TX_MULTISIG:
        wanted, count = [], 0
        for candidate in solutions[1:-1]:
            if count >= solutions[0][0]:
                break
            if candidate not in signed_before:
                wanted.append(candidate)
            count += candidate in signed
    else:
        return []
    return [pubkey for pubkey in wanted if pubkey_of(pubkey) is not None]


def _pubkeys(script: bytes) -> List[bytes]:
    """The keys that may sign ``script`` (a pubkey hash resolves through the keystore)."""
    kind, solutions = solve(script)
    if kind == TX_PUBKEY:
        return [solutions[0]]
    if kind == TX_MULTISIG:
        return solutions[1:-1]
    return []


def _stack(script: bytes, inp: PSBTInput) -> Optional[List[bytes]]:
    """scriptSig items satisfying ``script`` from the partial signatures, or None."""
    kind, solutions = solve(script)
    if kind == TX_PUBKEY:
        sig = inp.partial_sigs.get(solutions[0])
        return None if sig is None else [sig]
    if kind == TX_PUBKEYHASH:
        for pubkey, sig in inp.partial_sigs.items():
            if hash160(pubkey) == solutions[0]:
                return [sig, pubkey]
        return None
    if kind == TX_MULTISIG:
        required = solutions[0][0]
        sigs = [inp.partial_sigs[k] for k in solutions[1:-1] if k in inp.partial_sigs][:required]
        return [b""] + sigs if len(sigs) == required else None
    return None


def _sign(script: bytes, inp: PSBTInput, keystore: SigningProvider, psbt: PSBT, index: int,
          hash_type: int, cache: SighashCache) -> None:
    """Add a partial signature for each key of ``script`` that ``keystore`` holds."""
    kind, solutions = solve(script)
    if kind == TX_PUBKEYHASH:
        entry = keystore.get_key(solutions[0])
        keys = [] if entry is None else [entry[1]]
    else:
        keys = _pubkeys(script)
    for pubkey in keys:
        entry = keystore.get_key(hash160(pubkey))
        if entry is not None and pubkey not in inp.partial_sigs:
            inp.partial_sigs[pubkey] = create_signature(entry[0], script, psbt.tx, index,
                                                        hash_type, cache)


def sign_psbt_input(psbt: PSBT, index: int, keystore: SigningProvider, hash_type: int = SIGHASH_ALL,
                    cache: Optional[SighashCache] = None) -> bool:
    """Sign input ``index`` with what ``keystore`` holds and finalize it when complete.

    Returns whether the input now carries a final scriptSig that verifies.
    An empty keystore only finalizes (finalizepsbt).
    """
    inp = psbt.inputs[index]
    spent = psbt.spent_output(index)
    if spent is None:
        return False
    cache = cache or SighashCache(psbt.tx)
    checker = TransactionSignatureChecker(psbt.tx, index, cache)
    if inp.is_final():
        return _verifies(inp.final_script_sig, spent.script_pubkey, checker)
    script = spent.script_pubkey
    kind, solutions = solve(script)
    suffix: List[bytes] = []
    if kind == TX_SCRIPTHASH:
        redeem = inp.redeem_script or keystore.get_script(solutions[0]) or b""
        if hash160(redeem) != solutions[0]:
            return False
        inp.redeem_script = redeem
        script, suffix = redeem, [redeem]
    if inp.sighash is None or inp.sighash == hash_type:
        _sign(script, inp, keystore, psbt, index, hash_type, cache)
    items = _stack(script, inp)
    if items is None:
        return False
    script_sig = b"".join(push_minimal(item) for item in items + suffix)
    if not _verifies(script_sig, spent.script_pubkey, checker):
        return False
    inp.finalize(script_sig)
    return True


def _verifies(script_sig: bytes, script_pubkey: bytes, checker: TransactionSignatureChecker) -> bool:
    try:
        verify_script(script_sig, script_pubkey, STANDARD_SCRIPT_VERIFY_FLAGS, checker)
    except ScriptError:
        return False
    return True


def finalize_psbt(psbt: PSBT) -> bool:
    """Finalize every input that can be; whether all now are (Core's FinalizePSBT)."""
    empty = KeyStore()
    cache = SighashCache(psbt.tx)
    results = [sign_psbt_input(psbt, i, empty, SIGHASH_ALL, cache) for i in range(len(psbt.inputs))]
    return all(results)
