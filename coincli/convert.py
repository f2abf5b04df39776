"""Which RPC arguments coin-cli sends as JSON rather than as strings.

Core's rule (rpc/client.cpp): an argument listed here as (method, position,
name) is parsed as a JSON value (number, boolean, null, object, array, or a
quoted string); every other argument is sent as the string typed. The table
is Core 0.17's plus Dash Core's methods that do not clash with it; it must
follow the server's parameter lists (doc/cli.md).
"""

from __future__ import annotations

from coincli import jsonfmt
from coincli.errors import CliError

CONVERT_PARAMS: tuple[tuple[str, int, str], ...] = (
    ("setmocktime", 0, "timestamp"),
    ("generate", 0, "nblocks"),
    ("generate", 1, "maxtries"),
    ("generatetoaddress", 0, "nblocks"),
    ("generatetoaddress", 2, "maxtries"),
    ("getnetworkhashps", 0, "nblocks"),
    ("getnetworkhashps", 1, "height"),
    ("sendtoaddress", 1, "amount"),
    ("sendtoaddress", 4, "subtractfeefromamount"),
    ("sendtoaddress", 5, "replaceable"),
    ("sendtoaddress", 6, "conf_target"),
    ("settxfee", 0, "amount"),
    ("sethdseed", 0, "newkeypool"),
    ("getreceivedbyaddress", 1, "minconf"),
    ("getreceivedbyaccount", 1, "minconf"),
    ("getreceivedbylabel", 1, "minconf"),
    ("listreceivedbyaddress", 0, "minconf"),
    ("listreceivedbyaddress", 1, "include_empty"),
    ("listreceivedbyaddress", 2, "include_watchonly"),
    ("listreceivedbyaccount", 0, "minconf"),
    ("listreceivedbyaccount", 1, "include_empty"),
    ("listreceivedbyaccount", 2, "include_watchonly"),
    ("listreceivedbylabel", 0, "minconf"),
    ("listreceivedbylabel", 1, "include_empty"),
    ("listreceivedbylabel", 2, "include_watchonly"),
    ("getbalance", 1, "minconf"),
    ("getbalance", 2, "include_watchonly"),
    ("getblockhash", 0, "height"),
    ("waitforblockheight", 0, "height"),
    ("waitforblockheight", 1, "timeout"),
    ("waitforblock", 1, "timeout"),
    ("waitfornewblock", 0, "timeout"),
    ("move", 2, "amount"),
    ("move", 3, "minconf"),
    ("sendfrom", 2, "amount"),
    ("sendfrom", 3, "minconf"),
    ("listtransactions", 1, "count"),
    ("listtransactions", 2, "skip"),
    ("listtransactions", 3, "include_watchonly"),
    ("listaccounts", 0, "minconf"),
    ("listaccounts", 1, "include_watchonly"),
    ("walletpassphrase", 1, "timeout"),
    ("getblocktemplate", 0, "template_request"),
    ("listsinceblock", 1, "target_confirmations"),
    ("listsinceblock", 2, "include_watchonly"),
    ("listsinceblock", 3, "include_removed"),
    ("sendmany", 1, "amounts"),
    ("sendmany", 2, "minconf"),
    ("sendmany", 4, "subtractfeefrom"),
    ("sendmany", 5, "replaceable"),
    ("sendmany", 6, "conf_target"),
    ("scantxoutset", 1, "scanobjects"),
    ("addmultisigaddress", 0, "nrequired"),
    ("addmultisigaddress", 1, "keys"),
    ("createmultisig", 0, "nrequired"),
    ("createmultisig", 1, "keys"),
    ("listunspent", 0, "minconf"),
    ("listunspent", 1, "maxconf"),
    ("listunspent", 2, "addresses"),
    ("listunspent", 3, "include_unsafe"),
    ("listunspent", 4, "query_options"),
    ("getblock", 1, "verbosity"),
    ("getblock", 1, "verbose"),
    ("getblockheader", 1, "verbose"),
    ("getchaintxstats", 0, "nblocks"),
    ("gettransaction", 1, "include_watchonly"),
    ("getrawtransaction", 1, "verbose"),
    ("createrawtransaction", 0, "inputs"),
    ("createrawtransaction", 1, "outputs"),
    ("createrawtransaction", 2, "locktime"),
    ("createrawtransaction", 3, "replaceable"),
    ("decoderawtransaction", 1, "iswitness"),
    ("signrawtransaction", 1, "prevtxs"),
    ("signrawtransaction", 2, "privkeys"),
    ("signrawtransactionwithkey", 1, "privkeys"),
    ("signrawtransactionwithkey", 2, "prevtxs"),
    ("signrawtransactionwithwallet", 1, "prevtxs"),
    ("sendrawtransaction", 1, "allowhighfees"),
    ("testmempoolaccept", 0, "rawtxs"),
    ("testmempoolaccept", 1, "allowhighfees"),
    ("combinerawtransaction", 0, "txs"),
    ("fundrawtransaction", 1, "options"),
    ("fundrawtransaction", 2, "iswitness"),
    ("walletcreatefundedpsbt", 0, "inputs"),
    ("walletcreatefundedpsbt", 1, "outputs"),
    ("walletcreatefundedpsbt", 2, "locktime"),
    ("walletcreatefundedpsbt", 3, "options"),
    ("walletcreatefundedpsbt", 4, "bip32derivs"),
    ("walletprocesspsbt", 1, "sign"),
    ("walletprocesspsbt", 3, "bip32derivs"),
    ("createpsbt", 0, "inputs"),
    ("createpsbt", 1, "outputs"),
    ("createpsbt", 2, "locktime"),
    ("createpsbt", 3, "replaceable"),
    ("combinepsbt", 0, "txs"),
    ("finalizepsbt", 1, "extract"),
    ("converttopsbt", 1, "permitsigdata"),
    ("converttopsbt", 2, "iswitness"),
    ("gettxout", 1, "n"),
    ("gettxout", 2, "include_mempool"),
    ("gettxoutproof", 0, "txids"),
    ("lockunspent", 0, "unlock"),
    ("lockunspent", 1, "transactions"),
    ("importprivkey", 2, "rescan"),
    ("importaddress", 2, "rescan"),
    ("importaddress", 3, "p2sh"),
    ("importpubkey", 2, "rescan"),
    ("importmulti", 0, "requests"),
    ("importmulti", 1, "options"),
    ("verifychain", 0, "checklevel"),
    ("verifychain", 1, "nblocks"),
    ("getblockstats", 0, "hash_or_height"),
    ("getblockstats", 1, "stats"),
    ("pruneblockchain", 0, "height"),
    ("keypoolrefill", 0, "newsize"),
    ("getrawmempool", 0, "verbose"),
    ("estimatesmartfee", 0, "conf_target"),
    ("estimaterawfee", 0, "conf_target"),
    ("estimaterawfee", 1, "threshold"),
    ("prioritisetransaction", 1, "dummy"),
    ("prioritisetransaction", 2, "fee_delta"),
    ("setban", 2, "bantime"),
    ("setban", 3, "absolute"),
    ("setnetworkactive", 0, "state"),
    ("getmempoolancestors", 1, "verbose"),
    ("getmempooldescendants", 1, "verbose"),
    ("bumpfee", 1, "options"),
    ("logging", 0, "include"),
    ("logging", 1, "exclude"),
    ("disconnectnode", 1, "nodeid"),
    # Echo with conversion (for testing only)
    *(("echojson", i, "arg%d" % i) for i in range(10)),
    ("rescanblockchain", 0, "start_height"),
    ("rescanblockchain", 1, "stop_height"),
    ("createwallet", 1, "disable_private_keys"),
    # Dash Core
    ("getblockhashes", 0, "high"),
    ("getblockhashes", 1, "low"),
    ("getaddresstxids", 0, "addresses"),
    ("getaddressbalance", 0, "addresses"),
    ("getaddressdeltas", 0, "addresses"),
    ("getaddressutxos", 0, "addresses"),
    ("getaddressmempool", 0, "addresses"),
    ("getspentinfo", 0, "json"),
    ("getspecialtxes", 1, "type"),
    ("getspecialtxes", 2, "count"),
    ("getspecialtxes", 3, "skip"),
    ("getspecialtxes", 4, "verbosity"),
    ("getsuperblockbudget", 0, "index"),
    ("spork", 1, "value"),
    ("voteraw", 1, "tx_index"),
    ("voteraw", 5, "time"),
    ("getblockheaders", 1, "count"),
    ("getblockheaders", 2, "verbose"),
    ("getmerkleblocks", 2, "count"),
    ("sendrawtransaction", 2, "instantsend"),
    ("sendrawtransaction", 3, "bypasslimits"),
    ("listaddressbalances", 0, "minamount"),
)

_BY_POSITION = frozenset((method, index) for method, index, _ in CONVERT_PARAMS)
_BY_NAME = frozenset((method, name) for method, _, name in CONVERT_PARAMS)


def parse_json_arg(text: str) -> object:
    """One JSON value of any kind, bare numbers included (Core's ParseNonRFCJSONValue)."""
    try:
        value = jsonfmt.loads("[" + text + "]")
    except (ValueError, RecursionError):
        value = None
    if not isinstance(value, list) or len(value) != 1:
        raise CliError("Error parsing JSON:" + text)
    return value[0]


def convert_positional(method: str, args: list[str]) -> list[object]:
    """The ``params`` array for ``method`` called with ``args``."""
    return [parse_json_arg(arg) if (method, index) in _BY_POSITION else arg
            for index, arg in enumerate(args)]


def convert_named(method: str, args: list[str]) -> dict[str, object]:
    """The ``params`` object for ``-named`` arguments ``name=value`` (repeated name: last wins)."""
    params: dict[str, object] = {}
    for arg in args:
        name, eq, value = arg.partition("=")
        if not eq:
            raise CliError("No '=' in named argument '%s', this needs to be present for every "
                           "argument (even if it is empty)" % arg)
        params[name] = parse_json_arg(value) if (method, name) in _BY_NAME else value
    return params
