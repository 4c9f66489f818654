"""Reading and writing the spec file a recording merges into, under a lock: every process of a recorded command
(a server's workers, pytest-xdist's) merges into the same file, and a reader never sees half a file."""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from typing import Any, Iterator

from tmlr_runtime.artifact import locked_file

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
    """Hold the lock of the spec ``path`` (a file in the temp folder, so that the spec's folder gets nothing).
    SpecError where the system has no file locks (Windows): the processes of one recording would lose each
    other's kernels."""
    if not locked_file.CAN_LOCK:
        raise SpecError(f"{path}: tmlr-build record merges each process's kernels into the spec under a file lock, "
                        "and this system has none (no fcntl module, as on Windows); record on Linux or macOS (WSL works)")
    digest = hashlib.sha256(os.path.abspath(path).encode()).hexdigest()[:16]
    with locked_file.locked(os.path.join(tempfile.gettempdir(), f"tmlr-record-{digest}.lock")):
        yield


def write(path: str, doc: dict[str, Any]) -> None:
    """Write ``doc`` to ``path`` whole (:func:`tmlr_runtime.artifact.locked_file.replace`)."""
    locked_file.replace(path, json.dumps(doc, indent=2) + "\n")
