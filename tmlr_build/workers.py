"""Compile jobs in child processes, several at a time.

Bad IR can make Triton/LLVM segfault or abort, which must not take tmlr-build down with it, and
which must be pinned on the input that caused it. So every job gets its own process (forked from
a forkserver that has Triton imported already, so a job costs no import), and the parent learns of
a crash from the exit status.
"""
from __future__ import annotations

import contextlib
import multiprocessing
import os
import shutil
import signal
import tempfile
import threading
import time
import traceback
from multiprocessing.connection import Connection, wait
from typing import Callable, Iterator, Sequence

from .errors import ERROR_CLASSES, BuildError, CompileError, CompilerCrashError
from .jobs import DIAGNOSTICS_FILE, Job, JobResult

Progress = Callable[[int, int, Job, "JobResult | BuildError", float], None]


def _die_with_parent() -> None:
    # Workers are children of the forkserver, which exits when tmlr-build does; without this a
    # worker the parent could not kill (interrupted mid-start) would outlive it.
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG (Linux)
    except (OSError, AttributeError):
        pass


def _child(conn: Connection, job: Job, workdir: str) -> None:
    _die_with_parent()
    try:
        from . import pipeline

        conn.send(("ok", pipeline.run(job, workdir)))
    except BuildError as e:
        conn.send(("error", type(e).__name__, str(e)))
    except BaseException as e:  # a bug in tmlr-build or an unexpected Triton failure: keep the trace
        trace = "".join(traceback.format_exception(e)[-6:])
        conn.send(("error", "CompileError", f"{job.label}: unexpected {type(e).__name__}: {e}\n{trace}"))
    finally:
        conn.close()


@contextlib.contextmanager
def _interrupts_at_safe_points() -> Iterator[Callable[[], None]]:
    """Turn Ctrl-C into a flag checked by ``check()``, so that KeyboardInterrupt is raised only
    where every started worker is on record (a Ctrl-C inside Process.start() would orphan one)."""
    if threading.current_thread() is not threading.main_thread():
        yield lambda: None
        return
    hit: list[bool] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: hit.append(True))

    def check() -> None:
        if hit:
            raise KeyboardInterrupt

    try:
        yield check
    finally:
        signal.signal(signal.SIGINT, previous)


def _context() -> multiprocessing.context.BaseContext:
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["tmlr_build.pipeline"])
    return ctx


def _tail(path: str, lines: int = 25) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read().strip()
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def _death(job: Job, exitcode: int | None, diag_path: str) -> BuildError:
    said = _tail(diag_path)
    said = f"\nLast compiler output:\n{said}" if said else ""
    if exitcode is not None and exitcode < 0:
        try:
            signame = signal.Signals(-exitcode).name
        except ValueError:
            signame = f"signal {-exitcode}"
        return CompilerCrashError(
            f"{job.label}: Triton/LLVM crashed ({signame}) instead of reporting an error; the input is probably "
            f"malformed or made for another arch or Triton version - rebuild it from the .py/.ttir, or use "
            f"--stop-after/--keep-ir to find the failing stage{said}")
    return CompileError(f"{job.label}: the compile worker exited with status {exitcode} without a result{said}")


def run_jobs(jobs: Sequence[Job], max_workers: int | None = None,
             progress: Progress | None = None) -> list[JobResult | BuildError]:
    """Run every job; the list holds each job's result or its error, in job order."""
    if not jobs:
        return []
    results: list[JobResult | BuildError | None] = [None] * len(jobs)
    ctx = _context()
    limit = max(1, min(max_workers or os.cpu_count() or 1, len(jobs)))
    pending = list(range(len(jobs)))
    running: dict[int, tuple[multiprocessing.process.BaseProcess, Connection, float, str]] = {}
    done = 0
    with _interrupts_at_safe_points() as check_interrupt:
        try:
            while pending or running:
                while pending and len(running) < limit:
                    i = pending.pop(0)
                    recv, send = ctx.Pipe(duplex=False)
                    # Made here, not in the child, so that it is removed even when the child crashes;
                    # the child's fd 2 (MLIR/LLVM diagnostics) goes to a file in it.
                    workdir = tempfile.mkdtemp(prefix="tmlr-build-")
                    proc = ctx.Process(target=_child, args=(send, jobs[i], workdir), daemon=True)
                    proc.start()
                    running[i] = (proc, recv, time.monotonic(), workdir)
                    send.close()
                    check_interrupt()
                # a timeout, so that a Ctrl-C is noticed while every worker is still busy
                waitables = [r[1] for r in running.values()] + [r[0].sentinel for r in running.values()]
                ready = wait(waitables, timeout=0.2)
                check_interrupt()
                for i, (proc, conn, t0, workdir) in list(running.items()):
                    if conn not in ready and proc.sentinel not in ready:
                        continue
                    outcome = _collect(jobs[i], proc, conn, workdir)
                    del running[i]
                    results[i] = outcome
                    done += 1
                    if progress is not None:
                        progress(done, len(jobs), jobs[i], outcome, time.monotonic() - t0)
        finally:
            # Interrupted (Ctrl-C) or failed: leave no worker running and no work directory behind.
            for proc, conn, _t0, workdir in running.values():
                proc.kill()
                proc.join()
                conn.close()
                shutil.rmtree(workdir, ignore_errors=True)
    return [r for r in results if r is not None]


def _collect(job: Job, proc: multiprocessing.process.BaseProcess, conn: Connection, workdir: str) -> JobResult | BuildError:
    """The outcome of a worker that sent its result or died."""
    try:
        msg = conn.recv()
    except (EOFError, OSError):
        proc.join()
        outcome: JobResult | BuildError = _death(job, proc.exitcode, os.path.join(workdir, DIAGNOSTICS_FILE))
    else:
        proc.join()
        outcome = msg[1] if msg[0] == "ok" else ERROR_CLASSES.get(msg[1], CompileError)(msg[2])
    conn.close()
    shutil.rmtree(workdir, ignore_errors=True)
    return outcome
