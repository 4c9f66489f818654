"""A kernel loaded from its PTX against the same kernel from a cubin: what a launch costs, on a GPU newer than the build.

    python benchmarks/ptx_launch.py [--rounds N] [--burst N] [--n N] [--gpu-n N] [--json OUT.json]

``ptx``: tests/gpu/artifacts/add_ptx (examples/kernels/vector_add.py's ``add``, an sm_80 cubin and compute_80 PTX);
on a GPU of another major than 8 no cubin of it runs, so ``Kernel.load`` has the driver compile the PTX (once:
the question records what that cost, from the PtxJitWarning). ``cubin``: examples/artifacts/add, the same
kernel and signature as cubins only (sm_80, sm_90a). Both are launched as users launch them,
``kernel(grid, x, y, out, n)`` with checks on.

ptx_launch
  ``host/…``: µs of host time per call of ``--n`` elements (4096: the GPU keeps up, the time is the launch's),
  ``--burst`` calls per sample after a device synchronize outside the timing; ``gpu/…``: GPU µs per kernel of
  bursts of ``--gpu-n`` elements (1M), timed with CUDA events: the code the driver compiled from the PTX
  against the cubin's. Interleaved rounds
  (benchmarks/harness.py), the ratios ptx÷cubin taken round by round. Facts: which image each kernel runs
  (arch, PTX or cubin), the PTX compile time, each result checked against torch.
"""
from __future__ import annotations

import argparse
import functools
import os
import sys
import warnings
from typing import Any, Callable

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [ROOT, HERE]
import harness  # noqa: E402

PTX = os.path.join(ROOT, "tests", "gpu", "artifacts", "add_ptx")
CUBIN = os.path.join(ROOT, "examples", "artifacts", "add")


def load(tr: Any, directory: str) -> tuple[Any, float | None]:
    """The kernel of ``directory`` on this GPU, and the seconds the driver took to compile its PTX (None: a cubin)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", tr.PtxJitWarning)
        kernel = tr.Kernel.load(directory)
    jit = [w.message.seconds for w in caught if isinstance(w.message, tr.PtxJitWarning)]
    return kernel, jit[0] if jit else None


def gpu_samples(torch: Any, systems: dict[str, Callable[[int], None]], rounds: int, burst: int) -> dict[str, list[float]]:
    """GPU µs per kernel of a burst of each system, CUDA events around it, systems interleaved round by round."""
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    out: dict[str, list[float]] = {name: [] for name in systems}
    for r in range(-2, rounds):
        for name in harness.order(list(systems), r):
            torch.cuda.synchronize()
            e0.record()
            systems[name](burst)
            e1.record()
            e1.synchronize()
            if r >= 0:
                out[name].append(e0.elapsed_time(e1) * 1e3 / burst)
    return out


def ptx_question(a: argparse.Namespace) -> dict[str, Any]:
    import torch

    import tmlr_runtime as tr

    torch.empty(1, device="cuda")  # the primary context, current on this thread
    x, y, out = (torch.randn(max(a.n, a.gpu_n), device="cuda") for _ in range(3))
    kernels = {name: load(tr, d) for name, d in (("ptx", PTX), ("cubin", CUBIN))}
    facts: dict[str, Any] = {"device": torch.cuda.get_device_name(), "capability": "%d.%d" % torch.cuda.get_device_capability()}
    for name, (k, jit) in kernels.items():
        facts[f"{name}_runs"] = f"{k.variant.arch} {'PTX ' + k.variant.ptx.target.arch if jit is not None else 'cubin'}"
        facts[f"{name}_ptx_compile_ms"] = None if jit is None else round(jit * 1e3, 1)
        out.zero_()
        k(cdiv(a.gpu_n, 1024), x, y, out, a.gpu_n)
        torch.cuda.synchronize()
        facts[f"{name}_correct"] = bool(torch.equal(out[:a.gpu_n], (x + y)[:a.gpu_n]))
    errors: dict[str, str] = {}
    host = harness.interleave(calls(kernels, x, y, out, a.n), a.rounds, a.burst, sync=torch.cuda.synchronize, errors=errors)
    gpu = gpu_samples(torch, calls(kernels, x, y, out, a.gpu_n), a.rounds, a.burst)
    m: dict[str, Any] = {}
    for kind, samples, unit in (("host", host, "us"), ("gpu", gpu, "GPU us")):
        m.update({f"{kind}/{s}": harness.stats(v, unit) for s, v in samples.items()})
        if "ptx" in samples and "cubin" in samples:
            m[f"{kind}/ptx÷cubin"] = harness.ratio(samples["ptx"], samples["cubin"])
    return harness.question(m, settings={"rounds": a.rounds, "burst": a.burst, "n": a.n, "gpu_n": a.gpu_n}, facts=facts, errors=errors)


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def calls(kernels: dict[str, tuple[Any, Any]], x: Any, y: Any, out: Any, n: int) -> dict[str, Callable[[int], None]]:
    """``run(burst)`` of each kernel adding ``n`` elements (grid: n / BLOCK, BLOCK 1024 in both artifacts)."""
    return {name: harness.repeated(functools.partial(k, cdiv(n, 1024), x, y, out, n)) for name, (k, _) in kernels.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=30, help=f"interleaved rounds, one sample each (at least {harness.MIN_SAMPLES})")
    ap.add_argument("--burst", type=int, default=200, help="calls per sample")
    ap.add_argument("--n", type=int, default=4096, help="elements added per call of the host question (default: %(default)s)")
    ap.add_argument("--gpu-n", type=int, default=1 << 20, help="elements added per call of the GPU question (default: %(default)s)")
    ap.add_argument("--json", help="write the results here")
    a = ap.parse_args(argv)
    if a.rounds < harness.MIN_SAMPLES:
        ap.error(f"--rounds must be at least {harness.MIN_SAMPLES}")
    return harness.finish({"ptx_launch": ptx_question(a)}, a.json)


if __name__ == "__main__":
    sys.exit(main())
