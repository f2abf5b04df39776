"""Shared fixtures of the RPC tests: reference transcripts, a fake node, an HTTP driver."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional

import simplejson
from twisted.internet.address import IPv4Address
from twisted.internet.interfaces import IAddress
from twisted.internet.task import Clock
from twisted.internet.testing import StringTransport

from coin.config.rpcauth import parse_rpcauth
from coin.logs import DebugCategories
from coin.mining.service import MiningService
from coin.rpc.auth import AllowList, Authenticator, Whitelist
from coin.rpc.errors import RPC_INVALID_PARAMETER, RPC_METHOD_NOT_FOUND, RPCError
from coin.rpc.jsonrpc import JSONRPCCore, RPCLimits, Warmup
from coin.rpc.methods.control import METHODS as CONTROL_METHODS
from coin.rpc.registry import INT, Arg, MethodTable, example_cli, example_rpc, rpc_method
from coin.rpc.resource import RPCRoot, RPCSite

if TYPE_CHECKING:
    from coin.governance.service import GovernanceService
    from coin.masternode.service import MasternodeService
    from coin.spork import SporkManager

TRANSCRIPTS = os.path.join(os.path.dirname(__file__), "data", "transcripts")


@dataclass
class Transcript:
    request: bytes
    status_line: bytes
    headers: list[tuple[bytes, bytes]]
    body: bytes


def _section(text: bytes, name: bytes) -> bytes:
    match = re.search(rb"# ===== " + name + rb" \(exact bytes[^\n]*\n(.*?)\n# ===== END " + name,
                      text, re.S)
    assert match, name
    return match.group(1)


def split_response(raw: bytes) -> tuple[bytes, list[tuple[bytes, bytes]], bytes]:
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    headers = [tuple(line.split(b": ", 1)) for line in lines[1:]]
    return lines[0], headers, body


def transcript(name: str) -> Transcript:
    """A recorded exchange; ``name`` is the file name without ``.txt``."""
    with open(os.path.join(TRANSCRIPTS, name + ".txt"), "rb") as f:
        text = f.read()
    status_line, headers, body = split_response(_section(text, b"RESPONSE"))
    return Transcript(_section(text, b"REQUEST"), status_line, headers, body)


def reference_state() -> dict[str, str]:
    with open(os.path.join(TRANSCRIPTS, "00_state.json")) as f:
        return simplejson.load(f)


def recorded_result(name: str) -> Any:
    """The ``result`` of a recorded reply, numbers as Decimal (so they print the same)."""
    return simplejson.loads(transcript(name).body, use_decimal=True)["result"]


@dataclass
class FakeLogging:
    enabled: dict[str, bool] = field(default_factory=lambda: dict.fromkeys(
        ("net", "mempool", "http", "rpc", "db"), False))

    def categories(self) -> list[str]:
        return list(self.enabled)

    def is_enabled(self, category: str) -> bool:
        return self.enabled[category]

    def set_enabled(self, category: str, enabled: bool) -> None:
        self.enabled[category] = enabled


@dataclass
class FakeNode:
    """A NodeFacade with the reference node's regtest state (height 111)."""

    wallets: dict[str, Any] = field(default_factory=dict)
    logging: FakeLogging = field(default_factory=FakeLogging)
    chain: Any = None
    mempool: Any = None
    mining: Any = None
    wallet_service: Any = None
    p2p: Any = None
    sporks: Optional[SporkManager] = None
    masternodes: Optional[MasternodeService] = None
    governance: Optional[GovernanceService] = None
    shutdowns: int = 0

    def __post_init__(self) -> None:
        if self.mining is None and self.chain is not None:
            self.mining = MiningService(self.chain, self.chain.reactor)

    def shutdown(self) -> None:
        self.shutdowns += 1

    def uptime(self) -> int:
        return 31


# The reference node's chain methods, as far as the envelope tests need them.

@rpc_method("getblockcount", category="blockchain")
def getblockcount(ctx):
    return 111


@rpc_method("getbestblockhash", category="blockchain")
def getbestblockhash(ctx):
    return reference_state()["best"]


@rpc_method(
    "getblockhash", category="blockchain", args=[Arg("height", INT, help="The height index")],
    help="Returns hash of block in best-block-chain at height provided.",
    result='"hash"         (string) The block hash',
    examples=example_cli("getblockhash", "1000") + example_rpc("getblockhash", "1000"))
def getblockhash(ctx, height):
    if not 0 <= height <= 111:
        raise RPCError(RPC_INVALID_PARAMETER, "Block height out of range")
    state = reference_state()
    return {0: state["genesis"], 5: state["h5"], 111: state["best"]}.get(height, "%064x" % height)


@rpc_method("getwalletinfo", category="wallet", needs_wallet=True)
def getwalletinfo(ctx):
    return ctx.wallet


@rpc_method("getbalance", category="wallet", needs_wallet=True)
def getbalance(ctx):
    return ctx.wallet["balance"]


@rpc_method("listwallets", category="wallet")
def listwallets(ctx):
    return list(ctx.node.wallets)


@rpc_method("getinfo", category="hidden")
def getinfo(ctx):
    raise RPCError(RPC_METHOD_NOT_FOUND, recorded_error("rpcm_43_getinfo")["message"])


def recorded_error(name: str) -> dict[str, Any]:
    return simplejson.loads(transcript(name).body)["error"]


REFERENCE_METHODS = [getblockcount, getbestblockhash, getblockhash, getwalletinfo, getbalance,
                     listwallets, getinfo]


def reference_wallets(*names: str) -> dict[str, Any]:
    """The reference node's wallets "" and "w2" (their recorded getwalletinfo results)."""
    recorded = {"": recorded_result("wallet_01_post_wallet_slash_getwalletinfo"),
                "w2": recorded_result("mwallet_02_wallet_w2_getwalletinfo")}
    return {name: recorded[name] for name in names}


ALICE_RPCAUTH = ("alice:87c57cff96c85c17705d96d8a8e716ad$"
                 "dc6c00c259a6d5c54bdd97b98609826dcaf1247c5441c938cf316e4bdc78a66b")


class Server:
    """The RPC site over StringTransport, configured like the reference node."""

    def __init__(self, *, node: FakeNode | None = None, whitelist: Whitelist | None = None,
                 warmup: str | None = None, methods: list | None = None,
                 limits: RPCLimits = RPCLimits(), allow: AllowList | None = None,
                 authenticator: Authenticator | None = None,
                 categories: DebugCategories | None = None) -> None:
        self.clock = Clock()
        self.node = node if node is not None else FakeNode(wallets=reference_wallets(""))
        self.warmup = Warmup(warmup)
        table = MethodTable(CONTROL_METHODS + (methods if methods is not None else REFERENCE_METHODS))
        self.core = JSONRPCCore(table, self.node, whitelist=whitelist or Whitelist(),
                                warmup=self.warmup, clock=self.clock, limits=limits)
        self.authenticator = authenticator or Authenticator(
            ("u", "p"), [parse_rpcauth(ALICE_RPCAUTH)])
        self.root = RPCRoot(self.core, self.authenticator, self.clock)
        self.site = RPCSite(self.root, allow=allow or AllowList(), max_body=limits.max_body,
                            reactor=self.clock, categories=categories)

    def connect(self, client: str | IAddress = "127.0.0.1") -> tuple[Any, StringTransport]:
        """A connection from ``client`` (an IPv4 host or any address)."""
        address = IPv4Address("TCP", client, 40000) if isinstance(client, str) else client
        protocol = self.site.buildProtocol(address)
        transport = StringTransport(peerAddress=address)
        protocol.makeConnection(transport)
        return protocol, transport

    def exchange(self, raw: bytes, client: str | IAddress = "127.0.0.1") -> bytes:
        protocol, transport = self.connect(client)
        protocol.dataReceived(raw)
        return transport.value()


def post(body: bytes, path: bytes = b"/", auth: bytes | None = b"dTpw",
         extra: bytes = b"") -> bytes:
    """A raw POST like the reference recordings' (user u, password p)."""
    headers = b"POST " + path + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    if auth is not None:
        headers += b"Authorization: Basic " + auth + b"\r\n"
    return headers + extra + b"Content-Length: %d\r\n\r\n" % len(body) + body


def reply_body(raw: bytes) -> Any:
    return simplejson.loads(split_response(raw)[2], use_decimal=True)
