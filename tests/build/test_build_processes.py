"""Compile workers (tmlr_build/builder/workers.py): a fresh process per task from multiprocessing's
forkserver, errors pickled back, a crash pinned on its own task, the caller's script never run
again, nothing left running."""
from __future__ import annotations

import multiprocessing
import os
import pickle
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tmlr_build.builder.workers import Task, run_task, run_tasks
from tmlr_build.common import errors as E

ROOT = Path(__file__).resolve().parents[2]
ADD = f"{ROOT}/examples/kernels/vector_add.py:add"
ADD_SIG = "*fp32:16, *fp32:16, *fp32:16, i32, 1024"
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))


# Tasks run "module:function"(*args, workdir) in the worker; these stand in for compile-side functions.
def _pid(workdir: str) -> int:
    return os.getpid()


def _die(signame: str, workdir: str) -> None:
    with open(os.path.join(workdir, "stderr.log"), "w") as f:
        f.write("LLVM ERROR: boom\n")
    os.kill(os.getpid(), getattr(signal, signame))


@pytest.mark.parametrize("cls", sorted(E.ERROR_CLASSES.values(), key=lambda c: c.__name__))
def test_every_error_class_pickles_across_processes(cls: type[E.BuildError]) -> None:
    error = cls("what went wrong; what to do")
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is cls and str(back) == str(error)


def test_several_failures_keep_each_error_when_pickled() -> None:
    error = E.BuildFailedError("two failed", [E.InputError("a"), E.CompilerCrashError("b")])
    back = pickle.loads(pickle.dumps(error))
    assert [(type(e), str(e)) for e in back.errors] == [(E.InputError, "a"), (E.CompilerCrashError, "b")]


def test_a_task_returns_its_result_or_raises_its_error() -> None:
    workdir = run_task(Task("os.path:basename", (), "base"))
    assert workdir.startswith("tmlr-build-")  # the scratch folder the parent made (and removed)
    # A BuildError raised in the worker arrives as itself (class and message).
    with pytest.raises(E.TritonVersionError, match="knows the kernel ABI of Triton 3.3, 3.4, .*, 3.9 only"):
        run_task(Task("tmlr_build.common.triton_check:check_triton_version", (), "version"))
    # Anything else is a tmlr-build bug or an unexpected Triton failure: a CompileError with the trace.
    with pytest.raises(E.CompileError, match="t1: unexpected TypeError"):
        run_task(Task("operator:truediv", (1,), "t1"))


def test_each_task_gets_a_fresh_process_and_a_crash_stays_with_its_task() -> None:
    pids = [Task(f"{__name__}:_pid", (), f"p{i}") for i in range(3)]
    crash = Task(f"{__name__}:_die", ("SIGKILL",), "k.py:k for capability 90")
    out = run_tasks([pids[0], crash, pids[1], pids[2]], max_workers=2)
    assert len({out[0], out[2], out[3], os.getpid()}) == 4
    assert isinstance(out[1], E.CompilerCrashError)
    assert str(out[1]).startswith("k.py:k for capability 90: Triton/LLVM crashed (SIGKILL)")
    assert str(out[1]).endswith("Last compiler output:\nLLVM ERROR: boom")


def test_a_script_without_main_guard_builds_and_is_not_run_again(tmp_path: Path) -> None:
    # multiprocessing would run the caller's main script again in every child; workers must not.
    script = tmp_path / "script.py"
    script.write_text(f"import os\nopen('runs.txt', 'a').write(f'{{os.getpid()}}\\n')\n"
                      f"from tmlr_build import BuildConfig, build, parse_arch_list, request\n"
                      f"build([request({ADD!r}, signature={ADD_SIG!r})], BuildConfig(out='out', "
                      f"archs=parse_arch_list('80,90'), progress=False))\n")
    for argv, stdin in (([str(script)], None), (["-"], script.read_text())):  # a file, and `python -`
        (tmp_path / "runs.txt").unlink(missing_ok=True)
        done = subprocess.run([sys.executable, *argv], cwd=tmp_path, env=ENV, input=stdin, capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert len((tmp_path / "runs.txt").read_text().split()) == 1
        assert (tmp_path / "out" / "add" / "add.sm_90a.cubin").is_file()


def test_a_worker_does_not_outlive_a_killed_build(tmp_path: Path) -> None:
    (tmp_path / "slow.py").write_text("import os, time\nopen('worker.pid', 'w').write(str(os.getpid()))\n"
                                      "time.sleep(120)\n")
    proc = subprocess.Popen([sys.executable, "-m", "tmlr_build", f"{tmp_path}/slow.py:k", "-o", str(tmp_path / "o"),
                             "--arch", "80"], env=ENV, cwd=ROOT, stderr=subprocess.DEVNULL)
    pid_file = tmp_path / "worker.pid"
    deadline = time.monotonic() + 60
    while not (pid_file.is_file() and pid_file.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    worker = int(pid_file.read_text())
    proc.kill()  # SIGKILL: no clean-up of any kind in tmlr-build
    proc.wait()
    deadline = time.monotonic() + 20
    while _running(worker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _running(worker)


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _build_in(result: "multiprocessing.Queue[str]") -> None:
    try:
        run_task(Task("os.path:basename", (), "base"))
    except E.BuildError as e:
        result.put(f"{type(e).__name__}: {e}")


def test_a_daemonic_process_gets_a_clear_error() -> None:
    ctx = multiprocessing.get_context("spawn")
    result = ctx.Queue()
    daemon = ctx.Process(target=_build_in, args=(result,), daemon=True)
    daemon.start()
    message = result.get(timeout=60)
    daemon.join()
    assert message.startswith("UsageError: ") and "ProcessPoolExecutor" in message


def test_a_deep_tmpdir_does_not_stop_the_build(tmp_path: Path) -> None:
    # The server's socket is named in the temporary folder, and a Unix socket path is short (107 bytes).
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    done = subprocess.run([sys.executable, "-m", "tmlr_build", ADD, "--signature", ADD_SIG, "-o", str(tmp_path / "o"),
                           "--arch", "90", "-q"], env=dict(ENV, TMPDIR=str(deep)), cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "o" / "add" / "add.sm_90a.cubin").is_file()


def test_tmlr_build_leaves_no_process_holding_its_output(tmp_path: Path) -> None:
    # The compile server outlives tmlr-build for a moment; holding its stdout/stderr, it would make a
    # caller that reads them to the end (subprocess.run(capture_output=True)) wait for its shutdown.
    proc = subprocess.Popen([sys.executable, "-m", "tmlr_build", ADD, "--signature", ADD_SIG, "-o", str(tmp_path / "o"),
                             "--arch", "90", "-q"], env=ENV, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    pipes = {f"pipe:[{os.fstat(f.fileno()).st_ino}]" for f in (proc.stdout, proc.stderr)}
    assert proc.wait(timeout=120) == 0
    holders = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            links = {os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")}
        except OSError:  # gone, or not ours to read
            continue
        if int(pid) != os.getpid() and links & pipes:
            holders.append(pid)
    proc.communicate()
    assert holders == []
