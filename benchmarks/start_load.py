"""Process start to a first correct result, and Kernel.load against a raw cuModuleLoadData.

    python benchmarks/start_load.py [--rounds N] [--json OUT.json] [--no-triton]

start
  Fresh interpreters, interleaved rounds (benchmarks/harness.py, one run per system per round, after
  one unmeasured run of each): a bare cuda-python script that runs the 4-argument add on 65536
  floats and checks it, tmlr doing the same without torch, ``import torch`` + one CUDA tensor, tmlr
  with torch tensors, and this machine's Triton JIT of the same kernel with a warm cache and with
  an empty one. Per round: tmlr without torch / bare, and tmlr with torch − torch alone.
load
  In each of ``--rounds`` fresh processes (context made and tmlr imported first): the first
  ``Kernel.load`` of add4 plus binding it to the context (``kernel.function``) against a raw
  ``open().read()`` + ``cuModuleLoadData`` + ``cuModuleGetFunction`` of the same cubin, in
  alternating order, and the median of 20 loads of the already loaded directory.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [ROOT, HERE]
import harness  # noqa: E402

ADD4 = os.path.join(ROOT, "examples", "artifacts", "add4")

CUDA = r"""
import sys, struct, ctypes, time
from cuda.bindings import driver as d
def ok(r):
    if int(r[0]):
        raise SystemExit(f"CUDA error {r[0]}")
    return r[1] if len(r) == 2 else None
ok(d.cuInit(0)); ctx = ok(d.cuDevicePrimaryCtxRetain(ok(d.cuDeviceGet(0)))); ok(d.cuCtxSetCurrent(ctx))
n = 1 << 16
def buffers():
    bufs = [int(ok(d.cuMemAlloc(4 * n))) for _ in range(3)]
    for b, v in zip(bufs, (1.0, 2.0)):
        ok(d.cuMemcpyHtoD(b, struct.pack(f"{n}f", *([v] * n)), 4 * n))
    return bufs
A = d.CUdevice_attribute
cap = 10 * ok(d.cuDeviceGetAttribute(A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0)) + ok(d.cuDeviceGetAttribute(A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0))
def check(out):
    host = bytearray(4 * n); ok(d.cuMemcpyDtoH(host, out, 4 * n))
    assert struct.unpack_from("f", host, 4 * (n - 1))[0] == 3.0
"""

BARE = CUDA + r"""
import json, os
meta = json.load(open(os.path.join(sys.argv[1], "metadata.json")))
v = [v for v in meta["variants"] if v["target"]["capability"] == cap][0]
fn = ok(d.cuModuleGetFunction(ok(d.cuModuleLoadData(open(os.path.join(sys.argv[1], v["cubin"]["file"]), "rb").read())), v["entry"].encode()))
bufs = buffers()
vals = [ctypes.c_uint64(b) for b in bufs] + [ctypes.c_int32(n), ctypes.c_uint64(0)]
arr = (ctypes.c_void_p * len(vals))(*[ctypes.addressof(x) for x in vals])
ok(d.cuLaunchKernel(fn, n // 1024, 1, 1, 32 * v["launch"]["num_warps"], 1, 1, v["launch"]["shared"], 0, ctypes.addressof(arr), 0))
check(bufs[2])
"""

TMLR = CUDA + r"""
import tmlr_runtime as tr
bufs = buffers()
tr.Kernel.load(sys.argv[1])(n // 1024, *bufs, n)
check(bufs[2])
"""

TORCH = "import torch; torch.zeros(1, device='cuda'); torch.cuda.synchronize()"

TORCH_ADD = r"""
import sys, torch
n = 1 << 16
x, y = torch.ones(n, device="cuda"), torch.full((n,), 2.0, device="cuda")
o = torch.empty_like(x)
"""

TMLR_TORCH = TORCH_ADD + r"""
import tmlr_runtime as tr
tr.Kernel.load(sys.argv[1])(n // 1024, x, y, o, n)
assert o[-1].item() == 3.0
"""

TRITON = TORCH_ADD + r"""
sys.path.insert(0, sys.argv[2])
from launch_latency import add4
add4[(n // 1024,)](x, y, o, n, BLOCK=1024)
assert o[-1].item() == 3.0
"""

LOAD = CUDA + r"""
import json, os, statistics
import tmlr_runtime as tr
tr.Kernel.load(os.path.join(os.path.dirname(sys.argv[1]), "nop")).function  # tmlr's own code paths warm
v = tr.ArtifactMetadata.read(sys.argv[1]).select_variant(cap // 10, cap % 10)
def raw():
    t = time.perf_counter()
    ok(d.cuModuleGetFunction(ok(d.cuModuleLoadData(open(os.path.join(sys.argv[1], v.cubin_file), "rb").read())), v.entry.encode()))
    return time.perf_counter() - t
def first():
    t = time.perf_counter()
    tr.Kernel.load(sys.argv[1]).function
    return time.perf_counter() - t
out = {}
for name, f in ((("raw", raw), ("first", first)) if sys.argv[2] == "0" else (("first", first), ("raw", raw))):
    out[name] = f() * 1e6
cached = []
for _ in range(20):
    t = time.perf_counter(); tr.Kernel.load(sys.argv[1]); cached.append((time.perf_counter() - t) * 1e6)
out["cached"] = statistics.median(cached)
print(json.dumps(out))
"""


def run_python(src: str, *argv: str, env: dict[str, str] | None = None) -> str:
    """``python -c src argv...`` in a fresh interpreter with the project on PYTHONPATH; its stdout."""
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, env.get("PYTHONPATH")) if p)
    p = subprocess.run([sys.executable, "-c", src, *argv], capture_output=True, text=True, env=env, timeout=300)
    if p.returncode != 0:
        lines = (p.stderr or p.stdout).strip().splitlines()
        raise RuntimeError(f"exit {p.returncode}: {lines[-1] if lines else ''}")
    return p.stdout


def start_question(a: argparse.Namespace, tmp: str) -> dict[str, Any]:
    kernels = os.path.join(ROOT, "examples", "kernels")
    scripts: dict[str, tuple[str, dict[str, str] | None]] = {
        "bare_cuda_python": (BARE, None), "tmlr_no_torch": (TMLR, None), "torch_alone": (TORCH, None), "tmlr_torch": (TMLR_TORCH, None)}
    if not a.no_triton:
        scripts["triton_jit_warm"] = (TRITON, dict(os.environ, TRITON_CACHE_DIR=os.path.join(tmp, "warm")))
        scripts["triton_jit_cold"] = (TRITON, None)

    def system(name: str) -> Any:
        src, env = scripts[name]

        def run(n: int) -> None:
            for _ in range(n):
                cold = dict(os.environ, TRITON_CACHE_DIR=tempfile.mkdtemp(dir=tmp)) if name == "triton_jit_cold" else env
                run_python(src, ADD4, kernels, env=cold)
        return run

    errors: dict[str, str] = {}
    samples = harness.interleave({s: system(s) for s in scripts}, a.rounds, 1, errors=errors, warmup=1)
    secs = {s: [x / 1e6 for x in v] for s, v in samples.items()}
    m = {f"start/{s}": harness.stats(v, "s") for s, v in secs.items()}
    if "tmlr_no_torch" in secs and "bare_cuda_python" in secs:
        m["start/tmlr_no_torch÷bare_cuda_python"] = harness.ratio(secs["tmlr_no_torch"], secs["bare_cuda_python"])
    if "tmlr_torch" in secs and "torch_alone" in secs:
        m["start/tmlr_torch−torch_alone"] = harness.difference(secs["tmlr_torch"], secs["torch_alone"], "s")
    return harness.question(m, settings={"rounds": a.rounds, "n": 1 << 16}, errors=errors)


def load_question(a: argparse.Namespace) -> dict[str, Any]:
    runs: dict[str, list[float]] = {}
    errors: dict[str, str] = {}
    for i in range(a.rounds):
        try:
            for k, v in json.loads(run_python(LOAD, ADD4, str(i % 2)).strip().splitlines()[-1]).items():
                runs.setdefault(k, []).append(v)
        except Exception as e:  # noqa: BLE001
            errors[f"round {i}"] = harness.error_text(e)
    m = {f"load/{k}": harness.stats(v, "us") for k, v in runs.items()}
    if "first" in runs and "raw" in runs:
        m["load/first÷raw"] = harness.ratio(runs["first"], runs["raw"])
    return harness.question(m, settings={"rounds": a.rounds, "cached_loads_per_round": 20}, errors=errors)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5, help=f"rounds (processes per system; at least {harness.MIN_SAMPLES})")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--no-triton", action="store_true")
    a = ap.parse_args(argv)
    if a.rounds < harness.MIN_SAMPLES:
        ap.error(f"--rounds must be at least {harness.MIN_SAMPLES}")
    with tempfile.TemporaryDirectory(prefix="tmlr-start-") as tmp:
        questions = {"start": start_question(a, tmp), "load": load_question(a)}
    return harness.finish(questions, a.json)


if __name__ == "__main__":
    sys.exit(main())
