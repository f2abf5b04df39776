"""Raw-transaction methods (Core 0.17's "== Rawtransactions ==").

Registered through the ``coin.rpc`` entry point ``rawtransactions``. Transaction
and script objects come from :mod:`coin.views`; amounts are read with Core's
AmountFromValue (``coin.views.amounts.parse_amount``).

``getrawtransaction`` without ``blockhash`` asks ``ChainAccess.get_transaction``:
the mempool first, then the transaction index with ``-txindex``, else (as Core
0.17 without it) a transaction that still has an unspent output in the UTXO
set.  ``sendrawtransaction`` and ``testmempoolaccept`` live with the mempool
methods (``coin.rpc.methods.mempool``).

``signrawtransactionwithkey`` and the wallet's ``signrawtransactionwithwallet``
(``coin.rpc.methods.wallet.spending``) share :func:`sign_transaction_json`, Core
0.17's SignTransaction: spent outputs come from the UTXO set and the pool (read
on the validation worker, :func:`coin.mempool.coinview.spent_outputs`), then from the
``prevtxs`` argument; :func:`coin.script.sign.sign_and_verify` signs and checks.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any, Dict, List, NamedTuple, Optional, Tuple


from coin.chain.access import ChainAccess
from coin.chainparams import ChainParams
from coin.mempool.coinview import PrevoutLookup, spent_outputs
from coin.primitives.address import AddressError, Destination, decode_wif, try_decode_address
from coin.primitives.hashes import hash_to_hex, is_hex
from coin.primitives.merkleblock import MerkleBlock
from coin.primitives.script import OP_RETURN, is_p2sh, push_data, script_to_asm
from coin.primitives.serialize import DeserializationError
from coin.primitives.transaction import CURRENT_TX_VERSION, OutPoint, Transaction, TxIn, TxOut
from coin.rpc.context import RPCContext, request_wallet
from coin.rpc.errors import (
    RPC_DESERIALIZATION_ERROR, RPC_INTERNAL_ERROR, RPC_INVALID_ADDRESS_OR_KEY, RPC_INVALID_PARAMETER,
    RPC_METHOD_DEPRECATED, RPC_METHOD_NOT_FOUND, RPC_MISC_ERROR, RPC_TYPE_ERROR, RPC_VERIFY_ERROR, RPCError,
)
from coin.rpc.params import parse_hash_v, parse_hex_v, uint256_from_hex
from coin.rpc.registry import (
    ANY, ARR, BOOL, INT, INT64, OBJ, STR, Arg, RPCMethod, amount_from_value, compose_help, example_cli,
    example_rpc, json_type_name, rpc_method,
)
from coin.script.sighash import (
    SIGHASH_ALL, SIGHASH_ANYONECANPAY, SIGHASH_NONE, SIGHASH_SINGLE,
)
from coin.script.sign import KeyStore, combine_signatures, sign_and_verify
from coin.script.standard import destination_script
from coin.views.encode import JSONView
from coin.views.script import decodescript_json
from coin.views.transaction import tx_block_fields, tx_json

#: BIP125's largest sequence that signals replaceability.
MAX_BIP125_RBF_SEQUENCE = 0xFFFFFFFD

_WALLET_HINT = ". Use gettransaction for wallet transactions."


def _chain(ctx: RPCContext) -> ChainAccess:
    return ctx.node.chain


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, Decimal)) and not isinstance(value, bool)


def decode_transaction(hexstring: str) -> Transaction:
    """Core's DecodeHexTx: the whole hex must be one transaction; -22 otherwise."""
    try:
        return Transaction.from_hex(hexstring)
    except DeserializationError:
        raise RPCError(RPC_DESERIALIZATION_ERROR, "TX decode failed") from None


# ------------------------------------------------------------------ createrawtransaction

_INPUTS = Arg("inputs", ARR, typecheck=True)
_INPUT = Arg("input", OBJ)
_OUTPUTS = Arg("outputs", ARR)
_VOUT = Arg("vout", INT)
_SEQUENCE = Arg("sequence", INT64)


def _univalue_text(value: Any) -> str:
    """UniValue's getValStr(): the text a JSON value holds ("" for null, objects, arrays)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "1" if value else ""
    return str(value) if _is_number(value) else ""


def _read_input(value: Any, rbf: bool, locktime: int) -> TxIn:
    request = _INPUT.convert(value)
    txid = parse_hash_v(request.get("txid"), "txid")
    vout = request.get("vout")
    if not _is_number(vout):
        raise RPCError(RPC_INVALID_PARAMETER, "Invalid parameter, missing vout key")
    n = _VOUT.convert(vout)
    if n < 0:
        raise RPCError(RPC_INVALID_PARAMETER, "Invalid parameter, vout must be positive")
    if rbf:
        sequence = MAX_BIP125_RBF_SEQUENCE
    else:
        sequence = 0xFFFFFFFE if locktime else 0xFFFFFFFF
    if _is_number(request.get("sequence")):
        sequence = _SEQUENCE.convert(request["sequence"])
        if not 0 <= sequence <= 0xFFFFFFFF:
            raise RPCError(RPC_INVALID_PARAMETER,
                           "Invalid parameter, sequence number is out of range")
    return TxIn(OutPoint(txid, n), b"", sequence)


def _output_pairs(outputs: Any) -> List[Tuple[str, Any]]:
    """The outputs as (key, value) pairs: an object, or an array of one-key objects."""
    if isinstance(outputs, dict):
        return list(outputs.items())
    pairs = []
    for item in _OUTPUTS.convert(outputs):
        if not isinstance(item, dict):
            raise RPCError(RPC_INVALID_PARAMETER,
                           "Invalid parameter, key-value pair not an object as expected")
        if len(item) != 1:
            raise RPCError(RPC_INVALID_PARAMETER,
                           "Invalid parameter, key-value pair must contain exactly one key")
        pairs.extend(item.items())
    return pairs


def _read_outputs(outputs: Any, params: ChainParams) -> List[TxOut]:
    result = []
    seen: set[Destination] = set()
    has_data = False
    for key, value in _output_pairs(outputs):
        if key == "data":
            if has_data:
                raise RPCError(RPC_INVALID_PARAMETER, "Invalid parameter, duplicate key: data")
            has_data = True
            data = parse_hex_v(_univalue_text(value), "Data")
            result.append(TxOut(0, bytes((OP_RETURN,)) + push_data(data)))
            continue
        destination = try_decode_address(key, params)
        if destination is None:
            raise RPCError(RPC_INVALID_ADDRESS_OR_KEY, "Invalid Coin address: " + key)
        if destination in seen:
            raise RPCError(RPC_INVALID_PARAMETER, "Invalid parameter, duplicated address: " + key)
        seen.add(destination)
        result.append(TxOut(amount_from_value(value), destination_script(destination)))
    return result


_CREATE_HELP = """\
createrawtransaction [{"txid":"id","vout":n},...] [{"address":amount},{"data":"hex"},...] ( locktime ) ( \
replaceable )

Create a transaction spending the given inputs and creating new outputs.
Outputs can be addresses or data.
Returns hex-encoded raw transaction.
Note that the transaction's inputs are not signed, and
it is not stored in the wallet or transmitted to the network.

Arguments:
1. "inputs"                (array, required) A json array of json objects
     [
       {
         "txid":"id",      (string, required) The transaction id
         "vout":n,         (numeric, required) The output number
         "sequence":n      (numeric, optional) The sequence number
       }
       ,...
     ]
2. "outputs"               (array, required) a json array with outputs (key-value pairs)
   [
    {
      "address": x.xxx,    (obj, optional) A key-value pair. The key (string) is the coin address, the \
value (float or string) is the amount in COIN
    },
    {
      "data": "hex"        (obj, optional) A key-value pair. The key must be "data", the value is hex \
encoded data
    }
    ,...                     More key-value pairs of the above form. For compatibility reasons, a \
dictionary, which holds the key-value pairs directly, is also
                             accepted as second parameter.
   ]
3. locktime                  (numeric, optional, default=0) Raw locktime. Non-0 value also \
locktime-activates inputs
4. replaceable               (boolean, optional, default=false) Marks this transaction as BIP125 replaceable.
                             Allows this transaction to be replaced by a transaction with higher fees. \
If provided, it is an error if explicit sequence numbers are incompatible.

Result:
"transaction"              (string) hex string of the transaction

Examples:
""" + (example_cli("createrawtransaction",
                   '"[{\\"txid\\":\\"myid\\",\\"vout\\":0}]" "[{\\"address\\":0.01}]"')
       + example_cli("createrawtransaction",
                     '"[{\\"txid\\":\\"myid\\",\\"vout\\":0}]" "[{\\"data\\":\\"00010203\\"}]"')
       + example_rpc("createrawtransaction",
                     '"[{\\"txid\\":\\"myid\\",\\"vout\\":0}]", "[{\\"address\\":0.01}]"')
       + example_rpc("createrawtransaction",
                     '"[{\\"txid\\":\\"myid\\",\\"vout\\":0}]", "[{\\"data\\":\\"00010203\\"}]"'))


def createrawtransaction_(ctx: RPCContext, inputs: Any, outputs: Any, locktime: Optional[int],
                          replaceable: Optional[bool]) -> str:
    """Core 0.17's ConstructTransaction, errors in its order."""
    if inputs is None or outputs is None:
        raise RPCError(RPC_INVALID_PARAMETER,
                       "Invalid parameter, arguments 1 and 2 must be non-null")
    inputs = _INPUTS.convert(inputs)
    if locktime is None:
        locktime = 0
    elif not 0 <= locktime <= 0xFFFFFFFF:
        raise RPCError(RPC_INVALID_PARAMETER, "Invalid parameter, locktime out of range")
    rbf = replaceable is True
    vin = [_read_input(value, rbf, locktime) for value in inputs]
    vout = _read_outputs(outputs, _chain(ctx).params)
    signals_rbf = any(txin.sequence < 0xFFFFFFFE for txin in vin)
    if replaceable is not None and vin and rbf != signals_rbf:
        raise RPCError(RPC_INVALID_PARAMETER, "Invalid parameter combination: Sequence "
                       "number(s) contradict replaceable option")
    return Transaction(vin, vout, locktime, CURRENT_TX_VERSION).serialize().hex()


@dataclass(frozen=True)
class _ArrayOrNull(Arg):
    """RPCTypeCheck with fAllowNull: checked in argument order, null let through (the
    handler refuses it after the other arguments are checked, as Core)."""

    def convert(self, value: Any) -> Any:
        return None if value is None else super().convert(value)


createrawtransaction = RPCMethod(
    name="createrawtransaction", category="rawtransactions", handler=createrawtransaction_,
    help_text=_CREATE_HELP,
    # Core type-checks with nulls allowed, then rejects null inputs/outputs itself.
    args=(_ArrayOrNull("inputs", ARR, typecheck=True), Arg("outputs", ANY),
          Arg("locktime", INT64, default=None, typecheck=True),
          Arg("replaceable", BOOL, default=None, typecheck=True)))


# ------------------------------------------------------------------ decoding

@rpc_method(
    "decoderawtransaction", category="rawtransactions",
    signature='decoderawtransaction "hexstring" ( iswitness )',
    args=[Arg("hexstring", STR, typecheck=True, help="The transaction hex string"),
          Arg("iswitness", BOOL, default=None, typecheck=True, help=(
              "Accepted for compatibility; this chain has no witness serialization, so it "
              "does not change the result"))],
    help="Return a JSON object representing the serialized, hex-encoded transaction.",
    result=("{\n"
            '  "txid" : "id",        (string) The transaction id\n'
            '  "hash" : "id",        (string) The transaction hash (the txid: this chain has '
            "no witness data)\n"
            '  "size" : n,           (numeric) The transaction size\n'
            '  "vsize" : n,          (numeric) The virtual transaction size (the size)\n'
            '  "version" : n,        (numeric) The version\n'
            '  "type" : n,           (numeric) The DIP2 transaction type (0 for normal ones)\n'
            '  "locktime" : ttt,     (numeric) The lock time\n'
            '  "vin" : [ ... ],      (array of json objects) The inputs\n'
            '  "vout" : [ ... ],     (array of json objects) The outputs\n'
            "}"),
    examples=example_cli("decoderawtransaction", '"hexstring"')
    + example_rpc("decoderawtransaction", '"hexstring"'))
def decoderawtransaction(ctx: RPCContext, hexstring: str, iswitness: Optional[bool]) -> Dict:
    return tx_json(decode_transaction(hexstring), _chain(ctx).params, include_hex=False)


@rpc_method(
    "decodescript", category="rawtransactions",
    args=[Arg("hexstring", STR, typecheck=True, help="the hex encoded script")],
    help="Decode a hex-encoded script.",
    result=("{\n"
            '  "asm":"asm",   (string) Script public key\n'
            '  "type":"type", (string) The output type\n'
            '  "reqSigs": n,    (numeric) The required signatures\n'
            '  "addresses": [   (json array of string)\n'
            '     "address"     (string) coin address\n'
            "     ,...\n"
            "  ],\n"
            '  "p2sh":"str"       (string) address of P2SH script wrapping this redeem script '
            "(not returned if the script is already a P2SH).\n"
            "}"),
    examples=example_cli("decodescript", '"hexstring"') + example_rpc("decodescript",
                                                                        '"hexstring"'))
def decodescript(ctx: RPCContext, hexstring: str) -> Dict:
    # An empty script is valid (and not hex by Core's rule).
    script = parse_hex_v(hexstring, "argument") if hexstring else b""
    return decodescript_json(script, _chain(ctx).params)


# ------------------------------------------------------------------ getrawtransaction

_VERBOSE = Arg("verbose", INT)
_VERBOSE_BOOL = Arg("verbose", BOOL)


def _read_verbose(value: Any) -> bool:
    """Core 0.17 (the reference node) reads a number as non-zero, anything else with
    get_bool."""
    if value is None:
        return False
    if _is_number(value):
        return _VERBOSE.convert(value) != 0
    return _VERBOSE_BOOL.convert(value)  # get_bool: -1 "... not a boolean as expected"


_GETRAW_HELP = """\
getrawtransaction "txid" ( verbose "blockhash" )

NOTE: By default this function only works for mempool transactions. If the -txindex option is
enabled, it also works for blockchain transactions. If the block which contains the transaction
is known, its hash can be provided even for nodes without -txindex. Note that if a blockhash is
provided, only that block will be searched and if the transaction is in the mempool or other
blocks, or if this node does not have the given block available, the transaction will not be found.

Return the raw transaction data.

If verbose is 'true', returns an Object with information about 'txid'.
If verbose is 'false' or omitted, returns a string that is serialized, hex-encoded data for 'txid'.

Arguments:
1. "txid"      (string, required) The transaction id
2. verbose     (bool, optional, default=false) If false, return a string, otherwise return a json object
3. "blockhash" (string, optional) The block in which to look for the transaction

Result (if verbose is not set or set to false):
"data"      (string) The serialized, hex-encoded data for 'txid'

Result (if verbose is set to true):
{
  "in_active_chain": b, (bool) Whether specified block is in the active chain or not (only present with \
explicit "blockhash" argument)
  "txid" : "id",        (string) The transaction id (same as provided)
  "hash" : "id",        (string) The transaction hash (the txid: this chain has no witness data)
  "size" : n,           (numeric) The serialized transaction size
  "vsize" : n,          (numeric) The virtual transaction size (the size)
  "version" : n,        (numeric) The version
  "type" : n,           (numeric) The DIP2 transaction type (0 for normal ones)
  "locktime" : ttt,     (numeric) The lock time
  "vin" : [ ... ],      (array of json objects) The inputs
  "vout" : [ ... ],     (array of json objects) The outputs
  "hex" : "data",       (string) The serialized, hex-encoded data for 'txid'
  "blockhash" : "hash",   (string) the block hash
  "height" : n,           (numeric) the block height (-1 off the active chain)
  "confirmations" : n,    (numeric) The confirmations
  "time" : ttt,           (numeric) The transaction time in seconds since epoch (Jan 1 1970 GMT)
  "blocktime" : ttt       (numeric) The block time in seconds since epoch (Jan 1 1970 GMT)
}

Examples:
""" + (example_cli("getrawtransaction", '"mytxid"') + example_cli("getrawtransaction", '"mytxid" true')
       + example_rpc("getrawtransaction", '"mytxid", true')
       + example_cli("getrawtransaction", '"mytxid" false "myblockhash"')
       + example_cli("getrawtransaction", '"mytxid" true "myblockhash"'))


async def getrawtransaction_(ctx: RPCContext, txid: Any, verbose: Any, blockhash: Any) -> Any:
    chain = _chain(ctx)
    tx_hash = parse_hash_v(txid, "parameter 1")
    if tx_hash == chain.params.genesis.txs[0].txid:
        raise RPCError(RPC_INVALID_ADDRESS_OR_KEY, "The genesis block coinbase is not "
                       "considered an ordinary transaction and cannot be retrieved")
    verbose = _read_verbose(verbose)
    if blockhash is None:
        found = await chain.get_transaction(tx_hash)
        if found is None:
            txindex = chain.txindex
            if txindex is None:
                message = ("No such mempool transaction. Use -txindex to enable blockchain "
                           "transaction queries")
            elif not txindex.synced:
                message = ("No such mempool transaction. Blockchain transactions are still in "
                           "the process of being indexed")
            else:
                message = "No such mempool or blockchain transaction"
            raise RPCError(RPC_INVALID_ADDRESS_OR_KEY, message + _WALLET_HINT)
        tx, found_entry = found
        if not verbose:
            return tx.serialize().hex()
        if found_entry is None:
            return tx_json(tx, chain.params)
        return tx_json(tx, chain.params, **tx_block_fields(found_entry, chain.snapshot()))
    view = chain.snapshot()
    entry = view.lookup(parse_hash_v(blockhash, "parameter 3"))
    if entry is None:
        raise RPCError(RPC_INVALID_ADDRESS_OR_KEY, "Block hash not found")
    if not entry.have_data():
        raise RPCError(RPC_MISC_ERROR, "Block not available")
    block = await chain.read_block(entry)
    tx = next((tx for tx in block.txs if tx.txid == tx_hash), None)
    if tx is None:
        raise RPCError(RPC_INVALID_ADDRESS_OR_KEY,
                       "No such transaction found in the provided block" + _WALLET_HINT)
    if not verbose:
        return tx.serialize().hex()
    return JSONView(in_active_chain=view.contains(entry),
                    **tx_json(tx, chain.params, **tx_block_fields(entry, view)))


getrawtransaction = RPCMethod(
    name="getrawtransaction", category="rawtransactions", handler=getrawtransaction_,
    help_text=_GETRAW_HELP,
    # Hashes are read by ParseHashV, which names non-strings in its own message.
    args=(Arg("txid", ANY), Arg("verbose", ANY, default=None),
          Arg("blockhash", ANY, default=None)))


# ------------------------------------------------------------------ combinerawtransaction

_HEXSTRING = Arg("hexstring", STR)


@rpc_method(
    "combinerawtransaction", category="rawtransactions",
    signature='combinerawtransaction ["hexstring",...]',
    args=[Arg("txs", ARR, help=(
        "A json array of hex strings of partially signed transactions\n"
        "    [\n"
        '      "hexstring"     (string) A transaction hash\n'
        "      ,...\n"
        "    ]"))],
    help=("Combine multiple partially signed transactions into one transaction.\n"
          "The combined transaction may be another partially signed transaction or a \n"
          "fully signed transaction."),
    result='"hex"            (string) The hex-encoded raw transaction with signature(s)',
    examples=example_cli("combinerawtransaction", '["myhex1", "myhex2", "myhex3"]'))
async def combinerawtransaction(ctx: RPCContext, txs: List[Any]) -> str:
    """Core 0.17: the first transaction, each input's signatures merged from every copy that
    has the input; the spent outputs come from the UTXO set and the pool."""
    variants = []
    for index, value in enumerate(txs):
        try:
            variants.append(Transaction.from_hex(_HEXSTRING.convert(value)))
        except DeserializationError:
            raise RPCError(RPC_DESERIALIZATION_ERROR, "TX decode failed for tx %d" % index) from None
    if not variants:
        raise RPCError(RPC_DESERIALIZATION_ERROR, "Missing transactions")
    merged = variants[0]
    chain = _chain(ctx)
    keys = [(txin.prevout.txid, txin.prevout.n) for txin in merged.vin]
    view = await chain.call(spent_outputs, chain.mempool, keys, None)
    vin = []
    for index, (txin, key) in enumerate(zip(merged.vin, keys)):
        spent = view.get(key)
        if spent is None:
            raise RPCError(RPC_VERIFY_ERROR, "Input not found or already spent")
        script_sigs = [tx.vin[index].script_sig for tx in variants if len(tx.vin) > index]
        vin.append(TxIn(txin.prevout, combine_signatures(merged, index, spent[0], script_sigs),
                        txin.sequence))
    return Transaction(vin, merged.vout, merged.locktime, merged.version, merged.tx_type,
                       merged.extra_payload).serialize().hex()


# ------------------------------------------------------------------ merkle proofs

_GETTXOUTPROOF_HELP = """\
gettxoutproof ["txid",...] ( blockhash )

Returns a hex-encoded proof that "txid" was included in a block.

NOTE: By default this function only works sometimes. This is when there is an
unspent output in the utxo for this transaction. To make it always work,
you need to maintain a transaction index, using the -txindex command line option or
specify the block in which the transaction is included manually (by blockhash).

Arguments:
1. "txids"       (string) A json array of txids to filter
    [
      "txid"     (string) A transaction hash
      ,...
    ]
2. "blockhash"   (string, optional) If specified, looks for txid in the block with this hash

Result:
"data"           (string) A string that is a serialized, hex-encoded data for the proof.
"""

_TXID = Arg("txid", STR)


def _read_txids(txids: List[Any]) -> Tuple[List[bytes], bytes]:
    """The distinct txids asked for, and the last one (Core's oneTxid)."""
    found: List[bytes] = []
    for value in txids:
        text = _TXID.convert(value)
        if len(text) != 64 or not is_hex(text):
            raise RPCError(RPC_INVALID_PARAMETER, "Invalid txid " + text)
        txid = bytes.fromhex(text)[::-1]
        if txid in found:
            raise RPCError(RPC_INVALID_PARAMETER, "Invalid parameter, duplicated txid: " + text)
        found.append(txid)
    return found, found[-1] if found else b"\x00" * 32


async def gettxoutproof_(ctx: RPCContext, txids: List[Any], blockhash: Optional[str]) -> str:
    """Core 0.17: the block is the one named, else that of an unspent output of one of the
    txids, else (-txindex) the indexed block of the last txid."""
    chain = _chain(ctx)
    wanted, last = _read_txids(txids)
    view = chain.snapshot()
    entry = None
    if blockhash is not None:
        entry = view.lookup(uint256_from_hex(blockhash))
        if entry is None:
            raise RPCError(RPC_INVALID_ADDRESS_OR_KEY, "Block not found")
    else:
        for txid in sorted(wanted):
            entry = await chain.block_of_unspent(txid)
            if entry is not None:
                break
    if entry is None:
        found = await chain.get_transaction(last)
        if found is None or found[1] is None:
            raise RPCError(RPC_INVALID_ADDRESS_OR_KEY, "Transaction not yet in block")
        entry = found[1]
    if not entry.have_data():
        raise RPCError(RPC_INTERNAL_ERROR, "Can't read block from disk")
    block = await chain.read_block(entry)
    if sum(tx.txid in wanted for tx in block.txs) != len(wanted):
        raise RPCError(RPC_INVALID_ADDRESS_OR_KEY,
                       "Not all transactions found in specified or retrieved block")
    return MerkleBlock.of_block(block, set(wanted)).serialize().hex()


gettxoutproof = RPCMethod(
    name="gettxoutproof", category="blockchain", handler=gettxoutproof_,
    help_text=_GETTXOUTPROOF_HELP,
    args=(Arg("txids", ARR), Arg("blockhash", STR, default=None)))


def read_merkle_block(proof: Any) -> MerkleBlock:
    """A hex proof as Core reads it: -8 for bad hex, -1 (the stream's error) when it is short."""
    try:
        return MerkleBlock.deserialize(parse_hex_v(proof, "proof"))
    except DeserializationError:
        raise RPCError(RPC_MISC_ERROR, "CDataStream::read(): end of data: iostream error") from None


_VERIFYTXOUTPROOF_HELP = """\
verifytxoutproof "proof"

Verifies that a proof points to a transaction in a block, returning the transaction it commits to
and throwing an RPC error if the block is not in our best chain

Arguments:
1. "proof"    (string, required) The hex-encoded proof generated by gettxoutproof

Result:
["txid"]      (array, strings) The txid(s) which the proof commits to, or empty array if the proof \
can not be validated.
"""


def verifytxoutproof_(ctx: RPCContext, proof: Any) -> List[str]:
    """Core 0.17: an empty list for a proof whose tree does not give its header's root, the
    matched txids when its block is in the active chain with as many transactions."""
    merkle_block = read_merkle_block(proof)
    root, matched = merkle_block.tree.extract_matches()
    if root != merkle_block.header.merkle_root:
        return []
    view = _chain(ctx).snapshot()
    entry = view.lookup(merkle_block.header.hash)
    if entry is None or not view.contains(entry) or entry.tx_count == 0:
        raise RPCError(RPC_INVALID_ADDRESS_OR_KEY, "Block not found in chain")
    if entry.tx_count != merkle_block.tree.tx_count:
        return []
    return [hash_to_hex(txid) for _, txid in matched]


verifytxoutproof = RPCMethod(
    name="verifytxoutproof", category="blockchain", handler=verifytxoutproof_,
    help_text=_VERIFYTXOUTPROOF_HELP,
    # Read by ParseHexV, which answers -8 for a non-string too.
    args=(Arg("proof", ANY),))


# ------------------------------------------------------------------ signing


def check_object(obj: Dict[str, Any], expected: Dict[str, Optional[str]], allow_null: bool = False,
                 strict: bool = False) -> None:
    """Core's RPCTypeCheckObj: each key has the JSON type named (None: any), else -3.

    Core's map of expected keys is a std::map, so the keys are checked in sorted order
    (``scriptPubKey`` before ``txid`` before ``vout``), whatever order they are given in.
    """
    for key in sorted(expected):
        kind = expected[key]
        value = obj.get(key)
        if value is None and not allow_null:
            raise RPCError(RPC_TYPE_ERROR, "Missing %s" % key)
        if kind is not None and value is not None and json_type_name(value) != kind:
            raise RPCError(RPC_TYPE_ERROR, "Expected type %s for %s, got %s"
                           % (kind, key, json_type_name(value)))
    if strict:
        for key in obj:
            if key not in expected:
                raise RPCError(RPC_TYPE_ERROR, "Unexpected key %s" % key)


_SIGHASH_TYPES = {
    "ALL": SIGHASH_ALL, "ALL|ANYONECANPAY": SIGHASH_ALL | SIGHASH_ANYONECANPAY,
    "NONE": SIGHASH_NONE, "NONE|ANYONECANPAY": SIGHASH_NONE | SIGHASH_ANYONECANPAY,
    "SINGLE": SIGHASH_SINGLE, "SINGLE|ANYONECANPAY": SIGHASH_SINGLE | SIGHASH_ANYONECANPAY,
}
_PREVTX_FIELDS = {"txid": "string", "vout": "number", "scriptPubKey": "string"}
_PREVTX_VOUT = Arg("vout", INT)
_PREVTX_AMOUNT = Arg("amount", ANY)

Key = Tuple[bytes, int]


class PrevTx(NamedTuple):
    """One entry of the ``prevtxs`` argument."""

    key: Key
    script_pubkey: bytes
    amount: int
    redeem_script: Optional[bytes]


def _read_prevtxs(prevtxs: Optional[List[Any]]) -> List[PrevTx]:
    result = []
    for item in prevtxs or ():
        if not isinstance(item, dict):
            raise RPCError(RPC_DESERIALIZATION_ERROR,
                           "expected object with {\"txid'\",\"vout\",\"scriptPubKey\"}")
        check_object(item, _PREVTX_FIELDS)
        txid = parse_hash_v(item["txid"], "txid")
        n = _PREVTX_VOUT.convert(item["vout"])
        if n < 0:
            raise RPCError(RPC_DESERIALIZATION_ERROR, "vout must be positive")
        script = parse_hex_v(item["scriptPubKey"], "scriptPubKey")
        amount = amount_from_value(item["amount"]) if "amount" in item else 0
        redeem = None
        if is_p2sh(script):
            check_object(item, {"redeemScript": "string"}, allow_null=True)
            if item.get("redeemScript") is not None:
                redeem = parse_hex_v(item["redeemScript"], "redeemScript")
        result.append(PrevTx((txid, n), script, amount, redeem))
    return result


def sighash_type(value: Optional[str]) -> int:
    """Core 0.17's ParseSighashString: its runtime_error answers -1."""
    if value is None:
        return SIGHASH_ALL
    if value not in _SIGHASH_TYPES:
        raise RPCError(RPC_MISC_ERROR, "%s is not a valid sighash parameter." % value)
    return _SIGHASH_TYPES[value]


def _input_error(tx: Transaction, index: int, message: str) -> Dict[str, Any]:
    """Core's TxInErrorToJSON."""
    txin = tx.vin[index]
    return {"txid": hash_to_hex(txin.prevout.txid), "vout": txin.prevout.n,
            "scriptSig": txin.script_sig.hex(), "sequence": txin.sequence, "error": message}


async def sign_transaction_json(ctx: RPCContext, tx: Transaction, keystore: Any,
                                prevtxs: Optional[List[Any]], sighashtype: Optional[str],
                                temporary_keys: bool,
                                known: Optional[PrevoutLookup] = None) -> Dict[str, Any]:
    """Core 0.17's SignTransaction: ``{hex, complete[, errors]}``.

    Spent outputs: the UTXO set and the pool, then ``known`` (the wallet's own
    record), then ``prevtxs``; a redeem script given there is used only with
    ``temporary_keys`` (signrawtransactionwithkey), as in Core.
    """
    given = _read_prevtxs(prevtxs)
    hash_type = sighash_type(sighashtype)
    chain = _chain(ctx)
    keys = [(txin.prevout.txid, txin.prevout.n) for txin in tx.vin]
    view = await chain.call(spent_outputs, chain.mempool, keys, known)
    for prev in given:
        current = view.get(prev.key)
        if current is not None and current[0] != prev.script_pubkey:
            raise RPCError(RPC_DESERIALIZATION_ERROR, "Previous output scriptPubKey mismatch:\n"
                           + script_to_asm(current[0]) + "\nvs:\n" + script_to_asm(prev.script_pubkey))
        view[prev.key] = (prev.script_pubkey, prev.amount)
        if temporary_keys and prev.redeem_script is not None:
            keystore.add_script(prev.redeem_script)
    spent = [view[key][0] if key in view else None for key in keys]
    signed, failures = sign_and_verify(tx, spent, keystore, hash_type)
    errors = [_input_error(signed, index, message) for index, message in failures]
    result: Dict[str, Any] = {"hex": signed.serialize().hex(), "complete": not errors}
    if errors:
        result["errors"] = errors
    return result


PREVTXS_SIGNATURE = '[{"txid":"id","vout":n,"scriptPubKey":"hex","redeemScript":"hex"},...]'
PREVTXS_HELP = """An json array of previous dependent transaction outputs
     [                              (json array of json objects, or 'null' if none provided)
       {
         "txid":"id",               (string, required) The transaction id
         "vout":n,                  (numeric, required) The output number
         "scriptPubKey": "hex",     (string, required) script key
         "redeemScript": "hex",     (string, required for P2SH) redeem script
         "amount": value            (numeric, required) The amount spent
       }
       ,...
    ]"""
SIGHASH_HELP = """The signature hash type. Must be one of
       "ALL"
       "NONE"
       "SINGLE"
       "ALL|ANYONECANPAY"
       "NONE|ANYONECANPAY"
       "SINGLE|ANYONECANPAY\""""
SIGN_RESULT = """{
  "hex" : "value",                  (string) The hex-encoded raw transaction with signature(s)
  "complete" : true|false,          (boolean) If the transaction has a complete set of signatures
  "errors" : [                      (json array of objects) Script verification errors (if there are any)
    {
      "txid" : "hash",              (string) The hash of the referenced, previous transaction
      "vout" : n,                   (numeric) The index of the output to spent and used as input
      "scriptSig" : "hex",          (string) The hex-encoded signature script
      "sequence" : n,               (numeric) Script sequence number
      "error" : "text"              (string) Verification or signing error related to the input
    }
    ,...
  ]
}"""
_PRIVKEY = Arg("privatekey", STR)


@rpc_method(
    "signrawtransactionwithkey", category="rawtransactions",
    signature='signrawtransactionwithkey "hexstring" ["privatekey1",...] ( %s sighashtype )'
    % PREVTXS_SIGNATURE,
    args=[Arg("hexstring", STR, typecheck=True, help="The transaction hex string"),
          Arg("privkeys", ARR, typecheck=True,
              help="A json array of base58-encoded private keys for signing"),
          Arg("prevtxs", ARR, default=None, typecheck=True, help=PREVTXS_HELP),
          Arg("sighashtype", STR, default="ALL", typecheck=True, help=SIGHASH_HELP)],
    help=("Sign inputs for raw transaction (serialized, hex-encoded).\n"
          "The second argument is an array of base58-encoded private\n"
          "keys that will be the only keys used to sign the transaction.\n"
          "The third optional argument (may be null) is an array of previous transaction outputs "
          "that\nthis transaction depends on but may not yet be in the block chain."),
    result=SIGN_RESULT,
    examples=example_cli("signrawtransactionwithkey", '"myhex"')
    + example_rpc("signrawtransactionwithkey", '"myhex"'))
async def signrawtransactionwithkey(ctx: RPCContext, hexstring: str, privkeys: List[Any],
                                    prevtxs: Optional[List[Any]],
                                    sighashtype: Optional[str]) -> Dict[str, Any]:
    tx = decode_transaction(hexstring)
    keystore = KeyStore()
    for text in privkeys:
        try:
            secret, compressed = decode_wif(_PRIVKEY.convert(text), _chain(ctx).params)
            keystore.add_key(secret, compressed)
        except (AddressError, ValueError):
            raise RPCError(RPC_INVALID_ADDRESS_OR_KEY, "Invalid private key") from None
    return await sign_transaction_json(ctx, tx, keystore, prevtxs, sighashtype, True)


_SIGNRAW_ARGS = (
    Arg("hexstring", STR, typecheck=True, help="The transaction hex string"),
    Arg("prevtxs", ARR, default=None, typecheck=True, help=PREVTXS_HELP),
    Arg("privkeys", ARR, default=None, typecheck=True, help=(
        "A json array of private keys for signing\n"
        "    [                  (json array of strings, or 'null' if none provided)\n"
        '      "privatekey"   (string) private key in WIF (Wallet Import Format, see dumpprivkey)\n'
        "      ,...\n"
        "    ]")),
    Arg("sighashtype", STR, default=None, typecheck=True, help=SIGHASH_HELP))


async def signrawtransaction_(ctx: RPCContext, *params: Any) -> Dict[str, Any]:
    """Core 0.17: refused (-32) unless -deprecatedrpc=signrawtransaction; then
    signrawtransactionwithkey with ``privkeys``, else signrawtransactionwithwallet."""
    if "signrawtransaction" not in ctx.node.deprecated_rpc:
        raise RPCError(RPC_METHOD_DEPRECATED, _SIGNRAW_DEPRECATED)
    hexstring, prevtxs, privkeys, sighashtype = (arg.convert(value)
                                                 for arg, value in zip(_SIGNRAW_ARGS, params))
    if privkeys is not None:
        return await signrawtransactionwithkey.handler(ctx, hexstring, privkeys, prevtxs,
                                                       sighashtype or "ALL")
    wallet = request_wallet(ctx.wallets, ctx.wallet_name)
    wallet_method = ctx.methods.get("signrawtransactionwithwallet")
    if wallet_method is None:
        raise RPCError(RPC_METHOD_NOT_FOUND, "Method not found")
    return await wallet_method.handler(replace(ctx, wallet=wallet), hexstring, prevtxs,
                                       sighashtype or "ALL")


_SIGNRAW_DEPRECATED = (
    "signrawtransaction is deprecated and will be fully removed in v0.18. To use "
    "signrawtransaction in v0.17, restart coind with -deprecatedrpc=signrawtransaction.\n"
    "Projects should transition to using signrawtransactionwithkey and "
    "signrawtransactionwithwallet before upgrading to v0.18")

signrawtransaction = RPCMethod(
    name="signrawtransaction", category="rawtransactions", handler=signrawtransaction_,
    help_text=compose_help(
        "signrawtransaction", _SIGNRAW_ARGS,
        "DEPRECATED. Sign inputs for raw transaction (serialized, hex-encoded).\n"
        "The second optional argument (may be null) is an array of previous transaction outputs "
        "that\nthis transaction depends on but may not yet be in the block chain.\n"
        "The third optional argument (may be null) is an array of private\n"
        "keys in WIF that, if given, will be the only keys used to sign the transaction.",
        SIGN_RESULT, example_cli("signrawtransaction", '"myhex"')
        + example_rpc("signrawtransaction", '"myhex"'),
        signature='signrawtransaction "hexstring" ( %s ["privatekey1",...] sighashtype )'
        % PREVTXS_SIGNATURE),
    args=(Arg("hexstring", ANY),) + tuple(Arg(arg.name, ANY, default=None) for arg in _SIGNRAW_ARGS[1:]))


#: What the ``rawtransactions`` entry point registers.
METHODS = [combinerawtransaction, createrawtransaction, decoderawtransaction, decodescript, getrawtransaction,
           gettxoutproof, signrawtransaction, signrawtransactionwithkey, verifytxoutproof]
