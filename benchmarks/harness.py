"""The one benchmark harness: interleaved rounds, median [min–max], a machine record, one results schema.

Every script in benchmarks/ measures with :func:`interleave` (or keeps its own samples where one
sample is a whole process) and writes its results with :func:`question`, :func:`document` and
:func:`write`. A results
file is one JSON object::

    {"schema": "tmlr-bench/1", "date": ..., "machine": {...},
     "questions": {NAME: {"command": ..., "settings": {...}, "facts": {...}, "errors": {...},
                          "measurements": {KEY: {"unit": ..., "median": ..., "min": ..., "max": ...,
                                                 "n": ..., "samples": [...]}}}}}

A ratio of two systems is taken round by round (``ratio``), so drift on a shared machine hits both
alike; its unit is "x". ``python benchmarks/harness.py merge A.json B.json --out R.json`` joins the
questions of several files (one machine), ``... markdown R.json`` prints them as tables and
``... check R.json`` validates a file (exit 1 with the reasons).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from importlib import metadata
from typing import Any, Callable

SCHEMA = "tmlr-bench/1"
MIN_SAMPLES = 3
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGES = {"torch": ["torch"], "triton": ["triton"], "cuda-bindings": ["cuda-bindings", "cuda-python"],
            "cuda-core": ["cuda-core"], "cupy": ["cupy", "cupy-cuda13x", "cupy-cuda12x"], "numpy": ["numpy"]}


def stats(samples: list[float], unit: str, digits: int = 4) -> dict[str, Any]:
    """One measurement: its samples in the order taken, their median, min and max."""
    if not samples:
        raise ValueError("a measurement needs at least one sample")
    return {"unit": unit, "median": round(statistics.median(samples), digits), "min": round(min(samples), digits),
            "max": round(max(samples), digits), "n": len(samples), "samples": [round(x, digits) for x in samples]}


def ratio(a: list[float], b: list[float]) -> dict[str, Any]:
    """``a / b`` round by round, for samples taken in the same interleaved rounds."""
    return stats([x / y for x, y in zip(a, b)], "x")


def difference(a: list[float], b: list[float], unit: str) -> dict[str, Any]:
    """``a - b`` round by round."""
    return stats([x - y for x, y in zip(a, b)], unit)


def order(names: list[str], round_no: int) -> list[str]:
    """The order of the systems in one round: rotated by one each round, so none is always first."""
    k = round_no % len(names) if names else 0
    return names[k:] + names[:k]


def project_path(path: str) -> str:
    """``path`` relative to the project for a results file; a path outside it is not named (it means
    nothing on another machine)."""
    full = os.path.abspath(path)
    return os.path.relpath(full, ROOT) if full.startswith(ROOT + os.sep) else "(outside the project)"


def error_text(e: BaseException) -> str:
    lines = str(e).strip().splitlines()
    return f"{type(e).__name__}: {lines[0] if lines else ''}"[:300]


def interleave(systems: dict[str, Callable[[int], None]], rounds: int, burst: int, *,
               sync: Callable[[], None] = lambda: None, errors: dict[str, str] | None = None,
               warmup: int = 2, clock: Callable[[], float] = time.perf_counter) -> dict[str, list[float]]:
    """µs per call of each system, one sample per round: ``run(burst)`` makes ``burst`` calls, after a
    ``sync()`` outside the timing. A system that raises is dropped and its error kept in ``errors``."""
    errors = {} if errors is None else errors
    live = dict(systems)
    samples: dict[str, list[float]] = {name: [] for name in systems}
    for r in range(-warmup, rounds):
        for name in order(list(live), r):
            try:
                sync()
                t0 = clock()
                live[name](burst)
                t1 = clock()
            except Exception as e:  # noqa: BLE001 - one broken system must not stop the others
                errors[name] = error_text(e)
                del live[name]
                continue
            if r >= 0:
                samples[name].append((t1 - t0) / burst * 1e6)
    sync()
    return {name: v for name, v in samples.items() if name in live and v}


def repeated(call: Callable[[], Any]) -> Callable[[int], None]:
    """``run(n)`` for :func:`interleave`: ``call()`` n times."""
    def run(n: int) -> None:
        for _ in range(n):
            call()
    return run


def _run(cmd: list[str]) -> str | None:
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return p.stdout.strip() if p.returncode == 0 else None


def machine() -> dict[str, Any]:
    """What ran the measurement: host, CPU count, GPU and driver, Python, the packages' versions (read
    from their metadata, nothing imported), nvcc, the environment switch of tmlr's launch path and, where
    the measuring process imported tmlr_runtime, the launch path it ran (``tmlr --version``'s line)."""
    info: dict[str, Any] = {"host": platform.node(), "cpus": os.cpu_count(), "platform": platform.platform(),
                            "python": platform.python_version(),
                            "gpu": _run(["nvidia-smi", "--query-gpu=name,driver_version,compute_cap", "--format=csv,noheader"])}
    for label, dists in PACKAGES.items():
        info[label] = None
        for d in dists:
            try:
                info[label] = metadata.version(d)
                break
            except metadata.PackageNotFoundError:
                pass
    nvcc = shutil.which("nvcc")
    version = _run([nvcc, "--version"]) if nvcc else None
    info["nvcc"] = version.splitlines()[-1] if version else None
    info["TMLR_PURE_PYTHON"] = os.environ.get("TMLR_PURE_PYTHON")
    if "tmlr_runtime" in sys.modules:
        from tmlr_runtime.launch import compiled

        info["tmlr_launch_path"] = compiled.describe()
    return info


def question(measurements: dict[str, dict[str, Any]], *, settings: dict[str, Any] | None = None,
             facts: dict[str, Any] | None = None, errors: dict[str, str] | None = None) -> dict[str, Any]:
    """One question's part of a results document, with the command line that measured it."""
    command = " ".join(["python", os.path.relpath(os.path.abspath(sys.argv[0]), ROOT), *sys.argv[1:]])
    return {"command": command, "settings": settings or {}, "facts": facts or {}, "errors": errors or {},
            "measurements": measurements}


def document(questions: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """A results document: the date, this machine's record and the questions."""
    return {"schema": SCHEMA, "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "machine": machine(),
            "questions": questions}


def finish(questions: dict[str, dict[str, Any]], path: str | None) -> int:
    """A script's end: the document of its questions written to ``path`` (when given) and printed as tables."""
    doc = document(questions)
    if path:
        write(doc, path)
    print(markdown(doc))
    return 0


def write(doc: dict[str, Any], path: str) -> None:
    """Write atomically, so a crash later leaves the last complete file."""
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1, default=str, ensure_ascii=False)
        f.write("\n")
    os.replace(tmp, path)


def problems(doc: Any) -> list[str]:
    """Why ``doc`` is not a valid results document (empty when it is); thin measurements included."""
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        return [f"not a {SCHEMA} document"]
    out = [f"missing {k}" for k in ("date", "machine", "questions") if k not in doc]
    for q, body in doc.get("questions", {}).items():
        for k in ("command", "settings", "facts", "errors", "measurements"):
            if k not in body:
                out.append(f"{q}: missing {k}")
        if not body.get("measurements"):
            out.append(f"{q}: no measurements")
        for key, m in body.get("measurements", {}).items():
            s = m.get("samples") if isinstance(m, dict) else None
            if not isinstance(s, list) or not s or not isinstance(m.get("unit"), str):
                out.append(f"{q}/{key}: needs unit and samples")
                continue
            if len(s) < MIN_SAMPLES or m.get("n") != len(s):
                out.append(f"{q}/{key}: {len(s)} sample(s), n={m.get('n')} (at least {MIN_SAMPLES})")
            if (m.get("min"), m.get("max")) != (min(s), max(s)) or abs(m.get("median", 0) - statistics.median(s)) > 1e-3 * abs(statistics.median(s)) + 1e-9:
                out.append(f"{q}/{key}: median/min/max disagree with the samples")
    return out


def merge(docs: list[dict[str, Any]]) -> dict[str, Any]:
    """One document with every question of ``docs`` (the first one's date and machine)."""
    out = {"schema": SCHEMA, "date": docs[0]["date"], "machine": docs[0]["machine"], "questions": {}}
    for d in docs:
        out["questions"].update(d["questions"])
    return out


def _num(x: float) -> str:
    return f"{x:.4g}" if abs(x) < 1e4 else f"{x:.0f}"


def markdown(doc: dict[str, Any]) -> str:
    """Every measurement as ``median [min–max] (n)``, one table per question."""
    m = doc["machine"]
    lines = [f"# Benchmark results, {doc['date']}", "",
             f"{m.get('gpu') or 'no GPU'}; Python {m.get('python')}, torch {m.get('torch')}, Triton {m.get('triton')}, "
             f"cuda-bindings {m.get('cuda-bindings')}, cuda-core {m.get('cuda-core')}; TMLR_PURE_PYTHON={m.get('TMLR_PURE_PYTHON')}"]
    for q, body in doc["questions"].items():
        lines += ["", f"## {q}", "", f"`{body['command']}`", "", "| measurement | unit | median [min–max] | n |", "|---|---|---|---|"]
        for key, s in body["measurements"].items():
            lines.append(f"| {key} | {s['unit']} | {_num(s['median'])} [{_num(s['min'])}–{_num(s['max'])}] | {s['n']} |")
        notes = [f"- {k}: `{json.dumps(v, default=str)}`" for k, v in body["facts"].items()]
        notes += [f"- **error** {k}: {v}" for k, v in body["errors"].items()]
        lines += [""] + notes if notes else []
    thin = [p for p in problems(doc) if "sample" in p]
    if thin:
        lines[2:2] = ["", "**WARNING: " + "; ".join(thin) + "**"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="merge, check or render benchmark results files")
    ap.add_argument("action", choices=("merge", "check", "markdown"))
    ap.add_argument("files", nargs="+")
    ap.add_argument("--out", help="merge: where to write the merged file (default: stdout)")
    a = ap.parse_args(argv)
    docs = []
    for path in a.files:
        with open(path, encoding="utf-8") as f:
            docs.append(json.load(f))
    if a.action == "check":
        bad = [f"{p}: {why}" for p, d in zip(a.files, docs) for why in problems(d)]
        print("\n".join(bad) or "ok")
        return 1 if bad else 0
    if a.action == "markdown":
        print(markdown(merge(docs)), end="")
        return 0
    merged = merge(docs)
    if a.out:
        write(merged, a.out)
    else:
        print(json.dumps(merged, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
