"""A real PostgreSQL server for tests: one per test process, a fresh database per test.

    url = pgserver.fresh_database()          # postgresql://coin@127.0.0.1:<port>/t<n>
    ChainStore(datadir, REGTEST, dbengine=url)

The server (Debian's ``postgresql`` package: ``initdb`` and ``pg_ctl`` from
``/usr/lib/postgresql/<version>/bin``) is started lazily in a temporary
directory on a port claimed with the node harness's port locks, listens on
loopback and a unix socket in that directory only, and is stopped (and its
directory removed) when the process exits.  PostgreSQL refuses to run as root,
so under root it runs as the package's ``postgres`` user.  It runs with
``fsync=off``: the tests kill the node, never the server or the machine.

Tests call :func:`skip_reason` and skip with it when PostgreSQL is missing.

A test class that uses a chain store gets a PostgreSQL twin by mixing
:class:`OnPostgreSQL` in first, and opens its stores with
``dbengine=dbengine_for(self, datadir)``::

    class IndexAndStateTestsOnPostgreSQL(OnPostgreSQL, IndexAndStateTests):
        pass
"""

from __future__ import annotations

import atexit
import glob
import itertools
import os
import pwd
import shutil
import subprocess
import tempfile
from typing import Any, Dict, List, Optional

from coin.storage.database import SQLITE
from tests.nodeharness import free_port

SERVER_USER = "postgres"
SUPERUSER = "coin"
_names = itertools.count()
_server: Optional["PostgresServer"] = None
#: File in a data directory naming its database (and the directory it was made for).
MARKER = ".coin-test-database"
#: Database URL of each data directory given one, by absolute path.
_by_datadir: Dict[str, str] = {}


def pg_bin_dir() -> Optional[str]:
    """The newest installed server's bin directory, or None."""
    found = [os.path.dirname(p) for p in glob.glob("/usr/lib/postgresql/*/bin/initdb")]
    return max(found, key=lambda d: int(d.split("/")[-2]), default=None)


def skip_reason() -> Optional[str]:
    """Why PostgreSQL tests cannot run here, or None when they can."""
    if pg_bin_dir() is None:
        return "PostgreSQL is not installed (Debian package 'postgresql')"
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg 3 is not installed (pip package 'psycopg[binary]')"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(SERVER_USER)
        except KeyError:
            return "running as root and there is no %r user to run PostgreSQL as" % SERVER_USER
    return None


class PostgresServer:
    """``initdb`` + ``pg_ctl start`` in a temporary directory; trust authentication."""

    def __init__(self, durable: bool = False) -> None:
        """``durable``: the server's default fsync and synchronous commit (benchmarks)."""
        self.durable = durable
        bindir = pg_bin_dir()
        if bindir is None:
            raise RuntimeError(skip_reason())
        self.bindir = bindir
        self.root = tempfile.mkdtemp(prefix="coin-pg-")
        self.datadir = os.path.join(self.root, "data")
        self.port = free_port()
        self.host = "127.0.0.1"

    def _run(self, tool: str, *args: str) -> None:
        command: List[str] = [os.path.join(self.bindir, tool), *args]
        if os.geteuid() == 0:
            command = ["runuser", "-u", SERVER_USER, "--"] + command
        result = subprocess.run(command, capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            raise RuntimeError("%s failed (%d): %s%s" % (tool, result.returncode,
                                                          result.stdout, result.stderr))

    def start(self) -> None:
        self._own_root()
        self._run("initdb", "-D", self.datadir, "-U", SUPERUSER, "--auth=trust", "-E", "UTF8",
                  "--no-sync")
        self.resume()

    def start_replica_of(self, primary: "PostgresServer") -> None:
        """Start as a streaming replica of ``primary`` (``pg_basebackup -R``: initdb's
        trust lines let loopback replication connections in)."""
        self._own_root()
        self._run("pg_basebackup", "-h", primary.host, "-p", str(primary.port), "-U", SUPERUSER,
                  "-D", self.datadir, "-R", "-X", "stream", "--no-sync", "-c", "fast")
        self.resume()

    def _own_root(self) -> None:
        if os.geteuid() == 0:
            user = pwd.getpwnam(SERVER_USER)
            os.chown(self.root, user.pw_uid, user.pw_gid)

    @property
    def _options(self) -> str:
        options = ("-p %d -k %s -c listen_addresses=%s -c max_connections=200"
                   % (self.port, self.root, self.host))
        if not self.durable:
            options += " -c fsync=off -c full_page_writes=off -c synchronous_commit=off"
        return options

    def pause(self) -> None:
        """Stop the server (fast shutdown: clients' sessions end), keeping its data."""
        self._run("pg_ctl", "-D", self.datadir, "-m", "fast", "-w", "stop")

    def resume(self) -> None:
        """Start a paused server again, on the same port, with the same options."""
        self._run("pg_ctl", "-D", self.datadir, "-o", self._options,
                  "-l", os.path.join(self.root, "server.log"), "-w", "start")

    def stop(self) -> None:
        """Stop at once (no checkpoint: the data is thrown away) and remove the directory."""
        try:
            if os.path.exists(os.path.join(self.datadir, "postmaster.pid")):  # not paused
                self._run("pg_ctl", "-D", self.datadir, "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def url(self, database: str) -> str:
        return "postgresql://%s@%s:%d/%s" % (SUPERUSER, self.host, self.port, database)

    def execute(self, sql: str, database: str = "postgres") -> None:
        """Run one statement outside a transaction (CREATE/DROP DATABASE need that)."""
        import psycopg
        with psycopg.connect(self.url(database), autocommit=True) as conn:
            conn.execute(sql)


def own_server(test: Any, database: str = "chain") -> PostgresServer:
    """A server of ``test``'s own (to stop, pause or replicate) with an empty ``database``;
    stopped and removed when the test ends."""
    started = PostgresServer()
    started.start()
    test.addCleanup(started.stop)
    started.execute("CREATE DATABASE %s" % database)
    return started


def server() -> PostgresServer:
    """This process's server, started on first use and stopped at exit."""
    global _server
    if _server is None:
        reason = skip_reason()
        if reason is not None:
            raise RuntimeError(reason)
        started = PostgresServer()
        started.start()
        atexit.register(started.stop)
        _server = started
    return _server


def fresh_database(template: str = "template0") -> str:
    """The URL of a new database on this process's server: empty, or a copy of ``template``."""
    pg = server()
    name = "t%d_%d" % (os.getpid(), next(_names))
    pg.execute("CREATE DATABASE %s TEMPLATE %s" % (name, template))
    return pg.url(name)


class OnPostgreSQL:
    """Mixin: the test class's stores use PostgreSQL; skipped when it is not installed."""

    dbengine = "postgresql"
    skip = skip_reason()


def dbengine_for(test: Any, datadir: str) -> str:
    """``-dbengine`` for a store of ``test`` in ``datadir``: "sqlite", unless the test class
    is an :class:`OnPostgreSQL` twin: then a database of its own, nothing written in ``datadir``."""
    if getattr(test, "dbengine", SQLITE) == SQLITE:
        return SQLITE
    key = os.path.abspath(datadir)
    if key not in _by_datadir:
        _by_datadir[key] = fresh_database()
    return _by_datadir[key]


def database_for(datadir: str) -> str:
    """The URL of the database of the harness node in ``datadir`` (made on first use).

    The datadir records its database's name in a marker file, so a copy of the directory
    (``shutil.copytree``, as tests copy prepared chains) gets a copy of the database
    (``CREATE DATABASE ... TEMPLATE``: nothing may be connected to the source then).
    """
    key = os.path.abspath(datadir)
    if key not in _by_datadir:
        marker = os.path.join(key, MARKER)
        try:
            with open(marker) as f:
                source, owner = f.read().split("\n")[:2]
        except FileNotFoundError:
            source = owner = ""
        if owner == key:
            _by_datadir[key] = server().url(source)
        else:
            _by_datadir[key] = fresh_database(template=source or "template0")
            os.makedirs(key, exist_ok=True)
            with open(marker, "w") as f:
                f.write("%s\n%s\n" % (_by_datadir[key].rsplit("/", 1)[1], key))
    return _by_datadir[key]
