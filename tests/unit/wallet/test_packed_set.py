"""PackedSet (coin.wallet.txstore): the settled txids of a lazy wallet load."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st
from twisted.trial import unittest

from coin.wallet.txstore import PackedSet

txids = st.binary(min_size=32, max_size=32)


class PackedSetTests(unittest.TestCase):

    @settings(max_examples=200, deadline=None)
    @given(st.lists(txids, max_size=40), st.lists(txids, max_size=40), st.data())
    def test_lookups_answer_as_a_set_of_prefixes(self, keys, others, data):
        marked = data.draw(st.lists(st.sampled_from(keys), max_size=10) if keys else st.just([]))
        # Keys sharing the first 8 bytes of a member (the quick filter's key) but not its
        # prefix must still be told apart by the search behind it.
        twins = [key[:8] + other[8:] for key, other in zip(keys, others)]
        packed = PackedSet.of(keys, marked)
        prefixes = sorted({key[:16] for key in keys})
        self.assertEqual(len(packed), len(prefixes))
        self.assertEqual(list(packed), prefixes)
        for probe in keys + others + twins:
            inside = probe[:16] in prefixes
            self.assertEqual(probe in packed, inside)
            self.assertEqual(packed.position(probe),
                             prefixes.index(probe[:16]) if inside else None)
            self.assertEqual(packed.marked(probe),
                             inside and any(m[:16] == probe[:16] for m in marked))

    def test_empty(self):
        self.assertNotIn(b"\x01" * 32, PackedSet())
        self.assertEqual(list(PackedSet.of([])), [])
