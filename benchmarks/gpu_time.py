"""GPU time of the same cubin launched by tmlr and by Triton's own launcher, in one process.

    python benchmarks/gpu_time.py [--artifacts DIR] [--rounds N] [--target-ms MS] [--kernels a,b] [--json OUT.json]

For each kernel, Triton's JIT (``kernel[grid](...)``, this process's Triton) compiles the example
with the artifact's specialization. Where its cubin is not the artifact's byte for byte (another
Triton release built the artifact, or line info differs), the artifact's cubin is loaded into the
JIT's compiled kernel once its launch facts (num_warps, num_ctas, shared) agree, so Triton's
launcher launches the artifact's bytes (facts: ``same_cubin``, ``triton_launches``). For the same
bytes from the start, pass ``--artifacts`` a build by this Triton without line info
(``tmlr-build --spec examples/kernels.json -o DIR --arch 90 --no-line-info``).

Both run on the same inputs; facts: ``outputs_identical`` (bit for bit) and each system's output
against a torch reference. Timing (benchmarks/harness.py): per round each system launches
``iters`` times (about ``--target-ms`` of GPU work) and synchronizes, inside the timing; µs per
launch, and the ratio tmlr / Triton per round. Kernels (sm_90a): ``matmul`` (fp16, 4096³), ``add``
(2²⁶+1 floats), ``cluster_add`` (``num_ctas=2``), ``tma_scale`` (device-built TMA descriptors,
global scratch).
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from typing import Any, Callable

os.environ.setdefault("TRITON_DISABLE_LINE_INFO", "1")  # before Triton reads its knobs: the artifacts have none

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [ROOT, HERE]
import harness  # noqa: E402

KERNELS = ("matmul", "add", "cluster_add", "tma_scale")


def example(file: str, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(f"tmlr_example_{name}", os.path.join(ROOT, "examples", "kernels", file))
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return getattr(module, name)


def case(torch: Any, name: str, new_triton: bool) -> dict[str, Any]:
    """The JIT function, grid, arguments, constexprs, options, output, reference and tolerance of one kernel."""
    if name == "matmul":
        M = N = K = 4096
        a, b = (torch.randn(4096, 4096, device="cuda", dtype=torch.float16) for _ in range(2))
        out = torch.empty(M, N, device="cuda", dtype=torch.float16)
        return dict(fn=example("matmul.py", "matmul"), grid=(M // 64, N // 64, 1), out=out, ref=lambda: a.float() @ b.float(),
                    args=(a, b, out, M, N, K, a.stride(0), b.stride(0), out.stride(0)), consts=dict(BM=64, BN=64, BK=32),
                    opts=dict(num_warps=4, num_stages=2), tol=dict(atol=0.1, rtol=2e-2))
    if name in ("add", "cluster_add"):
        n = (1 << 26) + 1
        x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
        out = torch.empty_like(x)
        fn = example("vector_add.py", "add") if name == "add" else example("cluster_add.py", "cluster_add")
        return dict(fn=fn, grid=((n + 1023) // 1024, 1, 1), args=(x, y, out, n), consts=dict(BLOCK=1024), out=out,
                    opts=dict(num_warps=4, num_ctas=1 if name == "add" else 2), ref=lambda: x + y, tol=dict(atol=0.0, rtol=0.0))
    if name == "tma_scale":
        M, N = 8191, 8192
        src = torch.randn(M, N, device="cuda", dtype=torch.float16)
        out = torch.empty_like(src)
        fn = example("tma_device_desc.py" if new_triton else "tma_device.py", "tma_scale")
        return dict(fn=fn, grid=((M + 63) // 64, N // 64, 1), args=(src, out, M, N), consts=dict(BM=64, BN=64), out=out,
                    opts=dict(num_warps=4), ref=lambda: src * 2, tol=dict(atol=0.0, rtol=0.0))
    raise KeyError(name)


def same_bytes(compiled: Any, variant: Any, cubin: bytes) -> dict[str, Any]:
    """Make the JIT's compiled kernel launch ``cubin`` when it built other bytes with the same launch facts."""
    md = compiled.metadata
    launch = {"num_warps": [md.num_warps, variant.num_warps], "num_ctas": [md.num_ctas, variant.num_ctas],
              "shared": [md.shared, variant.shared]}
    facts: dict[str, Any] = {"same_cubin": compiled.asm["cubin"] == cubin, "launch_facts": launch}
    if not facts["same_cubin"]:
        if any(t != v for t, v in launch.values()):
            raise RuntimeError(f"Triton's compile has other launch facts than the artifact: {launch}")
        compiled.kernel, compiled.module, compiled.function = cubin, None, None  # reloaded from these bytes
        compiled._init_handles()
        facts["triton_launches"] = "the artifact's cubin, loaded into the JIT's compiled kernel"
    return facts


def bench(torch: Any, tr: Any, name: str, a: argparse.Namespace, new_triton: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    k = tr.Kernel.load(os.path.join(a.artifacts, name))
    with open(os.path.join(k.directory, k.variant.cubin_file), "rb") as f:
        cubin = f.read()
    c = case(torch, name, new_triton)
    fn, grid, args, consts, opts = c["fn"], c["grid"], c["args"], c["consts"], c["opts"]
    facts = same_bytes(fn[grid](*args, **consts, **opts), k.variant, cubin)
    calls: dict[str, Callable[[], Any]] = {"tmlr": lambda: k(grid, *args), "triton": lambda: fn[grid](*args, **consts, **opts)}
    ref, outs = c["ref"]().float(), {}
    for s, call in calls.items():
        c["out"].fill_(float("nan"))
        call()
        torch.cuda.synchronize()
        outs[s] = c["out"].clone()
        facts[f"{s}_matches_torch"] = bool(torch.allclose(outs[s].float(), ref, **c["tol"]))
    facts["outputs_identical"] = bool(torch.equal(outs["tmlr"], outs["triton"]))
    del outs, ref
    t0 = time.perf_counter()
    calls["tmlr"]()
    torch.cuda.synchronize()
    iters = max(1, round(a.target_ms / 1e3 / (time.perf_counter() - t0)))

    def timed(call: Callable[[], Any]) -> Callable[[int], None]:
        def run(n: int) -> None:
            for _ in range(n):
                call()
            torch.cuda.synchronize()  # inside the timing: the span is the GPU's work
        return run

    failed: dict[str, str] = {}
    samples = harness.interleave({s: timed(f) for s, f in calls.items()}, a.rounds, iters, sync=torch.cuda.synchronize, errors=failed)
    if failed:
        raise RuntimeError(f"failed while timed: {failed}")
    m = {f"{name}/{s}": harness.stats(v, "us") for s, v in samples.items()}
    m[f"{name}/tmlr÷triton"] = harness.ratio(samples["tmlr"], samples["triton"])
    facts.update(iters=iters, artifact_triton=k.variant.provenance.get("triton_version"))
    return m, facts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--artifacts", default=os.path.join(ROOT, "examples", "artifacts"))
    ap.add_argument("--rounds", type=int, default=10, help=f"interleaved rounds (at least {harness.MIN_SAMPLES})")
    ap.add_argument("--target-ms", type=float, default=20.0, help="GPU time of one timed span")
    ap.add_argument("--kernels", default=",".join(KERNELS))
    ap.add_argument("--json", help="write the results here")
    a = ap.parse_args(argv)
    if a.rounds < harness.MIN_SAMPLES:
        ap.error(f"--rounds must be at least {harness.MIN_SAMPLES}")
    import torch
    import triton

    import tmlr_runtime as tr

    # Triton's launcher takes global scratch (tma_scale's device-built descriptors) from this allocator.
    if hasattr(triton, "set_allocator"):
        triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
    new_triton = tuple(int(x) for x in triton.__version__.split(".")[:2]) >= (3, 4)
    measurements: dict[str, Any] = {}
    facts: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for name in [n for n in a.kernels.split(",") if n]:
        try:
            m, facts[name] = bench(torch, tr, name, a, new_triton)
            measurements.update(m)
        except Exception as e:  # noqa: BLE001 - one kernel's failure is reported, the next one runs
            errors[name] = harness.error_text(e)
        torch.cuda.empty_cache()
    settings = {"rounds": a.rounds, "target_ms": a.target_ms, "artifacts": harness.project_path(a.artifacts)}
    return harness.finish({"gpu_time": harness.question(measurements, settings=settings, facts=facts, errors=errors)}, a.json)


if __name__ == "__main__":
    sys.exit(main())
