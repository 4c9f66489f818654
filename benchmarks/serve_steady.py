"""What ``tmlr_runtime.serve`` adds to a launch: a served ``kernel[grid](...)`` against a direct call of the same loaded
artifact, in the same process, with Triton blocked (the stand-in) and with Triton installed.

    python3 benchmarks/serve_steady.py [--rounds 7] [--burst 2000] [--gpu] [--out FILE]

Without ``--gpu`` (any machine) the driver is faked: tools/compiled_probe.py's stub driver (device ordinal -1, so CPU
torch tensors take the launch path's inline tensor reads with their checks; the compiled path's launches call
do-nothing C functions that it compiles with ``cc``), plus events for the autotune family's first-call tuning. So
``direct`` is tmlr's own per-call work without the driver's, and ``served - direct`` what the serving layer adds. With
``--gpu`` (an sm_90 GPU: the artifacts are built for sm_90a) the real driver and CUDA tensors, each sample ending in a
synchronize; benchmarks/serve_workload.py ``--steady`` measures the same for the workload serve_startup.py records.

The model code is the tests' serving examples, launching as model code does: examples/artifacts (its serve.json)
with examples/kernels and tests/data/served/add_op.py, and tests/gpu/artifacts/served with tests/data/kernlib.
Each (artifacts, Triton) pair runs in a fresh child process; in it, each case's served and direct calls alternate in
interleaved rounds (benchmarks/harness.py), one sample per round (µs per call, a burst of ``--burst`` calls). The
ratio and the difference are taken round by round.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from typing import Any, Callable

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
EXAMPLES = os.path.join(ROOT, "examples", "artifacts")
KERNLIB = os.path.join(ROOT, "tests", "gpu", "artifacts", "served")
MODELS = {EXAMPLES: [os.path.join(ROOT, "examples", "kernels"), os.path.join(ROOT, "tests", "data", "served")],
          KERNLIB: [os.path.join(ROOT, "tests", "data")]}
MARK = "SERVE_STEADY "


def stub_driver(tmp: str) -> Any:
    """compiled_probe's stub driver, with what a family's tuning asks (events on a clock each record advances)."""
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    from compiled_probe import stub_driver as probe_driver
    from types import SimpleNamespace

    drv = probe_driver(tmp)
    clock = [0.0]

    def record(event: Any, stream: int) -> tuple[int]:
        clock[0] += 0.001
        event.at = clock[0]
        return (0,)

    capture = drv.CUstreamCaptureStatus = SimpleNamespace(CU_STREAM_CAPTURE_STATUS_NONE=0)
    drv.cuStreamIsCapturing = lambda stream: (0, capture.CU_STREAM_CAPTURE_STATUS_NONE)
    drv.cuStreamSynchronize = drv.cuEventSynchronize = drv.cuEventDestroy = lambda *a: (0,)
    drv.cuEventCreate = lambda flags: (0, SimpleNamespace(at=0.0))
    drv.cuEventRecord = record
    drv.cuEventElapsedTime = lambda start, end: (0, end.at - start.at)
    drv.cuMemAlloc = lambda nbytes: (0, 0x200000)
    drv.cuMemFree = drv.cuMemsetD8Async = lambda *a: (0,)
    return drv


class _Target:
    """Triton's active driver where there is no GPU: what kernlib asks at import time (tuned.py)."""

    def get_current_target(self) -> Any:
        from triton.backends.compiler import GPUTarget

        return GPUTarget("cuda", 90, 32)


# served, its kwargs, direct, its kwargs (or a function of the arguments that gives them), grid, args
Case = tuple[Any, dict[str, Any], Any, Any, Any, tuple[Any, ...]]


def cases(folder: str, torch: Any, tr: Any, device: str) -> dict[str, Case]:
    """Each case: the served kernel object and the loaded artifact, called with the same grid and positional arguments
    and the keywords the model code and a careful engineer write."""
    x, y, out = (torch.empty(4096, device=device) for _ in range(3))
    load = lambda name: tr.Kernel.load(os.path.join(folder, name))  # noqa: E731
    block, warps = {"BLOCK": 1024}, {"BLOCK": 1024, "num_warps": 4}
    if folder == EXAMPLES:
        import add_op
        import launch_latency as ll
        import vector_add as va

        add, add_args = load("add"), (x, y, out, 4096)
        return {
            "nop: kernel[(1,)]()": (ll.nop, {}, load("nop"), {}, (1,), ()),
            "add4: positional, BLOCK too": (ll.add4, {}, load("add4"), {}, (1,), (x, y, out, 1024, 1024)),
            "add: BLOCK=, num_warps=": (va.add, warps, add, warps, (4,), add_args),
            "@heuristics over a plain artifact": (add_op.add_heuristic, {}, add, block, (4,), add_args),
            # the same, the direct call computing BLOCK with the model's own heuristic as Triton's wrapper calls it (its
            # arguments by name): what the served launch adds of its own, the model's Python left out
            "@heuristics over a plain artifact, vs the heuristic computed by the caller":
                (add_op.add_heuristic, {}, add, _caller_heuristics(add_op.add_heuristic), (4,), add_args),
            "@autotune over a plain artifact (2nd config served)": (add_op.add_tuned, {}, add, warps, (4,), add_args),
        }
    from kernlib.ops import heur, plain, tuned

    args = (x, out, 1000)
    return {
        "kernlib scale: BLOCK=": (plain.scale, block, load("scale"), block, (1,), args),
        "@heuristics family": (heur.heur_scale, {}, load("heur_scale"), {}, (1,), args),
        "@autotune family": (tuned.tuned_scale, {}, load("tuned_scale"), {}, (1,), args),
    }


def _caller_heuristics(wrapper: Any) -> Callable[[tuple[Any, ...]], dict[str, Any]]:
    """The direct call's keywords: each of the @triton.heuristics wrapper's values computed by the caller, from the
    arguments by name, as Triton's wrapper computes them."""
    names, values = wrapper.arg_names, wrapper.values
    return lambda a: {name: heuristic(dict(zip(names, a))) for name, heuristic in values.items()}


def systems(case: Case) -> dict[str, Callable[[int], None]]:
    """served ``k[g](*a, **kw)``; direct ``d(g, *a, **kw)``; direct[] ``d[g](*a, **kw)``, the same launch through
    ``Kernel.__getitem__`` (a Python call and a partial). A direct call's keywords may be computed per call."""
    import harness

    k, kw, d, dkw, g, a = case
    if callable(dkw):
        keywords = dkw
        return {"served": harness.repeated(lambda: k[g](*a, **kw)),
                "direct": harness.repeated(lambda: d(g, *a, **keywords(a))),
                "direct[]": harness.repeated(lambda: d[g](*a, **keywords(a)))}
    return {"served": harness.repeated(lambda: k[g](*a, **kw)), "direct": harness.repeated(lambda: d(g, *a, **dkw)),
            "direct[]": harness.repeated(lambda: d[g](*a, **dkw))}


def child(folder: str, triton: bool, rounds: int, burst: int, gpu: bool) -> dict[str, Any]:
    sys.path[:0] = [ROOT, HERE]  # this checkout's tmlr_runtime, whatever else is installed
    if not triton:
        sys.modules["triton"] = None  # type: ignore[assignment]  # a service without Triton: the stand-in answers
    import torch

    import tmlr_runtime as tr
    from tmlr_runtime import driver

    import harness

    tmp = tempfile.mkdtemp(prefix="serve-steady-")
    os.environ["TMLR_CACHE_DIR"] = os.path.join(tmp, "cache")  # the autotune family's tuning cache
    if not gpu:
        driver.PROCESS = driver.Process(api=stub_driver(tmp), initialised=True)
        current = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        try:  # a CUDA build of torch on a machine without a usable GPU raises from it (tests/fake_driver.py, the same)
            current is None or current(0)
        except RuntimeError:
            torch._C._cuda_getCurrentRawStream = (0).__mul__  # the stub's stream 0, which a launch given none asks for
        if triton:
            import triton as real

            real.runtime.driver.set_active(_Target())
    tr.serve(folder, stand_in_triton=["add_op"])  # add_op launches vector_add's kernel: model code, but no kernel's file
    sys.path[:0] = MODELS[folder]
    samples: dict[str, Any] = {}
    errors: dict[str, str] = {}
    sync = torch.cuda.synchronize if gpu else (lambda: None)
    for name, case in cases(folder, torch, tr, "cuda" if gpu else "cpu").items():
        case_errors: dict[str, str] = {}
        runs = systems(case)
        try:
            for run in runs.values():
                run(1)  # the first launch loads and (the autotune family) tunes
        except Exception as e:  # noqa: BLE001 - reported; the other cases still run
            errors[name] = harness.error_text(e)
            continue
        got = harness.interleave(runs, rounds, burst, sync=sync, errors=case_errors)
        samples[name] = got
        errors.update({f"{name} / {k}": v for k, v in case_errors.items()})
    from tmlr_runtime.launch import compiled

    return {"samples": samples, "errors": errors, "launch_path": compiled.describe()}


def runtime_commit() -> str | None:
    """The commit of the measured tmlr_runtime (this checkout's), "-dirty" when it differs from it; None outside git."""
    def git(*args: str) -> str | None:
        p = subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True)
        return p.stdout.strip() if p.returncode == 0 else None

    commit = git("rev-parse", "--short", "HEAD")
    return commit and commit + ("-dirty" if git("status", "--porcelain", "--", "tmlr_runtime") else "")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--burst", type=int, default=2000, help="calls per sample")
    ap.add_argument("--out", help="the results file (benchmarks/harness.py's schema)")
    ap.add_argument("--gpu", action="store_true", help="the real driver and CUDA tensors (an sm_90 GPU), not the stub driver")
    ap.add_argument("--child", nargs=2, metavar=("FOLDER", "TRITON"), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        print(MARK + json.dumps(child(a.child[0], a.child[1] == "triton", a.rounds, a.burst, a.gpu)))
        return 0
    sys.path.insert(0, HERE)
    import harness

    if a.rounds < harness.MIN_SAMPLES:
        ap.error(f"--rounds must be at least {harness.MIN_SAMPLES}")
    measurements: dict[str, Any] = {}
    errors: dict[str, str] = {}
    facts: dict[str, Any] = {}
    for triton, label in ((False, "stand-in"), (True, "Triton")):
        for folder in (EXAMPLES, KERNLIB):
            cmd = [sys.executable, os.path.abspath(__file__), "--child", folder, "triton" if triton else "blocked",
                   "--rounds", str(a.rounds), "--burst", str(a.burst)] + ["--gpu"] * a.gpu
            proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
            lines = [line for line in proc.stdout.splitlines() if line.startswith(MARK)]
            if proc.returncode or not lines:
                errors[f"{label} {harness.project_path(folder)}"] = (proc.stderr or proc.stdout).strip()[-600:]
                continue
            got = json.loads(lines[-1][len(MARK):])
            facts["launch_path"] = got["launch_path"]
            errors.update({f"{label}: {k}": v for k, v in got["errors"].items()})
            for case, s in got["samples"].items():
                if "served" not in s or "direct" not in s:
                    continue
                key = f"{label}: {case}"
                measurements[f"{key}: served"] = harness.stats(s["served"], "µs")
                measurements[f"{key}: direct"] = harness.stats(s["direct"], "µs")
                measurements[f"{key}: served ÷ direct"] = harness.ratio(s["served"], s["direct"])
                measurements[f"{key}: served − direct"] = harness.difference(s["served"], s["direct"], "µs")
                if "direct[]" in s:
                    measurements[f"{key}: direct[]"] = harness.stats(s["direct[]"], "µs")
                    measurements[f"{key}: served ÷ direct[]"] = harness.ratio(s["served"], s["direct[]"])
    facts["runtime_commit"] = runtime_commit()
    settings = {"rounds": a.rounds, "burst": a.burst,
                "driver": "the GPU's" if a.gpu else "tools/compiled_probe.py stub driver (C do-nothing launches)"}
    return harness.finish({"serve_steady": harness.question(measurements, settings=settings, facts=facts, errors=errors)},
                          a.out)


if __name__ == "__main__":
    sys.exit(main())
