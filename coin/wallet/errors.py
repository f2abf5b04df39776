"""Wallet errors that name the JSON-RPC code they are answered with.

The wallet does not import the RPC layer: :func:`coin.rpc.errors.map_exception`
answers any exception carrying an integer ``rpc_code`` and a ``message``, so the
GUI, plugins and RPC all see the same error from the same operation.  The codes
are Core's (src/rpc/protocol.h).
"""

from __future__ import annotations

RPC_MISC_ERROR = -1
RPC_TYPE_ERROR = -3
RPC_WALLET_ERROR = -4
RPC_INVALID_ADDRESS_OR_KEY = -5
RPC_WALLET_INSUFFICIENT_FUNDS = -6
RPC_INVALID_PARAMETER = -8
RPC_WALLET_KEYPOOL_RAN_OUT = -12
RPC_WALLET_PASSPHRASE_INCORRECT = -14
RPC_WALLET_WRONG_ENC_STATE = -15
RPC_WALLET_ENCRYPTION_FAILED = -16
RPC_WALLET_NOT_FOUND = -18


class WalletError(Exception):
    """A wallet operation refused: ``rpc_code`` and Core's ``message`` for it."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.rpc_code = code
        self.message = message
