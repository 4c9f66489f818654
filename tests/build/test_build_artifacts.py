"""The artifacts tmlr-build writes: schema-valid for both validators, integrity fields right,
byte-for-byte reproducible, the committed examples up to date, writes atomic."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

import tmlr_runtime
from tmlr_build import BuildConfig, build, parse_arch_list, request
from tmlr_build.cli import run
from tmlr_build.common.errors import ArchMismatchError
from tmlr_runtime.artifact.metadata import read_cubin
from triton_facts import API, committed_triton_only, reader_reads, spec_entries

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
COMMITTED = EXAMPLES / "artifacts"
ADD = f"{EXAMPLES}/kernels/vector_add.py:add"
ADD_SIG = "*fp32:16, *fp32:16, *fp32:16, i32, 1024"


@pytest.fixture(scope="module")
def rebuilt(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("examples")
    run(["--spec", str(EXAMPLES / "kernels.json"), "-o", str(out), "--arch", "80,90", "-q"])
    return out


def _artifacts(root: Path) -> list[Path]:
    return sorted(p for p in root.iterdir() if p.is_dir())


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@committed_triton_only
def test_committed_examples_are_what_the_spec_builds(rebuilt: Path) -> None:
    # Also proves reproducibility across directories: the rebuild ran elsewhere, at another time.
    assert _tree(rebuilt) == _tree(COMMITTED), "examples/artifacts is stale: rebuild with the command in kernels.json"


def test_every_artifact_validates_and_its_cubins_match(rebuilt: Path) -> None:
    schema = json.loads(Path(tmlr_runtime.SCHEMA_PATH).read_text())
    artifacts = _artifacts(rebuilt)
    assert len(artifacts) == len(spec_entries(json.loads((EXAMPLES / "kernels.json").read_text())))
    for art in artifacts:
        doc = json.loads((art / "metadata.json").read_text())
        jsonschema.Draft202012Validator(schema).validate(doc)
        if not reader_reads(doc):
            continue
        meta = tmlr_runtime.ArtifactMetadata.read(art)
        assert meta.name == art.name
        for v in meta.variants:
            data = read_cubin(art, v)  # checks size and sha256
            assert hashlib.sha256(data).hexdigest() == v.cubin_sha256 and len(data) == v.cubin_size
            assert v.cubin_file == f"{art.name}.{v.arch}.cubin"
            assert v.hidden_params == API.hidden_params
            assert v.provenance["triton_version"] == API.version
            assert v.provenance["source_name"] == os.path.basename(v.provenance["source_name"])
            assert v.resources["registers"] > 0
        assert {v.arch for v in meta.variants} <= {"sm_80", "sm_90a"}
        assert sorted(os.listdir(art)) == sorted(["metadata.json"] + [v.cubin_file for v in meta.variants])


def test_no_absolute_paths_in_metadata(rebuilt: Path) -> None:
    for art in _artifacts(rebuilt):
        text = (art / "metadata.json").read_text()
        assert str(rebuilt) not in text and "site-packages" not in text and str(EXAMPLES) not in text
        for v in json.loads(text)["variants"]:
            assert v["provenance"]["options"]["extern_libs"] == ["libdevice"]


def test_recorded_facts_of_each_example(rebuilt: Path) -> None:
    docs = {a.name: json.loads((a / "metadata.json").read_text()) for a in _artifacts(rebuilt)}
    meta = {name: tmlr_runtime.ArtifactMetadata.from_dict(doc) for name, doc in docs.items() if reader_reads(doc)}
    assert [(p.name, p.type) for p in meta["scalars"].runtime_params][2:] == [
        ("b", "i1"), ("i8", "i8"), ("i16", "i16"), ("i32", "i32"), ("i64", "i64"), ("u32", "u32"), ("u64", "u64"),
        ("h", "fp16"), ("bh", "bf16"), ("f", "fp32"), ("d", "fp64")]
    (cluster,) = meta["cluster_add"].variants
    assert (cluster.arch, cluster.num_ctas, cluster.cluster_dims) == ("sm_90a", 2, (2, 1, 1))
    (tma,) = meta["tma_scale"].variants
    assert tma.scratch_size > 0 and tma.scratch_align >= 1
    assert all(v.shared > 48 * 1024 for v in meta["matmul_big_smem"].variants)
    assert all(v.cooperative for v in meta["grid_sync"].variants)
    assert not any(v.cooperative for v in meta["add"].variants)
    assert meta["nop"].signature == ()
    nop_args = meta["nop_args"]
    assert [p.kind for p in nop_args.signature].count("runtime") == 14 and nop_args.constexprs == {
        "c1": 1, "c2": 2, "c3": 3, "c4": 4, "c5": 5}
    assert [p.type for p in nop_args.runtime_params] == ["*fp32"] * 5 + ["i32"] * 9
    assert {p.name: p.value for p in meta["add"].signature if p.kind == "constexpr"} == {"BLOCK": 1024}
    assert {doc["schema_version"] for doc in docs.values()} == ({1, 2} if API.host_descriptors else {1})


def test_host_tensor_descriptor_examples(rebuilt: Path) -> None:
    if not API.host_descriptors:
        assert not (rebuilt / "desc_scale").exists()  # "triton": ">=3.4" in kernels.json
        pytest.skip(f"Triton {API.version} has no host tensor descriptors")
    tma = json.loads((rebuilt / "desc_scale" / "metadata.json").read_text())
    plain = json.loads((rebuilt / "desc_scale_sm80" / "metadata.json").read_text())
    assert [v["target"]["arch"] for v in tma["variants"]] == ["sm_90a"]
    assert [v["target"]["arch"] for v in plain["variants"]] == ["sm_80"]
    for doc in (tma, plain):
        assert doc["schema_version"] == 2
        assert [(p["name"], p["type"]) for p in doc["signature"][:2]] == [("in_desc", "tensordesc"), ("out_desc", "tensordesc")]
    desc = tma["signature"][0]["descriptor"]
    # fp16 rows of 128 elements are 256 bytes, wider than the 128-byte swizzle: two 64-column TMA boxes
    assert desc == {"dtype": "fp16", "block_shape": [64, 128], "fields": ["tensormap", "shape:i32", "strides:i64"],
                    "tensormap": {"elem_type": 6, "elem_size": 2, "swizzle": 3, "fp4_padded": False, "block_size": [64, 64]}}
    assert plain["signature"][0]["descriptor"] == {"dtype": "fp16", "block_shape": [64, 128],
                                                    "fields": list(API.descriptor_fields(tma=False))}


def test_build_is_reproducible_wherever_the_source_lives(rebuilt: Path, tmp_path: Path) -> None:
    for where in ("a", "b/deeper"):
        (tmp_path / where).mkdir(parents=True)
        shutil.copy(EXAMPLES / "kernels" / "vector_add.py", tmp_path / where / "vector_add.py")
        os.utime(tmp_path / where / "vector_add.py", (1e9, 1e9) if where == "a" else None)
        build([request(f"{tmp_path / where}/vector_add.py:add", signature=ADD_SIG)],
              BuildConfig(out=str(tmp_path / f"out-{where.replace('/', '-')}"), archs=parse_arch_list("80,90"),
                          progress=False))
    assert _tree(tmp_path / "out-a") == _tree(tmp_path / "out-b-deeper")
    assert _tree(tmp_path / "out-a" / "add") == _tree(rebuilt / "add")


def test_equal_to_1_and_unsigned_and_string_constexprs(tmp_path: Path) -> None:
    src = tmp_path / "k.py"
    src.write_text("import triton\nimport triton.language as tl\n\n@triton.jit\n"
                   "def k(x, n, stride, u, MODE: tl.constexpr, FLAG: tl.constexpr = True):\n"
                   "    if MODE == 'double':\n        tl.store(x + n * stride, (u * 2).to(tl.float32))\n")
    run([f"{src}:k", "--signature", "*fp32:16, i64:16, i32:1, u32, 'double'", "-o", str(tmp_path / "o"),
         "--arch", "80", "-q"])
    doc = json.loads((tmp_path / "o" / "k" / "metadata.json").read_text())
    assert doc["signature"] == [
        {"name": "x", "kind": "runtime", "type": "*fp32", "divisibility": 16},
        {"name": "n", "kind": "runtime", "type": "i64", "divisibility": 16},
        {"name": "stride", "kind": "equal_to_1", "type": "i32"},
        {"name": "u", "kind": "runtime", "type": "u32", "divisibility": 1},
        {"name": "MODE", "kind": "constexpr", "value": "double"},
        {"name": "FLAG", "kind": "constexpr", "value": True},
    ]


def test_keep_ir_and_stop_after(rebuilt: Path, tmp_path: Path) -> None:
    run([ADD, "--signature", ADD_SIG, "-o", str(tmp_path / "keep"), "--arch", "80,90", "--keep-ir", "-q"])
    for arch in ("sm_80", "sm_90a"):
        names = sorted(os.listdir(tmp_path / "keep" / "add" / "ir" / arch))
        assert names == ["SHA256SUMS", *(f"add.{e}" for e in ("json", "llir", "ptx", "tmlr.json", "ttgir", "ttir"))]
    tmlr_runtime.ArtifactMetadata.read(tmp_path / "keep" / "add")

    run([ADD, "--signature", ADD_SIG, "-o", str(tmp_path / "stop"), "--arch", "90", "--stop-after", "ttgir", "-q"])
    art = tmp_path / "stop" / "add"
    assert sorted(os.listdir(art)) == ["ir"]
    assert sorted(os.listdir(art / "ir" / "sm_90a")) == ["SHA256SUMS", "add.json", "add.tmlr.json", "add.ttgir", "add.ttir"]
    # edit-and-rebuild loop: build again from the written .ttgir
    run([str(art / "ir" / "sm_90a" / "add.ttgir"), "-o", str(tmp_path / "again"), "-q"])
    assert (tmp_path / "again" / "add" / "add.sm_90a.cubin").read_bytes() == (rebuilt / "add" / "add.sm_90a.cubin").read_bytes()


def test_failed_build_leaves_nothing_and_replacement_is_whole(tmp_path: Path) -> None:
    out = tmp_path / "out"
    run([ADD, "--signature", ADD_SIG, "-o", str(out), "--arch", "80,90", "--keep-ir", "-q"])
    # a rebuild for one arch replaces the whole directory (no stale sm_90a cubin or ir/ left behind)
    run([ADD, "--signature", ADD_SIG, "-o", str(out), "--arch", "80", "-q"])
    assert sorted(os.listdir(out / "add")) == ["add.sm_80.cubin", "metadata.json"]
    assert sorted(os.listdir(out)) == ["add"]  # no temp directories left
    # one arch failing means no artifact at all for that kernel (not one with fewer variants)
    run([ADD, "--signature", ADD_SIG, "-o", str(tmp_path / "tt"), "--arch", "90", "--stop-after", "ttgir", "-q"])
    with pytest.raises(ArchMismatchError):
        run([str(tmp_path / "tt" / "add" / "ir" / "sm_90a" / "add.ttgir"), "-o", str(tmp_path / "o2"),
             "--arch", "80,90", "-q"])
    assert os.listdir(tmp_path / "o2") == []


def test_rebuilding_from_ir_inside_the_artifact_keeps_that_ir(rebuilt: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    run([ADD, "--signature", ADD_SIG, "-o", str(out), "--arch", "90", "--stop-after", "ptx", "-q"])
    ptx = out / "add" / "ir" / "sm_90a" / "add.ptx"
    ptx.write_text(ptx.read_text() + "\n// edited by hand\n")
    run([str(ptx), "-o", str(out), "-q"])
    assert ptx.read_text().endswith("// edited by hand\n")
    assert sorted(os.listdir(out / "add")) == ["add.sm_90a.cubin", "ir", "metadata.json"]
    assert (out / "add" / "add.sm_90a.cubin").read_bytes() == (rebuilt / "add" / "add.sm_90a.cubin").read_bytes()


def test_user_environment_does_not_change_the_bytes(rebuilt: Path, tmp_path: Path) -> None:
    # A fresh process: compile workers fork from a forkserver that captures the environment once.
    env = dict(os.environ, TRITON_DEFAULT_FP_FUSION="0", TRITON_OVERRIDE_ARCH="sm80", TRITON_ALWAYS_COMPILE="1",
               TRITON_CACHE_DIR=str(tmp_path / "user-cache"), DISABLE_PTXAS_OPT="1", PTXAS_OPTIONS="--maxrregcount=24")
    proc = subprocess.run([sys.executable, "-m", "tmlr_build", ADD, "--signature", ADD_SIG, "-o", str(tmp_path / "o"),
                           "--arch", "80,90,86"], env=env, capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "[3/3]" in proc.stderr and "wrote" in proc.stderr  # progress with several jobs
    for arch in ("sm_80", "sm_90a"):
        assert (tmp_path / "o" / "add" / f"add.{arch}.cubin").read_bytes() == (rebuilt / "add" / f"add.{arch}.cubin").read_bytes()
    assert not (tmp_path / "user-cache").exists()


def test_helpers_from_sibling_modules_keep_the_build_relocatable(tmp_path: Path) -> None:
    helper = "import triton\n\n@triton.jit\ndef twice(x):\n    return x * 2\n"
    kernel = ("import triton\nimport triton.language as tl\nfrom helpers import twice\n\n@triton.jit\n"
              "def k(x_ptr, BLOCK: tl.constexpr):\n    offs = tl.arange(0, BLOCK)\n"
              "    tl.store(x_ptr + offs, twice(tl.load(x_ptr + offs)))\n")
    for where in ("one", "two/three"):
        d = tmp_path / where
        d.mkdir(parents=True)
        (d / "helpers.py").write_text(helper)
        (d / "main.py").write_text(kernel)
        run([f"{d}/main.py:k", "--signature", "*fp32:16, 128", "-o", str(d / "out"), "--arch", "90", "--keep-ir", "-q"])
        assert not (d / "__pycache__").exists()
        assert str(tmp_path) not in (d / "out" / "k" / "ir" / "sm_90a" / "k.ptx").read_text()
    assert _tree(tmp_path / "one" / "out") == _tree(tmp_path / "two" / "three" / "out")


def test_register_counts_agree_with_the_cubins(rebuilt: Path) -> None:
    from tmlr_runtime.artifact.elf import functions

    for art in _artifacts(rebuilt):
        for v in json.loads((art / "metadata.json").read_text())["variants"]:
            assert functions((art / v["cubin"]["file"]).read_bytes())[v["entry"]].registers == v["resources"]["registers"]
