"""``getzmqnotifications`` (Core 0.17, with 0.18's ``hwm``), registered through the entry
point ``zmq``."""

from __future__ import annotations

from typing import Any, Dict, List

from coin.rpc.context import RPCContext
from coin.rpc.registry import example_cli, example_rpc, rpc_method


@rpc_method(
    "getzmqnotifications", category="zmq",
    help="Returns information about the active ZeroMQ notifications.",
    result=("[\n"
            "  {                        (json object)\n"
            '    "type": "pubhashtx",   (string) Type of notification\n'
            '    "address": "...",      (string) Address of the publisher\n'
            '    "hwm": n               (numeric) Outbound message high water mark\n'
            "  },\n"
            "  ...\n"
            "]"),
    examples=example_cli("getzmqnotifications") + example_rpc("getzmqnotifications"))
def getzmqnotifications(ctx: RPCContext) -> List[Dict[str, Any]]:
    return [notifier.describe() for notifier in ctx.node.notify.zmq.notifiers]


#: What the ``zmq`` entry point registers.
METHODS = [getzmqnotifications]
