"""The compile processes' server: multiprocessing's forkserver, with the compile side preloaded.

A fresh interpreter that imports Triton once and forks every compile worker (``workers.py``).
Standard library only (and common/build_env.py), so that ``tmlr-build`` starts it before importing
anything of its own.
"""
from __future__ import annotations

import contextlib
import multiprocessing
import os
import tempfile
from multiprocessing import forkserver
from typing import Iterator

from ..common.build_env import affects_build

CONTEXT = multiprocessing.get_context("forkserver")
_PRELOAD = ["tmlr_build.builder.workers", "tmlr_build.compile.pipeline"]
# multiprocessing puts the server's socket at TEMPDIR/pymp-XXXXXXXX/listener-XXXXXXXX, and a Unix
# socket path holds at most 107 bytes (CPython before 3.14 does not fall back to a shorter folder).
_LONGEST_TEMPDIR = 107 - len("/pymp-XXXXXXXX/listener-XXXXXXXX")


def start(quiet: bool = False) -> None:
    """Start the server unless it runs, so that it imports Triton while this process does other work.

    A forkserver this process started already is used as it is (its workers then import Triton
    themselves). Raises OSError when no process can be started.

    ``quiet`` (tmlr-build, while it runs one thread): the server, and so each worker, writes to
    /dev/null instead of this process's stdout and stderr (a worker's compiler output goes to a file
    anyway), so that a caller reading tmlr-build's output through a pipe sees its end when
    tmlr-build exits, not once the server has shut down too.
    """
    CONTEXT.set_forkserver_preload(_PRELOAD)
    with _short_tempdir(), _without_build_environment(), _stdio_to_devnull() if quiet else contextlib.nullcontext():
        forkserver.ensure_running()


@contextlib.contextmanager
def _without_build_environment() -> Iterator[None]:
    """The environment variables that change a build unset while the server starts: it imports Triton,
    which may read some of them once, at import (the workers remove them again after the fork)."""
    saved = {k: v for k, v in os.environ.items() if affects_build(k)}
    for key in saved:
        del os.environ[key]
    try:
        yield
    finally:
        os.environ.update(saved)


@contextlib.contextmanager
def _stdio_to_devnull() -> Iterator[None]:
    """This process's fds 1 and 2 on /dev/null for the block (what a process started in it inherits)."""
    saved = [os.dup(1), os.dup(2)]
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        os.dup2(null, 2)
        yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (null, *saved):
            os.close(fd)


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
