"""GPU time of one cubin launched by the importable Triton's JIT and by tmlr, in one process (Triton 3.4+).

    python benchmarks/gpu_time_versions.py ARTIFACTS [--json OUT.json] [--rounds N] [--target-ms MS] [--kernels a,b]

ARTIFACTS: the examples built on a CPU machine with the same Triton release and no line info, e.g.
``tmlr-build --python VENV/bin/python --spec examples/kernels.json -o ARTIFACTS --arch 90 --no-line-info``.
Line info names the source file, which tmlr writes as a relative name and the JIT as the absolute path
it imported, so only builds without it can be byte-identical. This process sets
``TRITON_DISABLE_LINE_INFO=1`` before importing Triton and launches each example kernel through Triton's
JIT (``kernel[grid](...)``, the way users launch it) with the artifact's specialization; the cubin
Triton compiled there should equal the artifact's byte for byte (``same_cubin``). Where it does not
(see :func:`swap_cubin`), the artifact's cubin is loaded into the JIT's compiled kernel, so Triton's
own launcher still launches the artifact's bytes (``triton_launches`` says so). Then, as benchmarks/gpu_time.py does for 3.3.1: both outputs bit-identical,
each matched against torch, and per round each system launches ``iters`` times between two CUDA
events (order alternating), the ratio tmlr / Triton kept per round.

Kernels (sm_90a, sizes large enough that GPU time dominates): ``matmul`` (fp16, 64x64x32 tiles,
4096^3), ``add`` (2^26+1 floats: n not divisible by 16, as the artifact's plain ``i32``),
``cluster_add`` (``num_ctas=2``), ``tma_scale`` (device-built TMA descriptors, global scratch),
``desc_scale`` (host TensorDescriptor arguments).
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from typing import Any, Callable

os.environ["TRITON_DISABLE_LINE_INFO"] = "1"  # before Triton reads its knobs

import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tmlr_runtime as tr  # noqa: E402
from bench_common import EXAMPLES, guarded, ratio_stats, stats, triton_version, write_json  # noqa: E402
from gpu_time import time_systems  # noqa: E402

DEV = "cuda"
DUMP = os.environ.get("GPU_TIME_DUMP")  # a folder: when set, a kernel whose cubins differ leaves the JIT's files there
KERNELS = ("matmul", "add", "cluster_add", "tma_scale", "desc_scale")
FILES = {"matmul": "matmul.py", "add": "vector_add.py", "cluster_add": "cluster_add.py",
         "tma_scale": "tma_device_desc.py", "desc_scale": "host_desc.py"}


def triton_fn(name: str) -> Any:
    path = os.path.join(EXAMPLES, "kernels", FILES[name])
    spec = importlib.util.spec_from_file_location(f"tmlr_example_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


class Case:
    """Inputs, grid, Triton's launch options and the torch reference of one kernel."""

    def __init__(self, name: str) -> None:
        self.opts: dict[str, Any] = {"num_warps": 4}
        self.tmlr_args: tuple[Any, ...] | None = None  # when tmlr takes other objects than Triton's JIT
        self.tol = dict(atol=0.0, rtol=0.0)
        getattr(self, f"_{name}")()

    def _matmul(self) -> None:
        M = N = K = 4096
        a = torch.randn(M, K, device=DEV, dtype=torch.float16)
        b = torch.randn(K, N, device=DEV, dtype=torch.float16)
        self.out = torch.empty(M, N, device=DEV, dtype=torch.float16)
        self.grid = (M // 64, N // 64, 1)
        self.args = (a, b, self.out, M, N, K, a.stride(0), b.stride(0), self.out.stride(0))
        self.consts, self.opts["num_stages"] = dict(BM=64, BN=64, BK=32), 2
        self.ref, self.tol = (lambda: a.float() @ b.float()), dict(atol=0.1, rtol=2e-2)

    def _add(self, n: int = (1 << 26) + 1) -> None:
        x, y = torch.randn(n, device=DEV), torch.randn(n, device=DEV)
        self.out = torch.empty_like(x)
        self.grid, self.args, self.consts = ((n + 1023) // 1024, 1, 1), (x, y, self.out, n), dict(BLOCK=1024)
        self.ref = lambda: x + y

    def _cluster_add(self) -> None:
        self._add()
        self.opts["num_ctas"] = 2

    def _tma_scale(self, M: int = 8191, N: int = 8192) -> None:
        src = torch.randn(M, N, device=DEV, dtype=torch.float16)
        self.out = torch.empty_like(src)
        self.grid, self.args, self.consts = ((M + 63) // 64, N // 64, 1), (src, self.out, M, N), dict(BM=64, BN=64)
        self.ref = lambda: src * 2

    def _desc_scale(self, M: int = 8192, N: int = 8192) -> None:
        from triton.tools.tensor_descriptor import TensorDescriptor

        src = torch.randn(M, N, device=DEV, dtype=torch.float16)
        self.out = torch.empty_like(src)
        self.grid, self.consts = (M // 64, N // 128, 1), dict(BM=64, BN=128)
        self.args = (TensorDescriptor.from_tensor(src, [64, 128]), TensorDescriptor.from_tensor(self.out, [64, 128]))
        self.tmlr_args = (tr.TensorDescriptor.from_tensor(src, [64, 128]), tr.TensorDescriptor.from_tensor(self.out, [64, 128]))
        self.ref = lambda: src * 2


def swap_cubin(compiled: Any, cubin: bytes) -> None:
    """Make Triton's JIT launch ``cubin``: its cached CompiledKernel reloads its module from these bytes.

    Needed where the GPU machine's Triton compiles other bytes than the same release on the build machine:
    our device's carried 3.9.0 has ``ptxas-blackwell`` replaced by its CUDA 12.9 ``ptxas`` (to fit the
    carry limit), which makes PTX 8.8 where the full wheel's CUDA 13.4 ptxas makes 9.4. The launch facts
    Triton keeps (num_warps, shared) are compared with the artifact's first.
    """
    compiled.kernel, compiled.module, compiled.function = cubin, None, None
    compiled._init_handles()


def bench(artifacts: str, name: str, rounds: int, target_ms: float) -> dict[str, Any]:
    k = tr.Kernel.load(os.path.join(artifacts, name))
    v = k.variant
    with open(os.path.join(k.directory, v.cubin_file), "rb") as f:
        cubin = f.read()
    case, fn = Case(name), triton_fn(name)
    grid, a, ta = case.grid, case.args, case.tmlr_args or case.args
    compiled = fn[grid](*a, **case.consts, **case.opts)
    facts = {"num_warps": (compiled.metadata.num_warps, v.num_warps), "shared": (compiled.metadata.shared, v.shared)}
    doc: dict[str, Any] = {"grid": list(grid), "options": case.opts, "same_cubin": compiled.asm["cubin"] == cubin,
                           "cubin_sha256": v.cubin_sha256, "provenance_triton": v.provenance.get("triton_version"),
                           "launch_facts": facts}
    if not doc["same_cubin"]:
        if DUMP:  # what the JIT built, to compare with the artifact's IR (--keep-ir)
            with open(os.path.join(DUMP, f"{name}.jit.ptx"), "w") as f:
                f.write(compiled.asm["ptx"])
        if any(t != m for t, m in facts.values()):
            return doc
        swap_cubin(compiled, cubin)
        doc["triton_launches"] = "the artifact's cubin, loaded into the JIT's CompiledKernel"
    systems: dict[str, Callable[[], None]] = {"tmlr": lambda: k(grid, *ta),
                                              "triton_jit": lambda: fn[grid](*a, **case.consts, **case.opts)}
    ref, outs = case.ref().float(), {}
    doc["reference_tolerance"] = case.tol
    for s, f in systems.items():
        case.out.fill_(float("nan"))
        f()
        torch.cuda.synchronize()
        outs[s] = case.out.clone()
        doc[f"{s}_max_err"] = (outs[s].float() - ref).abs().max().item()
        doc[f"{s}_correct"] = bool(torch.allclose(outs[s].float(), ref, **case.tol))
    doc["outputs_identical"] = bool(torch.equal(outs["tmlr"], outs["triton_jit"]))
    del outs, ref
    samples, iters = time_systems(systems, rounds, target_ms)
    doc.update(iters=iters, rounds=rounds, tmlr_ms=stats(samples["tmlr"], 5), triton_jit_ms=stats(samples["triton_jit"], 5),
               ratio=ratio_stats(samples["tmlr"], samples["triton_jit"]))
    return doc


def line(name: str, doc: dict[str, Any]) -> str:
    if "ratio" not in doc:
        return f"{name:12s} NOT TIMED: other launch facts {doc['launch_facts']}"
    r = doc["ratio"]
    return (f"{name:12s} tmlr {doc['tmlr_ms']['median']:.4f} ms  triton {doc['triton_jit_ms']['median']:.4f} ms  ratio "
            f"{r['median']:.4f} [{r['min']:.4f}-{r['max']:.4f}]  JIT built the same cubin {doc['same_cubin']}  identical outputs "
            f"{doc['outputs_identical']}  vs torch (tmlr/triton) {doc['tmlr_correct']}/{doc['triton_jit_correct']}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("artifacts")
    ap.add_argument("--json")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--target-ms", type=float, default=20.0, help="GPU time per timed span")
    ap.add_argument("--kernels", default=",".join(KERNELS))
    args = ap.parse_args(argv)
    import triton

    # Triton's launcher gets global scratch (tma_scale's device-built descriptors) from this allocator.
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device=DEV))
    results: dict[str, Any] = {"device": torch.cuda.get_device_name(), "triton": triton_version(),
                               "artifacts": os.path.abspath(args.artifacts), "kernels": {}, "errors": {}}
    ok = True
    for name in args.kernels.split(","):
        doc = guarded(results["errors"], name, lambda name=name: bench(args.artifacts, name, args.rounds, args.target_ms))
        if doc is None:
            print(f"{name:12s} ERROR {results['errors'][name]}")
            ok = False
            continue
        results["kernels"][name] = doc
        print(line(name, doc))
        ok &= bool(doc.get("outputs_identical") and doc.get("tmlr_correct") and doc.get("triton_jit_correct"))
        torch.cuda.empty_cache()
        if args.json:
            write_json(args.json, results)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
