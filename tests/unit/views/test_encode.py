"""The C paths of the views give the bytes the general paths give.

View objects (``JSONView``) are encoded by orjson, everything else by simplejson; P2PKH and
P2SH output scripts are described from a template instead of being parsed. Each fast path
is checked against the general one on random values.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from twisted.trial.unittest import SynchronousTestCase

from coin.chainparams import MAX_MONEY
from coin.rpc.jsonrpc import JSONNumber, encode_json
from coin.views.amounts import amount_to_json, real_to_json
from coin.views.encode import JSONView, encode_view
from coin.views.script import _described, _parsed

#: Text with every kind of character: controls, quotes, backslashes, non-ASCII, lone
#: surrogates (which orjson refuses, so the general encoder's escapes must be used).
TEXT = st.one_of(
    st.text(),
    st.text(st.characters(codec=None, categories=None)),
    st.text(alphabet='"\\/\x00\x08\x0c\x1f\x7f\u2028\u2029\ud800\udfffé€😀 aZ09'),
)

NUMBERS = st.one_of(
    st.integers(),  # beyond 64 bits too: orjson refuses those
    st.sampled_from([2 ** 63 - 1, -2 ** 63, 2 ** 64 - 1, 2 ** 64, -2 ** 63 - 1]),
    st.integers(-MAX_MONEY, MAX_MONEY).map(amount_to_json),
    st.floats(allow_nan=False, allow_infinity=False).map(real_to_json),
    st.decimals(allow_nan=True, allow_infinity=True),
    st.from_regex(r"-?(0|[1-9][0-9]{0,20})(\.[0-9]{1,20})?([eE][-+]?[0-9]{1,3})?", fullmatch=True)
    .map(JSONNumber),
)

LEAVES = st.one_of(st.none(), st.booleans(), NUMBERS, TEXT)

VALUES = st.recursive(
    LEAVES,
    lambda children: st.one_of(
        st.lists(children, max_size=5),
        st.lists(children, max_size=5).map(tuple),
        st.dictionaries(TEXT, children, max_size=5),
        # Keys that are not text: simplejson prints them as text, orjson refuses them.
        st.dictionaries(st.one_of(TEXT, st.integers(), st.booleans(), st.none()), children,
                        max_size=3),
    ),
    max_leaves=30,
)


def _outcome(value: Any) -> Any:
    """``encode_json(value)``, or the type of the exception it raised."""
    try:
        return encode_json(value)
    except Exception as exc:
        return type(exc)


class ViewEncoderTests(SynchronousTestCase):

    @settings(max_examples=300)
    @given(st.dictionaries(TEXT, VALUES, max_size=6))
    def test_view_bytes_are_the_general_encoders(self, value: dict) -> None:
        # A plain dict takes the general encoder.
        self.assertEqual(_outcome(JSONView(value)), _outcome(dict(value)))

    @given(st.lists(st.dictionaries(TEXT, VALUES, max_size=3), max_size=4))
    def test_lists_of_views_too(self, values: list) -> None:
        self.assertEqual(_outcome([JSONView(value) for value in values]),
                         _outcome([dict(value) for value in values]))

    @given(st.dictionaries(st.text(max_size=8), st.one_of(
        st.integers(-2 ** 63, 2 ** 64 - 1), st.text(), st.none(), st.booleans(),
        st.integers(-MAX_MONEY, MAX_MONEY).map(amount_to_json)), max_size=6))
    def test_plain_views_take_the_c_encoder(self, value: dict) -> None:
        """Without surrogates, huge ints or odd keys, orjson itself gives the bytes (no
        fallback hides a difference)."""
        self.assertEqual(encode_view(JSONView(value)), encode_json(dict(value)))

    def test_amounts_and_reals_print_as_core(self) -> None:
        view = JSONView(value=amount_to_json(10000), zero=amount_to_json(0),
                        neg=amount_to_json(-1), difficulty=real_to_json(2.190595064976095e-05),
                        echoed=[JSONNumber("1e-8"), Decimal("1E-8")])
        self.assertEqual(encode_view(view),
                         b'{"value":0.00010000,"zero":0.00000000,"neg":-0.00000001,'
                         b'"difficulty":2.190595064976095e-05,"echoed":[1e-8,1E-8]}')

    def test_non_finite_decimals_fail_as_before(self) -> None:
        with self.assertRaises(ValueError):
            encode_json(JSONView(x=Decimal("NaN")))


class ScriptTemplateTests(SynchronousTestCase):

    @given(st.binary(min_size=20, max_size=20), st.sampled_from([
        (b"\x76\xa9\x14", b"\x88\xac"), (b"\xa9\x14", b"\x87"),
        # Near misses: one byte off, so the parser must decide.
        (b"\x76\xa9\x13", b"\x88\xac"), (b"\x76\xa9\x14", b"\x88\xad"), (b"\xa9\x14", b"\x88"),
        (b"\xa9\x15", b"\x87"), (b"\x76\xa8\x14", b"\x88\xac"),
    ]))
    def test_templates_describe_as_the_parser(self, h160: bytes, frame: tuple) -> None:
        script = frame[0] + h160 + frame[1]
        self.assertEqual(_described(script), _parsed(script))

    @given(st.binary(min_size=23, max_size=25))
    def test_any_script_of_template_length(self, script: bytes) -> None:
        self.assertEqual(_described(script), _parsed(script))
