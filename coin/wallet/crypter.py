"""Wallet encryption as Core 0.17's CCrypter / CMasterKey, byte for byte.

A random 32-byte master secret encrypts every private key; the passphrase only
encrypts the master secret (one :class:`MasterKey` record), so changing the
passphrase rewrites one record, not every key. The passphrase is stretched with
Core's BytesToKeySHA512AES. Key ``k`` of public key ``P`` is stored as
AES-256-CBC(master secret, IV = sha256d(P)[:16], k) (Core's EncryptSecret).

Passphrases are bytes: the wallet passes the RPC string encoded as UTF-8, as Core
takes the JSON string's bytes. Python cannot wipe memory, so unlike Core's
SecureString the secrets here live until garbage-collected; keep them short-lived.
"""

from __future__ import annotations

import hashlib
import os
from typing import NamedTuple, Optional, Tuple

import coincurve
from Crypto.Cipher import AES

from coin.primitives.hashes import sha256d
from coin.primitives.serialize import ByteReader, DeserializationError, u32, var_bytes

WALLET_CRYPTO_KEY_SIZE = 32
WALLET_CRYPTO_SALT_SIZE = 8
WALLET_CRYPTO_IV_SIZE = 16
#: Core's CMasterKey default and the floor of its calibration (EncryptWallet).
DEFAULT_ITERATIONS = 25000
_BLOCK = 16


class CrypterError(ValueError):
    """Base class of the wallet encryption errors."""


class DecryptionError(CrypterError):
    """Ciphertext that does not decrypt (bad length or padding, or the wrong key)."""


class WrongPassphrase(CrypterError):
    """The passphrase does not unlock the master key."""


def derive_key(passphrase: bytes, salt: bytes, iterations: int) -> Tuple[bytes, bytes]:
    """Core's BytesToKeySHA512AES: SHA512(passphrase || salt), then iterations-1 more rounds.

    Returns ``(key32, iv16)``: the first 48 bytes of the final digest.
    """
    if len(salt) != WALLET_CRYPTO_SALT_SIZE:
        raise ValueError("salt must be %d bytes" % WALLET_CRYPTO_SALT_SIZE)
    if iterations < 1:
        raise ValueError("iterations must be at least 1")
    sha512 = hashlib.sha512
    digest = sha512(passphrase + salt).digest()
    for _ in range(iterations - 1):
        digest = sha512(digest).digest()
    return digest[:WALLET_CRYPTO_KEY_SIZE], digest[WALLET_CRYPTO_KEY_SIZE:48]


def _cipher(key: bytes, iv: bytes):
    if len(key) != WALLET_CRYPTO_KEY_SIZE:
        raise ValueError("AES-256 key must be 32 bytes")
    if len(iv) != WALLET_CRYPTO_IV_SIZE:
        raise ValueError("IV must be 16 bytes")
    return AES.new(key, AES.MODE_CBC, iv=iv)


def aes_encrypt(key: bytes, iv: bytes, plaintext: bytes) -> bytes:
    """AES-256-CBC with PKCS#7 padding (Core's AES256CBCEncrypt, pad=true)."""
    pad = _BLOCK - len(plaintext) % _BLOCK
    return _cipher(key, iv).encrypt(plaintext + bytes((pad,)) * pad)


def aes_decrypt(key: bytes, iv: bytes, ciphertext: bytes) -> bytes:
    """The inverse of :func:`aes_encrypt`; raises :class:`DecryptionError` on bad length or padding."""
    if not ciphertext or len(ciphertext) % _BLOCK:
        raise DecryptionError("ciphertext length is not a positive multiple of 16")
    padded = _cipher(key, iv).decrypt(ciphertext)
    pad = padded[-1]
    if not 1 <= pad <= _BLOCK or padded[-pad:] != bytes((pad,)) * pad:
        raise DecryptionError("bad padding")
    return padded[:-pad]


class MasterKey(NamedTuple):
    """The passphrase-encrypted master secret (Core's CMasterKey, the wallet's ``mkey`` record)."""

    crypted_key: bytes
    salt: bytes
    #: 0 = BytesToKeySHA512AES, the only method Core defines.
    derivation_method: int = 0
    iterations: int = DEFAULT_ITERATIONS
    #: Core serializes this (always empty) for future methods; kept so records round-trip.
    other_derivation_parameters: bytes = b""

    @classmethod
    def create(cls, passphrase: bytes,
               iterations: int = DEFAULT_ITERATIONS) -> Tuple["MasterKey", bytes]:
        """A new random master secret and its record encrypted under ``passphrase``.

        Core calibrates ``iterations`` to ~0.1 s of work (at least 25000); that belongs
        to the caller, which can time :func:`derive_key`.
        """
        master_secret = os.urandom(WALLET_CRYPTO_KEY_SIZE)
        return cls._encrypt(master_secret, passphrase, iterations), master_secret

    @classmethod
    def _encrypt(cls, master_secret: bytes, passphrase: bytes, iterations: int) -> "MasterKey":
        salt = os.urandom(WALLET_CRYPTO_SALT_SIZE)
        key, iv = derive_key(passphrase, salt, iterations)
        return cls(aes_encrypt(key, iv, master_secret), salt, 0, iterations)

    def unlock(self, passphrase: bytes) -> bytes:
        """The master secret; raises :class:`WrongPassphrase`."""
        if self.derivation_method != 0:
            raise CrypterError("unsupported key derivation method %d" % self.derivation_method)
        key, iv = derive_key(passphrase, self.salt, self.iterations)
        try:
            master_secret = aes_decrypt(key, iv, self.crypted_key)
        except DecryptionError:
            raise WrongPassphrase("the wallet passphrase entered was incorrect") from None
        # A wrong passphrase passes the padding check with probability ~2**-8; it also
        # has to come out 32 bytes long (Core's CCrypter::SetKey check), ~2**-128.
        if len(master_secret) != WALLET_CRYPTO_KEY_SIZE:
            raise WrongPassphrase("the wallet passphrase entered was incorrect")
        return master_secret

    def change(self, old: bytes, new: bytes, iterations: Optional[int] = None) -> "MasterKey":
        """The same master secret under ``new`` (fresh salt); raises :class:`WrongPassphrase`."""
        master_secret = self.unlock(old)
        return self._encrypt(master_secret, new, self.iterations if iterations is None else iterations)

    def serialize(self) -> bytes:
        """Core's CMasterKey serialization (vchCryptedKey, vchSalt, method, iterations, other)."""
        return (var_bytes(self.crypted_key) + var_bytes(self.salt) + u32(self.derivation_method)
                + u32(self.iterations) + var_bytes(self.other_derivation_parameters))

    @classmethod
    def deserialize(cls, data: bytes) -> "MasterKey":
        """The inverse of :meth:`serialize`; raises DeserializationError."""
        reader = ByteReader(data)
        fields = (reader.read_var_bytes(), reader.read_var_bytes(), reader.read_u32(),
                  reader.read_u32(), reader.read_var_bytes())
        reader.assert_end()
        if len(fields[1]) != WALLET_CRYPTO_SALT_SIZE:
            raise DeserializationError("master key salt must be 8 bytes")
        return cls(*fields)


def _secret_iv(pubkey: bytes) -> bytes:
    return sha256d(pubkey)[:WALLET_CRYPTO_IV_SIZE]


def encrypt_secret(master_secret: bytes, secret: bytes, pubkey: bytes) -> bytes:
    """A private key encrypted for storage (Core's EncryptSecret; IV = sha256d(pubkey)[:16])."""
    if len(secret) != 32:
        raise ValueError("private key must be 32 bytes")
    return aes_encrypt(master_secret, _secret_iv(pubkey), secret)


def decrypt_secret(master_secret: bytes, crypted: bytes, pubkey: bytes) -> bytes:
    """The 32-byte private key of ``pubkey`` (Core's DecryptKey).

    Checks that the key really belongs to ``pubkey`` (compressed or uncompressed as
    given), so a wrong master secret or a corrupted record is detected, not used.
    """
    plaintext = aes_decrypt(master_secret, _secret_iv(pubkey), crypted)
    if not secret_matches(plaintext, pubkey):
        raise DecryptionError("decrypted key does not match its public key")
    return plaintext


def secret_matches(secret: bytes, pubkey: bytes) -> bool:
    """Whether ``secret`` is the private key of ``pubkey`` (compressed or not, as given):
    Core's CKey::VerifyPubKey, so a damaged secret is never used or exported."""
    if len(secret) != 32:
        return False
    try:
        return coincurve.PublicKey.from_secret(secret).format(len(pubkey) == 33) == pubkey
    except ValueError:  # zero, or not below the group order
        return False
