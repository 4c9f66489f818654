"""GPU time of the identical cubin launched by Triton 3.3.1's own launcher and by tmlr, in one process.

    python benchmarks/gpu_time.py [--json OUT.json] [--rounds N] [--target-ms MS] [--kernels a,b]

Needs Triton 3.3.1 importable (``TMLR_TRITON33=1 . .device/prelude.sh``) and an sm_90 GPU.

For each kernel the tmlr artifact's cubin is also wrapped in Triton's own ``CompiledKernel`` (what
Triton loads from its cache: the kernel's Triton metadata JSON, the cubin file, and an
``IRSource`` of the ``.ttgir`` that gives the launcher its signature), so both launch the same
bytes; the launch facts Triton reads from its JSON are compared with tmlr's metadata. Both run on
the same inputs. Two separate checks: the two outputs must be bit-identical (same cubin, same
arguments), and each must match a torch reference within the kernel's tolerance (``Case.tol``).
Then, per round, each system launches ``iters`` times between two CUDA events (order alternating
between rounds); every round's GPU ms per launch is kept, and the ratio tmlr / Triton per round.

Kernels (sm_90a; sizes in ``SIZES``): ``matmul_fp16`` (64x64x32 tl.dot tiles, 4096^3), ``softmax``
(65536 rows of 1000 of 1008), ``fp8_tma_matmul`` (device-built TMA descriptors, global scratch,
4096^3), ``cluster_add`` (``num_ctas=2``, 2^26 floats).
"""
from __future__ import annotations

import argparse
import hashlib
import math
import os
import sys
from typing import Any, Callable

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tmlr_runtime as tr  # noqa: E402
from bench_common import BENCH, EXAMPLES, guarded, ratio_stats, require_triton, stats, triton_version, write_json  # noqa: E402

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
            a = torch.randn(M, K, device=dev).to(torch.float8_e4m3fn)  # the kernel takes e4m3 (fp8e4nv)
            bt = torch.randn(N, K, device=dev).to(torch.float8_e4m3fn)
            self.out = torch.empty(M, N, device=dev, dtype=torch.float16)
            self.grid = (M // 64, N // 64, 1)
            self.args = (a, bt, self.out, M, N, K)
            # The reference multiplies the SAME quantized fp8 values in fp32, so quantization is no
            # part of the error; what remains is the kernel's accumulation and its fp16 output.
            self.ref = lambda: a.float() @ bt.float().T
            self.tol = fp8_tolerance(K)
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


def fp8_tolerance(K: int) -> Callable[[torch.Tensor], dict[str, float]]:
    """``allclose`` tolerances for the fp8 TMA matmul against its fp32 reference, from the reference.

    Hopper's fp8 wgmma accumulates in reduced precision: about 14 significant bits are kept
    (measured in the DeepSeek-V3 report, section 3.3.2), and Triton 3.3.1 lets all of K accumulate
    that way (``maxNumImpreciseAcc = 2**30`` in the kernel's .ttgir). Each of the K / 32 wgmma
    k-steps (k = 32 for fp8) may then lose up to one unit in the 14th bit of the running sum,
    whose magnitude is bounded here by the largest output rounded up to a power of two:
    atol = (K / 32) * 2 ** (ceil(log2(max |ref|)) - 13). The fp16 output adds half a unit in its
    11th bit: rtol = 2 ** -11, doubled for slack. With K = 4096 and unit-normal inputs
    (|ref| up to ~350) that is atol 8 on outputs of typical size 64; a missing or repeated
    64-wide K tile (an error of ~8 typical, far more at the maximum) or a wrong tile fails it,
    the fp32-vs-imprecise accumulation difference (2.0 max measured on the H200) passes.
    """

    def tol(ref: torch.Tensor) -> dict[str, float]:
        top = float(ref.abs().max())
        return {"atol": (K / 32) * 2.0 ** (math.ceil(math.log2(max(top, 1e-30))) - 13), "rtol": 2.0 ** -10}

    return tol


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


def time_systems(systems: dict[str, Callable[[], None]], rounds: int, target_ms: float) -> tuple[dict[str, list[float]], int]:
    """GPU ms per launch of each system in every round, and the launches per timed span."""
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
    return samples, iters


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
    ref = case.ref().float()
    tol = case.tol(ref) if callable(case.tol) else case.tol
    doc["reference_tolerance"] = tol
    for s, f in systems.items():
        case.out.fill_(float("nan"))
        f()
        torch.cuda.synchronize()
        outs[s] = case.out.clone()
        err = (outs[s].float() - ref).abs().max().item()
        doc[f"{s}_max_err"] = err
        doc[f"{s}_correct"] = bool(torch.allclose(outs[s].float(), ref, **tol))
    doc["outputs_identical"] = bool(torch.equal(outs["tmlr"], outs["triton33"]))
    del outs, ref
    samples, iters = time_systems(systems, rounds, target_ms)
    doc.update(iters=iters, rounds=rounds, tmlr_ms=stats(samples["tmlr"], 5), triton33_ms=stats(samples["triton33"], 5),
               ratio=ratio_stats(samples["tmlr"], samples["triton33"]))
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
            r = doc["ratio"]
            print(f"{name:16s} tmlr {doc['tmlr_ms']['median']:.4f} ms  triton33 {doc['triton33_ms']['median']:.4f} ms  "
                  f"ratio {r['median']:.4f} [{r['min']:.4f}–{r['max']:.4f}]  identical outputs {doc['outputs_identical']}  "
                  f"vs torch (tmlr/triton) {doc['tmlr_correct']}/{doc['triton33_correct']} (max err {doc['tmlr_max_err']:.3g}, "
                  f"tol {doc['reference_tolerance']})  same cubin {doc['same_cubin']}  facts mismatch {doc['launch_facts_mismatch'] or 'none'}")
        else:
            print(f"{name:16s} ERROR {results['errors'][name]}")
        torch.cuda.empty_cache()
        if args.json:
            write_json(args.json, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
