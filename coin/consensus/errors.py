"""Why a transaction or block was rejected, as Core's CValidationState records it.

One exception type serves every consensus check, so the pipeline can catch it
in one place: ``reason`` is Core's reject reason (what peers and RPC see),
``dos`` the ban score for the peer that sent the data, and
``corruption_possible`` says the data may have been mutated in transit (the
block must then not be marked permanently invalid: another peer may send the
real one under the same hash).
"""

from __future__ import annotations

# Core's reject codes (the P2P `reject` message and RPC error text).
REJECT_MALFORMED = 0x01
REJECT_INVALID = 0x10
REJECT_OBSOLETE = 0x11
REJECT_DUPLICATE = 0x12
REJECT_NONSTANDARD = 0x40
REJECT_DUST = 0x41
REJECT_INSUFFICIENTFEE = 0x42
REJECT_CHECKPOINT = 0x43


class ValidationError(Exception):
    """A consensus (or policy) rule was broken.

    ``dos`` defaults to 0 like Core's ``state.Invalid()``: a ban needs an
    explicit score (Core's ``state.DoS(n)``; most block rules use 100), so a
    policy rejection cannot ban an honest peer by accident.  ``str()`` gives
    ``reason`` followed by ``", " + debug`` when there is a debug message,
    like Core's FormatStateMessage without the code.
    """

    def __init__(self, reason: str, debug: str = "", *, dos: int = 0,
                 code: int = REJECT_INVALID, corruption_possible: bool = False) -> None:
        super().__init__(reason, debug)
        self.reason = reason
        self.dos = dos
        self.debug = debug
        self.code = code
        self.corruption_possible = corruption_possible

    def __str__(self) -> str:
        return "%s, %s" % (self.reason, self.debug) if self.debug else self.reason

    def __repr__(self) -> str:
        return "ValidationError(%r, %r, dos=%d, code=0x%02x%s)" % (
            self.reason, self.debug, self.dos, self.code,
            ", corruption_possible=True" if self.corruption_possible else "")
