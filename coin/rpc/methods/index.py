"""Index status (Core 0.21's ``getindexinfo``), registered through the entry point ``index``.

The only optional index is the transaction index (-txindex); with it off the
answer is ``{}``, as in Core.
"""

from __future__ import annotations

from typing import Any, Dict, Optional

from coin.rpc.context import RPCContext
from coin.rpc.registry import STR, Arg, example_cli, example_rpc, rpc_method


def indexes(ctx: RPCContext) -> Dict[str, Any]:
    """The node's running optional indexes by name."""
    txindex = getattr(ctx.node.chain, "txindex", None)
    return {"txindex": txindex} if txindex is not None else {}


@rpc_method(
    "getindexinfo", category="util",
    args=[Arg("index_name", STR, default=None,
              help="Filter results for an index with a specific name.")],
    help="Returns the status of one or all available indices currently running in the node.",
    result=("{\n"
            '  "name" : {                    (json object) The name of the index\n'
            '    "synced" : true|false,      (boolean) Whether the index is synced or not\n'
            '    "best_block_height" : n     (numeric) The block height to which the index is '
            "synced\n"
            "  }\n"
            "}"),
    examples=(example_cli("getindexinfo") + example_rpc("getindexinfo")
              + example_cli("getindexinfo", "txindex") + example_rpc("getindexinfo", "txindex")))
def getindexinfo(ctx: RPCContext, index_name: Optional[str]) -> Dict[str, Any]:
    return {name: index.info() for name, index in indexes(ctx).items()
            if index_name is None or index_name == name}


#: What the ``index`` entry point registers.
METHODS = [getindexinfo]
