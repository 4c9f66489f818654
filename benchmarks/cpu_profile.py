"""tmlr_runtime's own Python work per load and per call, on a CPU, with the tests' fake driver.

    python benchmarks/cpu_profile.py [--rounds N] [--burst N] [--copies N] [--profile] [--json OUT.json]

No GPU: tests/fake_driver.py stands in for cuda-python's driver (its calls return at once; a launch
is only recorded), so what is timed is the runtime's Python. Tensors are CPU torch tensors, the fake
device numbered -1 as they are. Figures here are for comparing two versions of the runtime on one
machine, not for claims about GPU launches (benchmarks/launch.py measures those).

load
  ``Kernel.load`` + ``kernel.function`` (the bind) of ``--copies`` fresh copies of add4, nop_args and
  matmul, each copy a new directory, so no cache hits: µs per first load; and a load of an already
  loaded directory (``cached``).
call
  ``kernel(1, *args)`` for nop, nop_args (5 tensors, 9 ints) and add4, checks on and off, interleaved
  rounds of ``--burst`` calls. ``--profile`` prints cProfile's top functions for the checked calls.
"""
from __future__ import annotations

import argparse
import contextlib
import cProfile
import os
import pstats
import shutil
import sys
import tempfile
import time
from typing import Any, ContextManager

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [ROOT, HERE, os.path.join(ROOT, "tests")]
import harness  # noqa: E402

ARTIFACTS = os.path.join(ROOT, "examples", "artifacts")
INTS = [3, 5, 7, 11, 13, 17, 19, 23, 29]


def fake_gpu() -> ContextManager[Any]:
    """The one use of the test seam: the fake driver installed (fresh caches), its device numbered
    -1, which is what a CPU tensor's ``get_device()`` says, so plain CPU tensors pass as its own
    (a tensor subclass posing as CUDA would time torch's subclass dispatch instead)."""
    import torch  # noqa: F401  imported first: the fake driver then stands in for a CUDA torch's current stream

    import fake_driver
    from tmlr_runtime import records

    return fake_driver.installed(records.replace(fake_driver.H200, ordinal=-1))


def load_samples(copies: int, tmp: str) -> dict[str, list[float]]:
    import tmlr_runtime as tr

    out: dict[str, list[float]] = {}
    for name in ("add4", "nop_args", "matmul"):
        dirs = [shutil.copytree(os.path.join(ARTIFACTS, name), os.path.join(tmp, f"{name}-{i}")) for i in range(copies)]
        for d in dirs:
            t = time.perf_counter()
            tr.Kernel.load(d).function
            out.setdefault(f"{name}/first", []).append((time.perf_counter() - t) * 1e6)
            t = time.perf_counter()
            tr.Kernel.load(d)
            out.setdefault(f"{name}/cached", []).append((time.perf_counter() - t) * 1e6)
    return out


def call_systems() -> dict[str, Any]:
    import torch

    import tmlr_runtime as tr

    ts = [torch.zeros(1024) for _ in range(5)]
    workloads = {"nop": [], "nop_args": ts + INTS, "add4": ts[:3] + [1024]}
    systems = {}
    for name, args in workloads.items():
        for label, checks in (("tmlr", True), ("tmlr_nocheck", False)):
            k = tr.Kernel.load(os.path.join(ARTIFACTS, name), checks=checks)
            systems[f"{name}/{label}"] = harness.repeated(lambda k=k, args=args: k(1, *args))
    return systems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15, help=f"call rounds (at least {harness.MIN_SAMPLES})")
    ap.add_argument("--burst", type=int, default=2000)
    ap.add_argument("--copies", type=int, default=50, help=f"fresh copies of each artifact to load (at least {harness.MIN_SAMPLES})")
    ap.add_argument("--profile", action="store_true", help="print cProfile's top functions of the checked calls")
    ap.add_argument("--json", help="write the results here")
    a = ap.parse_args(argv)
    if min(a.rounds, a.copies) < harness.MIN_SAMPLES:
        ap.error(f"--rounds and --copies must be at least {harness.MIN_SAMPLES}")
    errors: dict[str, str] = {}
    with fake_gpu() as fake, tempfile.TemporaryDirectory(prefix="tmlr-cpu-profile-") as tmp:
        loads = load_samples(a.copies, tmp)
        systems = call_systems()
        clear = fake.launches.clear  # the fake records each launch: keep that list short
        calls = harness.interleave(systems, a.rounds, a.burst, sync=clear, errors=errors)
        if a.profile:
            prof = cProfile.Profile()
            with contextlib.redirect_stdout(sys.stderr):
                prof.runcall(lambda: [systems[f"{w}/tmlr"](a.burst) for w in ("nop", "nop_args", "add4")])
                pstats.Stats(prof, stream=sys.stderr).sort_stats("tottime").print_stats(15)
    return harness.finish({
        "cpu_load": harness.question({k: harness.stats(v, "us") for k, v in loads.items()}, settings={"copies": a.copies}),
        "cpu_call": harness.question({k: harness.stats(v, "us") for k, v in calls.items()},
                                     settings={"rounds": a.rounds, "burst": a.burst}, errors=errors)}, a.json)


if __name__ == "__main__":
    sys.exit(main())
