"""Render the suite's results JSON as markdown tables and a PNG bar chart of launch overhead.

    python benchmarks/render.py OUT/results.json [--out DIR] [--also LABEL=OTHER.json ...]

Writes DIR/results.md (default: beside the JSON) and DIR/launch_overhead.png when matplotlib is
importable (``pip install matplotlib``; only the chart needs it). ``--also`` adds the sections of
another results file under "<section> (LABEL)" — e.g. the build section measured on the CPU
machine: ``--also cpu=benchmarks/results/build-cpu.json``.
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import sys
from typing import Any

WORKLOADS = ("nop", "nop_args", "add4")
WORKLOAD_TITLES = {"nop": "nop (0 args)", "nop_args": "nop_args (5 tensors, 9 ints, 5 constexprs)", "add4": "add4 (4 args)"}
SYSTEM_LABELS = {
    "floor": "cuda-python, prebuilt params (floor)",
    "handwritten": "hand-written cuda-python",
    "tmlr": "**tmlr** (checks on)",
    "tmlr_nocheck": "tmlr, checks=False",
    "cuda_core": "cuda.core `launch`",
    "cupy": "CuPy `RawModule` function",
    "triton_jit": "Triton {v} `kernel[grid](...)`",
    "triton_compiled": "Triton {v} `CompiledKernel[grid](...)`",
}


# -- reading -----------------------------------------------------------------------------------------
def section_data(res: dict[str, Any], name: str) -> dict[str, Any] | None:
    s = res.get("sections", {}).get(name) or {}
    if s.get("status") in ("ok", "partial") and isinstance(s.get("data"), dict):
        return s["data"]
    return None


def _get(d: Any, *keys: Any) -> Any:
    for k in keys:
        if not isinstance(d, dict) or k not in d:
            return None
        d = d[k]
    return d


def _ratio(a: Any, b: Any) -> float | None:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b:
        return a / b
    return None


def launch_sections(res: dict[str, Any]) -> list[tuple[str, dict[str, Any], str]]:
    """(section name, data, Triton version or '') of every launch section with data."""
    out = []
    for name in ("launch", "launch_triton33"):
        d = section_data(res, name)
        if d is not None:
            out.append((name, d, str(d.get("triton") or "")))
    return out


def merge_also(res: dict[str, Any], also: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    res = copy.deepcopy(res)
    for label, other in also:
        for name, sec in other.get("sections", {}).items():
            if sec.get("status") in ("ok", "partial"):
                res.setdefault("sections", {})[f"{name} ({label})"] = sec
    return res


# -- targets -----------------------------------------------------------------------------------------
def evaluate_targets(res: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per target and scope: value, limit, met (None where not measured)."""
    rows: list[dict[str, Any]] = []

    def add(target: str, scope: str, value: float | None, limit: str, met: bool | None, unit: str = "×", note: str = "") -> None:
        rows.append({"target": target, "scope": scope, "value": value, "unit": unit, "limit": limit,
                     "met": None if value is None else met, "note": note})

    by_version = {v[:3]: (name, d) for name, d, v in launch_sections(res)}
    for ver, limit, label in (("3.6", 0.35, "Triton 3.6 JIT"), ("3.3", 0.25, "Triton 3.3.1 JIT")):
        name, d = by_version.get(ver, (None, None))
        for w in WORKLOADS:
            r = _ratio(_get(d, "workloads", w, "tmlr", "us"), _get(d, "workloads", w, "triton_jit", "us"))
            add(f"launch, default checks ≤ {limit} × {label}", w, r, f"≤ {limit}", r is not None and r <= limit)
    for name, d, v in launch_sections(res):
        for w in WORKLOADS:
            r = _ratio(_get(d, "workloads", w, "tmlr", "us"), _get(d, "workloads", w, "handwritten", "us"))
            add("launch, default checks ≤ 1.1 × hand-written cuda-python", f"{w} (Triton {v or '?'} process)", r, "≤ 1.1",
                r is not None and r <= 1.1)
    gpu = section_data(res, "gpu_time")
    for k in (_get(gpu, "kernels") or {"(not measured)": {}}):
        doc = _get(gpu, "kernels", k) or {}
        r = doc.get("ratio")
        same = doc.get("outputs_identical")
        ok = r is not None and 0.97 <= r <= 1.03 and bool(same) and bool(doc.get("tmlr_correct"))
        add("GPU time = 1.00 ± 0.03 × Triton 3.3.1's own launch of the same cubin", k, r, "0.97–1.03", ok,
            note="" if same is None else ("outputs identical" if same else "OUTPUTS DIFFER"))
    launch = section_data(res, "launch")
    floor = section_data(res, "c_floor")
    for w in WORKLOADS:
        r = _ratio(_get(launch, "graph", "workloads", w, "tmlr", "us_per_kernel"), _get(floor, "workloads", w, "graph_us_per_kernel"))
        add("CUDA-graph replay per kernel within 5 % of the C floor", w, r, "≤ 1.05", r is not None and r <= 1.05)
    start = _get(section_data(res, "start"), "start_s") or {}
    r = _ratio(start.get("tmlr_no_torch"), start.get("bare_cuda_python"))
    add("cold start without torch ≤ 1.3 × bare cuda-python", "add4", r, "≤ 1.3", r is not None and r <= 1.3)
    a, b = start.get("tmlr_with_torch"), start.get("import_torch_cuda")
    diff = a - b if isinstance(a, (int, float)) and isinstance(b, (int, float)) else None
    add("start with torch ≤ import torch + 0.15 s", "add4", diff, "≤ +0.15 s", diff is not None and diff <= 0.15, unit="s")
    load = _get(section_data(res, "load"), "load_s") or {}
    r = _ratio(load.get("kernel_load_first"), load.get("raw_module_load"))
    add("Kernel.load ≤ 1.5 × raw cuModuleLoadData + cuModuleGetFunction", "add4", r, "≤ 1.5", r is not None and r <= 1.5)
    cached = load.get("kernel_load_cached")
    cached_us = cached * 1e6 if isinstance(cached, (int, float)) else None
    add("cached Kernel.load ≤ 50 µs", "add4", cached_us, "≤ 50 µs", cached_us is not None and cached_us <= 50, unit="µs")
    builds = [n for n in res.get("sections", {}) if n.startswith("build")] or ["build"]
    for name in builds:
        d = section_data(res, name)
        where = name[len("build"):].strip()
        per = _get(d, "per_kernel") or {"(not measured)": {}}
        for k, row in per.items():
            r = row.get("ratio")
            add("tmlr-build ≤ 1.1 × triton.compile (fresh process each)", f"{k} {where}".strip(), r, "≤ 1.1",
                r is not None and r <= 1.1)
    return rows


def _fmt(v: Any, digits: int = 3) -> str:
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def targets_markdown(rows: list[dict[str, Any]]) -> str:
    lines = ["| target | scope | value | limit | met? |", "|---|---|---|---|---|"]
    for r in rows:
        v = r["value"]
        val = "—" if v is None else (f"{v:+.3f} s" if r["unit"] == "s" else f"{v:.1f} µs" if r["unit"] == "µs" else f"{v:.3f} ×")
        met = "not measured" if r["met"] is None else ("met" if r["met"] else "**missed**")
        note = f" ({r['note']})" if r.get("note") else ""
        lines.append(f"| {r['target']} | {r['scope']} | {val}{note} | {r['limit']} | {met} |")
    met = sum(1 for r in rows if r["met"])
    missed = sum(1 for r in rows if r["met"] is False)
    lines.append(f"\n{met} met, {missed} missed, {len(rows) - met - missed} not measured.")
    return "\n".join(lines)


# -- tables --------------------------------------------------------------------------------------------
def _table(header: list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def launch_markdown(res: dict[str, Any]) -> str:
    parts = []
    floor = section_data(res, "c_floor")
    for name, d, v in launch_sections(res):
        systems: list[str] = []
        for w in WORKLOADS:
            for s in _get(d, "workloads", w) or {}:
                if s not in systems:
                    systems.append(s)
        rows = []
        for s in systems:
            cells = []
            for w in WORKLOADS:
                r = _get(d, "workloads", w, s) or {}
                us, hw = r.get("us"), r.get("vs_handwritten")
                cells.append("—" if us is None else f"{us:.2f}" + (f" ({hw:.2f}×)" if hw is not None else ""))
            rows.append([SYSTEM_LABELS.get(s, s).format(v=v or "?")] + cells)
        if floor:
            rows.append(["C `cuLaunchKernel` loop (own process)"]
                        + [_fmt(_get(floor, "workloads", w, "launch_us"), 2) for w in WORKLOADS])
        parts.append(f"### Host µs per launch, process with Triton {v or '(none)'} (`{name}`)\n\n"
                     f"Median of {d.get('rounds')} rounds of bursts of {d.get('burst')}; in parentheses: × hand-written.\n\n"
                     + _table(["system"] + [WORKLOAD_TITLES[w] for w in WORKLOADS], rows))
        correct = d.get("add4_correct")
        if isinstance(correct, dict) and correct:
            parts.append("add4 result correct: " + ", ".join(f"{s} {_fmt(c)}" for s, c in correct.items()))
    return "\n\n".join(parts)


def graph_markdown(res: dict[str, Any]) -> str:
    floor = section_data(res, "c_floor")
    cols: list[tuple[str, Any]] = []
    for name, d, v in launch_sections(res):
        for s in ("tmlr", "triton_jit"):
            cols.append((f"{'tmlr' if s == 'tmlr' else 'Triton ' + v + ' JIT'} ({name})", (d, s)))
    if not cols and not floor:
        return ""
    rows = []
    base = section_data(res, "launch")
    for w in WORKLOADS:
        cells = [_fmt(_get(d, "graph", "workloads", w, s, "us_per_kernel")) for _, (d, s) in cols]
        c = _get(floor, "workloads", w, "graph_us_per_kernel")
        r = _ratio(_get(base, "graph", "workloads", w, "tmlr", "us_per_kernel"), c)
        rows.append([w] + cells + [_fmt(c), _fmt(r)])
    n = _get(base, "graph", "n") or _get(floor, "workloads", "nop", "graph_n")
    return (f"### CUDA graph of {n} launches: GPU µs per kernel of a replay\n\n"
            + _table(["workload"] + [c for c, _ in cols] + ["C floor", "tmlr / C"], rows))


def gpu_markdown(res: dict[str, Any]) -> str:
    d = section_data(res, "gpu_time")
    if not d:
        return ""
    rows = []
    for k, doc in d.get("kernels", {}).items():
        rows.append([k, _fmt(doc.get("tmlr_ms"), 4), _fmt(doc.get("triton33_ms"), 4), _fmt(doc.get("ratio"), 4),
                     _fmt(doc.get("outputs_identical")), f"{_fmt(doc.get('tmlr_correct'))} / {_fmt(doc.get('triton33_correct'))}",
                     _fmt(doc.get("same_cubin")), "none" if not doc.get("launch_facts_mismatch") else json.dumps(doc["launch_facts_mismatch"]),
                     f"{doc.get('iters')} × {doc.get('rounds')}"])
    if not rows:
        return ""
    return ("### GPU time per launch (ms), same cubin: tmlr vs Triton 3.3.1's launcher\n\n"
            + _table(["kernel", "tmlr", "Triton 3.3.1", "ratio", "identical outputs", "correct (tmlr / Triton)", "same cubin",
                      "launch facts differing", "launches × rounds"], rows))


START_LABELS = {
    "bare_cuda_python": "bare cuda-python script (no torch)",
    "tmlr_no_torch": "**tmlr**, no torch (cuMemAlloc buffers)",
    "import_torch_cuda": "`import torch` + one CUDA tensor",
    "tmlr_with_torch": "**tmlr** with torch",
}


def start_markdown(res: dict[str, Any]) -> str:
    d = section_data(res, "start")
    if not d:
        return ""
    versions = d.get("triton_versions", {})
    rows = []
    for k, t in d.get("start_s", {}).items():
        label = START_LABELS.get(k)
        if label is None:
            base, _, kind = k.rpartition("_jit_")
            label = f"Triton {versions.get(base) or base} JIT, {kind} cache"
        rss = d.get("rss_kib", {}).get(k, {})
        rows.append([label, _fmt(t), ", ".join(f"{s:.2f}" for s in d.get("start_samples_s", {}).get(k, [])),
                     _fmt(rss.get("VmRSS", 0) / 1024 if rss else None, 1), _fmt(rss.get("VmHWM", 0) / 1024 if rss else None, 1)])
    for k, e in d.get("start_errors", {}).items():
        rows.append([k, "error", e.replace("|", "/")[:200], "—", "—"])
    return ("### Process start → first correct result (s), and resident memory (MiB)\n\n"
            + _table(["system", "median s", "runs", "RSS at end", "peak RSS"], rows))


def load_markdown(res: dict[str, Any]) -> str:
    load = _get(section_data(res, "load"), "load_s")
    if not load:
        return ""
    rows = [[k, _fmt(v * 1e6, 1)] for k, v in load.items()]
    r = _ratio(load.get("kernel_load_first"), load.get("raw_module_load"))
    rows.append(["first load / raw", _fmt(r)])
    return "### Loading (µs, median)\n\n" + _table(["measurement", "µs"], rows)


SPEC_LABELS = {"triton_compile_serial_s": "triton.compile, one process, serially (wall)",
               "triton_compile_calls_s": "triton.compile calls alone (sum)"}


def build_markdown(res: dict[str, Any]) -> str:
    parts = []
    for name in [n for n in res.get("sections", {}) if n.startswith("build")]:
        d = section_data(res, name)
        if not d:
            continue
        rows = [[k, _fmt(r.get("tmlr_build_s")), _fmt(r.get("triton_compile_process_s")), _fmt(r.get("triton_compile_call_s")),
                 _fmt(r.get("ratio"))] for k, r in d.get("per_kernel", {}).items()]
        where = name[len("build"):].strip()
        parts.append(f"### tmlr-build vs triton.compile {where + ', ' if where else ''}{d.get('cpus')} CPUs, Triton {d.get('triton')} (s, median of {d.get('reps')})\n\n"
                     + _table(["kernel (sm_90a)", "tmlr-build process", "triton.compile process", "triton.compile call", "ratio"], rows))
        spec = d.get("spec") or {}
        if spec:
            srows = [[SPEC_LABELS.get(k, k.replace("tmlr_build_j", "tmlr-build -j ").removesuffix("_s")), _fmt(v, 2)]
                     for k, v in spec.items() if k.endswith("_s")]
            parts.append(f"Whole `examples/kernels.json` ({spec.get('kernels')} kernels, {spec.get('compiles')} compiles for sm_80 + sm_90a):\n\n"
                         + _table(["run", "wall s"], srows))
    return "\n\n".join(parts)


def status_markdown(res: dict[str, Any]) -> str:
    rows = []
    for name, s in res.get("sections", {}).items():
        rows.append([name, s.get("status", "?"), _fmt(s.get("wall_s"), 1), (s.get("error") or "").replace("|", "/")[:300]])
    errs = []
    for name, s in res.get("sections", {}).items():
        for key, val in _flatten_errors(_get(s, "data", "errors")):
            errs.append(f"- `{name}` {key}: {str(val).replace(chr(10), ' ')[:300]}")
    for name, s in res.get("sections", {}).items():
        for key, val in (_get(s, "data", "start_errors") or {}).items():
            errs.append(f"- `{name}` {key}: {str(val)[:300]}")
    out = "### Sections\n\n" + _table(["section", "status", "wall s", "error"], rows)
    if errs:
        out += "\n\nErrors inside sections (the rest of each section ran):\n\n" + "\n".join(errs)
    return out


def _flatten_errors(e: Any, prefix: str = "") -> list[tuple[str, Any]]:
    if not isinstance(e, dict):
        return []
    out = []
    for k, v in e.items():
        if isinstance(v, dict):
            out += _flatten_errors(v, f"{prefix}{k} / ")
        else:
            out.append((f"{prefix}{k}", v))
    return out


def markdown(res: dict[str, Any]) -> str:
    m = res.get("machine", {})
    head = [f"# tmlr performance suite results ({res.get('started', '?')}{', quick' if res.get('quick') else ''})", "",
            "Machine: " + "; ".join(f"{k} {v}" for k, v in m.items() if v is not None), "",
            "## Targets", "", targets_markdown(res.get("targets") or evaluate_targets(res)), "", "## Measurements"]
    body = [launch_markdown(res), graph_markdown(res), gpu_markdown(res), start_markdown(res), load_markdown(res),
            build_markdown(res), status_markdown(res)]
    return "\n".join(head) + "\n\n" + "\n\n".join(b for b in body if b) + "\n"


# -- chart ---------------------------------------------------------------------------------------------
def chart_series(res: dict[str, Any]) -> list[tuple[str, dict[str, float]]]:
    """(label, {workload: µs}) per system, fastest kinds first: the C floor, then the base process,
    then Triton 3.3.1 from its own process."""
    series: list[tuple[str, dict[str, float]]] = []
    floor = section_data(res, "c_floor")
    if floor:
        series.append(("C cuLaunchKernel loop", {w: _get(floor, "workloads", w, "launch_us") for w in WORKLOADS}))
    for name, d, v in launch_sections(res):
        keep = SYSTEM_LABELS if name == "launch" else ("triton_jit", "triton_compiled")
        for s in keep:
            vals = {w: _get(d, "workloads", w, s, "us") for w in WORKLOADS}
            if any(x is not None for x in vals.values()):
                series.append((SYSTEM_LABELS[s].format(v=v).replace("*", "").replace("`", ""), vals))
    return series


def chart(res: dict[str, Any], path: str) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    series = chart_series(res)
    if not series:
        return False
    fig, axes = plt.subplots(1, len(WORKLOADS), figsize=(15, 0.42 * len(series) + 1.8), sharey=True)
    labels = [s for s, _ in series]
    for ax, w in zip(axes, WORKLOADS):
        vals = [vals.get(w) for _, vals in series]
        ys = range(len(series))
        colors = ["#d62728" if lab.startswith("tmlr") else "#7f7f7f" if "floor" in lab or lab.startswith("C ") else "#1f77b4"
                  for lab in labels]
        ax.barh(list(ys), [v or 0 for v in vals], color=colors)
        for y, v in zip(ys, vals):
            ax.text((v or 0) * 1.01, y, "n/a" if v is None else f"{v:.2f}", va="center", fontsize=8)
        ax.set_title(WORKLOAD_TITLES[w], fontsize=10)
        ax.set_xlabel("host µs per launch (median)")
        ax.set_xlim(0, max([v for v in vals if v is not None] + [1]) * 1.2)
        ax.invert_yaxis()
    axes[0].set_yticks(list(range(len(series))))
    axes[0].set_yticklabels(labels, fontsize=9)
    gpu = res.get("machine", {}).get("gpu", "")
    fig.suptitle(f"Launch overhead per system, same cubin ({gpu})", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def render(results_path: str, out_dir: str | None = None, also: list[tuple[str, str]] | None = None) -> list[str]:
    with open(results_path) as f:
        res = json.load(f)
    extra = []
    for label, p in also or []:
        with open(p) as f:
            extra.append((label, json.load(f)))
    if extra:
        res = merge_also(res, extra)
        res["targets"] = evaluate_targets(res)
    out_dir = out_dir or os.path.dirname(os.path.abspath(results_path))
    os.makedirs(out_dir, exist_ok=True)
    made = []
    md = os.path.join(out_dir, "results.md")
    with open(md, "w") as f:
        f.write(markdown(res))
    made.append(md)
    png = os.path.join(out_dir, "launch_overhead.png")
    if chart(res, png):
        made.append(png)
    return made


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results")
    ap.add_argument("--out", help="folder for results.md and launch_overhead.png (default: beside RESULTS)")
    ap.add_argument("--also", action="append", default=[], metavar="LABEL=FILE", help="sections of another results JSON")
    a = ap.parse_args(argv)
    also = []
    for item in a.also:
        label, sep, path = item.partition("=")
        if not sep:
            ap.error(f"--also takes LABEL=FILE, not {item!r}")
        also.append((label, path))
    for p in render(a.results, a.out, also):
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
