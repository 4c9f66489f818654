"""Host launch overhead per launch: tmlr against hand-written cuda-python, cuda.core, CuPy and Triton, in one process.

    python benchmarks/launch_overhead.py [--artifacts DIR] [--json OUT.json] [--rounds N] [--graph N]
                                         [--no-triton] [--no-cupy] [--no-cuda-core] [--require-triton 3.6]

DIR holds the tmlr artifacts ``nop``, ``nop_args`` and ``add4`` built from
``examples/kernels/launch_latency.py`` (committed in ``examples/artifacts``). Triton baselines use whatever
Triton the process imports (run once with 3.6.0 and once with ``TMLR_TRITON33=1`` for 3.3.1).

Every system launches the same cubin (Triton's JIT its own compile of the same source) in bursts
short enough that the launch queue never fills (200 launches, then a synchronize); systems are
interleaved round-robin and the median over rounds is reported, so drift on a shared machine hits
all systems alike. Ratios are against ``handwritten``: a cuda-python ``cuLaunchKernelEx`` with a
prebuilt config that builds its ``void**`` per call from the tensors' ``data_ptr()`` (what a user
writes by hand). ``floor`` launches a fully prebuilt parameter array (no per-call work at all).
``cuda_core`` (``cuda.core.launch``) and ``cupy`` (``RawModule(path=cubin).get_function``) get
their arguments prebuilt (ints as pointers / numpy scalars, CuPy arrays viewing the same memory),
so only their own launch path is timed. Every system's add4 result is checked.

``--graph N``: tmlr and Triton's JIT are also captured, N launches into one CUDA graph
(``torch.cuda.graph``), and the GPU time per kernel of a replay is reported (median of rounds).
"""
from __future__ import annotations

import argparse
import ctypes
import os
import platform
import sys
import time
import traceback
from typing import Any, Callable

import torch
from cuda.bindings import driver as drv

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tmlr_runtime  # noqa: E402
from bench_common import ADD4_N, EXAMPLES, NOP_ARGS_INTS, error_text, guarded, median, require_triton, write_json  # noqa: E402

BURST = 200
DEVICE = "cuda"
WORKLOADS = ("nop", "nop_args", "add4")


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


def cuda_core_launcher(cubin: str, entry: str, grid: int, block: int, shared: int, args: list[Any], types: list[str],
                       n_hidden: int) -> Callable[[], None]:
    """``cuda.core.launch`` of the same cubin: pointers as ints, i32 as numpy scalars, hidden params 0."""
    try:
        from cuda.core import Device, LaunchConfig, ObjectCode, launch
    except ImportError:
        from cuda.core.experimental import Device, LaunchConfig, ObjectCode, launch  # cuda.core < 0.4
    import numpy as np

    dev = Device(torch.cuda.current_device())
    dev.set_current()
    with open(cubin, "rb") as f:
        kernel = ObjectCode.from_cubin(f.read()).get_kernel(entry)
    config = LaunchConfig(grid=grid, block=block, shmem_size=shared)
    stream = dev.default_stream
    kargs = [a.data_ptr() if t.startswith("*") else np.int32(a) for a, t in zip(args, types)] + [0] * n_hidden

    def run() -> None:
        launch(stream, config, kernel, *kargs)

    return run


def cupy_launcher(cubin: str, entry: str, grid: int, block: int, shared: int, args: list[Any], types: list[str],
                  n_hidden: int) -> Callable[[], None]:
    """CuPy ``RawModule(path=cubin).get_function(entry)``: CuPy arrays over the same memory, numpy
    i32 scalars, a numpy uint64 0 for each hidden pointer (8 bytes, NULL)."""
    import cupy
    import numpy as np

    fn = cupy.RawModule(path=cubin).get_function(entry)
    if shared > 48 * 1024:
        fn.max_dynamic_shared_size_bytes = shared
    kargs = tuple([cupy.asarray(a) if t.startswith("*") else np.int32(a) for a, t in zip(args, types)]
                  + [np.uint64(0)] * n_hidden)
    g, b = (grid, 1, 1), (block, 1, 1)

    def run() -> None:
        fn(g, b, kargs, shared_mem=shared)

    run._keep = kargs  # type: ignore[attr-defined]
    return run


def measure(systems: dict[str, Callable[[], None]], rounds: int, errors: dict[str, str]) -> dict[str, float]:
    """Median µs per launch for each system, interleaved round-robin; a system that raises is
    dropped (its error recorded) and the others go on."""
    samples: dict[str, list[float]] = {k: [] for k in systems}
    live = dict(systems)
    for name, f in list(live.items()):  # warm up: compile, load, first-call paths

        def warm(f: Callable[[], None] = f) -> bool:
            for _ in range(20):
                f()
            torch.cuda.synchronize()
            return True

        if not guarded(errors, name, warm, False):
            del live[name]
    for _ in range(rounds):
        for name, f in list(live.items()):
            torch.cuda.synchronize()
            try:
                t0 = time.perf_counter()
                for _ in range(BURST):
                    f()
                samples[name].append((time.perf_counter() - t0) / BURST * 1e6)
            except Exception as e:  # noqa: BLE001
                errors[name] = error_text(e)
                del live[name]
    torch.cuda.synchronize()
    return {k: median(v) for k, v in samples.items() if v and k in live}


def graph_replay(systems: dict[str, Callable[[], None]], n: int, rounds: int, errors: dict[str, str]) -> dict[str, float]:
    """GPU µs per kernel of a CUDA graph holding ``n`` launches of each system (median of rounds)."""
    graphs: dict[str, Any] = {}
    for name, f in systems.items():

        def capture(f: Callable[[], None] = f) -> Any:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):  # warm outside the capture, as torch recommends
                for _ in range(3):
                    f()
            torch.cuda.synchronize()
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                for _ in range(n):
                    f()
            g.replay()
            torch.cuda.synchronize()
            return g

        g = guarded(errors, name, capture)
        if g is not None:
            graphs[name] = g
    samples: dict[str, list[float]] = {k: [] for k in graphs}
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(rounds):
        for name, g in graphs.items():
            e0.record()
            g.replay()
            e1.record()
            e1.synchronize()
            samples[name].append(e0.elapsed_time(e1) * 1000.0 / n)
    return {k: median(v) for k, v in samples.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--artifacts", default=os.path.join(EXAMPLES, "artifacts"))
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--graph", type=int, default=0, metavar="N", help="also time CUDA-graph replay of N launches (0: off)")
    ap.add_argument("--graph-rounds", type=int, default=20)
    ap.add_argument("--json")
    ap.add_argument("--no-triton", action="store_true")
    ap.add_argument("--no-cupy", action="store_true")
    ap.add_argument("--no-cuda-core", action="store_true")
    ap.add_argument("--require-triton", metavar="X.Y", help="exit unless the importable Triton is X.Y.*")
    args = ap.parse_args(argv)
    if not args.no_triton:
        require_triton(args.require_triton)

    dev = torch.device(DEVICE)
    ts = [torch.empty(1024, device=dev) for _ in range(5)]
    ints = NOP_ARGS_INTS
    n = ADD4_N
    x, y, out = (torch.randn(n, device=dev) for _ in range(3))
    workloads: dict[str, dict[str, Any]] = {
        "nop": {"args": [], "constexprs": {}, "grid": 1},
        "nop_args": {"args": ts + ints, "constexprs": dict(c1=1, c2=2, c3=3, c4=4, c5=5), "grid": 1},
        "add4": {"args": [x, y, out, n], "constexprs": {"BLOCK": 1024}, "grid": 1},
    }
    triton = lk = None
    setup_errors: dict[str, str] = {}
    if not args.no_triton:
        try:
            import triton

            import launch_latency as lk  # type: ignore[import-not-found]
        except Exception as e:  # noqa: BLE001
            print(f"(Triton baselines skipped: {e})")
            setup_errors["triton"] = error_text(e)
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
        "errors": {"setup": setup_errors},
        "add4_correct": {},
    }
    for mod, off in (("cupy", args.no_cupy), ("cuda.core", args.no_cuda_core)):
        if off:
            continue
        try:
            m = __import__(mod, fromlist=["_"])
            results[mod.replace(".", "_")] = str(getattr(m, "__version__", "unknown"))
        except Exception:  # noqa: BLE001
            results[mod.replace(".", "_")] = None
    graph_doc: dict[str, Any] = {"n": args.graph, "rounds": args.graph_rounds, "workloads": {}, "errors": {}}
    if args.graph:
        results["graph"] = graph_doc
    for name, w in workloads.items():
        errors: dict[str, str] = {}
        results["errors"][name] = errors
        try:
            path = os.path.join(args.artifacts, name)
            k = tmlr_runtime.Kernel.load(path)
            kf = tmlr_runtime.Kernel.load(path, checks=False)
            v = k.variant
            fn = k.function.function
            types = [p.type for p in k.metadata.runtime_params]
            hidden = len(v.hidden_params)
            cubin = os.path.join(path, v.cubin_file)
            block, shared, grid = v.threads_per_block, v.shared, w["grid"]
            a = w["args"]
            hw = handwritten(fn, grid, block, shared, types, hidden)
            makers: dict[str, Callable[[], Callable[[], None]]] = {
                "floor": lambda: floor(fn, grid, block, shared, a, types, hidden),
                "handwritten": lambda: (lambda: hw(*a)),
                "tmlr": lambda: (lambda: k(grid, *a)),
                "tmlr_nocheck": lambda: (lambda: kf(grid, *a)),
            }
            if not args.no_cuda_core:
                makers["cuda_core"] = lambda: cuda_core_launcher(cubin, v.entry, grid, block, shared, a, types, hidden)
            if not args.no_cupy:
                makers["cupy"] = lambda: cupy_launcher(cubin, v.entry, grid, block, shared, a, types, hidden)
            if triton is not None:
                jit = getattr(lk, name)
                ce = w["constexprs"]
                g = (grid,)
                makers["triton_jit"] = lambda: (lambda: jit[g](*a, **ce))

                def compiled_maker(jit: Any = jit, ce: dict[str, Any] = ce, g: tuple[int] = g) -> Callable[[], None]:
                    c = jit[g](*a, **ce)
                    # CompiledKernel takes every parameter, constexprs included (its launcher drops them)
                    full, g3 = list(a) + list(ce.values()), (grid, 1, 1)
                    return lambda: c[g3](*full)

                makers["triton_compiled"] = compiled_maker
            systems = {}
            for s, make in makers.items():
                f = guarded(errors, s, make)
                if f is not None:
                    systems[s] = f
            med = measure(systems, args.rounds, errors)
            base = med.get("handwritten")
            row: dict[str, dict[str, float]] = {}
            for s, t in med.items():
                row[s] = {"us": round(t, 3)}
                if base:
                    row[s]["vs_handwritten"] = round(t / base, 3)
                if "triton_jit" in med:
                    row[s]["vs_triton_jit"] = round(t / med["triton_jit"], 3)
            results["workloads"][name] = row
            print(f"\n{name}  (µs per launch, median of {args.rounds} rounds of {BURST})")
            for s, r in row.items():
                extra = f"  vs triton_jit {r['vs_triton_jit']:.3f}" if "vs_triton_jit" in r else ""
                hw_ratio = f"  vs handwritten {r['vs_handwritten']:.3f}" if "vs_handwritten" in r else ""
                print(f"  {s:16s} {r['us']:7.2f}{hw_ratio}{extra}")
            for s, e in errors.items():
                print(f"  {s:16s} ERROR {e}")
            if name == "add4":  # every system's result, so a wrong argument list cannot pass unnoticed
                for s, f in systems.items():
                    if s in errors:
                        continue

                    def check(f: Callable[[], None] = f) -> bool:
                        out.zero_()
                        torch.cuda.synchronize()
                        f()
                        torch.cuda.synchronize()
                        return bool(torch.equal(out, x + y))

                    results["add4_correct"][s] = guarded(errors, f"{s} (check)", check)
                print(f"  add4 correct: {results['add4_correct']}")
            if args.graph:
                gsys = {s: systems[s] for s in ("tmlr", "triton_jit") if s in systems and s not in errors}
                gerr: dict[str, str] = {}
                graph_doc["errors"][name] = gerr
                gmed = graph_replay(gsys, args.graph, args.graph_rounds, gerr)
                graph_doc["workloads"][name] = {s: {"us_per_kernel": round(t, 4)} for s, t in gmed.items()}
                print(f"  CUDA graph of {args.graph} launches, GPU µs per kernel: "
                      + ", ".join(f"{s} {t:.3f}" for s, t in gmed.items()) + "".join(f"  {s} ERROR {e}" for s, e in gerr.items()))
        except Exception as e:  # noqa: BLE001 - the next workload still runs
            traceback.print_exc()
            errors["(workload)"] = error_text(e)
            print(f"\n{name}: ERROR {errors['(workload)']}")
        if args.json:
            write_json(args.json, results)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(EXAMPLES, "kernels"))
    sys.exit(main())
