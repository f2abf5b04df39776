"""Numbers as Core prints and reads them: amounts (8 decimals) and doubles (``%.16g``).

Amounts never pass through binary floating point: base units are integers,
the JSON form is a Decimal with exactly eight decimals, and parsing follows
Core's ``ParseFixedPoint`` digit by digit.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from coin.chainparams import money_range

AMOUNT_DECIMALS = 8

#: Core's ParseFixedPoint bound: at most 18 significant digits of base units.
_UPPER_BOUND = 10 ** 18 - 1
#: A JSON number as Core's ParseFixedPoint reads it (no '+', no leading zeros, no '.5').
_FIXED_POINT = re.compile(r"(-)?(0|[1-9][0-9]*)(?:\.([0-9]+))?(?:[eE]([-+])?([0-9]+))?\Z")


class AmountError(ValueError):
    """An amount Core's AmountFromValue rejects; the RPC layer answers -3 with ``message``."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Amount(Decimal):
    """A Decimal that always prints in fixed point (``0.00000001``, never ``1E-8``)."""

    __slots__ = ()

    def __str__(self) -> str:
        return format(self, "f")


class Real(Decimal):
    """A double as Core's UniValue prints it (``%.16g``: ``1``, ``2.190595064976095e-05``).

    Holds exactly the digits of the ``%.16g`` text and prints them back in
    printf's ``%g`` layout (exponent form below 1e-4 and from 1e16 on).
    """

    __slots__ = ()

    def __str__(self) -> str:
        if not self.is_finite():
            return "%.16g" % float(self)
        exponent = self.adjusted()
        if -4 <= exponent < 16:
            return format(self, "f")
        sign, digits, _ = self.as_tuple()
        mantissa = "".join(map(str, digits)).rstrip("0")
        if len(mantissa) > 1:
            mantissa = mantissa[0] + "." + mantissa[1:]
        return "%s%se%+03d" % ("-" if sign else "", mantissa, exponent)


def amount_to_json(base_units: int) -> Amount:
    """Base units -> coins with exactly eight decimals (Core's ValueFromAmount)."""
    return Amount(Decimal(base_units).scaleb(-AMOUNT_DECIMALS))


def real_to_json(value: float) -> Real:
    """A double for JSON, printed as Core prints doubles (difficulty, progress)."""
    return Real("%.16g" % value)


def _fixed_point(negative: bool, digits: str, exponent: int) -> int:
    """Core's ParseFixedPoint on ``±digits × 10^exponent``: base units or AmountError.

    Trailing zeros of the digits are folded into the exponent first, as Core
    does, so ``1.000000000`` is one coin but ``1e-9`` is rejected.
    """
    significant = digits.rstrip("0")
    exponent += len(digits) - len(significant) + AMOUNT_DECIMALS
    significant = significant.lstrip("0")
    if len(significant) > 18 or not 0 <= exponent < 18:
        raise AmountError("Invalid amount")
    units = int(significant or "0") * 10 ** exponent
    if units > _UPPER_BOUND:
        raise AmountError("Invalid amount")
    return -units if negative else units


def _parse_text(text: str) -> int:
    match = _FIXED_POINT.match(text)
    if match is None:
        raise AmountError("Invalid amount")
    sign, whole, fraction, exp_sign, exp_digits = match.groups()
    fraction = fraction or ""
    exp_digits = (exp_digits or "0").lstrip("0") or "0"
    if len(exp_digits) > 18:  # Core's exponent overflow check
        raise AmountError("Invalid amount")
    exponent = -int(exp_digits) if exp_sign == "-" else int(exp_digits)
    # A lone leading 0 is not a mantissa digit in Core's parser (it is skipped).
    digits = ("" if whole == "0" else whole) + fraction
    return _fixed_point(sign is not None, digits, exponent - len(fraction))


def _parse_number(number: Decimal) -> int:
    if not number.is_finite():
        raise AmountError("Invalid amount")
    if not number:
        # The JSON text is gone; Core would reject only odd spellings like 0e-9.
        return 0
    sign, digits, exponent = number.as_tuple()
    return _fixed_point(bool(sign), "".join(map(str, digits)), exponent)


def parse_amount(value: Any) -> int:
    """Core's AmountFromValue: a JSON number or numeric string of coins -> base units.

    Accepts int, Decimal (what the RPC parser makes of a JSON number), str,
    and float (read as its shortest repr, the JSON text it would print as).
    Raises :class:`AmountError`: "Amount is not a number or string",
    "Invalid amount" (not a number, finer than 1e-8, 10^10 coins or more) or
    "Amount out of range" (negative, or above MAX_MONEY).
    """
    if isinstance(value, str):
        units = _parse_text(value)
    elif isinstance(value, (int, Decimal, float)) and not isinstance(value, bool):
        units = _parse_number(Decimal(repr(value)) if isinstance(value, float) else Decimal(value))
    else:
        raise AmountError("Amount is not a number or string")
    if not money_range(units):
        raise AmountError("Amount out of range")
    return units
