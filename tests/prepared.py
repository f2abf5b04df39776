"""Datadirs built once per test process and copied by each test that needs one.

Building a chain takes seconds; copying it takes milliseconds, and each test gets a copy
of its own to change freely.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
from typing import Any, Callable, Dict, Hashable, Tuple

_built: Dict[Hashable, Tuple[str, Any]] = {}
#: Re-entrant: a build may itself start from another prepared datadir.
_lock = threading.RLock()


def prepared_datadir(key: Hashable, build: Callable[[str], Any]) -> Tuple[str, Any]:
    """``(datadir, state)``: ``build(datadir)`` run once per process for ``key`` on a new
    temporary directory (removed at exit); ``state`` is what it returned."""
    with _lock:
        if key not in _built:
            datadir = tempfile.mkdtemp(prefix="coin-test-prepared-")
            atexit.register(shutil.rmtree, datadir, True)
            _built[key] = (datadir, build(datadir))
        return _built[key]


#: Files a copy leaves out: they belong to the node that ran, not to its data.
_NOT_COPIED = shutil.ignore_patterns(".lock", ".cookie", "coind.pid", "debug.log")


def copy_datadir(source: str, datadir: str) -> None:
    """A private copy of the prepared datadir ``source`` at ``datadir`` (which may exist)."""
    shutil.copytree(source, os.path.abspath(datadir), ignore=_NOT_COPIED, dirs_exist_ok=True)
