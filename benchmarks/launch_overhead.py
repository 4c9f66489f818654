"""Host launch overhead per launch: tmlr against hand-written cuda-python, cuda.core, CuPy and Triton, in one process.

    python benchmarks/launch_overhead.py [--artifacts DIR] [--json OUT.json] [--rounds N] [--graph N]
                                         [--no-triton] [--no-cupy] [--no-cuda-core] [--require-triton 3.6]

DIR holds the tmlr artifacts ``nop``, ``nop_args`` and ``add4`` built from
``examples/kernels/launch_latency.py`` (committed in ``examples/artifacts``). Triton baselines use whatever
Triton the process imports (the suite runs this once with 3.6.0 and once with 3.3.1).

Every system launches the same cubin (Triton's JIT its own compile of the same source) in bursts
short enough that the launch queue never fills (200 launches, then a synchronize); systems are
interleaved round-robin, every round is kept, and ratios are taken per round (so drift on a
shared machine hits all systems alike). The baseline is ``lean``: what a careful engineer writes
by hand with cuda-python (see :func:`lean`). ``naive`` is the hand-written launcher a first attempt
gives (ctypes objects, a new ``void**`` and ``cuLaunchKernelEx`` per call), for reference only.
``floor`` launches a fully prebuilt parameter array on the legacy stream (no per-call work at all).
``cuda_core`` (``cuda.core.launch``) and ``cupy`` (``RawModule(path=cubin).get_function``) get
their arguments prebuilt (ints as pointers / numpy scalars, CuPy arrays viewing the same memory),
so only their own launch path is timed. Every system's add4 result is checked.

``--graph N``: N launches of tmlr, lean and Triton's JIT are also captured into CUDA graphs and
the GPU time per kernel of a replay is reported, with each graph's nodes (see graphs.py).
"""
from __future__ import annotations

import argparse
import ctypes
import os
import platform
import struct
import sys
import time
import traceback
from typing import Any, Callable

import torch
from cuda.bindings import driver as drv

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import graphs  # noqa: E402
import tmlr_runtime  # noqa: E402
from add4_codegen import ptx_memory_ops  # noqa: E402
from bench_common import (  # noqa: E402
    ADD4_N,
    EXAMPLES,
    NOP_ARGS_INTS,
    error_text,
    guarded,
    ratio_stats,
    require_triton,
    stats,
    write_json,
)

BURST = 200
DEVICE = "cuda"
WORKLOADS = ("nop", "nop_args", "add4")
BASELINE = "lean"


def lean(name: str, fn: Any, block: int, shared: int, types: list[str], n_hidden: int, device: int) -> Callable[..., None]:
    """The best launcher a careful engineer writes by hand for one kernel with cuda-python:
    ``run(grid, *args)``, the grid an int as in tmlr's fast path.

    Prebuilt once: a parameter buffer laid out like the kernel's C parameters (native alignment),
    a ``void**`` of its fields' addresses, and a ``struct`` packing the kernel's own parameters
    (Triton's hidden trailing pointers stay NULL). Per call, the same work as tmlr's default path
    minus its checks: each tensor's ``data_ptr()``, one ``pack_into``, torch's current stream
    (``torch._C._cuda_getCurrentRawStream``: what ``torch.cuda.current_stream().cuda_stream``
    returns without building a Stream object; tmlr uses the same call), ``cuLaunchKernel``, and
    a check of its result.
    """
    fields = "".join("Q" if t.startswith("*") else "i" for t in types)  # the workloads take pointers and i32
    layout = "@" + fields + "Q" * n_hidden
    buf = ctypes.create_string_buffer(max(struct.calcsize(layout), 1))
    offsets = [struct.calcsize(layout[: i + 2]) - struct.calcsize(layout[i + 1]) for i in range(len(layout) - 1)]
    ptrs = (ctypes.c_void_p * max(len(offsets), 1))(*[ctypes.addressof(buf) + o for o in offsets])
    kp = ctypes.addressof(ptrs)
    pack = struct.Struct("@" + fields).pack_into  # the kernel's own parameters come first
    launch = drv.cuLaunchKernel
    stream = torch._C._cuda_getCurrentRawStream

    if name == "nop":
        def run(grid: int) -> None:
            err, = launch(fn, grid, 1, 1, block, 1, 1, shared, stream(device), kp, 0)
            if err:
                raise RuntimeError(f"cuLaunchKernel: {err}")
    elif name == "add4":
        def run(grid: int, x: torch.Tensor, y: torch.Tensor, out: torch.Tensor, n: int) -> None:  # type: ignore[misc]
            pack(buf, 0, x.data_ptr(), y.data_ptr(), out.data_ptr(), n)
            err, = launch(fn, grid, 1, 1, block, 1, 1, shared, stream(device), kp, 0)
            if err:
                raise RuntimeError(f"cuLaunchKernel: {err}")
    elif name == "nop_args":
        def run(grid: int, t1: torch.Tensor, t2: torch.Tensor, t3: torch.Tensor, t4: torch.Tensor, t5: torch.Tensor,  # type: ignore[misc]
                i1: int, i2: int, i3: int, i4: int, i5: int, i6: int, i7: int, i8: int, i9: int) -> None:
            pack(buf, 0, t1.data_ptr(), t2.data_ptr(), t3.data_ptr(), t4.data_ptr(), t5.data_ptr(), i1, i2, i3, i4, i5, i6, i7, i8, i9)
            err, = launch(fn, grid, 1, 1, block, 1, 1, shared, stream(device), kp, 0)
            if err:
                raise RuntimeError(f"cuLaunchKernel: {err}")
    else:
        raise KeyError(name)
    run._keep = (buf, ptrs)  # type: ignore[attr-defined]
    return run


def _c(value: Any, ty: str) -> Any:
    if ty.startswith("*"):
        return ctypes.c_uint64(value.data_ptr())
    return ctypes.c_int32(value)


def naive(fn: Any, grid: int, block: int, shared: int, types: list[str], n_hidden: int, device: int) -> Callable[..., None]:
    """A first hand-written attempt (for reference, not the baseline): a prebuilt CUlaunchConfig,
    but ctypes values and a new ``void**`` built per call, and ``cuLaunchKernelEx``."""
    config = drv.CUlaunchConfig()
    config.gridDimX, config.gridDimY, config.gridDimZ = grid, 1, 1
    config.blockDimX, config.blockDimY, config.blockDimZ = block, 1, 1
    config.sharedMemBytes = shared
    config.numAttrs = 0
    arr_t = ctypes.c_void_p * max(len(types) + n_hidden, 1)
    hidden = [ctypes.c_uint64(0) for _ in range(n_hidden)]
    stream = torch._C._cuda_getCurrentRawStream

    def launch(*args: Any) -> None:
        vals = [_c(a, t) for a, t in zip(args, types)] + hidden
        arr = arr_t(*[ctypes.addressof(v) for v in vals])
        config.hStream = stream(device)
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


def measure(systems: dict[str, Callable[[], None]], rounds: int, errors: dict[str, str]) -> dict[str, list[float]]:
    """µs per launch of each system in every round, interleaved round-robin; a system that raises
    is dropped (its error recorded) and the others go on."""
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
    return {k: v for k, v in samples.items() if v and k in live}


def launch_rows(samples: dict[str, list[float]]) -> dict[str, dict[str, Any]]:
    """Per system: µs per launch (median, min, max, samples) and per-round ratios to the
    baseline and to Triton's JIT."""
    rows: dict[str, dict[str, Any]] = {}
    for s, v in samples.items():
        row: dict[str, Any] = {"us": stats(v, 3)}
        for ref, key in ((BASELINE, "vs_lean"), ("triton_jit", "vs_triton_jit")):
            if ref in samples:
                row[key] = ratio_stats(v, samples[ref], 3)
        rows[s] = row
    return rows


def graph_section(systems: dict[str, Callable[[], None]], nospec: Callable[[], None] | None, n: int, rounds: int,
                  errors: dict[str, str]) -> dict[str, Any]:
    """Replays of CUDA graphs of ``n`` launches: tmlr, lean and Triton's JIT captured by torch,
    lean also captured through the driver, and (add4) Triton's JIT with ``n`` not specialized."""
    capture: dict[str, tuple[str, Callable[[], None]]] = {s: ("torch", systems[s]) for s in ("tmlr", BASELINE, "triton_jit") if s in systems}
    if BASELINE in systems:
        capture["lean_driver_capture"] = ("driver", systems[BASELINE])
    if nospec is not None:
        capture["triton_jit_nospec"] = ("torch", nospec)
    replays: dict[str, Callable[[], None]] = {}
    doc: dict[str, Any] = {}
    for s, (how, f) in capture.items():
        make = graphs.torch_graph if how == "torch" else graphs.driver_graph
        made = guarded(errors, s, lambda make=make, f=f: make(f, n))
        if made is not None:
            replays[s], nodes = made
            doc[s] = {"capture": how, "nodes": nodes}
    for s, v in graphs.replay_samples(replays, n, rounds, errors).items():
        doc[s]["us_per_kernel"] = stats(v)
    print(f"  CUDA graph of {n} launches, GPU µs per kernel (median): "
          + ", ".join(f"{s} {d['us_per_kernel']['median']:.3f}" for s, d in doc.items() if "us_per_kernel" in d)
          + "".join(f"  {s} ERROR {e}" for s, e in errors.items()))
    for s, d in doc.items():
        print(f"    {s:22s} nodes: {d['nodes']}")
    return doc


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
    device = torch.cuda.current_device()
    ts = [torch.empty(1024, device=dev) for _ in range(5)]
    n = ADD4_N
    x, y, out = (torch.randn(n, device=dev) for _ in range(3))
    workloads: dict[str, dict[str, Any]] = {
        "nop": {"args": [], "constexprs": {}, "grid": 1},
        "nop_args": {"args": ts + NOP_ARGS_INTS, "constexprs": dict(c1=1, c2=2, c3=3, c4=4, c5=5), "grid": 1},
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
        "cuda_bindings": __import__("cuda.bindings").bindings.__version__,
        "triton": getattr(triton, "__version__", None),
        "date": time.strftime("%Y-%m-%d"),
        "burst": BURST,
        "rounds": args.rounds,
        "baseline": BASELINE,
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
            lean_run = lean(name, fn, block, shared, types, hidden, device)
            naive_run = naive(fn, grid, block, shared, types, hidden, device)
            makers: dict[str, Callable[[], Callable[[], None]]] = {
                "floor": lambda: floor(fn, grid, block, shared, a, types, hidden),
                BASELINE: lambda: (lambda: lean_run(grid, *a)),
                "naive": lambda: (lambda: naive_run(*a)),
                "tmlr": lambda: (lambda: k(grid, *a)),
                "tmlr_nocheck": lambda: (lambda: kf(grid, *a)),
            }
            if not args.no_cuda_core:
                makers["cuda_core"] = lambda: cuda_core_launcher(cubin, v.entry, grid, block, shared, a, types, hidden)
            if not args.no_cupy:
                makers["cupy"] = lambda: cupy_launcher(cubin, v.entry, grid, block, shared, a, types, hidden)
            nospec = None
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
                if name == "add4":  # Triton's JIT without specializing n = 1024 as divisible by 16
                    jit_nospec = guarded(errors, "triton_jit_nospec", lambda: triton.jit(do_not_specialize=["n"])(jit.fn))
                    if jit_nospec is not None:
                        nospec = lambda: jit_nospec[g](*a, **ce)  # noqa: E731
                        results["add4_codegen"] = guarded(errors, "add4_codegen", lambda: {
                            "triton_jit": ptx_memory_ops(jit[g](*a, **ce).asm["ptx"]),
                            "triton_jit_nospec": ptx_memory_ops(jit_nospec[g](*a, **ce).asm["ptx"])})
            systems = {}
            for s, make in makers.items():
                f = guarded(errors, s, make)
                if f is not None:
                    systems[s] = f
            row = launch_rows(measure(systems, args.rounds, errors))
            results["workloads"][name] = row
            print(f"\n{name}  (µs per launch, median [min–max] of {args.rounds} rounds of {BURST}; ratios per round)")
            for s, r in row.items():
                us = r["us"]
                ratios = "".join(f"  {key} {r[key]['median']:.3f}" for key in ("vs_lean", "vs_triton_jit") if key in r)
                print(f"  {s:16s} {us['median']:7.2f} [{us['min']:.2f}–{us['max']:.2f}]{ratios}")
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
                if "add4_codegen" in results:
                    print(f"  add4 global memory ops in Triton's PTX: {results['add4_codegen']}")
            if args.graph:
                gerr: dict[str, str] = {}
                graph_doc["errors"][name] = gerr
                live = {s: f for s, f in systems.items() if s not in errors}
                graph_doc["workloads"][name] = graph_section(live, nospec, args.graph, args.graph_rounds, gerr)
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
