"""Wallet names, paths and files (security issue #11: F1, F5, F6, F11): names resolve
inside the wallet directory or are refused with Core's codes, existing wallets and
files that are not wallets are never written, backups never land on a wallet, and a
hypothesis fuzz of hostile names checks nothing is created or opened outside (relative
names) or anywhere but the directory given (absolute names, as Core 0.17 accepts them)."""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import stat
from typing import Dict, List

from hypothesis import given
from hypothesis import strategies as st
from twisted.internet.defer import inlineCallbacks
from twisted.trial.unittest import TestCase

from coin.chainparams import REGTEST
from coin.wallet.db import WalletDB
from coin.wallet.service import (
    BackupError, WalletLoadError, WalletService, backup_destination, resolve_wallet_path,
)
from tests.unit.wallet.test_wallet import NOW, WalletTestCase

INVALID_PATH = "Wallet file verification failed: Invalid -wallet path '%s'."


def digest(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def tree(top: str, skip: str) -> Dict[str, str]:
    """Every path under ``top`` except ``skip``'s subtree, with a content hash for files."""
    found = {}
    for root, dirs, files in os.walk(top):
        dirs[:] = [d for d in dirs if os.path.join(root, d) != skip]
        for name in dirs + files:
            path = os.path.join(root, name)
            found[path] = digest(path) if os.path.isfile(path) and not os.path.islink(path) \
                else ""
    return found


def open_files_under(top: str) -> List[str]:
    """Files this process has open below ``top`` (from /proc/self/fd)."""
    names = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(os.path.join("/proc/self/fd", fd))
        except OSError:
            continue
        if target.startswith(top + os.sep):
            names.append(target)
    return names


class PathsTestCase(WalletTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.sandbox = os.path.dirname(os.path.abspath(self.walletdir))
        self.outside = os.path.join(self.sandbox, "outside")
        os.makedirs(self.outside)

    def refused(self, code: int, name: str, **options) -> WalletLoadError:
        options.setdefault("create", True)
        with self.assertRaises(WalletLoadError) as caught:
            self.service.open_wallet(self.chainstate, name, **options)
        self.assertEqual(caught.exception.rpc_code, code, caught.exception.message)
        return caught.exception

    def create(self, name: str):
        return self.service.open_wallet(self.chainstate, name, create=True, must_create=True)


class ResolveTests(PathsTestCase):
    def test_names_are_taken_literally_inside_the_wallet_directory(self):
        walletdir = os.path.realpath(self.walletdir)
        for name, parts in [("", []), ("w", ["w"]), ("a/b", ["a", "b"]),
                            ("%2e%2e/%2e%2e/%2e%2e", ["%2e%2e"] * 3),
                            ("x/%2e%2e/victim", ["x", "%2e%2e", "victim"]),
                            ("a?b#c", ["a?b#c"]), ("sp ace\n", ["sp ace\n"])]:
            self.assertEqual(self.service.path_of(name),
                             os.path.join(walletdir, *parts, "wallet.dat"))
        # Core's backwards-compatible form: an existing data file directly in walletdir.
        self.assertEqual(self.service.path_of("wallet.dat"),
                         os.path.join(walletdir, "wallet.dat"))

    def test_names_that_leave_or_break_the_directory_are_refused(self):
        for name in ("../escape", "/", "//x", "/a/../b", "/a/./b", "/a/", "a//b", "a/./b", "a/",
                     ".", "..", "x/../..",
                     "a\0b", "wallet.dat/x", "new/wallet.dat/x", "wallet.dat-wal",
                     "wallet.dat-shm", "wallet.dat-journal", "new/wallet.dat-wal/x"):
            error = self.refused(-4, name)
            self.assertTrue(error.message.startswith(INVALID_PATH % name), error.message)
        for name in ("\ud800", "a\udcff", "\udc80/x"):
            error = self.refused(-8, name)
            self.assertEqual(error.message, "Invalid wallet name: not a valid UTF-8 string")
        for name in ("x" * 256, "a/" * 2000 + "a", "é" * 128):
            error = self.refused(-4, name)
            self.assertEqual(error.message, "Wallet file verification failed: Error loading "
                             "wallet %s. File name too long" % name)
        # Nothing was created for any of them.
        self.assertLessEqual(set(os.listdir(self.walletdir)),
                             {"wallet.dat", "wallet.dat-wal", "wallet.dat-shm"})

    def test_absolute_paths_land_exactly_where_given(self):
        """Core 0.17 accepts any absolute directory; it is taken as written."""
        outside = os.path.realpath(self.outside)
        for name in (os.path.join(self.outside, "w"), os.path.join(self.outside, "%2e%2e"),
                     os.path.join(self.outside, "a?b", "c d")):
            wallet = self.create(name)
            self.assertEqual(wallet.db.path, os.path.join(outside, os.path.relpath(
                name, self.outside), "wallet.dat"))
            self.assertTrue(os.path.isfile(wallet.db.path))
        self.assertEqual(sorted(os.listdir(self.outside)), ["%2e%2e", "a?b", "w"])
        # An existing wallet there is never created over.
        name = os.path.join(self.outside, "w")
        self.service.unload(name)
        before = digest(os.path.join(name, "wallet.dat"))
        self.assertEqual(self.refused(-4, name, must_create=True).message,
                         "Wallet %s already exists." % name)
        self.assertEqual(digest(os.path.join(name, "wallet.dat")), before)
        # A file is a wallet only by a bare name in walletdir, never by an absolute path.
        with open(os.path.join(self.outside, "file.dat"), "wb") as f:
            f.write(b"x")
        self.refused(-4, os.path.join(self.outside, "file.dat"))
        # Relative names still never leave the wallet directory.
        self.refused(-4, os.path.join("..", "outside", "v"))
        self.assertFalse(os.path.exists(os.path.join(self.outside, "v")))

    def test_symlinks_are_followed_only_inside(self):
        walletdir = os.path.realpath(self.walletdir)
        os.symlink(self.outside, os.path.join(self.walletdir, "out"))
        os.makedirs(os.path.join(self.walletdir, "real"))
        os.symlink("real", os.path.join(self.walletdir, "in"))
        os.symlink("loop", os.path.join(self.walletdir, "loop"))
        os.makedirs(os.path.join(self.walletdir, "w2"))
        os.symlink(os.path.join(self.outside, "wallet.dat"),
                   os.path.join(self.walletdir, "w2", "wallet.dat"))
        for name in ("out", "out/w", "loop", "w2"):
            self.refused(-4, name)
        self.assertEqual(resolve_wallet_path(self.walletdir, "in"),
                         os.path.join(walletdir, "real", "wallet.dat"))
        self.assertEqual(os.listdir(self.outside), [])


class OpenTests(PathsTestCase):
    def test_an_existing_wallet_is_never_created_over(self):
        victim = self.create("victim")
        seed = victim.keys.hd_master_key_id
        self.service.unload("victim")
        path = os.path.join(self.walletdir, "victim", "wallet.dat")
        before = digest(path)
        error = self.refused(-4, "victim", must_create=True)
        self.assertEqual(error.message, "Wallet victim already exists.")
        # The attack string is a literal name here: a new wallet, victim untouched.
        other = self.create("x/%2e%2e/victim")
        self.assertNotEqual(other.keys.hd_master_key_id, seed)
        self.assertEqual(digest(path), before)
        again = self.service.open_wallet(self.chainstate, "victim", create=True)
        self.assertEqual(again.keys.hd_master_key_id, seed)
        # Core: anything at all at the name's path means "already exists".
        os.makedirs(os.path.join(self.walletdir, "emptydir"))
        self.assertEqual(self.refused(-4, "emptydir", must_create=True).message,
                         "Wallet emptydir already exists.")
        self.assertEqual(self.refused(-4, "wallet.dat", must_create=True).message,
                         "Wallet wallet.dat already exists.")

    def test_a_loaded_wallet_is_refused_under_another_name(self):
        self.create("victim")
        absolute = os.path.join(os.path.abspath(self.walletdir), "victim")
        self.assertIn("Duplicate -wallet filename", self.refused(-4, absolute).message)
        # An absolute path: loaded once, whatever the spelling (a symlink to its folder).
        name = os.path.join(self.outside, "w")
        self.create(name)
        os.symlink("w", os.path.join(self.outside, "link"))
        self.assertIn("Duplicate -wallet filename",
                      self.refused(-4, os.path.join(self.outside, "link")).message)
        os.symlink("victim", os.path.join(self.walletdir, "alias"))
        duplicate = ("Wallet file verification failed: Error loading wallet %s. Duplicate "
                     "-wallet filename specified.")
        self.assertEqual(self.refused(-4, "alias").message, duplicate % "alias")
        # The default wallet's file, named as a data file in walletdir.
        self.assertEqual(self.refused(-4, "wallet.dat").message, duplicate % "wallet.dat")
        # A hard link to a loaded wallet's file.
        os.link(os.path.join(self.walletdir, "victim", "wallet.dat"),
                os.path.join(self.walletdir, "hard.dat"))
        self.assertEqual(self.refused(-4, "hard.dat").message, duplicate % "hard.dat")

    def test_a_wallet_loaded_by_another_node_is_refused(self):
        path = os.path.join(self.walletdir, "victim", "wallet.dat")
        self.create("victim")
        self.service.unload("victim")
        holder = WalletDB(os.path.realpath(path))  # as another node sharing -walletdir
        holder.open(create=False)
        self.addCleanup(holder.close)
        other = WalletService(self.validation, self.mempool, REGTEST, self.walletdir,
                              now=lambda: NOW, keypool_size=5)
        before = digest(path)
        for service in (self.service, other):
            with self.assertRaises(WalletLoadError) as caught:
                service.open_wallet(self.chainstate, "victim", create=True)
            self.assertIn("is in use by another wallet or process", caught.exception.message)
        self.assertEqual(digest(path), before)

    def test_files_that_are_not_wallets_are_refused_unwritten(self):
        def place(name: str) -> str:
            path = os.path.join(self.walletdir, name, "wallet.dat")
            os.makedirs(os.path.dirname(path))
            return path

        with open(place("zero"), "wb"):
            pass
        with open(place("junk"), "wb") as f:
            f.write(b"not a database" * 100)
        other = sqlite3.connect(place("rollback"))  # someone else's SQLite file, not WAL
        other.execute("CREATE TABLE t (x)")
        other.commit()
        other.close()
        os.mkfifo(place("fifo"))
        os.makedirs(place("dir"))
        files = {name: os.path.join(self.walletdir, name, "wallet.dat")
                 for name in ("zero", "junk", "rollback", "fifo", "dir")}
        before = {name: digest(path) for name, path in files.items()
                  if os.path.isfile(path)}
        for name in files:
            for create in (True, False):
                error = self.refused(-4, name, create=create)
                self.assertTrue(error.message.startswith("Wallet loading failed: "))
        self.assertEqual({name: digest(path) for name, path in files.items()
                          if os.path.isfile(path)}, before)
        for name in files:
            self.assertEqual(os.listdir(os.path.join(self.walletdir, name)), ["wallet.dat"])
        self.assertEqual(self.service.wallets.keys(), {""})

    def test_new_wallet_files_are_private(self):
        wallet = self.create("deep/er/w")
        wallet.new_address("x")
        walletdir = os.path.realpath(self.walletdir)
        for folder in ("deep", "deep/er", "deep/er/w"):
            self.assertEqual(stat.S_IMODE(os.stat(os.path.join(walletdir, folder)).st_mode),
                             0o700)
        files = os.listdir(os.path.join(walletdir, "deep/er/w"))
        self.assertEqual(sorted(files), ["wallet.dat", "wallet.dat-shm", "wallet.dat-wal"])
        for name in files:
            path = os.path.join(walletdir, "deep/er/w", name)
            self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), 0o600, name)


class BackupTests(PathsTestCase):
    def protected(self) -> List[str]:
        return [os.path.realpath(w.db.path) + s for w in self.service.wallets.values()
                for s in ("", "-wal", "-shm", "-journal")]

    def test_destinations_that_are_wallet_files_are_refused(self):
        self.create("b")
        b_file = os.path.join(self.walletdir, "b", "wallet.dat")
        os.symlink(os.path.abspath(b_file), os.path.join(self.outside, "innocent.dat"))
        os.makedirs(os.path.join(self.outside, "elsewhere"))
        foreign = os.path.join(self.outside, "elsewhere", "wallet.dat")
        with open(foreign, "wb") as f:
            f.write(b"another node's wallet")
        for destination in (b_file, b_file + "-wal", os.path.join(self.walletdir, "b"),
                            os.path.join(self.outside, "innocent.dat"), foreign,
                            os.path.join(self.outside, "elsewhere"), "x\0y", "\ud800"):
            with self.assertRaises(ValueError, msg=destination):
                backup_destination(destination, "wallet.dat", self.protected())
        fresh = os.path.join(self.outside, "new", "wallet.dat")
        self.assertEqual(backup_destination(fresh, "wallet.dat", self.protected()), fresh)

    def test_backup_replaces_an_old_copy_whole_and_private(self):
        destination = os.path.join(self.outside, "backup.dat")
        with open(destination, "wb") as f:
            f.write(b"yesterday's backup")
        os.chmod(destination, 0o644)
        address = self.wallet.new_address("kept")
        self.wallet.db.backup(destination, lambda: False)
        self.assertEqual(stat.S_IMODE(os.stat(destination).st_mode), 0o600)
        self.assertEqual(os.listdir(self.outside), ["backup.dat"])
        copy = WalletDB(destination)
        self.assertFalse(copy.open(create=False))
        self.addCleanup(copy.close)
        self.assertEqual([r["address"] for r in copy.load()["names"]], [address])

    def test_a_stopping_node_abandons_the_copy(self):
        destination = os.path.join(self.outside, "backup.dat")
        with open(destination, "wb") as f:
            f.write(b"yesterday's backup")
        self.assertRaises(OSError, self.wallet.db.backup, destination, lambda: True)
        self.assertEqual(os.listdir(self.outside), ["backup.dat"])
        with open(destination, "rb") as f:
            self.assertEqual(f.read(), b"yesterday's backup")

    def test_a_long_copy_stops_between_steps(self):
        # Shutdown waits for at most one step of BACKUP_STEP_PAGES pages, however big the wallet.
        self.wallet.db.put_meta("padding", os.urandom(8 << 20))
        asked = []

        def stopping() -> bool:
            asked.append(True)
            return len(asked) > 1

        destination = os.path.join(self.outside, "backup.dat")
        self.assertRaises(OSError, self.wallet.db.backup, destination, stopping)
        self.assertEqual(len(asked), 2)
        self.assertEqual(os.listdir(self.outside), [])
        self.wallet.db.backup(destination, lambda: False)  # the same copy, not stopped
        self.assertGreater(os.path.getsize(destination), 8 << 20)


class ServiceBackupTests(PathsTestCase, TestCase):
    """``WalletService.backup`` on its own thread pool, as backupwallet calls it."""

    @inlineCallbacks
    def test_refused_and_accepted_destinations(self):
        self.service.startService()
        other = self.create("b")
        b_file = os.path.join(self.walletdir, "b", "wallet.dat")
        before = digest(b_file)
        for destination in (b_file, b_file + "-shm", os.path.join(self.walletdir, "b")):
            with self.assertRaises(BackupError):
                yield self.service.backup(self.wallet, destination)
        self.assertEqual(digest(b_file), before)
        other.new_address("still works")
        destination = os.path.join(self.outside, "copy.dat")
        yield self.service.backup(self.wallet, destination)
        self.assertEqual(stat.S_IMODE(os.stat(destination).st_mode), 0o600)


# Fragments of hostile names: encodings of "..", separators, NUL, surrogates, URL syntax,
# long parts, names of the symlinks the fuzz plants, and wallet file names.
_FRAGMENTS = st.sampled_from([
    "%2e", "%2E", "%2f", "%", "%41", ".", "..", "/", "//", "\0", "\ud800", "\udcff", "?", "#",
    "a", "b", "victim", "wallet.dat", "wallet.dat-wal", "out", "in", "loop", "é", " ", "\\",
    "x" * 120, "/tmp", "~", "file:", ":memory:",
])
_NAMES = st.lists(_FRAGMENTS, max_size=8).map("".join)


class FuzzTests(PathsTestCase):
    def setUp(self) -> None:
        super().setUp()
        victim = self.create("victim")
        self.victim_seed = victim.keys.hd_master_key_id
        self.service.unload("victim")
        os.symlink(self.outside, os.path.join(self.walletdir, "out"))
        os.makedirs(os.path.join(self.walletdir, "real"))
        os.symlink("real", os.path.join(self.walletdir, "in"))
        os.symlink("loop", os.path.join(self.walletdir, "loop"))
        self.walletdir_real = os.path.realpath(self.walletdir)
        self.before = tree(self.sandbox, self.walletdir_real)
        self.victim_file = os.path.join(self.walletdir_real, "victim", "wallet.dat")
        self.victim_digest = digest(self.victim_file)
        self.open_before = set(open_files_under(self.sandbox))  # the chain state's files

    @given(st.booleans(), _NAMES,
           st.sampled_from([(True, False), (True, True), (False, False)]))
    def test_nothing_is_created_or_opened_but_where_the_name_says(self, absolute, name, mode):
        """A relative name stays inside the wallet directory; an absolute one (rooted in
        the sandbox here) lands exactly at the directory it spells, never decoded; no
        wallet is written over or opened twice."""
        # Only absolute names rooted in the sandbox: any other would be honoured as well.
        name = self.outside + "/" + name if absolute else name.lstrip("/")
        create, must_create = mode
        target = None
        try:
            wallet = self.service.open_wallet(self.chainstate, name, create=create,
                                              must_create=must_create)
        except WalletLoadError as e:
            self.assertIn(e.rpc_code, (-4, -8, -18), e.message)
        else:
            try:
                if absolute:
                    target = os.path.dirname(wallet.db.path)
                    self.assertEqual(wallet.db.path, os.path.join(os.path.realpath(name),
                                                                  "wallet.dat"))
                    self.assertNotIn("..", name.split("/"))
                else:
                    self.assertTrue(wallet.db.path.startswith(self.walletdir_real + os.sep))
                for path in set(open_files_under(self.sandbox)) - self.open_before:
                    self.assertTrue(path.startswith((target or self.walletdir_real) + os.sep),
                                    path)
            finally:
                self.service.unload(name)
        after = tree(self.sandbox, self.walletdir_real)
        if target is not None:
            # Only the wallet's folder (and the folders leading to it) are new; remove them
            # so the next example starts from the same tree.
            new = sorted(set(after) - set(self.before))
            for path in new:
                self.assertTrue(path == target or path.startswith(target + os.sep)
                                or target.startswith(path + os.sep), path)
            if new:
                shutil.rmtree(new[0])
            after = tree(self.sandbox, self.walletdir_real)
        self.assertEqual(after, self.before)
        self.assertEqual(digest(self.victim_file), self.victim_digest)
