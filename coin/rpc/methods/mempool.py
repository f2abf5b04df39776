"""Mempool methods: pool queries (Core's "== Blockchain =="), submission and test
acceptance ("== Rawtransactions =="), prioritisetransaction ("== Mining ==") and fee
estimates ("== Util ==").

Registered through the ``coin.rpc`` entry point ``mempool``.  Handlers reach the
pool through ``ctx.node.mempool`` (:class:`coin.mempool.service.MempoolService`);
reads take the pool's lock in the reactor thread, changes run on the
validation worker.  JSON objects come from :mod:`coin.views.mempool`, shared
with REST.
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional

from twisted.internet.defer import Deferred

from coin.consensus.errors import ValidationError
from coin.mempool.accept import MissingInputs
from coin.mempool.estimator import RangeStats
from coin.mempool.pool import Mempool, MempoolEntry
from coin.mempool.service import MempoolService
from coin.primitives.hashes import hash_to_hex
from coin.rpc.context import RPCContext
from coin.rpc.errors import (
    RPC_INVALID_ADDRESS_OR_KEY, RPC_INVALID_PARAMETER, RPC_MISC_ERROR, RPC_VERIFY_ERROR,
    RPC_VERIFY_REJECTED, RPCError,
)
from coin.rpc.methods.rawtransactions import decode_transaction
from coin.rpc.params import parse_hash_str, parse_hash_v
from coin.rpc.registry import (
    ANY, ARR, BOOL, INT, INT64, REAL, STR, Arg, ReadByHandler, example_cli, example_rpc, rpc_method,
)
from coin.views.amounts import amount_to_json, real_to_json
from coin.views.mempool import (
    mempool_contents_json, mempool_entries_json, mempool_entry_json, mempool_info_json,
    mempool_txids_json,
)

_ENTRY_FIELDS = """\
    "fees" : {
        "base" : n,         (numeric) transaction fee in coins
        "modified" : n,     (numeric) transaction fee with fee deltas used for mining priority in coins
        "ancestor" : n,     (numeric) modified fees (see above) of in-mempool ancestors (including this one)
        "descendant" : n,   (numeric) modified fees (see above) of in-mempool descendants (including this one)
    },
    "size" : n,             (numeric) transaction size in bytes
    "vsize" : n,            (numeric) virtual transaction size as defined in BIP 141 (the size)
    "fee" : n,              (numeric) transaction fee in coins
    "modifiedfee" : n,      (numeric) transaction fee with fee deltas used for mining priority
    "time" : n,             (numeric) local time transaction entered pool in seconds since 1 Jan 1970 GMT
    "height" : n,           (numeric) block height when transaction entered pool
    "startingpriority" : n, (numeric) priority when transaction entered pool
    "currentpriority" : n,  (numeric) transaction priority now
    "descendantcount" : n,  (numeric) number of in-mempool descendant transactions (including this one)
    "descendantsize" : n,   (numeric) size of in-mempool descendants (including this one)
    "descendantfees" : n,   (numeric) modified fees (see above) of in-mempool descendants (including this one)
    "ancestorcount" : n,    (numeric) number of in-mempool ancestor transactions (including this one)
    "ancestorsize" : n,     (numeric) size of in-mempool ancestors (including this one)
    "ancestorfees" : n,     (numeric) modified fees (see above) of in-mempool ancestors (including this one)
    "wtxid" : hash,         (string) hash of serialized transaction, including witness data (the txid)
    "depends" : [           (array) unconfirmed transactions used as inputs for this transaction
        "transactionid",    (string) parent transaction id
       ... ],
    "spentby" : [           (array) unconfirmed transactions spending outputs from this transaction
        "transactionid",    (string) child transaction id
       ... ]"""


def _service(ctx: RPCContext) -> MempoolService:
    return ctx.node.mempool


def _pool(ctx: RPCContext) -> Mempool:
    return ctx.node.mempool.pool


def _tip_height(ctx: RPCContext) -> int:
    return ctx.node.chain.state.height


def _require_entry(pool: Mempool, txid: bytes) -> MempoolEntry:
    entry = pool.get(txid)
    if entry is None:
        raise RPCError(RPC_INVALID_ADDRESS_OR_KEY, "Transaction not in mempool")
    return entry


# ------------------------------------------------------------------ queries


@rpc_method(
    "getmempoolinfo", category="blockchain",
    help="Returns details on the active state of the TX memory pool.",
    result=("{\n"
            '  "size": xxxxx,               (numeric) Current tx count\n'
            '  "bytes": xxxxx,              (numeric) Sum of all tx sizes\n'
            '  "usage": xxxxx,              (numeric) Total memory usage for the mempool\n'
            '  "maxmempool": xxxxx,         (numeric) Maximum memory usage for the mempool\n'
            '  "mempoolminfee": xxxxx       (numeric) Minimum fee rate in coins/kB for tx to be '
            "accepted. Is the maximum of minrelaytxfee and minimum mempool fee\n"
            '  "minrelaytxfee": xxxxx       (numeric) Current minimum relay fee for transactions\n'
            "}"),
    examples=example_cli("getmempoolinfo") + example_rpc("getmempoolinfo", ""))
def getmempoolinfo(ctx: RPCContext) -> Dict[str, Any]:
    service = _service(ctx)
    return mempool_info_json(service.pool, service.policy.min_relay_fee.sat_per_kb)


@rpc_method(
    "getrawmempool", category="blockchain",
    args=[Arg("verbose", BOOL, default=False,
              help="True for a json object, false for array of transaction ids")],
    help=("Returns all transaction ids in memory pool as a json array of string transaction "
          "ids.\n\nHint: use getmempoolentry to fetch a specific transaction from the mempool."),
    result=('(for verbose = false):\n[                     (json array of string)\n'
            '  "transactionid"     (string) The transaction id\n  ,...\n]\n\n'
            "Result: (for verbose = true):\n{                           (json object)\n"
            '  "transactionid" : {       (json object)\n' + _ENTRY_FIELDS
            + "\n  }, ...\n}"),
    examples=example_cli("getrawmempool", "true") + example_rpc("getrawmempool", "true"))
def getrawmempool(ctx: RPCContext, verbose: bool) -> Any:
    pool = _pool(ctx)
    if verbose:
        return mempool_contents_json(pool, _tip_height(ctx))
    return mempool_txids_json(pool)


@rpc_method(
    "getmempoolentry", category="blockchain",
    args=[ReadByHandler("txid", STR, help="The transaction id (must be in mempool)")],
    help="Returns mempool data for given transaction",
    result="{                           (json object)\n" + _ENTRY_FIELDS + "\n}",
    examples=example_cli("getmempoolentry", '"mytxid"') + example_rpc("getmempoolentry",
                                                                      '"mytxid"'))
def getmempoolentry(ctx: RPCContext, txid: Any) -> Dict[str, Any]:
    pool = _pool(ctx)
    with pool.lock:
        entry = _require_entry(pool, parse_hash_v(txid, "parameter 1"))
        return mempool_entry_json(entry, _tip_height(ctx))


def _family(ctx: RPCContext, txid: Any, verbose: bool, ancestors: bool) -> Any:
    pool = _pool(ctx)
    with pool.lock:
        entry = _require_entry(pool, parse_hash_v(txid, "parameter 1"))
        if ancestors:
            family = pool.ancestors_of(entry)
        else:
            family = pool.calculate_descendants(entry) - {entry}
        ordered = sorted(family, key=lambda e: e.sequence)
        if verbose:
            return mempool_entries_json(ordered, _tip_height(ctx))
        return [hash_to_hex(e.txid) for e in ordered]


# The txid is read by ParseHashV, which takes any JSON value (a number: "(not '')").
_FAMILY_ARGS = [ReadByHandler("txid", STR, help="The transaction id (must be in mempool)"),
                Arg("verbose", BOOL, default=False,
                    help="True for a json object, false for array of transaction ids")]


def _family_method(name: str, relation: str, ancestors: bool):
    """getmempoolancestors / getmempooldescendants: one handler, Core's two help texts."""

    def handler(ctx: RPCContext, txid: Any, verbose: bool) -> Any:
        return _family(ctx, txid, verbose, ancestors=ancestors)

    return rpc_method(
        name, category="blockchain", args=_FAMILY_ARGS, signature="%s txid (verbose)" % name,
        help="If txid is in the mempool, returns all in-mempool %ss." % relation,
        result=('(for verbose = false):\n[                       (json array of strings)\n'
                '  "transactionid"           (string) The transaction id of an in-mempool %s '
                "transaction\n  ,...\n]\n\nResult (for verbose = true):\n{"
                "                           (json object)\n"
                '  "transactionid" : {       (json object)\n' % relation
                + _ENTRY_FIELDS + "\n  }, ...\n}"),
        examples=example_cli(name, '"mytxid"') + example_rpc(name, '"mytxid"'))(handler)


getmempoolancestors = _family_method("getmempoolancestors", "ancestor", ancestors=True)
getmempooldescendants = _family_method("getmempooldescendants", "descendant", ancestors=False)


@rpc_method(
    "savemempool", category="blockchain",
    help="Dumps the mempool to disk. It will fail until the previous dump is fully loaded.",
    examples=example_cli("savemempool") + example_rpc("savemempool", ""))
def savemempool(ctx: RPCContext) -> Deferred:
    service = _service(ctx)
    if not service.loaded:
        raise RPCError(RPC_MISC_ERROR, "The mempool was not loaded yet")

    def failed(failure: Any) -> None:
        failure.trap(OSError)
        raise RPCError(RPC_MISC_ERROR, "Unable to dump mempool to disk")

    return service.save().addCallbacks(lambda _: None, failed)


# ------------------------------------------------------------------ submission


def _format_state(error: ValidationError) -> str:
    """Core's FormatStateMessage: reason, debug text, reject code."""
    return "%s (code %d)" % (error, error.code)


@rpc_method(
    "sendrawtransaction", category="rawtransactions",
    args=[Arg("hexstring", STR, typecheck=True,
              help="The hex string of the raw transaction)"),
          Arg("allowhighfees", BOOL, default=False, typecheck=True, help="Allow high fees")],
    help=("Submits raw transaction (serialized, hex-encoded) to local node and network.\n\n"
          "Also see createrawtransaction and signrawtransactionwithkey calls."),
    result='"hex"             (string) The transaction hash in hex',
    examples=("\nCreate a transaction\n"
              + example_cli("createrawtransaction", '"[{\\"txid\\" : \\"mytxid\\",\\"vout\\":0}]" '
                            '"{\\"myaddress\\":0.01}"')
              + "Sign the transaction, and get back the hex\n"
              + example_cli("signrawtransactionwithkey", '"myhex"')
              + "\nSend the transaction (signed hex)\n"
              + example_cli("sendrawtransaction", '"signedhex"')
              + "\nAs a json rpc call\n" + example_rpc("sendrawtransaction", '"signedhex"')))
async def sendrawtransaction(ctx: RPCContext, hexstring: str, allowhighfees: bool) -> str:
    tx = decode_transaction(hexstring)
    service = _service(ctx)
    try:
        await service.submit(tx, max_fee=0 if allowhighfees else service.max_tx_fee)
    except MissingInputs:
        raise RPCError(RPC_VERIFY_ERROR, "Missing inputs") from None
    except ValidationError as error:
        raise RPCError(RPC_VERIFY_REJECTED, _format_state(error)) from None
    return tx.txid_hex


@rpc_method(
    "testmempoolaccept", category="rawtransactions",
    signature='testmempoolaccept ["rawtxs"] ( allowhighfees )',
    args=[Arg("rawtxs", ARR, typecheck=True,
              help="An array of hex strings of raw transactions.\n"
                   "                                        Length must be one for now."),
          Arg("allowhighfees", BOOL, default=False, typecheck=True, help="Allow high fees")],
    help=("Returns if raw transaction (serialized, hex-encoded) would be accepted by mempool.\n\n"
          "This checks if the transaction violates the consensus or policy rules.\n\n"
          "See sendrawtransaction call."),
    result=("[                   (array) The result of the mempool acceptance test for each raw "
            "transaction in the input array.\n"
            "                            Length is exactly one for now.\n"
            " {\n"
            '  "txid"           (string) The transaction hash in hex\n'
            '  "allowed"        (boolean) If the mempool allows this tx to be inserted\n'
            '  "reject-reason"  (string) Rejection string (only present when \'allowed\' is '
            "false)\n"
            " }\n"
            "]"),
    examples=("\nCreate a transaction\n"
              + example_cli("createrawtransaction", '"[{\\"txid\\" : \\"mytxid\\",\\"vout\\":0}]" '
                            '"{\\"myaddress\\":0.01}"')
              + "Sign the transaction, and get back the hex\n"
              + example_cli("signrawtransactionwithkey", '"myhex"')
              + "\nTest acceptance of the transaction (signed hex)\n"
              + example_cli("testmempoolaccept", '["signedhex"]')
              + "\nAs a json rpc call\n" + example_rpc("testmempoolaccept", '["signedhex"]')))
async def testmempoolaccept(ctx: RPCContext, rawtxs: List[Any],
                            allowhighfees: bool) -> List[Dict[str, Any]]:
    if len(rawtxs) != 1:
        raise RPCError(RPC_INVALID_PARAMETER,
                       "Array must contain exactly one raw transaction for now")
    hexstring = Arg("rawtxs", STR, typecheck=True).convert(rawtxs[0])
    tx = decode_transaction(hexstring)
    service = _service(ctx)
    result: Dict[str, Any] = {"txid": tx.txid_hex}
    try:
        await service.accept(tx, max_fee=0 if allowhighfees else service.max_tx_fee,
                             test_only=True)
        result["allowed"] = True
    except MissingInputs:
        result["allowed"] = False
        result["reject-reason"] = "missing-inputs"
    except ValidationError as error:
        result["allowed"] = False
        result["reject-reason"] = "%d: %s" % (error.code, error.reason)
    return [result]


# ------------------------------------------------------------------ mining


@rpc_method(
    "prioritisetransaction", category="mining",
    signature="prioritisetransaction <txid> <dummy value> <fee delta>",
    args=[Arg("txid", STR, help="The transaction id."),
          Arg("dummy", ANY,
              help="API-Compatibility for previous API. Must be zero or null.\n"
                   "                  DEPRECATED. For forward compatibility use named "
                   "arguments and omit this parameter."),
          Arg("fee_delta", ANY,
              help="The fee value (in satoshis) to add (or subtract, if negative).\n"
                   "                  The fee is not actually paid, only the algorithm for "
                   "selecting transactions into a block\n"
                   "                  considers the transaction as it would have paid a higher "
                   "(or lower) fee.")],
    help="Accepts the transaction into mined blocks at a higher (or lower) priority",
    result="true              (boolean) Returns true",
    examples=example_cli("prioritisetransaction", '"txid" 0.0 10000')
    + example_rpc("prioritisetransaction", '"txid", 0.0, 10000'))
async def prioritisetransaction(ctx: RPCContext, txid: str, dummy: Any, fee_delta: Any) -> bool:
    # Core 0.17's order: the txid, then the fee delta, then the dummy (hence ANY above).
    txid_bytes = parse_hash_str(txid, "txid")
    delta = Arg("fee_delta", INT64).convert(fee_delta)
    # Positional, so it cannot be optional in the table: null or 0, read as Core's get_real.
    if dummy is not None and Arg("dummy", REAL).convert(dummy) != 0:
        raise RPCError(RPC_INVALID_PARAMETER, "Priority is no longer supported, dummy argument "
                       "to prioritisetransaction must be 0.")
    await _service(ctx).prioritise(txid_bytes, delta)
    return True


# ------------------------------------------------------------------ fee estimates


def _conf_target(ctx: RPCContext, value: int) -> int:
    highest = _service(ctx).estimator.max_target()
    if value < 1 or value > highest:
        raise RPCError(RPC_INVALID_PARAMETER,
                       "Invalid conf_target, must be between %d - %d" % (1, highest))
    return value


@rpc_method(
    "estimatesmartfee", category="util",
    signature='estimatesmartfee conf_target ("estimate_mode")',
    args=[Arg("conf_target", INT, typecheck=True,
              help="Confirmation target in blocks (1 - 1008)"),
          Arg("estimate_mode", STR, default="CONSERVATIVE", typecheck=True,
              help='The fee estimate mode.\n'
                   '                   Whether to return a more conservative estimate which '
                   'also satisfies\n'
                   '                   a longer history. A conservative estimate potentially '
                   'returns a\n'
                   '                   higher feerate and is more likely to be sufficient for '
                   'the desired\n'
                   '                   target, but is not as responsive to short term drops in '
                   'the\n'
                   '                   prevailing fee market.  Must be one of:\n'
                   '       "UNSET" (defaults to CONSERVATIVE)\n'
                   '       "ECONOMICAL"\n'
                   '       "CONSERVATIVE"')],
    help=("Estimates the approximate fee per kilobyte needed for a transaction to begin\n"
          "confirmation within conf_target blocks if possible and return the number of blocks\n"
          "for which the estimate is valid."),
    result=("{\n"
            '  "feerate" : x.x,     (numeric, optional) estimate fee rate in coins/kB\n'
            '  "errors": [ str... ] (json array of strings, optional) Errors encountered during '
            "processing\n"
            '  "blocks" : n         (numeric) block number where estimate was found\n'
            "}\n\n"
            "The request target will be clamped between 2 and the highest target\n"
            "fee estimation is able to return based on how long it has been running.\n"
            "An error is returned if not enough transactions and blocks\n"
            "have been observed to make an estimate for any number of blocks."),
    examples=example_cli("estimatesmartfee", "6"))
def estimatesmartfee(ctx: RPCContext, conf_target: int, estimate_mode: str) -> Dict[str, Any]:
    target = _conf_target(ctx, conf_target)
    mode = estimate_mode.upper()
    if mode not in ("UNSET", "ECONOMICAL", "CONSERVATIVE"):
        raise RPCError(RPC_INVALID_PARAMETER, "Invalid estimate_mode parameter")
    rate, blocks = _service(ctx).estimate_smart_fee(target, mode != "ECONOMICAL")
    if rate is None:
        return {"errors": ["Insufficient data or no feerate found"], "blocks": blocks}
    return {"feerate": amount_to_json(rate), "blocks": blocks}


@rpc_method(
    "estimatefee", category="hidden",
    args=[Arg("nblocks", INT, typecheck=True)],
    help=("DEPRECATED. Please use estimatesmartfee for more intelligent estimates.\n"
          "Estimates the approximate fee per kilobyte needed for a transaction to begin\n"
          "confirmation within nblocks blocks."),
    result=("n              (numeric) estimated fee-per-kilobyte\n\n"
            "A negative value is returned if not enough transactions and blocks\n"
            "have been observed to make an estimate.\n"
            "-1 is always returned for nblocks == 1 as it is impossible to calculate\n"
            "a fee that is high enough to get reliably included in the next block."),
    examples=example_cli("estimatefee", "6"))
def estimatefee(ctx: RPCContext, nblocks: int) -> Any:
    service = _service(ctx)
    with service.pool.lock:
        rate: Optional[int] = service.estimator.estimate_fee(max(nblocks, 1))
    if rate is None:
        return real_to_json(-1.0)
    return amount_to_json(rate)


_RANGE_HELP = (
    '          "startrange" : x.x,     (numeric) start of feerate range\n'
    '          "endrange" : x.x,       (numeric) end of feerate range\n'
    '          "withintarget" : x.x,   (numeric) number of txs over history horizon in the '
    "feerate range that were confirmed within target\n"
    '          "totalconfirmed" : x.x, (numeric) number of txs over history horizon in the '
    "feerate range that were confirmed at any point\n"
    '          "inmempool" : x.x,      (numeric) current number of txs in mempool in the feerate '
    "range unconfirmed for at least target blocks\n"
    '          "leftmempool" : x.x,    (numeric) number of txs over history horizon in the '
    "feerate range that left mempool unconfirmed after target\n")


def _range_json(stats: Optional[RangeStats]) -> Dict[str, Any]:
    """Core's EstimatorBucket as estimaterawfee shows it (-1 bounds and zero counts: none)."""
    if stats is None:
        return {"startrange": -1, "endrange": -1, "withintarget": 0, "totalconfirmed": 0,
                "inmempool": 0, "leftmempool": 0}
    # Core's top bucket ends at INF_FEERATE, 1e99.
    end = stats.end if math.isfinite(stats.end) else 1e99
    return {"startrange": real_to_json(round(stats.start)), "endrange": real_to_json(round(end)),
            "withintarget": real_to_json(round(stats.within_target * 100.0) / 100.0),
            "totalconfirmed": real_to_json(round(stats.total_confirmed * 100.0) / 100.0),
            "inmempool": real_to_json(round(stats.in_mempool * 100.0) / 100.0),
            "leftmempool": real_to_json(round(stats.left_mempool * 100.0) / 100.0)}


@rpc_method(
    "estimaterawfee", category="hidden", signature="estimaterawfee conf_target (threshold)",
    args=[Arg("conf_target", INT, typecheck=True, help="Confirmation target in blocks (1 - 1008)"),
          Arg("threshold", REAL, default=None, typecheck=True, help=(
              "The proportion of transactions in a given feerate range that must have been\n"
              "               confirmed within conf_target in order to consider those feerates as "
              "high enough and proceed to check\n"
              "               lower buckets.  Default: 0.95"))],
    help=("WARNING: This interface is unstable and may disappear or change!\n\n"
          "WARNING: This is an advanced API call that is tightly coupled to the specific\n"
          "         implementation of fee estimation. The parameters it can be called with\n"
          "         and the results it returns will change if the internal implementation changes.\n\n"
          "Estimates the approximate fee per kilobyte needed for a transaction to begin\n"
          "confirmation within conf_target blocks if possible. Uses virtual transaction size as\n"
          "defined in BIP 141 (witness data is discounted)."),
    result=("{\n"
            '  "short" : {            (json object, optional) estimate for short time horizon\n'
            '      "feerate" : x.x,        (numeric, optional) estimate fee rate in coins/kB\n'
            '      "decay" : x.x,          (numeric) exponential decay (per block) for historical '
            "moving average of confirmation data\n"
            '      "scale" : x,            (numeric) The resolution of confirmation targets at this '
            "time horizon\n"
            '      "pass" : {              (json object, optional) information about the lowest '
            "range of feerates to succeed in meeting the threshold\n"
            + _RANGE_HELP
            + "      },\n"
            '      "fail" : { ... },       (json object, optional) information about the highest '
            "range of feerates to fail to meet the threshold\n"
            '      "errors":  [ str... ]   (json array of strings, optional) Errors encountered '
            "during processing\n"
            "  },\n"
            '  "medium" : { ... },    (json object, optional) estimate for medium time horizon\n'
            '  "long" : { ... }       (json object) estimate for long time horizon\n'
            "}\n\n"
            "Results are returned for any horizon which tracks blocks up to the confirmation target."),
    examples=example_cli("estimaterawfee", "6 0.9"))
def estimaterawfee(ctx: RPCContext, conf_target: int, threshold: Optional[float]) -> Dict[str, Any]:
    """Core 0.17: per horizon tracking the target, the raw median at ``threshold`` (default
    95%) and the bucket ranges that passed and failed."""
    target = _conf_target(ctx, conf_target)
    threshold = 0.95 if threshold is None else threshold
    if not 0 <= threshold <= 1:
        raise RPCError(RPC_INVALID_PARAMETER, "Invalid threshold")
    service = _service(ctx)
    with service.pool.lock:
        scans = service.estimator.estimate_raw_fee(target, threshold)
    result: Dict[str, Any] = {}
    for horizon, scan in scans:
        answer: Dict[str, Any] = {}
        if scan.answer is not None:
            answer["feerate"] = amount_to_json(int(math.floor(scan.answer + 0.5)))
        answer["decay"] = real_to_json(horizon.decay)
        answer["scale"] = horizon.scale
        if scan.answer is not None:
            answer["pass"] = _range_json(scan.passed)
            if scan.failed is not None:
                answer["fail"] = _range_json(scan.failed)
        else:
            answer["fail"] = _range_json(scan.failed)
            answer["errors"] = ["Insufficient data or no feerate found which meets threshold"]
        result[horizon.name] = answer
    return result


#: What the ``mempool`` entry point registers.
METHODS = [getmempoolinfo, getrawmempool, getmempoolentry, getmempoolancestors,
           getmempooldescendants, savemempool, sendrawtransaction, testmempoolaccept,
           prioritisetransaction, estimatesmartfee, estimatefee, estimaterawfee]
