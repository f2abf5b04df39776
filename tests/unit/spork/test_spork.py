"""Sporks without sockets: wire round trips, signatures with the published regtest key,
and the manager's rules against real peers on string transports (tests/unit/p2p/test_p2p_peer.py)."""

from __future__ import annotations

import coincurve
from hypothesis import given
from hypothesis import strategies as st
from twisted.trial.unittest import SynchronousTestCase

from coin.chainparams import MAIN, REGTEST
from coin.p2p.messages import (
    MSG_SPORK, GetDataMessage, GetSporksMessage, InvItem, InvMessage, SporkMessage,
    decode_payload,
)
from coin.primitives.address import (
    Destination, decode_address, decode_wif, encode_address, encode_wif,
)
from coin.primitives.hashes import hash160
from coin.spork import SPORK_8_MASTERNODE_PAYMENT_ENFORCEMENT, SPORK_OFF, SporkConfigError
from coin.spork.manager import (
    ADDRESS_ON_MAIN, BAD_ADDRESS, BAD_SIGNATURE_BAN_SCORE, WRONG_KEY, SporkManager,
)
from coin.spork.signing import sign_spork, signed_by, signed_text

from tests.unit.p2p.test_p2p_peer import START, Harness, VerackMessage, feed, handshake, sent, version

#: The regtest spork key published in doc/spork.md.
REGTEST_SPORK_KEY = "cNX7TEQe55sd7kLWKH3jSppmmcSpe2Q33vrXaDV5RbJnLR4Qc1rz"
SPORK_8 = SPORK_8_MASTERNODE_PAYMENT_ENFORCEMENT
INT32 = st.integers(-(1 << 31), (1 << 31) - 1)
INT64 = st.integers(-(1 << 63), (1 << 63) - 1)


def regtest_key() -> coincurve.PrivateKey:
    return coincurve.PrivateKey(decode_wif(REGTEST_SPORK_KEY, REGTEST)[0])


def key_hash() -> bytes:
    return decode_address(REGTEST.spork_address, REGTEST).hash160


class WireTests(SynchronousTestCase):
    @given(INT32, INT64, INT64, st.binary(max_size=100))
    def test_spork_round_trip(self, spork_id: int, value: int, time_signed: int,
                              signature: bytes) -> None:
        message = SporkMessage(spork_id, value, time_signed, signature)
        self.assertEqual(decode_payload("spork", message.serialize()), message)

    @given(INT32, INT64, INT64, st.binary(max_size=100), st.binary(max_size=100))
    def test_hash_leaves_out_the_signature(self, spork_id: int, value: int, time_signed: int,
                                           one: bytes, other: bytes) -> None:
        self.assertEqual(SporkMessage(spork_id, value, time_signed, one).hash,
                         SporkMessage(spork_id, value, time_signed, other).hash)

    def test_layout(self) -> None:
        raw = SporkMessage(10007, 1, 2, b"\xaa").serialize()
        self.assertEqual(raw.hex(), "17270000" + "0100000000000000" + "0200000000000000"
                         + "01aa")
        self.assertEqual(decode_payload("getsporks", b""), GetSporksMessage())
        self.assertEqual(MSG_SPORK, 1002)  # the reference node's number

    def test_truncated_is_malformed(self) -> None:
        raw = SporkMessage(10007, 1, 2, b"\xaa" * 65).serialize()
        with self.assertRaises(Exception) as caught:
            decode_payload("spork", raw[:-1])
        self.assertIn("error parsing spork message", str(caught.exception))


class SignatureTests(SynchronousTestCase):
    def test_signed_text(self) -> None:
        self.assertEqual(signed_text(10007, 0, 1800000000), "1000701800000000")
        self.assertEqual(signed_text(10004, -5, 7), "10004-57")

    def test_published_key_is_the_regtest_spork_key(self) -> None:
        spork = sign_spork(SPORK_8, 0, START, regtest_key(), True)
        self.assertEqual(len(spork.signature), 65)
        self.assertTrue(signed_by(spork, key_hash()))

    def test_other_key_or_changed_field_fails(self) -> None:
        stranger = sign_spork(SPORK_8, 0, START, coincurve.PrivateKey(), True)
        self.assertFalse(signed_by(stranger, key_hash()))
        good = sign_spork(SPORK_8, 0, START, regtest_key(), True)
        for changed in (SporkMessage(SPORK_8, 1, START, good.signature),
                        SporkMessage(SPORK_8, 0, START + 1, good.signature),
                        SporkMessage(SPORK_8 + 1, 0, START, good.signature),
                        SporkMessage(SPORK_8, 0, START, good.signature[:64]),
                        SporkMessage(SPORK_8, 0, START, b"")):
            self.assertFalse(signed_by(changed, key_hash()), changed)

    def test_uncompressed_key_form_is_another_address(self) -> None:
        # The recovered key's form is part of the address, as in Core's key ids.
        self.assertFalse(signed_by(sign_spork(SPORK_8, 0, START, regtest_key(), False),
                                   key_hash()))


class ConfigTests(SynchronousTestCase):
    def make(self, **kwargs) -> SporkManager:
        return SporkManager(REGTEST, lambda: START, **kwargs)

    def assertConfigError(self, message: str, build) -> None:
        with self.assertRaises(SporkConfigError) as caught:
            build()
        self.assertEqual(str(caught.exception), message)

    def test_sporkkey(self) -> None:
        manager = self.make()
        self.assertFalse(manager.can_sign)
        self.assertFalse(manager.update(SPORK_8, 0))  # "failure" without a key
        manager.set_private_key(REGTEST_SPORK_KEY)
        self.assertTrue(manager.can_sign)
        for wrong in (encode_wif(coincurve.PrivateKey().secret, REGTEST), "not a key",
                      encode_wif(decode_wif(REGTEST_SPORK_KEY, REGTEST)[0], MAIN)):
            self.assertConfigError(WRONG_KEY, lambda: self.make().set_private_key(wrong))

    def test_sporkaddr(self) -> None:
        key = coincurve.PrivateKey()
        other = encode_address(Destination("pubkeyhash", hash160(key.public_key.format())),
                               REGTEST)
        manager = self.make(address=other)
        self.assertConfigError(WRONG_KEY, lambda: manager.set_private_key(REGTEST_SPORK_KEY))
        manager.set_private_key(encode_wif(key.secret, REGTEST))
        self.assertTrue(manager.update(SPORK_8, 0))
        self.assertEqual(manager.value(SPORK_8), 0)
        self.assertConfigError(BAD_ADDRESS, lambda: self.make(address="nonsense"))
        p2sh = encode_address(Destination("scripthash", b"\x07" * 20), REGTEST)
        self.assertConfigError(BAD_ADDRESS, lambda: self.make(address=p2sh))
        self.assertConfigError(ADDRESS_ON_MAIN, lambda: SporkManager(
            MAIN, lambda: START, address=MAIN.spork_address))

    def test_values_and_activity(self) -> None:
        manager = self.make()
        self.assertEqual(manager.value(SPORK_8), SPORK_OFF)
        self.assertFalse(manager.is_active(SPORK_8, START))
        self.assertEqual(manager.value(10001), 0)
        self.assertTrue(manager.is_active(10001, START))
        self.assertEqual(manager.value(99999), -1)  # unknown: the reference's -1, and off
        self.assertFalse(manager.is_active(99999, START))
        manager.set_private_key(REGTEST_SPORK_KEY)
        self.assertTrue(manager.update(SPORK_8, START + 10))
        self.assertEqual(manager.value(SPORK_8), START + 10)
        self.assertFalse(manager.is_active(SPORK_8, START + 10))  # value < now, strictly
        self.assertTrue(manager.is_active(SPORK_8, START + 11))


class ManagerP2PTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.h = Harness()
        self.manager = SporkManager(REGTEST, self.h.connman.adjusted_time)
        self.manager.attach(self.h.connman)

    def signed(self, value: int, time_signed: int = START, spork_id: int = SPORK_8
               ) -> SporkMessage:
        return sign_spork(spork_id, value, time_signed, regtest_key(), True)

    def test_handshake_asks_getsporks(self) -> None:
        peer, transport = self.h.connect()
        feed(peer, version(), VerackMessage())
        self.assertIn(GetSporksMessage(), sent(transport))

    def test_valid_spork_is_held_relayed_and_served(self) -> None:
        source, source_out = handshake(self.h)
        other, other_out = handshake(self.h, ip="9.9.9.9")
        spork = self.signed(0)
        feed(source, spork)
        self.assertEqual(self.manager.value(SPORK_8), 0)
        self.assertEqual(source.ban_score, 0)
        announcement = InvMessage([InvItem(MSG_SPORK, spork.hash)])
        self.assertEqual(sent(other_out), [announcement])
        self.assertEqual(sent(source_out), [])  # it knows its own spork
        feed(other, GetSporksMessage())
        self.assertEqual(sent(other_out), [spork])
        self.assertEqual(self.manager.lookup(spork.hash), spork)

    def test_older_or_same_timestamp_is_dropped_unscored(self) -> None:
        peer, transport = handshake(self.h)
        feed(peer, self.signed(0, START + 5))
        for stale in (self.signed(1, START + 5), self.signed(1, START + 4)):
            feed(peer, stale)
            self.assertEqual(self.manager.value(SPORK_8), 0)
        self.assertEqual(peer.ban_score, 0)
        newer = self.signed(7, START + 6)
        feed(peer, newer)
        self.assertEqual(self.manager.value(SPORK_8), 7)

    def test_bad_signature_scores_and_bans(self) -> None:
        peer, transport = handshake(self.h)
        forged = sign_spork(SPORK_8, 0, START, coincurve.PrivateKey(), True)
        feed(peer, forged)
        self.assertEqual(self.manager.value(SPORK_8), SPORK_OFF)
        self.assertIsNone(self.manager.lookup(forged.hash))
        self.assertEqual(peer.ban_score, BAD_SIGNATURE_BAN_SCORE)
        self.assertTrue(self.h.connman.banman.is_banned(peer.ip))

    def test_changed_value_under_a_valid_signature_is_refused(self) -> None:
        peer, transport = handshake(self.h)
        good = self.signed(SPORK_OFF)
        feed(peer, SporkMessage(SPORK_8, 0, START, good.signature))
        self.assertEqual(self.manager.value(SPORK_8), SPORK_OFF)
        self.assertEqual(peer.ban_score, BAD_SIGNATURE_BAN_SCORE)

    def test_inv_asks_for_unknown_sporks_only(self) -> None:
        peer, transport = handshake(self.h)
        held = self.signed(0)
        self.manager.on_spork(peer, held)
        sent(transport)
        unknown = InvItem(MSG_SPORK, b"\x01" * 32)
        self.manager.on_inv(peer, [InvItem(MSG_SPORK, held.hash), unknown])
        self.assertEqual(sent(transport), [GetDataMessage([unknown])])
        self.manager.on_inv(peer, [InvItem(MSG_SPORK, bytes([i]) * 32) for i in range(100)])
        self.assertEqual(len(sent(transport)[0].items), 16)

    def test_own_update_is_announced(self) -> None:
        peer, transport = handshake(self.h)
        self.manager.set_private_key(REGTEST_SPORK_KEY)
        self.assertTrue(self.manager.update(SPORK_8, 0))
        (announcement,) = sent(transport)
        (item,) = announcement.items
        spork = self.manager.lookup(item.hash)
        self.assertEqual((spork.spork_id, spork.value, spork.time_signed),
                         (SPORK_8, 0, int(self.h.connman.adjusted_time())))
        self.assertTrue(signed_by(spork, key_hash()))

    def test_register_twice_is_refused(self) -> None:
        with self.assertRaises(ValueError):
            SporkManager(REGTEST, lambda: START).attach(self.h.connman)
