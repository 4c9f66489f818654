"""Compiling stage files in this process, where Triton is imported already: the edit loop of ``@tmlr_build.jit``.

A compile worker (workers.py) costs a process and, in it, Triton's set-up again (its lazily loaded
parts, the ptxas lookups it caches per process); an edit-and-relaunch loop pays that on every edit. So
where the caller has imported Triton, the jit compiles a stage file (.ttir/.ttgir/.llir/.ptx/.cubin)
here, running the very function a worker runs (``pipeline.run``), which gives the same bytes
(tests/build/test_build_jit.py compares both). What that function changes for its compile (the
environment, the working directory, fd 2) is put back afterwards, and one such compile runs at a time.

Where this is not used, and why:

- a Python kernel: compiling one imports the user's file again and installs a build-time Triton driver,
  which would change the caller's own Triton;
- Triton 3.3: a compile's bytes there depend on what the process compiled before (triton_api's
  ``compiles_alike_in_one_process``);
- ``PTXAS_OPTIONS`` set: Triton 3.6+ reads it once, when imported, into its option defaults, which a
  worker's Triton never saw;
- ``@tmlr_build.jit(isolate=True)``: a crash of Triton/LLVM on bad IR then ends a worker, not the caller.

A command-line build never imports Triton in its own process, so it always uses workers.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
import threading
import time
from typing import Any, Callable, Iterator, Sequence

from ..common.errors import BuildError
from ..common.jobs import Job, JobResult
from .workers import COMPILE_JOB, Task, outcome_of

_ONE_AT_A_TIME = threading.Lock()  # the environment and the working directory are the process's


def usable(jobs: Sequence[Job]) -> bool:
    """Whether ``jobs`` may be compiled in this process (see the module docstring)."""
    if "triton" not in sys.modules or os.environ.get("PTXAS_OPTIONS") or not jobs:
        return False
    if any(job.stage == "python" or job.dump_passes for job in jobs):
        return False
    from ..compile import triton_api  # Triton is imported already: no cost

    return triton_api.current().compiles_alike_in_one_process


def run_jobs(jobs: Sequence[Job], progress: Callable[..., None] | None = None) -> list[JobResult | BuildError]:
    """Compile every job here, one after the other; each job's JobResult or BuildError, as workers.run_jobs."""
    outcomes: list[JobResult | BuildError] = []
    for job in jobs:
        t0 = time.monotonic()
        outcomes.append(run_here(Task(COMPILE_JOB, (job,), job.label)))
        if progress is not None:
            progress(len(outcomes), len(jobs), job, outcomes[-1], time.monotonic() - t0)
    return outcomes


def run_here(task: Task) -> Any:
    """Run ``task`` in this process as a worker would (its result or BuildError), then restore the process."""
    with _ONE_AT_A_TIME, _process_state_kept():
        workdir = tempfile.mkdtemp(prefix="tmlr-build-")
        try:
            return outcome_of(task, workdir)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)


@contextlib.contextmanager
def _process_state_kept() -> Iterator[None]:
    """The working directory and the environment as they were before the block (a compile changes both)."""
    cwd = os.getcwd()
    environ = dict(os.environ)
    try:
        yield
    finally:
        os.chdir(cwd)
        for key in [k for k in os.environ if k not in environ]:
            del os.environ[key]
        for key, value in environ.items():
            if os.environ.get(key) != value:
                os.environ[key] = value
