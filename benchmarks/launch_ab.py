"""Per-call launch cost of two or more tmlr_runtime checkouts in ONE process, the driver faked.

    python benchmarks/launch_ab.py DIR [DIR ...] [--rounds N] [--burst N] [--runs N] [--json OUT]

Each DIR holds a ``tmlr_runtime`` package (e.g. ``git archive main tmlr_runtime | tar -x -C
/tmp/main``); each is copied under another package name into a temporary folder and imported side
by side, with ``cpu_load_profile``'s fake driver (every call returns at once). Every checkout
launches nop, nop_args and add4 (CPU torch tensors, device -1 as in ``cpu_load_profile``) as
``kernel(1, *args)`` (checks on), ``kernel(1, *args)`` with ``checks=False`` and
``kernel((1,), *args)``; the calls of all checkouts and forms are interleaved in bursts, so a busy
shared machine slows them alike — which separate processes (``cpu_load_profile --compare``) cannot
promise. Reported per form: the median over ``--runs`` runs of each run's lowest burst mean (ns
per call), and the ratio of each checkout to the first.

``--gpu`` (on the GPU machine): the real driver and CUDA tensors instead of the fake driver, so the
A/B is measured where users launch; the device is synchronized between bursts, outside the timing.

``--c-stream``: give the CPU-only torch a C function as ``torch._C._cuda_getCurrentRawStream``
(``(0).__mul__``, 0 for every device) before loading, so the default stream is found as on a GPU
machine (one C call) instead of through Python code that returns 0.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from typing import Any, Callable

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from cpu_load_profile import ARTIFACTS, NOP_ARGS_INTS, make_fake_driver  # noqa: E402

FORMS = ("checks", "checks=False", "grid (1,)")


def import_checkouts(dirs: list[str], tmp: str, gpu: bool = False) -> list[Any]:
    sys.path.insert(0, tmp)
    packages = []
    for n, d in enumerate(dirs):
        name = f"tmlr_runtime_ab{n}"
        shutil.copytree(os.path.join(d, "tmlr_runtime"), os.path.join(tmp, name))
        pkg = importlib.import_module(name)
        if not gpu:
            drv = importlib.import_module(name + "._driver")
            drv._api, drv._initialised = make_fake_driver(ordinal=-1), True
            drv._devices.clear()
        packages.append(pkg)
    return packages


def one_run(packages: list[Any], rounds: int, burst: int, gpu: bool = False) -> dict[str, dict[str, list[float]]]:
    import torch

    device = "cuda" if gpu else "cpu"
    sync = torch.cuda.synchronize if gpu else (lambda: None)
    tensors = [torch.empty(1024, device=device) for _ in range(5)]
    x, y, out = (torch.empty(1024, device=device) for _ in range(3))
    workloads = {"nop": [], "nop_args": tensors + NOP_ARGS_INTS, "add4": [x, y, out, 1024]}
    result: dict[str, dict[str, list[float]]] = {}
    for w, args in workloads.items():
        calls: dict[tuple[str, int], Callable[[], None]] = {}
        for n, pkg in enumerate(packages):
            k = pkg.Kernel.load(os.path.join(ARTIFACTS, w))
            kf = pkg.Kernel.load(os.path.join(ARTIFACTS, w), checks=False)
            calls[("checks", n)] = lambda k=k: k(1, *args)
            calls[("checks=False", n)] = lambda kf=kf: kf(1, *args)
            calls[("grid (1,)", n)] = lambda k=k: k((1,), *args)
        for f in calls.values():  # per-thread buffers, and the old launcher's switch after 1000 calls
            for _ in range(1500):
                f()
        samples: dict[tuple[str, int], list[float]] = {key: [] for key in calls}
        pc = time.perf_counter
        for _ in range(rounds):
            for key, f in calls.items():
                sync()
                t0 = pc()
                for _ in range(burst):
                    f()
                samples[key].append((pc() - t0) / burst * 1e9)
        result[w] = {f"{form}:{n}": [min(samples[(form, n)])] for form, n in calls}
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dirs", nargs="+", help="checkouts, the first is the reference")
    ap.add_argument("--rounds", type=int, default=150)
    ap.add_argument("--burst", type=int, default=200)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--gpu", action="store_true", help="real driver and CUDA tensors (the GPU machine)")
    ap.add_argument("--c-stream", action="store_true", help="torch's current stream as a C call, as on a GPU machine")
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    if a.c_stream:
        import torch

        torch._C._cuda_getCurrentRawStream = (0).__mul__
    with tempfile.TemporaryDirectory(prefix="tmlr-ab-") as tmp:
        packages = import_checkouts([os.path.abspath(d) for d in a.dirs], tmp, a.gpu)
        runs: dict[str, dict[str, list[float]]] = {}
        for _ in range(a.runs):
            for w, rows in one_run(packages, a.rounds, a.burst, a.gpu).items():
                for key, v in rows.items():
                    runs.setdefault(w, {}).setdefault(key, []).extend(v)
    report: dict[str, Any] = {"checkouts": a.dirs, "gpu": a.gpu, "c_stream": a.c_stream, "python": sys.version.split()[0], "runs": runs, "median": {}}
    for w, rows in runs.items():
        for form in FORMS:
            cells = []
            for n in range(len(a.dirs)):
                m = statistics.median(rows[f"{form}:{n}"])
                ratios = [v / v0 for v, v0 in zip(rows[f"{form}:{n}"], rows[f"{form}:0"])]  # run by run
                report["median"].setdefault(w, {})[f"{form}:{n}"] = {"ns": m, "ratio": statistics.median(ratios),
                                                                     "ratio_min": min(ratios), "ratio_max": max(ratios)}
                cells.append(f"{m:7.0f}" + ("" if n == 0 else f" ({statistics.median(ratios):.3f} [{min(ratios):.3f}-{max(ratios):.3f}])"))
            print(f"{w:9s} {form:13s} " + "  ".join(cells))
    print("ns per call: median over the runs of each run's lowest burst mean; (median [min-max] of the runs' ratios to the first checkout)")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
