"""Dispatch cost of a family artifact: launches through ``KernelFamily`` against launches of the single
sub-artifact it chooses, in one process.

    python benchmarks/dispatch_overhead.py [--fake] [--rounds 15] [--bursts 20] [--json OUT.json]

The family (tests/family_sample.py ``dtype_family``) holds 8 variants of the example ``add`` kernel:
{fp32, fp16} x n {plain, divisible by 16} x 2 autotune configs keyed on ``n`` (dtypes in the key, as
Triton 3.3's autotuner). Each round times ``--bursts`` bursts of 200 calls (then a synchronize) of
the family and as many of the ``Kernel`` of the variant it chose, with the same arguments (4096
elements, n = 4096), the two alternating burst by burst; a round's figure is the median burst, its
overhead the difference of the two. Reported: median, min and max over the rounds.

``--fake`` runs on the CPU with the tests' fake driver (tests/fake_driver.py), whose launch only
records the call (the tensors are fp16 CPU tensors, so the variant is a ``nop`` cubin and nothing
runs); without it, the real driver and a CUDA device (fp32 torch tensors on cuda:0, the ``add`` cubin).
"""
from __future__ import annotations

import argparse
import contextlib
import os
import platform
import statistics
import sys
import tempfile
import time
from typing import Any, Callable

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests"), os.path.join(ROOT, "benchmarks")]

import torch  # noqa: E402

import tmlr_runtime as tr  # noqa: E402
from bench_common import write_json  # noqa: E402
from family_sample import dtype_family  # noqa: E402

BURST = 200
N = 4096


def _burst_us(launch: Callable[[], None], sync: Callable[[], None]) -> float:
    start = time.perf_counter()
    for _ in range(BURST):
        launch()
    sync()
    return (time.perf_counter() - start) / BURST * 1e6


def measure(family: Any, args: tuple[Any, ...], rounds: int, bursts: int, sync: Callable[[], None]) -> dict[str, Any]:
    """Per round: µs per launch of the family and of its chosen sub-kernel (each the median of
    ``bursts`` bursts, the two alternating burst by burst so that load from other processes hits
    both alike), and their difference."""
    grid = (N // 1024,)
    family(grid, *args)  # tunes the key (once) and loads the variant
    single = family.choose(*args).kernel
    runs = {"family": lambda: family(grid, *args), "single": lambda: single(grid, *args)}
    for fn in runs.values():  # warm-up
        for _ in range(5):
            _burst_us(fn, sync)
    samples: dict[str, list[float]] = {"family": [], "single": []}
    for r in range(rounds):
        times: dict[str, list[float]] = {"family": [], "single": []}
        for b in range(bursts):
            for name in (("family", "single") if (r + b) % 2 == 0 else ("single", "family")):
                times[name].append(_burst_us(runs[name], sync))
        for name, v in times.items():
            samples[name].append(statistics.median(v))
    overhead = [f - s for f, s in zip(samples["family"], samples["single"])]
    out = {name: _stats(v) for name, v in samples.items()}
    out["overhead"] = _stats(overhead)
    out["variant"] = family.choose(*args).vid
    return out


def _stats(v: list[float]) -> dict[str, Any]:
    return {"median_us": round(statistics.median(v), 3), "min_us": round(min(v), 3), "max_us": round(max(v), 3),
            "samples": [round(x, 3) for x in v]}


@contextlib.contextmanager
def _environment(fake: bool) -> Any:
    """(tensor factory, synchronize) for the fake driver or the real device."""
    if not fake:
        yield (lambda t: t.cuda()), torch.cuda.synchronize
        return
    import dataclasses

    from fake_driver import H200, installed

    # The fake device's ordinal is -1, the get_device() of a CPU tensor: plain torch tensors then take
    # the launcher's torch fast path, as CUDA tensors do on a GPU (a torch subclass posing as a CUDA
    # tensor would put torch's __torch_function__ dispatch into every attribute read of both sides).
    with installed(dataclasses.replace(H200, ordinal=-1)):
        yield (lambda t: t.half()), (lambda: None)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fake", action="store_true", help="CPU only: the tests' fake driver")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--bursts", type=int, default=20, help=f"bursts of {BURST} launches per system per round")
    ap.add_argument("--json", help="write the results here")
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp, _environment(a.fake) as (tensor, sync):
        os.environ.setdefault("TMLR_CACHE_DIR", os.path.join(tmp, "cache"))
        family = tr.Kernel.load(dtype_family(os.path.join(tmp, "add")))
        x, y, out = (tensor(torch.full((N,), float(i))) for i in (1, 2, 0))
        result = measure(family, (x, y, out, N), a.rounds, a.bursts, sync)
    result["setup"] = {"fake": a.fake, "rounds": a.rounds, "bursts_per_round": a.bursts, "burst": BURST,
                       "python": platform.python_version(), "machine": platform.processor() or platform.machine()}
    for name in ("family", "single", "overhead"):
        s = result[name]
        print(f"{name:9s} median {s['median_us']:7.3f} us/launch  (min {s['min_us']:.3f}, max {s['max_us']:.3f}, {a.rounds} rounds)")
    print(f"variant chosen: {result['variant']}")
    if a.json:
        write_json(a.json, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
