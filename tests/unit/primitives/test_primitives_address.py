"""Base58, Base58Check, addresses and WIF keys per network (design.md §2)."""

from __future__ import annotations

import hashlib
import time

from hypothesis import given
from hypothesis import strategies as st
from twisted.trial.unittest import SynchronousTestCase

from coin.chainparams import MAIN, REGTEST, TEST
from coin.primitives.address import (
    MAX_TEXT_LENGTH,
    AddressError,
    Destination,
    decode_address,
    decode_wif,
    encode_address,
    encode_wif,
    try_decode_address,
)
from coin.primitives.base58 import (
    ALPHABET,
    Base58Error,
    b58check_decode,
    b58check_encode,
    b58decode,
    b58encode,
)

#: Bitcoin Core's src/test/data/base58_encode_decode.json.
BASE58_VECTORS = [
    ("", ""),
    ("61", "2g"),
    ("626262", "a3gV"),
    ("636363", "aPEr"),
    ("73696d706c792061206c6f6e6720737472696e67", "2cFupjhnEsSn59qHXstmK2ffpLv2"),
    ("00eb15231dfceb60925886b67d065299925915aeb172c06647", "1NS17iag9jJgTHD1VXjvLCEnZuQ3rJDE9L"),
    ("516b6fcd0f", "ABnLTmg"),
    ("bf4f89001e670274dd", "3SEo3LWLoPntC"),
    ("572e4794", "3EFU7m"),
    ("ecac89cad93923c02321", "EJDM8drfXA6uyA"),
    ("10c8511e", "Rt5zm"),
    ("00000000000000000000", "1111111111"),
    ("00" * 40, "1" * 40),
    ("00" * 39 + "01", "1" * 39 + "2"),
    ("000111d38e5fc9071ffcd20b4a763cc9ae4f252bb4e48fd66a835e252ada93ff480d6dd43dc62a641155a5",
     ALPHABET),
    ("271f359e", "zzzzy"),
    ("271f359f", "zzzzz"),
    ("271f35a0", "211111"),
    ("271f35a1", "211112"),
]

#: Bitcoin Core's base58_keys_valid.json testnet rows: Bitcoin's testnet prefixes
#: (111 / 196 / 239) are ours for test and regtest.
TESTNET_P2PKH = [
    ("mo9ncXisMeAoXwqcV5EWuyncbmCcQN4rVs", "53c0307d6851aa0ce7825ba883c6bd9ad242b486"),
    ("n3ZddxzLvAY9o7184TB4c6FJasAybsw4HZ", "f1d470f9b02370fdec2e6b708b08ac431bf7a5f7"),
    ("n3LnJXCqbPjghuVs8ph9CYsAe4Sh4j97wk", "ef66444b5b17f14e8fae6e7e19b045a78c54fd79"),
    ("mhaMcBxNh5cqXm4aTQ6EcVbKtfL6LGyK2H", "1694f5bc1a7295b600f40018a618a6ea48eeb498"),
    ("mizXiucXRCsEriQCHUkCqef9ph9qtPbZZ6", "261f83568a098a8638844bd7aeca039d5f2352c0"),
    ("myoqcgYiehufrsnnkqdqbp69dddVDMopJu", "c8a3c2a09a298592c3e180f02487cd91ba3400b5"),
]
TESTNET_P2SH = [
    ("2N2JD6wb56AfK4tfmM6PwdVmoYk2dCKf4Br", "6349a418fc4578d10a372b54b45c280cc8c4382f"),
    ("2NBFNJTktNa7GZusGbDbGKRZTxdK9VVez3n", "c579342c2c4c9220205e2cdc285617040c924a0a"),
    ("2NB72XtkjpnATMggui83aEtPawyyKvnbX2o", "c3e55fceceaa4391ed2a9677f4a4d34eacd021a0"),
    ("2MxgPqX1iThW3oZVk9KoFcE5M4JpiETssVN", "3b9b3fd7a50d4f08d1a5b0f62f644fa7115ae2f3"),
    ("2NEWDzHWwY5ZZp8CQWbB7ouNMLqCia6YRda", "e930e1834a4d234702773951d627cce82fbb5d2e"),
    ("2N7FuwuUuoTBrDFdrAZ9KxBmtqMLxce9i1C", "99b31df7c9068d1481b596578ddbb4d3bd90baeb"),
]
#: (wif, secret, compressed)
TESTNET_WIF = [
    ("9213qJab2HNEpMpYNBa7wHGFKKbkDn24jpANDs2huN3yi4J11ko",
     "36cb93b9ab1bdabf7fb9f2c04f1b9cc879933530ae7842398eef5a63a56800c2", False),
    ("cTpB4YiyKiBcPxnefsDpbnDxFDffjqJob8wGCEDXxgQ7zQoMXJdH",
     "b9f4892c9e8282028fea1d2667c4dc5213564d41fc5783896a0d843fc15089f3", True),
    ("93DVKyFYwSN6wEo3E2fCrFPUp17FtrtNi2Lf7n4G3garFb16CRj",
     "d6bca256b5abc5602ec2e1c121a08b0da2556587430bcf7e1898af2224885203", False),
    ("cTDVKtMGVYWTHCb1AFjmVbEbWjvKpKqKgMaR3QJxToMSQAhmCeTN",
     "a81ca4e8f90181ec4b61b6a7eb998af17b2cb04de8a03b504b9e34c4c61db7d9", True),
]
#: Bitcoin mainnet strings (prefixes 0 / 5 / 128): no network of ours accepts them.
BITCOIN_MAIN_ADDRESSES = ["1AGNa15ZQXAZUgFiqJ2i7Z2DPU2J6hW62i", "3CMNFxN1oHBc4R1EpboAL5yzHGgE611Xou"]
BITCOIN_MAIN_WIF = ["5Kd3NBUAdUnhyzenEwVLy9pBKxSwXvE9FMPyR4UKZvpe6E3AgLr",
                    "Kz6UJmQACJmLtaQj5A3JAge4kVTNQ8gbvXuwbmCj7bsaabudb3RD"]

#: Our main network (15 / 9 / 143), pinned: hash160 65a16059..., and the secret eddbdc11...
MAIN_HASH = bytes.fromhex("65a16059864a2fdbc7c99a4723a8395bc6f188eb")
MAIN_P2PKH = "7CLRLdYt4E7hkBM2Cb2VPS71q2tShtVSkU"
MAIN_P2SH = "4nJoRym9o9LSqaWW452aUgUJ41LnS9Au2C"
MAIN_SECRET = bytes.fromhex("eddbdc1168f1daeadbd3e44c1e3f8f5a284c2029f78ad26af98583a499de5b19")
MAIN_WIF_UNCOMPRESSED = "5pnD1fCeQrw71JNMqdoLGxoo4fgiHUsH3wTb5JnmUkvTVdCrBPE"
MAIN_WIF_COMPRESSED = "NHtY1ucQ8KPoWKfGyfRW5TKYKBkHDjzuqyNMQ1X1KWrwvzXjj5cQ"


def reference_b58check(payload: bytes) -> str:
    """An independent, textbook Base58Check encoder to cross-check the pinned strings."""
    data = payload + hashlib.sha256(hashlib.sha256(payload).digest()).digest()[:4]
    digits = []
    n = int.from_bytes(data, "big")
    while n > 0:
        digits.append(ALPHABET[n % 58])
        n //= 58
    zeros = len(data) - len(data.lstrip(b"\0"))
    return "1" * zeros + "".join(reversed(digits))


def flip_last_char(text: str) -> str:
    last = text[-1]
    return text[:-1] + ("2" if last != "2" else "3")


class Base58Tests(SynchronousTestCase):

    def test_vectors(self):
        for hex_data, text in BASE58_VECTORS:
            self.assertEqual(b58encode(bytes.fromhex(hex_data)), text, hex_data)
            self.assertEqual(b58decode(text), bytes.fromhex(hex_data), text)

    def test_leading_zeros_are_ones(self):
        for zeros in range(5):
            self.assertEqual(b58encode(b"\0" * zeros), "1" * zeros)
            self.assertEqual(b58encode(b"\0" * zeros + b"\x01"), "1" * zeros + "2")
            self.assertEqual(b58decode("1" * zeros + "2"), b"\0" * zeros + b"\x01")

    def test_empty(self):
        self.assertEqual(b58encode(b""), "")
        self.assertEqual(b58decode(""), b"")

    @given(st.integers(0, 3), st.binary(max_size=40))
    def test_encode_matches_textbook(self, zeros, data):
        """The encoder takes two digits per division; the digit-at-a-time one agrees."""
        payload = b"\0" * zeros + data
        self.assertEqual(b58check_encode(payload), reference_b58check(payload))
        self.assertEqual(b58decode(b58encode(payload)), payload)

    def test_invalid_characters(self):
        for bad in ("0", "O", "I", "l", "3SEo3LWL0PntC", "a3gV!", "a3g\u00e9",
                    "+", "-", "_", "=", "a3 gV"):
            self.assertRaises(Base58Error, b58decode, bad)
            self.assertRaises(Base58Error, b58check_decode, bad)
        for c in "0OIl":
            self.assertNotIn(c, ALPHABET)
        self.assertEqual(len(ALPHABET), 58)

    def test_error_is_value_error(self):
        self.assertTrue(issubclass(Base58Error, ValueError))


class Base58CheckTests(SynchronousTestCase):

    def test_round_trip(self):
        for payload in (b"", b"\0", b"\0\0abc", bytes(range(40))):
            text = b58check_encode(payload)
            self.assertEqual(text, reference_b58check(payload))
            self.assertEqual(b58check_decode(text), payload)

    def test_bad_checksum(self):
        for text, _ in TESTNET_P2PKH + TESTNET_P2SH:
            b58check_decode(text)
            with self.assertRaises(Base58Error) as cm:
                b58check_decode(flip_last_char(text))
            self.assertEqual(str(cm.exception), "invalid checksum")

    def test_every_single_byte_corruption_detected(self):
        raw = b58decode(MAIN_P2PKH)
        for i in range(len(raw)):
            corrupt = raw[:i] + bytes((raw[i] ^ 0x01,)) + raw[i + 1:]
            self.assertRaises(Base58Error, b58check_decode, b58encode(corrupt))

    def test_too_short(self):
        for text in ("", "1", "11", "111", "1111", b58encode(b"\x01\x02\x03")):
            self.assertRaises(Base58Error, b58check_decode, text)

    def test_empty_payload(self):
        # four bytes that are the checksum of nothing: an empty, valid payload
        self.assertEqual(b58check_decode(b58check_encode(b"")), b"")


class AddressTests(SynchronousTestCase):

    def test_prefixes(self):
        self.assertEqual((MAIN.pubkey_prefix, MAIN.script_prefix, MAIN.wif_prefix),
                         (15, 9, 143))
        for params in (TEST, REGTEST):
            self.assertEqual((params.pubkey_prefix, params.script_prefix, params.wif_prefix),
                             (111, 196, 239))

    def test_testnet_vectors(self):
        for params in (TEST, REGTEST):
            for kind, rows in (("pubkeyhash", TESTNET_P2PKH), ("scripthash", TESTNET_P2SH)):
                for text, h in rows:
                    dest = Destination(kind, bytes.fromhex(h))
                    self.assertEqual(encode_address(dest, params), text)
                    self.assertEqual(decode_address(text, params), dest)
                    self.assertEqual(try_decode_address(text, params), dest)

    def test_main_addresses(self):
        p2pkh = encode_address(Destination("pubkeyhash", MAIN_HASH), MAIN)
        p2sh = encode_address(Destination("scripthash", MAIN_HASH), MAIN)
        self.assertEqual(p2pkh, MAIN_P2PKH)
        self.assertEqual(p2sh, MAIN_P2SH)
        self.assertEqual(p2pkh, reference_b58check(b"\x0f" + MAIN_HASH))
        self.assertEqual(p2sh, reference_b58check(b"\x09" + MAIN_HASH))
        self.assertEqual(decode_address(p2pkh, MAIN), Destination("pubkeyhash", MAIN_HASH))
        self.assertEqual(decode_address(p2sh, MAIN), Destination("scripthash", MAIN_HASH))

    def test_leading_characters(self):
        # Version 15 addresses start with '7', version 9 with '4' or '5'; 111 'm'/'n', 196 '2'.
        for h in (b"\0" * 20, MAIN_HASH, b"\xff" * 20):
            self.assertEqual(encode_address(Destination("pubkeyhash", h), MAIN)[0], "7")
            self.assertIn(encode_address(Destination("scripthash", h), MAIN)[0], "45")
            self.assertIn(encode_address(Destination("pubkeyhash", h), TEST)[0], "mn")
            self.assertEqual(encode_address(Destination("scripthash", h), TEST)[0], "2")

    def test_wrong_network(self):
        for text, _ in TESTNET_P2PKH + TESTNET_P2SH:
            with self.assertRaises(AddressError) as cm:
                decode_address(text, MAIN)
            self.assertEqual(str(cm.exception), "address is for another network")
            self.assertIsNone(try_decode_address(text, MAIN))
        for params in (TEST, REGTEST):
            for text in (MAIN_P2PKH, MAIN_P2SH):
                self.assertRaises(AddressError, decode_address, text, params)
        for params in (MAIN, TEST, REGTEST):
            for text in BITCOIN_MAIN_ADDRESSES:
                self.assertRaises(AddressError, decode_address, text, params)

    def test_bad_checksum(self):
        for text in (MAIN_P2PKH, MAIN_P2SH):
            with self.assertRaises(AddressError) as cm:
                decode_address(flip_last_char(text), MAIN)
            self.assertEqual(str(cm.exception), "invalid checksum")

    def test_wrong_length(self):
        for n in (0, 19, 21, 32):
            text = b58check_encode(b"\x0f" + b"\x01" * n)
            with self.assertRaises(AddressError) as cm:
                decode_address(text, MAIN)
            self.assertEqual(str(cm.exception), "invalid address length")

    def test_invalid_characters(self):
        for c in "0OIl":
            for text in (MAIN_P2PKH[:10] + c + MAIN_P2PKH[11:], c + MAIN_P2PKH[1:]):
                self.assertRaises(AddressError, decode_address, text, MAIN)
            self.assertIsNone(try_decode_address(TESTNET_P2PKH[0][0][:-1] + c, TEST))

    def test_overlong_text_rejected_quickly(self):
        # Base58 decoding is quadratic: 100k characters took seconds before the cap.
        huge = "z" * 200000
        start = time.process_time()  # CPU time: a busy machine must not fail this
        with self.assertRaises(AddressError) as cm:
            decode_address(huge, MAIN)
        self.assertEqual(str(cm.exception), "invalid address length")
        with self.assertRaises(AddressError) as cm:
            decode_wif(huge, MAIN)
        self.assertEqual(str(cm.exception), "invalid key length")
        self.assertIsNone(try_decode_address(huge, TEST))
        self.assertLess(time.process_time() - start, 0.5)
        # the cap is far above any real address or key
        self.assertRaises(AddressError, decode_address, "7" * MAX_TEXT_LENGTH, MAIN)
        self.assertLess(len(MAIN_WIF_COMPRESSED), MAX_TEXT_LENGTH)

    def test_wif_is_not_an_address(self):
        self.assertRaises(AddressError, decode_address, MAIN_WIF_COMPRESSED, MAIN)
        self.assertRaises(AddressError, decode_wif, MAIN_P2PKH, MAIN)

    def test_error_is_value_error(self):
        self.assertTrue(issubclass(AddressError, ValueError))


class WifTests(SynchronousTestCase):

    def test_testnet_vectors(self):
        for params in (TEST, REGTEST):
            for text, secret, compressed in TESTNET_WIF:
                secret = bytes.fromhex(secret)
                self.assertEqual(encode_wif(secret, params, compressed), text)
                self.assertEqual(decode_wif(text, params), (secret, compressed))

    def test_main_round_trip(self):
        self.assertEqual(encode_wif(MAIN_SECRET, MAIN, compressed=False), MAIN_WIF_UNCOMPRESSED)
        self.assertEqual(encode_wif(MAIN_SECRET, MAIN), MAIN_WIF_COMPRESSED)
        self.assertEqual(MAIN_WIF_UNCOMPRESSED,
                         reference_b58check(bytes((143,)) + MAIN_SECRET))
        self.assertEqual(MAIN_WIF_COMPRESSED,
                         reference_b58check(bytes((143,)) + MAIN_SECRET + b"\x01"))
        self.assertEqual(decode_wif(MAIN_WIF_UNCOMPRESSED, MAIN), (MAIN_SECRET, False))
        self.assertEqual(decode_wif(MAIN_WIF_COMPRESSED, MAIN), (MAIN_SECRET, True))

    def test_round_trips_all_networks(self):
        for params in (MAIN, TEST, REGTEST):
            for secret in (b"\0" * 31 + b"\x01", MAIN_SECRET, b"\xff" * 32):
                for compressed in (False, True):
                    text = encode_wif(secret, params, compressed)
                    self.assertEqual(decode_wif(text, params), (secret, compressed))

    def test_leading_characters(self):
        # 143: uncompressed '5', compressed 'N'; 239: '9' and 'c'.
        self.assertEqual(MAIN_WIF_UNCOMPRESSED[0], "5")
        self.assertEqual(MAIN_WIF_COMPRESSED[0], "N")
        self.assertEqual(encode_wif(MAIN_SECRET, TEST, False)[0], "9")
        self.assertEqual(encode_wif(MAIN_SECRET, TEST, True)[0], "c")

    def test_wrong_network(self):
        for params in (TEST, REGTEST):
            for text in (MAIN_WIF_UNCOMPRESSED, MAIN_WIF_COMPRESSED):
                with self.assertRaises(AddressError) as cm:
                    decode_wif(text, params)
                self.assertEqual(str(cm.exception), "key is for another network")
        for text, _, _ in TESTNET_WIF:
            self.assertRaises(AddressError, decode_wif, text, MAIN)
        for params in (MAIN, TEST, REGTEST):
            for text in BITCOIN_MAIN_WIF:
                self.assertRaises(AddressError, decode_wif, text, params)

    def test_bad_checksum(self):
        with self.assertRaises(AddressError) as cm:
            decode_wif(flip_last_char(MAIN_WIF_COMPRESSED), MAIN)
        self.assertEqual(str(cm.exception), "invalid checksum")

    def test_bad_length_or_flag(self):
        prefix = bytes((143,))
        for payload in (prefix, prefix + b"\x01" * 31, prefix + b"\x01" * 32 + b"\x02",
                        prefix + b"\x01" * 32 + b"\x00", prefix + b"\x01" * 34,
                        prefix + b"\x01" * 32 + b"\x01\x01"):
            with self.assertRaises(AddressError) as cm:
                decode_wif(b58check_encode(payload), MAIN)
            self.assertEqual(str(cm.exception), "invalid key length")
        self.assertRaises(AddressError, decode_wif, b58check_encode(b""), MAIN)

    def test_invalid_characters(self):
        for c in "0OIl":
            self.assertRaises(AddressError, decode_wif, MAIN_WIF_COMPRESSED[:-1] + c, MAIN)
