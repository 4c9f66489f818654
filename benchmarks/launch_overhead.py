"""Host launch overhead per launch: tmlr against hand-written cuda-python and Triton, in one process.

    python benchmarks/launch_overhead.py [--artifacts DIR] [--json OUT.json]

DIR holds the tmlr artifacts ``nop``, ``nop_args`` and ``add4`` built from
``examples/kernels/launch_latency.py`` (committed in ``examples/artifacts``). Triton baselines use whatever
Triton the process imports (run once with 3.6.0 and once with ``TMLR_TRITON33=1`` for 3.3.1).

Every system launches the same workload in bursts short enough that the launch queue never fills
(200 launches, then a synchronize); systems are interleaved round-robin and the median over rounds
is reported, so drift on a shared machine hits all systems alike. Ratios are against
``handwritten``: a cuda-python ``cuLaunchKernelEx`` with a prebuilt config that builds its
``void**`` per call from the tensors' ``data_ptr()`` (what a user writes by hand). ``floor`` launches
a fully prebuilt parameter array (no per-call work at all) for reference.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import platform
import statistics
import sys
import time
from typing import Any, Callable

import torch
from cuda.bindings import driver as drv

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import tmlr_runtime  # noqa: E402

BURST = 200


def _c(value: Any, ty: str) -> Any:
    if ty.startswith("*"):
        return ctypes.c_uint64(value.data_ptr())
    return ctypes.c_int32(value)


def handwritten(fn: Any, grid: int, block: int, shared: int, types: list[str], n_hidden: int) -> Callable[..., None]:
    """A hand-written launcher: prebuilt CUlaunchConfig, per-call ctypes values and void**."""
    config = drv.CUlaunchConfig()
    config.gridDimX, config.gridDimY, config.gridDimZ = grid, 1, 1
    config.blockDimX, config.blockDimY, config.blockDimZ = block, 1, 1
    config.sharedMemBytes = shared
    config.hStream = 0
    config.numAttrs = 0
    n = len(types) + n_hidden
    arr_t = ctypes.c_void_p * max(n, 1)
    hidden = [ctypes.c_uint64(0) for _ in range(n_hidden)]

    def launch(*args: Any) -> None:
        vals = [_c(a, t) for a, t in zip(args, types)] + hidden
        arr = arr_t(*[ctypes.addressof(v) for v in vals])
        err, = drv.cuLaunchKernelEx(config, fn, ctypes.addressof(arr), 0)
        if err:
            raise RuntimeError(err)

    return launch


def floor(fn: Any, grid: int, block: int, shared: int, args: list[Any], types: list[str], n_hidden: int) -> Callable[[], None]:
    vals = [_c(a, t) for a, t in zip(args, types)] + [ctypes.c_uint64(0) for _ in range(n_hidden)]
    arr = (ctypes.c_void_p * max(len(vals), 1))(*[ctypes.addressof(v) for v in vals])
    addr = ctypes.addressof(arr)

    def launch() -> None:
        drv.cuLaunchKernel(fn, grid, 1, 1, block, 1, 1, shared, 0, addr, 0)

    launch._keep = (vals, arr)  # type: ignore[attr-defined]
    return launch


def measure(systems: dict[str, Callable[[], None]], rounds: int) -> dict[str, float]:
    """Median µs per launch for each system, interleaved round-robin."""
    samples: dict[str, list[float]] = {k: [] for k in systems}
    for f in systems.values():  # warm up: compile, load, first-call paths
        for _ in range(20):
            f()
    torch.cuda.synchronize()
    for _ in range(rounds):
        for name, f in systems.items():
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(BURST):
                f()
            samples[name].append((time.perf_counter() - t0) / BURST * 1e6)
    torch.cuda.synchronize()
    return {k: statistics.median(v) for k, v in samples.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--artifacts", default=os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "artifacts"))
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--json")
    ap.add_argument("--no-triton", action="store_true")
    args = ap.parse_args(argv)

    dev = torch.device("cuda")
    ts = [torch.empty(1024, device=dev) for _ in range(5)]
    ints = [3, 5, 7, 11, 13, 17, 19, 23, 29]
    x, y, out = (torch.randn(1024, device=dev) for _ in range(3))
    n = 1024
    workloads: dict[str, dict[str, Any]] = {
        "nop": {"args": [], "types": [], "constexprs": {}, "grid": 1},
        "nop_args": {"args": ts + ints, "types": ["*fp32"] * 5 + ["i32"] * 9, "constexprs": dict(c1=1, c2=2, c3=3, c4=4, c5=5), "grid": 1},
        "add4": {"args": [x, y, out, n], "types": ["*fp32"] * 3 + ["i32"], "constexprs": {"BLOCK": 1024}, "grid": 1},
    }
    triton = None
    if not args.no_triton:
        try:
            import triton  # noqa: F401

            import launch_latency as lk  # type: ignore[import-not-found]
        except Exception as e:  # noqa: BLE001
            print(f"(Triton baselines skipped: {e})")
            triton = None
    results: dict[str, Any] = {
        "device": torch.cuda.get_device_name(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda_bindings": tmlr_runtime._driver.bindings_version(),
        "triton": getattr(triton, "__version__", None),
        "date": time.strftime("%Y-%m-%d"),
        "burst": BURST,
        "rounds": args.rounds,
        "workloads": {},
    }
    for name, w in workloads.items():
        k = tmlr_runtime.Kernel.load(os.path.join(args.artifacts, name))
        kf = tmlr_runtime.Kernel.load(os.path.join(args.artifacts, name), checks=False)
        v = k.variant
        fn = k.function.function
        hidden = len(v.hidden_params)
        a = w["args"]
        hw = handwritten(fn, w["grid"], v.threads_per_block, v.shared, w["types"], hidden)
        systems: dict[str, Callable[[], None]] = {
            "floor": floor(fn, w["grid"], v.threads_per_block, v.shared, a, w["types"], hidden),
            "handwritten": lambda hw=hw, a=a: hw(*a),
            "tmlr": lambda k=k, a=a, g=w["grid"]: k(g, *a),
            "tmlr_nocheck": lambda k=kf, a=a, g=w["grid"]: k(g, *a),
        }
        if triton is not None:
            jit = getattr(lk, name)
            ce = w["constexprs"]
            g = (w["grid"],)
            compiled = jit[g](*a, **ce)
            systems["triton_jit"] = lambda jit=jit, a=a, ce=ce, g=g: jit[g](*a, **ce)
            # CompiledKernel takes every parameter, constexprs included (its launcher drops them)
            full = list(a) + list(ce.values())
            systems["triton_compiled"] = lambda c=compiled, a=full, g=(w["grid"], 1, 1): c[g](*a)
        med = measure(systems, args.rounds)
        base = med["handwritten"]
        row = {s: {"us": round(t, 3), "vs_handwritten": round(t / base, 3)} for s, t in med.items()}
        if "triton_jit" in med:
            row["tmlr"]["vs_triton_jit"] = round(med["tmlr"] / med["triton_jit"], 3)
            row["tmlr_nocheck"]["vs_triton_jit"] = round(med["tmlr_nocheck"] / med["triton_jit"], 3)
        results["workloads"][name] = row
        print(f"\n{name}  (µs per launch, median of {args.rounds} rounds of {BURST})")
        for s, r in row.items():
            extra = f"  vs triton_jit {r['vs_triton_jit']:.3f}" if "vs_triton_jit" in r else ""
            print(f"  {s:16s} {r['us']:7.2f}  vs handwritten {r['vs_handwritten']:.3f}{extra}")
    # correctness of the measured kernel
    out.zero_()
    tmlr_runtime.Kernel.load(os.path.join(args.artifacts, "add4"))(1, x, y, out, n)
    torch.cuda.synchronize()
    results["add4_correct"] = bool(torch.equal(out, x + y))
    print(f"\nadd4 result correct: {results['add4_correct']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "kernels"))
    sys.exit(main())
