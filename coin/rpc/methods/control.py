"""Control methods (Core's "== Control ==" category) and the hidden echo methods.

Registered through the ``coin.rpc`` entry point ``control`` like any plugin.
"""

from __future__ import annotations

import ctypes
import os
import sys
import tempfile
from dataclasses import dataclass
from typing import Any, Sequence

from coin.rpc.context import RPCContext
from coin.rpc.errors import RPC_INVALID_PARAMETER, RPCError
from coin.rpc.registry import (
    ANY, STR, Arg, RPCMethod, compose_help, example_cli, example_rpc, rpc_method,
)


@rpc_method(
    "help", category="control",
    args=[Arg("command", STR, default=None, help="The command to get help on")],
    help="List all commands, or get help for a specified command.",
    result='"text"     (string) The help text')
def help_(ctx: RPCContext, command: str | None) -> str:
    return ctx.methods.help(command)


@rpc_method("stop", category="control", help="Stop Coin server.")
def stop(ctx: RPCContext) -> str:
    ctx.node.shutdown()
    return "Coin server stopping"


@rpc_method(
    "uptime", category="control",
    help="Returns the total uptime of the server.",
    result="ttt        (numeric) The number of seconds that the server has been running",
    examples=example_cli("uptime") + example_rpc("uptime"))
def uptime(ctx: RPCContext) -> int:
    return ctx.node.uptime()


_LIBC = ctypes.CDLL(None) if os.name == "posix" else None


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
        "uordblks", "fordblks", "keepcost")]


def _libc_function(name: str) -> Any:
    return getattr(_LIBC, name, None) if _LIBC is not None else None


def _locked_bytes() -> int:
    """Memory the process holds locked in RAM (VmLck), 0 where /proc is absent."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmLck:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def memory_stats() -> dict[str, int]:
    """Core's "locked" object, filled from this process's heap (see doc/rpc.md).

    used/free/total come from glibc's mallinfo2 (0 without it), locked from VmLck,
    chunks_used is the interpreter's count of allocated blocks, chunks_free the
    number of free heap chunks.
    """
    mallinfo2 = _libc_function("mallinfo2")
    heap = _MallInfo2()
    if mallinfo2 is not None:
        mallinfo2.restype = _MallInfo2
        heap = mallinfo2()
    return {"used": heap.uordblks + heap.hblkhd, "free": heap.fordblks,
            "total": heap.arena + heap.hblkhd, "locked": _locked_bytes(),
            "chunks_used": sys.getallocatedblocks(), "chunks_free": heap.ordblks}


def malloc_info_xml() -> str:
    """glibc's malloc_info() XML, as Core's "mallocinfo" mode returns it."""
    malloc_info = _libc_function("malloc_info")
    if malloc_info is None:
        raise RPCError(RPC_INVALID_PARAMETER,
                       "mallocinfo is only available when compiled with glibc 2.10+")
    fdopen = _LIBC.fdopen
    fdopen.restype = ctypes.c_void_p
    fdopen.argtypes = [ctypes.c_int, ctypes.c_char_p]
    with tempfile.TemporaryFile() as output:
        stream = fdopen(os.dup(output.fileno()), b"w")
        if not stream:
            raise OSError("fdopen failed")
        try:
            malloc_info(0, ctypes.c_void_p(stream))
        finally:
            _LIBC.fclose(ctypes.c_void_p(stream))
        output.seek(0)
        return output.read().decode("utf-8", "replace")


@rpc_method(
    "getmemoryinfo", category="control", signature='getmemoryinfo ("mode")',
    args=[Arg("mode", STR, default="stats", help=(
        "determines what kind of information is returned.\n"
        '  - "stats" returns general statistics about memory usage in the daemon.\n'
        '  - "mallocinfo" returns an XML string describing low-level heap state '
        "(only available with glibc 2.10+)."))],
    help="Returns an object containing information about memory usage.",
    result=('mode "stats":\n'
            "{\n"
            '  "locked": {               (json object) Information about locked memory manager\n'
            '    "used": xxxxx,          (numeric) Number of bytes used\n'
            '    "free": xxxxx,          (numeric) Number of bytes available in current arenas\n'
            '    "total": xxxxxxx,       (numeric) Total number of bytes managed\n'
            '    "locked": xxxxxx,       (numeric) Amount of bytes that succeeded locking. If '
            "this number is smaller than total, locking pages failed at some point and key "
            "data could be swapped to disk.\n"
            '    "chunks_used": xxxxx,   (numeric) Number allocated chunks\n'
            '    "chunks_free": xxxxx,   (numeric) Number unused chunks\n'
            "  }\n"
            "}\n"
            'mode "mallocinfo":\n'
            '"<malloc version="1">..."'),
    examples=example_cli("getmemoryinfo") + example_rpc("getmemoryinfo"))
def getmemoryinfo(ctx: RPCContext, mode: str) -> Any:
    if mode == "stats":
        return {"locked": memory_stats()}
    if mode == "mallocinfo":
        return malloc_info_xml()
    raise RPCError(RPC_INVALID_PARAMETER, "unknown mode " + mode)


_CATEGORY = Arg("category", STR)


@rpc_method(
    "logging", category="control", signature="logging ( <include> <exclude> )",
    args=[Arg("include", ANY, default=None,
              help="A json array of categories to add debug logging"),
          Arg("exclude", ANY, default=None,
              help="A json array of categories to remove debug logging")],
    help=("Gets and sets the logging configuration.\n"
          "When called without an argument, returns the list of categories with status that "
          "are currently being debug logged or not.\n"
          "When called with arguments, adds or removes categories from debug logging and "
          "return the lists above.\n"
          'The arguments are evaluated in order "include", "exclude".\n'
          "If an item is both included and excluded, it will thus end up being excluded.\n"
          "The valid logging categories are the keys of the result.\n"
          "In addition, the following are available as category names with special "
          "meanings:\n"
          '  - "all",  "1" : represent all logging categories.\n'
          '  - "none", "0" : even if other logging categories are specified, ignore all of '
          "them."),
    result=("{                   (json object where keys are the logging categories, and "
            "values indicates its status\n"
            '  "category": true|false,  (boolean) if being debug logged or not.\n'
            "  ...\n"
            "}"),
    examples=(example_cli("logging", '"[\\"all\\"]" "[\\"http\\"]"')
              + example_rpc("logging", '["all"], ["libevent"]')))
def logging_(ctx: RPCContext, include: Any, exclude: Any) -> dict[str, bool]:
    control = ctx.node.logging
    known = list(control.categories())
    # Core 0.17 acts only on arrays; anything else is ignored.
    for names, enabled in ((include, True), (exclude, False)):
        if not isinstance(names, list):
            continue
        for value in names:
            name = _CATEGORY.convert(value)
            if name in ("all", "1"):
                targets = known
            elif name in ("none", "0"):
                targets = []
            elif name in known:
                targets = [name]
            else:
                raise RPCError(RPC_INVALID_PARAMETER, "unknown logging category " + name)
            for category in targets:
                control.set_enabled(category, enabled)
    return {category: control.is_enabled(category) for category in known}


def _echo(ctx: RPCContext, *values: Any) -> list[Any]:
    return list(values)


@dataclass(frozen=True)
class _EchoMethod(RPCMethod):
    """echo/echojson answer the parameters exactly as given (Core's ``request.params``).

    The declared ``arg0``..``arg9`` only name positions for named parameters (Core
    0.17's table), so any number of positional values still passes, and an explicit
    null stays null.
    """

    def convert(self, params: Sequence[Any]) -> list[Any]:
        return list(params)


_ECHO_ARGS = tuple(Arg("arg%d" % i, ANY, default=None) for i in range(10))
_ECHO_HELP = compose_help(
    "echo", (), signature='echo|echojson "message" ...',
    description=("Simply echo back the input arguments. This command is for testing.\n\n"
                 "The difference between echo and echojson is that echojson has argument "
                 "conversion enabled in the client-side table in coin-cli and the GUI. There "
                 "is no server-side difference."))

echo, echojson = (_EchoMethod(name=name, category="hidden", handler=_echo, args=_ECHO_ARGS,
                              help_text=_ECHO_HELP) for name in ("echo", "echojson"))

#: What the ``control`` entry point registers.
METHODS = [help_, stop, uptime, getmemoryinfo, logging_, echo, echojson]
