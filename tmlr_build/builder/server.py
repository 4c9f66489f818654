"""The compile processes' server: multiprocessing's forkserver, with the compile side preloaded.

A fresh interpreter that imports Triton once and forks every compile worker (``workers.py``).
Standard library only, so that ``tmlr-build`` starts it before importing anything of its own.
"""
from __future__ import annotations

import contextlib
import multiprocessing
import os
import tempfile
from multiprocessing import forkserver
from typing import Iterator

CONTEXT = multiprocessing.get_context("forkserver")
_PRELOAD = ["tmlr_build.builder.workers", "tmlr_build.compile.pipeline"]
# multiprocessing puts the server's socket at TEMPDIR/pymp-XXXXXXXX/listener-XXXXXXXX, and a Unix
# socket path holds at most 107 bytes (CPython before 3.14 does not fall back to a shorter folder).
_LONGEST_TEMPDIR = 107 - len("/pymp-XXXXXXXX/listener-XXXXXXXX")


def start() -> None:
    """Start the server unless it runs, so that it imports Triton while this process does other work.

    A forkserver this process started already is used as it is (its workers then import Triton
    themselves). Raises OSError when no process can be started.
    """
    CONTEXT.set_forkserver_preload(_PRELOAD)
    with _short_tempdir():
        forkserver.ensure_running()


@contextlib.contextmanager
def _short_tempdir() -> Iterator[None]:
    """The system's /tmp as the temporary folder while the server starts, when TMPDIR is too deep for its socket."""
    if len(tempfile.gettempdir()) <= _LONGEST_TEMPDIR or not os.access("/tmp", os.W_OK | os.X_OK):
        yield
        return
    saved, tempfile.tempdir = tempfile.tempdir, "/tmp"
    try:
        yield
    finally:
        tempfile.tempdir = saved
