"""A coin-cli command as a JSON-RPC request, and the reply as output (Core's bitcoin-cli rules)."""

from __future__ import annotations

import binascii
import time

from coin.config import NETWORKS, Config
from coincli import jsonfmt, netinfo
from coincli.convert import convert_named, convert_positional
from coincli.errors import CliError, ConnectionFailed, MissingCredentials

RPC_WALLET_NOT_SPECIFIED = -19
RPC_IN_WARMUP = -28

#: -getinfo's batch; each reply is found by its id.
_GETINFO_METHODS = ("getnetworkinfo", "getblockchaininfo", "getwalletinfo")
GETINFO_BATCH = [{"method": method, "params": None, "id": index}
                 for index, method in enumerate(_GETINFO_METHODS)]

#: -generate's block count when none is given.
DEFAULT_NBLOCKS = "1"

_URI_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


#: Request handlers (Core's BaseRequestHandler kinds), chosen by option.
DEFAULT, GETINFO, NETINFO, GENERATE = "default", "getinfo", "netinfo", "generate"


def handler_kind(config: Config) -> str:
    """Which handler the options select (Core 0.21's order: -getinfo, -netinfo, -generate)."""
    return next((kind for kind in (GETINFO, NETINFO, GENERATE) if config.get_bool(kind)),
                DEFAULT)


def call(config: Config, args: list[str], post, kind: str | None = None) -> dict:
    """Send one request and return the decoded reply object (Core's CallRPC).

    ``post`` is :func:`coincli.transport.post` or a stand-in with its signature; ``kind``
    overrides the handler the options select (-generate's getnewaddress is a plain call).
    """
    kind = handler_kind(config) if kind is None else kind
    host, port = endpoint(config)
    auth = authorization(config)
    request = prepare_request(config, args, kind)
    body = (jsonfmt.dumps(request) + "\n").encode("utf-8", "surrogateescape")
    timeout = config.get_int("rpcclienttimeout")
    status, data = post(host, port, wallet_path(config), auth, body,
                        timeout if timeout > 0 else None)
    if status == 401:
        raise CliError("Authorization failed: Incorrect rpcuser or rpcpassword")
    if status >= 400 and status not in (400, 404, 500):
        raise CliError("server returned HTTP error %d" % status)
    if not data:
        raise CliError("no response from server")
    try:
        reply = jsonfmt.loads(data.decode("utf-8"))
    except (ValueError, RecursionError):
        raise CliError("couldn't parse reply from server") from None
    if kind == GETINFO:
        reply = process_getinfo(reply)
    elif kind == NETINFO:
        peers, network = _replies_by_id(reply, len(netinfo.BATCH))
        reply = netinfo.process(peers, network, netinfo.parse_level(args), config.network,
                                int(time.time()))
    elif kind == GENERATE:
        reply = generated(args[2], reply)
    if not isinstance(reply, dict):
        raise CliError("JSON value is not an object as expected")
    if not reply:
        raise CliError("expected reply to have result, error and id properties")
    return reply


def render(reply: dict, wait: bool) -> tuple[str, int]:
    """The text coin-cli prints for ``reply`` and its exit status (before the 8-bit cut).

    Under -rpcwait a warming-up server counts as not yet reachable.
    """
    error = reply.get("error")
    if error is not None:
        code_text = error.get("code") if isinstance(error, dict) else None
        code = _get_int(code_text)
        if wait and code == RPC_IN_WARMUP:
            raise ConnectionFailed("server in warmup")
        text = "error code: %s\n" % code_text
        message = error.get("message")
        if type(message) is str:
            text += "error message:\n" + message
        if code == RPC_WALLET_NOT_SPECIFIED:
            text += '\nTry adding "-rpcwallet=<filename>" option to coin-cli command line.'
        return text, abs(code)
    result = reply.get("result")
    if result is None:
        return "", 0
    if isinstance(result, str):
        return result, 0
    return jsonfmt.dumps(result, 2), 0


def prepare_request(config: Config, args: list[str], kind: str = DEFAULT) -> object:
    """The request object (a batch for -getinfo, -netinfo); ``args`` is the method and its
    arguments (-netinfo's level; for -generate, see :func:`generate_args`)."""
    if kind == GETINFO:
        if args:
            raise CliError("-getinfo takes no arguments")
        return GETINFO_BATCH
    if kind == NETINFO:
        return netinfo.BATCH
    method, params = args[0], args[1:]
    convert = convert_named if config.get_bool("named") else convert_positional
    return {"method": method, "params": convert(method, params), "id": 1}


def generate_args(address: str, args: list[str]) -> list[str]:
    """-generate's call: ``generatetoaddress nblocks address [maxtries]`` (Core 0.21)."""
    if len(args) > 2:
        raise CliError("too many arguments (maximum 2 for nblocks and maxtries)")
    if not args:
        args = [DEFAULT_NBLOCKS]
    elif args[0] == "0":
        raise CliError("the first argument (number of blocks to generate, default: %s) must "
                       "be an integer value greater than zero" % DEFAULT_NBLOCKS)
    return ["generatetoaddress", args[0], address] + args[1:]


def generated(address: str, reply: object) -> dict:
    """-generate's output: ``{"address", "blocks"}`` (generatetoaddress's error passed on)."""
    if not isinstance(reply, dict):
        raise CliError("JSON value is not an object as expected")
    if reply.get("error") is not None:
        return reply
    return {"result": {"address": address, "blocks": reply.get("result")}, "error": None,
            "id": 1}


def process_getinfo(batch: object) -> dict:
    """One reply object built from the -getinfo batch, the way Core 0.17 assembles it.

    Errors of getnetworkinfo and getblockchaininfo are passed on; getwalletinfo
    may fail (no wallet, several wallets): its fields are then null.
    """
    network, chain, wallet = _replies_by_id(batch, len(_GETINFO_METHODS))
    for reply in (network, chain):
        if _get(reply, "error") is not None:
            return reply
    net, blocks, wal = (_get(r, "result") for r in (network, chain, wallet))
    result = {"version": _get(net, "version"), "protocolversion": _get(net, "protocolversion")}
    if wallet is not None:
        result["walletversion"] = _get(wal, "walletversion")
        result["balance"] = _get(wal, "balance")
    result["blocks"] = _get(blocks, "blocks")
    result["timeoffset"] = _get(net, "timeoffset")
    result["connections"] = _get(net, "connections")
    result["proxy"] = _get(net, "networks", 0, "proxy")
    result["difficulty"] = _get(blocks, "difficulty")
    result["testnet"] = _get(blocks, "chain") == "test"
    if wallet is not None:
        result["keypoololdest"] = _get(wal, "keypoololdest")
        result["keypoolsize"] = _get(wal, "keypoolsize")
        if _get(wal, "unlocked_until") is not None:
            result["unlocked_until"] = _get(wal, "unlocked_until")
        result["paytxfee"] = _get(wal, "paytxfee")
    result["relayfee"] = _get(net, "relayfee")
    result["warnings"] = _get(net, "warnings")
    return {"result": result, "error": None, "id": 1}


def endpoint(config: Config) -> tuple[str, int]:
    """Host and port: -rpcport, else a port in -rpcconnect, else the network's RPC port."""
    host, port = split_host_port(config.get("rpcconnect"), NETWORKS[config.network].rpc_port)
    if config.is_set("rpcport"):
        port = config.get_int("rpcport")
        if not 0 < port < 0x10000:
            raise CliError("Invalid port provided in -rpcport: %s" % config.get("rpcport"))
    return host, port


def split_host_port(text: str, port: int) -> tuple[str, int]:
    """Core's SplitHostPort: ``host``, ``host:port``, ``[v6]``, ``[v6]:port`` or bare IPv6."""
    colon = text.rfind(":")
    if colon >= 0:
        bracketed = text.startswith("[") and colon > 0 and text[colon - 1] == "]"
        multi_colon = text.rfind(":", 0, colon) >= 0
        digits = text[colon + 1:]
        if (colon == 0 or bracketed or not multi_colon) and digits.isascii() \
                and digits.isdigit() and 0 < int(digits) < 0x10000:
            text, port = text[:colon], int(digits)
    if len(text) > 1 and text[0] == "[" and text[-1] == "]":
        text = text[1:-1]
    return text, port


def wallet_path(config: Config) -> str:
    """``/`` or ``/wallet/<name>`` (URI-encoded; ``-rpcwallet=`` gives ``/wallet/``)."""
    if not config.is_set("rpcwallet") or config.is_negated("rpcwallet"):
        return "/"
    return "/wallet/" + uri_encode(config.get("rpcwallet"))


def uri_encode(text: str) -> str:
    """Percent-encode all but RFC 3986 unreserved characters (libevent's evhttp_uriencode)."""
    return "".join(chr(b) if b in _URI_UNRESERVED else "%%%02X" % b
                   for b in text.encode("utf-8", "surrogateescape"))


def authorization(config: Config) -> str:
    """The Authorization header: -rpcuser/-rpcpassword, or the cookie when no password is set."""
    password = config.get("rpcpassword", "")
    if password == "":
        user_pass = read_cookie(config.cookie_path())
        if user_pass is None:
            raise MissingCredentials("Could not locate RPC credentials. No authentication cookie could be "
                           "found, and RPC password is not set.  See -rpcpassword and "
                           "-stdinrpcpass.  Configuration file: (%s)" % config.conf_path)
    else:
        user_pass = config.get("rpcuser", "") + ":" + password
    token = binascii.b2a_base64(user_pass.encode("utf-8", "surrogateescape"), newline=False)
    return "Basic " + token.decode("ascii")


def read_cookie(path: str) -> str | None:
    """The first line of the cookie file (``__cookie__:<password>``), or None if unreadable."""
    try:
        with open(path, "rb") as f:
            line = f.readline()
    except OSError:
        return None
    return line.rstrip(b"\n").decode("utf-8", "surrogateescape")


def _replies_by_id(batch: object, size: int) -> list:
    if not isinstance(batch, list):
        raise CliError("Batch must be an array")
    replies = [None] * size
    for reply in batch:
        if not isinstance(reply, dict):
            raise CliError("Batch member must be object")
        index = _get_int(reply.get("id"))
        if not 0 <= index < size:
            raise CliError("Batch member id larger than size")
        replies[index] = reply
    return replies


def _get(value: object, *path: object) -> object:
    """``value[k1][k2]...``, or None where a key, index or container is missing (UniValue's [])."""
    for key in path:
        if isinstance(key, int) and isinstance(value, list) and key < len(value):
            value = value[key]
        elif isinstance(key, str) and isinstance(value, dict):
            value = value.get(key)
        else:
            return None
    return value


def _get_int(value: object) -> int:
    """A JSON number as a 32-bit integer, with UniValue's get_int errors."""
    if not isinstance(value, jsonfmt.RawNumber):
        raise CliError("JSON value is not an integer as expected")
    try:
        number = int(value)
    except ValueError:
        number = None
    if number is None or not -2**31 <= number < 2**31:
        raise CliError("JSON integer out of range")
    return number
