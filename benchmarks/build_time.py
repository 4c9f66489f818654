"""tmlr-build against triton.compile, each a fresh process (CPU only; Triton 3.3's ASTSource form).

    python benchmarks/build_time.py [--rounds N] [--kernels add4,matmul,tma_scale] [--jobs 1,2] [--json OUT.json]

Per kernel of examples/kernels.json (sm_90a): a ``tmlr-build -j 1`` process on that one kernel
against a process running ``triton.compile`` of the same source, signature and options into an
empty ``TRITON_CACHE_DIR``; interleaved rounds (benchmarks/harness.py), one run of each per round,
the ratio taken per round. Whole spec: ``tmlr-build --spec examples/kernels.json -j N`` (every
kernel for sm_80 and sm_90a) for each N of ``--jobs``, against one process compiling the same list
serially with ``triton.compile``. The facts record the load average before and after: on a
shared machine the spread is part of the result.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from typing import Any, Callable

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [ROOT, HERE]
import harness  # noqa: E402

EXAMPLES = os.path.join(ROOT, "examples")
SPEC = os.path.join(EXAMPLES, "kernels.json")

# triton.compile of a list of (source, kernel, signature, options, capability), no tmlr code (Triton 3.3).
REFERENCE = r"""
import ast, importlib.util, json, sys
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

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

for case in json.loads(sys.argv[1]):
    spec = importlib.util.spec_from_file_location(case["stem"], case["file"])
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    k = triton.compile(parse(getattr(mod, case["kernel"]), case["signature"]), target=GPUTarget("cuda", case["cap"], 32),
                       options=case["options"])
    assert len(k.asm["cubin"]) > 0
"""


def spec_cases() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The spec's kernel entries (sources made absolute) and every (kernel, capability) to compile."""
    with open(SPEC) as f:
        doc = json.load(f)
    entries, cases = [], []
    for k in doc["kernels"]:
        src = os.path.join(EXAMPLES, k["source"])
        entries.append(dict(k, source=src))
        for cap in k.get("arch", doc["arch"]):
            cases.append({"name": k.get("name", k["kernel"]), "kernel": k["kernel"], "file": src, "cap": cap,
                          "stem": os.path.splitext(os.path.basename(src))[0], "signature": k.get("signature", ""),
                          "options": dict(doc.get("options", {}), **k.get("options", {})), "entry": entries[-1]})
    return entries, cases


def run(cmd: list[str], tmp: str, **env: str) -> None:
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT,
                       env=dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p), **env))
    if p.returncode != 0:
        raise RuntimeError(f"{os.path.basename(cmd[1]) if cmd[1] != '-c' else 'triton.compile'} exit {p.returncode}: {(p.stderr or p.stdout).strip()[-300:]}")


def tmlr_build(entries: list[dict[str, Any]], archs: list[int], jobs: int, tmp: str) -> Callable[[int], None]:
    spec = os.path.join(tempfile.mkdtemp(dir=tmp), "spec.json")
    with open(spec, "w") as f:
        json.dump({"arch": archs, "kernels": entries}, f)

    def go(n: int) -> None:
        for _ in range(n):
            out = tempfile.mkdtemp(dir=tmp)
            run([sys.executable, "-m", "tmlr_build", "--spec", spec, "-o", out, "-q", "-j", str(jobs)], tmp)
            shutil.rmtree(out, ignore_errors=True)
    return go


def triton_compile(cases: list[dict[str, Any]], tmp: str) -> Callable[[int], None]:
    plain = json.dumps([{k: v for k, v in c.items() if k != "entry"} for c in cases])

    def go(n: int) -> None:
        for _ in range(n):
            cache = tempfile.mkdtemp(dir=tmp)
            run([sys.executable, "-c", REFERENCE, plain], tmp, TRITON_CACHE_DIR=cache)
            shutil.rmtree(cache, ignore_errors=True)
    return go


def seconds(systems: dict[str, Callable[[int], None]], rounds: int, errors: dict[str, str]) -> dict[str, list[float]]:
    return {k: [x / 1e6 for x in v] for k, v in harness.interleave(systems, rounds, 1, errors=errors, warmup=1).items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5, help=f"runs of each (at least {harness.MIN_SAMPLES})")
    ap.add_argument("--kernels", default="add4,matmul,tma_scale", help="names from examples/kernels.json (sm_90a)")
    ap.add_argument("--jobs", default=f"1,{os.cpu_count() or 1}", help="tmlr-build -j values for the whole spec ('' skips it)")
    ap.add_argument("--json", help="write the results here")
    a = ap.parse_args(argv)
    if a.rounds < harness.MIN_SAMPLES:
        ap.error(f"--rounds must be at least {harness.MIN_SAMPLES}")
    entries, cases = spec_cases()
    m: dict[str, Any] = {}
    errors: dict[str, str] = {}
    facts: dict[str, Any] = {"loadavg_before": os.getloadavg()}
    with tempfile.TemporaryDirectory(prefix="tmlr-build-time-") as tmp:
        for name in [k for k in a.kernels.split(",") if k]:
            case = next(c for c in cases if c["name"] == name and c["cap"] == 90)
            s = seconds({"tmlr_build": tmlr_build([case["entry"]], [90], 1, tmp), "triton_compile": triton_compile([case], tmp)}, a.rounds, errors)
            m.update({f"{name}/{k}": harness.stats(v, "s") for k, v in s.items()})
            if len(s) == 2:
                m[f"{name}/tmlr_build÷triton_compile"] = harness.ratio(s["tmlr_build"], s["triton_compile"])
        jobs = [int(j) for j in a.jobs.split(",") if j]
        if jobs:
            systems = {f"tmlr_build_j{j}": tmlr_build(entries, [80, 90], j, tmp) for j in jobs}
            systems["triton_compile_serial"] = triton_compile(cases, tmp)
            m.update({f"spec/{k}": harness.stats(v, "s") for k, v in seconds(systems, a.rounds, errors).items()})
    facts["loadavg_after"] = os.getloadavg()
    facts["compiles_in_spec"] = len(cases)
    settings = {"rounds": a.rounds, "kernels": a.kernels, "jobs": a.jobs}
    return harness.finish({"build": harness.question(m, settings=settings, facts=facts, errors=errors)}, a.json)


if __name__ == "__main__":
    sys.exit(main())
