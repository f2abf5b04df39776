"""Proposal data checks: the reference's CProposalValidator, its order and its messages."""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Callable, List

from coin.chainparams import ChainParams
from coin.governance.object import DataError, inner_object
from coin.primitives.address import try_decode_address


class ProposalError(ValueError):
    """Invalid proposal data; ``str()`` is the reference's accumulated error messages."""


_NAME_CHARS = frozenset("-_abcdefghijklmnopqrstuvwxyz0123456789")
_BASE58 = frozenset("123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz")
_WHITESPACE = " \f\n\r\t\v"


class _Checker:
    """One validation run, collecting messages as the reference appends them."""

    def __init__(self, data_hex: str, chain: ChainParams) -> None:
        self.chain = chain
        self.errors: List[str] = []
        self.fields: Any = None
        self.parsed = False
        try:
            self.fields = inner_object(data_hex)
            self.parsed = True
        except DataError as e:
            self.errors.append(str(e))

    def fail(self, message: str) -> bool:
        self.errors.append(message)
        return False

    def value(self, key: str) -> Any:
        return self.fields.get(key) if isinstance(self.fields, dict) else None

    def string(self, key: str) -> Any:
        value = self.value(key)
        if not isinstance(value, str):
            self.errors.append("JSON value is not a string as expected")
            return None
        return value

    def integer(self, key: str) -> Any:
        """get_int64 of a number; a fraction or more than 64 bits is "out of range"."""
        value = self.value(key)
        if isinstance(value, bool) or not isinstance(value, (int, Decimal)):
            return None
        if isinstance(value, Decimal) or not -2**63 <= value < 2**63:
            self.errors.append("JSON integer out of range")
            return None
        return value

    def number(self, key: str) -> Any:
        value = self.value(key)
        if isinstance(value, bool) or not isinstance(value, (int, Decimal)):
            return None
        return value

    def json(self) -> bool:
        return self.parsed

    def name(self) -> bool:
        name = self.string("name")
        if name is None:
            return self.fail("name field not found")
        if len(name.encode("utf-8", "surrogateescape")) > 40:
            return self.fail("name exceeds 40 characters")
        if not name.strip(_WHITESPACE):
            return self.fail("name is empty")
        if not set(name.lower()) <= _NAME_CHARS:
            return self.fail("name contains invalid characters")
        return True

    def epochs(self) -> bool:
        start = self.integer("start_epoch")
        if start is None:
            return self.fail("start_epoch field not found")
        end = self.integer("end_epoch")
        if end is None:
            return self.fail("end_epoch field not found")
        if end <= start:
            return self.fail("end_epoch <= start_epoch")
        return True

    def amount(self) -> bool:
        amount = self.number("payment_amount")
        if amount is None:
            return self.fail("payment_amount field not found")
        if amount <= 0:
            return self.fail("payment_amount is negative")
        return True

    def address(self) -> bool:
        address = self.string("payment_address")
        if address is None:
            return self.fail("payment_address field not found")
        if not 26 <= len(address) <= 35:
            return self.fail("incorrect payment_address length")
        if not set(address) <= _BASE58:
            return self.fail("payment_address contains invalid characters")
        if try_decode_address(address, self.chain) is None:
            return self.fail("payment_address is invalid")
        return True

    def url(self) -> bool:
        url = self.string("url")
        if url is None:
            return self.fail("url field not found")
        if len(url.strip(_WHITESPACE)) < 4:
            return self.fail("url too short")
        if not url_parses(url):
            return self.fail("url invalid")
        return True


def url_parses(url: str) -> bool:
    """The reference's CheckURL: what Python's urlparse (sentinel) would not reject, an
    unbalanced bracket in the network location."""
    rest = url.split(":", 1)[1] if ":" in url else url
    if len(rest) > 2 and rest.startswith("//"):
        rest = rest[2:]
        cut = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
        netloc = rest[:cut]
        if ("[" in netloc) != ("]" in netloc):
            return False
    return True


_STEPS: List[tuple] = [
    (_Checker.json, "JSON parsing error"),
    (_Checker.name, "Invalid name"),
    (_Checker.epochs, "Invalid start:end range"),
    (_Checker.amount, "Invalid payment amount"),
    (_Checker.address, "Invalid payment address"),
    (_Checker.url, "Invalid URL"),
]


def validate_proposal(data_hex: str, chain: ChainParams) -> None:
    """Raise ProposalError with the reference's messages (each ending in ';') unless the
    proposal data is complete and well formed."""
    checker = _Checker(data_hex, chain)
    step: Callable[[_Checker], bool]
    for step, summary in _STEPS:
        if not step(checker):
            messages = checker.errors + [summary]
            raise ProposalError("".join(m + ";" for m in messages))
