"""A wallet's keys: HD chains, the key pool, imports, watch-only scripts, encryption.

Keys are derived as Core 0.17 does (hardened ``m/0'/0'/k'`` for receiving,
``m/0'/1'/k'`` for change) from a random 32-byte seed.  The key pool holds
``-keypool`` pre-derived keys of each chain so a backup covers future
addresses.  Once encrypted, secrets (and the seed) exist on disk only as
AES-256-CBC ciphertext under a master key that the passphrase unlocks
(coin.wallet.crypter); in memory the master secret is kept only while
unlocked.

Also serves as the signing key store (``get_key``/``get_script``) for
``coin.script.sign.sign_transaction``.
"""

from __future__ import annotations

import os
from typing import Callable, Dict, List, Optional, Set, Tuple

from coincurve import PrivateKey

from coin.primitives.hashes import hash160
from coin.script.standard import (
    TX_MULTISIG, TX_PUBKEY, TX_PUBKEYHASH, TX_SCRIPTHASH, p2pk_script, p2pkh_script, solve,
)
from coin.wallet.crypter import (
    DecryptionError, MasterKey, WrongPassphrase, decrypt_secret, encrypt_secret, secret_matches,
)
from coin.wallet.db import WalletDB
from coin.wallet.hd import HARDENED, ExtKey, external_path, internal_path

ISMINE_NO = 0
ISMINE_WATCH_ONLY = 1
ISMINE_SPENDABLE = 2
ISMINE_ALL = ISMINE_WATCH_ONLY | ISMINE_SPENDABLE

DEFAULT_KEYPOOL_SIZE = 1000
#: Entries of the "not mine" answer cache before it starts over.
MAX_NOT_MINE_CACHE = 100_000
_P2PKH_HEAD = bytes((0x76, 0xA9, 0x14))   # OP_DUP OP_HASH160 <20>
_P2PKH_TAIL = bytes((0x88, 0xAC))         # OP_EQUALVERIFY OP_CHECKSIG


class WalletLocked(Exception):
    """A private key is needed but the wallet is encrypted and locked."""

    rpc_code = -13
    message = "Error: Please enter the wallet passphrase with walletpassphrase first."


class KeypoolEmpty(Exception):
    """No key left in the pool and none can be derived (locked wallet)."""

    rpc_code = -12
    message = "Error: Keypool ran out, please call keypoolrefill first"


class CorruptKey(Exception):
    """A stored private key (or the HD seed) does not belong to its public key.

    Core's "CPrivKey corrupt" at load, and its "Some keys decrypt but not all" at the
    first unlock. The wallet names the key's address in its own error (WalletCorrupt).
    """

    rpc_code = -4

    def __init__(self, pubkey: bytes) -> None:
        self.pubkey = pubkey
        self.message = ("Error: Wallet corrupted: the private key of public key %s does not "
                        "match it" % pubkey.hex())
        super().__init__(self.message)


class KeyRecord:
    __slots__ = ("pubkey", "secret", "crypted", "hd_path", "created")

    def __init__(self, pubkey: bytes, secret: Optional[bytes], crypted: Optional[bytes],
                 hd_path: Optional[str], created: int) -> None:
        self.pubkey = pubkey
        self.secret = secret
        self.crypted = crypted
        self.hd_path = hd_path
        self.created = created


class KeyStore:
    """Keys, scripts and watch-only entries of one wallet, written through ``db``."""

    def __init__(self, db: WalletDB, now: Callable[[], float], pool_size: int) -> None:
        self.db = db
        self._now = now
        self.pool_size = pool_size
        self.keys: Dict[bytes, KeyRecord] = {}
        #: hash160(pubkey) -> pubkey, for P2PKH ownership and signing.
        self.by_hash: Dict[bytes, bytes] = {}
        self.scripts: Dict[bytes, bytes] = {}
        self.watch: Set[bytes] = set()
        #: idx -> (pubkey, internal, time); oldest first.
        self.pool: Dict[int, Tuple[bytes, bool, int]] = {}
        self.next_pool_index = 1
        self.master_key: Optional[MasterKey] = None
        self._master_secret: Optional[bytes] = None
        self.seed: Optional[bytes] = None            # clear seed (unencrypted wallet)
        self.crypted_seed: Optional[bytes] = None
        self.seed_pubkey: Optional[bytes] = None
        self.chain_counters = [0, 0]                 # next external, internal index
        #: IsMine answers: spendable ones stay true as keys are added; the others are
        #: dropped whenever a key, script or watch entry arrives (every send takes a key).
        self._mine_cache: Dict[bytes, int] = {}
        self._not_mine_cache: Dict[bytes, int] = {}
        #: Bumped when an import may make existing outputs the wallet's (not for pool keys,
        #: which no known transaction pays yet): the wallet's coin index is rebuilt then.
        self.generation = 0
        #: Seconds since the epoch when the wallet relocks (0: locked or unencrypted).
        self.unlocked_until = 0
        #: createwallet's disable_private_keys: watch-only, no seed, no pool, no imports of keys.
        self.private_keys_disabled = False
        #: Every encrypted secret has been decrypted and checked once (Core's
        #: fDecryptionThoroughlyChecked): later unlocks check one key.
        self._decryption_checked = False

    # ------------------------------------------------------------------ loading

    def load(self, rows: Dict[str, List[dict]]) -> None:
        """The wallet's rows; raises CorruptKey for a clear secret that is not its key's."""
        meta = {row["name"]: row["value"] for row in rows["meta"]}
        if "master_key" in meta:
            self.master_key = MasterKey.deserialize(meta["master_key"])
        self.seed = meta.get("hd_seed") or None
        self.crypted_seed = meta.get("hd_seed_crypted")
        self.seed_pubkey = meta.get("hd_seed_pubkey")
        self.chain_counters = [int(meta.get("hd_external", b"0")), int(meta.get("hd_internal", b"0"))]
        self.private_keys_disabled = meta.get("disable_private_keys") == b"1"
        # A damaged secret must never be used or exported as the key of its address.
        if self.seed is not None and not secret_matches(self.seed, self.seed_pubkey or b""):
            raise CorruptKey(self.seed_pubkey or b"")
        for row in rows["keys"]:
            if row["secret"] is not None and not secret_matches(row["secret"], row["pubkey"]):
                raise CorruptKey(row["pubkey"])
            self._remember_key(KeyRecord(row["pubkey"], row["secret"], row["crypted"],
                                         row["hd_path"], row["created"]))
        for row in rows["scripts"]:
            self.scripts[row["script_hash"]] = row["script"]
        self.watch.update(row["script_pubkey"] for row in rows["watch"])
        for row in sorted(rows["keypool"], key=lambda r: r["idx"]):
            self.pool[row["idx"]] = (row["pubkey"], bool(row["internal"]), row["time"])
        if self.pool:
            self.next_pool_index = max(self.pool) + 1
        self.next_pool_index = max(self.next_pool_index, int(meta.get("pool_next", b"1")))

    def _remember_key(self, record: KeyRecord) -> None:
        self.keys[record.pubkey] = record
        self.by_hash[hash160(record.pubkey)] = record.pubkey
        self._not_mine_cache.clear()

    # ------------------------------------------------------------------ state

    @property
    def encrypted(self) -> bool:
        return self.master_key is not None

    @property
    def locked(self) -> bool:
        return self.encrypted and self._master_secret is None

    @property
    def hd_master_key_id(self) -> Optional[bytes]:
        return hash160(self.seed_pubkey) if self.seed_pubkey else None

    # ------------------------------------------------------------------ HD

    def new_seed(self) -> None:
        """A fresh random seed; the key pool is emptied and refilled from it (Core)."""
        seed = os.urandom(32)
        self.seed_pubkey = PrivateKey(seed).public_key.format()
        self.chain_counters = [0, 0]
        with self.db.batch():
            if self.encrypted:
                self.seed, self.crypted_seed = None, encrypt_secret(
                    self._require_master(), seed, self.seed_pubkey)
                self.db.put_meta("hd_seed_crypted", self.crypted_seed)
            else:
                self.seed = seed
                self.db.put_meta("hd_seed", seed)
            self.db.put_meta("hd_seed_pubkey", self.seed_pubkey)
            self._save_counters()
            for idx in list(self.pool):
                self.db.delete_pool(idx)
            self.pool.clear()
            self.top_up()

    def disable_private_keys(self) -> None:
        """Make a new wallet watch-only for good (Core's WALLET_FLAG_DISABLE_PRIVATE_KEYS)."""
        self.private_keys_disabled = True
        self.db.put_meta("disable_private_keys", b"1")

    def _seed_secret(self) -> bytes:
        if self.seed is not None:
            return self.seed
        if self.crypted_seed is None or self.seed_pubkey is None:
            raise KeypoolEmpty()
        return self._decrypt(self.crypted_seed, self.seed_pubkey)

    def seed_secret(self) -> Optional[bytes]:
        """The HD seed, or None without one (dumpwallet); WalletLocked while locked."""
        if self.seed is None and self.crypted_seed is None:
            return None
        return self._seed_secret()

    def _save_counters(self) -> None:
        self.db.put_meta("hd_external", b"%d" % self.chain_counters[0])
        self.db.put_meta("hd_internal", b"%d" % self.chain_counters[1])

    def _derive_next(self, internal: bool, chain_key: ExtKey) -> KeyRecord:
        """The next key of a chain (``chain_key`` is m/0'/0' or m/0'/1'), not yet stored."""
        chain = 1 if internal else 0
        index = self.chain_counters[chain]
        path = internal_path(index) if internal else external_path(index)
        child = chain_key.derive(index | HARDENED)
        self.chain_counters[chain] = index + 1
        return self._new_record(child.secret, True, path)

    def top_up(self, size: Optional[int] = None) -> None:
        """Refill both chains of the key pool to ``size`` (default ``-keypool``).

        Silently does nothing while locked (Core: the pool refills on unlock).
        """
        target = self.pool_size if size is None else size
        if self.locked or self.private_keys_disabled:
            return
        counts = [sum(1 for _, internal, _ in self.pool.values() if internal == flag)
                  for flag in (False, True)]
        if counts[0] >= target and counts[1] >= target:
            return
        master = ExtKey.from_seed(self._seed_secret())
        now = int(self._now())
        records: List[KeyRecord] = []
        pool_rows = []
        for internal in (False, True):
            chain_key = master.derive_path("m/0'/1'" if internal else "m/0'/0'")
            for _ in range(target - counts[internal]):
                record = self._derive_next(internal, chain_key)
                records.append(record)
                idx = self.next_pool_index
                self.next_pool_index += 1
                self.pool[idx] = (record.pubkey, internal, now)
                pool_rows.append({"idx": idx, "pubkey": record.pubkey, "internal": internal,
                                  "time": now})
        with self.db.batch():
            self.db.put_keys([_key_row(r) for r in records])
            self.db.put_pools(pool_rows)
            self.db.put_meta("pool_next", b"%d" % self.next_pool_index)
            self._save_counters()
        for record in records:
            self._remember_key(record)

    def take_from_pool(self, internal: bool) -> bytes:
        """The oldest pool key of a chain, removed from the pool (then refilled)."""
        self.top_up()
        for idx, (pubkey, key_internal, _) in self.pool.items():
            if key_internal == internal:
                with self.db.batch():
                    del self.pool[idx]
                    self.db.delete_pool(idx)
                    self.top_up()
                return pubkey
        raise KeypoolEmpty()

    def pool_counts(self) -> Tuple[int, int, int]:
        """``(external keys, internal keys, time of the oldest)``."""
        external = sum(1 for _, internal, _ in self.pool.values() if not internal)
        oldest = min((t for _, _, t in self.pool.values()), default=int(self._now()))
        return external, len(self.pool) - external, oldest

    # ------------------------------------------------------------------ keys

    def _new_record(self, secret: bytes, compressed: bool, hd_path: Optional[str]) -> KeyRecord:
        """A key as it is stored: the secret in clear, or encrypted when the wallet is."""
        pubkey = PrivateKey(secret).public_key.format(compressed)
        if self.encrypted:
            return KeyRecord(pubkey, None, encrypt_secret(self._require_master(), secret, pubkey),
                             hd_path, int(self._now()))
        return KeyRecord(pubkey, secret, None, hd_path, int(self._now()))

    def _store_key(self, secret: bytes, compressed: bool, hd_path: Optional[str]) -> bytes:
        record = self._new_record(secret, compressed, hd_path)
        self.db.put_keys([_key_row(record)])
        self._remember_key(record)
        return record.pubkey

    def add_key(self, secret: bytes, compressed: bool, created: Optional[int] = None) -> bytes:
        """Import a private key (importprivkey/importwallet); returns its public key."""
        pubkey = PrivateKey(secret).public_key.format(compressed)
        if pubkey in self.keys and (self.keys[pubkey].secret or self.keys[pubkey].crypted):
            return pubkey
        with self.db.batch():
            self._store_key(secret, compressed, None)
            self.generation += 1
            if created is not None:
                record = self.keys[pubkey]
                record.created = created
                self.db.put_keys([_key_row(record)])
        return pubkey

    def add_script(self, redeem_script: bytes) -> bytes:
        script_hash = hash160(redeem_script)
        self.scripts[script_hash] = redeem_script
        self.db.put_script(script_hash, redeem_script)
        self._not_mine_cache.clear()
        self.generation += 1
        return script_hash

    def add_watch(self, script_pubkey: bytes) -> None:
        self.watch.add(script_pubkey)
        self.db.put_watch(script_pubkey, int(self._now()))
        self._not_mine_cache.clear()
        self.generation += 1

    def add_watch_pubkey(self, pubkey: bytes) -> None:
        """importpubkey: watch both the P2PKH and the P2PK script of the key."""
        with self.db.batch():
            self.add_watch(p2pkh_script(hash160(pubkey)))
            self.add_watch(p2pk_script(pubkey))

    def secret_of(self, pubkey: bytes) -> bytes:
        """The private key for ``pubkey``; WalletLocked when encrypted and locked."""
        record = self.keys[pubkey]
        if record.secret is not None:
            return record.secret
        if record.crypted is None:
            raise KeyError(pubkey)
        return self._decrypt(record.crypted, pubkey)

    def _decrypt(self, crypted: bytes, pubkey: bytes) -> bytes:
        try:
            return decrypt_secret(self._require_master(), crypted, pubkey)
        except DecryptionError:
            raise CorruptKey(pubkey) from None

    def have_secret(self, pubkey: bytes) -> bool:
        record = self.keys.get(pubkey)
        return record is not None and (record.secret is not None or record.crypted is not None)

    # signing key store protocol (coin.script.sign)
    def get_key(self, key_hash: bytes) -> Optional[Tuple[PrivateKey, bytes]]:
        pubkey = self.by_hash.get(key_hash)
        if pubkey is None or not self.have_secret(pubkey):
            return None
        return PrivateKey(self.secret_of(pubkey)), pubkey

    def get_script(self, script_hash: bytes) -> Optional[bytes]:
        return self.scripts.get(script_hash)

    # ------------------------------------------------------------------ ownership

    def is_mine(self, script_pubkey: bytes) -> int:
        """Core's IsMine for legacy scripts: SPENDABLE, WATCH_ONLY or NO."""
        cached = self._mine_cache.get(script_pubkey)
        if cached is None:
            cached = self._not_mine_cache.get(script_pubkey)
        if cached is None:
            cached = self._is_mine(script_pubkey, 0)
            if cached == ISMINE_SPENDABLE:
                self._mine_cache[script_pubkey] = cached
            else:
                # Every output script of every block passes here: keep this cache bounded.
                if len(self._not_mine_cache) >= MAX_NOT_MINE_CACHE:
                    self._not_mine_cache.clear()
                self._not_mine_cache[script_pubkey] = cached
        return cached

    def _is_mine(self, script_pubkey: bytes, depth: int) -> int:
        if (len(script_pubkey) == 25 and script_pubkey[:3] == _P2PKH_HEAD
                and script_pubkey[23:] == _P2PKH_TAIL):
            # The common case, without the general solver (block connect runs this per output).
            pubkey = self.by_hash.get(script_pubkey[3:23])
            if pubkey is not None and self.have_secret(pubkey):
                return ISMINE_SPENDABLE
            return ISMINE_WATCH_ONLY if script_pubkey in self.watch else ISMINE_NO
        kind, solutions = solve(script_pubkey)
        spendable = False
        if kind == TX_PUBKEY:
            spendable = self.have_secret(solutions[0])
        elif kind == TX_PUBKEYHASH:
            pubkey = self.by_hash.get(solutions[0])
            spendable = pubkey is not None and self.have_secret(pubkey)
        elif kind == TX_SCRIPTHASH and depth == 0:
            redeem = self.scripts.get(solutions[0])
            if redeem is not None and self._is_mine(redeem, 1) == ISMINE_SPENDABLE:
                spendable = True
        elif kind == TX_MULTISIG:
            spendable = all(self.have_secret(k) for k in solutions[1:-1])
        if spendable:
            return ISMINE_SPENDABLE
        return ISMINE_WATCH_ONLY if script_pubkey in self.watch else ISMINE_NO

    # ------------------------------------------------------------------ encryption

    def _require_master(self) -> bytes:
        if self._master_secret is None:
            raise WalletLocked()
        return self._master_secret

    def encrypt(self, passphrase: bytes) -> None:
        """Encrypt every secret and the seed; write no clear secret afterwards.

        A new seed replaces the old one and the pool is refilled from it, as
        Core does, so keys derived before encryption are never handed out.
        """
        master_key, master_secret = MasterKey.create(passphrase)
        with self.db.batch():
            self.master_key = master_key
            self._master_secret = master_secret
            for record in self.keys.values():
                if record.secret is not None:
                    record.crypted = encrypt_secret(master_secret, record.secret, record.pubkey)
                    record.secret = None
                    self.db.put_keys([_key_row(record)])
            self.seed = None
            self.db.put_meta("hd_seed", b"")
            self.db.put_meta("master_key", master_key.serialize())
            self.new_seed()
        self.lock()
        # Old pages of the file may still hold the clear secrets: rewrite it.
        self.db.scrub()

    def unlock(self, passphrase: bytes) -> None:
        """Raises WrongPassphrase, or CorruptKey when some secrets decrypt and one does not."""
        if self.master_key is None:
            raise ValueError("wallet is not encrypted")
        secret = self.master_key.unlock(passphrase)
        self._check_decryption(secret)
        self._master_secret = secret
        self.top_up()

    def _check_decryption(self, master_secret: bytes) -> None:
        """Core's CCryptoKeyStore::Unlock: the first unlock decrypts and checks every secret
        (and the seed), later ones a single secret. None decrypting means a wrong passphrase."""
        crypted = [(r.pubkey, r.crypted) for r in self.keys.values() if r.crypted is not None]
        if self.crypted_seed is not None and self.seed_pubkey is not None:
            crypted.append((self.seed_pubkey, self.crypted_seed))
        if self._decryption_checked:
            crypted = crypted[:1]
        bad = []
        for pubkey, data in crypted:
            try:
                decrypt_secret(master_secret, data, pubkey)
            except DecryptionError:
                bad.append(pubkey)
        if bad and len(bad) == len(crypted):
            raise WrongPassphrase()
        if bad:
            raise CorruptKey(bad[0])
        self._decryption_checked = True

    def lock(self) -> None:
        self._master_secret = None
        self.unlocked_until = 0

    def change_passphrase(self, old: bytes, new: bytes) -> None:
        if self.master_key is None:
            raise ValueError("wallet is not encrypted")
        self.master_key.unlock(old)  # WrongPassphrase
        self.master_key = self.master_key.change(old, new)
        self.db.put_meta("master_key", self.master_key.serialize())


def _key_row(record: KeyRecord) -> dict:
    return {"pubkey": record.pubkey, "secret": record.secret, "crypted": record.crypted,
            "hd_path": record.hd_path, "created": record.created}
