"""The wallet's pure cryptography: BIP32 keys, Core's wallet encryption, message signing.

BIP32 test vectors 1-3 and 5 are copied from bip-0032.mediawiki (mainnet versions).
Property tests use the profile in ``tests/__init__.py``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac as real_hmac
import time
from types import SimpleNamespace

import coincurve
from Crypto.Cipher import AES
from Crypto.Util.Padding import pad
from hypothesis import given
from hypothesis import strategies as st
from twisted.trial.unittest import SynchronousTestCase

from coin.chainparams import MAIN, TEST
from coin.primitives.address import Destination, encode_address, encode_wif
from coin.primitives.base58 import b58check_decode
from coin.primitives.hashes import hash160, sha256d
from coin.primitives.serialize import DeserializationError
from coin.rpc.methods.util import signmessagewithprivkey, verifymessage
from coin.wallet import hd
from coin.wallet.crypter import (
    DEFAULT_ITERATIONS, DecryptionError, MasterKey, WrongPassphrase, aes_decrypt, aes_encrypt,
    decrypt_secret, derive_key, encrypt_secret,
)
from coin.wallet.hd import (
    HARDENED, SECP256K1_N, DerivationError, ExtKey, ExtKeyError, ExtPubKey, external_path,
    format_path, internal_path, parse_path,
)
from coin.primitives.message import sign_message

XPRV = bytes.fromhex("0488ADE4")
XPUB = bytes.fromhex("0488B21E")
TPRV = bytes.fromhex("04358394")
TPUB = bytes.fromhex("043587CF")

# (seed hex, [(path, ext pub, ext prv), ...]) -- BIP32 "Test Vectors".
VECTOR_1 = ("000102030405060708090a0b0c0d0e0f", [
    ("m",
     "xpub661MyMwAqRbcFtXgS5sYJABqqG9YLmC4Q1Rdap9gSE8NqtwybGhePY2gZ29ESFjqJoCu1Rupje8YtGqsefD265TMg7usUDFdp6W1EGMcet8",
     "xprv9s21ZrQH143K3QTDL4LXw2F7HEK3wJUD2nW2nRk4stbPy6cq3jPPqjiChkVvvNKmPGJxWUtg6LnF5kejMRNNU3TGtRBeJgk33yuGBxrMPHi"),
    ("m/0'",
     "xpub68Gmy5EdvgibQVfPdqkBBCHxA5htiqg55crXYuXoQRKfDBFA1WEjWgP6LHhwBZeNK1VTsfTFUHCdrfp1bgwQ9xv5ski8PX9rL2dZXvgGDnw",
     "xprv9uHRZZhk6KAJC1avXpDAp4MDc3sQKNxDiPvvkX8Br5ngLNv1TxvUxt4cV1rGL5hj6KCesnDYUhd7oWgT11eZG7XnxHrnYeSvkzY7d2bhkJ7"),
    ("m/0'/1",
     "xpub6ASuArnXKPbfEwhqN6e3mwBcDTgzisQN1wXN9BJcM47sSikHjJf3UFHKkNAWbWMiGj7Wf5uMash7SyYq527Hqck2AxYysAA7xmALppuCkwQ",
     "xprv9wTYmMFdV23N2TdNG573QoEsfRrWKQgWeibmLntzniatZvR9BmLnvSxqu53Kw1UmYPxLgboyZQaXwTCg8MSY3H2EU4pWcQDnRnrVA1xe8fs"),
    ("m/0'/1/2'",
     "xpub6D4BDPcP2GT577Vvch3R8wDkScZWzQzMMUm3PWbmWvVJrZwQY4VUNgqFJPMM3No2dFDFGTsxxpG5uJh7n7epu4trkrX7x7DogT5Uv6fcLW5",
     "xprv9z4pot5VBttmtdRTWfWQmoH1taj2axGVzFqSb8C9xaxKymcFzXBDptWmT7FwuEzG3ryjH4ktypQSAewRiNMjANTtpgP4mLTj34bhnZX7UiM"),
    ("m/0'/1/2'/2",
     "xpub6FHa3pjLCk84BayeJxFW2SP4XRrFd1JYnxeLeU8EqN3vDfZmbqBqaGJAyiLjTAwm6ZLRQUMv1ZACTj37sR62cfN7fe5JnJ7dh8zL4fiyLHV",
     "xprvA2JDeKCSNNZky6uBCviVfJSKyQ1mDYahRjijr5idH2WwLsEd4Hsb2Tyh8RfQMuPh7f7RtyzTtdrbdqqsunu5Mm3wDvUAKRHSC34sJ7in334"),
    ("m/0'/1/2'/2/1000000000",
     "xpub6H1LXWLaKsWFhvm6RVpEL9P4KfRZSW7abD2ttkWP3SSQvnyA8FSVqNTEcYFgJS2UaFcxupHiYkro49S8yGasTvXEYBVPamhGW6cFJodrTHy",
     "xprvA41z7zogVVwxVSgdKUHDy1SKmdb533PjDz7J6N6mV6uS3ze1ai8FHa8kmHScGpWmj4WggLyQjgPie1rFSruoUihUZREPSL39UNdE3BBDu76"),
])

VECTOR_2 = ("fffcf9f6f3f0edeae7e4e1dedbd8d5d2cfccc9c6c3c0bdbab7b4b1aeaba8a5a29f9c999693908d8a87848"
            "17e7b7875726f6c696663605d5a5754514e4b484542", [
                ("m",
                 "xpub661MyMwAqRbcFW31YEwpkMuc5THy2PSt5bDMsktWQcFF8syAmRUapSCGu8ED9W6oDMSgv6Zz8idoc4a6mr8BDzTJY47LJhkJ8UB7WEGuduB",
                 "xprv9s21ZrQH143K31xYSDQpPDxsXRTUcvj2iNHm5NUtrGiGG5e2DtALGdso3pGz6ssrdK4PFmM8NSpSBHNqPqm55Qn3LqFtT2emdEXVYsCzC2U"),
                ("m/0",
                 "xpub69H7F5d8KSRgmmdJg2KhpAK8SR3DjMwAdkxj3ZuxV27CprR9LgpeyGmXUbC6wb7ERfvrnKZjXoUmmDznezpbZb7ap6r1D3tgFxHmwMkQTPH",
                 "xprv9vHkqa6EV4sPZHYqZznhT2NPtPCjKuDKGY38FBWLvgaDx45zo9WQRUT3dKYnjwih2yJD9mkrocEZXo1ex8G81dwSM1fwqWpWkeS3v86pgKt"),
                ("m/0/2147483647'",
                 "xpub6ASAVgeehLbnwdqV6UKMHVzgqAG8Gr6riv3Fxxpj8ksbH9ebxaEyBLZ85ySDhKiLDBrQSARLq1uNRts8RuJiHjaDMBU4Zn9h8LZNnBC5y4a",
                 "xprv9wSp6B7kry3Vj9m1zSnLvN3xH8RdsPP1Mh7fAaR7aRLcQMKTR2vidYEeEg2mUCTAwCd6vnxVrcjfy2kRgVsFawNzmjuHc2YmYRmagcEPdU9"),
                ("m/0/2147483647'/1",
                 "xpub6DF8uhdarytz3FWdA8TvFSvvAh8dP3283MY7p2V4SeE2wyWmG5mg5EwVvmdMVCQcoNJxGoWaU9DCWh89LojfZ537wTfunKau47EL2dhHKon",
                 "xprv9zFnWC6h2cLgpmSA46vutJzBcfJ8yaJGg8cX1e5StJh45BBciYTRXSd25UEPVuesF9yog62tGAQtHjXajPPdbRCHuWS6T8XA2ECKADdw4Ef"),
                ("m/0/2147483647'/1/2147483646'",
                 "xpub6ERApfZwUNrhLCkDtcHTcxd75RbzS1ed54G1LkBUHQVHQKqhMkhgbmJbZRkrgZw4koxb5JaHWkY4ALHY2grBGRjaDMzQLcgJvLJuZZvRcEL",
                 "xprvA1RpRA33e1JQ7ifknakTFpgNXPmW2YvmhqLQYMmrj4xJXXWYpDPS3xz7iAxn8L39njGVyuoseXzU6rcxFLJ8HFsTjSyQbLYnMpCqE2VbFWc"),
                ("m/0/2147483647'/1/2147483646'/2",
                 "xpub6FnCn6nSzZAw5Tw7cgR9bi15UV96gLZhjDstkXXxvCLsUXBGXPdSnLFbdpq8p9HmGsApME5hQTZ3emM2rnY5agb9rXpVGyy3bdW6EEgAtqt",
                 "xprvA2nrNbFZABcdryreWet9Ea4LvTJcGsqrMzxHx98MMrotbir7yrKCEXw7nadnHM8Dq38EGfSh6dqA9QWTyefMLEcBYJUuekgW4BYPJcr9E7j"),
            ])

# Retention of leading zeros (bitpay/bitcore-lib#47): the master secret starts with 00.
VECTOR_3 = ("4b381541583be4423346c643850da4b320e46a87ae3d2a4e6da11eba819cd4acba45d239319ac14f863b8d5ab5"
            "a0d0c64d2e8a1e7d1457df2e5a3c51c73235be", [
                ("m",
                 "xpub661MyMwAqRbcEZVB4dScxMAdx6d4nFc9nvyvH3v4gJL378CSRZiYmhRoP7mBy6gSPSCYk6SzXPTf3ND1cZAceL7SfJ1Z3GC8vBgp2epUt13",
                 "xprv9s21ZrQH143K25QhxbucbDDuQ4naNntJRi4KUfWT7xo4EKsHt2QJDu7KXp1A3u7Bi1j8ph3EGsZ9Xvz9dGuVrtHHs7pXeTzjuxBrCmmhgC6"),
                ("m/0'",
                 "xpub68NZiKmJWnxxS6aaHmn81bvJeTESw724CRDs6HbuccFQN9Ku14VQrADWgqbhhTHBaohPX4CjNLf9fq9MYo6oDaPPLPxSb7gwQN3ih19Zm4Y",
                 "xprv9uPDJpEQgRQfDcW7BkF7eTya6RPxXeJCqCJGHuCJ4GiRVLzkTXBAJMu2qaMWPrS7AANYqdq6vcBcBUdJCVVFceUvJFjaPdGZ2y9WACViL4L"),
            ])

# Test vector 5: extended keys that must be rejected.
INVALID_EXTENDED_KEYS = [
    ("xpub661MyMwAqRbcEYS8w7XLSVeEsBXy79zSzH1J8vCdxAZningWLdN3zgtU6LBpB85b3D2yc8sfvZU521AAwdZafEz7mnzBBsz4wKY5fTtTQBm",
     "pubkey version / prvkey mismatch"),
    ("xprv9s21ZrQH143K24Mfq5zL5MhWK9hUhhGbd45hLXo2Pq2oqzMMo63oStZzFGTQQD3dC4H2D5GBj7vWvSQaaBv5cxi9gafk7NF3pnBju6dwKvH",
     "prvkey version / pubkey mismatch"),
    ("xpub661MyMwAqRbcEYS8w7XLSVeEsBXy79zSzH1J8vCdxAZningWLdN3zgtU6Txnt3siSujt9RCVYsx4qHZGc62TG4McvMGcAUjeuwZdduYEvFn",
     "invalid pubkey prefix 04"),
    ("xprv9s21ZrQH143K24Mfq5zL5MhWK9hUhhGbd45hLXo2Pq2oqzMMo63oStZzFGpWnsj83BHtEy5Zt8CcDr1UiRXuWCmTQLxEK9vbz5gPstX92JQ",
     "invalid prvkey prefix 04"),
    ("xpub661MyMwAqRbcEYS8w7XLSVeEsBXy79zSzH1J8vCdxAZningWLdN3zgtU6N8ZMMXctdiCjxTNq964yKkwrkBJJwpzZS4HS2fxvyYUA4q2Xe4",
     "invalid pubkey prefix 01"),
    ("xprv9s21ZrQH143K24Mfq5zL5MhWK9hUhhGbd45hLXo2Pq2oqzMMo63oStZzFAzHGBP2UuGCqWLTAPLcMtD9y5gkZ6Eq3Rjuahrv17fEQ3Qen6J",
     "invalid prvkey prefix 01"),
    ("xprv9s2SPatNQ9Vc6GTbVMFPFo7jsaZySyzk7L8n2uqKXJen3KUmvQNTuLh3fhZMBoG3G4ZW1N2kZuHEPY53qmbZzCHshoQnNf4GvELZfqTUrcv",
     "zero depth with non-zero parent fingerprint"),
    ("xpub661no6RGEX3uJkY4bNnPcw4URcQTrSibUZ4NqJEw5eBkv7ovTwgiT91XX27VbEXGENhYRCf7hyEbWrR3FewATdCEebj6znwMfQkhRYHRLpJ",
     "zero depth with non-zero parent fingerprint"),
    ("xprv9s21ZrQH4r4TsiLvyLXqM9P7k1K3EYhA1kkD6xuquB5i39AU8KF42acDyL3qsDbU9NmZn6MsGSUYZEsuoePmjzsB3eFKSUEh3Gu1N3cqVUN",
     "zero depth with non-zero index"),
    ("xpub661MyMwAuDcm6CRQ5N4qiHKrJ39Xe1R1NyfouMKTTWcguwVcfrZJaNvhpebzGerh7gucBvzEQWRugZDuDXjNDRmXzSZe4c7mnTK97pTvGS8",
     "zero depth with non-zero index"),
    ("DMwo58pR1QLEFihHiXPVykYB6fJmsTeHvyTp7hRThAtCX8CvYzgPcn8XnmdfHGMQzT7ayAmfo4z3gY5KfbrZWZ6St24UVf2Qgo6oujFktLHdHY4",
     "unknown extended key version"),
    ("DMwo58pR1QLEFihHiXPVykYB6fJmsTeHvyTp7hRThAtCX8CvYzgPcn8XnmdfHPmHJiEDXkTiJTVV9rHEBUem2mwVbbNfvT2MTcAqj3nesx8uBf9",
     "unknown extended key version"),
    ("xprv9s21ZrQH143K24Mfq5zL5MhWK9hUhhGbd45hLXo2Pq2oqzMMo63oStZzF93Y5wvzdUayhgkkFoicQZcP3y52uPPxFnfoLZB21Teqt1VvEHx",
     "private key 0 not in 1..n-1"),
    ("xprv9s21ZrQH143K24Mfq5zL5MhWK9hUhhGbd45hLXo2Pq2oqzMMo63oStZzFAzHGBP2UuGCqWLTAPLcMtD5SDKr24z3aiUvKr9bJpdrcLg1y3G",
     "private key n not in 1..n-1"),
    ("xpub661MyMwAqRbcEYS8w7XLSVeEsBXy79zSzH1J8vCdxAZningWLdN3zgtU6Q5JXayek4PRsn35jii4veMimro1xefsM58PgBMrvdYre8QyULY",
     "invalid pubkey 020000000000000000000000000000000000000000000000000000000000000007"),
    ("xprv9s21ZrQH143K3QTDL4LXw2F7HEK3wJUD2nW2nRk4stbPy6cq3jPPqjiChkVvvNKmPGJxWUtg6LnF5kejMRNNU3TGtRBeJgk33yuGBxrMPHL",
     "invalid checksum"),
]


@st.composite
def ext_keys(draw, max_depth: int = 255) -> ExtKey:
    depth = draw(st.integers(0, max_depth))
    if depth:
        fingerprint = draw(st.binary(min_size=4, max_size=4))
        child_number = draw(st.integers(0, 0xFFFFFFFF))
    else:
        fingerprint, child_number = b"\x00" * 4, 0
    return ExtKey(depth, fingerprint, child_number, draw(st.binary(min_size=32, max_size=32)),
                  draw(st.integers(1, SECP256K1_N - 1)).to_bytes(32, "big"))


secrets = st.integers(1, SECP256K1_N - 1).map(lambda n: n.to_bytes(32, "big"))


# ------------------------------------------------------------------ BIP32

class BIP32VectorTests(SynchronousTestCase):
    def check_vector(self, vector) -> None:
        seed_hex, chains = vector
        master = ExtKey.from_seed(bytes.fromhex(seed_hex))
        for path, xpub, xprv in chains:
            key = master.derive_path(path)
            self.assertEqual(key.serialize(XPRV), xprv, path)
            self.assertEqual(key.neuter().serialize(XPUB), xpub, path)
            self.assertEqual(ExtKey.parse(xprv, XPRV), key, path)
            self.assertEqual(ExtPubKey.parse(xpub, XPUB), key.neuter(), path)
            self.assertEqual(key.depth, len(parse_path(path)))

    def test_vector_1(self):
        self.check_vector(VECTOR_1)

    def test_vector_2(self):
        self.check_vector(VECTOR_2)

    def test_vector_3_leading_zeros(self):
        self.check_vector(VECTOR_3)
        master = ExtKey.from_seed(bytes.fromhex(VECTOR_3[0]))
        self.assertEqual(master.secret[0], 0)
        self.assertEqual(len(master.secret), 32)

    def test_public_derivation_matches_vectors(self):
        """The non-hardened tails of the vectors, derived from the parent's xpub alone."""
        cases = [(VECTOR_1, "m/0'/1/2'", "m/2/1000000000", VECTOR_1[1][5][1]),
                 (VECTOR_1, "m/0'", "m/1", VECTOR_1[1][2][1]),
                 (VECTOR_2, "m", "m/0", VECTOR_2[1][1][1]),
                 (VECTOR_2, "m/0/2147483647'/1/2147483646'", "m/2", VECTOR_2[1][5][1])]
        for (seed, _), start, tail, expected in cases:
            parent = ExtKey.from_seed(bytes.fromhex(seed)).derive_path(start).neuter()
            self.assertEqual(parent.derive_path(tail).serialize(XPUB), expected)

    def test_invalid_extended_keys(self):
        for text, reason in INVALID_EXTENDED_KEYS:
            if reason != "invalid checksum":  # the test data itself is intact
                self.assertEqual(len(b58check_decode(text)), 78, reason)
            # Neither as a private nor as a public key (each with its own version).
            self.assertRaises(ExtKeyError, ExtKey.parse, text, XPRV)
            self.assertRaises(ExtKeyError, ExtPubKey.parse, text, XPUB)

    def test_network_versions(self):
        key = ExtKey.from_seed(bytes.fromhex(VECTOR_1[0]))
        tprv, tpub = key.serialize(TPRV), key.neuter().serialize(TPUB)
        self.assertTrue(tprv.startswith("tprv") and tpub.startswith("tpub"))
        self.assertEqual(ExtKey.parse(tprv, TPRV), key)
        self.assertEqual(ExtPubKey.parse(tpub, TPUB), key.neuter())
        self.assertEqual((MAIN.xprv_prefix, MAIN.xpub_prefix, TEST.xprv_prefix, TEST.xpub_prefix),
                         (XPRV, XPUB, TPRV, TPUB))
        self.assertRaises(ExtKeyError, ExtKey.parse, tprv, XPRV)
        self.assertRaises(ExtKeyError, ExtPubKey.parse, tpub, XPUB)
        self.assertRaises(ExtKeyError, ExtKey.parse, key.neuter().serialize(XPRV), XPRV)
        self.assertRaises(ValueError, key.serialize, b"\x04\x88")

    def test_malformed_text(self):
        xprv = VECTOR_1[1][0][2]
        for text in ("", "0" + xprv[1:], xprv[:-1], xprv + "1", "x" * 500):
            self.assertRaises(ExtKeyError, ExtKey.parse, text, XPRV)

    def test_key_properties(self):
        master = ExtKey.from_seed(bytes.fromhex(VECTOR_1[0]))
        self.assertIsInstance(master.privkey, coincurve.PrivateKey)
        self.assertEqual(master.privkey.secret, master.secret)
        self.assertEqual(master.pubkey, master.privkey.public_key.format(compressed=True))
        self.assertEqual(master.fingerprint, hash160(master.pubkey)[:4])
        self.assertEqual(master.fingerprint, bytes.fromhex("3442193e"))  # BIP32 vector 1 "m"
        self.assertEqual(master.neuter().fingerprint, master.fingerprint)
        self.assertEqual(master.neuter().pubkey, master.pubkey)
        child = master.derive(HARDENED)
        self.assertEqual((child.depth, child.parent_fingerprint, child.child_number),
                         (1, master.fingerprint, HARDENED))
        self.assertNotIn(master.secret.hex(), repr(master))

    def test_hardened_from_public_key_refused(self):
        xpub = ExtKey.from_seed(bytes.fromhex(VECTOR_1[0])).neuter()
        self.assertRaises(ValueError, xpub.derive, HARDENED)
        self.assertRaises(ValueError, xpub.derive_path, "m/0'")

    def test_index_and_depth_limits(self):
        key = ExtKey.from_seed(b"\x01" * 32)
        for index in (-1, 2 ** 32):
            self.assertRaises(ValueError, key.derive, index)
            self.assertRaises(ValueError, key.neuter().derive, index)
        self.assertEqual(key.derive(2 ** 32 - 1).child_number, 2 ** 32 - 1)
        deep = ExtKey(255, b"\x01" * 4, 7, key.chain_code, key.secret)
        self.assertRaises(ValueError, deep.derive, 0)
        self.assertRaises(ValueError, deep.neuter().derive, 0)

    def test_constructor_checks(self):
        good = dict(depth=1, parent_fingerprint=b"\x00" * 4, child_number=0, chain_code=b"\x00" * 32)
        for secret in (b"\x00" * 32, SECP256K1_N.to_bytes(32, "big"), b"\x01" * 31):
            self.assertRaises(ExtKeyError, ExtKey, secret=secret, **good)
        for key in (b"\x02" + b"\x00" * 32, b"\x04" + b"\x01" * 32, b"\x02" * 32):
            self.assertRaises(ExtKeyError, ExtPubKey, key=key, **good)
        self.assertRaises(ExtKeyError, ExtKey, 0, b"\x00" * 4, 1, b"\x00" * 32, b"\x01" * 32)
        self.assertRaises(ExtKeyError, ExtKey, 1, b"\x00" * 3, 1, b"\x00" * 32, b"\x01" * 32)
        self.assertRaises(ExtKeyError, ExtKey, 1, b"\x00" * 4, 1, b"\x00" * 31, b"\x01" * 32)


class FakeHMAC:
    """Stands in for the ``hmac`` module so derivation can hit the invalid cases."""

    def __init__(self, left: int) -> None:
        self.left = left

    def new(self, key, data, digestmod):
        right = real_hmac.new(key, data, digestmod).digest()[32:]
        return SimpleNamespace(digest=lambda: self.left.to_bytes(32, "big") + right)


class InvalidDerivationTests(SynchronousTestCase):
    """Core's Derive returns false on I_L >= n or a zero/infinite key; here that raises."""

    def setUp(self):
        self.key = ExtKey.from_seed(bytes.fromhex(VECTOR_1[0]))

    def test_left_half_not_below_n(self):
        self.patch(hd, "hmac", FakeHMAC(SECP256K1_N))
        self.assertRaises(DerivationError, ExtKey.from_seed, b"seed")
        self.assertRaises(DerivationError, self.key.derive, 0)
        self.assertRaises(DerivationError, self.key.derive, HARDENED)
        self.assertRaises(DerivationError, self.key.neuter().derive, 0)

    def test_zero_child_key(self):
        self.patch(hd, "hmac", FakeHMAC(SECP256K1_N - int.from_bytes(self.key.secret, "big")))
        self.assertRaises(DerivationError, self.key.derive, 0)
        self.assertRaises(DerivationError, self.key.derive, HARDENED + 5)
        self.assertRaises(DerivationError, self.key.neuter().derive, 0)  # point at infinity

    def test_zero_master_key(self):
        self.patch(hd, "hmac", FakeHMAC(0))
        self.assertRaises(DerivationError, ExtKey.from_seed, b"seed")
        self.assertTrue(issubclass(DerivationError, ValueError))


class KeyPathTests(SynchronousTestCase):
    def test_core_wallet_paths(self):
        self.assertEqual(external_path(5), "m/0'/0'/5'")
        self.assertEqual(internal_path(0), "m/0'/1'/0'")
        self.assertEqual(parse_path(external_path(7)), [HARDENED, HARDENED, HARDENED + 7])
        self.assertEqual(parse_path(internal_path(2)), [HARDENED, HARDENED + 1, HARDENED + 2])

    def test_parse_and_format(self):
        self.assertEqual(parse_path("m"), [])
        self.assertEqual(parse_path("m/0'/1/2h/3H/2147483647"),
                         [HARDENED, 1, HARDENED + 2, HARDENED + 3, 2147483647])
        self.assertEqual(format_path([HARDENED, 1, HARDENED + 2]), "m/0'/1/2'")
        self.assertEqual(format_path([]), "m")
        for bad in ("", "M/0", "m/", "0/1", "m//1", "m/2147483648", "m/1x", "m/-1", "m/1''",
                    "m/ 1", "m/\u0663"):
            self.assertRaises(ValueError, parse_path, bad)

    def test_path_derivation_is_stepwise(self):
        master = ExtKey.from_seed(b"\x07" * 32)
        stepwise = master.derive(HARDENED).derive(HARDENED + 1).derive(HARDENED + 5)
        self.assertEqual(master.derive_path(internal_path(5)), stepwise)
        self.assertEqual(master.derive_path([HARDENED, HARDENED + 1, HARDENED + 5]), stepwise)


class BIP32PropertyTests(SynchronousTestCase):
    @given(ext_keys(), st.sampled_from([XPRV, TPRV]))
    def test_private_round_trip(self, key, version):
        self.assertEqual(ExtKey.parse(key.serialize(version), version), key)

    @given(ext_keys(), st.sampled_from([XPUB, TPUB]))
    def test_public_round_trip(self, key, version):
        xpub = key.neuter()
        self.assertEqual(ExtPubKey.parse(xpub.serialize(version), version), xpub)

    @given(ext_keys(max_depth=254), st.integers(0, HARDENED - 1))
    def test_public_derivation_commutes_with_neuter(self, key, index):
        self.assertEqual(key.neuter().derive(index), key.derive(index).neuter())

    @given(ext_keys(max_depth=254), st.integers(HARDENED, 2 ** 32 - 1))
    def test_hardened_children_differ_from_public_view(self, key, index):
        child = key.derive(index)
        self.assertEqual(child.parent_fingerprint, key.fingerprint)
        self.assertRaises(ValueError, key.neuter().derive, index)


# ------------------------------------------------------------------ wallet encryption

FAST = 10  # iterations for tests that do not measure the key stretching


class DeriveKeyTests(SynchronousTestCase):
    def test_one_iteration_known_answer(self):
        digest = hashlib.sha512(b"passphrase" + b"saltsalt").digest()
        self.assertEqual(derive_key(b"passphrase", b"saltsalt", 1), (digest[:32], digest[32:48]))

    def test_more_iterations_rehash_the_digest(self):
        digest = hashlib.sha512("pässword".encode() + bytes(range(8))).digest()
        digest = hashlib.sha512(hashlib.sha512(digest).digest()).digest()
        key, iv = derive_key("pässword".encode(), bytes(range(8)), 3)
        self.assertEqual((len(key), len(iv)), (32, 16))
        self.assertEqual(key + iv, digest[:48])

    def test_parameter_checks(self):
        self.assertRaises(ValueError, derive_key, b"p", b"1234567", 1)
        self.assertRaises(ValueError, derive_key, b"p", b"123456789", 1)
        self.assertRaises(ValueError, derive_key, b"p", b"12345678", 0)

    def test_default_iterations_timing(self):
        self.assertEqual(DEFAULT_ITERATIONS, 25000)
        best = float("inf")
        for _ in range(3):
            start = time.process_time()  # CPU time: a busy machine must not fail this
            derive_key(b"correct horse battery staple", b"\x00" * 8, DEFAULT_ITERATIONS)
            best = min(best, time.process_time() - start)
        print("derive_key(%d iterations): %.1f ms" % (DEFAULT_ITERATIONS, best * 1000))
        self.assertLess(best, 0.5)


class AESTests(SynchronousTestCase):
    KEY = bytes.fromhex("603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4")
    IV = bytes.fromhex("000102030405060708090a0b0c0d0e0f")

    def test_known_answer(self):
        """NIST SP 800-38A F.2.5 (CBC-AES256), first block; then the PKCS#7 block."""
        plaintext = bytes.fromhex("6bc1bee22e409f96e93d7e117393172a")
        ciphertext = aes_encrypt(self.KEY, self.IV, plaintext)
        self.assertEqual(ciphertext[:16].hex(), "f58c4c04d6e5f1ba779eabfb5f7bfbd6")
        self.assertEqual(len(ciphertext), 32)
        self.assertEqual(aes_decrypt(self.KEY, self.IV, ciphertext), plaintext)

    def test_round_trip_and_padding(self):
        for n in range(0, 50):
            plaintext = bytes(range(n))
            ciphertext = aes_encrypt(self.KEY, self.IV, plaintext)
            self.assertEqual(len(ciphertext), (n // 16 + 1) * 16)
            self.assertEqual(ciphertext,
                             AES.new(self.KEY, AES.MODE_CBC, iv=self.IV).encrypt(pad(plaintext, 16)))
            self.assertEqual(aes_decrypt(self.KEY, self.IV, ciphertext), plaintext)

    def test_bad_padding(self):
        def raw(block: bytes) -> bytes:
            return AES.new(self.KEY, AES.MODE_CBC, iv=self.IV).encrypt(block)

        for block in (b"A" * 15 + b"\x00", b"A" * 15 + b"\x11", b"A" * 14 + b"\x03\x02",
                      b"A" * 13 + b"\x03\x02\x03"):
            self.assertRaises(DecryptionError, aes_decrypt, self.KEY, self.IV, raw(block))
        self.assertEqual(aes_decrypt(self.KEY, self.IV, raw(b"A" * 14 + b"\x02\x02")), b"A" * 14)
        for bad_length in (b"", b"\x00" * 15, b"\x00" * 17):
            self.assertRaises(DecryptionError, aes_decrypt, self.KEY, self.IV, bad_length)

    def test_key_and_iv_sizes(self):
        self.assertRaises(ValueError, aes_encrypt, self.KEY[:16], self.IV, b"x")
        self.assertRaises(ValueError, aes_encrypt, self.KEY, self.IV[:8], b"x")


class MasterKeyTests(SynchronousTestCase):
    def test_create_and_unlock(self):
        master_key, secret = MasterKey.create(b"correct horse")
        self.assertEqual(len(secret), 32)
        self.assertEqual((len(master_key.salt), len(master_key.crypted_key)), (8, 48))
        self.assertEqual((master_key.derivation_method, master_key.iterations), (0, 25000))
        self.assertEqual(master_key.unlock(b"correct horse"), secret)
        key, iv = derive_key(b"correct horse", master_key.salt, 25000)
        self.assertEqual(master_key.crypted_key, aes_encrypt(key, iv, secret))

    def test_fresh_randomness(self):
        (a, secret_a), (b, secret_b) = MasterKey.create(b"p", FAST), MasterKey.create(b"p", FAST)
        self.assertNotEqual(secret_a, secret_b)
        self.assertNotEqual(a.salt, b.salt)

    def test_wrong_passphrase(self):
        master_key, _ = MasterKey.create(b"right", FAST)
        for wrong in (b"wrong", b"", b"right ", b"Right"):
            self.assertRaises(WrongPassphrase, master_key.unlock, wrong)

    def test_tampered_record(self):
        master_key, _ = MasterKey.create(b"pass", FAST)
        crypted = bytearray(master_key.crypted_key)
        crypted[31] ^= 0x01  # flips the last padding byte: 0x10 -> 0x11
        self.assertRaises(WrongPassphrase, master_key._replace(crypted_key=bytes(crypted)).unlock, b"pass")
        self.assertRaises(WrongPassphrase, master_key._replace(iterations=FAST + 1).unlock, b"pass")
        self.assertRaises(WrongPassphrase, master_key._replace(crypted_key=b"").unlock, b"pass")
        # Valid padding but a 16-byte secret (Core requires 32) is still refused.
        key, iv = derive_key(b"pass", master_key.salt, FAST)
        short = master_key._replace(crypted_key=aes_encrypt(key, iv, b"\x01" * 16))
        self.assertRaises(WrongPassphrase, short.unlock, b"pass")
        self.assertRaises(ValueError, master_key._replace(derivation_method=1).unlock, b"pass")

    def test_change_passphrase(self):
        master_key, secret = MasterKey.create(b"old", FAST)
        changed = master_key.change(b"old", b"new")
        self.assertEqual(changed.unlock(b"new"), secret)
        self.assertRaises(WrongPassphrase, changed.unlock, b"old")
        self.assertNotEqual(changed.salt, master_key.salt)
        self.assertEqual(changed.iterations, FAST)
        self.assertEqual(master_key.change(b"old", b"new", iterations=FAST + 3).iterations, FAST + 3)
        self.assertRaises(WrongPassphrase, master_key.change, b"wrong", b"new")

    def test_serialization(self):
        master_key, secret = MasterKey.create(b"pass", FAST)
        data = master_key.serialize()
        # Core's layout: vchCryptedKey, vchSalt, nDerivationMethod, nDeriveIterations, (empty) vector.
        self.assertEqual(data, b"\x30" + master_key.crypted_key + b"\x08" + master_key.salt
                         + b"\x00\x00\x00\x00" + FAST.to_bytes(4, "little") + b"\x00")
        restored = MasterKey.deserialize(data)
        self.assertEqual(restored, master_key)
        self.assertEqual(restored.unlock(b"pass"), secret)
        for bad in (data[:-1], data + b"\x00", b"", data[:49] + b"\x07" + data[50:]):
            self.assertRaises(DeserializationError, MasterKey.deserialize, bad)


class SecretEncryptionTests(SynchronousTestCase):
    MASTER = bytes(range(32))

    def setUp(self):
        self.key = coincurve.PrivateKey(hashlib.sha256(b"wallet key").digest())
        self.compressed = self.key.public_key.format(compressed=True)
        self.uncompressed = self.key.public_key.format(compressed=False)

    def test_iv_rule(self):
        crypted = encrypt_secret(self.MASTER, self.key.secret, self.compressed)
        iv = sha256d(self.compressed)[:16]
        self.assertEqual(crypted, AES.new(self.MASTER, AES.MODE_CBC, iv=iv).encrypt(pad(self.key.secret, 16)))
        self.assertEqual(len(crypted), 48)
        self.assertNotEqual(crypted, encrypt_secret(self.MASTER, self.key.secret, self.uncompressed))

    def test_round_trip(self):
        for pubkey in (self.compressed, self.uncompressed):
            crypted = encrypt_secret(self.MASTER, self.key.secret, pubkey)
            self.assertEqual(decrypt_secret(self.MASTER, crypted, pubkey), self.key.secret)

    def test_mismatches_detected(self):
        crypted = encrypt_secret(self.MASTER, self.key.secret, self.compressed)
        other = coincurve.PrivateKey(hashlib.sha256(b"other").digest()).public_key.format()
        self.assertRaises(DecryptionError, decrypt_secret, self.MASTER, crypted, other)
        self.assertRaises(DecryptionError, decrypt_secret, self.MASTER, crypted, self.uncompressed)
        self.assertRaises(DecryptionError, decrypt_secret, b"\x01" * 32, crypted, self.compressed)
        tampered = bytearray(crypted)
        tampered[0] ^= 0x80  # garbles block 1 and flips a bit of block 2: wrong key, padding intact
        self.assertRaises(DecryptionError, decrypt_secret, self.MASTER, bytes(tampered), self.compressed)
        # A matching pubkey with the IV of another: the record is bound to its key.
        wrong_key = encrypt_secret(self.MASTER, hashlib.sha256(b"other").digest(), self.compressed)
        self.assertRaises(DecryptionError, decrypt_secret, self.MASTER, wrong_key, self.compressed)
        self.assertRaises(ValueError, encrypt_secret, self.MASTER, self.key.secret[:31], self.compressed)

    def test_wallet_flow(self):
        """Encrypt keys, change the passphrase, unlock, decrypt: the keys survive."""
        master_key, master_secret = MasterKey.create(b"one", FAST)
        records = {}
        for k in range(3):
            key = ExtKey.from_seed(b"\x05" * 32).derive_path(external_path(k))
            records[key.pubkey] = (key.secret, encrypt_secret(master_secret, key.secret, key.pubkey))
        unlocked = master_key.change(b"one", b"two").unlock(b"two")
        for pubkey, (secret, crypted) in records.items():
            self.assertEqual(decrypt_secret(unlocked, crypted, pubkey), secret)


# ------------------------------------------------------------------ signed messages

def _ctx(params=MAIN):
    return SimpleNamespace(node=SimpleNamespace(chain=SimpleNamespace(params=params)))


def _address(key: coincurve.PrivateKey, compressed: bool, params=MAIN) -> str:
    return encode_address(Destination("pubkeyhash", hash160(key.public_key.format(compressed))), params)


def _verify(address: str, signature: str, message: str) -> bool:
    return verifymessage.handler(_ctx(), address, signature, message)


class SignMessageTests(SynchronousTestCase):
    def setUp(self):
        self.key = coincurve.PrivateKey(hashlib.sha256(b"signer").digest())

    def test_verifymessage_accepts(self):
        for compressed in (True, False):
            address = _address(self.key, compressed)
            signature = sign_message(self.key, "hello", compressed)
            self.assertTrue(_verify(address, signature, "hello"))
            self.assertFalse(_verify(address, signature, "hello!"))
            self.assertFalse(_verify(address, signature, "Hello"))
            # The header's flag picks the key form: the other form's address does not match.
            self.assertFalse(_verify(_address(self.key, not compressed), signature, "hello"))

    def test_format(self):
        for compressed, low in ((True, 31), (False, 27)):
            raw = base64.b64decode(sign_message(self.key, "m", compressed), validate=True)
            self.assertEqual(len(raw), 65)
            self.assertIn(raw[0], range(low, low + 4))
        self.assertEqual(sign_message(self.key, "m"), sign_message(self.key, "m", compressed=True))

    def test_same_as_signmessagewithprivkey(self):
        """RFC 6979 nonces make signatures deterministic: both signers give the same text."""
        for compressed in (True, False):
            wif = encode_wif(self.key.secret, MAIN, compressed)
            for message in ("", "m", "d\u00e9j\u00e0 vu \u2603", "x" * 1000):
                self.assertEqual(sign_message(self.key, message, compressed),
                                 signmessagewithprivkey.handler(_ctx(), wif, message))

    @given(secrets, st.text(), st.booleans())
    def test_any_message_verifies(self, secret, message, compressed):
        key = coincurve.PrivateKey(secret)
        signature = sign_message(key, message, compressed)
        self.assertTrue(_verify(_address(key, compressed), signature, message))
        self.assertFalse(_verify(_address(key, compressed), signature, message + "."))
