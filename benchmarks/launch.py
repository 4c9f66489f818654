"""Host cost per launch: tmlr against every other way to launch the same cubin, in one process.

    python benchmarks/launch.py [--rounds N] [--burst N] [--json OUT.json] [--artifacts DIR]
                                [--no-triton] [--no-cuda-core] [--no-c]

Each question is measured in interleaved rounds (benchmarks/harness.py): per round every system
makes ``--burst`` calls after a device synchronize outside the timing, so the time is the host's;
ratios are taken round by round. The Python systems are called from a plain ``for`` loop (its few
tens of ns per call are in their figures); the C floor runs its burst in C.

launch
  Workloads ``nop``, ``nop_args`` (5 pointers, 9 ints, 5 constexprs) and ``add4`` (1024 floats),
  the artifacts in examples/artifacts (source examples/kernels/launch_latency.py; ``--artifacts``:
  another build of them, e.g. by the Triton release this process imports). Systems:
  ``tmlr`` (``Kernel.load(dir)(1, *args)``, checks on), ``tmlr_nocheck`` (``checks=False``),
  ``lean`` (see :func:`lean`), ``c_floor`` (``cuLaunchKernel`` from C: benchmarks/launch_floor.c,
  compiled here with nvcc or cc and called through ctypes, one call per burst), ``cuda_core``
  (``cuda.core.launch()``, arguments prebuilt) and ``triton`` (this machine's Triton,
  ``kernel[grid](...)`` of the same source). Ratios tmlr / each other system. Every system's add4
  result is checked afterwards (facts: ``add4_correct``).
add_1m
  A 1M-element fp32 add (examples/artifacts/add): tmlr, ``torch.add(x, y, out=out)`` and a bare
  cuda-python ``cuLaunchKernel`` with a prebuilt parameter array.
graph
  CUDA graphs of ``--graph`` calls (default 200) of tmlr, lean and Triton's JIT per workload, each
  captured by ``torch.cuda.graph`` as users capture; GPU µs per kernel of a replay, timed with CUDA
  events, replays interleaved round by round.
dispatch
  A family call (tests/family_sample.py ``dtype_family``: 8 variants of ``add``) against the variant
  it picks, called directly; the added µs per call, round by round.

The machine record (benchmarks/harness.py) says which launch path ran.
"""
from __future__ import annotations

import argparse
import ctypes
import functools
import os
import shutil
import struct
import subprocess
import sys
import tempfile
from typing import Any, Callable

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [ROOT, HERE, os.path.join(ROOT, "tests"), os.path.join(ROOT, "examples", "kernels")]
import harness  # noqa: E402

ARTIFACTS = os.path.join(ROOT, "examples", "artifacts")
INTS = [3, 5, 7, 11, 13, 17, 19, 23, 29]
CONSTEXPRS: dict[str, dict[str, int]] = {"nop": {}, "nop_args": dict(c1=1, c2=2, c3=3, c4=4, c5=5), "add4": {"BLOCK": 1024}}
REFERENCES = ("c_floor", "lean", "cuda_core", "triton")
ADD_N = 1 << 20
Run = Callable[[int], None]


class Cubin:
    """What every launcher needs of one artifact, read through tmlr_runtime's public API."""

    def __init__(self, kernel: Any) -> None:
        v = kernel.variant
        self.path = os.path.join(kernel.directory, v.cubin_file)
        self.entry, self.block, self.shared = v.entry, v.threads_per_block, v.shared
        self.types = [p.type for p in kernel.metadata.runtime_params]
        self.hidden = len(v.hidden_params)

    def values(self, args: list[Any]) -> list[int]:
        """Each parameter as an int: pointers by address, Triton's hidden pointers NULL."""
        return [a.data_ptr() if t.startswith("*") else int(a) for a, t in zip(args, self.types)] + [0] * self.hidden


def cu_function(drv: Any, c: Cubin) -> Any:
    with open(c.path, "rb") as f:
        err, module = drv.cuModuleLoadData(f.read())
    if err:
        raise RuntimeError(f"cuModuleLoadData: {err}")
    err, fn = drv.cuModuleGetFunction(module, c.entry.encode())
    if err:
        raise RuntimeError(f"cuModuleGetFunction: {err}")
    return fn


def lean(drv: Any, torch: Any, c: Cubin, name: str, grid: int, device: int) -> Callable[..., None]:
    """The best launcher a careful engineer writes by hand with cuda-python, for one kernel:
    ``run(*args)``. Prebuilt once: the module and function, a parameter buffer laid out like the
    kernel's C parameters, a ``void**`` of its fields and a ``struct`` packing the kernel's own
    parameters (Triton's hidden trailing pointers stay NULL). Per call: each tensor's ``data_ptr()``,
    one ``pack_into``, torch's current stream, ``cuLaunchKernel`` and a check of its result."""
    fn, block, shared = cu_function(drv, c), c.block, c.shared
    fields = "".join("Q" if t.startswith("*") else "i" for t in c.types)  # the workloads take pointers and i32
    layout = "@" + fields + "Q" * c.hidden
    buf = ctypes.create_string_buffer(max(struct.calcsize(layout), 1))
    offsets = [struct.calcsize(layout[: i + 2]) - struct.calcsize(layout[i + 1]) for i in range(len(layout) - 1)]
    ptrs = (ctypes.c_void_p * max(len(offsets), 1))(*[ctypes.addressof(buf) + o for o in offsets])
    kp, pack, launch = ctypes.addressof(ptrs), struct.Struct("@" + fields).pack_into, drv.cuLaunchKernel
    stream = torch._C._cuda_getCurrentRawStream

    def nop() -> None:
        err, = launch(fn, grid, 1, 1, block, 1, 1, shared, stream(device), kp, 0)
        if err:
            raise RuntimeError(f"cuLaunchKernel: {err}")

    def add4(x: Any, y: Any, out: Any, n: int) -> None:
        pack(buf, 0, x.data_ptr(), y.data_ptr(), out.data_ptr(), n)
        err, = launch(fn, grid, 1, 1, block, 1, 1, shared, stream(device), kp, 0)
        if err:
            raise RuntimeError(f"cuLaunchKernel: {err}")

    def nop_args(t1: Any, t2: Any, t3: Any, t4: Any, t5: Any, i1: int, i2: int, i3: int, i4: int, i5: int, i6: int,
                 i7: int, i8: int, i9: int) -> None:
        pack(buf, 0, t1.data_ptr(), t2.data_ptr(), t3.data_ptr(), t4.data_ptr(), t5.data_ptr(), i1, i2, i3, i4, i5, i6, i7, i8, i9)
        err, = launch(fn, grid, 1, 1, block, 1, 1, shared, stream(device), kp, 0)
        if err:
            raise RuntimeError(f"cuLaunchKernel: {err}")

    run = {"nop": nop, "add4": add4, "nop_args": nop_args}[name]
    run._keep = (buf, ptrs)  # type: ignore[attr-defined]
    return run


def bare(drv: Any, c: Cubin, args: list[Any], grid: int, stream: int) -> Callable[[], Any]:
    """cuda-python ``cuLaunchKernel`` with everything prebuilt: the cost of the binding alone."""
    slots = (ctypes.c_uint64 * max(len(c.types) + c.hidden, 1))(*c.values(args))
    ptrs = (ctypes.c_void_p * len(slots))(*[ctypes.addressof(slots) + 8 * i for i in range(len(slots))])
    call = functools.partial(drv.cuLaunchKernel, cu_function(drv, c), grid, 1, 1, c.block, 1, 1, c.shared, stream,
                             ctypes.addressof(ptrs), 0)
    call._keep = (slots, ptrs)  # type: ignore[attr-defined]
    return call


def build_floor(tmp: str) -> ctypes.CDLL:
    """benchmarks/launch_floor.c as a shared library, compiled with nvcc or else the C compiler."""
    src, lib = os.path.join(HERE, "launch_floor.c"), os.path.join(tmp, "launch_floor.so")
    tried = []
    for cc, flags in ((shutil.which("nvcc"), ["-shared", "-Xcompiler", "-fPIC"]), (shutil.which("cc"), ["-shared", "-fPIC"])):
        if cc:
            p = subprocess.run([cc, "-O2", *flags, "-o", lib, src, "-ldl"], capture_output=True, text=True)
            if p.returncode == 0:
                floor = ctypes.CDLL(lib)
                floor.floor_open.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint, ctypes.c_uint, ctypes.c_int,
                                             ctypes.c_int, ctypes.POINTER(ctypes.c_uint64)]
                floor.floor_burst.argtypes = [ctypes.c_int, ctypes.c_uint, ctypes.c_uint64, ctypes.c_int]
                floor.floor_error.restype = ctypes.c_char_p
                return floor
            tried.append(f"{cc}: {p.stderr.strip()[-200:]}")
    raise RuntimeError("launch_floor.c did not compile: " + ("; ".join(tried) or "no nvcc or cc"))


def c_floor(floor: ctypes.CDLL, c: Cubin, args: list[Any], grid: int, device: int, stream: int) -> Run:
    values = c.values(args)
    h = floor.floor_open(c.path.encode(), c.entry.encode(), c.block, c.shared, device, len(values),
                         (ctypes.c_uint64 * max(len(values), 1))(*values))
    if h < 0:
        raise RuntimeError(floor.floor_error().decode())

    def run(n: int) -> None:
        err = floor.floor_burst(h, grid, stream, n)
        if err:
            raise RuntimeError(f"cuLaunchKernel from C: CUresult {err}")
    return run


def cuda_core(c: Cubin, args: list[Any], grid: int, device: int) -> Callable[[], Any]:
    """``cuda.core.launch`` of the same cubin: pointers as ints, i32 as numpy scalars, hidden params 0."""
    try:
        from cuda.core import Device, LaunchConfig, ObjectCode, launch
    except ImportError:
        from cuda.core.experimental import Device, LaunchConfig, ObjectCode, launch  # cuda.core < 0.4
    import numpy as np

    dev = Device(device)
    dev.set_current()
    with open(c.path, "rb") as f:
        kernel = ObjectCode.from_cubin(f.read()).get_kernel(c.entry)
    kargs = [a.data_ptr() if t.startswith("*") else np.int32(a) for a, t in zip(args, c.types)] + [0] * c.hidden
    return functools.partial(launch, dev.default_stream, LaunchConfig(grid=grid, block=c.block, shmem_size=c.shared), kernel, *kargs)


def measure(systems: dict[str, Run], a: argparse.Namespace, sync: Callable[[], None], errors: dict[str, str],
            prefix: str, ratios: list[tuple[str, str]]) -> dict[str, dict[str, Any]]:
    """Interleaved rounds of ``systems``: µs per call of each, and the per-round ratios asked for."""
    samples = harness.interleave(systems, a.rounds, a.burst, sync=sync, errors=errors)
    out = {f"{prefix}/{s}": harness.stats(v, "us") for s, v in samples.items()}
    for num, den in ratios:
        if num in samples and den in samples:
            out[f"{prefix}/{num}÷{den}"] = harness.ratio(samples[num], samples[den])
    return out


def guarded(errors: dict[str, str], name: str, make: Callable[[], Any]) -> Any:
    try:
        return make()
    except Exception as e:  # noqa: BLE001 - a system that cannot be built is left out, the rest measured
        errors[name] = harness.error_text(e)
        return None


def add_correct(systems: dict[str, Run], out: Any, expected: Any, sync: Callable[[], None]) -> dict[str, bool]:
    """Each system's result of one call into a zeroed output, so a wrong argument list cannot pass unnoticed."""
    ok = {}
    for name, run in systems.items():
        out.zero_()
        sync()
        run(1)
        sync()
        ok[name] = bool(out.eq(expected).all())
    return ok


def graph_samples(torch: Any, systems: dict[str, Run], n: int, rounds: int, errors: dict[str, str]) -> dict[str, list[float]]:
    """GPU µs per kernel of a replayed CUDA graph of ``n`` calls of each system, captured by torch."""
    graphs = {}
    for name, run in systems.items():
        g = torch.cuda.CUDAGraph()
        if guarded(errors, f"{name} (graph)", lambda g=g, run=run: _capture(torch, g, run, n)) is not None:
            graphs[name] = g
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    out: dict[str, list[float]] = {name: [] for name in graphs}
    for r in range(-1, rounds):
        for name in harness.order(list(graphs), r):
            e0.record()
            graphs[name].replay()
            e1.record()
            e1.synchronize()
            if r >= 0:
                out[name].append(e0.elapsed_time(e1) * 1e3 / n)
    return out


def _capture(torch: Any, g: Any, run: Run, n: int) -> bool:
    with torch.cuda.graph(g):
        run(n)
    return True


def launch_question(a: argparse.Namespace, env: dict[str, Any]) -> dict[str, Any]:
    torch, tr, drv, floor, device = env["torch"], env["tr"], env["drv"], env["floor"], env["device"]
    stream = torch.cuda.current_stream().cuda_stream
    ts = [torch.empty(1024, device="cuda") for _ in range(5)]
    x, y, out = (torch.randn(1024, device="cuda") for _ in range(3))
    workloads: dict[str, list[Any]] = {"nop": [], "nop_args": ts + INTS, "add4": [x, y, out, 1024]}
    triton_mod = None if a.no_triton else guarded(env["errors"], "triton (import)", lambda: __import__("launch_latency"))
    measurements: dict[str, Any] = {}
    errors: dict[str, str] = {}
    facts: dict[str, Any] = {}
    for name, args in workloads.items():
        errs: dict[str, str] = {}
        try:
            k = tr.Kernel.load(os.path.join(a.artifacts, name))
            kf = tr.Kernel.load(os.path.join(a.artifacts, name), checks=False)
            c = Cubin(k)
            facts.setdefault("artifact_triton", k.variant.provenance.get("triton_version"))
            makers: dict[str, Callable[[], Run]] = {
                "tmlr": lambda: harness.repeated(functools.partial(k, 1, *args)),
                "tmlr_nocheck": lambda: harness.repeated(functools.partial(kf, 1, *args)),
                "lean": lambda: harness.repeated(functools.partial(lean(drv, torch, c, name, 1, device), *args)),
            }
            if floor is not None:
                makers["c_floor"] = lambda: c_floor(floor, c, args, 1, device, stream)
            if not a.no_cuda_core:
                makers["cuda_core"] = lambda: harness.repeated(cuda_core(c, args, 1, device))
            if triton_mod is not None:
                jit, ce = getattr(triton_mod, name), CONSTEXPRS[name]
                makers["triton"] = lambda: harness.repeated(lambda: jit[(1,)](*args, **ce))
            systems = {s: f for s, make in makers.items() if (f := guarded(errs, s, make)) is not None}
            pairs = [(t, ref) for t in ("tmlr", "tmlr_nocheck") for ref in REFERENCES]
            measurements.update(measure(systems, a, torch.cuda.synchronize, errs, name, pairs))
            if a.graph:
                live = {s: systems[s] for s in ("tmlr", "lean", "triton") if s in systems and s not in errs}
                g = graph_samples(torch, live, a.graph, a.graph_rounds, errs)
                env["graph"].update({f"{name}/{s}": harness.stats(v, "us") for s, v in g.items()})
                env["graph"].update({f"{name}/tmlr÷{ref}": harness.ratio(g["tmlr"], g[ref]) for ref in ("lean", "triton") if "tmlr" in g and ref in g})
            if name == "add4":
                facts["add4_correct"] = add_correct({s: f for s, f in systems.items() if s not in errs}, out, x + y, torch.cuda.synchronize)
        except Exception as e:  # noqa: BLE001 - a workload that cannot load is reported, the next one runs
            errs["(workload)"] = harness.error_text(e)
        errors.update({f"{name}/{s}": e for s, e in errs.items()})
    settings = {"rounds": a.rounds, "burst": a.burst, "grid": 1, "artifacts": harness.project_path(a.artifacts)}
    return harness.question(measurements, settings=settings, facts=facts, errors=errors)


def add_question(a: argparse.Namespace, env: dict[str, Any]) -> dict[str, Any]:
    torch, tr, drv = env["torch"], env["tr"], env["drv"]
    x, y, out = (torch.randn(ADD_N, device="cuda") for _ in range(3))
    k = tr.Kernel.load(os.path.join(ARTIFACTS, "add"))
    grid = -(-ADD_N // 1024)  # the artifact's BLOCK
    errors: dict[str, str] = {}
    makers: dict[str, Callable[[], Run]] = {
        "tmlr": lambda: harness.repeated(functools.partial(k, grid, x, y, out, ADD_N)),
        "torch_add": lambda: harness.repeated(functools.partial(torch.add, x, y, out=out)),
        "bare_cuLaunchKernel": lambda: harness.repeated(bare(drv, Cubin(k), [x, y, out, ADD_N], grid, torch.cuda.current_stream().cuda_stream)),
    }
    systems = {s: f for s, make in makers.items() if (f := guarded(errors, s, make)) is not None}
    m = measure(systems, a, torch.cuda.synchronize, errors, "add_1m", [("tmlr", "torch_add"), ("tmlr", "bare_cuLaunchKernel")])
    facts = {"correct": add_correct({s: f for s, f in systems.items() if s not in errors}, out, x + y, torch.cuda.synchronize)}
    return harness.question(m, settings={"rounds": a.rounds, "burst": a.burst, "n": ADD_N, "grid": grid}, facts=facts, errors=errors)


def dispatch_question(a: argparse.Namespace, env: dict[str, Any], tmp: str) -> dict[str, Any]:
    from family_sample import dtype_family

    torch, tr = env["torch"], env["tr"]
    n = 4096
    x, y, out = (torch.randn(n, device="cuda") for _ in range(3))
    family = tr.Kernel.load(dtype_family(os.path.join(tmp, "family")))
    args, grid = (x, y, out, n), (n // 1024,)
    family(grid, *args)  # tunes this key once and loads the variant
    member = family.choose(*args)
    systems = {"family": harness.repeated(functools.partial(family, grid, *args)),
               "variant": harness.repeated(functools.partial(member.kernel, grid, *args))}
    errors: dict[str, str] = {}
    samples = harness.interleave(systems, a.rounds, a.burst, sync=torch.cuda.synchronize, errors=errors)
    m = {f"dispatch/{s}": harness.stats(v, "us") for s, v in samples.items()}
    if len(samples) == 2:
        m["dispatch/added"] = harness.difference(samples["family"], samples["variant"], "us")
        m["dispatch/family÷variant"] = harness.ratio(samples["family"], samples["variant"])
    return harness.question(m, settings={"rounds": a.rounds, "burst": a.burst, "n": n, "variants": len(family.members)},
                            facts={"variant": member.vid}, errors=errors)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=30, help=f"interleaved rounds, one sample each (at least {harness.MIN_SAMPLES})")
    ap.add_argument("--burst", type=int, default=200, help="calls per sample (short enough that the launch queue never fills)")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--artifacts", default=ARTIFACTS, help="where the nop, nop_args and add4 artifacts are (default: %(default)s)")
    ap.add_argument("--graph", type=int, default=200, metavar="N", help="calls captured per CUDA graph (0: no graph question)")
    ap.add_argument("--graph-rounds", type=int, default=10, help="replays of each graph, one sample each")
    ap.add_argument("--no-triton", action="store_true")
    ap.add_argument("--no-cuda-core", action="store_true")
    ap.add_argument("--no-c", action="store_true", help="leave out the C floor")
    a = ap.parse_args(argv)
    if min(a.rounds, a.graph_rounds) < harness.MIN_SAMPLES:
        ap.error(f"--rounds and --graph-rounds must be at least {harness.MIN_SAMPLES}")
    import torch
    from cuda.bindings import driver as drv

    import tmlr_runtime as tr

    torch.empty(1, device="cuda")  # the primary context, current on this thread
    env: dict[str, Any] = {"torch": torch, "tr": tr, "drv": drv, "device": torch.cuda.current_device(), "errors": {},
                           "graph": {}}
    with tempfile.TemporaryDirectory(prefix="tmlr-launch-") as tmp:
        env["floor"] = None if a.no_c else guarded(env["errors"], "c_floor (build)", lambda: build_floor(tmp))
        asked = {"launch": lambda: launch_question(a, env), "add_1m": lambda: add_question(a, env),
                 "dispatch": lambda: dispatch_question(a, env, tmp)}
        questions = {q: r for q, ask in asked.items() if (r := guarded(env["errors"], q, ask)) is not None}
    if a.graph:
        questions["graph"] = harness.question(env["graph"], settings={"calls_per_graph": a.graph, "replays": a.graph_rounds,
                                                                      "capture": "torch.cuda.graph", "unit": "GPU us per kernel"})
    for q in questions.values():
        q["errors"].update(env["errors"])
    return harness.finish(questions, a.json)


if __name__ == "__main__":
    sys.exit(main())
