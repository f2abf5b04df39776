"""coin-hello-plugin: a third-party RPC plugin that uses only the contract, coin.rpc.plugin.

Loaded when the node runs with ``-rpcplugin=coin-hello-plugin`` (doc/plugins.md).
"""

from __future__ import annotations

from typing import Any

from coin.rpc.plugin import (
    API_VERSION, INT, RPC_INVALID_PARAMETER, STR, Arg, PluginContext, RPCError, rpc_method,
)

if API_VERSION[0] != 1:
    raise ImportError("coin-hello-plugin needs plugin API 1.x, this node has %d.%d" % API_VERSION)


@rpc_method("hello", category="hello",
            args=[Arg("name", STR, default="world", help="Who to greet")],
            help="Greet someone, with what the node sees: blocks, tip, pool, peers, wallets.")
def hello(ctx: PluginContext, name: str) -> dict[str, Any]:
    chain = ctx.chain()  # one consistent view for the whole call
    tip = chain.tip
    network = ctx.network
    return {"greeting": "hello, %s" % name,
            "blocks": chain.height,
            "bestblockhash": tip.hash[::-1].hex() if tip is not None else None,
            "mempool": len(ctx.mempool),
            "connections": network.connection_count() if network is not None else 0,
            "wallets": sorted(ctx.wallets)}


@rpc_method("blocktxcount", category="hello",
            args=[Arg("height", INT, help="A height of the active chain")],
            help="The number of transactions in the active chain's block at height.")
async def blocktxcount(ctx: PluginContext, height: int) -> int:
    chain = ctx.chain()
    entry = chain.at_height(height)
    if entry is None:
        raise RPCError(RPC_INVALID_PARAMETER, "Block height out of range")
    block = await chain.read_block(entry.hash)
    return len(block.txs)


@rpc_method("hellowallet", category="hello", needs_wallet=True,
            help="The name and transaction count of the wallet the call runs against.")
def hellowallet(ctx: PluginContext) -> dict[str, Any]:
    wallet = ctx.wallet
    assert wallet is not None  # needs_wallet=True: the server has chosen one
    return {"walletname": wallet.name, "txcount": wallet.tx_count()}


METHODS = [hello, blocktxcount, hellowallet]
