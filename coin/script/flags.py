"""Script verification flags (Core's SCRIPT_VERIFY_*, same bit positions).

Consensus uses P2SH from genesis plus DERSIG, CHECKLOCKTIMEVERIFY and
CHECKSEQUENCEVERIFY once their soft forks are active (design.md §3); the
extra standardness flags only apply to mempool acceptance.
"""

from __future__ import annotations

SCRIPT_VERIFY_NONE = 0
SCRIPT_VERIFY_P2SH = 1 << 0
SCRIPT_VERIFY_STRICTENC = 1 << 1
SCRIPT_VERIFY_DERSIG = 1 << 2
SCRIPT_VERIFY_LOW_S = 1 << 3
SCRIPT_VERIFY_NULLDUMMY = 1 << 4
SCRIPT_VERIFY_SIGPUSHONLY = 1 << 5
SCRIPT_VERIFY_MINIMALDATA = 1 << 6
SCRIPT_VERIFY_DISCOURAGE_UPGRADABLE_NOPS = 1 << 7
SCRIPT_VERIFY_CLEANSTACK = 1 << 8
SCRIPT_VERIFY_CHECKLOCKTIMEVERIFY = 1 << 9
SCRIPT_VERIFY_CHECKSEQUENCEVERIFY = 1 << 10
SCRIPT_VERIFY_NULLFAIL = 1 << 14

#: Flags every block is checked with, whatever soft forks are active.
MANDATORY_SCRIPT_VERIFY_FLAGS = SCRIPT_VERIFY_P2SH

#: Mempool policy.  Core 0.12-0.16 leave SIGPUSHONLY out because IsStandardTx
#: already demands push-only scriptSigs; design.md §3 lists it, and with
#: that policy rule it changes nothing, so it is included.
STANDARD_SCRIPT_VERIFY_FLAGS = (
    MANDATORY_SCRIPT_VERIFY_FLAGS
    | SCRIPT_VERIFY_DERSIG
    | SCRIPT_VERIFY_STRICTENC
    | SCRIPT_VERIFY_MINIMALDATA
    | SCRIPT_VERIFY_NULLDUMMY
    | SCRIPT_VERIFY_DISCOURAGE_UPGRADABLE_NOPS
    | SCRIPT_VERIFY_CLEANSTACK
    | SCRIPT_VERIFY_NULLFAIL
    | SCRIPT_VERIFY_CHECKLOCKTIMEVERIFY
    | SCRIPT_VERIFY_CHECKSEQUENCEVERIFY
    | SCRIPT_VERIFY_LOW_S
    | SCRIPT_VERIFY_SIGPUSHONLY
)

#: Standard flags that are not consensus rules (Core's
#: STANDARD_NOT_MANDATORY_VERIFY_FLAGS), used to tell policy rejections
#: from consensus failures.
STANDARD_NOT_MANDATORY_VERIFY_FLAGS = STANDARD_SCRIPT_VERIFY_FLAGS & ~MANDATORY_SCRIPT_VERIFY_FLAGS

#: Flag name (without the SCRIPT_VERIFY_ prefix) -> bit.
FLAG_NAMES = {
    name[len("SCRIPT_VERIFY_"):]: value
    for name, value in dict(globals()).items()
    if name.startswith("SCRIPT_VERIFY_")
}


def parse_flags(text: str) -> int:
    """``"P2SH,STRICTENC"`` -> bits; empty or ``NONE`` is 0.

    Raises KeyError naming the first unknown flag, so callers can tell an
    unsupported flag from a typo-free empty set.
    """
    bits = 0
    for name in text.split(","):
        name = name.strip()
        if name:
            if name not in FLAG_NAMES:
                raise KeyError(name)
            bits |= FLAG_NAMES[name]
    return bits


def format_flags(flags: int) -> str:
    """Bits -> comma-separated names, lowest bit first (for messages)."""
    return ",".join(name for name, bit in sorted(FLAG_NAMES.items(), key=lambda kv: kv[1])
                    if bit and flags & bit)
