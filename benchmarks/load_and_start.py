"""Kernel.load against raw cuModuleLoadData + cuModuleGetFunction, and process start to first result.

    python benchmarks/load_and_start.py --artifact DIR/add4 [--json OUT.json] [--only load|start]
                                        [--triton33-path DIR] [--start-reps N]

* load: first load (module cache and load cache cleared each time) and cached load, against a
  raw ``open().read()`` + ``cuModuleLoadData`` + ``cuModuleGetFunction`` of the same cubin;
  interleaved, every sample kept (µs). This process never imports torch.
* start: fresh interpreters that run a 4-argument vector add and check the result — a bare
  cuda-python script, tmlr without torch (same buffers from cuMemAlloc), ``import torch`` alone,
  tmlr with torch, and Triton's JIT (the machine's Triton, and 3.3.1 when ``--triton33-path``
  names a folder holding it) with a warm cache (primed by the first run) and a cold one
  (``TRITON_CACHE_DIR`` a fresh empty folder each run); interleaved rounds, every run kept (at
  least 3 rounds, whatever ``--max-s`` says). Each script also reports its resident memory at the
  end (VmRSS) and its peak (VmHWM).
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from typing import Callable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import EXAMPLES, MIN_SAMPLES, python_env, ratio_stats, run_command, stats, write_json  # noqa: E402

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

# The same add4 through Triton's JIT, from examples/kernels/launch_latency.py (argv[2]).
TRITON_JIT = r"""
import sys, torch
sys.path.insert(0, sys.argv[2])
from launch_latency import add4
n = 1 << 16
x = torch.ones(n, device="cuda"); y = torch.full((n,), 2.0, device="cuda"); o = torch.empty_like(x)
add4[((n + 1023) // 1024,)](x, y, o, n, BLOCK=1024)
assert o[-1].item() == 3.0
"""

# Appended to every start script: its resident memory after the first correct result.
RSS_FOOTER = r"""
def _tmlr_rss():
    r = {}
    for line in open("/proc/self/status"):
        k, _, v = line.partition(":")
        if k in ("VmRSS", "VmHWM"):
            r[k] = int(v.split()[0])
    print("TMLR_RSS", r.get("VmRSS", -1), r.get("VmHWM", -1))
_tmlr_rss()
"""


def run_script(src: str, artifact: str, env: dict[str, str] | None = None, timeout: float = 120) -> tuple[float, dict[str, int]]:
    """Wall seconds from spawning ``python -c src artifact kernels_dir`` to its exit, and its RSS (KiB)."""
    rc, out, err, secs = run_command([sys.executable, "-c", src + RSS_FOOTER, artifact, os.path.join(EXAMPLES, "kernels")],
                                     env=env or python_env(), timeout=timeout)
    if rc != 0:
        raise RuntimeError(f"exit {rc}: {(err or out).strip().splitlines()[-1] if (err or out).strip() else ''}"[:400])
    rss: dict[str, int] = {}
    for line in out.splitlines():
        if line.startswith("TMLR_RSS "):
            _, cur, peak = line.split()
            rss = {"VmRSS": int(cur), "VmHWM": int(peak)}
    return secs, rss


def start_scripts(triton33_path: str | None, tmp: str) -> dict[str, tuple[str, dict[str, str] | None, bool]]:
    """name -> (source, environment, cold): each cold run gets a fresh empty TRITON_CACHE_DIR."""
    base = python_env()
    scripts: dict[str, tuple[str, dict[str, str] | None, bool]] = {
        "bare_cuda_python": (BARE, base, False),
        "tmlr_no_torch": (TMLR, base, False),
        "import_torch_cuda": (TORCH_ONLY, base, False),
        "tmlr_with_torch": (TMLR_TORCH, base, False),
    }
    tritons = [("triton", None)] + ([("triton33", triton33_path)] if triton33_path else [])
    for label, path in tritons:
        warm = os.path.join(tmp, f"{label}-warm-cache")
        scripts[f"{label}_jit_warm"] = (TRITON_JIT, python_env(path, TRITON_CACHE_DIR=warm), False)
        scripts[f"{label}_jit_cold"] = (TRITON_JIT, python_env(path), True)
    return scripts


def bench_start(artifact: str, reps: int, triton33_path: str | None = None, max_s: float | None = None,
                save: Callable[[dict[str, object]], None] | None = None) -> dict[str, object]:
    """Start times of every round; ``save`` gets the results so far after every round, and after
    MIN_SAMPLES rounds no new round starts after ``max_s`` seconds (so a time limit keeps what was
    measured)."""
    t0 = time.perf_counter()
    tmp = tempfile.mkdtemp(prefix="tmlr-start-")
    try:
        scripts = start_scripts(triton33_path, tmp)
        samples: dict[str, list[float]] = {k: [] for k in scripts}
        rss: dict[str, dict[str, list[int]]] = {k: {"VmRSS": [], "VmHWM": []} for k in scripts}
        errors: dict[str, str] = {}

        def once(name: str) -> None:
            src, env, cold = scripts[name]
            if cold:
                env = dict(env or python_env(), TRITON_CACHE_DIR=tempfile.mkdtemp(prefix="cold-", dir=tmp))
            try:
                secs, r = run_script(src, artifact, env)
            except Exception as e:  # noqa: BLE001 - one broken system must not stop the others
                errors[name] = str(e)
                print(f"  {name}: {e}", file=sys.stderr)
                return
            samples[name].append(secs)
            for key in ("VmRSS", "VmHWM"):
                if key in r:
                    rss[name][key].append(r[key])
            if cold:
                shutil.rmtree(env["TRITON_CACHE_DIR"], ignore_errors=True)

        for name, (_, _, cold) in scripts.items():  # warm the file cache; prime the warm Triton caches
            if not cold:
                once(name)
                samples[name].clear()
                rss[name] = {"VmRSS": [], "VmHWM": []}
        versions = {}
        for name in scripts:
            if name.endswith("_jit_warm") and name not in errors:
                src = "import triton; print(triton.__version__)"
                rc, out, _, _ = run_command([sys.executable, "-c", src], env=scripts[name][1], timeout=60)
                versions[name.replace("_jit_warm", "")] = out.strip() if rc == 0 else None

        def doc() -> dict[str, object]:
            return {"start_s": {k: stats(v) for k, v in samples.items() if v},
                    "start_ratios": start_ratios(samples),
                    "rss_kib": {k: {key: stats(v, 0) for key, v in r.items() if v} for k, r in rss.items() if r["VmRSS"]},
                    "triton_versions": versions, "start_errors": errors, "start_reps": reps}

        for i in range(reps):
            if i >= MIN_SAMPLES and max_s is not None and time.perf_counter() - t0 > max_s:
                print(f"  (stopped after {i} rounds: --max-s {max_s:.0f} reached)", file=sys.stderr)
                break
            for name in scripts:
                if name not in errors:
                    once(name)
            if save:
                save(doc())
        return doc()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def start_ratios(samples: dict[str, list[float]]) -> dict[str, object]:
    """The start targets per round (the scripts of one round run back to back): tmlr without torch
    over the bare script, and tmlr with torch minus torch alone (seconds)."""
    out: dict[str, object] = {}
    bare, tmlr = samples.get("bare_cuda_python"), samples.get("tmlr_no_torch")
    if bare and tmlr:
        out["tmlr_no_torch_vs_bare"] = ratio_stats(tmlr, bare)
    torch_only, with_torch = samples.get("import_torch_cuda"), samples.get("tmlr_with_torch")
    if torch_only and with_torch:
        out["tmlr_with_torch_minus_torch_s"] = stats([a - b for a, b in zip(with_torch, torch_only)])
    return out


def bench_load(artifact: str, reps: int) -> dict[str, object]:
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
        if int(err) or int(err2):
            raise RuntimeError(f"raw load of {path}: {err} / {err2}")
        drv.cuModuleUnload(mod)
    us = {k: [t * 1e6 for t in v] for k, v in (("kernel_load_first", first), ("kernel_load_cached", cached), ("raw_module_load", raw))}
    doc: dict[str, object] = {k: stats(v, 2) for k, v in us.items()}
    doc["first_vs_raw"] = ratio_stats(us["kernel_load_first"], us["raw_module_load"])
    return doc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--artifact", default=os.path.join(EXAMPLES, "artifacts", "add4"))
    ap.add_argument("--load-reps", type=int, default=200)
    ap.add_argument("--start-reps", type=int, default=7)
    ap.add_argument("--only", choices=("load", "start"))
    ap.add_argument("--triton33-path", help="folder holding Triton 3.3.1 (put in front of PYTHONPATH for the 3.3.1 runs)")
    ap.add_argument("--max-s", type=float, help="start no new round of start runs after this many seconds")
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    artifact = os.path.abspath(a.artifact)
    doc: dict[str, object] = {}
    if a.only != "start":
        load = bench_load(artifact, a.load_reps)
        doc["load_us"] = load
        print(f"load (µs, median [min–max] of {a.load_reps})")
        for k, t in load.items():
            print(f"  {k:22s} {t['median']:9.2f} [{t['min']:.2f}–{t['max']:.2f}]")  # type: ignore[index]
        if a.json:
            write_json(a.json, doc)
    if a.only != "load":
        def save(part: dict[str, object]) -> None:
            if a.json:
                write_json(a.json, {**doc, **part})

        doc.update(bench_start(artifact, a.start_reps, a.triton33_path, a.max_s, save))
        start = doc["start_s"]
        rss = doc["rss_kib"]
        print("process start -> first correct result (wall s, median [min–max] of the rounds; RSS at the end, MiB)")
        for k, t in start.items():  # type: ignore[union-attr]
            mib = rss.get(k, {}).get("VmRSS", {}).get("median", 0) / 1024  # type: ignore[union-attr]
            print(f"  {k:22s} {t['median']:7.3f} s [{t['min']:.3f}–{t['max']:.3f}] ({t['n']} runs)  {mib:7.1f} MiB")
        for k, e in doc["start_errors"].items():  # type: ignore[union-attr]
            print(f"  {k:22s} ERROR {e}")
        for k, r in doc["start_ratios"].items():  # type: ignore[union-attr]
            print(f"  {k} = {r['median']:+.3f} [{r['min']:.3f}–{r['max']:.3f}]")
    if a.json:
        write_json(a.json, doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
