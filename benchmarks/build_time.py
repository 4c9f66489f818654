"""tmlr-build against triton.compile alone (Triton 3.3.1, no GPU needed).

    python benchmarks/build_time.py [--json OUT.json] [--reps N] [--kernels add4,matmul,tma_scale] [--jobs 1,16]

* per kernel (sm_90a): wall time of a fresh process running ``tmlr-build`` on one kernel of
  ``examples/kernels.json`` (``-j 1``) against a fresh process running ``triton.compile`` of the same
  source, signature and options with an empty ``TRITON_CACHE_DIR`` (so it compiles); interleaved,
  ``--reps`` of each (at least 3), every run kept; the ratio is taken per rep (the two runs of a
  rep are back to back). Both include interpreter start and ``import triton``; the
  triton.compile process also reports the compile call alone.
* whole spec: ``tmlr-build --spec examples/kernels.json -j N`` (every kernel for sm_80 and sm_90a)
  for each N of ``--jobs``, against one process compiling the same list serially with
  ``triton.compile``; ``--reps`` rounds, interleaved.
* ``--baseline DIR``: another checkout's tmlr-build (e.g. ``git worktree add /tmp/base main``) is
  timed in the same rounds, after this one's, so that a change is compared with what it changes
  under the same load (``vs_baseline``: this tree / the baseline, per round).

The JSON records the machine's load average before and after: on a shared machine the spread of
the samples is part of the result. ``render.py --also cpu=FILE`` shows it beside a suite run.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import EXAMPLES, MIN_SAMPLES, ROOT, python_env, ratio_stats, require_triton, run_command, stats, triton_version, write_json  # noqa: E402

SPEC = os.path.join(EXAMPLES, "kernels.json")

# triton.compile of a list of (source, kernel, signature, options, capability), no tmlr code.
REFERENCE = r"""
import ast, importlib.util, json, sys, time
t0 = time.perf_counter()
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
t_import = time.perf_counter() - t0

def parse(fn, text):
    sig, consts, attrs = {}, {}, {}
    entries = [e.strip() for e in text.split(",")] if text.strip() else []
    for i, (name, e) in enumerate(zip(fn.arg_names, entries)):
        ty, _, div = e.partition(":")
        if ty.startswith("*") or ty[:1] in ("i", "u", "f", "b"):
            if div == "1":  # specialized to 1: a constexpr for Triton 3.3
                sig[name], consts[(i,)] = "constexpr", 1
                continue
            sig[name] = ty
            if div == "16":
                attrs[(i,)] = [["tt.divisibility", 16]]
        else:
            sig[name], consts[(i,)] = "constexpr", ast.literal_eval(e)
    return ASTSource(fn, sig, consts, attrs)

times = []
for case in json.loads(sys.argv[1]):
    spec = importlib.util.spec_from_file_location(case["stem"], case["file"])
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    fn = getattr(mod, case["kernel"])
    t = time.perf_counter()
    k = triton.compile(parse(fn, case["signature"]), target=GPUTarget("cuda", case["cap"], 32), options=case["options"])
    assert len(k.asm["cubin"]) > 0
    times.append(time.perf_counter() - t)
print(json.dumps({"import_s": t_import, "compile_s": times}))
"""


def spec_cases() -> list[dict[str, object]]:
    """Every (kernel, capability) of examples/kernels.json."""
    with open(SPEC) as f:
        doc = json.load(f)
    cases = []
    for k in doc["kernels"]:
        src = os.path.join(EXAMPLES, k["source"])
        opts = dict(doc.get("options", {}), **k.get("options", {}))
        for cap in k.get("arch", doc["arch"]):
            cases.append({"name": k.get("name", k["kernel"]), "kernel": k["kernel"], "file": src,
                          "stem": os.path.splitext(os.path.basename(src))[0], "signature": k.get("signature", ""),
                          "options": opts, "cap": cap, "entry": k})
    return cases


def run_tmlr_build(entries: list[dict[str, object]], archs: list[int], jobs: int, tmp: str,
                   root: str | None = None) -> float:
    """Wall seconds of one tmlr-build process on a spec holding ``entries`` (``root``: another checkout's)."""
    spec = os.path.join(tmp, "spec.json")
    kernels = [dict(e, source=os.path.join(EXAMPLES, str(e["source"]))) for e in entries]
    with open(spec, "w") as f:
        json.dump({"arch": archs, "kernels": kernels}, f)
    out = tempfile.mkdtemp(dir=tmp)
    # cwd: ``python -m`` imports from the current directory before PYTHONPATH
    env = python_env(PYTHONPATH=root) if root else python_env()
    rc, o, err, secs = run_command([sys.executable, "-m", "tmlr_build", "--spec", spec, "-o", out, "-q", "-j", str(jobs)],
                                   env=env, timeout=300, cwd=root or ROOT)
    shutil.rmtree(out, ignore_errors=True)
    if rc != 0:
        raise RuntimeError(f"tmlr-build exit {rc}: {(err or o).strip()[-400:]}")
    return secs


def run_triton_compile(cases: list[dict[str, object]], tmp: str) -> tuple[float, dict[str, object]]:
    """Wall seconds of one process compiling ``cases`` with triton.compile into an empty cache."""
    cache = tempfile.mkdtemp(dir=tmp)
    plain = [{k: v for k, v in c.items() if k != "entry"} for c in cases]
    rc, out, err, secs = run_command([sys.executable, "-c", REFERENCE, json.dumps(plain)],
                                     env=python_env(TRITON_CACHE_DIR=cache), timeout=300)
    shutil.rmtree(cache, ignore_errors=True)
    if rc != 0:
        raise RuntimeError(f"triton.compile exit {rc}: {(err or out).strip()[-400:]}")
    return secs, json.loads(out.strip().splitlines()[-1])


def per_kernel(case: dict[str, object], reps: int, tmp: str, baseline: str | None) -> dict[str, object]:
    """One kernel (sm_90a): ``reps`` rounds of tmlr-build (and the baseline's, first every other round),
    then triton.compile."""
    ours, base, theirs, inner = [], [], [], []
    for i in range(reps):
        for root in ([None, baseline] if i % 2 == 0 else [baseline, None]) if baseline else [None]:
            (base if root else ours).append(run_tmlr_build([case["entry"]], [90], 1, tmp, root=root))  # type: ignore[list-item]
        secs, rep = run_triton_compile([case], tmp)
        theirs.append(secs)
        inner.append(rep["compile_s"][0])
    row = {"tmlr_build_s": stats(ours), "triton_compile_process_s": stats(theirs),
           "triton_compile_call_s": stats(inner), "ratio": ratio_stats(ours, theirs)}
    if baseline:
        row.update(baseline_tmlr_build_s=stats(base), baseline_ratio=ratio_stats(base, theirs),
                   vs_baseline=ratio_stats(ours, base))
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json")
    ap.add_argument("--reps", type=int, default=3, help=f"runs of each (at least {MIN_SAMPLES})")
    ap.add_argument("--kernels", default="add4,matmul,tma_scale", help="names from examples/kernels.json (sm_90a)")
    ap.add_argument("--jobs", default=f"1,{os.cpu_count() or 1}", help="tmlr-build -j values for the whole spec")
    ap.add_argument("--no-spec", action="store_true", help="skip the whole-spec build")
    ap.add_argument("--baseline", metavar="DIR", help="another checkout whose tmlr-build is timed in the same rounds "
                                                      "(per kernel only)")
    args = ap.parse_args(argv)
    if args.reps < MIN_SAMPLES:
        ap.error(f"--reps must be at least {MIN_SAMPLES}: every figure rests on {MIN_SAMPLES} samples or more")
    require_triton("3.3")
    tmp = tempfile.mkdtemp(prefix="tmlr-build-time-")
    doc: dict[str, object] = {"section": "build", "command": "python benchmarks/build_time.py " + " ".join(argv if argv is not None else sys.argv[1:]),
                              "date": time.strftime("%Y-%m-%d %H:%M:%S"), "host": platform.node(), "python": platform.python_version(),
                              "triton": triton_version(), "cpus": os.cpu_count(), "loadavg_before": os.getloadavg(),
                              "reps": args.reps, "baseline": args.baseline and os.path.abspath(args.baseline),
                              "per_kernel": {}, "spec": {}, "errors": {}}
    errors: dict[str, str] = doc["errors"]  # type: ignore[assignment]
    try:
        cases = {c["name"]: c for c in spec_cases() if c["cap"] == 90}
        for name in args.kernels.split(","):
            try:
                row = doc["per_kernel"][name] = per_kernel(cases[name], args.reps, tmp, args.baseline)  # type: ignore[index]
                r = row["ratio"]
                print(f"{name:12s} tmlr-build {row['tmlr_build_s']['median']:.3f} s  triton.compile process "
                      f"{row['triton_compile_process_s']['median']:.3f} s (compile call {row['triton_compile_call_s']['median']:.3f} s)  "
                      f"ratio {r['median']:.3f} [{r['min']:.3f}–{r['max']:.3f}] (medians [min–max] of {args.reps})")
                if args.baseline:
                    b = row["vs_baseline"]
                    print(f"{'':12s} baseline tmlr-build {row['baseline_tmlr_build_s']['median']:.3f} s, ratio "
                          f"{row['baseline_ratio']['median']:.3f}; this tree / baseline {b['median']:.3f} [{b['min']:.3f}–{b['max']:.3f}]")
            except Exception as e:  # noqa: BLE001
                errors[name] = f"{type(e).__name__}: {e}"[:500]
                print(f"{name:12s} ERROR {errors[name]}")
            if args.json:
                write_json(args.json, doc)
        if not args.no_spec:
            with open(SPEC) as f:
                entries = json.load(f)["kernels"]
            all_cases = spec_cases()
            spec_doc: dict[str, object] = {"kernels": len(entries), "compiles": len(all_cases)}
            doc["spec"] = spec_doc
            runs: dict[str, list[float]] = {}
            for _ in range(args.reps):
                for j in [int(x) for x in args.jobs.split(",") if x]:
                    try:
                        runs.setdefault(f"tmlr_build_j{j}_s", []).append(run_tmlr_build(entries, [80, 90], j, tmp))
                    except Exception as e:  # noqa: BLE001
                        errors[f"spec_j{j}"] = f"{type(e).__name__}: {e}"[:500]
                try:
                    secs, rep = run_triton_compile(all_cases, tmp)
                    runs.setdefault("triton_compile_serial_s", []).append(secs)
                    runs.setdefault("triton_compile_calls_s", []).append(sum(rep["compile_s"]))  # type: ignore[arg-type]
                except Exception as e:  # noqa: BLE001
                    errors["spec_triton"] = f"{type(e).__name__}: {e}"[:500]
            for key, v in runs.items():
                spec_doc[key] = stats(v)
                print(f"spec ({len(all_cases)} compiles): {key} {spec_doc[key]['median']:.2f} s [{min(v):.2f}–{max(v):.2f}]")  # type: ignore[index]
            for key in [k for k in errors if k.startswith("spec")]:
                print(f"spec: {key}: ERROR {errors[key]}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    doc["loadavg_after"] = os.getloadavg()
    if args.json:
        write_json(args.json, doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
