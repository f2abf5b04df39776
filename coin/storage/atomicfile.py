"""Replace a small file so that a crash leaves either the old or the new one, whole.

Used for mempool.dat, fee_estimates.dat, banlist.json and peers.json: write a
temporary file beside the target, fsync it, rename it over the target, fsync
the directory.
"""

from __future__ import annotations

import os


def write_file_atomic(path: str, data: bytes, mode: int = 0o666) -> None:
    """Write ``data`` to ``path`` atomically; ``mode`` is filtered by the umask (077 unless
    -sysperms), so node files are private by default, as Core's."""
    temporary = path + ".new"
    try:
        os.unlink(temporary)  # a stale one would keep its old mode
    except FileNotFoundError:
        pass
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise
    directory = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
