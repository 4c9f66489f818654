"""The one compute-sanitizer report tests/sanitize.sh does not count (initcheck, uninitialized global reads in
tma_scale: TMA descriptors written by tensormap.cp_fenceproxy), and that every other report still fails it:
tests/sanitizer_log.py on made-up logs, then sanitize.sh end to end with a fake compute-sanitizer."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sanitizer_log import read

ROOT = Path(__file__).resolve().parents[1]


def report(kind: str, at: str) -> str:
    return (f"========= {kind}\n=========     at {at}\n=========     by thread (0,0,0) in block (1,0,0)\n"
            "=========     Address 0x7f0000000100\n=========     Saved host backtrace up to driver entry point at kernel launch time\n"
            "=========         Host Frame: cuLaunchKernel [0x2f3a1] in libcuda.so.1\n=========\n")


TMA_READ = report("Uninitialized __global__ memory read of size 8 bytes", "tma_scale+0x1f0 in /src/tma_scale.py:21")
TMA_READ_OLD = report("Uninitialized __global__ memory read of size 8 bytes", "0x1f0 in /src/tma_scale.py:21:tma_scale")
ADD_READ = report("Uninitialized __global__ memory read of size 4 bytes", "add+0x80 in /src/vector_add.py:9")
TMA_WRITE = report("Invalid __global__ write of size 4 bytes", "tma_scale+0x300 in /src/tma_scale.py:25")
TMA_PREFIX = report("Uninitialized __global__ memory read of size 8 bytes", "tma_scale_v2+0x1f0 in /src/x.py:3")


def log(*reports: str, not_printed: int = 0) -> str:
    n = len(reports) + not_printed
    tail = f"========= ERROR SUMMARY: {n} error{'s' if n != 1 else ''}\n"
    if not_printed:
        tail += f"========= ERROR SUMMARY: {not_printed} errors were not printed. Use --print-limit option to adjust the number of printed errors\n"
    return "========= COMPUTE-SANITIZER\n" + "".join(reports) + tail


@pytest.mark.parametrize("text,tool,expected", [
    (log(TMA_READ, TMA_READ, TMA_READ_OLD), "initcheck", (3, 3, [])),
    (log(TMA_READ, ADD_READ), "initcheck", (2, 1, ["Uninitialized __global__ memory read of size 4 bytes"])),
    (log(TMA_READ, TMA_WRITE), "initcheck", (2, 1, ["Invalid __global__ write of size 4 bytes"])),
    (log(TMA_PREFIX), "initcheck", (1, 0, ["Uninitialized __global__ memory read of size 8 bytes"])),
    (log(TMA_READ), "memcheck", (1, 0, ["Uninitialized __global__ memory read of size 8 bytes"])),
    (log(TMA_READ, not_printed=5), "initcheck", (6, 0, [])),
    (log(), "initcheck", (0, 0, [])),
    (log(TMA_READ) + log(TMA_READ, ADD_READ), "initcheck", (3, 2, ["Uninitialized __global__ memory read of size 4 bytes"])),
], ids=["only-known", "other-kernel", "other-kind", "kernel-name-prefix", "other-tool", "not-all-printed", "clean",
        "two-processes"])
def test_read(text: str, tool: str, expected: tuple[int, int, list[str]]) -> None:
    assert read(tool, text) == expected


FAKE_SANITIZER = r'''#!{python}
"""compute-sanitizer stand-in: tma_scale's known initcheck reports for the runtime GPU tests, plus FAKE_EXTRA's."""
import os, sys
sys.path.insert(0, {tests!r})
from test_sanitizer_log import ADD_READ, TMA_READ, log
args = sys.argv[1:]
if args == ["--help"]:
    print("--tool --port --max-connections --report-api-errors --print-limit --error-exitcode")
    sys.exit(0)
if args == ["--version"]:
    print("fake compute-sanitizer 2099.1")
    sys.exit(0)
tool = args[args.index("--tool") + 1]
if tool == "initcheck":
    assert "--print-limit" in args and "--error-exitcode" not in args, args
reports = []
if any("test_runtime_gpu.py" in a for a in args):
    reports = [TMA_READ] * 4 if tool == "initcheck" else []
    if os.environ.get("FAKE_EXTRA") == tool:
        reports.append(ADD_READ)
print(log(*reports), end="")
print("PASS fake" if any(a.endswith(".py") and "stages" in a for a in args) else "3 passed in 0.10s")
sys.exit(1 if reports and "--error-exitcode" in args else 0)
'''


def run_sanitize(tmp_path: Path, tools: str, extra: str = "") -> tuple[int, str]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    fake = tmp_path / "compute-sanitizer"
    fake.write_text(FAKE_SANITIZER.format(python=sys.executable, tests=str(ROOT / "tests")))
    fake.chmod(0o755)
    out = tmp_path / "out"
    env = dict(os.environ, COMPUTE_SANITIZER=str(fake), SANITIZE_FAMILY="sm90", OUT=str(out), FAKE_EXTRA=extra,
               PYTHON=sys.executable)
    p = subprocess.run(["bash", str(ROOT / "tests" / "sanitize.sh"), "--tools", tools], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=300)
    summary = (out / "sanitizer" / "summary.txt").read_text()
    return p.returncode, summary


@pytest.mark.skipif(shutil.which("bash") is None or shutil.which("timeout") is None, reason="needs bash and coreutils timeout")
def test_sanitize_discounts_only_the_known_report(tmp_path: Path) -> None:
    rc, summary = run_sanitize(tmp_path, "initcheck")
    assert rc == 0, summary
    initcheck_rt = [line for line in summary.splitlines() if line.startswith("initcheck pytest test_runtime_gpu.py")]
    assert len(initcheck_rt) == 2 and all(": 0 errors (4 known false reports not counted" in line
                                          for line in initcheck_rt), summary
    assert "-> PASS" in summary

    rc, summary = run_sanitize(tmp_path / "extra", "initcheck", extra="initcheck")
    assert rc == 1, summary
    assert "initcheck pytest test_runtime_gpu.py -k 'graph and not scratch_kernel': 1 errors (4 known false reports not counted" in summary
    assert "    ========= Uninitialized __global__ memory read of size 4 bytes" in summary
    assert "-> FAIL" in summary

    rc, summary = run_sanitize(tmp_path / "memcheck", "memcheck", extra="memcheck")
    assert rc == 1 and "memcheck pytest test_runtime_gpu.py -k 'graph': 1 errors [" in summary, summary


def test_reports_sharing_a_line_with_program_output_and_proc_address_probes() -> None:
    # seen on the H200: pytest's progress dots before the first report, and cuda-bindings' probes
    dotted = "......" + TMA_READ
    probe = ('========= Program hit CUDA_ERROR_INVALID_VALUE (error 1) due to "invalid argument" on CUDA API call '
             "to cuGetProcAddress_v2.\n=========     Saved host backtrace up to driver entry point at error\n")
    assert read("initcheck", dotted + "========= ERROR SUMMARY: 1 error\n")[:2] == (1, 1)
    assert read("memcheck", probe * 2 + "========= ERROR SUMMARY: 2 errors\n") == (2, 2, [])
