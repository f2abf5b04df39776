"""Blockchain methods (Core 0.17's "== Blockchain ==" and its hidden chain-control calls).

Registered through the ``coin.rpc`` entry point ``blockchain``. Every block,
header, transaction, output and chain-info object comes from :mod:`coin.views`;
this module picks the entries, reads the data off the reactor thread and maps
failures to Core's codes and messages. What the methods compute about the chain
lives in the chain package: verifychain's checks in :mod:`coin.chain.verify`,
getchaintips' statuses in :mod:`coin.chain.tips`, getchaintxstats' window in
:mod:`coin.chain.txstats`, gettxoutsetinfo's figures in
:mod:`coin.chain.utxostats`, pruneblockchain's checks in :mod:`coin.chain.pruning`;
gettxout's read through the pool is :func:`coin.mempool.coinview.coin_at_tip`.
Departures from Core are noted where they happen (verifychain's level 4 in
coin.chain.verify).
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Sequence, Tuple

from twisted.internet.defer import Deferred
from twisted.logger import Logger
from twisted.python.failure import Failure

from coin.chain.access import ChainAccess
from coin.chain.index import BlockIndexEntry
from coin.chain.pruning import prune_to
from coin.chain.snapshot import BlockUnavailable, ChainSnapshot
from coin.chain.tips import ChainTip, chain_tips
from coin.chain.txstats import chain_tx_stats
from coin.chain.utxostats import utxo_set_info
from coin.chain.verify import DEFAULT_CHECKBLOCKS, DEFAULT_CHECKLEVEL, verify_chain
from coin.consensus.pow import get_difficulty
from coin.primitives.block import Block, BlockHeader
from coin.mempool.coinview import coin_at_tip
from coin.primitives.coin import Coin
from coin.primitives.hashes import hash_to_hex
from coin.primitives.serialize import DeserializationError
from coin.rpc.context import RPCContext
from coin.rpc.errors import (
    RPC_DATABASE_ERROR, RPC_INVALID_ADDRESS_OR_KEY, RPC_INVALID_PARAMETER, RPC_MISC_ERROR,
    RPCError,
)
from coin.rpc.params import uint256_from_hex
from coin.rpc.registry import (
    BOOL, INT, STR, Arg, ReadByHandler, RPCMethod, compose_help, example_cli, example_rpc,
    rpc_method,
)
from coin.storage.errors import DatabaseUnreachable, StorageError
from coin.views.amounts import amount_to_json, real_to_json
from coin.views.block import block_json, header_json
from coin.views.chaininfo import chain_info_json
from coin.views.utxo import txout_json

log = Logger()

#: The block hash Core's examples use.
_EXAMPLE_HASH = '"00000000c937983704a73af28acdec37b049d214adbda81d7e2a3dd146f6ed09"'


def _chain(ctx: RPCContext) -> ChainAccess:
    return ctx.node.chain


def _lookup(view: ChainSnapshot, text: str) -> BlockIndexEntry:
    """The index entry for a hash parameter, read as Core 0.17 reads it (uint256S)."""
    entry = view.lookup(uint256_from_hex(text))
    if entry is None:
        raise RPCError(RPC_INVALID_ADDRESS_OR_KEY, "Block not found")
    return entry


def _help(name: str, args: Sequence[Arg], description: str, results: str, examples: str,
          signature: Optional[str] = None) -> str:
    """Core's layout for methods with several "Result (for ...):" sections."""
    return (compose_help(name, args, description, signature=signature) + results
            + "\nExamples:\n" + examples)


# ---------------------------------------------------------------- tip and heights

@rpc_method(
    "getbestblockhash", category="blockchain", chain_only=True,
    help="Returns the hash of the best (tip) block in the longest blockchain.",
    result='"hex"      (string) the block hash hex encoded',
    examples=example_cli("getbestblockhash") + example_rpc("getbestblockhash"))
def getbestblockhash(ctx: RPCContext) -> str:
    return hash_to_hex(_chain(ctx).snapshot().tip.hash)


@rpc_method(
    "getblockcount", category="blockchain", chain_only=True,
    help="Returns the number of blocks in the longest blockchain.",
    result="n    (numeric) The current block count",
    examples=example_cli("getblockcount") + example_rpc("getblockcount"))
def getblockcount(ctx: RPCContext) -> int:
    return _chain(ctx).snapshot().height


@rpc_method(
    "getblockhash", category="blockchain", chain_only=True,
    args=[Arg("height", INT, help="The height index")],
    help="Returns hash of block in best-block-chain at height provided.",
    result='"hash"         (string) The block hash',
    examples=example_cli("getblockhash", "1000") + example_rpc("getblockhash", "1000"))
def getblockhash(ctx: RPCContext, height: int) -> str:
    entry = _chain(ctx).snapshot().at_height(height)
    if entry is None:
        raise RPCError(RPC_INVALID_PARAMETER, "Block height out of range")
    return hash_to_hex(entry.hash)


@rpc_method(
    "getdifficulty", category="blockchain", chain_only=True,
    help="Returns the proof-of-work difficulty as a multiple of the minimum difficulty.",
    result=("n.nnn       (numeric) the proof-of-work difficulty as a multiple of the minimum "
            "difficulty."),
    examples=example_cli("getdifficulty") + example_rpc("getdifficulty"))
def getdifficulty(ctx: RPCContext) -> Any:
    return real_to_json(get_difficulty(_chain(ctx).snapshot().tip.bits))


@rpc_method(
    "getblockchaininfo", category="blockchain",
    help="Returns an object containing various state info regarding blockchain processing.",
    result=(
        "{\n"
        '  "chain": "xxxx",              (string) current network name (main, test, regtest)\n'
        '  "blocks": xxxxxx,             (numeric) the current number of blocks processed in '
        "the server\n"
        '  "headers": xxxxxx,            (numeric) the current number of headers we have '
        "validated\n"
        '  "bestblockhash": "...",       (string) the hash of the currently best block\n'
        '  "difficulty": xxxxxx,         (numeric) the current difficulty\n'
        '  "mediantime": xxxxxx,         (numeric) median time for the current best block\n'
        '  "verificationprogress": xxxx, (numeric) estimate of verification progress [0..1]\n'
        '  "initialblockdownload": xxxx, (bool) (debug information) estimate of whether this '
        "node is in Initial Block Download mode.\n"
        '  "chainwork": "xxxx"           (string) total amount of work in active chain, in '
        "hexadecimal\n"
        '  "size_on_disk": xxxxxx,       (numeric) the estimated size of the block and undo '
        "files on disk\n"
        '  "pruned": xx,                 (boolean) if the blocks are subject to pruning\n'
        '  "pruneheight": xxxxxx,        (numeric) lowest-height complete block stored (only '
        "present if pruning is enabled)\n"
        '  "automatic_pruning": xx,      (boolean) whether automatic pruning is enabled (only '
        "present if pruning is enabled)\n"
        '  "prune_target_size": xxxxxx,  (numeric) the target size used by pruning (only '
        "present if automatic pruning is enabled)\n"
        '  "softforks": [                (array) status of softforks in progress\n'
        "     {\n"
        '        "id": "xxxx",           (string) name of softfork\n'
        '        "version": xx,          (numeric) block version\n'
        '        "enforce": {            (object) progress toward enforcing the softfork rules '
        "for new-version blocks\n"
        '           "status": xx,        (boolean) true if threshold reached\n'
        '           "found": xx,         (numeric) number of blocks with the new version found\n'
        '           "required": xx,      (numeric) number of blocks required to trigger\n'
        '           "window": xx,        (numeric) maximum size of examined window of recent '
        "blocks\n"
        "        },\n"
        '        "reject": { ... }       (object) progress toward rejecting pre-softfork blocks '
        '(same fields as "enforce")\n'
        "     }, ...\n"
        "  ],\n"
        '  "bip9_softforks": [           (array) status of BIP9 softforks in progress\n'
        "     {\n"
        '        "id": "xxxx",           (string) name of the softfork\n'
        '        "status": "xxxx",       (string) one of "defined", "started", "locked_in", '
        '"active", "failed"\n'
        "     }, ...\n"
        "  ],\n"
        '  "warnings" : "...",           (string) any network and blockchain warnings.\n'
        "}"),
    examples=example_cli("getblockchaininfo") + example_rpc("getblockchaininfo"))
def getblockchaininfo(ctx: RPCContext) -> Dict[str, Any]:
    chain = _chain(ctx)
    view = chain.snapshot()
    return chain_info_json(view, chain.params, chain.status(view))


# ---------------------------------------------------------------- blocks and headers

_HEADER_HEAD = (
    '  "hash" : "hash",     (string) the block hash (same as provided)\n'
    '  "confirmations" : n,   (numeric) The number of confirmations, or -1 if the block is '
    "not on the main chain\n")
_HEADER_MIDDLE = (
    '  "height" : n,          (numeric) The block height or index\n'
    '  "version" : n,         (numeric) The block version\n'
    '  "versionHex" : "00000000", (string) The block version formatted in hexadecimal\n'
    '  "merkleroot" : "xxxx", (string) The merkle root\n')
_HEADER_TAIL = (
    '  "time" : ttt,          (numeric) The block time in seconds since epoch (Jan 1 1970 GMT)\n'
    '  "mediantime" : ttt,    (numeric) The median block time in seconds since epoch (Jan 1 '
    "1970 GMT)\n"
    '  "nonce" : n,           (numeric) The nonce\n'
    '  "bits" : "1d00ffff", (string) The bits\n'
    '  "difficulty" : x.xxx,  (numeric) The difficulty\n'
    '  "chainwork" : "xxxx",  (string) Expected number of hashes required to produce the chain '
    "up to this block (in hex)\n"
    '  "nTx" : n,             (numeric) The number of transactions in the block.\n'
    '  "previousblockhash" : "hash",  (string) The hash of the previous block\n'
    '  "nextblockhash" : "hash"       (string) The hash of the next block\n')

_GETBLOCK_ARGS = (
    Arg("blockhash", STR, help="The block hash"),
    Arg("verbosity", (INT, BOOL), default=1, aliases=("verbose",),
        help="0 for hex encoded data, 1 for a json object, and 2 for json object with "
             "transaction data"))


def getblock_(ctx: RPCContext, blockhash: str, verbosity: int | bool) -> Deferred:
    chain = _chain(ctx)
    view = chain.snapshot()
    entry = _lookup(view, blockhash)
    if chain.state.is_pruned_block(entry):
        raise RPCError(RPC_MISC_ERROR, "Block not available (pruned data)")
    if not entry.have_data():
        # Core: a header we accepted without (or before) its block data.
        raise RPCError(RPC_MISC_ERROR, "Block not found on disk")
    level = int(verbosity)  # Core: true is 1, false is 0

    def render(block: Block) -> Any:
        if level <= 0:
            return block.serialize().hex()
        return block_json(block, entry, view, chain.params, tx_detail=level >= 2)

    return chain.read_block(entry).addCallbacks(render, _not_on_disk)


def _not_on_disk(failure: Failure) -> None:
    failure.trap(StorageError, DeserializationError)
    if failure.check(BlockUnavailable, DatabaseUnreachable):
        # Pruned while the read was on its way, or the database server is away: the
        # error's own message and code (rpc_code: -1 as Core, or -28).
        failure.raiseException()
    log.failure("Reading a block for getblock failed", failure)
    raise RPCError(RPC_MISC_ERROR, "Block not found on disk")


getblock = RPCMethod(
    name="getblock", category="blockchain", handler=getblock_, args=_GETBLOCK_ARGS,
    help_text=_help(
        "getblock", _GETBLOCK_ARGS, signature='getblock "blockhash" ( verbosity ) ',
        description=(
            "If verbosity is 0, returns a string that is serialized, hex-encoded data for "
            "block 'hash'.\n"
            "If verbosity is 1, returns an Object with information about block <hash>.\n"
            "If verbosity is 2, returns an Object with information about block <hash> and "
            "information about each transaction. "),
        results=(
            "\nResult (for verbosity = 0):\n"
            '"data"             (string) A string that is serialized, hex-encoded data for '
            "block 'hash'.\n"
            "\nResult (for verbosity = 1):\n"
            "{\n" + _HEADER_HEAD
            + '  "strippedsize" : n,    (numeric) The block size excluding witness data (the '
            "size: this chain has none)\n"
            '  "size" : n,            (numeric) The block size\n'
            '  "weight" : n           (numeric) The block weight as defined in BIP 141 (4 x size)\n'
            + _HEADER_MIDDLE
            + '  "tx" : [               (array of string) The transaction ids\n'
            '     "transactionid"     (string) The transaction id\n'
            "     ,...\n"
            "  ],\n" + _HEADER_TAIL + "}\n"
            "\nResult (for verbosity = 2):\n"
            "{\n"
            "  ...,                     Same output as verbosity = 1.\n"
            '  "tx" : [               (array of Objects) The transactions in the format of '
            'the getrawtransaction RPC. Different from verbosity = 1 "tx" result.\n'
            "         ,...\n"
            "  ],\n"
            "  ,...                     Same output as verbosity = 1.\n"
            "}\n"),
        examples=example_cli("getblock", _EXAMPLE_HASH) + example_rpc("getblock", _EXAMPLE_HASH)))

# Core 0.17 names the first argument "blockhash" for named parameters and "hash" in help.
_GETBLOCKHEADER_ARGS = (
    Arg("blockhash", STR, help="The block hash"),
    Arg("verbose", BOOL, default=True,
        help="true for a json object, false for the hex encoded data"))


def getblockheader_(ctx: RPCContext, blockhash: str, verbose: bool) -> Any:
    view = _chain(ctx).snapshot()
    entry = _lookup(view, blockhash)
    if not verbose:
        return BlockHeader(entry.version, entry.prev_hash, entry.merkle_root, entry.time,
                           entry.bits, entry.nonce).serialize().hex()
    return header_json(entry, view)


getblockheader = RPCMethod(
    name="getblockheader", category="blockchain", handler=getblockheader_,
    args=_GETBLOCKHEADER_ARGS,
    help_text=_help(
        "getblockheader", _GETBLOCKHEADER_ARGS, signature='getblockheader "hash" ( verbose )',
        description=(
            "If verbose is false, returns a string that is serialized, hex-encoded data for "
            "blockheader 'hash'.\n"
            "If verbose is true, returns an Object with information about blockheader <hash>."),
        results=(
            "\nResult (for verbose = true):\n"
            "{\n" + _HEADER_HEAD + _HEADER_MIDDLE + _HEADER_TAIL + "}\n"
            "\nResult (for verbose=false):\n"
            '"data"             (string) A string that is serialized, hex-encoded data for '
            "block 'hash'.\n"),
        examples=(example_cli("getblockheader", _EXAMPLE_HASH)
                  + example_rpc("getblockheader", _EXAMPLE_HASH))))


# ---------------------------------------------------------------- chain shape and statistics

def _chain_tip_json(tip: ChainTip) -> Dict[str, Any]:
    entry = tip.entry
    return {
        "height": entry.height,
        "hash": hash_to_hex(entry.hash),
        "difficulty": real_to_json(get_difficulty(entry.bits)),
        "chainwork": "%064x" % entry.chainwork,
        "branchlen": tip.branch_length,
        "forkpoint": hash_to_hex(tip.fork.hash),
        "status": tip.status.value,
    }


@rpc_method(
    "getchaintips", category="blockchain",
    help=("Return information about all known tips in the block tree, including the main "
          "chain as well as orphaned branches."),
    result=(
        "[\n"
        "  {\n"
        '    "height": xxxx,             (numeric) height of the chain tip\n'
        '    "hash": "xxxx",             (string) block hash of the tip\n'
        '    "difficulty" : x.xxx,       (numeric) The difficulty\n'
        '    "chainwork" : "0000...1f3"  (string) Expected number of hashes required to produce '
        "the current chain (in hex)\n"
        '    "branchlen": 0              (numeric) zero for main chain\n'
        '    "forkpoint": "xxxx",        (string) same as "hash" for the main chain\n'
        '    "status": "active"          (string) "active" for the main chain\n'
        "  },\n"
        "  {\n"
        '    "height": xxxx,\n'
        '    "hash": "xxxx",\n'
        '    "difficulty" : x.xxx,\n'
        '    "chainwork" : "0000...1f3",\n'
        '    "branchlen": 1              (numeric) length of branch connecting the tip to the '
        "main chain\n"
        '    "forkpoint": "xxxx",        (string) block hash of the last common block between '
        "this tip and the main chain\n"
        '    "status": "xxxx"            (string) status of the chain (active, valid-fork, '
        "valid-headers, headers-only, invalid)\n"
        "  }\n"
        "]\n"
        "Possible values for status:\n"
        '1.  "invalid"               This branch contains at least one invalid block\n'
        '2.  "headers-only"          Not all blocks for this branch are available, but the '
        "headers are valid\n"
        '3.  "valid-headers"         All blocks are available for this branch, but they were '
        "never fully validated\n"
        '4.  "valid-fork"            This branch is not part of the active chain, but is fully '
        "validated\n"
        '5.  "active"                This is the tip of the active main chain, which is '
        "certainly valid"),
    examples=example_cli("getchaintips") + example_rpc("getchaintips"))
def getchaintips(ctx: RPCContext) -> Deferred:
    return _chain(ctx).call(chain_tips).addCallback(lambda tips: [_chain_tip_json(t) for t in tips])


_NBLOCKS = ReadByHandler("nblocks", INT, default=None,
                         help="Size of the window in number of blocks (default: one month).")


@rpc_method(
    "getchaintxstats", category="blockchain", signature="getchaintxstats ( nblocks blockhash )",
    args=[_NBLOCKS,
          Arg("blockhash", STR, default=None, help="The hash of the block that ends the window.")],
    help="Compute statistics about the total number and rate of transactions in the chain.",
    result=(
        "{\n"
        '  "time": xxxxx,                         (numeric) The timestamp for the final block '
        "in the window in UNIX format.\n"
        '  "txcount": xxxxx,                      (numeric) The total number of transactions in '
        "the chain up to that point.\n"
        '  "window_final_block_hash": "...",      (string) The hash of the final block in the '
        "window.\n"
        '  "window_block_count": xxxxx,           (numeric) Size of the window in number of '
        "blocks.\n"
        '  "window_tx_count": xxxxx,              (numeric) The number of transactions in the '
        'window. Only returned if "window_block_count" is > 0.\n'
        '  "window_interval": xxxxx,              (numeric) The elapsed time in the window in '
        'seconds. Only returned if "window_block_count" is > 0.\n'
        '  "txrate": x.xx,                        (numeric) The average rate of transactions '
        'per second in the window. Only returned if "window_interval" is > 0.\n'
        "}"),
    examples=example_cli("getchaintxstats") + example_rpc("getchaintxstats", "2016"))
def getchaintxstats(ctx: RPCContext, nblocks: Any, blockhash: Optional[str]) -> Dict[str, Any]:
    chain = _chain(ctx)
    view = chain.snapshot()
    entry = view.tip if blockhash is None else _lookup(view, blockhash)
    # Core reads nblocks once the block is found.
    stats = chain_tx_stats(view, entry, _NBLOCKS.read(nblocks), chain.params.target_spacing)
    out: Dict[str, Any] = {
        "time": entry.time,
        "txcount": entry.chain_tx,
        "window_final_block_hash": hash_to_hex(entry.hash),
        "window_block_count": stats.block_count,
    }
    if stats.block_count > 0:
        out["window_tx_count"] = stats.tx_count
        out["window_interval"] = stats.interval
        if stats.rate is not None:
            out["txrate"] = real_to_json(stats.rate)
    return out


# ---------------------------------------------------------------- the UTXO set

@rpc_method(
    "gettxout", category="blockchain",
    args=[Arg("txid", STR, help="The transaction id"),
          Arg("n", INT, help="vout number"),
          Arg("include_mempool", BOOL, default=True,
              help="Whether to include the mempool. Note that an unspent output that is spent "
                   "in the mempool won't appear.")],
    help="Returns details about an unspent transaction output.",
    result=(
        "{\n"
        '  "bestblock":  "hash",    (string) The hash of the block at the tip of the chain\n'
        '  "confirmations" : n,       (numeric) The number of confirmations\n'
        '  "value" : x.xxx,           (numeric) The transaction value in coins\n'
        '  "scriptPubKey" : {         (json object)\n'
        '     "asm" : "code",       (string) \n'
        '     "hex" : "hex",        (string) \n'
        '     "reqSigs" : n,          (numeric) Number of required signatures\n'
        '     "type" : "pubkeyhash", (string) The type, eg pubkeyhash\n'
        '     "addresses" : [          (array of string) array of coin addresses\n'
        '        "address"     (string) coin address\n'
        "        ,...\n"
        "     ]\n"
        "  },\n"
        '  "coinbase" : true|false   (boolean) Coinbase or not\n'
        "}"),
    examples=("\nGet unspent transactions\n" + example_cli("listunspent")
              + "\nView the details\n" + example_cli("gettxout", '"txid" 1')
              + "\nAs a json rpc call\n" + example_rpc("gettxout", '"txid", 1')))
def gettxout(ctx: RPCContext, txid: str, n: int, include_mempool: bool) -> Deferred:
    chain = _chain(ctx)
    key = (uint256_from_hex(txid), n & 0xFFFFFFFF)  # Core's COutPoint keeps n as uint32

    def render(found: Tuple[BlockIndexEntry, Optional[Coin]]) -> Optional[Dict[str, Any]]:
        tip, coin = found
        return None if coin is None else txout_json(coin, tip, chain.params)

    pool = chain.mempool if include_mempool else None
    return chain.call(coin_at_tip, pool, key).addCallback(render)


@rpc_method(
    "gettxoutsetinfo", category="blockchain",
    help="Returns statistics about the unspent transaction output set.\n"
         "Note this call may take some time.",
    result=(
        "{\n"
        '  "height":n,     (numeric) The current block height (index)\n'
        '  "bestblock": "hex",   (string) The hash of the block at the tip of the chain\n'
        '  "transactions": n,      (numeric) The number of transactions with unspent outputs\n'
        '  "txouts": n,            (numeric) The number of unspent transaction outputs\n'
        '  "bogosize": n,          (numeric) A meaningless metric for UTXO set size\n'
        '  "hash_serialized_2": "hash", (string) The serialized hash\n'
        '  "disk_size": n,         (numeric) The estimated size of the chainstate on disk\n'
        '  "total_amount": x.xxx          (numeric) The total amount\n'
        "}"),
    examples=example_cli("gettxoutsetinfo") + example_rpc("gettxoutsetinfo"))
async def gettxoutsetinfo(ctx: RPCContext) -> Dict[str, Any]:
    tip, stats, disk_size = await utxo_set_info(_chain(ctx))
    return {
        "height": tip.height,
        "bestblock": hash_to_hex(tip.hash),
        "transactions": stats.transactions,
        "txouts": stats.txouts,
        "bogosize": stats.bogosize,
        "hash_serialized_2": hash_to_hex(stats.hash_serialized),
        "disk_size": disk_size,
        "total_amount": amount_to_json(stats.total_amount),
    }


# ---------------------------------------------------------------- verifychain

@rpc_method(
    "verifychain", category="blockchain",
    args=[Arg("checklevel", INT, default=DEFAULT_CHECKLEVEL,
              help="(0-4) How thorough the block verification is."),
          Arg("nblocks", INT, default=DEFAULT_CHECKBLOCKS,
              help="The number of blocks to check (0=all).")],
    help="Verifies blockchain database.",
    result="true|false       (boolean) Verified or not",
    examples=example_cli("verifychain") + example_rpc("verifychain"))
def verifychain(ctx: RPCContext, checklevel: int, nblocks: int) -> Deferred:
    return _chain(ctx).call(verify_chain, checklevel, nblocks)


# ---------------------------------------------------------------- chain control

def _done(changed: Deferred) -> Deferred:
    """null once the chain has changed; a storage failure answers -20, as Core's database
    errors do."""

    def failed(failure: Failure) -> None:
        failure.trap(StorageError)
        log.failure("Changing the active chain failed", failure)
        raise RPCError(RPC_DATABASE_ERROR, failure.getErrorMessage())

    return changed.addCallbacks(lambda _: None, failed)


_BLOCKHASH_EXAMPLES = {
    name: example_cli(name, '"blockhash"') + example_rpc(name, '"blockhash"')
    for name in ("preciousblock", "invalidateblock", "reconsiderblock")}


@rpc_method(
    "preciousblock", category="blockchain",
    args=[Arg("blockhash", STR, help="the hash of the block to mark as precious")],
    help="Treats a block as if it were received before others with the same work.\n\n"
         "A later preciousblock call can override the effect of an earlier one.\n\n"
         "The effects of preciousblock are not retained across restarts.",
    examples=_BLOCKHASH_EXAMPLES["preciousblock"])
def preciousblock(ctx: RPCContext, blockhash: str) -> Deferred:
    chain = _chain(ctx)
    return _done(chain.precious_block(_lookup(chain.snapshot(), blockhash).hash))


@rpc_method(
    "invalidateblock", category="hidden",
    args=[Arg("blockhash", STR, help="the hash of the block to mark as invalid")],
    help="Permanently marks a block as invalid, as if it violated a consensus rule.",
    examples=_BLOCKHASH_EXAMPLES["invalidateblock"])
def invalidateblock(ctx: RPCContext, blockhash: str) -> Deferred:
    chain = _chain(ctx)
    return _done(chain.invalidate_block(_lookup(chain.snapshot(), blockhash).hash))


@rpc_method(
    "reconsiderblock", category="hidden",
    args=[Arg("blockhash", STR, help="the hash of the block to reconsider")],
    help="Removes invalidity status of a block and its descendants, reconsider them for "
         "activation.\nThis can be used to undo the effects of invalidateblock.",
    examples=_BLOCKHASH_EXAMPLES["reconsiderblock"])
def reconsiderblock(ctx: RPCContext, blockhash: str) -> Deferred:
    chain = _chain(ctx)
    return _done(chain.reconsider_block(_lookup(chain.snapshot(), blockhash).hash))


# ---------------------------------------------------------------- waiting for blocks

_TIMEOUT_ARG = Arg("timeout", INT, default=0, help=(
    "Time in milliseconds to wait for a response. 0 indicates no timeout."))
_WAIT_RESULT = (
    "{                           (json object)\n"
    '  "hash" : {       (string) The blockhash\n'
    '  "height" : {     (int) Block height\n'
    "}")
_WAIT_HELP = ("Waits for a specific new block and returns useful info about it.\n\n"
              "Returns the current block on timeout or exit.")


def _tip_json(entry: BlockIndexEntry) -> Dict[str, Any]:
    return {"hash": hash_to_hex(entry.hash), "height": entry.height}


def _wait(chain: ChainAccess, condition: Callable[[BlockIndexEntry], bool],
          timeout_ms: int) -> Any:
    """Core's waitfor* loop without blocking: the tip once ``condition(tip)`` holds, or
    the tip when ``timeout_ms`` runs out (0: never; negative: at once).

    Cancelling the call (client gone) cancels the wait and the timer.
    """
    if timeout_ms < 0:
        return _tip_json(chain.snapshot().tip)
    waiting = chain.wait_for_tip(condition)
    if timeout_ms > 0:
        waiting.addTimeout(timeout_ms / 1000.0, chain.reactor,
                           onTimeoutCancel=lambda _cancelled, _timeout: chain.snapshot().tip)
    return waiting.addCallback(_tip_json)


@rpc_method(
    "waitfornewblock", category="hidden", signature="waitfornewblock (timeout)",
    args=[_TIMEOUT_ARG], help=_WAIT_HELP, result=_WAIT_RESULT,
    examples=example_cli("waitfornewblock", "1000") + example_rpc("waitfornewblock", "1000"))
def waitfornewblock(ctx: RPCContext, timeout: int) -> Any:
    chain = _chain(ctx)
    start = chain.snapshot().tip
    return _wait(chain, lambda tip: tip is not start, timeout)


@rpc_method(
    "waitforblock", category="hidden", signature="waitforblock <blockhash> (timeout)",
    args=[Arg("blockhash", STR, help="Block hash to wait for."), _TIMEOUT_ARG],
    help=_WAIT_HELP, result=_WAIT_RESULT,
    examples=(example_cli("waitforblock", _EXAMPLE_HASH + ", 1000")
              + example_rpc("waitforblock", _EXAMPLE_HASH + ", 1000")))
def waitforblock(ctx: RPCContext, blockhash: str, timeout: int) -> Any:
    target = uint256_from_hex(blockhash)
    return _wait(_chain(ctx), lambda tip: tip.hash == target, timeout)


@rpc_method(
    "waitforblockheight", category="hidden", signature="waitforblockheight <height> (timeout)",
    args=[Arg("height", INT, help="Block height to wait for (int)"), _TIMEOUT_ARG],
    help=("Waits for (at least) block height and returns the height and hash\n"
          "of the current tip.\n\n"
          "Returns the current block on timeout or exit."),
    result=_WAIT_RESULT,
    examples=(example_cli("waitforblockheight", '"100", 1000')
              + example_rpc("waitforblockheight", '"100", 1000')))
def waitforblockheight(ctx: RPCContext, height: int, timeout: int) -> Any:
    return _wait(_chain(ctx), lambda tip: tip.height >= height, timeout)


@rpc_method(
    "syncwithvalidationinterfacequeue", category="hidden",
    help="Waits for the validation interface queue to catch up on everything that was there "
         "when we entered this function.",
    examples=(example_cli("syncwithvalidationinterfacequeue", "")
              + example_rpc("syncwithvalidationinterfacequeue", "")))
def syncwithvalidationinterfacequeue(ctx: RPCContext) -> Deferred:
    return _chain(ctx).sync_listeners().addCallback(lambda _: None)


# ---------------------------------------------------------------- pruning

@rpc_method(
    "pruneblockchain", category="blockchain", signature="pruneblockchain",
    args=[Arg("height", INT, help="The block height to prune up to. May be set to a discrete "
              "height, or a unix timestamp\n                  to prune blocks whose block time "
              "is at least 2 hours older than the provided timestamp.")],
    result="n    (numeric) Height of the last block pruned.",
    examples=example_cli("pruneblockchain", "1000") + example_rpc("pruneblockchain", "1000"))
def pruneblockchain(ctx: RPCContext, height: int) -> Deferred:
    return _chain(ctx).call(prune_to, height)


#: What the ``blockchain`` entry point registers.
METHODS = [getbestblockhash, getblock, getblockchaininfo, getblockcount, getblockhash,
           getblockheader, getchaintips, getchaintxstats, getdifficulty, gettxout,
           gettxoutsetinfo, preciousblock, pruneblockchain, verifychain, invalidateblock,
           reconsiderblock, waitfornewblock, waitforblock, waitforblockheight,
           syncwithvalidationinterfacequeue]
