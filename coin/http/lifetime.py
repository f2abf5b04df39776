"""Requests answered later: stop the work when the client goes away first."""

from __future__ import annotations

from typing import Any, List

from twisted.internet.defer import Deferred
from twisted.python.failure import Failure
from twisted.web import server


def cancel_when_gone(request: server.Request, answer: Deferred[Any]) -> List[Failure]:
    """Cancel ``answer`` if the connection is lost before the request is finished.

    Returns the list that receives the loss (empty while the client is there): a late
    answer must not be written to a request whose connection is gone.
    """
    lost: List[Failure] = []

    def connection_lost(reason: Failure) -> None:
        lost.append(reason)
        answer.cancel()

    request.notifyFinish().addErrback(connection_lost)
    return lost
