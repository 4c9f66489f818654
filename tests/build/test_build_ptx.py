"""``tmlr-build --ptx`` (a spec's "ptx"): each portable target's PTX beside its cubin, recorded with its digest
(metadata schema v4); refused where there is no PTX a newer GPU could compile. The committed GPU test artifact
tests/gpu/artifacts/add_ptx is what its spec builds."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

import tmlr_runtime as tr
from tmlr_build.cli import main, run
from tmlr_build.common.errors import PtxTargetError, SpecError
from fake_driver import H200, installed, needs_cuda_python
from tmlr_runtime.artifact.metadata import read_cubin, read_ptx
from triton_facts import committed_triton_only

ROOT = Path(__file__).resolve().parents[2]
ADD = f"{ROOT}/examples/kernels/vector_add.py:add"
ADD_SIG = "*fp32:16, *fp32:16, *fp32:16, i32, 1024"
SPEC = ROOT / "tests" / "gpu" / "ptx_kernels.json"


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """add for sm_80 and sm_90a, once with --ptx (ptx/add) and once without (plain/add)."""
    out = tmp_path_factory.mktemp("ptx")
    run([ADD, "--signature", ADD_SIG, "-o", str(out / "ptx"), "--arch", "80,90", "--ptx", "-q"])
    run([ADD, "--signature", ADD_SIG, "-o", str(out / "plain"), "--arch", "80,90", "-q"])
    return out


def test_ptx_of_each_portable_target_beside_its_cubin(built: Path) -> None:
    art = built / "ptx" / "add"
    assert sorted(p.name for p in art.iterdir()) == ["add.compute_80.ptx", "add.sm_80.cubin", "add.sm_90a.cubin", "metadata.json"]
    doc = json.loads((art / "metadata.json").read_text())
    assert doc["schema_version"] == 4
    sm80, sm90a = doc["variants"]
    text = (art / "add.compute_80.ptx").read_bytes()
    assert sm80["ptx"] == {"file": "add.compute_80.ptx", "sha256": hashlib.sha256(text).hexdigest(), "size": len(text),
                           "arch": "compute_80"}
    assert "ptx" not in sm90a  # sm_90a PTX runs on 9.0 alone: none is kept
    assert b".target sm_80\n" in text and b".visible .entry add(" in text and b"\0" not in text
    assert str(ROOT) not in text.decode() and "site-packages" not in text.decode()  # no file of the build machine
    meta = tr.ArtifactMetadata.read(art)
    assert read_ptx(art, meta.variants[0]) == text and read_cubin(art, meta.variants[0])[:4] == b"\x7fELF"
    assert meta.pick(10, 0) == (meta.variants[0], True) and meta.pick(9, 0) == (meta.variants[1], False)


def test_ptx_changes_nothing_else(built: Path) -> None:
    ptx, plain = built / "ptx" / "add", built / "plain" / "add"
    for cubin in ("add.sm_80.cubin", "add.sm_90a.cubin"):
        assert (ptx / cubin).read_bytes() == (plain / cubin).read_bytes()
    with_ptx, without = (json.loads((d / "metadata.json").read_text()) for d in (ptx, plain))
    assert without["schema_version"] == 1 and all("ptx" not in v for v in without["variants"])
    with_ptx["schema_version"] = 1
    with_ptx["variants"][0].pop("ptx")
    assert with_ptx == without


def test_a_rebuild_without_ptx_drops_it(tmp_path: Path) -> None:
    out = tmp_path / "out"
    run([ADD, "--signature", ADD_SIG, "-o", str(out), "--arch", "80", "--ptx", "-q"])
    (out / "add" / "notes.txt").write_text("mine")
    run([ADD, "--signature", ADD_SIG, "-o", str(out), "--arch", "80", "-q"])
    assert sorted(p.name for p in (out / "add").iterdir()) == ["add.sm_80.cubin", "metadata.json", "notes.txt"]


@pytest.mark.parametrize("args, words", [
    (["--arch", "90", "--ptx"], ["sm_90a only", "--arch 80", "drop --ptx"]),
    (["--arch", "80", "--ptx", "--stop-after", "llir"], ["--stop-after llir", "drop one"]),
], ids=["arch-specific-only", "stop-after"])
def test_ptx_is_refused_where_there_is_none_to_keep(tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str],
                                                    words: list[str]) -> None:
    with pytest.raises(PtxTargetError) as e:
        run([ADD, "--signature", ADD_SIG, "-o", str(tmp_path / "out"), "-q", *args])
    assert all(w in str(e.value) for w in words), e.value
    assert main([ADD, "--signature", ADD_SIG, "-o", str(tmp_path / "out"), "-q", *args]) == 2
    assert not (tmp_path / "out" / "add").exists()


def test_a_cubin_input_has_no_ptx(tmp_path: Path) -> None:
    cubin = ROOT / "examples" / "stages" / "artifacts"
    inputs = sorted(cubin.rglob("*.cubin")) if cubin.is_dir() else []
    source = next((p for p in inputs if p.with_suffix(".json").is_file()), None)
    if source is None:  # build one with its Triton metadata JSON beside it
        run([ADD, "--signature", ADD_SIG, "-o", str(tmp_path / "ir"), "--arch", "80", "--keep-ir", "-q"])
        source = tmp_path / "ir" / "add" / "ir" / "sm_80" / "add.cubin"
        source.write_bytes((tmp_path / "ir" / "add" / "add.sm_80.cubin").read_bytes())
    with pytest.raises(PtxTargetError, match="a .cubin input has none"):
        run([str(source), "-o", str(tmp_path / "out"), "--ptx", "-q"])


def test_spec_ptx_key(tmp_path: Path) -> None:
    kernel = {"source": f"{ROOT}/examples/kernels/vector_add.py", "kernel": "add", "signature": ADD_SIG}
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"arch": [80], "ptx": True, "kernels": [kernel, {**kernel, "name": "no_ptx", "ptx": False}]}))
    run(["--spec", str(spec), "-o", str(tmp_path / "out"), "-q"])
    assert (tmp_path / "out" / "add" / "add.compute_80.ptx").is_file()
    assert sorted(p.name for p in (tmp_path / "out" / "no_ptx").iterdir()) == ["metadata.json", "no_ptx.sm_80.cubin"]
    spec.write_text(json.dumps({"arch": [80], "kernels": [{**kernel, "ptx": "yes"}]}))
    with pytest.raises(SpecError, match='"ptx" must be true or false'):
        run(["--spec", str(spec), "-o", str(tmp_path / "out"), "-q"])


def test_family_members_carry_ptx(tmp_path: Path) -> None:
    run([ADD, "--signature", "*T:16, *T:16, *T:16, i32, 1024", "--types", "T=fp16,fp32", "-o", str(tmp_path),
         "--arch", "80", "--ptx", "-q"])
    index = json.loads((tmp_path / "add" / "metadata.json").read_text())
    assert index["kind"] == "family" and index["schema_version"] == 3
    members = sorted((tmp_path / "add" / "v").iterdir())  # ordinary artifacts, each with its PTX
    assert len(members) == 2
    for member in members:
        meta = tr.ArtifactMetadata.read(member)
        (v,) = meta.variants
        assert v.ptx is not None and read_ptx(member, v) and meta.pick(9, 0) == (v, True)
    needs_cuda_python()
    for member in members:
        with installed(H200) as fake, pytest.warns(tr.PtxJitWarning):
            tr.Kernel.load(member)  # on an sm_90 device each variant loads its own PTX
        assert fake.loaded == ["ptx:add"]


@committed_triton_only
def test_committed_gpu_artifact_is_what_its_spec_builds(tmp_path: Path) -> None:
    run(["--spec", str(SPEC), "-o", str(tmp_path), "-q"])
    committed = ROOT / "tests" / "gpu" / "artifacts" / "add_ptx"
    assert _tree(tmp_path / "add_ptx") == _tree(committed), f"stale: rebuild with the command in {SPEC.name}"
    # the same compile as examples/artifacts/add's sm_80 cubin: the GPU test compares the two
    assert (committed / "add_ptx.sm_80.cubin").read_bytes() == (ROOT / "examples" / "artifacts" / "add" / "add.sm_80.cubin").read_bytes()
