"""Launch per call and first ``Kernel.load`` of two runtime checkouts, in alternating rounds, on this CPU.

    python3 tools/runtime_ab.py BASE_DIR NEW_DIR [--rounds 7] [--calls 20000] [--loads 40] [--json OUT]

Each DIR holds a ``tmlr_runtime`` package (e.g. ``git archive e9a0270 tmlr_runtime | tar -x -C /tmp/base``).
A round runs each checkout once in a fresh child process, the order alternating between rounds, so that
load on a shared machine hits both alike. The CUDA driver is faked in the child (its launches return at
once, device ordinal -1 so that CPU torch tensors take the launcher's inline tensor path with its device
and dtype checks). A child reports:

- per call (ns): ``kernel(1, *args)`` of ``examples/artifacts/nop_args`` (5 tensors, 9 ints, 5 constexprs
  left out) and ``add4`` (3 tensors and an int, all assumed divisible by 16), the fastest of 30 bursts of
  ``--calls``/30 calls (on a shared machine the fastest burst is the one least disturbed);
- first load (us): ``Kernel.load`` of fresh copies of ``add4`` and ``nop_args`` (the module cache cleared,
  so the cubin is read and hashed each time), the median over ``--loads`` copies.

``--gpu`` (a GPU machine): the real driver and CUDA tensors instead, each burst ending in a device
synchronize; with ``TMLR_PURE_PYTHON=1`` in the environment both checkouts take the Python launch path.

Printed, and written with ``--json``: per measure and checkout, the median [min-max] over the rounds, and
NEW / BASE of the medians.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from types import SimpleNamespace
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARTIFACTS = os.path.join(ROOT, "examples", "artifacts")
NOP_ARGS_INTS = [3, 5, 7, 11, 13, 17, 19, 23, 29]


def fake_driver() -> Any:
    """cuda-python's enums and structs with calls that return at once: device -1, an sm_90 H200's limits."""
    try:
        from cuda.bindings import driver as real
    except ImportError:
        from cuda import cuda as real  # type: ignore[no-redef]
    ok, DA, FA = (0,), real.CUdevice_attribute, real.CUfunction_attribute
    attrs = {DA.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: 9, DA.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: 0,
             DA.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: 1024, DA.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: 232448,
             DA.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: 2**31 - 1, DA.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: 65535,
             DA.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: 65535, DA.CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH: 1,
             DA.CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: 1}
    ctx = 0x5A5A000
    return SimpleNamespace(
        CUresult=real.CUresult, CUdevice_attribute=DA, CUfunction_attribute=FA, CUlaunchConfig=real.CUlaunchConfig,
        CUlaunchAttribute=real.CUlaunchAttribute, CUlaunchAttributeID=real.CUlaunchAttributeID,
        cuInit=lambda flags: ok, cuCtxGetCurrent=lambda: (0, ctx), cuCtxSetCurrent=lambda c: ok, cuCtxGetDevice=lambda: (0, -1),
        cuDeviceGet=lambda i: (0, i), cuDevicePrimaryCtxRetain=lambda dev: (0, ctx), cuDeviceGetName=lambda n, dev: (0, b"Fake H200\0"),
        cuDeviceGetAttribute=lambda a, dev: (0, attrs[a]), cuModuleLoadData=lambda data: (0, object()),
        cuModuleGetFunction=lambda mod, name: (0, object()), cuModuleUnload=lambda mod: ok,
        cuFuncGetAttribute=lambda a, f: (0, 32 if a == FA.CU_FUNC_ATTRIBUTE_NUM_REGS else 0), cuFuncSetAttribute=lambda f, a, v: ok,
        cuLaunchKernel=lambda f, gx, gy, gz, bx, by, bz, shm, stream, kp, extra: ok, cuLaunchKernelEx=lambda c, f, kp, extra: ok)


def install(drv: Any | None) -> Any:
    """Make the imported tmlr_runtime use ``drv`` (None: the real driver); returns a function that empties
    the module cache."""
    import tmlr_runtime

    if hasattr(tmlr_runtime, "_driver"):  # the flat layout (e9a0270)
        from tmlr_runtime import _driver, _modules

        if drv is not None:
            _driver._api, _driver._initialised = drv, True
            _driver._devices.clear()
        return _modules.clear
    from tmlr_runtime import driver

    from tmlr_runtime.launch import modules

    if drv is not None:
        driver.PROCESS = driver.Process(api=drv, initialised=True)
    return modules.clear  # unloads, as the flat layout's does: on a GPU, modules left loaded slow the next loads


def child(calls: int, loads: int, gpu: bool) -> dict[str, float]:
    import torch  # before the loads: the launcher reads torch tensors inline only when torch is imported

    import tmlr_runtime as tr

    clear_modules = install(None if gpu else fake_driver())
    out: dict[str, float] = {}
    tensors = [torch.empty(1024, device="cuda" if gpu else "cpu") for _ in range(5)]
    pc = time.perf_counter
    for name, args in (("nop_args", tensors + NOP_ARGS_INTS), ("add4", tensors[:3] + [1024])):
        k = tr.Kernel.load(os.path.join(ARTIFACTS, name))
        for _ in range(2000):
            k(1, *args)
        samples = []
        for _ in range(30):
            t0 = pc()
            for _ in range(calls // 30):
                k(1, *args)
            if gpu:
                torch.cuda.synchronize()
            samples.append((pc() - t0) / (calls // 30) * 1e9)
        out[f"call {name} (ns)"] = min(samples)
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("add4", "nop_args"):
            times = []
            for i in range(loads):
                d = shutil.copytree(os.path.join(ARTIFACTS, name), os.path.join(tmp, f"{name}-{i}"))
                clear_modules()
                t0 = pc()
                tr.Kernel.load(d)
                times.append((pc() - t0) * 1e6)
            out[f"first load {name} (us)"] = statistics.median(times)
    return out


def spread(values: list[float]) -> dict[str, float]:
    """The median, min and max of a measure's samples (rounds), as the results files give them."""
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def save(path: str | None, report: dict[str, Any]) -> None:
    """The results file ``path`` (--json), when one is named."""
    if path:
        with open(path, "w") as f:
            json.dump(report, f, indent=1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("base")
    ap.add_argument("new")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--loads", type=int, default=40)
    ap.add_argument("--json")
    ap.add_argument("--gpu", action="store_true", help="the real driver and CUDA tensors (a GPU machine), not the fake")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        print(json.dumps(child(a.calls, a.loads, a.gpu)))
        return 0
    runs: dict[str, list[dict[str, float]]] = {"base": [], "new": []}
    for r in range(a.rounds):
        for which in (("base", "new") if r % 2 == 0 else ("new", "base")):
            env = {**os.environ, "PYTHONPATH": os.path.abspath(getattr(a, which)), "PYTHONDONTWRITEBYTECODE": "1"}
            cmd = [sys.executable, os.path.abspath(__file__), a.base, a.new, "--child", "--calls", str(a.calls), "--loads", str(a.loads)] + ["--gpu"] * a.gpu
            runs[which].append(json.loads(subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout))
    report: dict[str, Any] = {"rounds": a.rounds, "calls": a.calls, "loads": a.loads, "gpu": a.gpu,
                              "TMLR_PURE_PYTHON": os.environ.get("TMLR_PURE_PYTHON"), "measures": {}}
    for measure in runs["base"][0]:
        row = {}
        for which in ("base", "new"):
            row[which] = spread([run[measure] for run in runs[which]])
        row["new/base"] = row["new"]["median"] / row["base"]["median"]
        report["measures"][measure] = row
        print(f"{measure:26s} base {row['base']['median']:9.1f} [{row['base']['min']:.1f}-{row['base']['max']:.1f}]  "
              f"new {row['new']['median']:9.1f} [{row['new']['min']:.1f}-{row['new']['max']:.1f}]  new/base {row['new/base']:.3f}")
    save(a.json, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
