"""The benchmark harness (benchmarks/harness.py) on a CPU: its statistics, the interleaving order, the
results schema and its check; every benchmark script answers --help without a GPU; the hand-written
launchers of benchmarks/launch.py lay out the kernel's parameters as the kernel reads them."""
from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
from types import SimpleNamespace
from typing import Any

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "benchmarks")
sys.path.insert(0, BENCH)

import harness  # noqa: E402
import launch  # noqa: E402

SCRIPTS = sorted(f for f in os.listdir(BENCH) if f.endswith(".py"))


def test_stats_are_median_min_max_of_the_samples_in_order() -> None:
    s = harness.stats([3.0, 1.0, 2.0, 10.0], "us")
    assert (s["median"], s["min"], s["max"], s["n"], s["unit"]) == (2.5, 1.0, 10.0, 4, "us")
    assert s["samples"] == [3.0, 1.0, 2.0, 10.0]


def test_ratio_and_difference_are_taken_round_by_round() -> None:
    assert harness.ratio([2.0, 6.0, 4.0], [1.0, 3.0, 4.0])["samples"] == [2.0, 2.0, 1.0]
    assert harness.difference([2.0, 6.0, 4.0], [1.0, 3.0, 4.0], "us")["samples"] == [1.0, 3.0, 0.0]


def test_order_rotates_by_one_each_round() -> None:
    names = ["a", "b", "c"]
    assert [harness.order(names, r) for r in range(4)] == [["a", "b", "c"], ["b", "c", "a"], ["c", "a", "b"], ["a", "b", "c"]]


def test_interleave_visits_every_system_each_round_in_rotated_order_and_times_bursts() -> None:
    calls: list[tuple[str, int]] = []
    ticks = iter(range(10**6))

    def system(name: str) -> Any:
        return lambda n: calls.append((name, n))

    syncs: list[int] = []
    samples = harness.interleave({"a": system("a"), "b": system("b")}, rounds=3, burst=4, sync=lambda: syncs.append(1),
                                 warmup=1, clock=lambda: float(next(ticks)))
    # one warm-up round (not kept) then 3 rounds; round r starts with system r mod 2
    assert [c[0] for c in calls] == ["b", "a", "a", "b", "b", "a", "a", "b"]
    assert all(n == 4 for _, n in calls)
    assert len(syncs) == len(calls) + 1  # before every burst, and once at the end
    assert {k: len(v) for k, v in samples.items()} == {"a": 3, "b": 3}
    assert samples["a"] == [1e6 / 4] * 3  # each burst spans one tick of the fake clock: 1 s / 4 calls


def test_interleave_drops_a_failing_system_and_keeps_its_error() -> None:
    def broken(n: int) -> None:
        raise ValueError("no such device")

    errors: dict[str, str] = {}
    samples = harness.interleave({"ok": lambda n: None, "broken": broken}, rounds=3, burst=1, errors=errors)
    assert list(samples) == ["ok"] and len(samples["ok"]) == 3
    assert errors == {"broken": "ValueError: no such device"}


def test_a_results_file_names_project_paths_only() -> None:
    assert harness.project_path(os.path.join(ROOT, "examples", "artifacts")) == os.path.join("examples", "artifacts")
    assert harness.project_path("/tmp/elsewhere/artifacts") == "(outside the project)"


def sample_doc() -> dict[str, Any]:
    q = harness.question({"nop/tmlr": harness.stats([5.0, 6.0, 7.0], "us")}, settings={"rounds": 3}, facts={"TMLR_PURE_PYTHON": None})
    return harness.document({"launch": q})


def test_a_document_follows_the_schema_and_survives_json() -> None:
    doc = json.loads(json.dumps(sample_doc()))
    assert doc["schema"] == harness.SCHEMA and "TMLR_PURE_PYTHON" in doc["machine"] and "python" in doc["machine"]
    assert harness.problems(doc) == []
    assert "| nop/tmlr | us | 6 [5–7] | 3 |" in harness.markdown(doc)


@pytest.mark.parametrize("damage, reason", [
    (lambda m: m.update(samples=[5.0, 6.0], n=2, min=5.0, max=6.0, median=5.5), "2 sample(s)"),
    (lambda m: m.update(median=9.0), "disagree"),
    (lambda m: m.pop("unit"), "needs unit"),
])
def test_check_names_what_is_wrong_with_a_measurement(damage: Any, reason: str) -> None:
    doc = sample_doc()
    damage(doc["questions"]["launch"]["measurements"]["nop/tmlr"])
    found = harness.problems(doc)
    assert len(found) == 1 and reason in found[0] and found[0].startswith("launch/nop/tmlr")
    if "sample" in reason:
        assert "WARNING" in harness.markdown(doc)


def test_check_refuses_other_documents_and_merge_joins_questions(tmp_path: Any) -> None:
    assert harness.problems({"section": "launch"}) == [f"not a {harness.SCHEMA} document"]
    a, b = sample_doc(), sample_doc()
    b["questions"] = {"load": b["questions"].pop("launch")}
    paths = []
    for name, doc in (("a", a), ("b", b)):
        harness.write(doc, str(tmp_path / f"{name}.json"))
        paths.append(str(tmp_path / f"{name}.json"))
    merged = tmp_path / "merged.json"
    assert harness.main(["merge", *paths, "--out", str(merged)]) == 0
    assert list(json.loads(merged.read_text(encoding="utf-8"))["questions"]) == ["launch", "load"]
    assert harness.main(["check", str(merged)]) == 0


@pytest.mark.parametrize("script", SCRIPTS)
def test_every_script_answers_help_without_a_gpu(script: str) -> None:
    p = subprocess.run([sys.executable, os.path.join(BENCH, script), "--help"], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, PYTHONPATH=ROOT))
    assert p.returncode == 0, p.stderr
    assert "usage:" in p.stdout


def test_cpu_profile_writes_a_valid_results_file(tmp_path: Any) -> None:
    out = tmp_path / "cpu.json"
    p = subprocess.run([sys.executable, os.path.join(BENCH, "cpu_profile.py"), "--rounds", "3", "--burst", "5", "--copies", "3",
                        "--json", str(out)], capture_output=True, text=True, timeout=300, env=dict(os.environ, PYTHONPATH=ROOT))
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert harness.problems(doc) == []
    assert set(doc["questions"]["cpu_call"]["measurements"]) == {f"{w}/{s}" for w in ("nop", "nop_args", "add4") for s in ("tmlr", "tmlr_nocheck")}


class RecordingDriver:
    """cuModuleLoadData / cuModuleGetFunction / cuLaunchKernel that read each launch's parameters
    back through the ``void**`` as the kernel would: 8 bytes for a pointer, 4 for an i32."""

    def __init__(self, sizes: list[int]) -> None:
        self.sizes, self.launches = sizes, []

    def cuModuleLoadData(self, image: bytes) -> tuple[int, str]:
        return 0, "module"

    def cuModuleGetFunction(self, module: str, entry: bytes) -> tuple[int, str]:
        return 0, entry.decode()

    def cuLaunchKernel(self, fn: str, gx: int, gy: int, gz: int, bx: int, by: int, bz: int, shared: int, stream: int,
                       params: int, extra: int) -> tuple[int]:
        slots = (ctypes.c_void_p * len(self.sizes)).from_address(params)
        read = {8: ctypes.c_uint64, 4: ctypes.c_int32}
        self.launches.append((fn, gx, bx, stream, [read[s].from_address(slots[i]).value for i, s in enumerate(self.sizes)]))
        return (0,)


def cubin(types: list[str], hidden: int) -> Any:
    c = launch.Cubin.__new__(launch.Cubin)
    c.path = os.path.join(ROOT, "examples", "artifacts", "add4", "metadata.json")  # any readable file: the module is faked
    c.entry, c.block, c.shared, c.types, c.hidden = "k", 128, 0, types, hidden
    return c


NOP_ARGS_TYPES = ["*fp32"] * 5 + ["i32"] * 9


def tensors(n: int) -> list[Any]:
    return [SimpleNamespace(data_ptr=lambda a=a: 0x7F0000001000 + 0x100 * a) for a in range(n)]


def test_lean_launcher_packs_every_parameter_where_the_kernel_reads_it() -> None:
    drv = RecordingDriver([8] * 5 + [4] * 9 + [8])
    fake_torch = SimpleNamespace(_C=SimpleNamespace(_cuda_getCurrentRawStream=lambda device: 0x5E + device))
    ts = tensors(5)
    run = launch.lean(drv, fake_torch, cubin(NOP_ARGS_TYPES, 1), "nop_args", 1, 0)
    run(*ts, *launch.INTS)
    fn, grid, block, stream, values = drv.launches[-1]
    assert (fn, grid, block, stream) == ("k", 1, 128, 0x5E)
    assert values == [t.data_ptr() for t in ts] + launch.INTS + [0]


def test_bare_launch_passes_the_same_values() -> None:
    drv = RecordingDriver([8] * 3 + [4] + [8])
    ts = tensors(3)
    launch.bare(drv, cubin(["*fp32"] * 3 + ["i32"], 1), ts + [1 << 20], 1024, 0x5E)()
    assert drv.launches[-1] == ("k", 1024, 128, 0x5E, [t.data_ptr() for t in ts] + [1 << 20, 0])
