"""Kernel.load against raw cuModuleLoadData + cuModuleGetFunction, and process start to first result.

    python benchmarks/load_and_start.py --artifact DIR/add4 [--json OUT.json]

* load: first load (module cache and load cache cleared each time) and cached load, against a
  raw ``open().read()`` + ``cuModuleLoadData`` + ``cuModuleGetFunction`` of the same cubin;
  interleaved, median of many.
* start: fresh interpreters that run a 4-argument vector add and check the result — a bare
  cuda-python script, tmlr without torch (same buffers from cuMemAlloc), ``import torch`` alone and
  tmlr with torch; interleaved, median of several runs each.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

BARE = r"""
import sys, struct, ctypes
from cuda.bindings import driver as d
ART = sys.argv[1]
def ok(r):
    assert int(r[0]) == 0, r
    return r[1] if len(r) == 2 else r[1:]
d.cuInit(0)
dev = ok(d.cuDeviceGet(0)); ctx = ok(d.cuDevicePrimaryCtxRetain(dev)); d.cuCtxSetCurrent(ctx)
import json, os
meta = json.load(open(os.path.join(ART, "metadata.json")))
v = [v for v in meta["variants"] if v["target"]["arch"] == "sm_90a"][0]
mod = ok(d.cuModuleLoadData(open(os.path.join(ART, v["cubin"]["file"]), "rb").read()))
fn = ok(d.cuModuleGetFunction(mod, v["entry"].encode()))
n = 1 << 16
host = [struct.pack(f"{n}f", *([1.0] * n)), struct.pack(f"{n}f", *([2.0] * n))]
bufs = [ok(d.cuMemAlloc(4 * n)) for _ in range(3)]
for b, h in zip(bufs, host): d.cuMemcpyHtoD(b, h, 4 * n)
vals = [ctypes.c_uint64(int(b)) for b in bufs] + [ctypes.c_int32(n), ctypes.c_uint64(0)]
arr = (ctypes.c_void_p * len(vals))(*[ctypes.addressof(x) for x in vals])
d.cuLaunchKernel(fn, (n + 1023) // 1024, 1, 1, 32 * v["launch"]["num_warps"], 1, 1, v["launch"]["shared"], 0, ctypes.addressof(arr), 0)
out = bytearray(4 * n); d.cuMemcpyDtoH(out, bufs[2], 4 * n)
assert struct.unpack_from("f", out, 4 * (n - 1))[0] == 3.0
"""

TMLR = r"""
import sys, struct
from cuda.bindings import driver as d
import tmlr_runtime as tr
k = tr.Kernel.load(sys.argv[1])
n = 1 << 16
def ok(r):
    assert int(r[0]) == 0, r
    return r[1]
host = [struct.pack(f"{n}f", *([1.0] * n)), struct.pack(f"{n}f", *([2.0] * n))]
bufs = [int(ok(d.cuMemAlloc(4 * n))) for _ in range(3)]
for b, h in zip(bufs, host): d.cuMemcpyHtoD(b, h, 4 * n)
k((n + 1023) // 1024, *bufs, n)
out = bytearray(4 * n); d.cuMemcpyDtoH(out, bufs[2], 4 * n)
assert struct.unpack_from("f", out, 4 * (n - 1))[0] == 3.0
"""

TORCH_ONLY = "import torch; torch.zeros(1, device='cuda')"

TMLR_TORCH = r"""
import sys, torch
import tmlr_runtime as tr
k = tr.Kernel.load(sys.argv[1])
n = 1 << 16
x = torch.ones(n, device="cuda"); y = torch.full((n,), 2.0, device="cuda"); o = torch.empty_like(x)
k((n + 1023) // 1024, x, y, o, n)
assert o[-1].item() == 3.0
"""


def run_script(src: str, artifact: str) -> float:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", src, artifact], check=True, env=env)
    return time.perf_counter() - t0


def bench_start(artifact: str, reps: int) -> dict[str, float]:
    scripts = {"bare_cuda_python": BARE, "tmlr_no_torch": TMLR, "import_torch_cuda": TORCH_ONLY, "tmlr_with_torch": TMLR_TORCH}
    samples: dict[str, list[float]] = {k: [] for k in scripts}
    for name, src in scripts.items():  # warm the file cache
        run_script(src, artifact)
    for _ in range(reps):
        for name, src in scripts.items():
            samples[name].append(run_script(src, artifact))
    return {k: statistics.median(v) for k, v in samples.items()}


def bench_load(artifact: str, reps: int) -> dict[str, float]:
    import tmlr_runtime as tr
    from tmlr_runtime import _driver, _kernel, _modules

    drv = _driver.init()
    tr.Kernel.load(artifact)  # driver init and primary context outside the timings
    v = tr.Kernel.load(artifact).variant
    path = os.path.join(artifact, v.cubin_file)
    first, cached, raw = [], [], []
    for _ in range(reps):
        _modules.clear()
        _kernel._loaded.clear()
        t0 = time.perf_counter()
        tr.Kernel.load(artifact)
        first.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        tr.Kernel.load(artifact)
        cached.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        with open(path, "rb") as f:
            data = f.read()
        err, mod = drv.cuModuleLoadData(data)
        err2, fn = drv.cuModuleGetFunction(mod, v.entry.encode())
        raw.append(time.perf_counter() - t0)
        assert int(err) == 0 and int(err2) == 0
        drv.cuModuleUnload(mod)
    return {k: statistics.median(s) for k, s in (("kernel_load_first", first), ("kernel_load_cached", cached), ("raw_module_load", raw))}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--artifact", required=True)
    ap.add_argument("--load-reps", type=int, default=200)
    ap.add_argument("--start-reps", type=int, default=7)
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    artifact = os.path.abspath(a.artifact)
    load = bench_load(artifact, a.load_reps)
    print("load (median)")
    for k, t in load.items():
        print(f"  {k:22s} {t * 1e6:9.1f} µs")
    print(f"  first load / raw = {load['kernel_load_first'] / load['raw_module_load']:.3f}")
    start = bench_start(artifact, a.start_reps)
    print("process start -> first correct result (median wall s)")
    for k, t in start.items():
        print(f"  {k:22s} {t:7.3f} s")
    print(f"  tmlr_no_torch / bare = {start['tmlr_no_torch'] / start['bare_cuda_python']:.3f}")
    print(f"  tmlr_with_torch - import_torch_cuda = {start['tmlr_with_torch'] - start['import_torch_cuda']:+.3f} s")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"load_s": load, "start_s": start}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
