"""Refusals of the chain package, carrying Core's RPC code and message.

The chain does not import the RPC layer: ``coin.rpc.errors.map_exception`` answers any
exception with an integer ``rpc_code`` and a ``message``, so RPC, the GUI and plugins
see the same refusal.
"""

from __future__ import annotations

#: Core's RPC codes the chain's errors carry.
RPC_MISC_ERROR = -1
RPC_INVALID_ADDRESS_OR_KEY = -5
RPC_INVALID_PARAMETER = -8


class ChainRequestError(Exception):
    """A request the chain refuses (-1 unless a subclass says otherwise); ``message`` is Core's."""

    rpc_code = RPC_MISC_ERROR

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
