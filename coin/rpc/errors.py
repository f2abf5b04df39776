"""RPC error codes (Bitcoin Core's numbering) and the one exception -> reply mapping.

Every error a client can see goes through :func:`map_exception`, so the HTTP status
rules (design.md §5) and the "never send ``repr(e)``" rule live in one place.
"""

from __future__ import annotations

from typing import Any

from twisted.logger import Logger
from twisted.python.failure import Failure

# Standard JSON-RPC 2.0 codes, as Core uses them.
RPC_INVALID_REQUEST = -32600
RPC_METHOD_NOT_FOUND = -32601
RPC_INVALID_PARAMS = -32602
RPC_INTERNAL_ERROR = -32603
RPC_PARSE_ERROR = -32700

# General application errors.
RPC_MISC_ERROR = -1
RPC_FORBIDDEN_BY_SAFE_MODE = -2
RPC_TYPE_ERROR = -3
RPC_INVALID_ADDRESS_OR_KEY = -5
RPC_OUT_OF_MEMORY = -7
RPC_INVALID_PARAMETER = -8
RPC_DATABASE_ERROR = -20
RPC_DESERIALIZATION_ERROR = -22
RPC_VERIFY_ERROR = -25
RPC_VERIFY_REJECTED = -26
RPC_VERIFY_ALREADY_IN_CHAIN = -27
RPC_IN_WARMUP = -28
RPC_METHOD_DEPRECATED = -32

# P2P client errors.
RPC_CLIENT_NOT_CONNECTED = -9
RPC_CLIENT_IN_INITIAL_DOWNLOAD = -10
RPC_CLIENT_NODE_ALREADY_ADDED = -23
RPC_CLIENT_NODE_NOT_ADDED = -24
RPC_CLIENT_NODE_NOT_CONNECTED = -29
RPC_CLIENT_INVALID_IP_OR_SUBNET = -30
RPC_CLIENT_P2P_DISABLED = -31

# Wallet errors.
RPC_WALLET_ERROR = -4
RPC_WALLET_INSUFFICIENT_FUNDS = -6
RPC_WALLET_INVALID_LABEL_NAME = -11
RPC_WALLET_KEYPOOL_RAN_OUT = -12
RPC_WALLET_UNLOCK_NEEDED = -13
RPC_WALLET_PASSPHRASE_INCORRECT = -14
RPC_WALLET_WRONG_ENC_STATE = -15
RPC_WALLET_ENCRYPTION_FAILED = -16
RPC_WALLET_ALREADY_UNLOCKED = -17
RPC_WALLET_NOT_FOUND = -18
RPC_WALLET_NOT_SPECIFIED = -19

HTTP_OK = 200
HTTP_BAD_REQUEST = 400
HTTP_UNAUTHORIZED = 401
HTTP_FORBIDDEN = 403
HTTP_NOT_FOUND = 404
HTTP_BAD_METHOD = 405
HTTP_PAYLOAD_TOO_LARGE = 413
HTTP_INTERNAL_SERVER_ERROR = 500

_log = Logger()


class RPCError(Exception):
    """An error the client is meant to see: Core's ``JSONRPCError(code, message)``."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(code, message)
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return f"{self.message} (code {self.code})"


def map_exception(reason: BaseException | Failure) -> tuple[int, dict[str, Any]]:
    """Return ``(http_status, error_object)`` for an exception raised by a call.

    An :class:`RPCError` is answered as it is: 400 for -32600, 404 for -32601, 500
    otherwise (a batch ignores the status and answers 200). Exceptions of other layers
    that carry an integer ``rpc_code`` (and a ``message``) are answered the same way, so
    the wallet and mempool raise their own errors without importing the RPC layer. Anything else is a bug:
    it is logged with its traceback and the client gets a generic internal error.
    """
    exc = reason.value if isinstance(reason, Failure) else reason
    domain_code = getattr(exc, "rpc_code", None)
    if isinstance(domain_code, int):
        # A domain error (wallet, mempool, ...) that names its RPC code: answered as one.
        exc = RPCError(domain_code, getattr(exc, "message", None) or str(exc))
    if isinstance(exc, RPCError):
        status = {RPC_INVALID_REQUEST: HTTP_BAD_REQUEST,
                  RPC_METHOD_NOT_FOUND: HTTP_NOT_FOUND}.get(exc.code, HTTP_INTERNAL_SERVER_ERROR)
        return status, {"code": exc.code, "message": exc.message}
    failure = reason if isinstance(reason, Failure) else Failure(exc)
    _log.failure("Unexpected error while handling an RPC call", failure=failure)
    return HTTP_INTERNAL_SERVER_ERROR, {"code": RPC_INTERNAL_ERROR, "message": "Internal error"}
