"""``spork``: the network's signed settings (coin.spork), with the reference node's texts.

Registered through the ``coin.rpc`` entry point ``spork``. As the reference node
(dimecoin 2.3.0.0, src/rpc/bitcoinmisc.cpp) answers:

- ``spork show``: every known spork's value; ``spork active``: whether each is on (its
  value is below the network-adjusted time).
- ``spork <name> <value>``: an unknown name answers the result "Invalid spork name"
  (the value unread); otherwise the value (an integer) is signed with -sporkkey at the adjusted time, held
  and relayed: "success", or "failure" on a node without -sporkkey. Without a P2P
  layer it is Core's -31.
- Anything else: the help text as error -1.
"""

from __future__ import annotations

from typing import Any, Dict

from coin.rpc.context import RPCContext
from coin.rpc.errors import RPC_CLIENT_P2P_DISABLED, RPC_MISC_ERROR, RPCError
from coin.rpc.registry import ANY, INT64, STR, Arg, RPCMethod
from coin.spork import SPORK_DEFS
from coin.spork.sporks import spork_id_by_name

_SPORK_HELP = ("spork <name> [<value>]\n"
               "<name> is the corresponding spork name, or 'show' to show all current spork "
               "settings, active to show which sporks are active\n"
               "<value> is a epoch datetime to enable or disable spork\n")
#: UniValue's get_str() and get_int64(), read in the reference's order (errors are -1).
_NAME = Arg("name", STR)
_VALUE = Arg("value", INT64)


def _show(ctx: RPCContext) -> Dict[str, Any]:
    sporks = ctx.node.sporks
    return {d.name: sporks.value(d.spork_id) for d in SPORK_DEFS}


def _active(ctx: RPCContext) -> Dict[str, Any]:
    sporks = ctx.node.sporks
    now = int(sporks.now())
    return {d.name: sporks.is_active(d.spork_id, now) for d in SPORK_DEFS}


_VIEWS = {"show": _show, "active": _active}


def _spork(ctx: RPCContext, *args: Any) -> Any:
    if len(args) == 1:
        view = _VIEWS.get(_NAME.convert(args[0]))
        if view is not None:
            return view(ctx)
    elif len(args) == 2:
        spork_id = spork_id_by_name(_NAME.convert(args[0]))
        if spork_id is None:
            return "Invalid spork name"  # the reference answers this as a result
        sporks = ctx.node.sporks
        if sporks.p2p is None:
            raise RPCError(RPC_CLIENT_P2P_DISABLED,
                           "Error: Peer-to-peer functionality missing or disabled")
        return "success" if sporks.update(spork_id, _VALUE.convert(args[1])) else "failure"
    raise RPCError(RPC_MISC_ERROR, _SPORK_HELP)


spork = RPCMethod(name="spork", category="coin", handler=_spork, help_text=_SPORK_HELP,
                  args=(Arg("args", ANY, variadic=True),))

#: What the ``spork`` entry point registers.
METHODS = [spork]
