"""JSON-RPC on a front end: read-only methods here, everything else at the writer.

A request (one call or a batch) is answered here when every call in it is a method of
:data:`LOCAL_METHODS` on ``/``; otherwise the whole body goes to the writer unchanged and
its answer comes back unchanged, so batches keep the writer's order and semantics.  A
``getrawtransaction`` not found here (a mempool transaction, or one the transaction index
has not committed yet) is asked of the writer as well.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Dict, FrozenSet, Iterable, Optional, Union
from urllib.parse import quote_from_bytes

from twisted.internet.defer import Deferred, succeed
from twisted.python.failure import Failure

from coin.frontend.chain import DatabaseUnavailable
from coin.frontend.forward import WriterClient, WriterUnavailable
from coin.rpc.auth import Whitelist
from coin.rpc.errors import RPC_IN_WARMUP, RPC_INVALID_ADDRESS_OR_KEY, RPCError, map_exception
from coin.rpc.jsonrpc import (
    FORBIDDEN, JSON_CONTENT_TYPE, JSONRPCCore, Reply, encode_json, parse_json,
)
from coin.rpc.registry import MethodTable

#: Methods whose answer depends only on the committed chain (not on the mempool, wallets,
#: peers or the node's own state): answered by the front end itself.
LOCAL_METHODS: FrozenSet[str] = frozenset((
    "getbestblockhash", "getblockcount", "getblockhash", "getblock", "getblockheader",
    "getchaintips", "getdifficulty", "getblockchaininfo", "getrawtransaction",
))
#: What ``getblockchaininfo`` adds on a front end: the mark, and the seconds its database
#: (a PostgreSQL streaming replica) is behind the primary's.
FRONTEND_FIELD = "frontend"
LAG_FIELD = "frontend_lag"
_NOT_FOUND_CODE = b'"code":%d' % RPC_INVALID_ADDRESS_OR_KEY
#: A body not parsed here (too large, or not JSON): the local core parses it itself.
_UNPARSED = object()


def local_method_table(methods: MethodTable, names: Iterable[str]) -> MethodTable:
    """The methods of ``names`` from ``methods``, getblockchaininfo marked as a front end's."""
    table = MethodTable()
    for name in names:
        method = methods.get(name)
        if method is None:
            continue
        if name == "getblockchaininfo":
            method = dataclasses.replace(method, handler=_marked(method.handler))
        table.add(method, methods.origin(name))
    return table


def _marked(handler: Callable[..., Dict[str, Any]]) -> Callable[..., Dict[str, Any]]:
    def getblockchaininfo(ctx: Any, *args: Any) -> Dict[str, Any]:
        info = handler(ctx, *args)
        info[FRONTEND_FIELD] = True
        info[LAG_FIELD] = round(ctx.node.lag(), 3)
        return info
    return getblockchaininfo


def called_methods(body: bytes) -> Optional[list]:
    """Method names of a request body (one per call), or None if it is not a call or batch of
    calls with string methods (the local core then answers it with the writer's error)."""
    try:
        return method_names(parse_json(body))
    except RPCError:
        return None


def method_names(request: Any) -> Optional[list]:
    """:func:`called_methods` of a parsed request body."""
    calls = request if isinstance(request, list) else [request]
    names = []
    for call in calls:
        if not isinstance(call, dict) or not isinstance(call.get("method"), str):
            return None
        names.append(call["method"])
    return names


class FrontendCore:
    """Stands where :class:`~coin.rpc.jsonrpc.JSONRPCCore` stands in RPCRoot (``handle``)."""

    def __init__(self, local: JSONRPCCore, writer: WriterClient, whitelist: Whitelist,
                 fresh: Callable[[], Optional[Deferred]] = lambda: None) -> None:
        self._local = local
        self._writer = writer
        self._whitelist = whitelist
        #: None, or a Deferred firing once the chain is the writer's last commit.
        self._fresh = fresh
        self._names = frozenset(method.name for method in local.methods)
        #: JSONRPCCore.last_kept of the last request, when the local core answered it.
        self.last_kept: Optional[tuple] = None

    def handle(self, body: bytes, user: str, wallet_name: Optional[str] = None) -> Deferred:
        answer = self.respond(body, user, wallet_name)
        return succeed(answer) if isinstance(answer, Reply) else answer

    def respond(self, body: bytes, user: str, wallet_name: Optional[str] = None
                ) -> Union[Reply, Deferred]:
        """:meth:`handle`, the Reply itself when it is ready at once (a local call). The body
        is parsed once, here (a large one by the local core, in its thread). A body the
        local core keeps an answer for (a chain-only call) is looked up once the chain is
        the writer's last commit, unparsed."""
        self.last_kept = None
        if wallet_name is None and self._local.keeps(body):
            waiting = self._fresh()
            if waiting is not None:
                return waiting.addCallbacks(lambda _: self._local.respond(body, user),
                                            _unavailable)
            return self._local.respond(body, user)  # (its kept answer first)
        request: Any = _UNPARSED
        if len(body) > self._local.limits.thread_parse:
            names = called_methods(body)
        else:
            try:
                request = parse_json(body, self._local.limits.max_depth)
            except RPCError:
                request = _UNPARSED
                names = None
            else:
                names = method_names(request)
        if wallet_name is None and (names is None or all(name in self._names for name in names)):
            waiting = self._fresh()
            if waiting is not None:
                return waiting.addCallbacks(
                    lambda _: self._answer_here(body, request, user, names), _unavailable)
            return self._answer_here(body, request, user, names)
        if self._whitelist.denies_all(user) or any(
                not self._whitelist.allows(user, name) for name in names or ()):
            return FORBIDDEN
        path = b"/" if wallet_name is None else b"/wallet/" + quote_from_bytes(
            wallet_name.encode("utf-8", "surrogateescape"), safe="").encode("ascii")
        return self.forward(path, body)

    def keeps(self, body: bytes) -> bool:
        """Whether the local core keeps an answer to ``body`` (JSONRPCCore.keeps)."""
        return self._local.keeps(body)

    def answer_holds(self, body: bytes, user: str, reply: Reply) -> bool:
        """JSONRPCCore.answer_holds, once the chain is the writer's last commit (the look
        :meth:`respond` makes first); while it is not, the request is answered the usual way."""
        return self._settled() and self._local.answer_holds(body, user, reply)

    def call_holds(self, key: tuple, user: str, entry: tuple) -> bool:
        """JSONRPCCore.call_holds, once the chain is the writer's last commit (as
        :meth:`answer_holds`)."""
        return self._settled() and self._local.call_holds(key, user, entry)

    def _settled(self) -> bool:
        """Whether the chain is the writer's last commit now (no reload under way)."""
        waiting = self._fresh()
        if waiting is not None:
            waiting.addErrback(lambda _: None)  # respond() looks again and answers the error
            return False
        return True

    def _answer_here(self, body: bytes, request: Any, user: str, names: Optional[list]
                     ) -> Union[Reply, Deferred]:
        answer = (self._local.respond(body, user) if request is _UNPARSED
                  else self._local.respond_parsed(request, user, None, body))
        if names == ["getrawtransaction"]:
            if isinstance(answer, Reply):
                return self._or_writer(answer, body)
            answer.addCallback(self._or_writer, body)
        elif isinstance(answer, Reply):
            self.last_kept = self._local.last_kept
        return answer

    def _or_writer(self, reply: Reply, body: bytes) -> Any:
        if _NOT_FOUND_CODE in reply.body:
            return self.forward(b"/", body)
        return reply

    def forward(self, path: bytes, body: bytes) -> Deferred:
        """The writer's answer to ``body`` on ``path`` as a Reply (-28 if it is unreachable)."""
        d = self._writer.request(b"POST", path, body, content_type=b"text/plain")
        return d.addCallbacks(lambda a: Reply(a.status, a.body, a.content_type),
                              _unavailable)


def _unavailable(reason: Failure) -> Reply:
    reason.trap(WriterUnavailable, DatabaseUnavailable)
    status, error = map_exception(RPCError(RPC_IN_WARMUP, str(reason.value)))
    body = b'{"result":null,"error":' + encode_json(error) + b',"id":null}\n'
    return Reply(status, body, JSON_CONTENT_TYPE)
