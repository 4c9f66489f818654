"""Reading and writing the spec file a recording merges into, under a lock: every process of a recorded command
(a server's workers, pytest-xdist's) merges into the same file, and a reader never sees half a file."""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import tempfile
from typing import Any, Iterator

from ..common.errors import SpecError


def read(path: str) -> dict[str, Any] | None:
    """The spec document at ``path``; None when there is no file. SpecError when it is no spec: a recording never
    replaces a file it cannot read as one."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        return None
    except OSError as e:
        raise SpecError(f"{path}: cannot be read ({e}); tmlr-build record merges into it, so it must be readable") from None
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise SpecError(f"{path}: not valid JSON ({e}); tmlr-build record merges into an existing spec and leaves "
                        "anything else alone: fix it, or record into another file") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("kernels"), list):
        raise SpecError(f'{path}: not a spec file (a JSON object with a "kernels" list); tmlr-build record merges '
                        "into a spec and leaves anything else alone: record into another file")
    return doc


@contextlib.contextmanager
def locked(path: str) -> Iterator[None]:
    """Hold the lock of the spec ``path`` (a file in the temp folder, so that the spec's folder gets nothing)."""
    digest = hashlib.sha256(os.path.abspath(path).encode()).hexdigest()[:16]
    with open(os.path.join(tempfile.gettempdir(), f"tmlr-record-{digest}.lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def write(path: str, doc: dict[str, Any]) -> None:
    """Write ``doc`` to ``path`` whole (a temp file beside it, then renamed over it)."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")
        if os.path.exists(path):
            os.chmod(tmp, os.stat(path).st_mode & 0o777)
        else:
            os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
