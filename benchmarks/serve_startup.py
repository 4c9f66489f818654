"""Serving without the JIT on a GPU (issue 30, items 4 and 5): record, build, serve a public library's ops, and
the start-up of a workload of 23 kernels under Triton (cold and warm cache) and under tmlr serve.

    python benchmarks/serve_startup.py [--rounds 3] [--out DIR] [--budget-s 330] [--gen-kernels 16]
    python benchmarks/serve_startup.py --prebuild      # no GPU: the liger artifacts of the CPU machine (proof_cpu_built)
    python benchmarks/serve_startup.py --dry-run       # the stages and their commands, nothing run

The workload is benchmarks/serve_workload.py: liger-kernel's own forward ops (rms_norm, layer_norm, swiglu, geglu,
softmax, relu_squared, cross_entropy; its wheel carried in .serve-bench/, unpacked beside the workload) and
``--gen-kernels`` generated elementwise kernels (``serve_gen.py``, written here). Stages, each in fresh processes;
one that fails is recorded under its question's ``errors`` and the others still run; a stage that would start after
``--budget-s`` is skipped (recorded too):

record           the workload with Triton under ``tmlr-build record`` (an empty TRITON_CACHE_DIR, which is the warm
                 cache afterwards); its outputs torch.save'd as the reference
build            ``tmlr-build --spec`` of the recording in a process that sees no GPU (CUDA_VISIBLE_DEVICES='', the
                 build's device profile answers the device queries): the GPU host's CPU
proof            the unchanged workload served with Triton blocked: every op's output against the Triton run's
proof_cpu_built  liger's ops served from .serve-bench/liger-cpu-built, built by ``--prebuild`` on a machine without a
                 GPU (benchmarks/serve_startup_liger.json, written by hand), against the same reference
steady           served ``kernel[grid](...)`` against ``Kernel.load(dir)(grid, ...)`` of the same artifact, one process
startup          ``--rounds`` interleaved rounds of fresh processes: triton_cold (an empty cache each time),
                 triton_warm, tmlr_serve (Triton blocked). Inside each: ``kernels_own`` (the kernels' share of the
                 start-up, the targets' measure: ``import triton``, or the serve() call, plus the time spent inside
                 the kernel launches of the first calls: compiles, cache reads, loads; serve_workload.LaunchClock),
                 ``first_launches`` (the first call of every op, synchronized: the kernels' share and the ops'
                 torch work), ``after_torch`` (that plus the model's imports, from torch ready), ``spawn_to_first``
                 (from the parent's spawn); the parent's ``process_wall``; RSS
footprint        bytes and files on disk: the artifacts, Triton's warm cache, the CPU-built liger artifacts

Writes OUT/<gpu>-<date>-serve-startup.json (benchmarks/harness.py's schema; rewritten after every stage) and
OUT/serve-startup/ (the recorded spec, the build's log); OUT is ``--out``, else $OUT, else benchmarks/out.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass
from typing import Any, Callable

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [ROOT, HERE]
import harness  # noqa: E402
from serve_workload import MARK  # noqa: E402

BENCH_DIR = os.path.join(ROOT, ".serve-bench")  # git-ignored: the carried wheels and the CPU-built artifacts
PREBUILT = os.path.join(BENCH_DIR, "liger-cpu-built")
LIGER_SPEC = os.path.join(HERE, "serve_startup_liger.json")
WORKLOAD = os.path.join(HERE, "serve_workload.py")
MODES = ("triton_cold", "triton_warm", "tmlr_serve")
TARGETS = (("serve_startup", "triton_cold÷tmlr_serve/kernels_own", ">=", 100.0),  # the issue's "kernels' share"
           ("serve_startup", "triton_warm÷tmlr_serve/kernels_own", ">=", 10.0))
STEADY_TARGET = 1.05
GEN_EXPRS = (("add", "x + y"), ("sub", "x - y"), ("mul", "x * y"), ("axpy", "x * 2.0 + y"), ("max", "tl.maximum(x, y)"),
             ("min", "tl.minimum(x, y)"), ("relu_or", "tl.where(x > 0, x, y)"), ("abs_add", "tl.abs(x) + y"),
             ("sq_sub", "x * x - y"), ("exp", "tl.exp(x)"), ("gate", "tl.sigmoid(x) * y"),
             ("sqrt_add", "tl.sqrt(tl.abs(x)) + y"), ("sincos", "tl.sin(x) + tl.cos(y)"), ("div", "x / (tl.abs(y) + 1.0)"),
             ("log_mul", "tl.log(tl.abs(x) + 1.0) * y"), ("mix", "(x + y) * 0.5 - x * y"), ("cube", "x * x * x + y"),
             ("clamp", "tl.minimum(tl.maximum(x, -0.5), 0.5) + y"), ("hypot", "tl.sqrt(x * x + y * y)"),
             ("tanhish", "2.0 * tl.sigmoid(2.0 * x) - 1.0 + y"))


def gen_module(count: int) -> str:
    """serve_gen.py: ``count`` elementwise kernels of two inputs (each its own body), ``NAMES`` and ``run(i, x, y)``,
    the Python op that launches kernel i as model code does."""
    if not 1 <= count <= len(GEN_EXPRS):
        raise ValueError(f"--gen-kernels must be 1 to {len(GEN_EXPRS)}, got {count}")
    parts = ['"""Generated by benchmarks/serve_startup.py: elementwise kernels for the start-up benchmark."""',
             "import torch", "import triton", "import triton.language as tl", ""]
    names = []
    for i, (name, expr) in enumerate(GEN_EXPRS[:count]):
        names.append(f"k{i:02d}_{name}")
        parts += ["", "@triton.jit", f"def {names[-1]}(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):",
                  "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)", "    mask = offs < n",
                  "    x = tl.load(x_ptr + offs, mask=mask)", "    y = tl.load(y_ptr + offs, mask=mask)",
                  f"    tl.store(out_ptr + offs, {expr}, mask=mask)", ""]
    parts += ["", f"NAMES = {names!r}", "", "", "def run(i, x, y):", "    out = torch.empty_like(x)",
              "    globals()[NAMES[i]][(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)", "    return out", ""]
    return "\n".join(parts)


@dataclass
class Proc:
    rc: int
    out: str
    err: str
    wall: float  # seconds from spawn to exit, measured by the parent


Runner = Callable[[list[str], dict[str, str], str, float], Proc]


def run_process(cmd: list[str], env: dict[str, str], cwd: str, timeout: float) -> Proc:
    """``cmd`` in a fresh process; ``$SERVE_SPAWN_T`` tells it the spawn time on the monotonic clock."""
    env = dict(env, SERVE_SPAWN_T=repr(time.monotonic()))
    t = time.monotonic()
    try:
        p = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        return Proc(124, str(e.stdout or ""), f"timed out after {timeout:.0f} s", time.monotonic() - t)
    return Proc(p.returncode, p.stdout, p.stderr, time.monotonic() - t)


def tail(text: str, lines: int = 3) -> str:
    return " | ".join(text.strip().splitlines()[-lines:])[-600:]


def folder_size(path: str) -> dict[str, int]:
    total = files = 0
    for folder, _, names in os.walk(path):
        for n in names:
            total += os.path.getsize(os.path.join(folder, n))
            files += 1
    return {"bytes": total, "files": files}


def unpack(wheel: str, into: str) -> None:
    """A pure-Python wheel is a zip of the packages as installed."""
    with zipfile.ZipFile(wheel) as z:
        z.extractall(into)


def wheel(name: str) -> str:
    found = sorted(f for f in os.listdir(BENCH_DIR) if f.startswith(name + "-") and f.endswith(".whl")) if os.path.isdir(BENCH_DIR) else []
    if not found:
        raise FileNotFoundError(f"no {name} wheel in {BENCH_DIR}: pip download --no-deps liger-kernel==0.8.5 packaging "
                                f"-d {os.path.relpath(BENCH_DIR, ROOT)}")
    return os.path.join(BENCH_DIR, found[-1])


class Skipped(Exception):
    """A stage that did not run: out of time, or what it needs is missing."""


class Bench:
    """The stages of one run, their measurements, facts and errors, and the results file after each."""

    def __init__(self, a: argparse.Namespace, work: str, runner: Runner = run_process,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.a, self.work, self.runner, self.clock = a, work, runner, clock
        os.makedirs(work, exist_ok=True)
        self.t0 = clock()
        self.py = sys.executable
        self.questions: dict[str, dict[str, Any]] = {q: {"m": {}, "facts": {}, "errors": {}}
                                                     for q in ("serve_proof", "serve_startup", "serve_steady")}
        self.stage_s: dict[str, float] = {}
        self.samples: dict[str, list[dict[str, Any] | None]] = {m: [] for m in MODES}
        self.out = a.out
        self.doc_path: str | None = None
        self.machine: dict[str, Any] | None = None
        self.failed = 0

    # -- plumbing ---------------------------------------------------------------------------------------------------
    def path(self, *names: str) -> str:
        return os.path.join(self.work, *names)

    def env(self, **extra: str) -> dict[str, str]:
        env = dict(os.environ, **extra)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, self.work, self.path("deps"), os.environ.get("PYTHONPATH")) if p)
        # bytecode cached for every process after the first, as an installed package has it (pip compiles it at
        # install): without it each start-up compiles this checkout's and the unpacked wheels' sources again, while
        # the installed Triton's are cached; kept in the work folder, so the checkout gets no __pycache__
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = self.path("pycache")
        return env

    def timeout(self, longest: float) -> float:
        """A process's time limit: ``longest``, or what is left of the budget and half a minute, if less."""
        return max(10.0, min(longest, self.a.budget_s - (self.clock() - self.t0) + 30))

    def run(self, cmd: list[str], env: dict[str, str], timeout: float) -> Proc:
        p = self.runner(cmd, env, self.work, self.timeout(timeout))
        if p.rc != 0:
            self.failed += 1  # the whole console kept: the results file holds its last lines only
            self.keep(f"failed-{self.failed}.log", " ".join(cmd) + f"\nexit {p.rc}\n--- stdout\n{p.out}\n--- stderr\n{p.err}")
            raise RuntimeError(f"exit {p.rc} (failed-{self.failed}.log): {tail(p.err or p.out)}")
        return p

    def workload(self, args: list[str], env: dict[str, str], timeout: float = 150) -> tuple[dict[str, Any], Proc]:
        """The workload's report (its ``SERVE_WORKLOAD`` line) and the process."""
        p = self.run([self.py, WORKLOAD, *args], env, timeout)
        lines = [line for line in p.out.splitlines() if line.startswith(MARK)]
        if not lines:
            raise RuntimeError(f"the workload printed no report: {tail(p.err or p.out)}")
        return json.loads(lines[-1][len(MARK):]), p

    def stage(self, question: str, name: str, fn: Callable[[], None], need_s: float = 0.0) -> bool:
        """Run one stage: its failure or skip recorded under ``question``'s errors; the results file rewritten."""
        left = self.a.budget_s - (self.clock() - self.t0)
        t = self.clock()
        ok = False
        try:
            if left < need_s:
                raise Skipped(f"{left:.0f} s of --budget-s left, the stage needs about {need_s:.0f} s")
            fn()
            ok = True
        except Exception as e:  # noqa: BLE001 - one stage's failure must not stop the others
            self.questions[question]["errors"][name] = harness.error_text(e)
        self.stage_s[name] = round(self.clock() - t, 2)
        self.save()
        return ok

    # -- stages -----------------------------------------------------------------------------------------------------
    def setup(self) -> None:
        unpack(wheel("liger_kernel"), self.work)  # beside the spec: the recording names its modules
        unpack(wheel("packaging"), self.path("deps"))  # liger imports packaging; the GPU machine may lack it
        with open(self.path("serve_gen.py"), "w", encoding="utf-8") as f:
            f.write(gen_module(self.a.gen_kernels))
        facts = self.questions["serve_proof"]["facts"]
        facts["liger_wheel"] = os.path.basename(wheel("liger_kernel"))

    def record(self) -> None:
        env = self.env(TRITON_CACHE_DIR=self.path("triton-cache"))
        cmd = [self.py, "-m", "tmlr_build", "record", "-o", self.path("spec.json"), "--", self.py, WORKLOAD,
               "--save", self.path("triton_out.pt")]
        t = self.clock()
        p = self.runner(cmd, env, self.work, self.timeout(300))
        self.keep("record.log", p.out + p.err)
        if p.rc != 0:
            raise RuntimeError(f"tmlr-build record: exit {p.rc}: {tail(p.err or p.out)}")
        self.questions["serve_proof"]["facts"]["record_s"] = round(self.clock() - t, 2)
        if not os.path.exists(self.path("spec.json")):  # record exits with the workload's status, spec or not
            raise RuntimeError(f"tmlr-build record wrote no spec (exit 0): {tail(p.err + p.out, 12)}")
        with open(self.path("spec.json"), encoding="utf-8") as f:
            spec = json.load(f)
        self.keep("spec.json", json.dumps(spec, indent=1))
        self.questions["serve_proof"]["facts"].update(recorded_entries=len(spec.get("kernels", [])),
                                                      not_recorded=spec.get("not_recorded", []))

    def build(self) -> None:
        if not os.path.exists(self.path("spec.json")):
            raise Skipped("no recorded spec (the record stage failed)")
        env = self.env(CUDA_VISIBLE_DEVICES="")
        cmd = [self.py, "-m", "tmlr_build", "--spec", self.path("spec.json"), "-o", self.path("artifacts"),
               "-j", str(os.cpu_count() or 1)]
        t = self.clock()
        p = self.runner(cmd, env, self.work, self.timeout(300))
        self.keep("build.log", p.out + p.err)
        if p.rc != 0:
            raise RuntimeError(f"tmlr-build --spec: exit {p.rc}: {tail(p.err or p.out)}")
        with open(self.path("artifacts", "serve.json"), encoding="utf-8") as f:
            served = json.load(f)["kernels"]
        self.questions["serve_proof"]["facts"].update(
            build_s=round(self.clock() - t, 2), built_artifacts=len(served),
            build_env="the GPU host's CPU: CUDA_VISIBLE_DEVICES='' (no device visible); tmlr-build's device profile "
                      "answers the device queries")

    def compare_args(self) -> list[str]:
        return ["--compare", self.path("triton_out.pt")] if os.path.exists(self.path("triton_out.pt")) else []

    def served_args(self, artifacts: str, *extra: str) -> list[str]:
        return ["--block-triton", "--serve", artifacts, *self.compare_args(), *extra]

    def proof(self, key: str, artifacts: str, *extra: str) -> None:
        if not os.path.exists(os.path.join(artifacts, "serve.json")):
            raise Skipped(f"no serve.json in {os.path.basename(artifacts)} (its build failed or was skipped)")
        if not os.path.exists(self.path("triton_out.pt")):
            raise Skipped("no reference outputs (the record stage failed)")
        doc, p = self.workload(self.served_args(artifacts, *extra), self.env())
        self.keep(f"{key}.json", json.dumps(doc, indent=1))
        self.keep(f"{key}.log", p.err)
        self.questions["serve_proof"]["facts"][key] = summarize_proof(doc)

    def startup(self) -> None:
        live = list(MODES)
        errors = self.questions["serve_startup"]["errors"]
        if not os.path.exists(self.path("artifacts", "serve.json")):
            live.remove("tmlr_serve")
            errors["tmlr_serve"] = "not measured: no artifacts (the build stage failed or was skipped)"
        if not os.path.isdir(self.path("triton-cache")):  # the record stage failed: warm the cache, unmeasured
            self.workload(["--save", self.path("triton_out.pt")], self.env(TRITON_CACHE_DIR=self.path("triton-cache")))
        for r in range(self.a.rounds):
            if r >= harness.MIN_SAMPLES and self.clock() - self.t0 > self.a.budget_s:
                errors["startup"] = f"stopped after {r} rounds: --budget-s {self.a.budget_s:g} spent"
                break
            for mode in harness.order(list(live), r):
                try:
                    self.samples[mode].append(self.sample(mode))
                except Exception as e:  # noqa: BLE001 - a failing mode is dropped, the others go on
                    errors[mode] = harness.error_text(e)
                    live.remove(mode)
            for mode in MODES:  # keep rounds aligned: a missing sample is None
                self.samples[mode] += [None] * (r + 1 - len(self.samples[mode]))
            self.fill_startup()
            self.save()

    def sample(self, mode: str) -> dict[str, Any]:
        """One start-up; every mode compares its outputs with the reference after its first results (the same work
        in each process, so that process times stay comparable)."""
        if mode == "triton_cold":
            cache = tempfile.mkdtemp(prefix="cold-", dir=self.work)
            try:
                doc, p = self.workload(self.compare_args(), self.env(TRITON_CACHE_DIR=cache))
            finally:
                shutil.rmtree(cache, ignore_errors=True)
        elif mode == "triton_warm":
            doc, p = self.workload(self.compare_args(), self.env(TRITON_CACHE_DIR=self.path("triton-cache")))
        else:  # Triton blocked; a cache folder of its own, to show that nothing is written to one
            doc, p = self.workload(self.served_args(self.path("artifacts")), self.env(TRITON_CACHE_DIR=self.path("serve-no-cache")))
        doc["process_wall_s"] = p.wall
        return doc

    def fill_startup(self) -> None:
        q = self.questions["serve_startup"]
        q["m"] = startup_measurements(self.samples)
        q["facts"]["per_round"] = {m: [short_sample(s) for s in v] for m, v in self.samples.items()}
        q["facts"]["kernels"] = next((s["kernels"] for v in self.samples.values() for s in v if s), None)
        q["facts"]["serve_wrote_triton_cache"] = os.path.exists(self.path("serve-no-cache"))
        for mode, v in self.samples.items():  # the reference is the recording run's (Triton's) outputs
            compared = [s for s in v if s and "compare" in s]
            if compared:
                self.questions["serve_proof"]["m"][f"{mode}/ops_equal_to_reference"] = harness.stats(
                    [float(summarize_proof(s)["equal"]) for s in compared], "ops")

    def steady(self) -> None:
        if not os.path.exists(self.path("artifacts", "serve.json")):
            raise Skipped("no artifacts (the build stage failed or was skipped)")
        doc, _ = self.workload(self.served_args(self.path("artifacts"), "--steady", str(self.a.steady_rounds)), self.env())
        q = self.questions["serve_steady"]
        for kernel, res in doc.get("steady", {}).items():
            for k, v in res.get("errors", {}).items():
                q["errors"][f"{kernel}/{k}"] = v
            s = res.get("samples_us", {})
            for system, values in s.items():
                q["m"][f"{kernel}/{system}"] = harness.stats(values, "us")
            if "served" in s and "direct" in s:
                q["m"][f"{kernel}/served÷direct"] = harness.ratio(s["served"], s["direct"])
            if "served" in s and "direct[]" in s:  # against the same launch through Kernel.__getitem__ (no target)
                q["m"][f"{kernel}/served÷direct[]"] = harness.ratio(s["served"], s["direct[]"])
        q["facts"]["launch_path"] = doc.get("launch_path")
        q["facts"]["burst"] = 200

    def binding_import(self) -> None:
        """What of tmlr_serve's kernels' share is cuda-python's own import (``cuda.bindings.driver``, which the runtime
        imports at its first load): timed in fresh processes after torch made its CUDA context, as in the workload."""
        code = ("import time, torch; torch.zeros(1, device='cuda'); t = time.perf_counter(); "
                "from cuda.bindings import driver; print('IMPORT_S', time.perf_counter() - t)")
        got = []
        for _ in range(harness.MIN_SAMPLES):
            p = self.run([self.py, "-c", code], self.env(), 60)
            got += [float(line.split()[1]) for line in p.out.splitlines() if line.startswith("IMPORT_S ")]
        self.questions["serve_startup"]["m"]["cuda_bindings_import"] = harness.stats(got, "s")

    def footprint(self) -> None:
        facts = self.questions["serve_startup"]["facts"]
        sets = {"artifacts (recorded, built on the GPU host's CPU)": self.path("artifacts"),
                "triton warm cache": self.path("triton-cache"), "liger artifacts built on the CPU machine": PREBUILT}
        facts["disk"] = {k: folder_size(p) for k, p in sets.items() if os.path.isdir(p)}
        built = self.questions["serve_proof"]["facts"].get("built_artifacts")
        art = facts["disk"].get("artifacts (recorded, built on the GPU host's CPU)")
        if art and built:
            facts["disk_bytes_per_artifact"] = art["bytes"] // built

    # -- results ----------------------------------------------------------------------------------------------------
    def keep(self, name: str, text: str) -> None:
        os.makedirs(os.path.join(self.out, "serve-startup"), exist_ok=True)
        with open(os.path.join(self.out, "serve-startup", name), "w", encoding="utf-8") as f:
            f.write(text)

    def document(self) -> dict[str, Any]:
        settings = {"rounds": self.a.rounds, "gen_kernels": self.a.gen_kernels, "liger_ops": 7,
                    "steady_rounds": self.a.steady_rounds, "budget_s": self.a.budget_s}
        questions = {}
        for name, q in self.questions.items():
            facts = dict(q["facts"])
            if name == "serve_proof":
                facts["stage_s"] = self.stage_s
            questions[name] = harness.question(q["m"], settings=settings, facts=facts, errors=q["errors"])
        questions["serve_startup"]["facts"]["targets"] = targets(questions)
        if self.machine is None:
            self.machine = harness.machine()
        return {"schema": harness.SCHEMA, "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "machine": self.machine, "questions": questions}

    def save(self) -> None:
        doc = self.document()
        if self.doc_path is None:
            os.makedirs(self.out, exist_ok=True)
            self.doc_path = os.path.join(self.out, results_name(doc))
        harness.write(doc, self.doc_path)


def summarize_proof(doc: dict[str, Any]) -> dict[str, Any]:
    """A served run against the reference: how many ops ran, were bit-equal and allclose; what failed."""
    cmp = doc.get("compare", {})
    return {"ops": doc.get("kernels"), "ran": doc.get("ok"), "equal": sum(c.get("equal", False) for c in cmp.values()),
            "allclose": sum(c.get("allclose", False) for c in cmp.values()),
            "not_equal": {k: c.get("max_abs_diff") for k, c in cmp.items() if not c.get("equal")},
            "errors": {k: r["error"] for k, r in doc.get("ops", {}).items() if "error" in r},
            "import_errors": doc.get("import_errors", {}),
            "triton_blocked": doc.get("triton_blocked"), "triton_in_sys_modules": doc.get("triton_in_sys_modules"),
            "torch_has_triton": doc.get("torch_has_triton"), "launch_path": doc.get("launch_path")}


def short_sample(s: dict[str, Any] | None) -> dict[str, Any] | None:
    if s is None:
        return None
    return {"ok": s.get("ok"), "kernels": s.get("kernels"), "import_errors": s.get("import_errors") or None,
            "phases_s": {k: round(v, 4) for k, v in s["phases_s"].items()}, "gc_in_launches": s.get("gc_in_launches"),
            "slowest_launches_s": s.get("slowest_launches_s"),
            "slowest_ops_s": dict(sorted(((k, round(r["s"], 4)) for k, r in s["ops"].items()), key=lambda kv: -kv[1])[:3])}


def _series(samples: list[dict[str, Any] | None], key: str) -> list[float | None]:
    """One number per round (None where the round has no sample)."""
    def value(s: dict[str, Any]) -> float:
        if key in ("kernels_own", "first_launches", "after_torch"):
            return s["phases_s"][key]
        if key in ("rss", "hwm"):
            return s["rss_kib"]["VmRSS" if key == "rss" else "VmHWM"] / 1024
        return s[f"{key}_s"]
    return [None if s is None else value(s) for s in samples]


def startup_measurements(samples: dict[str, list[dict[str, Any] | None]]) -> dict[str, Any]:
    """Each mode's medians, and the ratios of the Triton modes to tmlr_serve taken round by round."""
    m: dict[str, Any] = {}
    units = {"kernels_own": "s", "first_launches": "s", "after_torch": "s", "spawn_to_first": "s", "process_wall": "s", "rss": "MiB", "hwm": "MiB"}
    for mode, v in samples.items():
        for key, unit in units.items():
            xs = [x for x in _series(v, key) if x is not None]
            if xs:
                m[f"{mode}/{key}"] = harness.stats(xs, unit)
    for mode in ("triton_cold", "triton_warm"):
        for key in ("kernels_own", "first_launches", "after_torch", "spawn_to_first", "process_wall"):
            pairs = [(a, b) for a, b in zip(_series(samples[mode], key), _series(samples["tmlr_serve"], key))
                     if a is not None and b is not None]
            if pairs:
                m[f"{mode}÷tmlr_serve/{key}"] = harness.ratio([a for a, _ in pairs], [b for _, b in pairs])
    return m


def targets(questions: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The issue's targets against the measured medians (``met`` None where nothing was measured)."""
    wanted = list(TARGETS) + [("serve_steady", k, "<=", STEADY_TARGET) for k in questions["serve_steady"]["measurements"]
                              if k.endswith("served÷direct")]
    out = []
    for q, key, op, bound in wanted:
        m = questions.get(q, {}).get("measurements", {}).get(key)
        met = None if m is None else (m["median"] >= bound if op == ">=" else m["median"] <= bound)
        out.append({"measurement": f"{q}/{key}", "target": f"{op} {bound:g}", "median": m and m["median"],
                    "min": m and m["min"], "max": m and m["max"], "met": met})
    return out


def results_name(doc: dict[str, Any]) -> str:
    """<gpu>-<date>-serve-startup.json: ``h100`` from "NVIDIA H100 80GB HBM3, ...", ``cpu`` without a GPU."""
    gpu = (doc["machine"].get("gpu") or "").split(",")[0].split()
    words = [w for w in gpu if w.upper() not in ("NVIDIA", "TESLA", "GEFORCE", "RTX")]
    return f"{(words[0].lower() if words else 'cpu')}-{doc['date'][:10]}-serve-startup.json"


def summary(doc: dict[str, Any]) -> str:
    """The targets and the errors, after harness.markdown's tables."""
    lines = ["", "## Targets (issue 30)", ""]
    for t in doc["questions"]["serve_startup"]["facts"]["targets"]:
        verdict = {True: "met", False: "NOT met", None: "not measured"}[t["met"]]
        got = "-" if t["median"] is None else f"{t['median']:.4g} [{t['min']:.4g}–{t['max']:.4g}]"
        lines.append(f"- {t['measurement']}: {got}, target {t['target']}: {verdict}")
    proof = doc["questions"]["serve_proof"]["facts"]
    for key in ("proof", "proof_cpu_built"):
        if key in proof:
            p = proof[key]
            lines.append(f"- {key}: {p['equal']}/{p['ops']} ops bit-equal to Triton's outputs, {p['allclose']} allclose, "
                         f"{p['ran']} ran; Triton blocked: {p['triton_blocked']}, torch has_triton: {p['torch_has_triton']}")
    errs = [f"{q}/{k}: {v}" for q, body in doc["questions"].items() for k, v in body["errors"].items()]
    lines += ["", "Errors:" if errs else "No stage failed."] + [f"- {e}" for e in errs]
    return "\n".join(lines) + "\n"


def prebuild(out: str) -> int:
    """The liger artifacts of proof_cpu_built, built here (no GPU needed) from benchmarks/serve_startup_liger.json."""
    with tempfile.TemporaryDirectory(prefix="tmlr-liger-") as site:
        unpack(wheel("liger_kernel"), site)
        unpack(wheel("packaging"), os.path.join(site, "deps"))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (ROOT, site, os.path.join(site, "deps"),
                                                                      os.environ.get("PYTHONPATH")) if p))
        return subprocess.call([sys.executable, "-m", "tmlr_build", "--spec", LIGER_SPEC, "-o", out,
                                "-j", str(os.cpu_count() or 1)], env=env)


def plan(a: argparse.Namespace) -> list[tuple[str, str]]:
    """What a run does, stage by stage (``--dry-run``)."""
    w, py = "WORK", "python"
    return [("setup", f"unpack {os.path.relpath(BENCH_DIR, ROOT)}/liger_kernel-*.whl and packaging-*.whl; write WORK/serve_gen.py "
                      f"({a.gen_kernels} kernels)"),
            ("record", f"TRITON_CACHE_DIR={w}/triton-cache {py} -m tmlr_build record -o {w}/spec.json -- {py} "
                       f"benchmarks/serve_workload.py --save {w}/triton_out.pt"),
            ("build", f"CUDA_VISIBLE_DEVICES= {py} -m tmlr_build --spec {w}/spec.json -o {w}/artifacts -j N"),
            ("proof", f"{py} benchmarks/serve_workload.py --block-triton --serve {w}/artifacts --compare {w}/triton_out.pt"),
            ("proof_cpu_built", f"{py} benchmarks/serve_workload.py --block-triton --serve .serve-bench/liger-cpu-built "
                                f"--only liger --compare {w}/triton_out.pt"),
            ("steady", f"{py} benchmarks/serve_workload.py --block-triton --serve {w}/artifacts --steady {a.steady_rounds}"),
            ("startup", f"{a.rounds} rounds of {', '.join(MODES)}, each a fresh workload process"),
            ("binding_import", f"{harness.MIN_SAMPLES} processes: import torch, a CUDA tensor, then time `from cuda.bindings "
                               "import driver`"),
            ("footprint", "bytes and files of the artifacts, Triton's warm cache and the CPU-built liger artifacts")]


def run_all(a: argparse.Namespace, work: str, runner: Runner = run_process,
            clock: Callable[[], float] = time.monotonic) -> dict[str, Any]:
    b = Bench(a, work, runner, clock)
    b.stage("serve_proof", "setup", b.setup)
    b.stage("serve_proof", "record", b.record, need_s=60)
    b.stage("serve_proof", "build", b.build, need_s=40)
    b.stage("serve_proof", "proof", lambda: b.proof("proof", b.path("artifacts")), need_s=15)
    b.stage("serve_proof", "proof_cpu_built", lambda: b.proof("proof_cpu_built", PREBUILT, "--only", "liger"), need_s=15)
    b.stage("serve_steady", "steady", b.steady, need_s=15)  # before the long stage: it must not be squeezed out
    b.stage("serve_startup", "startup", b.startup, need_s=30 * a.rounds)
    b.stage("serve_startup", "binding_import", b.binding_import, need_s=15)
    b.stage("serve_startup", "footprint", b.footprint)
    doc = b.document()
    if b.doc_path:
        harness.write(doc, b.doc_path)
    doc["path"] = b.doc_path
    return doc


def main(argv: list[str] | None = None, runner: Runner = run_process) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3, help=f"start-up rounds (at least {harness.MIN_SAMPLES})")
    ap.add_argument("--steady-rounds", type=int, default=5, help="interleaved rounds of the steady-state launches")
    ap.add_argument("--gen-kernels", type=int, default=16, help=f"generated kernels beside liger's 7 (1 to {len(GEN_EXPRS)})")
    ap.add_argument("--budget-s", type=float, default=330.0, help="start no stage after this many seconds")
    ap.add_argument("--out", default=os.environ.get("OUT") or os.path.join(HERE, "out"), help="where the results go")
    ap.add_argument("--work", help="the work folder (default: a temporary one, removed at the end)")
    ap.add_argument("--prebuild", action="store_true", help=f"build {os.path.relpath(PREBUILT, ROOT)} (no GPU) and exit")
    ap.add_argument("--dry-run", action="store_true", help="print the stages and their commands, run nothing")
    a = ap.parse_args(argv)
    if a.rounds < harness.MIN_SAMPLES or a.steady_rounds < harness.MIN_SAMPLES:
        ap.error(f"--rounds and --steady-rounds must be at least {harness.MIN_SAMPLES}")
    if not 1 <= a.gen_kernels <= len(GEN_EXPRS):
        ap.error(f"--gen-kernels must be 1 to {len(GEN_EXPRS)}")
    if a.prebuild:
        return prebuild(PREBUILT)
    if a.dry_run:
        print("\n".join(f"{name:16} {what}" for name, what in plan(a)))
        return 0
    if a.work:
        os.makedirs(a.work, exist_ok=True)
        doc = run_all(a, os.path.abspath(a.work), runner)
    else:
        with tempfile.TemporaryDirectory(prefix="tmlr-serve-startup-") as work:
            doc = run_all(a, work, runner)
    path = doc.pop("path")
    print(harness.markdown(doc) + summary(doc) + f"\nwritten: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
