"""Mining and generating methods (Core 0.17's "== Mining ==" and "== Generating ==").

Registered through the ``coin.rpc`` entry point ``mining``. The handlers parse
requests and format replies; templates, proposals, submissions, long polls and
the statistics come from :class:`coin.mining.service.MiningService`, which reads
a consistent tip, UTXO set and pool on the validation worker.

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
  ``masternode`` fields name the elected masternode's payment (coinbase output 1,
  ``doc/masternode.md``); ``superblock`` lists a superblock's payments, the coinbase's
  last outputs (``doc/governance.md``).
- Proposals (BIP23) run the header, context-free and contextual block checks;
  the UTXO checks of Core's TestBlockValidity (ConnectBlock on a scratch view)
  need a non-mutating connect in ``ChainState`` that does not exist yet.
- ``getmininginfo`` reports Dash's ``currentblocksize`` and Core 0.17's
  ``currentblockweight`` (4 x the size: no witness data) and ``currentblocktx``,
  in Core 0.13's order; as in Core 0.17 they describe the last block this node
  assembled (getblocktemplate, generate), and are 0 until the first. They are
  that block's real figures, where Core's counters start with a reserve for the
  coinbase it has not built yet.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Dict, List, Optional, Sequence, Tuple

from twisted.internet.defer import Deferred

from coin.chain.access import ChainAccess
from coin.chainparams import MAX_BLOCK_SIGOPS, MAX_BLOCK_SIZE, ChainParams
from coin.consensus.errors import ValidationError
from coin.consensus.pow import compact_to_target
from coin.mining.service import MiningService
from coin.mining.stats import MiningInfo
from coin.mining.template import LongPollId, Template
from coin.governance.params import governance_params
from coin.masternode.params import masternode_params
from coin.spork import SPORK_9_SUPERBLOCKS_ENABLED
from coin.primitives.address import encode_address, try_decode_address
from coin.primitives.block import Block
from coin.primitives.hashes import hash_to_hex
from coin.primitives.serialize import ByteReader, DeserializationError
from coin.rpc.context import RPCContext
from coin.rpc.errors import (
    RPC_CLIENT_NOT_CONNECTED, RPC_DESERIALIZATION_ERROR, RPC_INTERNAL_ERROR,
    RPC_INVALID_ADDRESS_OR_KEY, RPC_INVALID_PARAMETER, RPC_TYPE_ERROR, RPCError,
)
from coin.rpc.methods.network import connection_count
from coin.primitives.hashes import is_hex
from coin.rpc.params import parse_hash_v
from coin.rpc.registry import (
    ANY, INT, INT64, OBJ, STR, Arg, RPCMethod, example_cli, example_rpc, rpc_method,
)
from coin.script.standard import destination_script, extract_destinations
from coin.views.amounts import real_to_json


def _chain(ctx: RPCContext) -> ChainAccess:
    return ctx.node.chain


def _mining(ctx: RPCContext) -> MiningService:
    """The node's mining service."""
    return ctx.node.mining


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
        hashes = await ctx.node.mining.generate(destination_script(destination), nblocks,
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


# ------------------------------------------------------------------ submitblock

@rpc_method(
    "submitblock", category="mining", signature='submitblock "hexdata"  ( "dummy" )',
    args=[Arg("hexdata", STR, help="the hex-encoded block data to submit"),
          Arg("dummy", ANY, default=None, help="dummy value, for compatibility with BIP22. "
              "This value is ignored.")],
    help=("Attempts to submit new block to network.\n"
          "See https://en.bitcoin.it/wiki/BIP_0022 for full specification."),
    examples=example_cli("submitblock", '"mydata"') + example_rpc("submitblock", '"mydata"'))
def submitblock(ctx: RPCContext, hexdata: str, dummy: Any) -> Deferred:
    block = decode_block(hexdata)
    if not block.txs or not block.txs[0].is_coinbase():
        raise RPCError(RPC_DESERIALIZATION_ERROR, "Block does not start with a coinbase")
    return _mining(ctx).submit_block(block)


# ------------------------------------------------------------------ getblocktemplate

def _template_transactions(template: Template) -> List[Dict[str, Any]]:
    """The template's pool transactions as BIP22 lists them (1-based ``depends``)."""
    selection = template.selection
    if selection is None:
        return []
    return [{"data": tx.serialize().hex(), "txid": tx.txid_hex, "hash": tx.txid_hex,
             "depends": depends, "fee": fee, "sigops": sigops}
            for tx, fee, sigops, depends in zip(selection.txs, selection.fees,
                                                selection.sigops, selection.depends)]


def _payments_json(outputs: Any, params: ChainParams) -> List[Dict[str, Any]]:
    """Dash's ``masternode`` and ``superblock`` arrays: payee, script and amount."""
    payments = []
    for out in outputs:
        _, destinations, _ = extract_destinations(out.script_pubkey)
        payments.append({"payee": encode_address(destinations[0], params) if destinations else "",
                         "script": out.script_pubkey.hex(), "amount": out.value})
    return payments


def template_json(template: Template, params: ChainParams,
                  force_version: bool, payments_enforced: bool = False,
                  superblock: Sequence[Tuple[bytes, int]] = (),
                  superblocks_enabled: bool = False) -> Dict[str, Any]:
    """The BIP22/23/9 template object in Core 0.17's key order (module docstring).
    ``superblock`` is what the superblock at the template's height pays: the coinbase's
    last outputs when the template carries them."""
    prev, block = template.prev, template.block
    outputs = block.txs[0].vout
    paid = [(out.script_pubkey, out.value) for out in outputs[len(outputs) - len(superblock):]]
    superblock_outputs = outputs[len(outputs) - len(superblock):] if superblock and \
        paid == list(superblock) else []
    header = block.header
    bits = template.version_bits(params)
    mutable = ["time", "transactions", "prevblock"]
    if force_version:
        mutable.append("version/force")
    return {
        "capabilities": ["proposal"],
        "version": bits.version,
        "rules": bits.rules,
        "vbavailable": bits.available,
        "vbrequired": 0,
        "previousblockhash": hash_to_hex(prev.hash),
        "transactions": _template_transactions(template),
        "coinbaseaux": {"flags": ""},
        "coinbasevalue": block.txs[0].total_out(),
        "longpollid": template.longpoll_id.text(),
        "target": "%064x" % compact_to_target(header.bits)[0],
        "mintime": prev.median_time_past() + 1,
        "mutable": mutable,
        "noncerange": "00000000ffffffff",
        "sigoplimit": MAX_BLOCK_SIGOPS,
        "sizelimit": MAX_BLOCK_SIZE,
        "curtime": header.time,
        "bits": "%08x" % header.bits,
        "height": prev.height + 1,
        # Dash 0.12's payment fields: the masternode is coinbase output 1, the superblock's
        # payments come last.
        "masternode": _payments_json(outputs[1:len(outputs) - len(superblock_outputs)], params),
        "masternode_payments_started":
            prev.height + 1 >= masternode_params(params.name).payments_start_height,
        "masternode_payments_enforced": payments_enforced,
        "superblock": _payments_json(superblock_outputs, params),
        "superblocks_started": prev.height + 1 >= governance_params(params).superblock_start,
        "superblocks_enabled": superblocks_enabled,
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


def _longpoll_id(mining: MiningService, longpollid: Any) -> LongPollId:
    """What a client's ``longpollid`` watches; anything but a string means "the current"."""
    if not isinstance(longpollid, str):
        return mining.current_longpoll_id()
    watched = parse_hash_v(longpollid[:64], "longpollid")
    counter = longpollid[64:]
    # ASCII digits only, and few enough for int() ("²" or 5,000 digits: just unseen).
    seen = (int(counter) if counter.isascii() and counter.isdigit() and len(counter) <= 19
            else -1)
    return LongPollId(watched, seen)


#: One payment in the template help's masternode and superblock arrays (Dash's text).
_PAYMENT_HELP = """      {
         "payee" : "xxxx",              (string) payee address
         "script" : "xxxx",             (string) payee scriptPubKey
         "amount": n                    (numeric) required amount to pay
      }
"""
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
  "masternode" : [                  (array) required masternode payments that must be included in the \
next block
""" + _PAYMENT_HELP + """  ],
  "masternode_payments_started" :  true|false, (boolean) true, if masternode payments started
  "masternode_payments_enforced" : true|false, (boolean) true, if masternode payments are enforced
  "superblock" : [                  (array) required superblock payees that must be included in the \
next block
""" + _PAYMENT_HELP + """      ,...
  ],
  "superblocks_started" : true|false, (boolean) true, if superblock payments started
  "superblocks_enabled" : true|false  (boolean) true, if superblock payments are enabled
}

Examples:
""" + example_cli("getblocktemplate") + example_rpc("getblocktemplate")


async def getblocktemplate_(ctx: RPCContext, template_request: Optional[Dict[str, Any]]) -> Any:
    chain = _chain(ctx)
    mining = _mining(ctx)
    mode, longpollid, force_version = _read_request(template_request)
    if mode == "proposal":
        data = template_request.get("data")
        if not isinstance(data, str):
            raise RPCError(RPC_TYPE_ERROR, "Missing data String key for proposal")
        return await mining.check_proposal(decode_block(data))
    if mode != "template":
        raise RPCError(RPC_INVALID_PARAMETER, "Invalid mode")
    if chain.params.name != "regtest" and connection_count(ctx) == 0:
        raise RPCError(RPC_CLIENT_NOT_CONNECTED, "Coin is not connected!")
    if longpollid is not None:
        await mining.wait_for_change(_longpoll_id(mining, longpollid))
    template = await mining.template()
    masternodes = ctx.node.masternodes  # None only on in-process test nodes without them
    state = chain.state
    height = template.prev.height + 1
    superblock = state.superblock_payments(height) if state.superblock_payments is not None else ()
    sporks = ctx.node.sporks
    return template_json(template, chain.params, force_version,
                         masternodes is not None and masternodes.payments_enforced(), superblock,
                         sporks is not None and sporks.is_active(SPORK_9_SUPERBLOCKS_ENABLED,
                                                                 int(chain.clock.adjusted_time())))


getblocktemplate = RPCMethod(
    name="getblocktemplate", category="mining", handler=getblocktemplate_,
    help_text=_TEMPLATE_HELP,
    args=(Arg("template_request", OBJ, default=None, help="A json object"),))


# ------------------------------------------------------------------ hash rate

def _hashps_json(rate: Optional[float]) -> Any:
    """Core's integer 0 where there was nothing to measure, else the double as Core prints it."""
    return 0 if rate is None else real_to_json(rate)


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
    return _mining(ctx).network_hashps(nblocks, height).addCallback(_hashps_json)


# ------------------------------------------------------------------ getmininginfo

def _mining_info_json(info: MiningInfo, warnings: str) -> Dict[str, Any]:
    """getmininginfo's object; see the module docstring for the currentblock* fields."""
    return {
        "blocks": info.blocks,
        "currentblocksize": info.last_block.size,
        "currentblockweight": info.last_block.weight,
        "currentblocktx": info.last_block.tx,
        "difficulty": real_to_json(info.difficulty),
        "networkhashps": _hashps_json(info.network_hashps),
        "pooledtx": info.pooled_tx,
        "chain": info.chain,
        "warnings": warnings,
    }


@rpc_method(
    "getmininginfo", category="mining",
    help="Returns a json object containing mining-related information.",
    result=("{\n"
            '  "blocks": nnn,             (numeric) The current block\n'
            '  "currentblocksize": nnn,   (numeric) The last block size\n'
            '  "currentblockweight": nnn, (numeric) The last block weight\n'
            '  "currentblocktx": nnn,     (numeric) The last block transaction\n'
            '  "difficulty": xxx.xxxxx    (numeric) The current difficulty\n'
            '  "networkhashps": nnn,      (numeric) The network hashes per second\n'
            '  "pooledtx": n              (numeric) The size of the mempool\n'
            '  "chain": "xxxx",           (string) current network name as defined in BIP70 '
            "(main, test, regtest)\n"
            '  "warnings": "..."          (string) any network and blockchain warnings\n'
            "}"),
    examples=example_cli("getmininginfo") + example_rpc("getmininginfo"))
def getmininginfo(ctx: RPCContext) -> Deferred:
    return _mining(ctx).info().addCallback(_mining_info_json, ctx.node.chain.warnings.text())


#: What the ``mining`` entry point registers.
METHODS = [generatetoaddress, submitblock, getblocktemplate, getnetworkhashps, getmininginfo]
