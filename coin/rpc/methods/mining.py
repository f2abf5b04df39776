"""Mining and generating methods (Core 0.17's "== Mining ==" and "== Generating ==").

Registered through the ``coin.rpc`` entry point ``mining``. Templates are
assembled and blocks checked on the validation worker (``ChainAccess.call``),
so a consistent tip and UTXO view is read and the reactor never waits on it.

Where this differs from Core 0.17, and why:

- ``getblocktemplate`` does not refuse on an isolated regtest node (the reference
  answers -9 there; shared/reference/README.md). On main and test it refuses
  with -9 as Core does, and until the P2P layer exists a node there has no peers.
- Templates are filled from the mempool by ancestor fee rate
  (``coin.mining.selection``). ``longpollid`` is the tip hash followed by the
  pool's update counter; a long poll returns on a new tip, or (as Core) when
  the pool changed and a minute has passed, re-checking every 10 seconds.
- No segwit: no ``weight``/``weightlimit``/``default_witness_commitment``;
  ``sigoplimit``/``sizelimit`` are this chain's legacy limits. Dash 0.12's
  ``masternode``/``superblock`` fields are present and say what is true here:
  nothing is owed to masternodes or superblocks.
- Proposals (BIP23) run the header, context-free and contextual block checks;
  the UTXO checks of Core's TestBlockValidity (ConnectBlock on a scratch view)
  need a non-mutating connect in ``ChainState`` that does not exist yet.
- ``getmininginfo`` reports ``currentblocksize`` (Dash; ``currentblockweight``
  is segwit's) and, with ``currentblocktx``, describes the block this node would
  assemble now; Core reports its last assembled template (0 until the first).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

from twisted.internet import task
from twisted.internet.defer import Deferred, DeferredList
from twisted.internet.threads import deferToThread

from coin.chain.access import ChainAccess
from coin.chain.chainstate import ChainState
from coin.chain.index import BLOCK_FAILED_CHILD, BLOCK_FAILED_VALID, BLOCK_VALID_SCRIPTS, BlockIndexEntry
from coin.chain.snapshot import ChainSnapshot
from coin.chainparams import MAX_BLOCK_SIGOPS, MAX_BLOCK_SIZE, ChainParams
from coin.consensus.block_check import check_block
from coin.consensus.errors import ValidationError
from coin.consensus.pow import compact_to_target, get_difficulty
from coin.consensus.softforks import check_block_contextual, check_header_contextual
from coin.consensus.versionbits import ACTIVE, LOCKED_IN, STARTED, deployment_state
from coin.mining.assembler import create_block_from_pool
from coin.mining.selection import Selection
from coin.primitives.address import try_decode_address
from coin.primitives.block import Block
from coin.primitives.hashes import hash_to_hex
from coin.primitives.script import OP_TRUE
from coin.primitives.serialize import ByteReader, DeserializationError
from coin.rpc.context import RPCContext
from coin.rpc.errors import (
    RPC_CLIENT_NOT_CONNECTED, RPC_DESERIALIZATION_ERROR, RPC_INTERNAL_ERROR,
    RPC_INVALID_ADDRESS_OR_KEY, RPC_INVALID_PARAMETER, RPC_TYPE_ERROR, RPCError,
)
from coin.rpc.methods.network import connection_count
from coin.rpc.params import is_hex, parse_hash_v
from coin.rpc.registry import (
    ANY, INT, INT64, OBJ, STR, Arg, RPCMethod, example_cli, example_rpc, rpc_method,
)
from coin.script.standard import destination_script
from coin.views.amounts import real_to_json

#: Dash's nPowTargetTimespan (one day): with the target spacing it gives the
#: "difficulty adjustment interval" getnetworkhashps falls back to for nblocks <= 0.
POW_TARGET_TIMESPAN = 24 * 60 * 60
#: The coinbase script Core's getblocktemplate assembles with (the miner replaces it).
TEMPLATE_SCRIPT = bytes((OP_TRUE,))


def _chain(ctx: RPCContext) -> ChainAccess:
    return ctx.node.chain


# ------------------------------------------------------------------ generatetoaddress

@rpc_method(
    "generatetoaddress", category="generating",
    signature="generatetoaddress nblocks address (maxtries)",
    args=[Arg("nblocks", INT, help="How many blocks are generated immediately."),
          Arg("address", STR, help="The address to send the newly generated coin to."),
          Arg("maxtries", INT, default=1000000,
              help="How many iterations to try (default = 1000000).")],
    help="Mine blocks immediately to a specified address (before the RPC call returns)",
    result="[ blockhashes ]     (array) hashes of blocks generated",
    examples="\nGenerate 11 blocks to myaddress\n" + example_cli("generatetoaddress",
                                                               '11 "myaddress"'))
async def generatetoaddress(ctx: RPCContext, nblocks: int, address: str,
                            maxtries: int) -> List[str]:
    chain = _chain(ctx)
    destination = try_decode_address(address, chain.params)
    if destination is None:
        raise RPCError(RPC_INVALID_ADDRESS_OR_KEY, "Error: Invalid address")
    # Core keeps the count of tries in a uint64_t: a negative maxtries means "no limit".
    try:
        hashes = await chain.generate(destination_script(destination), nblocks,
                                      maxtries % (1 << 64))
    except ValidationError:
        raise RPCError(RPC_INTERNAL_ERROR, "ProcessNewBlock, block not accepted") from None
    return [hash_to_hex(h) for h in hashes]


# ------------------------------------------------------------------ block decoding

def decode_block(hexdata: str) -> Block:
    """Core's DecodeHexBlk: hex of a block, trailing bytes ignored; -22 otherwise."""
    try:
        if not is_hex(hexdata):
            raise DeserializationError("not hex")
        return Block.read(ByteReader(bytes.fromhex(hexdata)))
    except DeserializationError:
        raise RPCError(RPC_DESERIALIZATION_ERROR, "Block decode failed") from None


def _duplicate_result(entry: BlockIndexEntry) -> Optional[str]:
    """BIP22's answer for a block already in the index, None if it must be processed."""
    if entry.is_valid(BLOCK_VALID_SCRIPTS):
        return "duplicate"
    if entry.failed():
        return "duplicate-invalid"
    return None


def _reason(error: ValidationError) -> str:
    """Core's BIP22ValidationResult for an invalid state."""
    return error.reason or "rejected"


# ------------------------------------------------------------------ submitblock

@rpc_method(
    "submitblock", category="mining", signature='submitblock "hexdata"  ( "dummy" )',
    args=[Arg("hexdata", STR, help="the hex-encoded block data to submit"),
          Arg("dummy", ANY, default=None, help="dummy value, for compatibility with BIP22. "
              "This value is ignored.")],
    help=("Attempts to submit new block to network.\n"
          "See https://en.bitcoin.it/wiki/BIP_0022 for full specification."),
    examples=example_cli("submitblock", '"mydata"') + example_rpc("submitblock", '"mydata"'))
async def submitblock(ctx: RPCContext, hexdata: str, dummy: Any) -> Optional[str]:
    chain = _chain(ctx)
    block = decode_block(hexdata)
    if not block.txs or not block.txs[0].is_coinbase():
        raise RPCError(RPC_DESERIALIZATION_ERROR, "Block does not start with a coinbase")
    entry = chain.state.lookup(block.hash)
    if entry is not None:
        known = _duplicate_result(entry)
        if known is not None:
            return known
        if entry.have_data():
            return "duplicate"  # stored but not (yet) on the best chain: not a new block
    try:
        entry = await chain.submit_block(block)
    except ValidationError as error:
        entry = chain.state.lookup(block.hash)
        if entry is not None and entry.status & BLOCK_FAILED_CHILD \
                and not entry.status & BLOCK_FAILED_VALID:
            # An ancestor failed to connect; Core never checks this block itself.
            return "inconclusive"
        return _reason(error)
    # Valid once connected; a block stored on a side branch was never checked in full.
    return None if entry.is_valid(BLOCK_VALID_SCRIPTS) else "inconclusive"


# ------------------------------------------------------------------ getblocktemplate

class Template(NamedTuple):
    """A block to work on and the deployment states for the block after ``prev``."""

    prev: BlockIndexEntry
    block: Block
    states: Dict[str, str]
    #: The pool transactions chosen (None when there is no pool) and the pool's counter.
    selection: Optional[Selection] = None
    transactions_updated: int = 0


def assemble_template(chainstate: ChainState, pool: Any = None) -> Template:
    """Core's CreateNewBlock for getblocktemplate (on the writer thread)."""
    prev = chainstate.tip
    updated = pool.transactions_updated if pool is not None else 0
    block, selection = create_block_from_pool(chainstate, pool, TEMPLATE_SCRIPT)
    states = {d.name: deployment_state(prev, chainstate.params, d.name, chainstate.versionbits)
              for d in chainstate.params.deployments}
    return Template(prev, block, states, selection, updated)


def _template_transactions(template: Template) -> List[Dict[str, Any]]:
    selection = template.selection
    if selection is None:
        return []
    return [{"data": tx.serialize().hex(), "txid": tx.txid_hex, "hash": tx.txid_hex,
             "depends": depends, "fee": fee, "sigops": sigops}
            for tx, fee, sigops, depends in zip(selection.txs, selection.fees,
                                                selection.sigops, selection.depends)]


def check_proposal(chainstate: ChainState, block: Block) -> Optional[str]:
    """BIP23 proposal checks on the writer thread: None if valid, else the BIP22 string."""
    entry = chainstate.lookup(block.hash)
    if entry is not None:
        return _duplicate_result(entry) or "duplicate-inconclusive"
    tip = chainstate.tip
    if block.header.prev_hash != tip.hash:
        return "inconclusive-not-best-prevblk"
    params = chainstate.params
    try:
        check_header_contextual(block.header, tip, params, chainstate.adjusted_time())
        check_block(block, params, check_pow=False)
        check_block_contextual(block, tip, params, chainstate.versionbits)
    except ValidationError as error:
        return _reason(error)
    return None


def template_json(template: Template, params: ChainParams,
                  force_version: bool) -> Dict[str, Any]:
    """The BIP22/23/9 template object in Core 0.17's key order (module docstring)."""
    prev, block, states = template.prev, template.block, template.states
    header = block.header
    version = header.version
    rules = []
    available = {}
    for deployment in params.deployments:
        state = states[deployment.name]
        if state == LOCKED_IN:
            version |= 1 << deployment.bit
        if state in (STARTED, LOCKED_IN):
            available[deployment.name] = deployment.bit
        elif state == ACTIVE:
            rules.append(deployment.name)
    mutable = ["time", "transactions", "prevblock"]
    if force_version:
        mutable.append("version/force")
    return {
        "capabilities": ["proposal"],
        "version": version,
        "rules": rules,
        "vbavailable": available,
        "vbrequired": 0,
        "previousblockhash": hash_to_hex(prev.hash),
        "transactions": _template_transactions(template),
        "coinbaseaux": {"flags": ""},
        "coinbasevalue": block.txs[0].vout[0].value,
        "longpollid": hash_to_hex(prev.hash) + str(template.transactions_updated),
        "target": "%064x" % compact_to_target(header.bits)[0],
        "mintime": prev.median_time_past() + 1,
        "mutable": mutable,
        "noncerange": "00000000ffffffff",
        "sigoplimit": MAX_BLOCK_SIGOPS,
        "sizelimit": MAX_BLOCK_SIZE,
        "curtime": header.time,
        "bits": "%08x" % header.bits,
        "height": prev.height + 1,
        # Dash 0.12's payment fields: no masternode or superblock is ever owed here.
        "masternode": {},
        "masternode_payments_started": False,
        "masternode_payments_enforced": False,
        "superblock": [],
        "superblocks_started": False,
        "superblocks_enabled": False,
    }


_RULE = Arg("rule", STR)
_MAX_VERSION = Arg("maxversion", INT64)


def _read_request(request: Optional[Dict[str, Any]]) -> Tuple[str, Any, bool]:
    """``(mode, longpollid, version/force)`` from a template request, as Core reads it."""
    if request is None:
        return "template", None, False
    mode = request.get("mode")
    if mode is None:
        mode = "template"
    elif not isinstance(mode, str):
        raise RPCError(RPC_INVALID_PARAMETER, "Invalid mode")
    force_version = False
    rules = request.get("rules")
    maxversion = request.get("maxversion")
    if isinstance(rules, list):
        for rule in rules:
            _RULE.convert(rule)
    elif isinstance(maxversion, (int, Decimal)) and not isinstance(maxversion, bool):
        # Only pre-BIP9 clients (no "rules") may ask for version/force.
        force_version = _MAX_VERSION.convert(maxversion) >= 2
    return mode, request.get("longpollid"), force_version


#: Core's long poll: the pool is first checked after a minute, then every 10 seconds.
LONGPOLL_FIRST_CHECK = 60
LONGPOLL_RECHECK = 10


async def _wait_for_long_poll(chain: ChainAccess, longpollid: Any) -> None:
    """BIP22 long polling: return on a new tip, or once the pool changed (after a minute)."""
    pool = chain.mempool
    if isinstance(longpollid, str):
        watched = parse_hash_v(longpollid[:64], "longpollid")
        counter = longpollid[64:]
        seen = int(counter) if counter.isdigit() else -1
    else:
        watched = chain.state.tip.hash
        seen = pool.transactions_updated if pool is not None else 0
    new_tip = chain.wait_for_tip(lambda tip: tip.hash != watched)
    delay = LONGPOLL_FIRST_CHECK
    timer: Optional[Deferred] = None
    try:
        while not new_tip.called:
            timer = task.deferLater(chain.reactor, delay, lambda: None)
            await DeferredList([new_tip, timer], fireOnOneCallback=True, consumeErrors=True)
            if new_tip.called:
                break
            if pool is not None and pool.transactions_updated != seen:
                return
            delay = LONGPOLL_RECHECK
    finally:
        if timer is not None and not timer.called:
            timer.cancel()
        if not new_tip.called:
            new_tip.cancel()


_TEMPLATE_HELP = """\
getblocktemplate ( TemplateRequest )

If the request parameters include a 'mode' key, that is used to explicitly select between the default \
'template' request or a 'proposal'.
It returns data needed to construct a block to work on.
For full specification, see BIPs 22, 23 and 9:
    https://github.com/bitcoin/bips/blob/master/bip-0022.mediawiki
    https://github.com/bitcoin/bips/blob/master/bip-0023.mediawiki
    https://github.com/bitcoin/bips/blob/master/bip-0009.mediawiki#getblocktemplate_changes

Arguments:
1. template_request         (json object, optional) A json object in the following spec
     {
       "mode":"template"    (string, optional) This must be set to "template", "proposal" (see BIP 23), \
or omitted
       "capabilities":[     (array, optional) A list of strings
           "support"          (string) client side supported feature, 'longpoll', 'coinbasetxn', \
'coinbasevalue', 'proposal', 'serverlist', 'workid'
           ,...
       ],
       "rules":[            (array, optional) A list of strings
           "support"          (string) client side supported softfork deployment
           ,...
       ]
     }


Result:
{
  "capabilities" : [ "capability", ... ],    (array of strings) specific client side supported features
  "version" : n,                    (numeric) The preferred block version
  "rules" : [ "rulename", ... ],    (array of strings) specific block rules that are to be enforced
  "vbavailable" : {                 (json object) set of pending, supported versionbit (BIP 9) softfork \
deployments
      "rulename" : bitnumber          (numeric) identifies the bit number as indicating acceptance and \
readiness for the named softfork rule
      ,...
  },
  "vbrequired" : n,                 (numeric) bit mask of versionbits the server requires set in submissions
  "previousblockhash" : "xxxx",     (string) The hash of current highest block
  "transactions" : [                (array) contents of non-coinbase transactions that should be \
included in the next block
      {
         "data" : "xxxx",             (string) transaction data encoded in hexadecimal (byte-for-byte)
         "txid" : "xxxx",             (string) transaction id encoded in little-endian hexadecimal
         "depends" : [                (array) array of numbers
             n                          (numeric) transactions before this one (by 1-based index in \
'transactions' list) that must be present in the final block if this one is
             ,...
         ],
         "fee": n,                    (numeric) difference in value between transaction inputs and \
outputs (in base units)
         "sigops" : n,                (numeric) total SigOps, as counted for purposes of block limits
      }
      ,...
  ],
  "coinbaseaux" : {                 (json object) data that should be included in the coinbase's \
scriptSig content
      "flags" : "xx"                  (string) key name is to be ignored, and value included in scriptSig
  },
  "coinbasevalue" : n,              (numeric) maximum allowable input to coinbase transaction, including \
the generation award and transaction fees (in base units)
  "longpollid" : "str",             (string) an id to include with a request to longpoll on an update to \
this template
  "target" : "xxxx",                (string) The hash target
  "mintime" : xxx,                  (numeric) The minimum timestamp appropriate for next block time in \
seconds since epoch (Jan 1 1970 GMT)
  "mutable" : [                     (array of string) list of ways the block template may be changed
     "value"                          (string) A way the block template may be changed, e.g. 'time', \
'transactions', 'prevblock'
     ,...
  ],
  "noncerange" : "00000000ffffffff",(string) A range of valid nonces
  "sigoplimit" : n,                 (numeric) limit of sigops in blocks
  "sizelimit" : n,                  (numeric) limit of block size
  "curtime" : ttt,                  (numeric) current timestamp in seconds since epoch (Jan 1 1970 GMT)
  "bits" : "xxxxxxxx",              (string) compressed target of next block
  "height" : n,                     (numeric) The height of the next block
  "masternode" : { },               (json object) required masternode payee (none on this chain)
  "masternode_payments_started" : false,  (boolean) masternode payments have started (never on this chain)
  "masternode_payments_enforced" : false, (boolean) masternode payments are enforced (never on this chain)
  "superblock" : [ ],               (array) required superblock payees (none on this chain)
  "superblocks_started" : false,    (boolean) superblock payments have started (never on this chain)
  "superblocks_enabled" : false     (boolean) superblock payments are enabled (never on this chain)
}

Examples:
""" + example_cli("getblocktemplate") + example_rpc("getblocktemplate")


async def getblocktemplate_(ctx: RPCContext, request: Optional[Dict[str, Any]]) -> Any:
    chain = _chain(ctx)
    mode, longpollid, force_version = _read_request(request)
    if mode == "proposal":
        data = request.get("data")
        if not isinstance(data, str):
            raise RPCError(RPC_TYPE_ERROR, "Missing data String key for proposal")
        return await chain.call(check_proposal, decode_block(data))
    if mode != "template":
        raise RPCError(RPC_INVALID_PARAMETER, "Invalid mode")
    if chain.params.name != "regtest" and connection_count(ctx) == 0:
        raise RPCError(RPC_CLIENT_NOT_CONNECTED, "Coin is not connected!")
    if longpollid is not None:
        await _wait_for_long_poll(chain, longpollid)
    template = await chain.call(assemble_template, chain.mempool)
    return template_json(template, chain.params, force_version)


getblocktemplate = RPCMethod(
    name="getblocktemplate", category="mining", handler=getblocktemplate_,
    help_text=_TEMPLATE_HELP,
    args=(Arg("template_request", OBJ, default=None, help="A json object"),))


# ------------------------------------------------------------------ hash rate

def _uint256_to_double(value: int) -> float:
    """arith_uint256::getdouble: summed 32-bit words, low first (rounds like Core)."""
    result = 0.0
    factor = 1.0
    for _ in range(8):
        result += factor * (value & 0xFFFFFFFF)
        factor *= 4294967296.0
        value >>= 32
    return result


def network_hashps(chainstate: ChainState | ChainSnapshot, lookup: int, height: int) -> Any:
    """Core's GetNetworkHashPS: work over the time span of ``lookup`` blocks up to ``height``.

    Returns the integer 0 where Core does (genesis, no elapsed time), else a
    double printed as Core prints it.
    """
    last = chainstate.tip
    if 0 <= height < chainstate.height:
        last = chainstate.at_height(height)
    if last is None or last.height == 0:
        return 0
    if lookup <= 0:
        lookup = last.height % (POW_TARGET_TIMESPAN // chainstate.params.target_spacing) + 1
    lookup = min(lookup, last.height)
    first = last
    min_time = max_time = last.time
    for _ in range(lookup):
        first = first.prev
        min_time = min(min_time, first.time)
        max_time = max(max_time, first.time)
    if min_time == max_time:
        return 0
    return real_to_json(_uint256_to_double(last.chainwork - first.chainwork)
                        / (max_time - min_time))


@rpc_method(
    "getnetworkhashps", category="mining", signature="getnetworkhashps ( nblocks height )",
    args=[Arg("nblocks", INT, default=120, help=(
              "The number of blocks, or -1 for blocks since last difficulty change.")),
          Arg("height", INT, default=-1, help=(
              "To estimate at the time of the given height."))],
    help=("Returns the estimated network hashes per second based on the last n blocks.\n"
          "Pass in [blocks] to override # of blocks, -1 specifies since last difficulty change.\n"
          "Pass in [height] to estimate the network speed at the time when a certain block "
          "was found."),
    result="x             (numeric) Hashes per second estimated",
    examples=example_cli("getnetworkhashps") + example_rpc("getnetworkhashps"))
def getnetworkhashps(ctx: RPCContext, nblocks: int, height: int) -> Deferred:
    # A long walk down the in-memory index: off the reactor, without holding the writer.
    return deferToThread(network_hashps, _chain(ctx).snapshot(), nblocks, height)


# ------------------------------------------------------------------ getmininginfo

def _mining_info(chainstate: ChainState, pool: Any) -> Dict[str, Any]:
    """getmininginfo from one consistent view (writer thread); see the module docstring."""
    tip = chainstate.tip
    block, _ = create_block_from_pool(chainstate, pool, TEMPLATE_SCRIPT)
    return {
        "blocks": chainstate.height,
        "currentblocksize": block.size,
        "currentblocktx": len(block.txs) - 1,
        "difficulty": real_to_json(get_difficulty(tip.bits)),
        "networkhashps": network_hashps(chainstate, 120, -1),
        "pooledtx": len(pool) if pool is not None else 0,
        "chain": chainstate.params.name,
        "warnings": "",
    }


@rpc_method(
    "getmininginfo", category="mining",
    help="Returns a json object containing mining-related information.",
    result=("{\n"
            '  "blocks": nnn,             (numeric) The current block\n'
            '  "currentblocksize": nnn,   (numeric) The size of the block this node would mine now\n'
            '  "currentblocktx": nnn,     (numeric) The number of transactions (besides the '
            "coinbase) in the block this node would mine now\n"
            '  "difficulty": xxx.xxxxx    (numeric) The current difficulty\n'
            '  "networkhashps": nnn,      (numeric) The network hashes per second\n'
            '  "pooledtx": n              (numeric) The size of the mempool\n'
            '  "chain": "xxxx",           (string) current network name as defined in BIP70 '
            "(main, test, regtest)\n"
            '  "warnings": "..."          (string) any network and blockchain warnings\n'
            "}"),
    examples=example_cli("getmininginfo") + example_rpc("getmininginfo"))
def getmininginfo(ctx: RPCContext) -> Deferred:
    chain = _chain(ctx)
    return chain.call(_mining_info, chain.mempool)


#: What the ``mining`` entry point registers.
METHODS = [generatetoaddress, submitblock, getblocktemplate, getnetworkhashps, getmininginfo]
