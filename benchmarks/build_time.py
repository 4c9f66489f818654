"""tmlr-build against triton.compile alone (Triton 3.3.1, no GPU needed).

    python benchmarks/build_time.py [--json OUT.json] [--reps N] [--kernels add4,matmul,tma_scale] [--jobs 1,16]

* per kernel (sm_90a): wall time of a fresh process running ``tmlr-build`` on one kernel of
  ``examples/kernels.json`` (``-j 1``) against a fresh process running ``triton.compile`` of the same
  source, signature and options with an empty ``TRITON_CACHE_DIR`` (so it compiles); interleaved,
  median of ``--reps``. Both include interpreter start and ``import triton``; the triton.compile
  process also reports the compile call alone.
* whole spec: ``tmlr-build --spec examples/kernels.json -j N`` (every kernel for sm_80 and sm_90a)
  for each N of ``--jobs``, against one process compiling the same list serially with
  ``triton.compile``.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import EXAMPLES, python_env, require_triton, run_command, triton_version, write_json  # noqa: E402

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


def run_tmlr_build(entries: list[dict[str, object]], archs: list[int], jobs: int, tmp: str) -> float:
    """Wall seconds of one tmlr-build process on a spec holding ``entries``."""
    spec = os.path.join(tmp, "spec.json")
    kernels = [dict(e, source=os.path.join(EXAMPLES, str(e["source"]))) for e in entries]
    with open(spec, "w") as f:
        json.dump({"arch": archs, "kernels": kernels}, f)
    out = tempfile.mkdtemp(dir=tmp)
    rc, o, err, secs = run_command([sys.executable, "-m", "tmlr_build", "--spec", spec, "-o", out, "-q", "-j", str(jobs)],
                                   env=python_env(), timeout=300)
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--kernels", default="add4,matmul,tma_scale", help="names from examples/kernels.json (sm_90a)")
    ap.add_argument("--jobs", default=f"1,{os.cpu_count() or 1}", help="tmlr-build -j values for the whole spec")
    ap.add_argument("--no-spec", action="store_true", help="skip the whole-spec build")
    args = ap.parse_args(argv)
    require_triton("3.3")
    tmp = tempfile.mkdtemp(prefix="tmlr-build-time-")
    doc: dict[str, object] = {"triton": triton_version(), "cpus": os.cpu_count(), "reps": args.reps,
                              "per_kernel": {}, "spec": {}, "errors": {}}
    errors: dict[str, str] = doc["errors"]  # type: ignore[assignment]
    try:
        cases = {c["name"]: c for c in spec_cases() if c["cap"] == 90}
        for name in args.kernels.split(","):
            try:
                case = cases[name]
                ours, theirs, inner = [], [], []
                for _ in range(args.reps):
                    ours.append(run_tmlr_build([case["entry"]], [90], 1, tmp))  # type: ignore[list-item]
                    secs, rep = run_triton_compile([case], tmp)
                    theirs.append(secs)
                    inner.append(rep["compile_s"][0])
                row = {"tmlr_build_s": statistics.median(ours), "triton_compile_process_s": statistics.median(theirs),
                       "triton_compile_call_s": statistics.median(inner)}
                row["ratio"] = row["tmlr_build_s"] / row["triton_compile_process_s"]
                doc["per_kernel"][name] = row  # type: ignore[index]
                print(f"{name:12s} tmlr-build {row['tmlr_build_s']:.3f} s  triton.compile process "
                      f"{row['triton_compile_process_s']:.3f} s (compile call {row['triton_compile_call_s']:.3f} s)  "
                      f"ratio {row['ratio']:.3f}")
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
            for j in [int(x) for x in args.jobs.split(",") if x]:
                try:
                    spec_doc[f"tmlr_build_j{j}_s"] = run_tmlr_build(entries, [80, 90], j, tmp)
                    print(f"spec: tmlr-build -j {j}: {spec_doc[f'tmlr_build_j{j}_s']:.2f} s for {len(all_cases)} compiles")
                except Exception as e:  # noqa: BLE001
                    errors[f"spec_j{j}"] = f"{type(e).__name__}: {e}"[:500]
                    print(f"spec: tmlr-build -j {j}: ERROR {errors[f'spec_j{j}']}")
            try:
                secs, rep = run_triton_compile(all_cases, tmp)
                spec_doc["triton_compile_serial_s"] = secs
                spec_doc["triton_compile_calls_s"] = sum(rep["compile_s"])  # type: ignore[arg-type]
                print(f"spec: triton.compile serially in one process: {secs:.2f} s")
            except Exception as e:  # noqa: BLE001
                errors["spec_triton"] = f"{type(e).__name__}: {e}"[:500]
                print(f"spec: triton.compile: ERROR {errors['spec_triton']}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        write_json(args.json, doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
