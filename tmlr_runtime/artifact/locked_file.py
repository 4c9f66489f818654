"""Merging into a file that several processes write: hold a lock, read, merge, write the whole file again
(:func:`replace`), so that writers lose nothing and a reader sees the old file or the new one, never half.

The one home of that mechanism: the tuning cache and tables (``tmlr_runtime.family.tuning``), a spec build's
``serve.json`` and a recording's spec file (tmlr_build) use it. Imported only where a file is written, never on
``import tmlr_runtime``'s path. Errors are the file system's ``OSError``: each caller says them in its own words."""
from __future__ import annotations

import contextlib
import os
import tempfile
from typing import Iterator

try:
    import fcntl
except ImportError:  # Windows: each write is still whole (os.replace); concurrent writers may lose an entry
    fcntl = None  # type: ignore[assignment]

CAN_LOCK = fcntl is not None  # whether locked() keeps other processes out (False on Windows)
NEW_FILE_MODE = 0o644  # a new file's permissions; a file written again keeps its own


@contextlib.contextmanager
def locked(path: str) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` for the block: a folder is locked itself (it gets no new file), any
    other path is a lock file, made if missing. Without ``fcntl`` the block runs unlocked (a lock file is still
    opened, so that a folder that cannot be written says so here)."""
    if os.path.isdir(path):
        if fcntl is None:
            yield
            return
        fd = os.open(path, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing the only descriptor releases the lock
        return
    with open(path, "a+b") as lock:
        if fcntl is not None:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            if fcntl is not None:
                fcntl.flock(lock.fileno(), fcntl.LOCK_UN)


def replace(path: str, text: str) -> None:
    """Write ``text`` to ``path`` whole: a temp file beside it (``.<name>.<random>.tmp``, removed when anything
    fails), renamed over it. The file keeps the permissions it had, a new one gets :data:`NEW_FILE_MODE`."""
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp",
                               dir=os.path.dirname(os.path.abspath(path)))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, os.stat(path).st_mode & 0o777 if os.path.exists(path) else NEW_FILE_MODE)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
