"""The writer's initial-block-download latch and warnings, as a front end shows them.

``initialblockdownload`` and ``warnings`` of getblockchaininfo and REST chaininfo.json are
the writer's own state, not the chain's: the latch (once out of initial download, a node
stays out however old its tip gets) and warnings raised by validation or by peers' clocks.
A front end cannot compute them from the committed chain, so it reads them from the
writer's ``getblockchaininfo``: every :data:`STATUS_INTERVAL` seconds, and at once when
the committed tip changes (the latch and the chain's warnings move with new tips).  Until
the first answer, and while the writer cannot be reached, the front end falls back on what
it can see: initial download computed from the committed tip's age, the last warnings.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Optional

from twisted.application import service
from twisted.internet.defer import Deferred, inlineCallbacks
from twisted.internet.task import LoopingCall
from twisted.logger import Logger

from coin.chain.warnings import NodeWarnings
from coin.frontend.forward import WriterClient, WriterUnavailable

log = Logger()

#: Seconds between reads of the writer's state when no new tip comes.
STATUS_INTERVAL = 1.0
_ASK = b'{"method":"getblockchaininfo","params":[],"id":"frontend-status"}'


class WriterStatus(service.Service):
    """Follows the writer's ``initialblockdownload`` and ``warnings`` (module docstring)."""

    def __init__(self, writer: WriterClient, reactor: Any, computed_ibd: Callable[[], bool],
                 interval: float = STATUS_INTERVAL) -> None:
        self._writer = writer
        self._computed_ibd = computed_ibd
        #: The warnings ChainAccess.status reads: the writer's text, as its ``misc``.
        self.warnings = NodeWarnings()
        #: The writer's latch as last read, None before the first answer.
        self.ibd: Optional[bool] = None
        self._loop = LoopingCall(self.refresh)
        self._loop.clock = reactor
        self._interval = interval
        self._asking: Optional[Deferred] = None
        self._again = False

    def startService(self) -> None:
        super().startService()
        self._loop.start(self._interval, now=True)

    def stopService(self) -> None:
        super().stopService()
        if self._loop.running:
            self._loop.stop()

    def initial_block_download(self) -> bool:
        """The writer's latch; the committed tip's age until the writer has answered."""
        return self.ibd if self.ibd is not None else self._computed_ibd()

    def tip_changed(self, entry: Any) -> None:
        """A chain listener: a new committed tip may have moved the latch or the warnings."""
        self.refresh()

    def refresh(self) -> None:
        """Ask the writer now (once more after the question under way, if one is)."""
        if self._asking is not None:
            self._again = True
            return
        self._asking = self._ask()
        self._asking.addBoth(self._answered)

    def _answered(self, _: object) -> None:
        self._asking = None
        if self._again and self.running:
            self._again = False
            self.refresh()

    @inlineCallbacks
    def _ask(self):
        try:
            answer = yield self._writer.request(b"POST", b"/", _ASK,
                                                content_type=b"text/plain")
            result = json.loads(answer.body)["result"]
            ibd, warnings = result["initialblockdownload"], result["warnings"]
        except WriterUnavailable:
            return  # down or restarting: keep what was last read
        except (ValueError, TypeError, KeyError):
            return  # in its warm-up (-28, result null), or not a node's answer
        except Exception:
            log.failure("Reading the writer's state failed")
            return
        if isinstance(ibd, bool) and isinstance(warnings, str):
            self.ibd = ibd
            self.warnings.misc = warnings
