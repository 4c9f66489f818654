"""Kernel files of public kernel libraries build as they are (issue 11).

``tests/data/kernlib`` is laid out like such a library: its ``__init__`` imports an
``@triton.autotune`` module (which also asks Triton's driver for the current target at import) and
an ``@triton.heuristics`` one, and the kernel modules import a sibling relatively. Without a GPU
there is no active Triton driver, so the build installs a stand-in (tmlr_build/compile/build_driver.py,
which also answers device questions as a GPU: tests/build/test_build_device.py);
a package member is imported from the package root's parent under its relative name, so the
build's bytes do not depend on where the package lives. Bad package inputs (a relative import
outside a package, an unknown module name) are cases of tests/runtime/test_bad_inputs.py.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tmlr_build.common import errors as E
from tmlr_build.cli import run
from tmlr_build.common.arch import Target
from tmlr_build.common.jobs import Job
from tmlr_build.builder.sources import package_module, parse_source

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parents[1] / "data"
KERNLIB = DATA / "kernlib"
SIG = "*fp32:16, *fp32:16, i32, 128"
KERNELS = {"plain": "scale", "tuned": "tuned_scale", "heur": "heur_scale"}


def _build(sources: list[str], out: Path, *extra: str) -> list[str]:
    """Build; the report's warnings."""
    return run([*sources, "--signature", SIG, "-o", str(out), "-q", *extra])[0].warnings


def _meta(out: Path, name: str) -> dict:
    return json.loads((out / name / "metadata.json").read_text())


def _copy_package(dest: Path) -> Path:
    shutil.copytree(KERNLIB, dest / "kernlib", ignore=shutil.ignore_patterns("__pycache__"))
    return dest / "kernlib"


def test_plain_autotuned_and_heuristics_kernels_of_a_package_build_by_name(tmp_path: Path) -> None:
    sources = [f"{KERNLIB}/ops/{module}.py:{kernel}" for module, kernel in KERNELS.items()]
    warnings = _build(sources, tmp_path, "--arch", "80,90")
    # tuned_scale's BLOCK is fixed in the signature: one plain artifact, and the build says its configs went unused
    assert len(warnings) == 1 and warnings[0].startswith("tuned_scale: every constexpr the 2 @triton.autotune configs")
    assert "the autotune configs (their num_warps, num_stages) were not used" in warnings[0]
    assert "leave BLOCK out of the signature" in warnings[0]
    for module, kernel in KERNELS.items():
        doc = _meta(tmp_path, kernel)
        assert [p["name"] for p in doc["signature"]] == ["x_ptr", "out_ptr", "n", "BLOCK"]
        assert doc["signature"][3] == {"name": "BLOCK", "kind": "constexpr", "value": 128}
        assert sorted(v["target"]["arch"] for v in doc["variants"]) == ["sm_80", "sm_90a"]
        assert {v["provenance"]["source_name"] for v in doc["variants"]} == {f"kernlib/ops/{module}.py"}
        # no absolute path anywhere in what the build recorded
        assert str(DATA) not in json.dumps(doc)


def test_a_module_name_is_found_as_python_dash_m_finds_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(DATA)
    assert parse_source("kernlib.ops.tuned:tuned_scale") == parse_source(f"{KERNLIB}/ops/tuned.py:tuned_scale")
    _build(["kernlib.ops.tuned:tuned_scale"], tmp_path, "--arch", "90")
    assert _meta(tmp_path, "tuned_scale")["variants"][0]["provenance"]["source_name"] == "kernlib/ops/tuned.py"


def test_package_root_and_relative_name(tmp_path: Path) -> None:
    assert package_module(str(KERNLIB / "ops" / "plain.py")) == "kernlib.ops.plain"
    assert package_module(str(KERNLIB / "ops" / "__init__.py")) == "kernlib.ops"
    assert package_module(str(ROOT / "examples" / "kernels" / "vector_add.py")) is None
    job = Job(source=str(KERNLIB / "ops" / "plain.py"), stage="python", target=Target.from_capability(90),
              kernel="scale", module="kernlib.ops.plain")
    assert (job.source_name, job.import_root) == ("kernlib/ops/plain.py", str(DATA))
    assert job.label == "kernlib/ops/plain.py:scale for capability 90"


def test_two_copies_of_the_package_build_byte_identical_artifacts(tmp_path: Path) -> None:
    first = _copy_package(tmp_path / "a")
    second = _copy_package(tmp_path / "b" / "deeper" / "still")
    for pkg, out in ((first, tmp_path / "out1"), (second, tmp_path / "out2")):
        _build([f"{pkg}/ops/tuned.py:tuned_scale"], out, "--arch", "80,90")
    one, two = tmp_path / "out1" / "tuned_scale", tmp_path / "out2" / "tuned_scale"
    names = sorted(p.name for p in one.iterdir())
    assert names == ["metadata.json", "tuned_scale.sm_80.cubin", "tuned_scale.sm_90a.cubin"]
    assert {n: (one / n).read_bytes() for n in names} == {n: (two / n).read_bytes() for n in names}
    assert str(tmp_path).encode() not in (one / "metadata.json").read_bytes()
    ptx = (tmp_path / "ir" / "tuned_scale" / "ir" / "sm_90a" / "tuned_scale.ptx")
    _build([f"{second}/ops/tuned.py:tuned_scale"], tmp_path / "ir", "--arch", "90", "--stop-after", "ptx")
    assert '.file\t1 "kernlib/ops/tuned.py"' in ptx.read_text()  # the line info names the file from the root
    assert not list(first.rglob("__pycache__"))  # nothing written into the user's source tree


def test_a_package_module_importing_a_sibling_without_the_package_prefix_still_builds(tmp_path: Path) -> None:
    # Worked before package members were imported as such (the file's folder was the import root).
    pkg = _copy_package(tmp_path)
    text = (pkg / "ops" / "plain.py").read_text().replace("from .common import", "from common import")
    (pkg / "ops" / "absolute.py").write_text(text)
    _build([f"{pkg}/ops/absolute.py:scale"], tmp_path / "out", "--arch", "90", "--keep-ir")
    ptx = (tmp_path / "out" / "scale" / "ir" / "sm_90a" / "scale.ptx").read_text()
    assert '"kernlib/ops/absolute.py"' in ptx and '"kernlib/ops/common.py"' in ptx


def test_the_stand_in_driver_answers_as_the_target() -> None:
    pytest.importorskip("triton")
    from triton.backends.compiler import GPUTarget
    from triton.runtime import driver

    from tmlr_build.compile import build_driver

    before = dict(vars(driver))  # reading driver.active would create Triton's own driver (3.8+: fails without a GPU)
    with build_driver.standing_in(86, None):  # no device named: the A10, sm_86's default
        assert driver.active.get_current_target() == GPUTarget("cuda", 86, 32)
        assert driver.active.utils.get_device_properties(0)["max_shared_mem"] == 101376
        assert driver.active.utils.get_device_properties(0)["multiprocessor_count"] == 72
        with pytest.raises(RuntimeError, match="does not benchmark autotune configs"):
            driver.active.get_benchmarker()(lambda: None, quantiles=(0.5,))
        with pytest.raises(RuntimeError, match="move that call out of import time"):
            driver.active.get_current_stream(0)
    assert dict(vars(driver)) == before


@pytest.mark.gpu
def test_package_kernels_build_the_same_with_and_without_a_visible_gpu_and_run(tmp_path: Path) -> None:
    """On a GPU machine: the same bytes as a build that sees no GPU, and the kernels compute."""
    torch = pytest.importorskip("torch")
    import tmlr_runtime as tr

    major, minor = torch.cuda.get_device_capability()
    arch = str(major * 10 + minor)
    sources = [f"{KERNLIB}/ops/tuned.py:tuned_scale", f"{KERNLIB}/ops/heur.py:heur_scale"]
    _build(sources, tmp_path / "seen", "--arch", arch)
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    proc = subprocess.run([sys.executable, "-m", "tmlr_build", *sources, "--signature", SIG, "-o",
                           str(tmp_path / "unseen"), "--arch", arch, "-q"], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    for name in ("tuned_scale", "heur_scale"):
        seen, unseen = tmp_path / "seen" / name, tmp_path / "unseen" / name
        assert {p.name: p.read_bytes() for p in seen.iterdir()} == {p.name: p.read_bytes() for p in unseen.iterdir()}
    x = torch.randn(100, device="cuda")
    out = torch.empty_like(x)
    tr.Kernel.load(str(tmp_path / "seen" / "tuned_scale"))((1,), x, out, 100)
    torch.cuda.synchronize()
    torch.testing.assert_close(out, x * 3.0)
    tr.Kernel.load(str(tmp_path / "seen" / "heur_scale"))((1,), x, out, 100)
    torch.cuda.synchronize()
    torch.testing.assert_close(out, x + 1.0)
