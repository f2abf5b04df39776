"""The PSBT (BIP174) methods of Core 0.17: createpsbt, decodepsbt, combinepsbt,
finalizepsbt, converttopsbt (rawtransactions) and walletprocesspsbt,
walletcreatefundedpsbt (wallet).

Registered through the ``coin.rpc`` entry point ``psbt``.  The data structure and
its strict parsing live in :mod:`coin.primitives.psbt`, signing and finalizing in
:mod:`coin.script.psbtsign`; the wallet signs with its own key store.
"""

from __future__ import annotations

import struct
from typing import Any, Dict, List, Optional, Tuple

from coincurve import PrivateKey

from coin.primitives.hashes import hash160
from coin.primitives.psbt import PSBT, KeyPath, PSBTError, PSBTOutput, combine
from coin.primitives.script import SIGHASH_NAMES
from coin.primitives.transaction import Transaction
from coin.rpc.context import RPCContext
from coin.rpc.errors import RPC_DESERIALIZATION_ERROR, RPC_INVALID_PARAMETER, RPCError
from coin.rpc.methods.rawtransactions import (
    _CREATE_HELP, _chain, createrawtransaction, createrawtransaction_, decode_transaction, sighash_type,
)
from coin.rpc.methods.wallet.spending import fund_transaction
from coin.rpc.registry import ANY, ARR, BOOL, INT64, STR, Arg, RPCMethod, example_cli, rpc_method
from coin.script.psbtsign import finalize_psbt, keys_looked_up, sign_psbt_input
from coin.script.sighash import SIGHASH_ALL, SighashCache
from coin.script.standard import TX_SCRIPTHASH, p2pk_script, solve
from coin.views.amounts import amount_to_json
from coin.views.script import decodescript_json, script_sig_json
from coin.views.transaction import tx_json
from coin.wallet.addresses import ensure_unlocked
from coin.wallet.hd import ExtKey, parse_path
from coin.wallet.keystore import WalletLocked

def decode_psbt(text: str) -> PSBT:
    """Core's DecodePSBT as the RPC reports it (-22)."""
    try:
        return PSBT.from_base64(text)
    except PSBTError as e:
        raise RPCError(RPC_DESERIALIZATION_ERROR, "TX decode failed " + str(e)) from None


# ------------------------------------------------------------------ createpsbt

_ARGUMENTS = _CREATE_HELP[_CREATE_HELP.index("Arguments:"):_CREATE_HELP.index("Result:")]


def createpsbt_(ctx: RPCContext, inputs: Any, outputs: Any, locktime: Optional[int],
                replaceable: Optional[bool]) -> str:
    hex_tx = createrawtransaction_(ctx, inputs, outputs, locktime, replaceable)
    return PSBT(Transaction.from_hex(hex_tx)).to_base64()


createpsbt = RPCMethod(
    name="createpsbt", category="rawtransactions", handler=createpsbt_,
    args=createrawtransaction.args,
    help_text=(
        'createpsbt [{"txid":"id","vout":n},...] [{"address":amount},{"data":"hex"},...] '
        "( locktime ) ( replaceable )\n\n"
        "Creates a transaction in the Partially Signed Transaction format.\n"
        "Implements the Creator role.\n\n" + _ARGUMENTS
        + 'Result:\n  "psbt"        (string)  The resulting raw transaction (base64-encoded string)\n'
        "\nExamples:\n"
        + example_cli("createpsbt", '"[{\\"txid\\":\\"myid\\",\\"vout\\":0}]" '
                                    '"[{\\"data\\":\\"00010203\\"}]"')))


# ------------------------------------------------------------------ decodepsbt

def _keypaths_json(paths: Dict[bytes, KeyPath]) -> List[Dict[str, str]]:
    """0.17's bip32_derivs: an array by pubkey, the fingerprint's bytes in hex and the path."""
    result = []
    for pubkey, path in sorted(paths.items()):
        steps = "".join("/%d'" % (i & 0x7FFFFFFF) if i & 0x80000000 else "/%d" % i
                        for i in path[1:])
        result.append({"pubkey": pubkey.hex(),
                       "master_fingerprint": struct.pack("<I", path[0]).hex(),
                       "path": "m" + steps})
    return result


def _unknown_json(unknown: Dict[bytes, bytes]) -> Dict[str, str]:
    return {key.hex(): value.hex() for key, value in sorted(unknown.items())}


def _script_json(ctx: RPCContext, script: bytes) -> Dict[str, Any]:
    """Core's ScriptToUniv without the P2SH address: asm, hex, type."""
    described = decodescript_json(script, _chain(ctx).params)
    return {"asm": described["asm"], "hex": script.hex(), "type": described["type"]}


def _map_json(ctx: RPCContext, entry: Dict[str, Any], redeem_script: bytes,
              keypaths: Dict[bytes, KeyPath], unknown: Dict[bytes, bytes],
              final_script_sig: bytes = b"") -> Dict[str, Any]:
    """The fields input and output maps share, after ``entry``'s, in Core's key order."""
    result = dict(entry)
    if redeem_script:
        result["redeem_script"] = _script_json(ctx, redeem_script)
    if keypaths:
        result["bip32_derivs"] = _keypaths_json(keypaths)
    if final_script_sig:
        result["final_scriptSig"] = script_sig_json(final_script_sig)
    if unknown:
        result["unknown"] = _unknown_json(unknown)
    return result


_REDEEM_HELP = ('      "redeem_script" : {       (json object, optional)\n'
                '          "asm" : "asm",            (string) The asm\n'
                '          "hex" : "hex",            (string) The hex\n'
                '          "type" : "pubkeyhash",    (string) The type, eg \'pubkeyhash\'\n'
                "        }\n")
_UNKNOWN_HELP = ('      "unknown" : {                (json object) The unknown global fields\n'
                 '        "key" : "value"            (key-value pair) An unknown key-value pair\n'
                 "         ...\n"
                 "      },\n")


@rpc_method(
    "decodepsbt", category="rawtransactions",
    args=[Arg("psbt", STR, typecheck=True, help="The PSBT base64 string")],
    help="Return a JSON object representing the serialized, base64-encoded partially signed "
         "Bitcoin transaction.",
    result=("{\n"
            '  "tx" : { ... },                (json object) The decoded network-serialized '
            "unsigned transaction.\n"
            '  "unknown" : {                (json object) The unknown global fields\n'
            '    "key" : "value"            (key-value pair) An unknown key-value pair\n'
            "     ...\n"
            "  },\n"
            '  "inputs" : [                 (array of json objects)\n'
            "    {\n"
            '      "non_witness_utxo" : { ... },   (json object, optional) Decoded network '
            "transaction for non-witness UTXOs\n"
            '      "partial_signatures" : {             (json object, optional)\n'
            '        "pubkey" : "signature",           (string) The public key and signature '
            "that corresponds to it.\n"
            "        ,...\n"
            "      }\n"
            '      "sighash" : "type",                  (string, optional) The sighash type to '
            "be used\n"
            + _REDEEM_HELP +
            '      "bip32_derivs" : {          (json object, optional)\n'
            '        "pubkey" : {                     (json object, optional) The public key '
            "with the derivation path as the value.\n"
            '          "master_fingerprint" : "fingerprint"     (string) The fingerprint of the '
            "master key\n"
            '          "path" : "path",                         (string) The path\n'
            "        }\n"
            "        ,...\n"
            "      }\n"
            '      "final_scriptsig" : {       (json object, optional)\n'
            '          "asm" : "asm",            (string) The asm\n'
            '          "hex" : "hex",            (string) The hex\n'
            "        }\n"
            + _UNKNOWN_HELP +
            "    }\n"
            "    ,...\n"
            "  ]\n"
            '  "outputs" : [                 (array of json objects)\n'
            "    {\n"
            + _REDEEM_HELP +
            '      "bip32_derivs" : [          (array of json objects, optional)\n'
            "        {\n"
            '          "pubkey" : "pubkey",                     (string) The public key this '
            "path corresponds to\n"
            '          "master_fingerprint" : "fingerprint"     (string) The fingerprint of the '
            "master key\n"
            '          "path" : "path",                         (string) The path\n'
            "          }\n"
            "        }\n"
            "        ,...\n"
            "      ],\n"
            + _UNKNOWN_HELP +
            "    }\n"
            "    ,...\n"
            "  ]\n"
            '  "fee" : fee                      (numeric, optional) The transaction fee paid if '
            "all UTXOs slots in the PSBT have been filled.\n"
            "}"),
    examples=example_cli("decodepsbt", '"psbt"'))
def decodepsbt(ctx: RPCContext, psbt: str) -> Dict[str, Any]:
    decoded = decode_psbt(psbt)
    params = _chain(ctx).params
    result: Dict[str, Any] = {"tx": tx_json(decoded.tx, params, include_hex=False),
                              "unknown": _unknown_json(decoded.unknown)}
    inputs: List[Dict[str, Any]] = []
    total_in: Optional[int] = 0
    for index, inp in enumerate(decoded.inputs):
        entry: Dict[str, Any] = {}
        if inp.non_witness_utxo is not None:
            entry["non_witness_utxo"] = tx_json(inp.non_witness_utxo, params, include_hex=False)
        spent = decoded.spent_output(index)
        total_in = None if spent is None or total_in is None else total_in + spent.value
        if inp.partial_sigs:
            entry["partial_signatures"] = {k.hex(): v.hex() for k, v in sorted(inp.partial_sigs.items())}
        if inp.sighash is not None and inp.sighash > 0:
            entry["sighash"] = SIGHASH_NAMES.get(inp.sighash, "")
        inputs.append(_map_json(ctx, entry, inp.redeem_script, inp.keypaths, inp.unknown,
                                inp.final_script_sig))
    result["inputs"] = inputs
    result["outputs"] = [_map_json(ctx, {}, out.redeem_script, out.keypaths, out.unknown)
                         for out in decoded.outputs]
    if total_in is not None:
        result["fee"] = amount_to_json(total_in - decoded.tx.total_out())
    return result


# ------------------------------------------------------------------ combine, finalize, convert

@rpc_method(
    "combinepsbt", category="rawtransactions",
    args=[Arg("txs", ARR, typecheck=True, help=(
        "A json array of base64 strings of partially signed transactions\n"
        "     [\n"
        '       "psbt"             (string) A base64 string of a PSBT\n'
        "       ,...\n"
        "     ]"))],
    help="Combine multiple partially signed Bitcoin transactions into one transaction.\n"
         "Implements the Combiner role.",
    result='  "psbt"          (string) The base64-encoded partially signed transaction',
    examples=example_cli("combinepsbt", '["mybase64_1", "mybase64_2", "mybase64_3"]'))
def combinepsbt(ctx: RPCContext, txs: List[Any]) -> str:
    psbts = [decode_psbt(_PSBT_ITEM.convert(text)) for text in txs]
    if not psbts:
        raise RPCError(RPC_INVALID_PARAMETER, "Parameter 'txs' cannot be empty")
    try:
        return combine(psbts).to_base64()
    except PSBTError as e:
        raise RPCError(RPC_INVALID_PARAMETER, str(e)) from None


_PSBT_ITEM = Arg("psbt", STR)


@rpc_method(
    "finalizepsbt", category="rawtransactions",
    args=[Arg("psbt", STR, typecheck=True, help="A base64 string of a PSBT"),
          Arg("extract", BOOL, default=True, typecheck=True, help=(
              "If true and the transaction is complete,\n"
              "                             extract and return the complete transaction in "
              "normal network serialization instead of the PSBT."))],
    help="Finalize the inputs of a PSBT. If the transaction is fully signed, it will produce a\n"
         "network serialized transaction which can be broadcast with sendrawtransaction. "
         "Otherwise a PSBT will be\ncreated which has the final_scriptSig and "
         "final_scriptWitness fields filled for inputs that are complete.\n"
         "Implements the Finalizer and Extractor roles.",
    result=("{\n"
            '  "psbt" : "value",          (string) The base64-encoded partially signed '
            "transaction if not extracted\n"
            '  "hex" : "value",           (string) The hex-encoded network transaction if '
            "extracted\n"
            '  "complete" : true|false,   (boolean) If the transaction has a complete set of '
            "signatures\n"
            "  ]\n"
            "}"),
    examples=example_cli("finalizepsbt", '"psbt"'))
def finalizepsbt(ctx: RPCContext, psbt: str, extract: Optional[bool]) -> Dict[str, Any]:
    decoded = decode_psbt(psbt)
    complete = finalize_psbt(decoded)
    if complete and extract is not False:
        return {"hex": decoded.extract().serialize().hex(), "complete": True}
    return {"psbt": decoded.to_base64(), "complete": complete}


@rpc_method(
    "converttopsbt", category="rawtransactions",
    args=[Arg("hexstring", STR, typecheck=True, help="The hex string of a raw transaction"),
          Arg("permitsigdata", BOOL, default=False, typecheck=True, help=(
              "If true, any signatures in the input will be discarded and conversion.\n"
              "                              will continue. If false, RPC will fail if any "
              "signatures are present.")),
          Arg("iswitness", BOOL, default=None, typecheck=True, help=(
              "Accepted for compatibility; this chain has no witness serialization, so it "
              "does not change the result"))],
    help="Converts a network serialized transaction to a PSBT. This should be used only with "
         "createrawtransaction and fundrawtransaction\ncreatepsbt and walletcreatefundedpsbt "
         "should be used for new applications.",
    result='  "psbt"        (string)  The resulting raw transaction (base64-encoded string)',
    examples=("\nCreate a transaction\n"
              + example_cli("createrawtransaction",
                            '"[{\\"txid\\":\\"myid\\",\\"vout\\":0}]" "[{\\"data\\":\\"00010203\\"}]"')
              + "\nConvert the transaction to a PSBT\n"
              + example_cli("converttopsbt", '"rawtransaction"')))
def converttopsbt(ctx: RPCContext, hexstring: str, permitsigdata: Optional[bool],
                  iswitness: Optional[bool]) -> str:
    tx = decode_transaction(hexstring)
    if not permitsigdata and any(txin.script_sig for txin in tx.vin):
        raise RPCError(RPC_DESERIALIZATION_ERROR, "Inputs must not have scriptSigs and scriptWitnesses")
    return PSBT.from_transaction(tx).to_base64()


# ------------------------------------------------------------------ wallet

class _PublicOnly:
    """The wallet's scripts without its keys (walletprocesspsbt with sign=false)."""

    def __init__(self, keys: Any) -> None:
        self._keys = keys

    def get_key(self, key_hash: bytes) -> Optional[Tuple[PrivateKey, bytes]]:
        return None

    def get_script(self, script_hash: bytes) -> Optional[bytes]:
        script: Optional[bytes] = self._keys.get_script(script_hash)
        return script


class _KeyOrigins:
    """Core 0.17's AddKeypathToMap for one wallet: (master fingerprint, path...) of its keys.

    An HD key gets the fingerprint of the master key of the wallet's seed, which takes the
    seed (so an encrypted wallet must be unlocked: -13; Core would print a fingerprint of
    an empty seed there); any other key gets the first bytes of its own hash, as Core.
    A key of an earlier seed (the seed changes when a wallet is encrypted) is left out:
    this wallet keeps only its current seed, so that key's origin is unknown.
    """

    def __init__(self, keys: Any) -> None:
        self._keys = keys
        self._master: Optional[ExtKey] = None

    def pubkey_of(self, key_or_hash: bytes) -> Optional[bytes]:
        """The wallet's key for a key hash or a key, its own or a watched one (Core's
        GetPubKey; a watched key is found by itself, not by its hash)."""
        if len(key_or_hash) == 20:
            pubkey: Optional[bytes] = self._keys.by_hash.get(key_or_hash)
            return pubkey
        known = key_or_hash in self._keys.keys or p2pk_script(key_or_hash) in self._keys.watch
        return key_or_hash if known else None

    def origin(self, pubkey: bytes) -> Optional[KeyPath]:
        record = self._keys.keys.get(pubkey)
        if record is None or not record.hd_path:
            if self.pubkey_of(pubkey) is None:
                return None
            return (struct.unpack("<I", hash160(pubkey)[:4])[0],)
        if self._master is None:
            if self._keys.locked:
                raise WalletLocked()
            seed = self._keys.seed_secret()
            if seed is None:
                return None
            self._master = ExtKey.from_seed(seed)
        path = parse_path(record.hd_path)
        if self._master.derive_path(path).pubkey != pubkey:
            return None
        return (struct.unpack("<I", self._master.fingerprint)[0],) + tuple(path)

    def add(self, paths: Dict[bytes, KeyPath], pubkeys: List[bytes]) -> None:
        """Each key's origin, where ``paths`` has none yet (Core's emplace)."""
        for pubkey in pubkeys:
            if pubkey not in paths:
                origin = self.origin(pubkey)
                if origin is not None:
                    paths[pubkey] = origin


def fill_psbt(ctx: RPCContext, psbt: PSBT, hash_type: int, sign: bool, bip32derivs: bool) -> bool:
    """Core 0.17's FillPSBT: add the wallet's UTXOs and scripts, sign when asked, and with
    ``bip32derivs`` the key origins of the wallet's keys in inputs and outputs."""
    wallet = ctx.wallet
    keystore = wallet.keys if sign else _PublicOnly(wallet.keys)
    origins = _KeyOrigins(wallet.keys)
    cache = SighashCache(psbt.tx)
    complete = True
    with wallet.lock:
        for index, (txin, inp) in enumerate(zip(psbt.tx.vin, psbt.inputs, strict=True)):
            if inp.is_final():
                continue
            if sign and inp.sighash is not None and inp.sighash > 0 and inp.sighash != hash_type:
                raise RPCError(RPC_DESERIALIZATION_ERROR,
                               "Specified Sighash and sighash in PSBT do not match.")
            wtx = wallet.txs.get(txin.prevout.txid)
            if wtx is not None and inp.non_witness_utxo is None:
                inp.non_witness_utxo = wtx.tx
            signed_before = set(inp.partial_sigs)
            complete = sign_psbt_input(psbt, index, keystore, hash_type, cache) and complete
            spent = psbt.spent_output(index)
            # A final input is written without key origins (Core), so it needs none.
            if bip32derivs and spent is not None and not inp.is_final():
                origins.add(inp.keypaths, keys_looked_up(
                    spent.script_pubkey, inp.redeem_script, keystore, origins.pubkey_of,
                    signed_before, inp.partial_sigs))
        for txout, out in zip(psbt.tx.vout, psbt.outputs, strict=True):
            _fill_output(wallet.keys, origins if bip32derivs else None, txout.script_pubkey, out)
    return complete


def _fill_output(keys: Any, origins: Optional[_KeyOrigins], script_pubkey: bytes,
                 out: PSBTOutput) -> None:
    """An output's redeem script (and key origins) from the wallet, so that a signer can
    recognise change, as Core 0.17 fills them."""
    kind, solutions = solve(script_pubkey)
    if kind == TX_SCRIPTHASH and not out.redeem_script:
        out.redeem_script = keys.get_script(solutions[0]) or b""
    if origins is None:
        return
    origins.add(out.keypaths, keys_looked_up(script_pubkey, out.redeem_script, keys,
                                             origins.pubkey_of, (), _Signable(keys)))


class _Signable:
    """The keys the wallet can sign with now: which keys of a multisig Core's
    ProduceSignature gets through before it has enough signatures."""

    def __init__(self, keys: Any) -> None:
        self._keys = keys

    def __contains__(self, pubkey: object) -> bool:
        return not self._keys.locked and isinstance(pubkey, bytes) and self._keys.have_secret(pubkey)


_WALLET_PSBT_RESULT = ("{\n"
                       '  "psbt" : "value",          (string) The base64-encoded partially signed '
                       "transaction\n"
                       '  "complete" : true|false,   (boolean) If the transaction has a complete '
                       "set of signatures\n"
                       "  ]\n"
                       "}")
_BIP32DERIVS_HELP = ("If true, includes the BIP 32 derivation paths for public keys if we know "
                     "them")


@rpc_method(
    "walletprocesspsbt", category="wallet", needs_wallet=True,
    args=[Arg("psbt", STR, typecheck=True, help="The transaction base64 string"),
          Arg("sign", BOOL, default=True, typecheck=True,
              help="Also sign the transaction when updating"),
          Arg("sighashtype", STR, default="ALL", typecheck=True, help=(
              "The signature hash type to sign with if not specified by the PSBT. Must be one "
              'of\n       "ALL"\n       "NONE"\n       "SINGLE"\n       "ALL|ANYONECANPAY"\n'
              '       "NONE|ANYONECANPAY"\n       "SINGLE|ANYONECANPAY"')),
          Arg("bip32derivs", BOOL, default=False, typecheck=True, help=_BIP32DERIVS_HELP)],
    help="Update a PSBT with input information from our wallet and then sign inputs\n"
         "that we can sign for.",
    result=_WALLET_PSBT_RESULT,
    examples=example_cli("walletprocesspsbt", '"psbt"'))
def walletprocesspsbt(ctx: RPCContext, psbt: str, sign: Optional[bool],
                      sighashtype: Optional[str], bip32derivs: Optional[bool]) -> Dict[str, Any]:
    decoded = decode_psbt(psbt)
    hash_type = sighash_type(sighashtype)
    if sign is not False:
        ensure_unlocked(ctx.wallet)
    complete = fill_psbt(ctx, decoded, hash_type, sign is not False, bip32derivs is True)
    return {"psbt": decoded.to_base64(), "complete": complete}


@rpc_method(
    "walletcreatefundedpsbt", category="wallet", needs_wallet=True,
    signature='walletcreatefundedpsbt [{"txid":"id","vout":n},...] '
              '[{"address":amount},{"data":"hex"},...] ( locktime ) ( replaceable ) ( options '
              'bip32derivs )',
    args=[Arg("inputs", ANY, help=_ARGUMENTS.split('1. "inputs"', 1)[1].split('2. "outputs"')[0]
              .strip()),
          Arg("outputs", ANY, help="a json array with outputs (key-value pairs), as createpsbt"),
          Arg("locktime", INT64, default=None, typecheck=True, help=(
              "Raw locktime. Non-0 value also locktime-activates inputs")),
          Arg("options", ANY, default=None, help=(
              "as fundrawtransaction's options, and\n"
              '     "replaceable"            (boolean, optional) Marks this transaction as '
              "BIP125 replaceable.")),
          Arg("bip32derivs", BOOL, default=False, typecheck=True, help=_BIP32DERIVS_HELP)],
    help="Creates and funds a transaction in the Partially Signed Transaction format. Inputs "
         "will be added if supplied inputs are not enough\nImplements the Creator and Updater "
         "roles.",
    result=("{\n"
            '  "psbt": "value",        (string)  The resulting raw transaction (base64-encoded '
            "string)\n"
            '  "fee":       n,         (numeric) Fee in COIN the resulting transaction pays\n'
            '  "changepos": n          (numeric) The position of the added change output, or -1\n'
            "}"),
    examples=("\nCreate a transaction with no inputs\n"
              + example_cli("walletcreatefundedpsbt",
                            '"[{\\"txid\\":\\"myid\\",\\"vout\\":0}]" "[{\\"data\\":\\"00010203\\"}]"')))
async def walletcreatefundedpsbt(ctx: RPCContext, inputs: Any, outputs: Any,
                                 locktime: Optional[int], options: Any,
                                 bip32derivs: Optional[bool]) -> Dict[str, Any]:
    replaceable = options.get("replaceable") if isinstance(options, dict) else None
    tx = Transaction.from_hex(createrawtransaction_(ctx, inputs, outputs, locktime, replaceable))
    funded, fee, change_pos = await fund_transaction(ctx, tx, options)
    psbt = PSBT.from_transaction(funded)
    fill_psbt(ctx, psbt, SIGHASH_ALL, False, bip32derivs is True)
    return {"psbt": psbt.to_base64(), "fee": amount_to_json(fee), "changepos": change_pos}


#: What the ``psbt`` entry point registers.
METHODS = [createpsbt, decodepsbt, combinepsbt, finalizepsbt, converttopsbt, walletprocesspsbt,
           walletcreatefundedpsbt]
