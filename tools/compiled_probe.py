"""Per-call CPU time of the compiled and the Python launch paths on this machine, without a GPU.

    python3 tools/compiled_probe.py [--rounds 7] [--calls 20000] [--json OUT]

The driver is faked (tools/runtime_ab.py's fake: device ordinal -1, so CPU torch tensors take both
paths' inline tensor reads with their device and dtype checks). The Python path calls the fake's
do-nothing Python ``cuLaunchKernel``; the compiled path calls do-nothing C functions that this probe
compiles with ``cc`` into a temporary directory (a development tool: tmlr itself never compiles at run
time) and hands out through the fake's ``cuGetProcAddress``. So each figure is the per-call cost of
the path itself, without the driver's own work. Measured: ``kernel(1, *args)`` of nop (no arguments),
nop_args (5 tensors, 9 ints, 5 constexprs left out) and add4 (3 tensors and an int), checks on, and
``family(1, *args)`` of tests/gpu/artifacts/add_family next to a direct call of the variant it picks.
A round measures each path once (the order alternating), each figure is the median of 9 bursts;
printed: per measure and path, the median [min-max] over the rounds.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tools"))

from runtime_ab import ARTIFACTS, NOP_ARGS_INTS, fake_driver  # noqa: E402

_CONTEXT = 0x5A5A000  # runtime_ab's fake context
_STUBS = f"""
typedef unsigned long long u64;
int ctx(void **out) {{ *out = (void *){_CONTEXT}ULL; return 0; }}
int launch(void *f, unsigned a, unsigned b, unsigned c, unsigned d, unsigned e, unsigned g, unsigned s, void *st, void **kp, void **x) {{ return 0; }}
int launch_ex(void *config, void *f, void **kp, void **x) {{ return 0; }}
int alloc(u64 *out, unsigned long n, void *st) {{ *out = 0x100000; return 0; }}
int release(u64 p, void *st) {{ return 0; }}
"""


def stub_driver(tmp: str) -> Any:
    """runtime_ab's fake driver, with int function handles and cuGetProcAddress giving C stubs."""
    src, lib = os.path.join(tmp, "stubs.c"), os.path.join(tmp, "stubs.so")
    with open(src, "w") as f:
        f.write(_STUBS)
    subprocess.run([os.environ.get("CC", "cc"), "-O2", "-shared", "-fPIC", src, "-o", lib], check=True)
    stubs = ctypes.CDLL(lib)
    names = {"cuCtxGetCurrent": "ctx", "cuLaunchKernel": "launch", "cuLaunchKernelEx": "launch_ex",
             "cuMemAllocAsync": "alloc", "cuMemFreeAsync": "release"}
    drv = fake_driver()
    drv.cuModuleGetFunction = lambda module, name: (0, 0xF00)
    drv.cuGetProcAddress = lambda symbol, version, flags: (0, ctypes.cast(getattr(stubs, names[symbol.decode()]), ctypes.c_void_p).value, 0)
    drv.stubs = stubs  # kept alive with the driver
    return drv


def per_call(call: Any, args: list[Any], calls: int) -> float:
    for _ in range(2000):
        call(1, *args)
    samples, pc = [], time.perf_counter
    for _ in range(9):
        t0 = pc()
        for _ in range(calls // 9):
            call(1, *args)
        samples.append((pc() - t0) / (calls // 9) * 1e9)
    return statistics.median(samples)


def measure(compiled_on: bool, tmp: str, calls: int) -> dict[str, float]:
    """ns per call of each workload, with kernels planned for one path (fresh copies: the load cache)."""
    import torch

    import tmlr_runtime as tr
    from tmlr_runtime.launch import compiled

    compiled.enabled = compiled_on
    where = os.path.join(tmp, "compiled" if compiled_on else "python", str(time.perf_counter_ns()))
    tensors = [torch.empty(1024) for _ in range(5)]
    out = {}
    for name, args in (("nop", []), ("nop_args", tensors + NOP_ARGS_INTS), ("add4", tensors[:3] + [1024])):
        k = tr.Kernel.load(shutil.copytree(os.path.join(ARTIFACTS, name), os.path.join(where, name)))
        assert (k._compiled is not None) == compiled_on
        out[f"{name} (ns)"] = per_call(k, args, calls)
    family = tr.Kernel.load(shutil.copytree(os.path.join(ROOT, "tests", "gpu", "artifacts", "add_family"), os.path.join(where, "family")),
                            tuning="table", fallback="default")
    args = tensors[:3] + [1024]
    out["family add (ns)"] = per_call(family, args, calls)
    out["its variant (ns)"] = per_call(family.choose(*args).kernel, args, calls)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    from tmlr_runtime import driver

    with tempfile.TemporaryDirectory() as tmp:
        drv = stub_driver(tmp)
        driver.PROCESS = driver.Process(api=drv, initialised=True)
        runs: dict[str, list[dict[str, float]]] = {"compiled": [], "python": []}
        for r in range(a.rounds):
            for which in (("compiled", "python") if r % 2 == 0 else ("python", "compiled")):
                runs[which].append(measure(which == "compiled", tmp, a.calls))
    report: dict[str, Any] = {"rounds": a.rounds, "calls": a.calls, "measures": {}}
    for m in runs["compiled"][0]:
        row = {w: {"median": statistics.median(v), "min": min(v), "max": max(v)} for w in runs for v in [[run[m] for run in runs[w]]]}
        report["measures"][m] = row
        print(f"{m:20s} " + "  ".join(f"{w} {row[w]['median']:7.0f} [{row[w]['min']:.0f}-{row[w]['max']:.0f}]" for w in runs)
              + f"  compiled/python {row['compiled']['median'] / row['python']['median']:.2f}")
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
