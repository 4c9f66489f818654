"""The whole performance suite in one command: every section in its own process, one results JSON.

    python benchmarks/suite.py [--out DIR] [--sections a,b,...] [--triton33-path DIR] [--quick]
                               [--budget-s S]

Sections (docs/performance-suite.md says what each measures):

  launch           host µs per launch: tmlr, hand-written cuda-python, cuda.core, CuPy, the machine's
                   Triton (JIT and CompiledKernel); plus CUDA-graph replay of tmlr and Triton's JIT
  c_floor          a C loop of cuLaunchKernel on the same cubins, and its CUDA-graph replay (nvcc on the spot)
  launch_triton33  the launch section again in a process with Triton 3.3.1 (needs --triton33-path)
  gpu_time         GPU time of one cubin launched by Triton 3.3.1's launcher and by tmlr (Triton 3.3.1)
  load             Kernel.load first time and cached against raw cuModuleLoadData
  start            process start to first correct result, and resident memory, per system
  build            tmlr-build against triton.compile (Triton 3.3.1, CPU only)

Each section runs as a child process with a timeout (the suite never stops at a failed section: its
status and error go into the results), writes OUT/parts/<section>.json and OUT/logs/<section>.log;
the suite merges them into OUT/results.json with the target table, then renders OUT/results.md
(and OUT/launch_overhead.png when matplotlib is importable) with benchmarks/render.py.
Sections that would start after --budget-s seconds are skipped. Every measurement keeps its
samples (at least 3); one with fewer marks its section "partial" and is listed under
"thin_samples" in the results, at the top of results.md and at the end of the console output.
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
import traceback
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import (  # noqa: E402
    ADD4_N,
    BENCH,
    EXAMPLES,
    MIN_SAMPLES,
    NOP_ARGS_INTS,
    ROOT,
    error_text,
    python_env,
    run_command,
    stats,
    thin_samples,
    write_json,
)

SECTIONS = ("launch", "c_floor", "launch_triton33", "gpu_time", "load", "start", "build")
SUITE_VERSION = 2

# Seconds: the most each section may take, and the least it needs to be worth starting. One round
# of the start section (8 fresh interpreters, 5 of them importing torch) takes about 30 s on the
# H200 machine, its warm-up about 20 s: 5 rounds fit its limit, 3 its minimum.
LIMITS = {"launch": 150, "c_floor": 90, "launch_triton33": 150, "gpu_time": 150, "load": 60, "start": 240, "build": 150}
MINIMUM = {"start": 120, "build": 30}
START_ROUND_S = 40  # a start round with margin: no new round begins with less than this left


class Suite:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.out = os.path.abspath(args.out)
        self.parts = os.path.join(self.out, "parts")
        self.logs = os.path.join(self.out, "logs")
        os.makedirs(self.parts, exist_ok=True)
        os.makedirs(self.logs, exist_ok=True)
        self.t0 = time.perf_counter()
        self.t33 = args.triton33_path or None
        self.env = python_env()
        self.env33 = python_env(self.t33) if self.t33 else self.env
        q = args.quick
        self.r = dict(rounds=10 if q else 30, graph=50 if q else 200, graph_rounds=5 if q else 20,
                      gpu_rounds=4 if q else 10, load_reps=50 if q else 200, start_reps=3 if q else 5,
                      build_reps=args.build_reps or 3, burst=200)
        self.results: dict[str, Any] = {"suite_version": SUITE_VERSION, "started": time.strftime("%Y-%m-%d %H:%M:%S"),
                                        "quick": q, "settings": self.r, "machine": {}, "sections": {}}

    # -- helpers -----------------------------------------------------------------------------------
    def left(self) -> float:
        return self.args.budget_s - (time.perf_counter() - self.t0)

    def py(self, script: str, *argv: str) -> list[str]:
        return [sys.executable, os.path.join(BENCH, script), *argv]

    def save(self) -> None:
        self.results["wall_s"] = round(time.perf_counter() - self.t0, 1)
        write_json(os.path.join(self.out, "results.json"), self.results)

    def run_child(self, name: str, cmd: list[str], env: dict[str, str], timeout: float) -> dict[str, Any]:
        """Run one section's script; its JSON (possibly partial) becomes the section's data."""
        part = os.path.join(self.parts, f"{name}.json")
        if os.path.exists(part):
            os.remove(part)
        cmd = cmd + ["--json", part]
        rc, out, err, secs = run_command(cmd, env=env, timeout=timeout, cwd=ROOT)
        with open(os.path.join(self.logs, f"{name}.log"), "w") as f:
            f.write(f"$ {' '.join(cmd)}\n# exit {rc} after {secs:.1f} s\n\n--- stdout ---\n{out}\n--- stderr ---\n{err}")
        print(out.rstrip())
        sec: dict[str, Any] = {"wall_s": round(secs, 1), "returncode": rc, "log": os.path.relpath(os.path.join(self.logs, f"{name}.log"), self.out)}
        data = None
        if os.path.exists(part):
            try:
                with open(part) as f:
                    data = json.load(f)
            except ValueError as e:
                sec["error"] = f"unreadable part JSON: {e}"
        if data is not None:
            sec["data"] = data
        if rc == 0 and data is not None:
            inner = inner_errors(data)
            sec["status"] = "partial" if inner else "ok"
            if inner:
                sec["error"] = f"{len(inner)} error(s) inside: " + "; ".join(inner)[:700]
        else:
            tail = [ln for ln in (err or out).strip().splitlines() if ln.strip()][-3:]
            why = "timed out" if rc == 124 else f"exit {rc}"
            sec["status"] = "partial" if data is not None else ("timeout" if rc == 124 else "error")
            sec.setdefault("error", f"{why}: {' | '.join(tail)}"[:800])
        return sec

    def flag_thin(self, name: str, sec: dict[str, Any]) -> None:
        """Mark a section whose measurements rest on fewer than MIN_SAMPLES samples."""
        thin = thin_samples(sec.get("data"))
        if not thin:
            return
        self.results.setdefault("thin_samples", {})[name] = thin
        if sec.get("status") == "ok":
            sec["status"] = "partial"
        note = f"FEWER THAN {MIN_SAMPLES} SAMPLES in {len(thin)} measurement(s): " + "; ".join(thin)
        sec["error"] = (note + (f"; {sec['error']}" if sec.get("error") else ""))[:800]

    # -- sections ----------------------------------------------------------------------------------
    def s_launch(self, timeout: float) -> dict[str, Any]:
        r = self.r
        return self.run_child("launch", self.py("launch_overhead.py", "--rounds", str(r["rounds"]), "--graph", str(r["graph"]),
                                                "--graph-rounds", str(r["graph_rounds"])), self.env, timeout)

    def s_launch_triton33(self, timeout: float) -> dict[str, Any]:
        if not self.t33 and not _imports_triton(self.env, "3.3"):
            return {"status": "skipped", "error": "no Triton 3.3.1: pass --triton33-path (run_all.sh does when .device/triton-3.3.1.tar.xz was carried)"}
        r = self.r
        return self.run_child("launch_triton33", self.py("launch_overhead.py", "--rounds", str(r["rounds"]), "--graph", str(r["graph"]),
                                                         "--graph-rounds", str(r["graph_rounds"]), "--no-cupy", "--no-cuda-core",
                                                         "--require-triton", "3.3"), self.env33, timeout)

    def s_gpu_time(self, timeout: float) -> dict[str, Any]:
        return self.run_child("gpu_time", self.py("gpu_time.py", "--rounds", str(self.r["gpu_rounds"])), self.env33, timeout)

    def s_load(self, timeout: float) -> dict[str, Any]:
        return self.run_child("load", self.py("load_and_start.py", "--only", "load", "--load-reps", str(self.r["load_reps"])),
                              self.env, timeout)

    def s_start(self, timeout: float) -> dict[str, Any]:
        # no round starts that could not finish inside the timeout (load_and_start.py still runs 3)
        argv = ["--only", "start", "--start-reps", str(self.r["start_reps"]), "--max-s", str(max(0.0, timeout - START_ROUND_S))]
        if self.t33:
            argv += ["--triton33-path", self.t33]
        return self.run_child("start", self.py("load_and_start.py", *argv), self.env, timeout)

    def s_build(self, timeout: float) -> dict[str, Any]:
        return self.run_child("build", self.py("build_time.py", "--reps", str(self.r["build_reps"])), self.env33, timeout)

    def s_c_floor(self, timeout: float) -> dict[str, Any]:
        deadline = time.perf_counter() + timeout
        log: list[str] = []
        sec: dict[str, Any] = {}
        data: dict[str, Any] = {"workloads": {}, "errors": {}}
        t0 = time.perf_counter()
        tmp = tempfile.mkdtemp(prefix="tmlr-floor-")
        try:
            binary, how = build_floor(tmp, log)
            data["compiler"] = how
            cap = gpu_capability()
            data["capability"] = cap
            for name in ("nop", "nop_args", "add4"):
                try:
                    cmd = floor_command(binary, name, cap, self.r)
                    rc, out, err, secs = run_command(cmd, timeout=max(5.0, deadline - time.perf_counter()), env=dict(os.environ))
                    log.append(f"$ {' '.join(cmd)}\n# exit {rc} after {secs:.1f} s\n{out}{err}")
                    doc = json.loads(out.strip().splitlines()[-1]) if out.strip() else {}
                    if rc != 0 or "error" in doc:
                        raise RuntimeError(doc.get("error") or f"exit {rc}: {err.strip()[-300:]}")
                    doc["launch_us"] = stats(doc["launch_us"])
                    doc["graph_us_per_kernel"] = stats(doc["graph_us_per_kernel"])
                    data["workloads"][name] = doc
                    print(f"  {name:10s} C cuLaunchKernel {doc['launch_us']['median']:.3f} µs/launch   "
                          f"graph replay {doc['graph_us_per_kernel']['median']:.3f} µs/kernel (medians)")
                except Exception as e:  # noqa: BLE001
                    data["errors"][name] = error_text(e)
                    print(f"  {name:10s} ERROR {data['errors'][name]}")
            sec["status"] = "ok" if data["workloads"] and not data["errors"] else ("partial" if data["workloads"] else "error")
            if data["errors"]:
                sec["error"] = "; ".join(f"{k}: {v}" for k, v in data["errors"].items())[:800]
        except Exception as e:  # noqa: BLE001
            log.append(traceback.format_exc())
            sec.update(status="error", error=error_text(e))
            print(f"  ERROR {sec['error']}")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        with open(os.path.join(self.logs, "c_floor.log"), "w") as f:
            f.write("\n".join(log))
        write_json(os.path.join(self.parts, "c_floor.json"), data)
        sec.update(data=data, wall_s=round(time.perf_counter() - t0, 1), log="logs/c_floor.log")
        return sec

    # -- driver ------------------------------------------------------------------------------------
    def run(self, names: list[str]) -> int:
        print(f"tmlr performance suite -> {self.out}  (budget {self.args.budget_s:.0f} s{', quick' if self.args.quick else ''})")
        self.results["machine"] = machine_info(self.env, self.env33 if self.t33 else None)
        for k, v in self.results["machine"].items():
            print(f"  {k}: {v}")
        self.save()
        for name in names:
            left = self.left()
            print(f"\n=== {name} ({left:.0f} s of budget left) ===", flush=True)
            if left < MINIMUM.get(name, 15):
                sec = {"status": "skipped", "error": f"time budget ({self.args.budget_s:.0f} s) spent: raise --budget-s"}
            else:
                try:
                    sec = getattr(self, f"s_{name}")(min(LIMITS[name], left))
                except Exception as e:  # noqa: BLE001 - the suite itself must survive anything
                    traceback.print_exc()
                    sec = {"status": "error", "error": error_text(e)}
            self.flag_thin(name, sec)
            self.results["sections"][name] = sec
            print(f"--- {name}: {sec['status']}" + (f" ({sec['error']})" if sec.get("error") else "")
                  + (f" in {sec['wall_s']} s" if "wall_s" in sec else ""), flush=True)
            self.save()
        import render

        self.results["targets"] = render.evaluate_targets(self.results)
        self.save()
        print("\n" + render.targets_markdown(self.results["targets"]))
        try:
            made = render.render(os.path.join(self.out, "results.json"), self.out)
            print("\nwrote " + ", ".join(os.path.relpath(p, self.out) for p in made) + f" under {self.out}")
        except Exception as e:  # noqa: BLE001
            traceback.print_exc()
            print(f"render failed: {error_text(e)}")
        bad = [n for n, s in self.results["sections"].items() if s["status"] != "ok"]
        for name, thin in self.results.get("thin_samples", {}).items():
            print(f"!!! {name}: FEWER THAN {MIN_SAMPLES} SAMPLES: " + "; ".join(thin))
        print(f"suite done in {time.perf_counter() - self.t0:.0f} s; sections not ok: {', '.join(bad) or 'none'}")
        return 0


def inner_errors(data: dict[str, Any]) -> list[str]:
    """The errors a section recorded inside its data (systems or cases that failed)."""
    out: list[str] = []

    def walk(e: Any, prefix: str) -> None:
        if isinstance(e, dict):
            for k, v in e.items():
                walk(v, f"{prefix}{k}: " if not isinstance(v, dict) else f"{prefix}{k} / ")
        elif e:
            out.append(f"{prefix}{e}")

    for key in ("errors", "start_errors"):
        walk(data.get(key), "")
    if isinstance(data.get("graph"), dict):
        walk(data["graph"].get("errors"), "graph / ")
    return out


def _imports_triton(env: dict[str, str], prefix: str) -> bool:
    rc, out, _, _ = run_command([sys.executable, "-c", "import triton; print(triton.__version__)"], env=env, timeout=60)
    return rc == 0 and out.strip().startswith(prefix)


def gpu_capability() -> tuple[int, int]:
    """The GPU's compute capability from nvidia-smi (no CUDA context in the suite process)."""
    rc, out, err, _ = run_command(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"], timeout=30)
    if rc != 0 or not out.strip():
        raise RuntimeError(f"nvidia-smi: {(err or out).strip()[:200]}")
    major, minor = out.strip().splitlines()[0].strip().split(".")
    return int(major), int(minor)


def find_nvcc() -> str | None:
    for c in (shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc", os.path.join(os.environ.get("CUDA_HOME", "/nonexistent"), "bin", "nvcc")):
        if c and os.path.exists(c):
            return c
    return None


def build_floor(tmp: str, log: list[str]) -> tuple[str, str]:
    """Compile benchmarks/launch_floor.c with nvcc (or, failing that, the C compiler)."""
    src = os.path.join(BENCH, "launch_floor.c")
    binary = os.path.join(tmp, "launch_floor")
    tried = []
    nvcc = find_nvcc()
    for cc in ([nvcc] if nvcc else []) + [c for c in (shutil.which("cc"), shutil.which("gcc")) if c]:
        cmd = [cc, "-O2", "-o", binary, src, "-ldl"]
        rc, out, err, secs = run_command(cmd, timeout=120)
        log.append(f"$ {' '.join(cmd)}\n# exit {rc} after {secs:.1f} s\n{out}{err}")
        if rc == 0:
            return binary, f"{os.path.basename(cc)} -O2 ({cc})"
        tried.append(f"{cc}: exit {rc}")
    raise RuntimeError("no compiler built launch_floor.c: " + ("; ".join(tried) or "neither nvcc nor cc found"))


def floor_command(binary: str, name: str, cap: tuple[int, int], r: dict[str, int]) -> list[str]:
    """The launch_floor command for one workload artifact: its cubin, entry, block, shared, params."""
    sys.path.insert(0, ROOT)
    from tmlr_runtime import ArtifactMetadata

    art = os.path.join(EXAMPLES, "artifacts", name)
    meta = ArtifactMetadata.read(art)
    v = meta.select_variant(*cap)
    ints = iter({"nop_args": NOP_ARGS_INTS, "add4": [ADD4_N]}.get(name, []))
    params = []
    for p in meta.runtime_params:
        if p.type.startswith("*"):
            params.append("p")
        elif p.type == "i32":
            params.append(f"i:{next(ints)}")
        else:
            raise ValueError(f"{name}: launch_floor passes pointers and i32 only, not {p.type}")
    params += ["0"] * len(v.hidden_params)
    return [binary, os.path.join(art, v.cubin_file), v.entry, str(v.threads_per_block), str(v.shared),
            ",".join(params) or "-", str(r["burst"]), str(r["rounds"]), str(r["graph"]), str(r["graph_rounds"])]


VERSIONS = r"""
import json, platform
from importlib import metadata
out = {"python": platform.python_version()}
for label, dists in (("torch", ["torch"]), ("triton", ["triton"]), ("cuda-bindings", ["cuda-bindings", "cuda-python"]),
                     ("cuda-core", ["cuda-core"]), ("cupy", ["cupy", "cupy-cuda13x", "cupy-cuda12x", "cupy-cuda11x"]),
                     ("numpy", ["numpy"]), ("matplotlib", ["matplotlib"])):
    out[label] = None
    for d in dists:  # installed versions without importing anything (torch alone takes seconds)
        try:
            out[label] = metadata.version(d)
            break
        except metadata.PackageNotFoundError:
            pass
print(json.dumps(out))
"""


def machine_info(env: dict[str, str], env33: dict[str, str] | None) -> dict[str, Any]:
    info: dict[str, Any] = {"host": platform.node(), "cpus": os.cpu_count()}
    rc, out, err, _ = _safe(["nvidia-smi", "--query-gpu=name,driver_version,compute_cap", "--format=csv,noheader"])
    info["gpu"] = out.strip() if rc == 0 else f"(nvidia-smi: {(err or out).strip()[:120]})"
    rc, out, err, _ = _safe([sys.executable, "-c", VERSIONS], env=env)
    if rc == 0:
        info.update(json.loads(out.strip().splitlines()[-1]))
    if env33 is not None:
        rc, out, _, _ = _safe([sys.executable, "-c", "import triton; print(triton.__version__)"], env=env33)
        info["triton (3.3.1 env)"] = out.strip() if rc == 0 else None
    nvcc = find_nvcc()
    if nvcc:
        rc, out, _, _ = _safe([nvcc, "--version"])
        info["nvcc"] = out.strip().splitlines()[-1] if rc == 0 and out.strip() else None
    return info


def _safe(cmd: list[str], env: dict[str, str] | None = None) -> tuple[int, str, str, float]:
    try:
        return run_command(cmd, env=env, timeout=90)
    except OSError as e:
        return 127, "", str(e), 0.0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT") or os.path.join(BENCH, "out"))
    ap.add_argument("--sections", default=",".join(SECTIONS), help=f"comma-separated subset of {','.join(SECTIONS)}")
    ap.add_argument("--triton33-path", default=None, help="folder holding Triton 3.3.1 (e.g. /tmp/t33 from the prelude)")
    ap.add_argument("--quick", action="store_true", help="few rounds: a smoke test of the whole suite")
    ap.add_argument("--budget-s", type=float, default=330.0, help="skip sections that would start later than this")
    ap.add_argument("--build-reps", type=int, help=f"runs per kernel in the build section (default 3; at least {MIN_SAMPLES})")
    args = ap.parse_args(argv)
    names = [s for s in args.sections.split(",") if s]
    unknown = [s for s in names if s not in SECTIONS]
    if unknown:
        ap.error(f"unknown section(s) {', '.join(unknown)}; choose from {', '.join(SECTIONS)}")
    return Suite(args).run(names)


if __name__ == "__main__":
    sys.exit(main())
