"""Standard output templates: recognise (Core's Solver), build, and extract destinations.

Type names are Core's GetTxnOutputType strings ("pubkey", "pubkeyhash",
"scripthash", "multisig", "nulldata", "nonstandard"), which RPC shows as-is.
"""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple, TypeGuard

from coin.primitives import script as s
from coin.primitives.address import Destination
from coin.primitives.hashes import hash160
from coin.primitives.script import (
    ScriptParseError,
    is_p2sh,
    is_push_only,
    iter_script,
    push_data,
    push_int,
)

TX_PUBKEY = "pubkey"
TX_PUBKEYHASH = "pubkeyhash"
TX_SCRIPTHASH = "scripthash"
TX_MULTISIG = "multisig"
TX_NULL_DATA = "nulldata"
TX_NONSTANDARD = "nonstandard"

#: Core's default -datacarriersize: the whole nulldata script, OP_RETURN included.
MAX_OP_RETURN_RELAY = 83
#: Bare multisig outputs larger than this are not standard.
MAX_STANDARD_MULTISIG_KEYS = 3


def _is_small_int(op: int) -> bool:
    return op == s.OP_0 or s.OP_1 <= op <= s.OP_16


def _is_pubkey_push(data: Optional[bytes]) -> TypeGuard[bytes]:
    return data is not None and 33 <= len(data) <= 65


def solve(script_pubkey: bytes) -> Tuple[str, List[bytes]]:
    """Classify an output script; return ``(type, solutions)``.

    Solutions: ``[pubkey]``, ``[hash160]``, ``[script_hash]``, multisig
    ``[bytes([m]), pubkey..., bytes([n])]``, nulldata and nonstandard ``[]``.
    Matching is Core's: any push opcode may carry the template's data, and a
    multisig "pubkey" is any 33..65-byte push.
    """
    if is_p2sh(script_pubkey):
        return TX_SCRIPTHASH, [script_pubkey[2:22]]
    if script_pubkey[:1] == bytes((s.OP_RETURN,)) and is_push_only(script_pubkey, 1):
        return TX_NULL_DATA, []
    try:
        ops = list(iter_script(script_pubkey))
    except ScriptParseError:
        return TX_NONSTANDARD, []
    n_ops = len(ops)
    if n_ops == 2 and ops[1][0] == s.OP_CHECKSIG and _is_pubkey_push(ops[0][1]):
        return TX_PUBKEY, [ops[0][1]]
    if (n_ops == 5 and ops[0][0] == s.OP_DUP and ops[1][0] == s.OP_HASH160
            and ops[2][1] is not None and len(ops[2][1]) == 20
            and ops[3][0] == s.OP_EQUALVERIFY and ops[4][0] == s.OP_CHECKSIG):
        return TX_PUBKEYHASH, [ops[2][1]]
    if (n_ops >= 3 and ops[-1][0] == s.OP_CHECKMULTISIG
            and _is_small_int(ops[0][0]) and _is_small_int(ops[-2][0])):
        keys = [data for _, data, _ in ops[1:-2] if _is_pubkey_push(data)]
        m = s.decode_op_n(ops[0][0])
        n = s.decode_op_n(ops[-2][0])
        if len(keys) == n == n_ops - 3 and 1 <= m <= n:
            return TX_MULTISIG, [bytes((m,))] + keys + [bytes((n,))]
    return TX_NONSTANDARD, []


def is_standard(script_pubkey: bytes, max_datacarrier_bytes: Optional[int] = MAX_OP_RETURN_RELAY
                ) -> bool:
    """Core's IsStandard for one output script (policy, not consensus).

    Multisig is standard with at most three keys; nulldata up to
    ``max_datacarrier_bytes`` of script (None: ``-datacarrier=0``, never).
    """
    kind, solutions = solve(script_pubkey)
    if kind == TX_MULTISIG:
        return solutions[-1][0] <= MAX_STANDARD_MULTISIG_KEYS
    if kind == TX_NULL_DATA:
        return max_datacarrier_bytes is not None and len(script_pubkey) <= max_datacarrier_bytes
    return kind != TX_NONSTANDARD


def _is_valid_pubkey_size(pubkey: bytes) -> bool:
    """Core's CPubKey::IsValid: the header byte fixes the length."""
    if not pubkey:
        return False
    expected = 33 if pubkey[0] in (2, 3) else 65 if pubkey[0] in (4, 6, 7) else 0
    return len(pubkey) == expected


def extract_destinations(script_pubkey: bytes) -> Tuple[str, List[Destination], int]:
    """Core's ExtractDestinations: ``(type, destinations, required_sigs)``.

    Pay-to-pubkey maps to the key's P2PKH destination.  Scripts with no
    address (nulldata, nonstandard, keys of impossible length) give ``[]``
    and 0 required signatures.
    """
    kind, solutions = solve(script_pubkey)
    if kind == TX_PUBKEYHASH:
        return kind, [Destination("pubkeyhash", solutions[0])], 1
    if kind == TX_SCRIPTHASH:
        return kind, [Destination("scripthash", solutions[0])], 1
    if kind == TX_PUBKEY:
        if _is_valid_pubkey_size(solutions[0]):
            return kind, [Destination("pubkeyhash", hash160(solutions[0]))], 1
    elif kind == TX_MULTISIG:
        dests = [Destination("pubkeyhash", hash160(pk))
                 for pk in solutions[1:-1] if _is_valid_pubkey_size(pk)]
        if dests:
            return kind, dests, solutions[0][0]
    return kind, [], 0


# -- builders -----------------------------------------------------------------

def p2pkh_script(h160: bytes) -> bytes:
    """``OP_DUP OP_HASH160 <h160> OP_EQUALVERIFY OP_CHECKSIG``."""
    return b"\x76\xa9\x14" + h160 + b"\x88\xac"


def p2sh_script(h160: bytes) -> bytes:
    """``OP_HASH160 <h160> OP_EQUAL``."""
    return b"\xa9\x14" + h160 + b"\x87"


def p2pk_script(pubkey: bytes) -> bytes:
    """``<pubkey> OP_CHECKSIG``."""
    return push_data(pubkey) + bytes((s.OP_CHECKSIG,))


def multisig_script(m: int, pubkeys: Sequence[bytes]) -> bytes:
    """``m <pubkey>... n OP_CHECKMULTISIG``; 1 <= m <= n <= 16."""
    if not 1 <= m <= len(pubkeys) <= 16:
        raise ValueError("multisig needs 1 <= m <= n <= 16")
    return b"".join([push_int(m)] + [push_data(pk) for pk in pubkeys]
                    + [push_int(len(pubkeys)), bytes((s.OP_CHECKMULTISIG,))])


def nulldata_script(data: bytes) -> bytes:
    """``OP_RETURN <data>`` (an empty ``data`` gives a bare OP_RETURN)."""
    return bytes((s.OP_RETURN,)) + (push_data(data) if data else b"")


def destination_script(dest: Destination) -> bytes:
    """The output script paying ``dest`` (Core's GetScriptForDestination)."""
    if dest.kind == "pubkeyhash":
        return p2pkh_script(dest.hash160)
    if dest.kind == "scripthash":
        return p2sh_script(dest.hash160)
    raise ValueError("unknown destination kind %r" % (dest.kind,))
