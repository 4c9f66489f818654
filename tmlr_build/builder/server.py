"""The compile processes' server: multiprocessing's forkserver, with the compile side preloaded.

A fresh interpreter that imports Triton once and forks every compile worker (``workers.py``).
Standard library only, so that ``tmlr-build`` starts it before importing anything of its own.
"""
from __future__ import annotations

import multiprocessing
from multiprocessing import forkserver

CONTEXT = multiprocessing.get_context("forkserver")
_PRELOAD = ["tmlr_build.builder.workers", "tmlr_build.compile.pipeline"]


def start() -> None:
    """Start the server unless it runs, so that it imports Triton while this process does other work.

    A forkserver this process started already is used as it is (its workers then import Triton
    themselves). Raises OSError when no process can be started.
    """
    CONTEXT.set_forkserver_preload(_PRELOAD)
    forkserver.ensure_running()
