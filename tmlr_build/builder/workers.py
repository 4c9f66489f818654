"""Compile work in worker processes: a fresh process per task, forked from a server that has imported Triton.

Bad IR can make Triton/LLVM segfault or abort; that must not take the build down, and must be pinned
on the input that caused it, so every task runs in its own process and a worker that dies is
reported with its signal. Triton 3.3.1's output depends on what the same process compiled before
(register numbering), so no process compiles twice.

The processes come from multiprocessing's forkserver (``server.py``): a fresh interpreter that
imports the compile side once and forks one worker per task, so a task pays no import of Triton and
inherits nothing of the caller (its threads, CUDA, a Triton that has compiled already). A worker
runs :func:`_child`: one compile-side function, whose result or BuildError is pickled back.
"""
from __future__ import annotations

import contextlib
import importlib
import io
import multiprocessing
import os
import shutil
import signal
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass
from multiprocessing import context, forkserver, popen_forkserver, reduction, spawn, util
from multiprocessing.connection import Connection, wait
from typing import Any, Callable, Sequence

from ..common.errors import BuildError, CompileError, CompilerCrashError, UsageError
from ..common.jobs import DIAGNOSTICS_FILE, Job, JobResult
from .server import CONTEXT, start

COMPILE_JOB = "tmlr_build.compile.pipeline:run"

Progress = Callable[[int, int, Job, "JobResult | BuildError", float], None]


@dataclass(frozen=True)
class Task:
    """One call for a fresh worker: ``function(*args, workdir)``.

    ``function`` is ``"module:name"`` of the compile side, which the parent never imports.
    """

    function: str
    args: tuple[Any, ...]
    label: str  # names the input in error messages


# --- in the worker ------------------------------------------------------------------------------

def _child(send: Connection, task: Task, workdir: str) -> None:
    """All a worker runs: the task, whose result or BuildError goes back through ``send``."""
    _exit_with_parent()
    try:
        outcome = outcome_of(task, workdir)
    except BaseException as e:  # SystemExit, KeyboardInterrupt: still an answer for the parent
        outcome = _unexpected(task, e)
    send.send(outcome)


def outcome_of(task: Task, workdir: str) -> Any:
    """Run ``task`` in this process: its result, or its BuildError (also in_process.py's way to run one)."""
    try:
        module, name = task.function.split(":")
        return getattr(importlib.import_module(module), name)(*task.args, workdir)
    except BuildError as e:
        return e
    except Exception as e:  # a bug in tmlr-build or an unexpected Triton failure: keep the trace
        return _unexpected(task, e)


def _unexpected(task: Task, e: BaseException) -> CompileError:
    trace = "".join(traceback.format_exception(e)[-6:])
    return CompileError(f"{task.label}: unexpected {type(e).__name__}: {e}\n{trace}")


def _exit_with_parent() -> None:
    # Nothing may outlive the process that would collect it (a hung compile would run on, orphaned).
    parent = multiprocessing.parent_process()
    if parent is not None:
        threading.Thread(target=lambda: (parent.join(), os._exit(1)), daemon=True).start()


# --- starting a worker --------------------------------------------------------------------------

class _Popen(popen_forkserver.Popen):
    """Starts a worker without the caller's ``__main__``.

    multiprocessing has each child run the parent's main script again (as ``__mp_main__``) so that
    objects defined there unpickle. A worker's task lives in tmlr_build; running the caller's script
    again would redo an unguarded script's work (or, guarded, its imports - torch - in every
    compile). So scripts need no ``if __name__ == "__main__":`` guard. This is ``_launch`` of
    CPython 3.8 to 3.14 with the two main-module entries left out of the preparation data.
    """

    def _launch(self, process_obj: Any) -> None:
        prep_data = spawn.get_preparation_data(process_obj._name)
        prep_data.pop("init_main_from_path", None)
        prep_data.pop("init_main_from_name", None)
        buf = io.BytesIO()
        context.set_spawning_popen(self)
        try:
            reduction.dump(prep_data, buf)
            reduction.dump(process_obj, buf)
        finally:
            context.set_spawning_popen(None)
        self.sentinel, w = forkserver.connect_to_new_process(self._fds)
        parent_w = os.dup(w)  # the worker's parent_process() sentinel: closed when this process dies
        self.finalizer = util.Finalize(self, util.close_fds, (parent_w, self.sentinel))
        with open(w, "wb", closefd=True) as f:
            f.write(buf.getbuffer())
        self.pid = forkserver.read_signed(self.sentinel)


class _Process(CONTEXT.Process):  # type: ignore[misc,name-defined]
    @staticmethod
    def _Popen(process_obj: Any) -> _Popen:
        return _Popen(process_obj)


class _Worker:
    """The parent's handle on one task's worker."""

    def __init__(self, task: Task) -> None:
        self.task = task
        # Made here, not in the worker, so that it is removed even when the worker crashes; the
        # worker's fd 2 (MLIR/LLVM diagnostics) goes to a file in it.
        self.workdir = tempfile.mkdtemp(prefix="tmlr-build-")
        self.t0 = time.monotonic()
        send = None
        try:  # from the folder made on: a Ctrl-C anywhere below removes it (it landed here under load, CI)
            self.conn, send = CONTEXT.Pipe(duplex=False)
            self.process = _Process(target=_child, args=(send, task, self.workdir))
            # daemon: should Ctrl-C land after the fork but before the caller records this worker,
            # multiprocessing's exit handler kills it instead of waiting for the compile to end
            self.process.daemon = True
            self.process.start()
        except BaseException:
            if send is not None:
                self.conn.close()
            shutil.rmtree(self.workdir, ignore_errors=True)
            raise
        finally:
            if send is not None:
                send.close()  # the worker's copy is the only one left: its end closing is how a crash shows

    def outcome(self) -> Any:
        """The task's result or BuildError, once ``conn`` is readable (sent, or the worker died)."""
        try:
            try:
                outcome = self.conn.recv()
            except (EOFError, OSError):
                outcome = None
            self.process.join(timeout=5)  # it sent its outcome, or it died: it exits now
            if outcome is None:
                outcome = _death(self.task.label, self.process.exitcode, os.path.join(self.workdir, DIAGNOSTICS_FILE))
            return outcome
        finally:
            self.close()

    def close(self) -> None:
        """Kill the worker unless it has exited, and remove what it leaves behind (once)."""
        if self.conn.closed:
            return
        self.conn.close()
        if self.process.exitcode is None:
            with contextlib.suppress(OSError):
                self.process.kill()
        self.process.join()
        self.process.close()
        shutil.rmtree(self.workdir, ignore_errors=True)


def _tail(path: str, lines: int = 25) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read().strip()
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def _death(label: str, exitcode: int | None, diag_path: str) -> BuildError:
    said = _tail(diag_path)
    said = f"\nLast compiler output:\n{said}" if said else ""
    if exitcode is not None and exitcode < 0:
        try:
            signame = signal.Signals(-exitcode).name
        except ValueError:
            signame = f"signal {-exitcode}"
        return CompilerCrashError(
            f"{label}: Triton/LLVM crashed ({signame}) instead of reporting an error; the input is probably "
            f"malformed or made for another arch or Triton version - rebuild it from the .py/.ttir, or use "
            f"--stop-after/--keep-ir to find the failing stage{said}")
    return CompileError(f"{label}: the compile worker exited with status {exitcode} without a result{said}")


# --- running tasks ------------------------------------------------------------------------------

def run_tasks(tasks: Sequence[Task], max_workers: int | None = None,
              progress: Callable[[int, int, int, Any, float], None] | None = None,
              while_waiting: Callable[[], None] | None = None) -> list[Any]:
    """Run each task in a fresh worker, ``max_workers`` at a time (default: :func:`cpu_count`).

    Returns each task's result or BuildError, in task order. ``progress(done, total, index,
    outcome, seconds)`` follows each finished task; ``while_waiting`` is called once, when the first
    workers are busy (work the caller would otherwise do after them).
    """
    if multiprocessing.current_process().daemon:
        raise UsageError("tmlr-build compiles in child processes, which a daemonic process (a multiprocessing.Pool "
                         "worker) may not start; build from the main process or a concurrent.futures "
                         "ProcessPoolExecutor worker")
    try:
        start()
    except OSError as e:
        raise CompileError(f"cannot start the compile processes ({e}); free memory or processes and run "
                           "tmlr-build again") from None
    outcomes: dict[int, Any] = {}
    limit = max(1, min(max_workers or cpu_count(), len(tasks)))
    pending = list(range(len(tasks)))
    running: dict[int, _Worker] = {}
    try:
        while pending or running:
            while pending and len(running) < limit:
                i = pending.pop(0)
                running[i] = _Worker(tasks[i])
            if while_waiting is not None:
                while_waiting()
                while_waiting = None
            ready = wait([w.conn for w in running.values()])
            for i in [i for i, w in running.items() if w.conn in ready]:
                outcomes[i] = running[i].outcome()
                worker = running.pop(i)
                if progress is not None:
                    progress(len(outcomes), len(tasks), i, outcomes[i], time.monotonic() - worker.t0)
    finally:
        for worker in running.values():  # interrupted (Ctrl-C) or failed: leave no worker or work directory
            worker.close()
    return [outcomes[i] for i in range(len(tasks))]


def cpu_count() -> int:
    """The CPUs this process may run on (a CI container's share, not the host's count): -j's default."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # macOS has no sched_getaffinity
        return os.cpu_count() or 1


def run_task(task: Task) -> Any:
    """Run one task in a fresh worker; return its result or raise its BuildError."""
    outcome = run_tasks([task])[0]
    if isinstance(outcome, BuildError):
        raise outcome
    return outcome


def run_jobs(jobs: Sequence[Job], max_workers: int | None = None, progress: Progress | None = None,
             while_waiting: Callable[[], None] | None = None) -> list[JobResult | BuildError]:
    """Compile every job (see :func:`run_tasks`); the list holds each job's JobResult or BuildError."""
    tasks = [Task(COMPILE_JOB, (job,), job.label) for job in jobs]
    if progress is None:
        return run_tasks(tasks, max_workers, None, while_waiting)
    show = progress
    return run_tasks(tasks, max_workers, lambda done, total, i, outcome, seconds: show(done, total, jobs[i], outcome,
                                                                                       seconds), while_waiting)
