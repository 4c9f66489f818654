"""benchmarks/serve_startup.py on a CPU: its stages run against a fake of the processes it starts (tmlr-build record,
tmlr-build --spec, the workload), so the orchestration, the results file, the ratios, the targets and the summary
are the ones a GPU run writes; a stage that fails or runs out of time is recorded and the others still run. The
generated kernels compile (to TTIR, with this machine's Triton), the workload's comparison of outputs, and the hand-
written liger spec of proof_cpu_built is a valid spec."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from typing import Any

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import harness  # noqa: E402
import serve_startup as ss  # noqa: E402
import serve_workload  # noqa: E402

FIRST = {"triton_cold": 12.0, "triton_warm": 0.6, "tmlr_serve": 0.004}  # kernels_own per mode, seconds


def _args(**kw: Any) -> argparse.Namespace:
    base = dict(rounds=3, steady_rounds=3, gen_kernels=16, budget_s=330.0, out="", work=None)
    return argparse.Namespace(**{**base, **kw})


class FakeProcesses:
    """Answers the commands serve_startup starts as the real ones would on a GPU, with fixed timings; ``fail`` names
    the step (record, build, triton_cold, tmlr_serve, ...) that exits 1."""

    def __init__(self, fail: str = "", steady_ratio: float = 1.02) -> None:
        self.fail, self.steady_ratio = fail, steady_ratio
        self.calls: list[tuple[str, dict[str, str]]] = []
        self.commands: list[list[str]] = []

    def __call__(self, cmd: list[str], env: dict[str, str], cwd: str, timeout: float) -> ss.Proc:
        step = self.step(cmd, env)
        self.calls.append((step, env))
        self.commands.append(cmd)
        if step == self.fail:
            return ss.Proc(1, "", f"{step} broke\nTraceback: the reason", 0.5)
        if step == "binding_import":
            return ss.Proc(0, "IMPORT_S 0.014\n", "", 2.0)
        if step == "record":
            with open(cmd[cmd.index("-o") + 1], "w", encoding="utf-8") as f:
                json.dump({"arch": [90], "kernels": [{"source": "serve_gen", "kernel": f"k{i:02d}"} for i in range(23)]}, f)
            open(os.path.join(cwd, "triton_out.pt"), "wb").close()
            os.makedirs(env["TRITON_CACHE_DIR"], exist_ok=True)
            return ss.Proc(0, "", "tmlr-build record: spec.json: 23 recorded entries", 20.0)
        if step == "build":
            out = cmd[cmd.index("-o") + 1]
            os.makedirs(os.path.join(out, "k00"), exist_ok=True)
            with open(os.path.join(out, "k00", "kernel.cubin"), "wb") as f:
                f.write(b"\0" * 4600)
            with open(os.path.join(out, "serve.json"), "w", encoding="utf-8") as f:
                json.dump({"kernels": [{"artifact": f"k{i:02d}"} for i in range(23)]}, f)
            return ss.Proc(0, "tmlr-build: wrote ...", "", 30.0)
        return ss.Proc(0, "torch says hello\n" + serve_workload.MARK + json.dumps(self.report(step, cmd)), "", 3.0 + FIRST.get(step, 0))

    @staticmethod
    def step(cmd: list[str], env: dict[str, str]) -> str:
        if "-c" in cmd:
            return "binding_import"
        if "record" in cmd:
            return "record"
        if "--spec" in cmd:
            return "build"
        if "--steady" in cmd:
            return "steady"
        if "--serve" in cmd:
            if "--only" in cmd:
                return "proof_cpu_built"
            return "tmlr_serve" if env.get("TRITON_CACHE_DIR", "").endswith("serve-no-cache") else "proof"
        return "triton_warm" if env.get("TRITON_CACHE_DIR", "").endswith("triton-cache") else "triton_cold"

    def report(self, step: str, cmd: list[str]) -> dict[str, Any]:
        n = 7 if step == "proof_cpu_built" else 23
        first = FIRST.get(step, 0.004)
        doc: dict[str, Any] = {
            "kernels": n, "ok": n, "ops": {f"op{i}": {"s": first / n} for i in range(n)}, "triton_blocked": "--block-triton" in cmd,
            "phases_s": {"torch": 2.0, "runtime_start": 0.001, "model_imports": 0.3, "first_launches": first + 0.05,
                         "after_torch": first + 0.35, "in_launches": first - 0.001, "kernels_own": first},
            "spawn_to_first_s": 2.5 + first, "rss_kib": {"VmRSS": 600 * 1024, "VmHWM": 700 * 1024}, "torch_has_triton": False}
        if "--compare" in cmd:
            doc["compare"] = {f"op{i}": {"equal": i != 0 or n == 7, "allclose": True, "max_abs_diff": 0.0 if i else 1e-7}
                              for i in range(n)}
        if step == "steady":
            doc["steady"] = {"k00_add": {"samples_us": {"served": [10.2, 10.4, 10.1], "direct": [10.0, 10.0, 10.0],
                                                        "direct[]": [10.1, 10.4, 10.1]}, "errors": {}},
                             "_rms_norm_forward_kernel": {"samples_us": {"served": [s * self.steady_ratio for s in (20.0, 21.0, 20.0)],
                                                                         "direct": [20.0, 21.0, 20.0]}, "errors": {}}}
        return doc


@pytest.fixture
def prebuilt(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> str:
    """A stand-in for .serve-bench/liger-cpu-built (serve.json present), so proof_cpu_built runs."""
    d = tmp_path / "prebuilt"
    d.mkdir()
    (d / "serve.json").write_text("{}")
    monkeypatch.setattr(ss, "PREBUILT", str(d))
    monkeypatch.setattr(ss.Bench, "setup", lambda self: None)  # the wheels are the GPU run's (tested below on their own)
    monkeypatch.setattr(harness, "machine", lambda: {"gpu": "NVIDIA H100 80GB HBM3, 580.1, 9.0", "python": "3.12"})
    return str(d)


def test_a_full_run_writes_a_valid_results_file_with_ratios_and_targets(tmp_path: Any, prebuilt: str) -> None:
    fake = FakeProcesses()
    doc = ss.run_all(_args(out=str(tmp_path / "out")), str(tmp_path / "work"), fake)
    path = doc.pop("path")
    assert os.path.basename(path).startswith("h100-") and path.endswith("-serve-startup.json")
    on_disk = json.loads(open(path, encoding="utf-8").read())
    assert harness.problems(on_disk) == [] and on_disk["questions"].keys() == doc["questions"].keys()
    m = doc["questions"]["serve_startup"]["measurements"]
    assert m["triton_cold÷tmlr_serve/kernels_own"]["median"] == pytest.approx(12.0 / 0.004)
    assert m["triton_warm÷tmlr_serve/kernels_own"]["samples"] == [150.0] * 3
    assert m["triton_cold÷tmlr_serve/first_launches"]["median"] == pytest.approx(12.05 / 0.054)
    assert m["tmlr_serve/rss"]["median"] == 600.0 and m["triton_cold/process_wall"]["n"] == 3
    assert m["cuda_bindings_import"]["samples"] == [0.014] * 3  # cuda-python's own import, in processes of its own
    # every round has each mode once, in rotated order, the cold ones each in an empty cache of their own
    steps = [s for s, _ in fake.calls if s in ss.MODES]
    assert steps == ["triton_cold", "triton_warm", "tmlr_serve", "triton_warm", "tmlr_serve", "triton_cold",
                     "tmlr_serve", "triton_cold", "triton_warm"]
    colds = [env["TRITON_CACHE_DIR"] for s, env in fake.calls if s == "triton_cold"]
    assert len(set(colds)) == 3 and not any(os.path.exists(c) for c in colds)
    facts = doc["questions"]["serve_proof"]["facts"]
    assert facts["proof"]["equal"] == 22 and facts["proof"]["allclose"] == 23 and facts["proof"]["triton_blocked"] is True
    assert facts["proof_cpu_built"]["equal"] == 7 and facts["built_artifacts"] == 23
    equal = doc["questions"]["serve_proof"]["measurements"]
    assert {m: equal[f"{m}/ops_equal_to_reference"]["samples"] for m in ss.MODES} == {m: [22.0] * 3 for m in ss.MODES}
    assert all("--compare" in cmd for cmd in fake.commands if "serve_workload.py" in cmd[1])
    build_env = dict(next(env for s, env in fake.calls if s == "build"))
    assert build_env["CUDA_VISIBLE_DEVICES"] == ""
    for _, env in fake.calls:  # every process caches bytecode in the work folder, as an installed package has it
        assert env["PYTHONPYCACHEPREFIX"] == str(tmp_path / "work" / "pycache") and "PYTHONDONTWRITEBYTECODE" not in env
    targets = {t["measurement"]: t["met"] for t in doc["questions"]["serve_startup"]["facts"]["targets"]}
    assert targets == {"serve_startup/triton_cold÷tmlr_serve/kernels_own": True,
                       "serve_startup/triton_warm÷tmlr_serve/kernels_own": True,
                       "serve_steady/k00_add/served÷direct": True, "serve_steady/_rms_norm_forward_kernel/served÷direct": True}
    steady = doc["questions"]["serve_steady"]["measurements"]  # against Kernel.__getitem__ too, for reading (no target)
    assert steady["k00_add/served÷direct[]"]["samples"] == [1.0099, 1.0, 1.0] and "k00_add/direct[]" in steady
    disk = doc["questions"]["serve_startup"]["facts"]["disk"]
    art = disk["artifacts (recorded, built on the GPU host's CPU)"]
    assert art["files"] == 2 and doc["questions"]["serve_startup"]["facts"]["disk_bytes_per_artifact"] == art["bytes"] // 23
    assert os.path.exists(tmp_path / "out" / "serve-startup" / "spec.json")
    text = ss.summary(doc)
    assert "triton_cold÷tmlr_serve/kernels_own: 3000 [3000–3000], target >= 100: met" in text
    assert "proof: 22/23 ops bit-equal" in text and "No stage failed." in text


def test_a_failed_build_is_recorded_and_the_triton_modes_are_still_measured(tmp_path: Any, prebuilt: str) -> None:
    doc = ss.run_all(_args(out=str(tmp_path / "out")), str(tmp_path / "work"), FakeProcesses(fail="build"))
    q = doc["questions"]
    assert q["serve_proof"]["errors"]["build"] == "RuntimeError: tmlr-build --spec: exit 1: build broke | Traceback: the reason"
    assert q["serve_proof"]["errors"]["proof"].startswith("Skipped: ")
    assert "not measured" in q["serve_startup"]["errors"]["tmlr_serve"]
    assert {"triton_cold/first_launches", "triton_warm/first_launches"} <= q["serve_startup"]["measurements"].keys()
    assert not any(k.startswith("tmlr_serve") for k in q["serve_startup"]["measurements"])
    assert all(t["met"] is None for t in q["serve_startup"]["facts"]["targets"])
    assert "not measured" in ss.summary(doc) and os.path.exists(doc["path"])


class RecordsNothing(FakeProcesses):
    """tmlr-build record exits with the workload's status (0) but writes no spec, as on the H100 on 2026-12-06."""

    def __call__(self, cmd: list[str], env: dict[str, str], cwd: str, timeout: float) -> ss.Proc:
        if self.step(cmd, env) == "record":
            return ss.Proc(0, "SERVE_WORKLOAD {}", "tmlr-build record: spec.json: no @triton.jit launch was recorded", 18.0)
        return super().__call__(cmd, env, cwd, timeout)


def test_a_record_that_writes_no_spec_says_what_it_printed(tmp_path: Any, prebuilt: str) -> None:
    doc = ss.run_all(_args(out=str(tmp_path / "out")), str(tmp_path / "work"), RecordsNothing())
    error = doc["questions"]["serve_proof"]["errors"]["record"]
    assert error.startswith("RuntimeError: tmlr-build record wrote no spec (exit 0): ")
    assert "no @triton.jit launch was recorded" in error and "SERVE_WORKLOAD" in error


def test_a_mode_that_fails_is_dropped_and_the_rounds_stay_aligned(tmp_path: Any, prebuilt: str) -> None:
    fake = FakeProcesses(fail="triton_cold", steady_ratio=1.2)
    doc = ss.run_all(_args(out=str(tmp_path / "out")), str(tmp_path / "work"), fake)
    q = doc["questions"]["serve_startup"]
    assert [s for s, _ in fake.calls].count("triton_cold") == 1 and "triton_cold" in q["errors"]
    assert q["measurements"]["triton_warm÷tmlr_serve/first_launches"]["n"] == 3
    assert q["facts"]["per_round"]["triton_cold"] == [None, None, None]
    met = {t["measurement"]: t["met"] for t in q["facts"]["targets"]}
    assert met["serve_steady/_rms_norm_forward_kernel/served÷direct"] is False


def test_stages_past_the_budget_are_skipped_and_said_so(tmp_path: Any, prebuilt: str) -> None:
    ticks = iter(range(0, 10**6, 50))  # every look at the clock: 50 s later
    doc = ss.run_all(_args(out=str(tmp_path / "out"), budget_s=200), str(tmp_path / "work"), FakeProcesses(),
                     clock=lambda: float(next(ticks)))
    errors = {**doc["questions"]["serve_startup"]["errors"], **doc["questions"]["serve_steady"]["errors"]}
    assert "of --budget-s left" in errors["startup"] and "of --budget-s left" in errors["steady"]


def test_startup_ratios_pair_rounds_and_skip_missing_samples() -> None:
    def s(first: float) -> dict[str, Any]:
        return {"phases_s": {"first_launches": first, "after_torch": first, "kernels_own": first}, "spawn_to_first_s": first,
                "process_wall_s": first, "rss_kib": {"VmRSS": 1024, "VmHWM": 2048}}
    m = ss.startup_measurements({"triton_cold": [s(8), None, s(6), s(4)], "triton_warm": [s(1)] * 4,
                                 "tmlr_serve": [s(2), s(2), None, s(1)]})
    assert m["triton_cold÷tmlr_serve/first_launches"]["samples"] == [4.0, 4.0]
    assert m["triton_warm÷tmlr_serve/process_wall"]["samples"] == [0.5, 0.5, 1.0]
    assert m["triton_cold/first_launches"]["n"] == 3 and m["tmlr_serve/hwm"]["median"] == 2.0


def test_results_name_takes_the_gpu_model_and_the_date() -> None:
    doc = {"date": "2026-12-06T10:00:00Z", "machine": {"gpu": "NVIDIA H200, 580.1, 9.0"}}
    assert ss.results_name(doc) == "h200-2026-12-06-serve-startup.json"
    assert ss.results_name({**doc, "machine": {"gpu": None}}) == "cpu-2026-12-06-serve-startup.json"


def test_setup_unpacks_the_carried_wheels_and_writes_the_kernels(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import zipfile

    bench = tmp_path / "bench"
    bench.mkdir()
    for name, member in (("liger_kernel-0.8.5-py3-none-any.whl", "liger_kernel/__init__.py"),
                         ("packaging-26.4-py3-none-any.whl", "packaging/__init__.py")):
        with zipfile.ZipFile(bench / name, "w") as z:
            z.writestr(member, "")
    monkeypatch.setattr(ss, "BENCH_DIR", str(bench))
    b = ss.Bench(_args(out=str(tmp_path / "out"), gen_kernels=4), str(tmp_path))
    b.setup()
    assert (tmp_path / "liger_kernel" / "__init__.py").exists() and (tmp_path / "deps" / "packaging" / "__init__.py").exists()
    assert "k03_axpy" in (tmp_path / "serve_gen.py").read_text()
    monkeypatch.setattr(ss, "BENCH_DIR", str(tmp_path / "none"))
    with pytest.raises(FileNotFoundError, match="pip download --no-deps liger-kernel==0.8.5"):
        ss.wheel("liger_kernel")


def test_the_generated_kernels_are_distinct_and_compile(tmp_path: Any) -> None:
    pytest.importorskip("triton")
    n = len(ss.GEN_EXPRS)
    (tmp_path / "serve_gen.py").write_text(ss.gen_module(n))
    srcs = [f"serve_gen.py:k{i:02d}_{name}" for i, (name, _) in enumerate(ss.GEN_EXPRS)]
    assert len({e for _, e in ss.GEN_EXPRS}) == n >= 20
    p = subprocess.run([sys.executable, "-m", "tmlr_build", *srcs, "--signature", "*fp32:16, *fp32:16, *fp32:16, i32:16, 1024",
                        "--stop-after", "ttir", "--arch", "90", "-o", "out", "-q"], cwd=tmp_path, capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, PYTHONPATH=ROOT))
    assert p.returncode == 0, p.stderr
    assert sorted(os.listdir(tmp_path / "out")) == sorted(s.split(":")[1] for s in srcs)
    with pytest.raises(ValueError, match="--gen-kernels"):
        ss.gen_module(n + 1)


def test_the_workload_compares_outputs_bit_for_bit_and_allclose(tmp_path: Any) -> None:
    torch = pytest.importorskip("torch")
    ref = {"a": torch.ones(4), "b": torch.ones(4), "c": torch.ones(4)}
    torch.save(ref, tmp_path / "ref.pt")
    got = {"a": torch.ones(4), "b": torch.ones(4) + 1e-7, "c": torch.ones(3), "d": torch.ones(1)}
    out = serve_workload.compare(got, str(tmp_path / "ref.pt"), torch)
    assert out["a"] == {"equal": True, "allclose": True, "max_abs_diff": 0.0}
    assert out["b"]["equal"] is False and out["b"]["allclose"] is True and 0 < out["b"]["max_abs_diff"] < 1e-6
    assert out["c"] == {"equal": False, "allclose": False, "max_abs_diff": None}
    assert out["d"] == {"missing_in_reference": True}


def test_the_hand_written_liger_spec_is_a_spec_for_sm_90() -> None:
    spec = json.loads(open(ss.LIGER_SPEC, encoding="utf-8").read())
    assert spec["arch"] == [90] and len(spec["kernels"]) == 7
    assert {e["source"].rsplit(".", 1)[1] for e in spec["kernels"]} == {
        "rms_norm", "layer_norm", "swiglu", "geglu", "softmax", "relu_squared", "cross_entropy"}
    assert "--prebuild" in spec["$comment"]


def test_dry_run_names_every_stage(capsys: pytest.CaptureFixture[str]) -> None:
    assert ss.main(["--dry-run"]) == 0
    stages = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert stages == ["setup", "record", "build", "proof", "proof_cpu_built", "steady", "startup", "binding_import", "footprint"]


def test_the_workload_reports_an_op_that_fails_and_runs_the_others() -> None:
    from types import SimpleNamespace

    synced: list[int] = []
    torch = SimpleNamespace(cuda=SimpleNamespace(synchronize=lambda: synced.append(1)))

    def broken() -> None:
        raise ValueError("no artifact serves this launch\nmore")

    report, outputs = serve_workload.first_calls([("a", lambda: 1), ("b", broken), ("c", lambda: 3)], torch)
    assert outputs == {"a": 1, "c": 3} and report["b"]["error"] == "ValueError: no artifact serves this launch"
    assert set(report) == {"a", "b", "c"} and len(synced) == 2


def test_the_launch_clock_times_getitem_and_the_outermost_launch_and_survives_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    import serve_workload as sw

    now = iter([0.0, 0.25, 1.0, 3.0, 10.0, 10.125, 20.0, 20.5])
    monkeypatch.setattr(sw.time, "perf_counter", lambda: next(now))
    clock = sw.LaunchClock()
    sw.gc.callbacks.remove(clock._gc)  # no collection's timing here (its own test below)

    class Kernel:  # as Triton's KernelInterface: kernel[grid] returns the launch
        def __getitem__(self, grid: Any) -> Any:
            return lambda x: self.run(x, grid)

        def run(self, x: int, grid: Any) -> int:
            if x < 0:
                raise ValueError("a launch error")
            return x + grid

    clock.time_getitem(Kernel)
    assert Kernel()[2](1) == 3  # getitem 0.25 s, the launch 2 s
    with pytest.raises(ValueError):
        Kernel()[2](-1)  # getitem 0.125 s, the failed launch 0.5 s
    assert (clock.s, clock.calls) == (2.875, 2)
    assert clock.each == [("Kernel", 2.25), ("Kernel", 0.625)]  # per launch, its getitem included
    inner = clock.wrap(lambda x: x + 1)  # a launch inside a timed launch (Triton's Autotuner.run calls fn.run)
    monkeypatch.setattr(sw.time, "perf_counter", iter([30.0, 31.0]).__next__)
    assert clock.wrap(lambda x: inner(x) * 2)(1) == 4 and (clock.s, clock.calls) == (3.875, 3)
    clock.stop()  # the steady-state launches after the first calls: Kernel's own __getitem__ again, not timed
    assert Kernel()[2](1) == 3 and clock.calls == 3


def test_the_launch_clock_counts_the_collections_inside_launches() -> None:
    import gc

    import serve_workload as sw

    clock = sw.LaunchClock()
    try:
        clock.wrap(gc.collect)()
        gc.collect()  # outside a launch: not counted
    finally:
        gc.callbacks.remove(clock._gc)
    assert clock.gc_runs == 1 and 0 < clock.gc_s <= clock.s
