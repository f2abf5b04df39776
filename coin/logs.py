"""debug.log and the console: Core's line format and ``-debug=<category>`` switches.

Components log with ``twisted.logger.Logger`` under their module's namespace;
debug-level events are written only when the category their namespace maps
to is enabled (``-debug=<category>`` or the ``logging`` RPC).  Everything at
info level and above is always written.
"""

from __future__ import annotations

import io
import time
from typing import IO, Dict, Iterable, List, Sequence, Set

from twisted.logger import (
    FilteringLogObserver,
    ILogObserver,
    LogLevel,
    PredicateResult,
    formatEvent,
)
from zope.interface import implementer

#: Core 0.17's categories (plus `validation`, and the reference node's Dash ones), in the
#: order `logging` lists them.
CATEGORIES: Sequence[str] = (
    "net", "tor", "mempool", "http", "bench", "zmq", "db", "rpc", "estimatefee", "addrman",
    "selectcoins", "reindex", "cmpctblock", "rand", "prune", "proxy", "mempoolrej",
    "libevent", "coindb", "qt", "leveldb", "validation", "masternode", "mnpayments", "mnsync",
    "spork", "gobject",
)

#: Log namespace prefix -> category (longest prefix wins).
_NAMESPACE_CATEGORIES: Dict[str, str] = {
    "coin.rpc": "rpc",
    "coin.rest": "http",
    "coin.storage": "coindb",
    "coin.chain": "validation",
    "coin.mining": "validation",
    "coin.mempool": "mempool",
    "coin.p2p": "net",
    "coin.spork": "spork",
    "coin.masternode": "masternode",
    "coin.masternode.payments": "mnpayments",
    "coin.masternode.sync": "mnsync",
    "coin.wallet": "selectcoins",
    "coin.governance": "gobject",
    "twisted.web": "http",
}


def category_of(namespace: str) -> str:
    best = ""
    category = ""
    for prefix, cat in _NAMESPACE_CATEGORIES.items():
        if (namespace == prefix or namespace.startswith(prefix + ".")) and len(prefix) > len(best):
            best, category = prefix, cat
    return category


class DebugCategories:
    """The set of enabled debug categories (the RPC ``logging`` LogControl)."""

    def __init__(self, enabled: Iterable[str] = ()) -> None:
        self._enabled: Set[str] = set()
        for name in enabled:
            self.set_enabled(name, True)

    @staticmethod
    def parse(values: Sequence[str], exclude: Sequence[str] = ()) -> "DebugCategories":
        """From ``-debug`` values (``1`` or empty: all; ``0``: none) less ``-debugexclude``."""
        unknown = [("-debug", v) for v in values if v not in CATEGORIES
                   and v not in ("", "0", "1", "all")]
        unknown += [("-debugexclude", v) for v in exclude if v not in CATEGORIES]
        if unknown:
            raise ValueError("Unsupported logging category %s=%s." % unknown[0])
        if any(v in ("", "1", "all") for v in values):
            values = CATEGORIES
        return DebugCategories(v for v in values if v != "0" and v not in exclude)

    def categories(self) -> Sequence[str]:
        return CATEGORIES

    def is_enabled(self, category: str) -> bool:
        return category in self._enabled

    def set_enabled(self, category: str, enabled: bool) -> None:
        if category not in CATEGORIES:
            raise ValueError("unknown logging category %s" % category)
        if enabled:
            self._enabled.add(category)
        else:
            self._enabled.discard(category)

    def admits(self, event: dict) -> PredicateResult:
        """Drop debug events of disabled categories; keep everything else."""
        if event.get("log_level") is not LogLevel.debug:
            return PredicateResult.maybe
        namespace = event.get("log_namespace", "")
        if category_of(namespace) in self._enabled:
            return PredicateResult.maybe
        return PredicateResult.no


@implementer(ILogObserver)
class CoreLineObserver:
    """Writes ``2026-11-25T21:57:46Z message`` lines, as Core's debug.log does.

    ``micros`` is -logtimemicros (``...:46.123456Z``); ``timestamps`` False is
    -nologtimestamps (the message alone).
    """

    def __init__(self, stream: IO[str], micros: bool = False, timestamps: bool = True) -> None:
        self._stream = stream
        self._micros = micros
        self._timestamps = timestamps

    def _stamp(self, when: float) -> str:
        if not self._timestamps:
            return ""
        seconds = int(when)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
        if self._micros:
            stamp += ".%06d" % int((when - seconds) * 1_000_000)
        return stamp + "Z "

    def __call__(self, event: dict) -> None:
        text = formatEvent(event)
        failure = event.get("log_failure")
        if failure is not None:
            text = "%s\n%s" % (text, failure.getTraceback())
        stamp = self._stamp(event.get("log_time") or time.time())
        try:
            self._stream.write("%s%s\n" % (stamp, text))
            self._stream.flush()
        except (OSError, ValueError):
            pass  # a closed console must not take the node down


def build_observers(categories: DebugCategories, debug_log_path: str | None,
                    console: IO[str] | None, micros: bool = False,
                    timestamps: bool = True) -> List[ILogObserver]:
    """Observers for debug.log (appended, line buffered) and the console."""
    streams: List[IO[str]] = []
    if debug_log_path:
        streams.append(io.open(debug_log_path, "a", encoding="utf-8", buffering=1))
    if console is not None:
        streams.append(console)
    return [FilteringLogObserver(CoreLineObserver(stream, micros, timestamps),
                                 [categories.admits]) for stream in streams]
