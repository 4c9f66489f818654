"""Where a first ``Kernel.load`` spends its time, on the compiled and on the Python launch path, on a machine with a GPU.

    python3 tools/load_split.py [--rounds 8] [--loads 80] [--json OUT]

One process, the real driver. Each load is of a fresh copy of ``examples/artifacts/add4`` with the module and load
caches emptied first (as tools/runtime_ab.py measures first loads). Rounds alternate the two paths
(``compiled.enabled`` switched between them, so both load the same way but for the executor). The steps of a load
are timed by wrapping the functions that do them: reading metadata.json (``read``), making the ``Kernel`` (of it:
the driver's module load, ``modules.get_function``; the plan, ``LaunchPlan``; the compiled executor, ``executor``
and within it the C constructor ``Executor``). Per path and step: µs, the median over a round's loads, then median
[min-max] over rounds. The wrappers add a little to each step; the ``load`` totals of the two paths carry the same.
"""
from __future__ import annotations

import argparse
import collections
import functools
import os
import shutil
import statistics
import sys
import tempfile
import time
import types
from typing import Any, Callable

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "benchmarks")]
import harness  # noqa: E402

STEPS: dict[str, list[float]] = collections.defaultdict(list)


def timed(step: str, f: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(f)
    def run(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return f(*args, **kwargs)
        finally:
            STEPS[step].append(time.perf_counter() - t0)
    return run


def instrument() -> Any:
    """Wrap the steps of a load where the runtime looks them up at each load; returns the extension module, which
    a stand-in replaces while loads are timed."""
    from tmlr_runtime.launch import compiled, kernel

    kernel._import_reader()
    kernel.read = timed("read", kernel.read)
    kernel.Kernel.__init__ = timed("Kernel()", kernel.Kernel.__init__)
    kernel.modules.get_function = timed("get_function", kernel.modules.get_function)
    kernel.LaunchPlan = timed("LaunchPlan", kernel.LaunchPlan)
    kernel.compiled.executor = timed("executor", compiled.executor)
    extension = compiled.fastlaunch
    if extension is not None:  # the C constructor, through a stand-in for the extension module
        stand_in = types.SimpleNamespace(**{k: getattr(compiled.fastlaunch, k) for k in dir(compiled.fastlaunch) if not k.startswith("__")})
        stand_in.Executor = timed("Executor", compiled.fastlaunch.Executor)
        compiled.fastlaunch = stand_in
    return extension


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--loads", type=int, default=80)
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    import torch

    import tmlr_runtime as tr
    from tmlr_runtime import driver
    from tmlr_runtime.launch import compiled, modules

    torch.empty(1, device="cuda")  # torch's context first, as a service has it
    if compiled.fastlaunch is None:
        raise SystemExit(f"the compiled path is not active: {compiled.why_not}")
    extension = instrument()
    tmp = tempfile.mkdtemp()
    source = os.path.join(ROOT, "examples", "artifacts", "add4")
    copies = iter([shutil.copytree(source, os.path.join(tmp, f"a{i}")) for i in range((a.rounds + 1) * 2 * a.loads)])
    samples: dict[str, list[float]] = collections.defaultdict(list)
    for r in range(-1, a.rounds):  # round -1 warms up and is not kept
        for path in ("compiled", "python") if r % 2 == 0 else ("python", "compiled"):
            compiled.enabled = path == "compiled"
            STEPS.clear()
            for _ in range(a.loads):
                d = next(copies)
                modules.clear()
                driver.PROCESS.loaded.clear()
                t0 = time.perf_counter()
                tr.Kernel.load(d)
                STEPS["load"].append(time.perf_counter() - t0)
            if r >= 0:
                for step, v in STEPS.items():
                    samples[f"{path}/{step}"].append(statistics.median(v) * 1e6)
    compiled.fastlaunch, compiled.enabled = extension, True  # as the machine record describes it
    measurements = {key: harness.stats(v, "us") for key, v in sorted(samples.items())}
    measurements["compiled/load÷python/load"] = harness.ratio(samples["compiled/load"], samples["python/load"])
    return harness.finish({"load_split": harness.question(measurements, settings={"rounds": a.rounds, "loads": a.loads,
                                                                                    "artifact": "examples/artifacts/add4"})}, a.json)


if __name__ == "__main__":
    sys.exit(main())
