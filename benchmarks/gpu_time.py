"""GPU time of the identical cubin launched by Triton 3.3.1's own launcher and by tmlr, in one process.

    python benchmarks/gpu_time.py [--json OUT.json] [--rounds N] [--target-ms MS] [--kernels a,b]

Needs Triton 3.3.1 importable (``TMLR_TRITON33=1 . .device/prelude.sh``) and an sm_90 GPU.

For each kernel the tmlr artifact's cubin is also wrapped in Triton's own ``CompiledKernel`` (what
Triton loads from its cache: the kernel's Triton metadata JSON, the cubin file, and an
``IRSource`` of the ``.ttgir`` that gives the launcher its signature), so both launch the same
bytes; the launch facts Triton reads from its JSON are compared with tmlr's metadata. Both run on
the same inputs; the outputs must be bit-identical and close to a torch reference. Then, per
round, each system launches ``iters`` times between two CUDA events (order alternating between
rounds); the result is the median GPU ms per launch and the ratio tmlr / Triton.

Kernels (sm_90a; sizes in ``SIZES``): ``matmul_fp16`` (64x64x32 tl.dot tiles, 4096^3), ``softmax``
(65536 rows of 1000 of 1008), ``fp8_tma_matmul`` (device-built TMA descriptors, global scratch,
4096^3), ``cluster_add`` (``num_ctas=2``, 2^26 floats).
"""
from __future__ import annotations

import argparse
import hashlib
import os
import sys
from typing import Any, Callable

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tmlr_runtime as tr  # noqa: E402
from bench_common import BENCH, EXAMPLES, guarded, median, require_triton, triton_version, write_json  # noqa: E402

STAGES = os.path.join(EXAMPLES, "stages")
DEVICE = "cuda"

# name -> (tmlr artifact dir, folder with the Triton .ttgir + metadata JSON, their stem)
KERNELS: dict[str, tuple[str, str, str]] = {
    "matmul_fp16": (os.path.join(STAGES, "artifacts", "matmul_sm90_cubin"), os.path.join(STAGES, "sm_90a", "matmul"), "matmul"),
    "softmax": (os.path.join(STAGES, "artifacts", "softmax_sm90_cubin"), os.path.join(STAGES, "sm_90a", "softmax"), "softmax"),
    "fp8_tma_matmul": (os.path.join(STAGES, "artifacts", "fp8_matmul_sm90_cubin"), os.path.join(STAGES, "sm_90a", "fp8_matmul"), "fp8_matmul"),
    "cluster_add": (os.path.join(EXAMPLES, "artifacts", "cluster_add"), os.path.join(BENCH, "triton33", "cluster_add"), "cluster_add"),
}

# problem sizes, large enough that GPU time dominates: square matmul side; softmax rows, cols, row stride;
# vector length of the cluster add
SIZES: dict[str, Any] = {"matmul_fp16": 4096, "softmax": (65536, 1000, 1008), "fp8_tma_matmul": 4096, "cluster_add": 1 << 26}

# launch facts: Triton metadata JSON key -> tmlr Variant attribute
FACTS = {"num_warps": "num_warps", "num_ctas": "num_ctas", "cluster_dims": "cluster_dims", "shared": "shared",
         "global_scratch_size": "scratch_size", "global_scratch_align": "scratch_align", "name": "entry"}


class Case:
    """Inputs, grid, output and reference of one kernel at a GPU-bound size."""

    def __init__(self, name: str) -> None:
        self.name = name
        dev = DEVICE
        size = SIZES[name]
        if name == "matmul_fp16":
            M = N = K = size
            a = torch.randn(M, K, device=dev, dtype=torch.float16)
            b = torch.randn(K, N, device=dev, dtype=torch.float16)
            self.out = torch.empty(M, N, device=dev, dtype=torch.float16)
            self.grid = (M // 64, N // 64, 1)
            self.args = (a, b, self.out, M, N, K, a.stride(0), b.stride(0), self.out.stride(0))
            self.ref = lambda: a.float() @ b.float()
            self.tol = dict(atol=0.1, rtol=2e-2)
        elif name == "softmax":
            rows, cols, stride = size
            x = (torch.randn(rows, stride, device=dev) * 4)[:, :cols]
            y = torch.empty(rows, stride, device=dev)[:, :cols]
            self.out = y
            self.grid = (rows, 1, 1)
            self.args = (y, x, x.stride(0), y.stride(0), cols)
            self.ref = lambda: torch.softmax(x, dim=1)
            self.tol = dict(atol=1e-6, rtol=1e-4)
        elif name == "fp8_tma_matmul":
            M = N = K = size
            a = torch.randn(M, K, device=dev).to(torch.float8_e4m3fn)
            bt = torch.randn(N, K, device=dev).to(torch.float8_e4m3fn)
            self.out = torch.empty(M, N, device=dev, dtype=torch.float16)
            self.grid = (M // 64, N // 64, 1)
            self.args = (a, bt, self.out, M, N, K)
            self.ref = lambda: a.float() @ bt.float().T
            self.tol = dict(atol=0.25, rtol=2e-2)
        elif name == "cluster_add":
            n = size
            x, y = torch.randn(n, device=dev), torch.randn(n, device=dev)
            self.out = torch.empty_like(x)
            self.grid = (n // 1024, 1, 1)  # clusters (programs) of num_ctas=2 CTAs
            self.args = (x, y, self.out, n)
            self.ref = lambda: x + y
            self.tol = dict(atol=0.0, rtol=0.0)
        else:
            raise KeyError(name)


def triton_kernel(artifact: str, triton_dir: str, stem: str, variant: Any) -> Any:
    """Triton 3.3.1's CompiledKernel for the artifact's own cubin, as Triton loads a cache entry."""
    from triton._C.libtriton import ir
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import CompiledKernel, IRSource, make_backend

    backend = make_backend(GPUTarget("cuda", variant.capability, 32))
    src = IRSource(os.path.join(triton_dir, f"{stem}.ttgir"), ir.context(), backend)
    group = {f"{stem}.json": os.path.join(triton_dir, f"{stem}.json"),
             f"{stem}.cubin": os.path.join(artifact, variant.cubin_file)}
    return CompiledKernel(src, group, hashlib.sha256(stem.encode()).hexdigest())


def time_systems(systems: dict[str, Callable[[], None]], rounds: int, target_ms: float) -> tuple[dict[str, float], int]:
    """Median GPU ms per launch of each system and the launches per timed span."""
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def span(f: Callable[[], None], iters: int) -> float:
        e0.record()
        for _ in range(iters):
            f()
        e1.record()
        e1.synchronize()
        return e0.elapsed_time(e1) / iters

    one = min(span(f, 1) for f in systems.values())
    iters = max(3, min(500, int(target_ms / max(one, 1e-3))))
    samples: dict[str, list[float]] = {k: [] for k in systems}
    names = list(systems)
    for r in range(rounds):
        for name in names if r % 2 == 0 else reversed(names):
            samples[name].append(span(systems[name], iters))
    return {k: median(v) for k, v in samples.items()}, iters


def bench(name: str, rounds: int, target_ms: float) -> dict[str, Any]:
    artifact, triton_dir, stem = KERNELS[name]
    k = tr.Kernel.load(artifact)
    v = k.variant
    ck = triton_kernel(artifact, triton_dir, stem, v)
    with open(os.path.join(artifact, v.cubin_file), "rb") as f:
        cubin = f.read()
    md = ck.metadata
    facts = {key: (getattr(md, key), getattr(v, attr)) for key, attr in FACTS.items()}
    mismatched = {key: {"triton": list(t) if isinstance(t, tuple) else t, "tmlr": list(m) if isinstance(m, tuple) else m}
                  for key, (t, m) in facts.items() if (tuple(t) if isinstance(t, (list, tuple)) else t) != m}
    case = Case(name)
    grid, a = case.grid, case.args
    systems = {"tmlr": lambda: k(grid, *a), "triton33": lambda: ck[grid](*a)}
    doc: dict[str, Any] = {"artifact": os.path.relpath(artifact, EXAMPLES), "grid": list(grid),
                           "same_cubin": ck.kernel == cubin and hashlib.sha256(cubin).hexdigest() == v.cubin_sha256,
                           "launch_facts_mismatch": mismatched}
    outs = {}
    ref = case.ref()
    for s, f in systems.items():
        case.out.fill_(float("nan"))
        f()
        torch.cuda.synchronize()
        outs[s] = case.out.clone()
        err = (outs[s].float() - ref.float()).abs().max().item()
        doc[f"{s}_max_err"] = err
        doc[f"{s}_correct"] = bool(torch.allclose(outs[s].float(), ref.float(), **case.tol))
    doc["outputs_identical"] = bool(torch.equal(outs["tmlr"], outs["triton33"]))
    del outs, ref
    med, iters = time_systems(systems, rounds, target_ms)
    doc.update(iters=iters, rounds=rounds, tmlr_ms=med["tmlr"], triton33_ms=med["triton33"],
               ratio=med["tmlr"] / med["triton33"])
    return doc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--target-ms", type=float, default=20.0, help="GPU time per timed span")
    ap.add_argument("--kernels", default=",".join(KERNELS))
    args = ap.parse_args(argv)
    require_triton("3.3")
    import triton

    # Triton's launcher gets global scratch (the fp8 kernel's TMA descriptors) from this allocator.
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
    results: dict[str, Any] = {"device": torch.cuda.get_device_name(), "triton": triton_version(),
                               "kernels": {}, "errors": {}}
    for name in args.kernels.split(","):
        doc = guarded(results["errors"], name, lambda name=name: bench(name, args.rounds, args.target_ms))
        if doc is not None:
            results["kernels"][name] = doc
            print(f"{name:16s} tmlr {doc['tmlr_ms']:.4f} ms  triton33 {doc['triton33_ms']:.4f} ms  ratio {doc['ratio']:.4f}  "
                  f"identical outputs {doc['outputs_identical']}  correct {doc['tmlr_correct']}/{doc['triton33_correct']}  "
                  f"same cubin {doc['same_cubin']}  facts mismatch {doc['launch_facts_mismatch'] or 'none'}")
        else:
            print(f"{name:16s} ERROR {results['errors'][name]}")
        torch.cuda.empty_cache()
        if args.json:
            write_json(args.json, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
