"""View objects to JSON bytes with orjson's C encoder, byte for byte what simplejson prints.

orjson prints str, int, bool, None, dicts with str keys, lists and tuples exactly as the
node's general encoder (simplejson, compact, UTF-8, ``use_decimal``) does; Decimals
(amounts, reals, echoed request numbers) become :class:`orjson.Fragment` of their text,
the text simplejson prints. Floats are the exception: orjson prints ``1e-05`` as
``0.00001``. Views never hold floats (doubles are :class:`~coin.views.amounts.Real`), so
a :class:`JSONView` may take this encoder; arbitrary RPC results may not.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Dict

import orjson


class JSONView(Dict[str, Any]):
    """A view object: a dict whose values hold no float at any depth.

    The marker tells the encoder the C path prints it exactly; code that adds a float to
    one must make it a ``Real`` instead (doc/views.md).
    """

    __slots__ = ()


def _fragment(value: Any) -> orjson.Fragment:
    if isinstance(value, Decimal) and value.is_finite():
        return orjson.Fragment(str(value))
    # Anything else (non-finite numbers, namedtuples, sets...) is the general encoder's.
    raise TypeError


def encode_view(value: Any) -> bytes:
    """Compact JSON of a float-free value, or raise ``orjson.JSONEncodeError`` (a TypeError)
    where the general encoder's rules differ: lone surrogates, ints beyond 64 bits,
    non-str keys, non-finite Decimals and types orjson does not know."""
    return orjson.dumps(value, default=_fragment)
