"""Scripts as JSON: output scripts (Core's ScriptPubKeyToUniv), input scripts, decodescript."""

from __future__ import annotations

from typing import Any, Dict

from coin.chainparams import ChainParams
from coin.primitives.address import Destination, encode_address
from coin.primitives.hashes import hash160
from coin.primitives.script import script_to_asm
from coin.script.standard import TX_SCRIPTHASH, extract_destinations


def script_pubkey_json(script_pubkey: bytes, params: ChainParams,
                       include_hex: bool = True) -> Dict[str, Any]:
    """``{asm, hex, reqSigs, type, addresses}``; scripts without an address
    (nulldata, nonstandard, unusable keys) give only ``{asm, hex, type}``."""
    kind, destinations, required = extract_destinations(script_pubkey)
    out: Dict[str, Any] = {"asm": script_to_asm(script_pubkey)}
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
