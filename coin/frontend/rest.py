"""REST on a front end: chain paths served here, mempool paths from the writer.

``mempool/*`` and ``getutxos`` with ``checkmempool`` (or a POSTed request, whose flag is
in the body) depend on the writer's memory pool and are forwarded; ``tx/<txid>`` not found
here (in the mempool, or not indexed yet) is asked of the writer too.  The writer's
errors come back with their status and text.  ``chaininfo.json`` carries the front-end
field of getblockchaininfo.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Tuple

from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

from coin.frontend.chain import DatabaseUnavailable
from coin.frontend.forward import Answer, WriterClient, WriterUnavailable
from coin.frontend.rpc import FRONTEND_FIELD, LAG_FIELD
from coin.rest.formats import Body
from coin.rest.resource import NoSuchPath, Reply, RESTError, RESTResource, _is_getutxos
from coin.rpc.errors import HTTP_NOT_FOUND
from coin.rpc.jsonrpc import encode_json

HTTP_OK = 200
HTTP_SERVICE_UNAVAILABLE = 503


class FrontendREST(RESTResource):
    """The ``/rest`` tree of a front end (see the module docstring)."""

    def __init__(self, chain: Any, writer: WriterClient, *, warmup: Any = None,
                 fresh: Callable[[], Optional[Deferred]] = lambda: None,
                 lag: Callable[[], float] = lambda: 0.0,
                 observe: Optional[Callable[[str, int], None]] = None) -> None:
        super().__init__(chain, None, warmup=warmup, observe=observe)
        self._lag = lag
        self._writer = writer
        #: None, or a Deferred firing once the chain is the writer's last commit.
        self._fresh = fresh
        #: (chaininfo body, lag, that body with the front end's fields).
        self._last_marked: Optional[Tuple[Body, float, Body]] = None

    def route(self, path: str, body: bytes = b"") -> Reply:
        if path.startswith("mempool/") or (_is_getutxos(path) and (
                body or path[len("getutxos"):].startswith("/checkmempool"))):
            return self._forward(path, body)
        waiting = self._fresh()
        if waiting is not None:
            return waiting.addCallbacks(lambda _: self._route_here(path, body), _unavailable)
        return self._route_here(path, body)

    def may_answer_kept(self) -> bool:
        """Not while the chain here is older than the writer's last commit: what a request
        would wait for (see ``fresh``) a kept answer must not skip."""
        waiting = self._fresh()
        if waiting is not None:
            waiting.addErrback(lambda _: None)  # the repeat is routed, and waits, as usual
            return False
        return super().may_answer_kept()

    def answer_stamp(self, name: str) -> Optional[Tuple[Any, ...]]:
        """chaininfo.json has none here: it shows the replica's lag, which moves with the
        clock."""
        return None if name == "chaininfo" else super().answer_stamp(name)

    def _route_here(self, path: str, body: bytes) -> Reply:
        answer = super().route(path, body)
        if path.startswith("tx/") and isinstance(answer, Deferred):
            answer.addErrback(self._tx_not_found, path)
        elif path.startswith("chaininfo"):
            return self._marked(answer, self._lag())
        return answer

    def _marked(self, body: Body, lag: float) -> Body:
        """chaininfo.json is getblockchaininfo's object: on a front end, with its fields
        too (the last answer kept: pollers get the same one between blocks)."""
        kept = self._last_marked
        if kept is None or kept[0] is not body or kept[1] != lag:
            content_type, data = body
            fields = b',"%s":true,"%s":%s}\n' % (FRONTEND_FIELD.encode(), LAG_FIELD.encode(),
                                                 encode_json(round(lag, 3)))
            kept = self._last_marked = (body, lag, (content_type,
                                                    data[:data.rindex(b"}")] + fields))
        return kept[2]

    def _tx_not_found(self, reason: Failure, path: str) -> Deferred:
        reason.trap(RESTError)
        if reason.value.status != HTTP_NOT_FOUND:
            return reason
        return self._forward(path, b"")

    def _forward(self, path: str, body: bytes) -> Deferred:
        target = b"/rest/" + path.encode("utf-8", "surrogateescape")
        d = self._writer.request(b"POST" if body else b"GET", target, body, authenticate=False)
        return d.addCallbacks(_body_of, _unavailable)


def _body_of(answer: Answer) -> Any:
    if answer.status == HTTP_OK:
        return answer.content_type, answer.body
    if answer.status == HTTP_NOT_FOUND and not answer.body:
        raise NoSuchPath()
    raise RESTError(answer.status, answer.body.decode("utf-8", "replace").removesuffix("\r\n"))


def _unavailable(reason: Failure) -> Any:
    reason.trap(WriterUnavailable, DatabaseUnavailable)
    raise RESTError(HTTP_SERVICE_UNAVAILABLE,
                    "Service temporarily unavailable: %s" % reason.value)
