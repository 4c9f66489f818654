"""tmlr-build record (tmlr_build/record/): launches become spec entries (one family per kernel: :16?, type variables,
constexpr and heuristic lists, autotune configs and the config chosen per key), a re-recording keeps what the user
wrote, kernels without a file are reported, and the written spec builds. No GPU: ``JITFunction.run`` is replaced
by a stub under the recorder (it runs first, as it does before a real launch), or, in a subprocess, the launch
fails after the recorder saw it."""
from __future__ import annotations

import hashlib
import json
import linecache
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

from tmlr_build.common.errors import SpecError
from tmlr_build.record import recorder as recorder_module, recording
from tmlr_build.record.family import Family
from tmlr_build.record.spec_doc import KernelSeen, merge
from triton_facts import FakeTensor

ROOT = Path(__file__).resolve().parents[2]
H100 = "NVIDIA H100 80GB HBM3"


T = FakeTensor


@pytest.fixture(scope="module")
def kernlib() -> Iterator[Any]:
    """tests/data/kernlib imported as its tuned module needs at import: with tmlr-build's stand-in driver (sm_90)."""
    from tmlr_build.compile import build_driver

    sys.path.insert(0, str(ROOT / "tests" / "data"))
    try:
        with build_driver.standing_in(90, None):  # Triton's driver and torch.cuda put back after
            import kernlib
            from kernlib.ops import heur, plain, tuned

            yield kernlib
    finally:
        sys.path.remove(str(ROOT / "tests" / "data"))


@pytest.fixture
def no_launch(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """JITFunction.run as a stub that records its calls (the recorder wraps it as it wraps Triton's)."""
    from triton.runtime.jit import JITFunction

    calls: list[tuple[Any, ...]] = []
    monkeypatch.setattr(JITFunction, "run", lambda self, *args, **kwargs: calls.append((self, args, kwargs)))
    monkeypatch.setattr(recorder_module, "device", lambda: (H100, 90))
    return calls


def _spec(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def _entry(doc: dict[str, Any], qualname: str) -> dict[str, Any]:
    (found,) = [e for e in doc["kernels"] if e.get("qualname") == qualname]
    return found


def test_launches_of_a_kernel_become_one_family_entry(tmp_path: Path, kernlib: Any, no_launch: list[Any]) -> None:
    scale = kernlib.ops.plain.scale
    spec = tmp_path / "spec.json"
    with recording(spec, quiet=True):
        scale[(1,)](T(16), T(32), 1024, BLOCK=256)
        scale[(1,)](T(16), T(40), 1000, BLOCK=256)  # an unaligned pointer and n: :16?
        scale[(1,)](T(32, "torch.float16"), T(64, "torch.float16"), 64, BLOCK=1024)  # both pointers' type: one T
        scale[(1,)](T(16), T(32), 1024, BLOCK=256)  # seen before
    assert len(no_launch) == 4  # the launches went on
    doc = _spec(spec)
    entry = _entry(doc, "scale")
    assert entry == {
        "source": os.path.relpath(ROOT / "tests/data/kernlib/ops/plain.py", tmp_path), "kernel": "scale",
        "signature": "*T:16, *T:16?, i32:16?", "types": {"T": ["fp32", "fp16"]}, "constexprs": {"BLOCK": [256, 1024]},
        "module": "kernlib.ops.plain", "qualname": "scale", "recorded": True}
    assert doc["arch"] == [90] and "build with: tmlr-build --spec" in doc["$comment"]
    before = spec.read_bytes()
    with recording(spec, quiet=True):  # the same launches again: nothing new
        scale[(1,)](T(16), T(40), 1000, BLOCK=256)
    assert spec.read_bytes() == before


def test_a_tl_constexpr_argument_is_recorded_as_its_value(tmp_path: Path, kernlib: Any, no_launch: list[Any]) -> None:
    """A call's ``BLOCK=tl.constexpr(256)`` is the value 256 (tmlr_runtime.objects.unwrap, the one home), in the
    recorder and in the specialization it hands the build (jit_specialize)."""
    from typing import NamedTuple

    import triton.language as tl

    from tmlr_build.builder.jit_specialize import _unwrapped

    with recording(tmp_path / "spec.json", quiet=True):
        kernlib.ops.plain.scale[(1,)](T(16), T(32), 1024, BLOCK=tl.constexpr(256))
    assert _entry(_spec(tmp_path / "spec.json"), "scale")["constexprs"] == {"BLOCK": 256}

    class Shape(NamedTuple):
        m: Any
        n: Any

    assert _unwrapped((tl.constexpr(8), (tl.constexpr(4), 2))) == (8, (4, 2))
    kept = _unwrapped(Shape(tl.constexpr(16), 32))
    assert kept == Shape(16, 32) and type(kept) is Shape


def test_types_that_change_together_share_a_variable_and_others_get_their_own() -> None:
    def launch(x: str, y: str, n: str = "i32") -> Family:
        return Family.of_launch([f"*{x}:16", f"*{y}:16", n], {}, {"BLOCK": 64}, {})

    tied = launch("fp16", "fp16")
    tied.merge(launch("bf16", "bf16"))
    assert tied.entry()["signature"] == "*T:16, *T:16, i32" and tied.entry()["types"] == {"T": ["fp16", "bf16"]}
    apart = launch("fp16", "fp16")
    apart.merge(launch("bf16", "fp16", "i64"))
    apart.merge(launch("fp16", "fp32"))
    assert apart.entry()["signature"] == "*T:16, *U:16, V"
    assert apart.entry()["types"] == {"T": ["fp16", "bf16"], "U": ["fp16", "fp32"], "V": ["i32", "i64"]}
    for family in (tied, apart):  # an entry read back is the same family: merging it again changes nothing
        again = Family.of_entry(family.entry())
        assert again.key == family.key and not again.merge(family) and again.entry() == family.entry()


def test_patterns_and_kinds() -> None:
    one = Family.of_launch(["*fp32:16", "i32:1", "(*fp32:16, None)", "fp32"], {}, {}, {})
    assert one.entry()["signature"] == "*fp32:16, i32:1, (*fp32:16, None), fp32"
    one.merge(Family.of_launch(["*fp32", "i32", "(*fp32, None)", "fp32"], {}, {}, {}))
    assert one.entry()["signature"] == "*fp32:16?, i32, (*fp32:16?, None), fp32"  # 1 and plain: plain takes 1
    # what one entry cannot say: another kind of leaf (a tensor and None), other launch options
    assert Family.of_launch(["(*fp32:16, *fp32:16)"], {}, {}, {}).key != Family.of_launch(
        ["(*fp32:16, None)"], {}, {}, {}).key
    assert Family.of_launch(["i32"], {"num_warps": 8}, {}, {}).key != Family.of_launch(["i32"], {}, {}, {}).key
    assert Family.of_launch(["i32"], {}, {}, {}).key != Family.of_launch(["fp32"], {}, {}, {}).key


def test_heuristic_values_and_launch_options(tmp_path: Path, kernlib: Any, no_launch: list[Any]) -> None:
    spec = tmp_path / "spec.json"
    with recording(spec, quiet=True):
        kernlib.ops.heur.heur_scale[(1,)](T(16), T(32), 100)
        kernlib.ops.heur.heur_scale[(1,)](T(16), T(32), 1000)
        kernlib.ops.plain.scale[(1,)](T(16), T(32), 1024, BLOCK=256)
        kernlib.ops.plain.scale[(1,)](T(16), T(32), 1024, BLOCK=256, num_warps=8)
    doc = _spec(spec)
    heur = _entry(doc, "heur_scale")
    assert heur["signature"] == "*fp32:16, *fp32:16, i32" and heur["heuristics"] == {"BLOCK": [128, 1024]}
    plain = [e for e in doc["kernels"] if e["kernel"] == "scale"]
    assert [(e.get("name"), e.get("options")) for e in plain] == [(None, None), ("scale_2", {"num_warps": 8})]


def test_autotune_configs_and_the_config_chosen_per_key(tmp_path: Path, kernlib: Any, no_launch: list[Any],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    tuner = kernlib.ops.tuned.tuned_scale
    times = iter([2.0, 1.0] * 4)  # config 1 is the faster one
    monkeypatch.setattr(tuner, "do_bench", lambda call, quantiles: (call(), [next(times)] * 3)[1])
    monkeypatch.setattr(tuner, "cache", {})
    spec = tmp_path / "spec.json"
    with recording(spec, quiet=True):
        tuner[(1,)](T(16), T(32), 4096)  # Triton's own Autotuner.run benchmarks both configs, then launches
        tuner[(1,)](T(16), T(32), 4096)  # from its cache
    assert len(no_launch) == 2 + 1 + 1
    entry = _entry(_spec(spec), "tuned_scale")
    configs = [{"kwargs": {"BLOCK": 256}, "num_warps": 4, "num_stages": 3, "num_ctas": 1, "maxnreg": None},
               {"kwargs": {"BLOCK": 1024}, "num_warps": 8, "num_stages": 3, "num_ctas": 1, "maxnreg": None}]
    assert entry["signature"] == "*fp32:16, *fp32:16, i32:16"  # BLOCK comes per config
    assert entry["configs"] == configs and "constexprs" not in entry and "options" not in entry
    assert entry["tuning"] == [{"device": H100, "key": [4096, "fp32", "fp32"], "config": configs[1]}]


def test_a_recorded_config_is_the_family_index_form() -> None:
    """The recorder writes a triton.Config as the family index's Config.to_json does (one home), and the build
    reads it back to the same config."""
    import triton

    from tmlr_build.builder.variants import config_from_dict
    from tmlr_runtime.artifact.family_index import Config

    config = triton.Config({"BLOCK": 64, "SPLIT": True}, num_warps=2, num_stages=5, maxnreg=128)
    written = recorder_module._config(config)
    assert written == Config({"BLOCK": 64, "SPLIT": True}, 2, 5, 1, 128).to_json()
    assert config_from_dict(written, "here").to_json() == written


def test_an_autotune_choice_without_a_device_name_is_reported(tmp_path: Path, kernlib: Any, no_launch: list[Any],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    tuner = kernlib.ops.tuned.tuned_scale
    monkeypatch.setattr(tuner, "do_bench", lambda call, quantiles: (call(), [1.0] * 3)[1])
    monkeypatch.setattr(tuner, "cache", {})
    monkeypatch.setattr(recorder_module, "device", lambda: None)
    with recording(tmp_path / "spec.json", quiet=True) as rec:
        tuner[(1,)](T(16), T(32), 4096)
    assert "tuning" not in _entry(_spec(tmp_path / "spec.json"), "tuned_scale")
    assert [r["reason"] for r in rec.not_recorded] == [
        "autotune choices: the device's name is not known (no GPU launch?), so they are not recorded"]


def test_a_recording_keeps_what_the_user_wrote(tmp_path: Path, kernlib: Any, no_launch: list[Any]) -> None:
    spec = tmp_path / "spec.json"
    mine = {"source": "mine.py", "kernel": "scale", "signature": "*fp16, *fp16, i32, 64", "$comment": "by hand"}
    spec.write_text(json.dumps({"$comment": "my spec", "options": {"num_warps": 4}, "ptx": True, "kernels": [mine]}))
    scale = kernlib.ops.plain.scale
    with recording(spec, quiet=True):
        scale[(1,)](T(16), T(32), 1024, BLOCK=256)
    doc = _spec(spec)
    assert doc["kernels"][0] == mine and doc["options"] == {"num_warps": 4} and doc["ptx"] is True
    assert doc["$comment"] == "my spec" and "arch" in doc
    recorded = doc["kernels"][1]
    assert recorded["name"] == "scale_2"  # the user's entry builds an artifact named scale
    recorded.update({"arch": [90], "$comment": "mine too", "name": "scale_fast"})  # the user edits the recorded entry
    doc["arch"] = [80, 90]
    spec.write_text(json.dumps(doc))
    with recording(spec, quiet=True):
        scale[(1,)](T(16), T(32), 1000, BLOCK=512)
    again = _spec(spec)
    assert again["kernels"][0] == mine and again["arch"] == [80, 90] and len(again["kernels"]) == 2
    extended = again["kernels"][1]
    assert extended["signature"] == "*fp32:16, *fp32:16, i32:16?" and extended["constexprs"] == {"BLOCK": [256, 512]}
    assert (extended["name"], extended["arch"], extended["$comment"]) == ("scale_fast", [90], "mine too")


def test_kernels_the_build_cannot_import_by_name_are_reported(tmp_path: Path, kernlib: Any,
                                                              no_launch: list[Any]) -> None:
    import triton

    source = "import triton\n\n\n@triton.jit\ndef cell_kernel(x):\n    pass\n"
    linecache.cache["<cell-3>"] = (len(source), None, source.splitlines(True), "<cell-3>")  # as a notebook has it
    scope: dict[str, Any] = {"__name__": "notebook"}
    exec(compile(source, "<cell-3>", "exec"), scope)

    @triton.jit
    def local_kernel(x):
        pass

    with recording(tmp_path / "spec.json", quiet=True) as rec:
        scope["cell_kernel"][(1,)](T(16))
        local_kernel[(1,)](T(16))
        kernlib.ops.plain.scale[(1,)](T(16), T(32), 1024, BLOCK=256)
    doc = _spec(tmp_path / "spec.json")
    assert [e["kernel"] for e in doc["kernels"]] == ["scale"]
    reasons = {r["kernel"]: r["reason"] for r in doc["not_recorded"]}
    assert reasons["notebook:cell_kernel"].startswith("defined outside a file (<cell-3>: exec'd code or a notebook")
    local = f"{__name__}:test_kernels_the_build_cannot_import_by_name_are_reported.<locals>.local_kernel"
    assert reasons[local].startswith("defined inside a function or class")
    assert rec.not_recorded == doc["not_recorded"]


def test_a_file_that_is_no_spec_is_left_alone(tmp_path: Path, kernlib: Any, no_launch: list[Any]) -> None:
    path = tmp_path / "notes.json"
    path.write_text('{"todo": []}')
    with recording(path, quiet=True) as rec:
        kernlib.ops.plain.scale[(1,)](T(16), T(32), 1024, BLOCK=256)
    assert path.read_text() == '{"todo": []}' and rec.error is not None and "not a spec file" in rec.error
    with pytest.raises(SpecError, match="not a spec file"):
        from tmlr_build.record import spec_file

        spec_file.read(str(path))


def test_a_spec_that_cannot_be_written_is_said_even_when_quiet(tmp_path: Path, kernlib: Any, no_launch: list[Any],
                                                               monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    def broken(*args: Any) -> None:
        raise TypeError("a value the merge cannot take")

    monkeypatch.setattr(recorder_module.spec_doc, "merge", broken)
    spec = tmp_path / "spec.json"
    with recording(spec, quiet=True) as rec:  # quiet: as every process under tmlr-build record
        kernlib.ops.plain.scale[(1,)](T(16), T(32), 1024, BLOCK=256)
        kernlib.ops.plain.scale[(1,)](T(16), T(32), 1000, BLOCK=256)
    assert len(no_launch) == 2 and not spec.exists()  # the launches went on; nothing half-written
    err = capsys.readouterr().err
    assert err.count("nothing written") == 1 and f"nothing written to {spec}: TypeError: a value the merge" in err
    assert rec.error == "a value the merge cannot take"


def test_a_system_without_file_locks_is_said_and_the_spec_left_alone(tmp_path: Path, kernlib: Any,
                                                                    no_launch: list[Any],
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from tmlr_runtime.artifact import locked_file

    monkeypatch.setattr(locked_file, "CAN_LOCK", False)  # as on Windows (no fcntl)
    spec = tmp_path / "spec.json"
    with recording(spec, quiet=True) as rec:
        kernlib.ops.plain.scale[(1,)](T(16), T(32), 1024, BLOCK=256)
    assert len(no_launch) == 1 and not spec.exists()
    assert rec.error is not None and "no fcntl module" in rec.error and "record on Linux or macOS" in rec.error


def test_merging_twice_is_merging_once() -> None:
    seen = KernelSeen("k.py", "k", "__main__", "k", None)
    seen.add(Family.of_launch(["*fp16:16", "i32"], {}, {"B": 1}, {}))
    seen.add(Family.of_launch(["*bf16", "i32:16"], {}, {"B": 2}, {}))
    once = merge(None, [seen], [{"kernel": "x:y", "reason": "r"}])
    assert merge(once, [seen], [{"kernel": "x:y", "reason": "r"}]) == once
    assert once["kernels"][0]["signature"] == "*T:16?, i32:16?"


def _record_cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "tmlr_build", "record", *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)


PROBE = "import importlib.util\nassert importlib.util.find_spec('triton')  # as torch probes, before Triton is imported\n"


@pytest.mark.parametrize("probe", ["", PROBE], ids=["plain", "probed-first"])
def test_the_command_records_a_script_and_returns_its_status(tmp_path: Path, probe: str) -> None:
    (tmp_path / "mykernels.py").write_text(
        "import triton\nimport triton.language as tl\n\n\n@triton.jit\ndef twice(x_ptr, n, BLOCK: tl.constexpr):\n"
        "    offs = tl.arange(0, BLOCK)\n    tl.store(x_ptr + offs, 2 * tl.load(x_ptr + offs))\n")
    (tmp_path / "serve.py").write_text(
        probe + "import sys\nimport mykernels\n\n\nclass T:\n    dtype = 'torch.float16'\n\n    def data_ptr(self):\n"
        "        return 4096\n\n\n"
        "try:\n    mykernels.twice[(1,)](T(), 1024, BLOCK=128)  # no GPU here: fails after the recorder saw it\n"
        "except Exception as e:\n    print('launch failed:', type(e).__name__)\nsys.exit(3)\n")
    done = _record_cli(tmp_path, "-o", "rec.json", "--", sys.executable, "serve.py")
    assert done.returncode == 3, done.stderr
    assert "launch failed" in done.stdout
    entry = _entry(_spec(tmp_path / "rec.json"), "twice")
    assert (entry["source"], entry["signature"], entry["constexprs"]) == ("mykernels", "*fp16:16, i32:16",
                                                                         {"BLOCK": 128})
    assert "tmlr-build record: rec.json: 1 recorded entries (1 new, 0 extended); build them with: tmlr-build " \
           "--spec rec.json -o OUT" in done.stderr
    for flags in (["-I"], []):  # a process that does not load the recorder, one that launches nothing
        nothing = _record_cli(tmp_path, "-o", "none.json", "--", sys.executable, *flags, "-c", "import triton")
        assert nothing.returncode == 0 and "no @triton.jit launch was recorded" in nothing.stderr
        assert not (tmp_path / "none.json").exists()


def test_the_command_refuses_before_it_runs_anything(tmp_path: Path) -> None:
    (tmp_path / "notes.json").write_text("[1, 2]")
    bad = _record_cli(tmp_path, "-o", "notes.json", "--", sys.executable, "-c", "open('ran', 'w')")
    assert bad.returncode == 2 and "not a spec file" in bad.stderr and not (tmp_path / "ran").exists()
    usage = _record_cli(tmp_path, "-o", "x.json")
    assert usage.returncode == 2 and "name the command to record after --" in usage.stderr


def test_the_pytest_plugin_records_a_session(tmp_path: Path) -> None:
    (tmp_path / "test_k.py").write_text(
        "import triton\nimport triton.language as tl\n\n\n@triton.jit\ndef k(x_ptr, n):\n    pass\n\n\n"
        "class T:\n    dtype = 'torch.int32'\n\n    def data_ptr(self):\n        return 32\n\n\n"
        "def test_launch():\n    try:\n        k[(1,)](T(), 17)\n    except Exception:\n        pass\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "tmlr_build.record.pytest_plugin", "--tmlr-record",
                           "s.json", "-q", "-p", "no:cacheprovider", "test_k.py"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"tmlr-build record: 1 kernel families recorded into {tmp_path / 's.json'}" in done.stdout
    assert _entry(_spec(tmp_path / "s.json"), "k")["signature"] == "*i32:16, i32"


def test_a_recorded_autotuned_kernel_builds_with_its_tuning_table(tmp_path: Path, kernlib: Any, no_launch: list[Any],
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from tmlr_runtime.artifact.tuning_table import read_entries

    from tmlr_build.cli import run

    tuner = kernlib.ops.tuned.tuned_scale
    times = iter([2.0, 1.0])
    monkeypatch.setattr(tuner, "do_bench", lambda call, quantiles: (call(), [next(times)] * 3)[1])
    monkeypatch.setattr(tuner, "cache", {})
    spec = tmp_path / "spec.json"
    with recording(spec, quiet=True):
        tuner[(1,)](T(16), T(32), 4096)
    report, _ = run(["--spec", str(spec), "-o", str(tmp_path / "out"), "-q"])  # "arch": [90] is the recording's
    family = tmp_path / "out" / "tuned_scale"
    index = json.loads((family / "metadata.json").read_text())
    assert [c["kwargs"] for c in index["autotune"]["configs"]] == [{"BLOCK": 256}, {"BLOCK": 1024}]
    table = read_entries(str(family / "tuning.json"), 2)
    sha = hashlib.sha256((family / "metadata.json").read_bytes()).hexdigest()
    assert [(e["device"], e["index_sha256"], e["key"], e["config"]) for e in table] == [
        (H100, sha, [4096, "fp32", "fp32"], 1)]
    assert "tuned_scale: tuning.json: 1 recorded choice(s) of the spec's \"tuning\" added" in report.notes


@pytest.mark.parametrize("entry, message", [
    ({"constexprs": {"BLOCK": []}}, '"constexprs" BLOCK: give one value, or a list of distinct'),
    ({"constexprs": {"BLOCK": [1, 1]}}, '"constexprs" BLOCK: give one value, or a list of distinct'),
    ({"constexprs": {"BLOCK": [[1, {}]]}}, '"constexprs" BLOCK: give one value, or a list of distinct'),
    ({"tuning": [{"device": "x", "key": 3, "config": {}}]}, '"tuning" must be a list like'),
    ({"module": 3}, '"module" must be a string'),
    ({"recorded": "yes"}, '"recorded" must be true or false'),
])
def test_the_spec_reader_checks_what_a_recording_writes(tmp_path: Path, entry: dict[str, Any], message: str) -> None:
    from tmlr_build.builder.spec import load_spec

    (tmp_path / "k.py").write_text("")
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"kernels": [{"source": "k.py", "kernel": "k", "signature": "i32", **entry}]}))
    with pytest.raises(SpecError, match=message):
        load_spec(str(spec))
    spec.write_text(json.dumps({"kernels": [], "not_recorded": {}}))
    with pytest.raises(SpecError, match='"not_recorded" must be a list'):
        load_spec(str(spec))
    (tmp_path / "k.ptx").write_text("")
    spec.write_text(json.dumps({"kernels": [{"source": "k.ptx", "constexprs": {"B": [1, 2]}}]}))
    with pytest.raises(SpecError, match="a list of values builds variants of a Python kernel only"):
        load_spec(str(spec))


def test_recorded_choices_join_a_table_without_replacing_its_entries(tmp_path: Path) -> None:
    from tmlr_runtime import METADATA_FILE
    from tmlr_runtime.artifact.tuning_table import entry, table_doc

    from tmlr_build.builder import variants
    from tmlr_build.builder.recorded_tuning import recorded_table
    from tmlr_build.builder.sources import KernelRequest
    from tmlr_build.common.kernel_facts import AutotuneFact, ConfigFact, KernelFacts, ParamFact

    configs = tuple(ConfigFact({"BLOCK": b}, 4, 3, 1, None) for b in (64, 128))
    facts = KernelFacts((ParamFact("x", False), ParamFact("n", False), ParamFact("BLOCK", True)),
                        AutotuneFact(("n",), configs, (), (), False, (), True), ())
    plan = variants.plan(KernelRequest(source="/k.py", stage="python", kernel="k", signature="*fp32, i32"), facts, 1, 9)
    files = {METADATA_FILE: b'{"an": "index"}'}
    sha = hashlib.sha256(files[METADATA_FILE]).hexdigest()
    family = tmp_path / "k"
    family.mkdir()
    tuned = entry(H100, sha, (64, "fp32"), 0, [1.0, 2.0])
    (family / "tuning.json").write_text(json.dumps(table_doc("k", [tuned])))

    def choice(key: list[Any], block: int) -> dict[str, Any]:
        return {"device": H100, "key": key, "config": {"kwargs": {"BLOCK": block}, "num_warps": 4}}

    table, notes = recorded_table(str(family), "k", files, [], plan,
                                  [choice([64, "fp32"], 128), choice([256, "fp32"], 128), choice([512, "fp32"], 32)])
    assert table is not None
    assert json.loads(table)["entries"] == [tuned, entry(H100, sha, (256, "fp32"), 1)]  # tmlr tune's entry kept
    assert notes == ["k: tuning.json: 1 recorded choice(s) of the spec's \"tuning\" added",
                     "k: the spec's \"tuning\" chose a config this build does not have for key(s) [512, \"fp32\"]: not "
                     "added (record again, or add the config to \"configs\")"]
    assert recorded_table(str(family), "k", files, ["tuning.json"], plan, [choice([64, "fp32"], 64)])[0] is not None
    assert recorded_table(str(family), "k", files, [], None, [choice([64, "fp32"], 64)]) == (
        None, ["k: the spec's \"tuning\" is not used: this build is no family of autotune configs"])


CAST = '''
import triton
import triton.language as tl


@triton.jit
def cast(x_ptr, out_ptr, n, DT: tl.constexpr, BLOCK: tl.constexpr):
    # out = x rounded through DT
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask).to(DT), mask=mask)
'''


def test_a_recorded_dtype_constexpr_builds_and_is_served_from_the_module_it_ran_in(
        tmp_path: Path, no_launch: list[Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """A kernel of a namespace package (nsk/kern.py, no __init__.py) runs as nsk.kern, which the build imports as
    kern: serve.json names the module the recording saw, so serve() finds it even beside another module named kern;
    its tl.dtype constexpr is written as text the build reads back as the dtype, one variant per dtype."""
    import importlib
    import types

    torch = pytest.importorskip("torch")
    import triton.language as tl

    import tmlr_runtime as tr
    from fake_driver import fake_cuda_tensor_type, installed
    from tmlr_build.cli import run

    (tmp_path / "lib" / "nsk").mkdir(parents=True)
    (tmp_path / "lib" / "nsk" / "kern.py").write_text(CAST)
    (tmp_path / "specs").mkdir()
    monkeypatch.syspath_prepend(str(tmp_path / "lib"))
    monkeypatch.delitem(sys.modules, "nsk.kern", raising=False)
    kern = importlib.import_module("nsk.kern")
    monkeypatch.setitem(sys.modules, "kern", types.ModuleType("kern"))  # another module of the file's stem
    spec = tmp_path / "specs" / "spec.json"
    with recording(spec, quiet=True):
        kern.cast[(1,)](T(16), T(32), 1024, DT=tl.float16, BLOCK=256)
        kern.cast[(1,)](T(16), T(32), 1024, tl.bfloat16, 256)
        kern.cast[(1,)](T(16), T(32), 1024, "tl.float32", 256)  # a string the spec would read as the dtype
    doc = _spec(spec)
    assert _entry(doc, "cast") == {
        "source": "../lib/nsk/kern.py", "kernel": "cast", "signature": "*fp32:16, *fp32:16, i32:16",
        "constexprs": {"DT": ["tl.float16", "tl.bfloat16"], "BLOCK": 256}, "module": "nsk.kern", "qualname": "cast",
        "recorded": True}
    assert [r["reason"] for r in doc["not_recorded"]] == [
        "constexpr DT='tl.float32': a spec reads this string as the Triton object it names, not as a string; pass the "
        "object itself, or a string that names none"]
    out = tmp_path / "out"
    run(["--spec", str(spec), "-o", str(out), "-q"])
    index = json.loads((out / "cast" / "metadata.json").read_text())
    assert sorted(v["signature"] for v in index["variants"]) == [
        "*fp32:16, *fp32:16, i32:16, tl.bfloat16, 256", "*fp32:16, *fp32:16, i32:16, tl.float16, 256"]
    served = json.loads((out / "serve.json").read_text())["kernels"]
    assert [(e["artifact"], e["module"], e["kernel"], e["source"]) for e in served] == [
        ("cast", "nsk.kern", "cast", "kern.py")]
    t = fake_cuda_tensor_type(0)
    x, y = torch.zeros(1024).as_subclass(t), torch.zeros(1024).as_subclass(t)
    with installed() as fake, tr.serve(out):  # the fake device first: it stands in for a CUDA torch too
        kern.cast[(1,)](x, y, 1024, DT=tl.float16, BLOCK=256)
        kern.cast[(1,)](x, y, 1024, tl.bfloat16, 256)
        with pytest.raises(tr.UnservedKernelError):
            kern.cast[(1,)](x, y, 1024, DT=tl.float32, BLOCK=256)
    assert [launch["kernel"] for launch in fake.launches] == ["cast", "cast"]
    assert len(no_launch) == 3  # the recording's calls: none served went to Triton


def test_serve_json_names_the_recorded_module_but_a_scripts_by_its_file() -> None:
    from types import SimpleNamespace

    from tmlr_build.builder import serve_index
    from tmlr_build.builder.sources import KernelRequest

    done = [SimpleNamespace(provenance={"source_sha256": "0" * 64})]

    def module(identity: tuple[str, str] | None, package: str | None = None) -> str:
        req = KernelRequest(source="/w/lib/nsk/kern.py", stage="python", kernel="cast", module=package,
                            identity=identity)
        return serve_index.entry(req, "cast", done)["module"]  # type: ignore[index,arg-type]

    assert module(("nsk.kern", "cast")) == "nsk.kern"  # the module the recording saw
    assert module(("__main__", "cast")) == "kern"  # a script's: found by its file (serve matches the running script)
    assert module(("nsk.kern", "cast"), "lib.nsk.kern") == "nsk.kern"
    assert module(None, "lib.nsk.kern") == "lib.nsk.kern" and module(None) == "kern"  # not recorded: as before
