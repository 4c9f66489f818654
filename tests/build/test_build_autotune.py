"""Kernels with @triton.autotune and @triton.heuristics (issue 14, build side): what a worker reads off
their wrappers under the installed Triton (tools/test_triton_versions.py runs this file under every
release), and the family artifact a build writes: the index, and one ordinary artifact per variant."""
from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from tmlr_build.builder.build import CAPTURE_JOB
from tmlr_build.builder.workers import Task, run_task
from tmlr_build.cli import run
from tmlr_build.common import errors as E
from tmlr_build.common.arch import Target
from tmlr_build.common.jobs import Job
from tmlr_build.common.kernel_facts import KernelFacts
from tmlr_runtime import ArtifactMetadata
from tmlr_runtime.artifact.metadata import read_parameter
from tmlr_runtime.abi import format_signature

DATA = Path(__file__).resolve().parents[1] / "data" / "autotune"
from tmlr_runtime.artifact.family_index import FAMILY_SCHEMA_PATH  # noqa: E402

SHAPE = json.loads(Path(FAMILY_SCHEMA_PATH).read_text())  # the contract: the runtime's family schema
MATMUL = f"{DATA}/tuned_matmul.py:matmul"
MATMUL_SIG = "*T:16, *T:16, *T:16, i32, i32, i32:16, i32:16, i32:16, i32:16"


def _facts(file: str, kernel: str) -> KernelFacts:
    job = Job(source=str(DATA / file), stage="python", target=Target.from_capability(90), kernel=kernel)
    return run_task(Task(CAPTURE_JOB, (job,), job.label))


def test_autotune_inside_heuristics_is_read_with_its_configs_and_expression() -> None:
    facts = _facts("tuned_matmul.py", "matmul")
    assert [(p.name, p.constexpr) for p in facts.params][-4:] == [("BLOCK_M", True), ("BLOCK_N", True),
                                                                  ("BLOCK_K", True), ("EVEN_K", True)]
    tune = facts.autotune
    assert tune is not None and tune.key == ("M", "N", "K") and tune.dtype_in_key
    assert [c.to_json() for c in tune.configs] == [
        {"kwargs": {"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32}, "num_warps": 4, "num_stages": 2, "num_ctas": 1,
         "maxnreg": None},
        {"kwargs": {"BLOCK_M": 64, "BLOCK_N": 32, "BLOCK_K": 32}, "num_warps": 4, "num_stages": 3, "num_ctas": 1,
         "maxnreg": None}]
    assert (tune.reset_to_zero, tune.restore_value, tune.has_pre_hook, tune.pruning) == ((), (), False, ())
    [even] = facts.heuristics
    assert (even.name, even.expr, even.after_config, even.is_bool) == (
        "EVEN_K", "args['K'] % args['BLOCK_K'] == 0", True, True)


def test_heuristics_outside_the_autotuner_come_first_and_do_not_see_the_config() -> None:
    facts = _facts("outer_heuristics.py", "scale")
    assert [(h.name, h.expr, h.after_config, h.is_bool) for h in facts.heuristics] == [
        ("BLOCK", "next_power_of_2(args['n'])", False, False), ("EVEN", "args['n'] % 16 == 0", False, True)]
    assert facts.autotune is not None and [c.num_warps for c in facts.autotune.configs] == [2, 4]


def test_reset_to_zero_pruning_and_an_opaque_heuristic_are_recorded() -> None:
    facts = _facts("split_k.py", "accumulate")
    tune = facts.autotune
    assert tune is not None and tune.reset_to_zero == ("out_ptr",) and tune.pruning == ("early_config_prune",)
    limit = facts.heuristics[1]
    assert limit.expr is None and "call of len" in str(limit.why)


def test_a_family_holds_one_ordinary_artifact_per_variant(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report, _ = run([MATMUL, "--signature", MATMUL_SIG, "--types", "T=fp16,bf16", "--configs", "1", "-o",
                     str(tmp_path / "fam"), "--arch", "90"])
    err = capsys.readouterr().err
    assert "matmul: 2 types x 1 pattern x 1 config x 2 EVEN_K x 1 arch = 4 variants" in err
    assert err.count(" for capability 90: ok (") == 4
    family = tmp_path / "fam" / "matmul"
    index = json.loads((family / "metadata.json").read_text())
    jsonschema.validate(index, SHAPE)
    assert report.written == [str(family)]
    assert [c["kwargs"]["BLOCK_M"] for c in index["autotune"]["configs"]] == [64]  # the configs built, renumbered
    assert sorted(v["signature"].split(", ", 3)[0] + v["signature"][-6:] for v in index["variants"]) == [
        "*bf16:16 False", "*bf16:16, True", "*fp16:16 False", "*fp16:16, True"]
    for v in index["variants"]:
        sub = json.loads((family / v["dir"] / "metadata.json").read_text())
        meta = ArtifactMetadata.from_dict(sub)
        assert sub["schema_version"] == 1 and meta.name == "matmul" and v["config"] == 0
        assert format_signature(read_parameter(p) for p in sub["signature"]) == v["signature"]
        assert sub["variants"][0]["launch"]["num_warps"] == 4
        assert sub["variants"][0]["provenance"]["options"]["num_stages"] == 3
    # a variant is exactly what a single build of its signature writes
    first = index["variants"][0]
    run([MATMUL, "--signature", first["signature"], "-o", str(tmp_path / "one"), "--arch", "90", "-q"])
    single = tmp_path / "one" / "matmul"
    assert sorted(p.name for p in single.iterdir()) == sorted(p.name for p in (family / first["dir"]).iterdir())
    for path in single.iterdir():
        assert path.read_bytes() == (family / first["dir"] / path.name).read_bytes()


def test_pruning_is_skipped_with_a_warning_and_opaque_heuristics_need_values(tmp_path: Path) -> None:
    src = f"{DATA}/split_k.py:accumulate"
    with pytest.raises(E.SpecError, match=r"heuristic LIMIT: its function is not a plain expression"):
        run([src, "--signature", "*fp32:16, *fp32:16, i32", "-o", str(tmp_path), "--arch", "90", "-q"])
    report, _ = run([src, "--signature", "*fp32:16, *fp32:16, i32", "--heuristic", "LIMIT=0", "--configs", "0", "-o",
                     str(tmp_path), "--arch", "90", "-q"])
    assert report.warnings == ["accumulate: prune_configs_by (early_config_prune) needs the call's arguments: "
                               "pruning skipped, all configs built"]
    index = json.loads((tmp_path / "accumulate" / "metadata.json").read_text())
    jsonschema.validate(index, SHAPE)
    assert index["autotune"]["reset_to_zero"] == ["out_ptr"]
    assert index["heuristics"] == [{"name": "MASKED", "expr": "args['n'] % args['BLOCK'] != 0", "after_config": True},
                                   {"name": "LIMIT", "expr": None, "after_config": True}]
    assert [v["signature"] for v in index["variants"]] == ["*fp32:16, *fp32:16, i32, 128, True, 0",
                                                          "*fp32:16, *fp32:16, i32, 128, False, 0"]


def test_an_autotuned_kernel_whose_constexprs_are_all_given_builds_one_artifact(tmp_path: Path) -> None:
    run([MATMUL, "--signature", MATMUL_SIG.replace("T", "fp16") + ", 32, 32, 32, True", "-o", str(tmp_path),
         "--arch", "90", "-q"])
    doc = json.loads((tmp_path / "matmul" / "metadata.json").read_text())
    assert doc["schema_version"] == 1 and not (tmp_path / "matmul" / "v").exists()


def test_the_autotune_example_plans_24_variants() -> None:
    from tmlr_build.builder import variants
    from tmlr_build.builder.spec import load_spec

    [req], archs = load_spec(str(Path(__file__).resolve().parents[2] / "examples" / "autotune" / "kernels.json"))
    job = Job(source=req.source, stage="python", target=Target.from_capability(90), kernel=req.kernel)
    plan = variants.plan(req, run_task(Task(CAPTURE_JOB, (job,), job.label)), len(archs or ()), 256)
    assert plan is not None
    assert plan.count_line == "matmul: 2 types x 1 pattern x 6 configs x 2 EVEN_K x 1 arch = 24 variants"


EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "autotune"


@pytest.mark.skipif(not __import__("triton").__version__.startswith("3.3."), reason="the committed example is Triton 3.3.1's output")
def test_committed_example_family_is_what_the_spec_builds_and_its_table_verifies(tmp_path: Path) -> None:
    from tmlr_runtime.cli.family import verify_family

    import shutil

    built, committed = tmp_path / "matmul", EXAMPLE / "artifacts" / "matmul"
    shutil.copytree(committed, built)  # the spec's own command, into a copy of the committed folder (issue 19)
    report, _ = run(["--spec", str(EXAMPLE / "kernels.json"), "-o", str(tmp_path), "-q"])
    files = sorted(p.relative_to(built) for p in built.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(committed) for p in committed.rglob("*") if p.is_file())
    assert all((built / f).read_bytes() == (committed / f).read_bytes() for f in files)  # tuning.json too
    assert report.notes == [] and report.written == [str(built)]
    checks = verify_family(str(committed), with_device=False)
    assert [c for c in checks if c[1] is False] == []
    assert any(name.startswith("tuning.json") and ok for name, ok, _ in checks)


# --- issue 31: heuristics the signature decides, a family written without a failed variant, launch-option configs ---
DECIDED = DATA / "decided.py"


def _index(folder: Path) -> dict:
    index = json.loads((folder / "metadata.json").read_text())
    jsonschema.validate(index, SHAPE)
    return index


def test_only_the_heuristic_values_a_call_can_meet_are_compiled(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run([f"{DECIDED}:maybe_add", "--signature", "*fp32, None, i32:16?, 64", "-o", str(tmp_path), "--arch", "90"])
    err = capsys.readouterr().err
    assert ("maybe_add: 1 type x 2 patterns x 2 HAS_X x 2 EVEN x 1 arch = 8 combinations; the signature decides HAS_X, "
            "EVEN where it fixes what they read, so 3 variants") in err
    assert err.count(": ok (") == 3 and ": failed (" not in err  # HAS_X=True with x None is never compiled
    index = _index(tmp_path / "maybe_add")
    assert index["schema_version"] == 3 and "failed" not in index
    assert sorted(v["signature"] for v in index["variants"]) == ["*fp32, None, i32, 64, False, False",
                                                                 "*fp32, None, i32, 64, False, True",
                                                                 "*fp32, None, i32:16, 64, False, True"]
    # x given as None is a constexpr of every variant, and so of the index (fla's kernels take many such arguments)
    assert [(p["name"], p["kind"]) for p in index["params"]] == [
        ("out_ptr", "runtime"), ("x", "constexpr"), ("n", "runtime"), ("BLOCK", "constexpr"), ("HAS_X", "constexpr"),
        ("EVEN", "constexpr")]


def test_a_family_with_an_argument_given_as_none_loads_and_dispatches(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")

    import tmlr_runtime as tr
    from fake_driver import fake_cuda_tensor_type, installed

    run([f"{DECIDED}:maybe_add", "--signature", "*fp32, None, i32:16?, 64", "-o", str(tmp_path), "--arch", "90", "-q"])
    out = torch.zeros(64).as_subclass(fake_cuda_tensor_type(0))
    with installed() as fake:
        family = tr.Kernel.load(str(tmp_path / "maybe_add"))
        family(1, out, None, 48)
        family[(1,)](out_ptr=out, x=None, n=33)
        assert [launch["kernel"] for launch in fake.launches] == ["maybe_add", "maybe_add"]
        assert [family.choose(out, None, n).signature for n in (48, 33)] == [
            "*fp32, None, i32:16, 64, False, True", "*fp32, None, i32, 64, False, False"]


def test_a_family_is_written_without_the_variants_that_fail_and_refuses_calls_that_need_them(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    torch = pytest.importorskip("torch")

    import tmlr_runtime as tr
    from fake_driver import fake_cuda_tensor_type, installed
    from tmlr_build.cli import main

    status = main([f"{DECIDED}:strict", "--signature", "*fp32, i32, 2", "-o", str(tmp_path), "--arch", "90"])
    err = capsys.readouterr().err
    folder = tmp_path / "strict"
    assert status == 1  # decided: a build that leaves variants out fails, though what it wrote loads
    assert f"tmlr-build: error: wrote {folder} with 2 of 4 variants; 2 failed to compile, and its index lists them" in err
    assert err.count("Triton failed in stage python -> ttir: EVEN sizes are not supported") == 3  # 2 lines + 1 in full
    assert f"tmlr-build: wrote {folder} (sm_90a; 2 of 4 variants: 2 failed to compile)" in err
    index = _index(folder)
    assert index["schema_version"] == 8
    assert [v["signature"] for v in index["variants"]] == ["*fp32, i32, 32, 2, False", "*fp32, i32, 64, 2, False"]
    assert [(f["config"], f["signature"]) for f in index["failed"]] == [(0, "*fp32, i32, 32, 2, True"),
                                                                       (1, "*fp32, i32, 64, 2, True")]
    assert all(f["error"].endswith("EVEN sizes are not supported") and "\n" not in f["error"] for f in index["failed"])
    assert sorted(p.name for p in (folder / "v").iterdir()) == sorted(v["dir"][2:] for v in index["variants"])
    out = torch.zeros(64).as_subclass(fake_cuda_tensor_type(0))
    with installed():
        family = tr.Kernel.load(str(folder))
        family(1, out, 33)  # n % 16 != 0: EVEN=False, built for both configs
        with pytest.raises(tr.VariantNotBuiltError) as e:
            family(1, out, 32)  # EVEN=True: every config's variant failed (a benchmark of none, so its error)
        assert e.value.vid == index["failed"][1]["vid"] and "EVEN sizes are not supported" in str(e.value)
        with pytest.raises(tr.VariantNotBuiltError, match=r"the variant for this call, c0-\w+ \[\*fp32, i32, 32, 2, True\], "
                                                          r"failed to compile when the family was built"):
            family.variant(0, out, 48)


def test_configs_that_set_only_launch_options_build_a_family_the_runtime_tunes(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")

    import tmlr_runtime as tr
    from fake_driver import fake_cuda_tensor_type, installed

    report, _ = run([f"{DECIDED}:warps_only", "--signature", "*fp32, i32, 64", "--configs", "0,2", "-o", str(tmp_path),
                     "--arch", "90", "-q"])
    assert report.warnings == []
    index = _index(tmp_path / "warps_only")
    assert [(c["kwargs"], c["num_warps"], c["num_stages"]) for c in index["autotune"]["configs"]] == [({}, 2, 3), ({}, 8, 2)]
    assert [(v["config"], v["signature"]) for v in index["variants"]] == [(0, "*fp32, i32, 64"), (1, "*fp32, i32, 64")]
    launch = [json.loads((tmp_path / "warps_only" / v["dir"] / "metadata.json").read_text())["variants"][0]["launch"]
              for v in index["variants"]]
    assert [w["num_warps"] for w in launch] == [2, 8]
    out = torch.zeros(64).as_subclass(fake_cuda_tensor_type(0))
    with installed() as fake:
        fake.launch_time = lambda launch: {64: 0.3, 256: 0.1}[launch["block"][0]]  # config 1 (8 warps) is faster
        family = tr.Kernel.load(str(tmp_path / "warps_only"))
        family(1, out, 64)
        assert fake.launches[-1]["block"] == (256, 1, 1) and family.tuner.memory == {(64, "fp32"): 1}
        with pytest.raises(tr.ArgumentError, match="num_warps"):  # an autotuned family's configs set it, as in Triton
            family(1, out, 64, num_warps=2)


def test_a_plain_build_of_an_autotuned_kernel_warns_only_once_written(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    from tmlr_build.cli import main

    src = f"{DECIDED}:strict"
    assert main([src, "--signature", "*fp32, i32, 32, 2", "--constexpr", "EVEN=True", "-o", str(tmp_path), "--arch", "90"]) == 1
    assert "plain artifact" not in capsys.readouterr().err  # nothing was built
    report, _ = run([src, "--signature", "*fp32, i32, 32, 2", "--constexpr", "EVEN=False", "-o", str(tmp_path),
                     "--arch", "90", "-q"])
    assert report.warnings == ["strict: every constexpr the 2 @triton.autotune configs set (BT) is fixed by the signature "
                               "or --constexpr, so one plain artifact was built with Triton's defaults: the autotune configs "
                               "(their num_warps, num_stages) were not used; to build them as a family, leave BT out of the "
                               "signature (--configs I,J picks some)"]
