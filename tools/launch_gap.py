"""Where a compiled-path launch spends its time above the C floor, on a machine with a GPU.

    python3 tools/launch_gap.py [--rounds 9] [--calls 20000] [--json OUT]

One process, interleaved rounds, the artifacts of benchmarks/launch.py (nop, nop_args, add4). Per
workload, each figure in ns per launch (median of a round's bursts, then median [min-max] over rounds):

- ``floor_burst``: benchmarks/launch_floor.c launching the whole burst in C (the floor launch.py uses);
- ``floor_each``: the same C function called once per launch from a Python loop through ctypes;
- ``ctypes_noop``: that ctypes call with a count of 0 (no launch): ``floor_each - ctypes_noop`` is what
  one ``cuLaunchKernel`` costs when Python code runs between launches;
- ``tmlr``: ``kernel(1, *args)`` on the compiled path, checks on;
- ``tmlr_host``: the same kernel's compiled executor with do-nothing C functions in place of the driver's
  (compiled here with ``cc`` into a temporary directory: a development probe), so real CUDA tensors and
  torch's real current stream are read but nothing reaches the driver: tmlr's own per-call cost;
- ``bare``: cuda-python's ``cuLaunchKernel`` with everything prebuilt (launch.py's ``bare``).

``residual = tmlr - tmlr_host - (floor_each - ctypes_noop)``: what is left once tmlr's own work and a
launch between Python code are accounted for; three ratios are also taken within each round. Also printed: ns per call of torch's reads the executor
makes (``data_ptr()``, ``get_device()``, ``.dtype``, ``_cuda_getCurrentRawStream``) from a Python loop.
"""
from __future__ import annotations

import argparse
import ctypes
import functools
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "benchmarks")]
import launch as bench  # noqa: E402

_STUBS = """
typedef unsigned long long u64;
static void *context; static u64 launches;
void set_context(void *c) { context = c; }
u64 launched(void) { return launches; }
int ctx(void **out) { *out = context; return 0; }
int launch(void *f, unsigned a, unsigned b, unsigned c, unsigned d, unsigned e, unsigned g, unsigned s, void *st, void **kp, void **x) { launches++; return 0; }
int launch_ex(void *config, void *f, void **kp, void **x) { launches++; return 0; }
int alloc(u64 *out, unsigned long n, void *st) { *out = 0x100000; return 0; }
int release(u64 p, void *st) { return 0; }
"""


def stubs(tmp: str) -> ctypes.CDLL:
    src, lib = os.path.join(tmp, "stubs.c"), os.path.join(tmp, "stubs.so")
    pathlib.Path(src).write_text(_STUBS)
    subprocess.run([os.environ.get("CC", "cc"), "-O2", "-shared", "-fPIC", src, "-o", lib], check=True)
    s = ctypes.CDLL(lib)
    s.set_context.argtypes, s.launched.restype = [ctypes.c_void_p], ctypes.c_uint64
    return s


def host_only(tr: Any, directory: str, tmp: str, lib: ctypes.CDLL) -> Any:
    """A second Kernel of ``directory`` whose compiled executor calls ``lib``'s stubs instead of the driver."""
    from tmlr_runtime.launch import compiled
    from tmlr_runtime.launch.execute import launch

    k = tr.Kernel.load(shutil.copytree(directory, os.path.join(tmp, "host", os.path.basename(directory))))
    plan = k.plan
    lib.set_context(int(plan.context))
    addr = [ctypes.cast(getattr(lib, n), ctypes.c_void_p).value for n in ("ctx", "launch", "launch_ex", "alloc", "release")]
    real = compiled._entry_points.get(plan.drv)
    compiled._entry_points[plan.drv] = tuple(addr)
    try:
        k._compiled = compiled.executor(plan, launch)
    finally:
        compiled._entry_points[plan.drv] = real
    if k._compiled is None:
        raise RuntimeError("no compiled executor: is the extension built?")
    return k


def per_call(run: Callable[[], Any], calls: int, bursts: int = 9) -> float:
    for _ in range(min(calls, 2000)):
        run()
    samples, pc = [], time.perf_counter
    n = calls // bursts
    for _ in range(bursts):
        t0 = pc()
        for _ in range(n):
            run()
        samples.append((pc() - t0) / n * 1e9)
    return statistics.median(samples)


def systems(tr: Any, torch: Any, drv: Any, floor: ctypes.CDLL, lib: ctypes.CDLL, name: str, args: list[Any],
            tmp: str) -> dict[str, Callable[[int], None] | Callable[[], Any]]:
    directory = os.path.join(bench.ARTIFACTS, name)
    k = tr.Kernel.load(directory)
    c = bench.Cubin(k)
    stream = torch.cuda.current_stream().cuda_stream
    burst = bench.c_floor(floor, c, args, 1, torch.cuda.current_device(), stream)
    h = floor.floor_open(c.path.encode(), c.entry.encode(), c.block, c.shared, torch.cuda.current_device(),
                         len(c.values(args)), (ctypes.c_uint64 * max(len(c.values(args)), 1))(*c.values(args)))
    host = host_only(tr, directory, tmp, lib)
    return {"floor_burst": burst,
            "floor_each": functools.partial(floor.floor_burst, h, 1, stream, 1),
            "ctypes_noop": functools.partial(floor.floor_burst, h, 1, stream, 0),
            "tmlr": functools.partial(k, 1, *args),
            "tmlr_host": functools.partial(host, 1, *args),
            "bare": bench.bare(drv, c, args, 1, stream)}


def reads(torch: Any, calls: int) -> dict[str, float]:
    t = torch.empty(16, device="cuda")
    get = torch._C._cuda_getCurrentRawStream
    empty = per_call(lambda: None, calls)
    return {"python call of a lambda": empty,
            "t.data_ptr()": per_call(t.data_ptr, calls),
            "t.get_device()": per_call(t.get_device, calls),
            "t.dtype": per_call(lambda: t.dtype, calls) - empty,
            "_cuda_getCurrentRawStream(0)": per_call(functools.partial(get, 0), calls)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    import torch
    from cuda.bindings import driver as drv

    import tmlr_runtime as tr

    torch.cuda.init()
    workloads = {"nop": [], "nop_args": [torch.empty(1024, device="cuda") for _ in range(5)] + bench.INTS,
                 "add4": [torch.randn(1024, device="cuda") for _ in range(3)] + [1024]}
    samples: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        floor, lib = bench.build_floor(tmp), stubs(tmp)
        made = {w: systems(tr, torch, drv, floor, lib, w, args, tmp) for w, args in workloads.items()}
        for r in range(a.rounds):
            for w, runs in made.items():
                order = list(runs) if r % 2 == 0 else list(reversed(runs))
                for s in order:
                    if s == "floor_burst":  # one ctypes call launches the whole burst
                        t0 = time.perf_counter()
                        runs[s](a.calls)
                        torch.cuda.synchronize()
                        v = (time.perf_counter() - t0) / a.calls * 1e9
                    else:
                        v = per_call(runs[s], a.calls)
                        torch.cuda.synchronize()
                    samples.setdefault(w, {}).setdefault(s, []).append(v)
        stubbed = lib.launched()
        component = reads(torch, a.calls)
    report: dict[str, Any] = {"rounds": a.rounds, "calls": a.calls, "stub_launches": stubbed, "workloads": {}, "reads_ns": component,
                              "machine": {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "python": sys.version.split()[0]}}
    for w, by in samples.items():
        row = {s: {"median": statistics.median(v), "min": min(v), "max": max(v)} for s, v in by.items()}
        med = {s: r["median"] for s, r in row.items()}
        row["launch_between_python"] = med["floor_each"] - med["ctypes_noop"]
        row["residual"] = med["tmlr"] - med["tmlr_host"] - row["launch_between_python"]
        per_round = [dict(zip(by, vals)) for vals in zip(*by.values())]  # ratios within a round, as launch.py does
        for ratio, f in (("tmlr÷floor_burst", lambda x: x["tmlr"] / x["floor_burst"]),
                         ("launch_between_python÷floor_burst", lambda x: (x["floor_each"] - x["ctypes_noop"]) / x["floor_burst"]),
                         ("tmlr÷(tmlr_host+launch_between_python)",
                          lambda x: x["tmlr"] / (x["tmlr_host"] + x["floor_each"] - x["ctypes_noop"]))):
            v = [f(x) for x in per_round]
            row[ratio] = {"median": statistics.median(v), "min": min(v), "max": max(v)}
        report["workloads"][w] = row
        print(f"{w:9s} " + "  ".join(f"{s} {r['median']:.0f} [{r['min']:.0f}-{r['max']:.0f}]" for s, r in row.items() if isinstance(r, dict))
              + f"  launch_between_python {row['launch_between_python']:.0f}  residual {row['residual']:.0f}")
    print("reads (ns):", {k: round(v) for k, v in component.items()}, "stub launches:", stubbed)
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
