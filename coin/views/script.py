"""Scripts as JSON: output scripts (Core's ScriptPubKeyToUniv), input scripts, decodescript."""

from __future__ import annotations

from typing import Any, Dict, List, NamedTuple, Tuple

from coin.chainparams import ChainParams
from coin.primitives.address import Destination, encode_address
from coin.primitives.hashes import hash160
from coin.primitives.script import script_to_asm
from coin.script.standard import TX_PUBKEYHASH, TX_SCRIPTHASH, extract_destinations


class _Template(NamedTuple):
    """A one-address output script: its bytes around the hash, how it prints, its type."""

    prefix: bytes
    suffix: bytes
    asm: str
    kind: str


#: P2PKH and P2SH (nearly every output) by length: read without parsing the script, with
#: the same result as the general path (tests check it).
_TEMPLATES: Dict[int, _Template] = {
    25: _Template(b"\x76\xa9\x14", b"\x88\xac", "OP_DUP OP_HASH160 %s OP_EQUALVERIFY OP_CHECKSIG",
                  TX_PUBKEYHASH),
    23: _Template(b"\xa9\x14", b"\x87", "OP_HASH160 %s OP_EQUAL", TX_SCRIPTHASH),
}


def _parsed(script_pubkey: bytes) -> Tuple[str, str, List[Destination], int]:
    """``(asm, type, destinations, required signatures)`` of any output script."""
    kind, destinations, required = extract_destinations(script_pubkey)
    return script_to_asm(script_pubkey), kind, destinations, required


def _described(script_pubkey: bytes) -> Tuple[str, str, List[Destination], int]:
    """:func:`_parsed`, without parsing for the templates."""
    template = _TEMPLATES.get(len(script_pubkey))
    if (template is None or not script_pubkey.startswith(template.prefix)
            or not script_pubkey.endswith(template.suffix)):
        return _parsed(script_pubkey)
    h160 = script_pubkey[len(template.prefix):-len(template.suffix)]
    return template.asm % h160.hex(), template.kind, [Destination(template.kind, h160)], 1


def script_pubkey_json(script_pubkey: bytes, params: ChainParams,
                       include_hex: bool = True) -> Dict[str, Any]:
    """``{asm, hex, reqSigs, type, addresses}``; scripts without an address
    (nulldata, nonstandard, unusable keys) give only ``{asm, hex, type}``."""
    asm, kind, destinations, required = _described(script_pubkey)
    out: Dict[str, Any] = {"asm": asm}
    if include_hex:
        out["hex"] = script_pubkey.hex()
    if not destinations:
        out["type"] = kind
        return out
    out["reqSigs"] = required
    out["type"] = kind
    out["addresses"] = [encode_address(d, params) for d in destinations]
    return out


def script_sig_json(script_sig: bytes) -> Dict[str, str]:
    """``{asm, hex}`` of an input script; signatures show their hash type (``…[ALL]``)."""
    return {"asm": script_to_asm(script_sig, decode_sighash=True), "hex": script_sig.hex()}


def decodescript_json(script: bytes, params: ChainParams) -> Dict[str, Any]:
    """Core 0.17's decodescript: the script's view without hex, plus ``p2sh``,
    the address paying to it, unless it already is a P2SH script."""
    out = script_pubkey_json(script, params, include_hex=False)
    if out["type"] != TX_SCRIPTHASH:
        out["p2sh"] = encode_address(Destination("scripthash", hash160(script)), params)
    return out


def describe_address(destination: Destination) -> Dict[str, bool]:
    """Core 0.17's DescribeAddress: ``isscript``, and ``iswitness`` (always false: this
    chain has no segregated witness, but Core-era clients read it)."""
    return {"isscript": destination.kind == "scripthash", "iswitness": False}
