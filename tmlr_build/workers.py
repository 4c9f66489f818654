"""Compile jobs in child processes, several at a time.

Bad IR can make Triton/LLVM segfault or abort, which must not take tmlr-build down with it, and
which must be pinned on the input that caused it. So every job gets its own process, and the parent
learns of a crash from the exit status.

Triton 3.3.1's output depends on what the same process compiled before (register numbering), so
each job runs in a fresh process: a worker forked from a *compile server*, a process that has
imported Triton (so a job costs no import) but never compiles anything itself. The server is either

* forked from tmlr-build itself as its first action (:func:`start_server`, called by the CLI while
  nothing has touched Triton yet), so that importing Triton overlaps with tmlr-build's own
  start-up and needs no second interpreter; or
* a fresh interpreter (library use: the caller's process may have compiled, imported Triton or
  started threads, none of which a fork may copy).

Server protocol: the parent sends each job's socket and a status pipe over the server's control
socket; the server forks a worker that reads ``(job, workdir)`` from the socket and answers on it,
and writes the worker's pid, then its exit status, to the status pipe. The server kills its workers
and exits when the parent closes the control socket (the parent exiting does that).
"""
from __future__ import annotations

import atexit
import contextlib
import os
import selectors
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from multiprocessing.connection import Connection, wait
from typing import Callable, Iterator, NoReturn, Sequence

from .errors import ERROR_CLASSES, BuildError, CompileError, CompilerCrashError
from .jobs import DIAGNOSTICS_FILE, Job, JobResult

Progress = Callable[[int, int, Job, "JobResult | BuildError", float], None]

_SIGNED = struct.Struct("q")  # pids and exit statuses on a status pipe


def _die_with_parent(parent: int) -> None:
    # The server dies with tmlr-build and a worker with the server, even when killed (SIGKILL):
    # nothing may outlive the process that would collect it.
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG (Linux)
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:  # it died before the prctl
        os._exit(1)


def _child(conn: Connection, job: Job, workdir: str) -> None:
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


# --- the server process -------------------------------------------------------------------------

def _write_signed(fd: int, n: int) -> None:
    try:
        os.write(fd, _SIGNED.pack(n))  # 8 bytes: atomic on a pipe
    except OSError:  # the parent gave up on this job
        pass


def _flush_stdio() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()


def _serve(sock: socket.socket) -> NoReturn:
    """The compile server's whole life: import Triton, then fork a worker per request."""
    code = 1
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is tmlr-build's to handle
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        try:
            from . import pipeline  # noqa: F401  imports Triton, once for every worker
        except BaseException:  # noqa: BLE001 - each worker imports it again and reports the failure
            pass
        _serve_requests(sock)
        code = 0
    except BaseException:  # noqa: BLE001
        with contextlib.suppress(Exception):
            traceback.print_exc()
    finally:
        _flush_stdio()
        os._exit(code)


def _serve_requests(sock: socket.socket) -> None:
    sig_r, sig_w = os.pipe()
    os.set_blocking(sig_r, False)
    os.set_blocking(sig_w, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # wakes the selector through the wakeup fd
    signal.set_wakeup_fd(sig_w)
    workers: dict[int, int] = {}  # pid -> its status pipe
    with selectors.DefaultSelector() as selector:
        selector.register(sock, selectors.EVENT_READ)
        selector.register(sig_r, selectors.EVENT_READ)
        while True:
            for key, _ in selector.select():
                if key.fileobj == sig_r:
                    with contextlib.suppress(OSError):
                        os.read(sig_r, 4096)
                    _reap(workers)
                    continue
                msg, fds, _flags, _addr = socket.recv_fds(sock, 16, 2)
                if not msg or len(fds) != 2:
                    for fd in fds:
                        os.close(fd)
                    if msg:
                        continue
                    # tmlr-build closed the control socket (it finished or died): leave nothing behind
                    for pid in workers:
                        with contextlib.suppress(OSError):
                            os.kill(pid, signal.SIGKILL)
                    return
                job_fd, status_fd = fds
                _flush_stdio()
                server = os.getpid()
                pid = os.fork()
                if pid == 0:
                    _worker(server, job_fd, [sock.fileno(), sig_r, sig_w, status_fd, *workers.values()])
                os.close(job_fd)  # only the worker may hold it: its end closing is how a crash shows
                workers[pid] = status_fd
                _write_signed(status_fd, pid)


def _reap(workers: dict[int, int]) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        fd = workers.pop(pid, None)
        if fd is not None:
            _write_signed(fd, os.waitstatus_to_exitcode(status))
            os.close(fd)


def _worker(server: int, job_fd: int, unused: list[int]) -> NoReturn:
    """A worker, just forked from the server: run one job and exit without any clean-up of Triton's."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for fd in unused:
            os.close(fd)
        _die_with_parent(server)
        conn = Connection(job_fd)
        job, workdir = conn.recv()
        _child(conn, job, workdir)
        code = 0
    except BaseException:  # noqa: BLE001 - the parent reports a worker that sent nothing
        pass
    finally:
        _flush_stdio()
        os._exit(code)


# --- the parent's side --------------------------------------------------------------------------

class _Worker:
    """The parent's handle on one job's worker."""

    def __init__(self, conn: Connection, status_fd: int, workdir: str) -> None:
        self.conn, self.status_fd, self.workdir = conn, status_fd, workdir
        self.t0 = time.monotonic()
        self._pid: int | None = None
        self._read_pid = False

    def _read_signed(self) -> int | None:
        data = b""
        while len(data) < _SIGNED.size:
            try:
                chunk = os.read(self.status_fd, _SIGNED.size - len(data))
            except OSError:
                return None
            if not chunk:
                return None  # the server died
            data += chunk
        return _SIGNED.unpack(data)[0]

    def pid(self) -> int | None:
        """The worker's pid (waits until the server has forked it); None when the server died first."""
        if not self._read_pid:
            self._pid, self._read_pid = self._read_signed(), True
        return self._pid

    def exitcode(self) -> int | None:
        """Waits for the worker's exit status (negative: killed by that signal); None if unknown."""
        return self._read_signed() if self.pid() is not None else None

    def kill(self) -> None:
        pid = self.pid()
        if pid is not None:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
            self.exitcode()  # dead and reaped once the server reports it

    def close(self) -> None:
        self.conn.close()
        with contextlib.suppress(OSError):
            os.close(self.status_fd)
        shutil.rmtree(self.workdir, ignore_errors=True)


class _Server:
    """The parent's handle on the compile server."""

    def __init__(self, pid: int, sock: socket.socket, popen: subprocess.Popen[bytes] | None = None) -> None:
        self.pid, self.sock, self.popen = pid, sock, popen
        self.lock = threading.Lock()
        self.owner = os.getpid()  # a process forked from the owner must start its own server

    def alive(self) -> bool:
        if self.sock.fileno() < 0 or os.getpid() != self.owner:
            return False
        if self.popen is not None:
            return self.popen.poll() is None
        try:
            return os.waitpid(self.pid, os.WNOHANG)[0] == 0
        except ChildProcessError:
            return False

    def submit(self, job: Job, workdir: str) -> _Worker:
        """Have the server fork a worker for ``job``; its outcome arrives on the returned handle."""
        mine, theirs = socket.socketpair()
        status_r, status_w = os.pipe()
        try:
            with self.lock:
                socket.send_fds(self.sock, [b"j"], [theirs.fileno(), status_w])
        except OSError:
            pass  # the server is gone: the job's socket reads EOF and its status is unknown
        finally:
            theirs.close()
            os.close(status_w)
        worker = _Worker(Connection(mine.detach()), status_r, workdir)
        try:
            worker.conn.send((job, workdir))
        except OSError:
            pass  # the worker died already; collecting it says how
        return worker

    def stop(self) -> None:
        """Close the control socket: the server kills its workers and exits."""
        self.sock.close()
        if self.popen is not None and os.getpid() == self.owner:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.popen.wait(timeout=5)


_server: _Server | None = None
_server_lock = threading.Lock()


def _fork_is_safe() -> bool:
    # A fork copies the caller's Triton state (which must be fresh) and only the calling thread.
    return (hasattr(os, "fork") and sys.platform.startswith("linux") and "triton" not in sys.modules
            and threading.active_count() == 1 and threading.current_thread() is threading.main_thread())


def _fork_server() -> _Server:
    parent_end, server_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    _flush_stdio()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:
        try:
            parent_end.close()
            _die_with_parent(parent)
        finally:
            _serve(server_end)
    server_end.close()
    return _Server(pid, parent_end)


def _spawn_server() -> _Server:
    parent_end, server_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    code = (f"import sys; sys.path[:] = {sys.path!r}; from tmlr_build.workers import _serve_fd; "
            f"_serve_fd({server_end.fileno()})")
    try:
        popen = subprocess.Popen([sys.executable, "-c", code], pass_fds=[server_end.fileno()],
                                 stdin=subprocess.DEVNULL)
    finally:
        server_end.close()
    return _Server(popen.pid, parent_end, popen)


def _serve_fd(fd: int) -> NoReturn:
    _serve(socket.socket(fileno=fd))


def start_server(fork: bool = True) -> None:
    """Start the compile server now unless one is running.

    ``fork``: fork it from this process when that is safe (Triton not imported, one thread); the
    CLI calls this first thing, so that Triton's import in the server overlaps its own start-up.
    Otherwise (and by default for :func:`run_jobs`) the server is a fresh interpreter.
    """
    global _server
    with _server_lock:
        if _server is not None and _server.alive():
            return
        if _server is not None:
            _server.stop()
        else:
            atexit.register(_stop_server)
        _server = _fork_server() if fork and _fork_is_safe() else _spawn_server()


def _stop_server() -> None:
    global _server
    with _server_lock:
        if _server is not None:
            _server.stop()
            _server = None


def _running_server() -> _Server:
    start_server(fork=False)
    assert _server is not None
    return _server


# --- running jobs -------------------------------------------------------------------------------

@contextlib.contextmanager
def _interrupts_at_safe_points() -> Iterator[Callable[[], None]]:
    """Turn Ctrl-C into a flag checked by ``check()``, so that KeyboardInterrupt is raised only
    where every started worker is on record (a Ctrl-C inside a submit would orphan one)."""
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
    if exitcode is None:  # the server died before reporting the worker's status
        return CompileError(f"{job.label}: the compile server died (killed from outside?) before this job's worker "
                            f"sent a result; run tmlr-build again{said}")
    return CompileError(f"{job.label}: the compile worker exited with status {exitcode} without a result{said}")


def run_jobs(jobs: Sequence[Job], max_workers: int | None = None, progress: Progress | None = None,
             while_waiting: Callable[[], None] | None = None) -> list[JobResult | BuildError]:
    """Run every job; the list holds each job's result or its error, in job order.

    ``while_waiting`` is called once, when the first workers are busy (work the parent would
    otherwise do after them).
    """
    if not jobs:
        return []
    results: list[JobResult | BuildError | None] = [None] * len(jobs)
    server = _running_server()
    limit = max(1, min(max_workers or os.cpu_count() or 1, len(jobs)))
    pending = list(range(len(jobs)))
    running: dict[int, _Worker] = {}
    done = 0
    with _interrupts_at_safe_points() as check_interrupt:
        try:
            while pending or running:
                while pending and len(running) < limit:
                    i = pending.pop(0)
                    # Made here, not in the worker, so that it is removed even when the worker crashes;
                    # the worker's fd 2 (MLIR/LLVM diagnostics) goes to a file in it.
                    workdir = tempfile.mkdtemp(prefix="tmlr-build-")
                    try:
                        running[i] = server.submit(jobs[i], workdir)
                    except BaseException:
                        shutil.rmtree(workdir, ignore_errors=True)
                        raise
                    check_interrupt()
                if while_waiting is not None:
                    while_waiting()
                    while_waiting = None
                    check_interrupt()
                # a timeout, so that a Ctrl-C is noticed while every worker is still busy
                ready = wait([w.conn for w in running.values()], timeout=0.2)
                check_interrupt()
                for i, worker in list(running.items()):
                    if worker.conn not in ready:
                        continue
                    outcome = _collect(jobs[i], worker)
                    del running[i]
                    results[i] = outcome
                    done += 1
                    if progress is not None:
                        progress(done, len(jobs), jobs[i], outcome, time.monotonic() - worker.t0)
        finally:
            # Interrupted (Ctrl-C) or failed: leave no worker running and no work directory behind.
            for worker in running.values():
                worker.kill()
                worker.close()
    return [r for r in results if r is not None]


def _collect(job: Job, worker: _Worker) -> JobResult | BuildError:
    """The outcome of a worker that sent its result or died."""
    try:
        msg = worker.conn.recv()
    except (EOFError, OSError):
        outcome: JobResult | BuildError = _death(job, worker.exitcode(), os.path.join(worker.workdir,
                                                                                      DIAGNOSTICS_FILE))
    else:
        outcome = msg[1] if msg[0] == "ok" else ERROR_CLASSES.get(msg[1], CompileError)(msg[2])
    worker.close()
    return outcome
