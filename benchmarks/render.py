"""Render the suite's results JSON as markdown tables and a PNG bar chart of launch overhead.

    python benchmarks/render.py OUT/results.json [--out DIR] [--also LABEL=OTHER.json ...] [--chart]

Writes DIR/<name of the JSON>.md (default DIR: beside the JSON; ``results.json`` gives
``results.md``) and DIR/launch_overhead.png. The chart needs
matplotlib (``pip install .[bench]``); without it a note goes to stderr and only the markdown is
written, unless ``--chart`` is given, which makes a missing chart an error. ``--also`` adds the
sections of another file under "<section> (LABEL)": a suite results JSON, or the JSON of one
section script that names its section (``build_time.py`` does), e.g. the build section measured
on the CPU machine: ``--also cpu=benchmarks/results/build-cpu.json``.

Every figure is shown as its median with the spread of its samples, ``median [min–max]``; ratios
are per round where both systems ran in the same rounds.
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import MIN_SAMPLES  # noqa: E402

WORKLOADS = ("nop", "nop_args", "add4")
WORKLOAD_TITLES = {"nop": "nop (0 args)", "nop_args": "nop_args (5 tensors, 9 ints, 5 constexprs)", "add4": "add4 (4 args)"}
SYSTEM_LABELS = {
    "floor": "cuda-python, prebuilt params (floor)",
    "lean": "hand-written cuda-python, lean (**baseline**)",
    "naive": "hand-written cuda-python, naive (reference only)",
    "tmlr": "**tmlr** (checks on)",
    "tmlr_nocheck": "tmlr, checks=False",
    "cuda_core": "cuda.core `launch`",
    "cupy": "CuPy `RawModule` function",
    "triton_jit": "Triton {v} `kernel[grid](...)`",
    "triton_compiled": "Triton {v} `CompiledKernel[grid](...)`",
}
GRAPH_LABELS = {
    "tmlr": "tmlr (torch capture)",
    "lean": "lean cuda-python (torch capture)",
    "lean_driver_capture": "lean cuda-python (driver capture, as the C floor)",
    "triton_jit": "Triton {v} JIT (torch capture)",
    "triton_jit_nospec": "Triton {v} JIT, `n` not specialized (torch capture)",
}
NO_CHART = "no chart: matplotlib is not installed (pip install .[bench]); wrote the markdown only"


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


def med(m: Any) -> float | None:
    """The median of a measurement (a stats dict), or a bare number as it is."""
    if isinstance(m, dict):
        m = m.get("median")
    return m if isinstance(m, (int, float)) and not isinstance(m, bool) else None


def spread(m: Any, digits: int = 3) -> str:
    """``median [min–max]`` of a measurement; ``—`` when there is none."""
    v = med(m)
    if v is None:
        return "—"
    if isinstance(m, dict) and "min" in m and "max" in m:
        return f"{v:.{digits}f} [{m['min']:.{digits}f}–{m['max']:.{digits}f}]"
    return f"{v:.{digits}f}"


def launch_sections(res: dict[str, Any]) -> list[tuple[str, dict[str, Any], str]]:
    """(section name, data, Triton version or '') of every launch section with data."""
    out = []
    for name in ("launch", "launch_triton33"):
        d = section_data(res, name)
        if d is not None:
            out.append((name, d, str(d.get("triton") or "")))
    return out


def as_results(doc: dict[str, Any], where: str) -> dict[str, Any]:
    """A suite results file as it is; the JSON of one section script that names its section
    (``build_time.py`` does) as a results file holding that section."""
    if "sections" in doc:
        return doc
    if doc.get("section"):
        machine = {k: doc[k] for k in ("host", "cpus", "python", "triton") if k in doc}
        return {"started": doc.get("date", "?"), "machine": machine, "sections": {doc["section"]: {"status": "ok", "data": doc}}}
    raise ValueError(f"{where}: neither a suite results file nor a section's JSON (no 'sections' or 'section' key)")


def merge_also(res: dict[str, Any], also: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    res = copy.deepcopy(res)
    for label, other in also:
        for name, sec in as_results(other, f"--also {label}")["sections"].items():
            if sec.get("status") in ("ok", "partial"):
                res.setdefault("sections", {})[f"{name} ({label})"] = sec
    return res


# -- targets -----------------------------------------------------------------------------------------
def evaluate_targets(res: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per target and scope: the measurement (median, min, max, n), limit, met (None
    where not measured or resting on fewer than MIN_SAMPLES samples). Rows with ``info`` set
    report a figure with no target."""
    rows: list[dict[str, Any]] = []

    def add(target: str, scope: str, m: Any, limit: str, ok: Any, unit: str = "×", note: str = "", info: bool = False,
            scale: float = 1.0) -> None:
        v = med(m)
        stat = m if isinstance(m, dict) else {}
        n = stat.get("n")
        lo, hi = stat.get("min"), stat.get("max")
        met = None if v is None or info else bool(ok(v))
        if n is not None and n < MIN_SAMPLES:
            met, note = None, f"ONLY {n} SAMPLE(S)" + (f"; {note}" if note else "")
        rows.append({"target": target, "scope": scope, "value": None if v is None else v * scale,
                     "min": None if lo is None else lo * scale, "max": None if hi is None else hi * scale, "n": n,
                     "unit": unit, "limit": limit, "met": met, "note": note, "info": info})

    by_version = {v[:3]: d for _, d, v in launch_sections(res)}
    for ver, limit, label in (("3.6", 0.35, "Triton 3.6 JIT"), ("3.3", 0.25, "Triton 3.3.1 JIT")):
        d = by_version.get(ver)
        for w in WORKLOADS:
            add(f"launch, default checks ≤ {limit} × {label}", w, _get(d, "workloads", w, "tmlr", "vs_triton_jit"), f"≤ {limit}",
                lambda r, limit=limit: r <= limit)
    for name, d, v in launch_sections(res):
        for w in WORKLOADS:
            scope = f"{w} (Triton {v or '?'} process)"
            add("launch, default checks ≤ 1.1 × lean hand-written cuda-python", scope,
                _get(d, "workloads", w, "tmlr", "vs_lean"), "≤ 1.1", lambda r: r <= 1.1)
            add("launch, checks=False / lean hand-written cuda-python", scope,
                _get(d, "workloads", w, "tmlr_nocheck", "vs_lean"), "(info)", None, info=True)
    gpu = section_data(res, "gpu_time")
    for k in (_get(gpu, "kernels") or {"(not measured)": {}}):
        doc = _get(gpu, "kernels", k) or {}
        same, ok_torch = doc.get("outputs_identical"), doc.get("tmlr_correct")
        notes = []
        if same is not None:
            notes.append("outputs bit-identical to Triton's" if same else "OUTPUTS DIFFER FROM TRITON'S")
        if ok_torch is not None:
            notes.append("matches torch within tolerance" if ok_torch else "TORCH REFERENCE CHECK FAILED")
        add("GPU time = 1.00 ± 0.03 × Triton 3.3.1's own launch of the same cubin", k, doc.get("ratio"), "0.97–1.03",
            lambda r, same=same, ok_torch=ok_torch: 0.97 <= r <= 1.03 and bool(same) and bool(ok_torch), note="; ".join(notes))
    launch = section_data(res, "launch")
    floor = section_data(res, "c_floor")
    for w in WORKLOADS:
        a = med(_get(launch, "graph", "workloads", w, "tmlr", "us_per_kernel"))
        b = med(_get(floor, "workloads", w, "graph_us_per_kernel"))
        r = a / b if a is not None and b else None
        add("CUDA-graph replay per kernel within 5 % of the C floor", w, r, "≤ 1.05", lambda r: r <= 1.05,
            note="ratio of medians of separate processes")
    start = _get(section_data(res, "start"), "start_ratios") or {}
    add("cold start without torch ≤ 1.3 × bare cuda-python", "add4", start.get("tmlr_no_torch_vs_bare"), "≤ 1.3", lambda r: r <= 1.3)
    add("start with torch ≤ import torch + 0.15 s", "add4", start.get("tmlr_with_torch_minus_torch_s"), "≤ +0.15 s",
        lambda r: r <= 0.15, unit="s")
    load = _get(section_data(res, "load"), "load_us") or {}
    add("Kernel.load ≤ 1.5 × raw cuModuleLoadData + cuModuleGetFunction", "add4", load.get("first_vs_raw"), "≤ 1.5", lambda r: r <= 1.5)
    add("cached Kernel.load ≤ 50 µs", "add4", load.get("kernel_load_cached"), "≤ 50 µs", lambda r: r <= 50, unit="µs")
    builds = [n for n in res.get("sections", {}) if n.startswith("build")] or ["build"]
    for name in builds:
        where = name[len("build"):].strip()
        for k, row in (_get(section_data(res, name), "per_kernel") or {"(not measured)": {}}).items():
            add("tmlr-build ≤ 1.1 × triton.compile (fresh process each)", f"{k} {where}".strip(), row.get("ratio"), "≤ 1.1",
                lambda r: r <= 1.1)
    return rows


def _value_text(r: dict[str, Any]) -> str:
    v = r["value"]
    if v is None:
        return "—"
    unit = r["unit"]
    fmt = (lambda x: f"{x:+.3f}") if unit == "s" else (lambda x: f"{x:.1f}") if unit == "µs" else (lambda x: f"{x:.3f}")
    text = fmt(v) + {"s": " s", "µs": " µs", "×": " ×"}[unit]
    if r.get("min") is not None and r.get("max") is not None:
        text += f" [{fmt(r['min'])}–{fmt(r['max'])}, n={r['n']}]"
    return text


def targets_markdown(rows: list[dict[str, Any]]) -> str:
    lines = ["| target | scope | median [min–max, samples] | limit | met? |", "|---|---|---|---|---|"]
    for r in rows:
        met = "info" if r.get("info") else "not measured" if r["met"] is None else ("met" if r["met"] else "**missed**")
        note = f" ({r['note']})" if r.get("note") else ""
        lines.append(f"| {r['target']} | {r['scope']} | {_value_text(r)}{note} | {r['limit']} | {met} |")
    scored = [r for r in rows if not r.get("info")]
    met = sum(1 for r in scored if r["met"])
    missed = sum(1 for r in scored if r["met"] is False)
    lines.append(f"\n{met} met, {missed} missed, {len(scored) - met - missed} not measured.")
    return "\n".join(lines)


# -- tables --------------------------------------------------------------------------------------------
def _table(header: list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def _fmt(v: Any, digits: int = 3) -> str:
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.{digits}g}" if abs(v) < 1e-3 and v else f"{v:.{digits}f}"
    return str(v)


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
                ratio = med(r.get("vs_lean"))
                cells.append(spread(r.get("us"), 2) + (f" ({ratio:.2f}×)" if ratio is not None else ""))
            rows.append([SYSTEM_LABELS.get(s, s).format(v=v or "?")] + cells)
        if floor:
            rows.append(["C `cuLaunchKernel` loop (own process)"] + [spread(_get(floor, "workloads", w, "launch_us"), 2) for w in WORKLOADS])
        parts.append(f"### Host µs per launch, process with Triton {v or '(none)'} (`{name}`)\n\n"
                     f"µs per launch, median [min–max] of {d.get('rounds')} rounds of bursts of {d.get('burst')}; "
                     "in parentheses: the median of the per-round ratios to the lean hand-written launcher.\n\n"
                     + _table(["system"] + [WORKLOAD_TITLES[w] for w in WORKLOADS], rows))
        correct = d.get("add4_correct")
        if isinstance(correct, dict) and correct:
            parts.append("add4 result correct: " + ", ".join(f"{s} {_fmt(c)}" for s, c in correct.items()))
    return "\n\n".join(parts)


def _nodes_text(nodes: Any) -> str:
    if not isinstance(nodes, dict):
        return "(not inspected)"
    if "error" in nodes:
        return f"(listing failed: {nodes['error']})".replace("|", "/")
    types = ", ".join(f"{n} {t}" for t, n in nodes.get("types", {}).items())
    kernels = "; ".join(f"{n} × {k.split(' ', 2)[2]}" for k, n in nodes.get("kernel_nodes", {}).items())  # drop the handle
    return f"{types}: {kernels}" if kernels else types


def graph_markdown(res: dict[str, Any]) -> str:
    floor = section_data(res, "c_floor")
    parts = []
    for name, d, v in launch_sections(res):
        g = d.get("graph") or {}
        systems: list[str] = []
        for w in WORKLOADS:
            for s in _get(g, "workloads", w) or {}:
                if s not in systems:
                    systems.append(s)
        if not systems:
            continue
        rows = [[GRAPH_LABELS.get(s, s).format(v=v or "?")] + [spread(_get(g, "workloads", w, s, "us_per_kernel")) for w in WORKLOADS]
                for s in systems]
        if floor:
            rows.append(["C program (own process, driver capture)"] + [spread(_get(floor, "workloads", w, "graph_us_per_kernel")) for w in WORKLOADS])
        nodes = [[GRAPH_LABELS.get(s, s).format(v=v or "?")]
                 + [_nodes_text(_get(g, "workloads", w, s, "nodes")) if _get(g, "workloads", w, s) else "—" for w in WORKLOADS]
                 for s in systems]
        text = (f"### CUDA graph of {g.get('n')} launches, process with Triton {v or '(none)'} (`{name}`)\n\n"
                f"GPU µs per kernel of a replay, median [min–max] of {g.get('rounds')} replays:\n\n"
                + _table(["graph"] + [WORKLOAD_TITLES[w] for w in WORKLOADS], rows)
                + "\n\nWhat each captured graph holds (node types; kernel nodes by grid, block, shared bytes):\n\n"
                + _table(["graph"] + list(WORKLOADS), nodes))
        codegen = d.get("add4_codegen")
        if isinstance(codegen, dict):
            text += "\n\nadd4 global loads/stores in Triton's PTX: " + "; ".join(
                f"{s}: " + ", ".join(f"{op} × {n}" for op, n in ops.items()) for s, ops in codegen.items() if isinstance(ops, dict))
        parts.append(text)
    return "\n\n".join(parts)


def gpu_markdown(res: dict[str, Any]) -> str:
    d = section_data(res, "gpu_time")
    if not d:
        return ""
    rows = []
    for k, doc in d.get("kernels", {}).items():
        tol = doc.get("reference_tolerance") or {}
        rows.append([k, spread(doc.get("tmlr_ms"), 4), spread(doc.get("triton33_ms"), 4), spread(doc.get("ratio"), 4),
                     _fmt(doc.get("outputs_identical")), f"{_fmt(doc.get('tmlr_correct'))} / {_fmt(doc.get('triton33_correct'))}",
                     f"{_fmt(doc.get('tmlr_max_err'))} (atol {_fmt(tol.get('atol'))}, rtol {_fmt(tol.get('rtol'))})",
                     _fmt(doc.get("same_cubin")), "none" if not doc.get("launch_facts_mismatch") else json.dumps(doc["launch_facts_mismatch"]),
                     f"{doc.get('iters')} × {doc.get('rounds')}"])
    if not rows:
        return ""
    return ("### GPU time per launch (ms), same cubin: tmlr vs Triton 3.3.1's launcher\n\n"
            "Median [min–max] of the rounds; the ratio per round. Two separate checks: the outputs of the two "
            "launchers are bit-identical, and each matches a torch reference within the kernel's tolerance.\n\n"
            + _table(["kernel", "tmlr", "Triton 3.3.1", "ratio", "outputs bit-identical", "matches torch (tmlr / Triton)",
                      "max error vs torch (tolerance)", "same cubin", "launch facts differing", "launches × rounds"], rows))


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
        mib = {key: (None if med(rss.get(key)) is None else med(rss.get(key)) / 1024) for key in ("VmRSS", "VmHWM")}
        rows.append([label, spread(t), _fmt(_get(t, "n")), _fmt(mib["VmRSS"], 1), _fmt(mib["VmHWM"], 1)])
    for k, e in d.get("start_errors", {}).items():
        rows.append([k, "error: " + e.replace("|", "/")[:200], "—", "—", "—"])
    return ("### Process start → first correct result (s), and resident memory (MiB)\n\n"
            + _table(["system", "wall s, median [min–max]", "runs", "RSS at end (median)", "peak RSS (median)"], rows))


def load_markdown(res: dict[str, Any]) -> str:
    load = _get(section_data(res, "load"), "load_us")
    if not load:
        return ""
    rows = [[k, spread(v, 1 if k != "first_vs_raw" else 3), _fmt(_get(v, "n"))] for k, v in load.items()]
    return "### Loading (µs; first_vs_raw per rep)\n\n" + _table(["measurement", "median [min–max]", "samples"], rows)


SPEC_LABELS = {"triton_compile_serial_s": "triton.compile, one process, serially (wall)",
               "triton_compile_calls_s": "triton.compile calls alone (sum)"}


def build_markdown(res: dict[str, Any]) -> str:
    parts = []
    for name in [n for n in res.get("sections", {}) if n.startswith("build")]:
        d = section_data(res, name)
        if not d:
            continue
        rows = [[k, spread(r.get("tmlr_build_s")), spread(r.get("triton_compile_process_s")), spread(r.get("triton_compile_call_s")),
                 spread(r.get("ratio"))] for k, r in d.get("per_kernel", {}).items()]
        where = name[len("build"):].strip()
        load = ""
        if d.get("loadavg_before") is not None:
            after = (d.get("loadavg_after") or ["?"])[0]
            load = f"; 1-minute load average before / after: {d['loadavg_before'][0]:.2f} / {_fmt(after, 2)}"
        parts.append(f"### tmlr-build vs triton.compile{' ' + where if where else ''}, {d.get('cpus')} CPUs, Triton {d.get('triton')} "
                     f"(s, median [min–max] of {d.get('reps')}{load})\n\n"
                     + _table(["kernel (sm_90a)", "tmlr-build process", "triton.compile process", "triton.compile call", "ratio (per rep)"], rows))
        spec = d.get("spec") or {}
        srows = [[SPEC_LABELS.get(k, k.replace("tmlr_build_j", "tmlr-build -j ").removesuffix("_s")), spread(v, 2)]
                 for k, v in spec.items() if k.endswith("_s")]
        if srows:
            parts.append(f"Whole `examples/kernels.json` ({spec.get('kernels')} kernels, {spec.get('compiles')} compiles for sm_80 + sm_90a):\n\n"
                         + _table(["run", "wall s, median [min–max]"], srows))
    return "\n\n".join(parts)


def status_markdown(res: dict[str, Any]) -> str:
    rows = []
    for name, s in res.get("sections", {}).items():
        rows.append([name, s.get("status", "?"), _fmt(s.get("wall_s"), 1), (s.get("error") or "").replace("|", "/")[:300]])
    errs = []
    for name, s in res.get("sections", {}).items():
        for key, val in _flatten_errors(_get(s, "data", "errors")):
            errs.append(f"- `{name}` {key}: {str(val).replace(chr(10), ' ')[:300]}")
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
            "Machine: " + "; ".join(f"{k} {v}" for k, v in m.items() if v is not None), ""]
    thin = res.get("thin_samples") or {}
    if thin:
        head += [f"**WARNING: measurements with fewer than {MIN_SAMPLES} samples** (not usable as figures):", ""]
        head += [f"- `{name}`: " + "; ".join(paths) for name, paths in thin.items()] + [""]
    head += ["## Targets", "", targets_markdown(res.get("targets") or evaluate_targets(res)), "", "## Measurements"]
    body = [launch_markdown(res), graph_markdown(res), gpu_markdown(res), start_markdown(res), load_markdown(res),
            build_markdown(res), status_markdown(res)]
    return "\n".join(head) + "\n\n" + "\n\n".join(b for b in body if b) + "\n"


# -- chart ---------------------------------------------------------------------------------------------
def chart_series(res: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(label, {workload: measurement}) per system, fastest kinds first: the C floor, then the base
    process, then Triton 3.3.1 from its own process."""
    series: list[tuple[str, dict[str, Any]]] = []
    floor = section_data(res, "c_floor")
    if floor:
        series.append(("C cuLaunchKernel loop", {w: _get(floor, "workloads", w, "launch_us") for w in WORKLOADS}))
    for name, d, v in launch_sections(res):
        keep = SYSTEM_LABELS if name == "launch" else ("triton_jit", "triton_compiled")
        for s in keep:
            vals = {w: _get(d, "workloads", w, s, "us") for w in WORKLOADS}
            if any(med(x) is not None for x in vals.values()):
                series.append((SYSTEM_LABELS[s].format(v=v).replace("*", "").replace("`", ""), vals))
    return series


def chart(res: dict[str, Any], path: str) -> bool:
    """Draw the chart; False when matplotlib is missing or there is nothing to draw."""
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
        ms = [vals.get(w) for _, vals in series]
        vals = [med(m) for m in ms]
        # error bars: the min–max spread of each system's rounds
        err = [[(v - m["min"]) if v is not None and isinstance(m, dict) else 0 for m, v in zip(ms, vals)],
               [(m["max"] - v) if v is not None and isinstance(m, dict) else 0 for m, v in zip(ms, vals)]]
        ys = range(len(series))
        colors = ["#d62728" if lab.startswith("tmlr") else "#7f7f7f" if "floor" in lab or lab.startswith("C ") else "#1f77b4"
                  for lab in labels]
        ax.barh(list(ys), [v or 0 for v in vals], xerr=err, color=colors, error_kw={"elinewidth": 0.8, "capsize": 2})
        for y, v, m in zip(ys, vals, ms):
            right = m["max"] if v is not None and isinstance(m, dict) else (v or 0)  # past the error bar
            ax.text(right * 1.02, y, "n/a" if v is None else f"{v:.2f}", va="center", fontsize=8)
        ax.set_title(WORKLOAD_TITLES[w], fontsize=10)
        ax.set_xlabel("host µs per launch (median, bars: min–max)")
        ax.set_xlim(0, max([m["max"] if isinstance(m, dict) else (v or 0) for m, v in zip(ms, vals) if v is not None] + [1]) * 1.25)
        ax.invert_yaxis()
    axes[0].set_yticks(list(range(len(series))))
    axes[0].set_yticklabels(labels, fontsize=9)
    gpu = res.get("machine", {}).get("gpu", "")
    fig.suptitle(f"Launch overhead per system, same cubin ({gpu})", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def have_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def render(results_path: str, out_dir: str | None = None, also: list[tuple[str, str]] | None = None,
           require_chart: bool = False) -> list[str]:
    """Write the markdown (and the chart) for a results file; returns the paths written. Without
    matplotlib the chart is skipped with a note on stderr, or, with ``require_chart``, a
    RuntimeError is raised before anything is written."""
    if require_chart and not have_matplotlib():
        raise RuntimeError("the chart needs matplotlib: pip install .[bench]")
    with open(results_path) as f:
        res = as_results(json.load(f), results_path)
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
    md = os.path.join(out_dir, os.path.splitext(os.path.basename(results_path))[0] + ".md")
    with open(md, "w") as f:
        f.write(markdown(res))
    made.append(md)
    png = os.path.join(out_dir, "launch_overhead.png")
    if chart(res, png):
        made.append(png)
    elif chart_series(res):  # something to draw, but no matplotlib
        print(NO_CHART, file=sys.stderr)
    return made


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results")
    ap.add_argument("--out", help="folder for the markdown and launch_overhead.png (default: beside RESULTS)")
    ap.add_argument("--also", action="append", default=[], metavar="LABEL=FILE", help="sections of another results JSON")
    ap.add_argument("--chart", action="store_true", help="fail unless the chart is drawn (needs matplotlib)")
    a = ap.parse_args(argv)
    also = []
    for item in a.also:
        label, sep, path = item.partition("=")
        if not sep:
            ap.error(f"--also takes LABEL=FILE, not {item!r}")
        also.append((label, path))
    try:
        made = render(a.results, a.out, also, require_chart=a.chart)
    except (RuntimeError, ValueError) as e:
        print(f"render.py: {e}", file=sys.stderr)
        return 2
    for p in made:
        print(p)
    if a.chart and not any(p.endswith(".png") for p in made):
        print("render.py: --chart given but there was nothing to chart (no launch section with data)", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
