"""Every stage path of a kernel (python, ttir, ttgir, llir, ptx, cubin import) gives the same cubin
and the same metadata, and the Python path gives the bytes triton.compile gives."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tmlr_build import BuildConfig, KernelRequest, build, parse_arch_list, request
from tmlr_build.builder.spec import load_spec
from tmlr_build.common.triton_check import release_in_range
from triton_facts import API

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
# Kernels whose stage paths are checked: every feature the issue lists (tl.dot, scalars of every
# type, clusters, device-side TMA with global scratch, > 48 KB shared memory), and from Triton 3.4
# host tensor descriptors (TMA on sm_90a, pointers on sm_80).
KERNELS = ("add", "matmul", "matmul_big_smem", "scalars", "cluster_add", "tma_scale") + (
    ("desc_scale", "desc_scale_sm80") if API.host_descriptors else ())
STAGES = ("ttir", "ttgir", "llir", "ptx")


def _spec_requests() -> list[KernelRequest]:
    requests, _ = load_spec(str(EXAMPLES / "kernels.json"))
    return [r for r in requests if (r.name or r.kernel) in KERNELS and (r.triton is None or
                                                                         release_in_range(API.version, r.triton))]


@pytest.fixture(scope="module")
def python_built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("py")
    build(_spec_requests(), BuildConfig(out=str(out), archs=parse_arch_list("80,90"), keep_ir=True, progress=False))
    return out


@pytest.fixture(scope="module")
def stage_built(python_built: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Rebuild every kernel from each IR file --keep-ir wrote, all in one build."""
    out = tmp_path_factory.mktemp("stages")
    requests = []
    for name in KERNELS:
        for arch_dir in sorted((python_built / name / "ir").iterdir()):
            for stage in STAGES:
                src = arch_dir / f"{name}.{stage}"
                requests.append(KernelRequest(source=str(src), stage=stage, name=f"{name}__{arch_dir.name}__{stage}"))
    build(requests, BuildConfig(out=str(out), progress=False))
    return out


def _variants(artifact: Path) -> dict[str, dict]:
    doc = json.loads((artifact / "metadata.json").read_text())
    return {v["target"]["arch"]: v for v in doc["variants"]}


def _without_source(variant: dict) -> dict:
    v = json.loads(json.dumps(variant))
    for key in ("source_stage", "source_name", "source_sha256"):
        v["provenance"].pop(key)
    v["cubin"].pop("file")
    return v


@pytest.mark.parametrize("name", KERNELS)
@pytest.mark.parametrize("stage", STAGES)
def test_every_stage_gives_the_same_cubin_and_metadata(python_built: Path, stage_built: Path, name: str, stage: str) -> None:
    reference = _variants(python_built / name)
    ref_doc = json.loads((python_built / name / "metadata.json").read_text())
    assert reference, name
    for arch, ref in reference.items():
        artifact = stage_built / f"{name}__{arch}__{stage}"
        got = _variants(artifact)[arch]
        assert (artifact / got["cubin"]["file"]).read_bytes() == (python_built / name / ref["cubin"]["file"]).read_bytes()
        assert _without_source(got) == _without_source(ref)
        assert got["provenance"]["source_stage"] == stage
        # the sidecar --keep-ir wrote carries the names, constexprs and unsigned types the IR lacks
        assert json.loads((artifact / "metadata.json").read_text())["signature"] == ref_doc["signature"]


def test_bare_ttgir_without_sidecar_names_parameters_as_the_ir_does(python_built: Path, tmp_path: Path) -> None:
    src = tmp_path / "lonely.ttgir"
    shutil.copy(python_built / "add" / "ir" / "sm_90a" / "add.ttgir", src)
    build([request(str(src))], BuildConfig(out=str(tmp_path / "out"), progress=False))
    doc = json.loads((tmp_path / "out" / "add" / "metadata.json").read_text())
    # Triton 3.5+ records the kernel's names in the IR; before, arg0, arg1, ...
    named = release_in_range(API.version, ">=3.5")
    assert [p["name"] for p in doc["signature"]] == (["x_ptr", "y_ptr", "out_ptr", "n"] if named else
                                                     ["arg0", "arg1", "arg2", "arg3"])
    assert [p["type"] for p in doc["signature"]] == ["*fp32", "*fp32", "*fp32", "i32"]
    assert [p["divisibility"] for p in doc["signature"]] == [16, 16, 16, 1]
    cubin = (tmp_path / "out" / "add" / "add.sm_90a.cubin").read_bytes()
    assert cubin == (python_built / "add" / "add.sm_90a.cubin").read_bytes()


def test_bare_ttir_takes_names_and_options_from_the_command_line(python_built: Path, tmp_path: Path) -> None:
    src = tmp_path / "mm.ttir"
    shutil.copy(python_built / "matmul" / "ir" / "sm_80" / "matmul.ttir", src)
    from tmlr_build.cli import run

    run([str(src), "-o", str(tmp_path / "out"), "--arch", "80,90", "--num-warps", "4", "--num-stages", "2",
         "--arg-names", "a_ptr,b_ptr,c_ptr,M,N,K,stride_am,stride_bk,stride_cm", "-q"])
    doc = json.loads((tmp_path / "out" / "matmul" / "metadata.json").read_text())
    assert doc["signature"][0]["name"] == "a_ptr"
    for arch in ("sm_80", "sm_90a"):
        ours = (tmp_path / "out" / "matmul" / f"matmul.{arch}.cubin").read_bytes()
        assert ours == (python_built / "matmul" / f"matmul.{arch}.cubin").read_bytes()


_REFERENCE = textwrap.dedent("""
    # triton.compile of one example from the spec for one capability (no tmlr code)
    import json, os, sys, types
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    os.chdir(sys.argv[1])
    out = sys.argv[2]
    for case in [json.loads(sys.argv[3])]:
        mod = types.ModuleType(case["stem"]); mod.__file__ = case["file"]
        exec(compile(open(case["file"]).read(), case["file"], "exec"), mod.__dict__)
        fn = getattr(mod, case["kernel"])
        sig, consts, attrs = {}, {}, {}
        for i, (name, p) in enumerate(zip(fn.arg_names, case["signature"])):
            if p["kind"] == "runtime":
                sig[name] = p["type"]
                if p["divisibility"] == 16:
                    attrs[(i,)] = [["tt.divisibility", 16]]
            else:
                sig[name] = "constexpr"
                consts[(i,)] = p.get("value", 1)
        for cap in case["caps"]:
            k = triton.compile(ASTSource(fn, sig, consts, attrs), target=GPUTarget("cuda", cap, 32),
                               options=case["options"])
            md = k.metadata
            # Triton 3.6+ records no cluster_dims: its launcher makes clusters of (num_ctas, 1, 1)
            cluster = list(getattr(md, "cluster_dims", None) or (md.num_ctas, 1, 1))
            facts = dict(shared=md.shared, global_scratch_size=md.global_scratch_size, num_ctas=md.num_ctas,
                         cluster_dims=cluster, num_warps=md.num_warps, name=md.name,
                         tensordesc_meta=getattr(md, "tensordesc_meta", None))
            open(os.path.join(out, f"{case['name']}.{cap}.cubin"), "wb").write(k.asm["cubin"])
            json.dump(facts, open(os.path.join(out, f"{case['name']}.{cap}.json"), "w"))
""")


@pytest.fixture(scope="module")
def both_ways(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[dict]]:
    """The examples built by tmlr-build (``out``) and by triton.compile (cubins and facts in ``ref``, cache)."""
    # Line info off on both sides: with it on, Triton's own ptxas run embeds the source file's
    # mtime (it runs in the source's directory), which tmlr-build avoids on purpose.
    ref = tmp_path_factory.mktemp("triton-compile")
    requests = _spec_requests()
    ours = ref / "out"
    build(requests, BuildConfig(out=str(ours), archs=parse_arch_list("80,90"), line_info=False, progress=False))
    cases = []
    for r in requests:
        name = r.name or r.kernel
        doc = json.loads((ours / name / "metadata.json").read_text())
        cases.append({"name": name, "file": os.path.basename(r.source), "stem": Path(r.source).stem,
                      "kernel": r.kernel, "signature": [_triton_type(p) for p in doc["signature"]],
                      "options": r.options, "caps": [v["target"]["capability"] for v in doc["variants"]]})
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRITON_")}
    env.update(TRITON_CACHE_DIR=str(ref / "cache"), TRITON_DISABLE_LINE_INFO="1")
    # One process per compile: Triton 3.3.1's PTX (register numbering) depends on what the same
    # process compiled before, which is why tmlr-build gives every compile a fresh worker.
    procs = [subprocess.Popen([sys.executable, "-c", _REFERENCE, str(EXAMPLES / "kernels"), str(ref),
                               json.dumps(dict(case, caps=[cap]))], env=env)
             for case in cases for cap in case["caps"]]
    assert [p.wait() for p in procs] == [0] * len(procs)
    return ref, ours, cases


def test_python_path_matches_triton_compile(both_ways: tuple[Path, Path, list[dict]]) -> None:
    ref_dir, ours, cases = both_ways
    for case in cases:
        for arch, v in _variants(ours / case["name"]).items():
            cap = v["target"]["capability"]
            ref = json.loads((ref_dir / f"{case['name']}.{cap}.json").read_text())
            _check_descriptors(ref.pop("tensordesc_meta"), case["signature"], v)
            assert (ours / case["name"] / v["cubin"]["file"]).read_bytes() == (
                ref_dir / f"{case['name']}.{cap}.cubin").read_bytes(), (case["name"], arch)
            assert ref == dict(shared=v["launch"]["shared"], global_scratch_size=v["scratch"]["global_scratch_size"],
                               num_ctas=v["launch"]["num_ctas"], cluster_dims=v["launch"]["cluster_dims"],
                               num_warps=v["launch"]["num_warps"], name=v["entry"]), (case["name"], arch)


CACHED = [("add", "*fp32:16, *fp32:16, *fp32:16, i32, 1024")] + (
    [("desc_scale", "tensordesc<fp16[64, 128]>, tensordesc<fp16[64, 128]>, 64, 128")] if API.host_descriptors else [])


@pytest.mark.parametrize("name, signature", CACHED, ids=[c[0] for c in CACHED])
def test_a_triton_cache_entry_imports_as_it_is(both_ways: tuple[Path, Path, list[dict]], tmp_path: Path, name: str,
                                               signature: str) -> None:
    # same bytes; launch facts (and the descriptors' TMA encodings) from Triton's JSON
    ref_dir, ours, _ = both_ways
    entry = next(p.parent for p in (ref_dir / "cache").rglob(f"{name}.cubin")
                 if json.loads((p.parent / f"{name}.json").read_text())["target"]["arch"] == 90)
    build([request(str(entry), signature=signature)], BuildConfig(out=str(tmp_path), progress=False))
    imported = _variants(tmp_path / name)["sm_90a"]
    built = _variants(ours / name)["sm_90a"]
    assert (tmp_path / name / f"{name}.sm_90a.cubin").read_bytes() == (entry / f"{name}.cubin").read_bytes()
    assert imported["launch"] == built["launch"] and imported["scratch"] == built["scratch"]
    assert imported["provenance"]["source_stage"] == "cubin"
    signature_of = lambda d: [{k: v for k, v in p.items() if k != "name"} for p in json.loads(  # noqa: E731
        (d / name / "metadata.json").read_text())["signature"]]
    assert signature_of(tmp_path) == signature_of(ours)  # named as the IR records (3.5+), else arg0, arg1, ...


def _triton_type(p: dict) -> dict:
    """A metadata.json signature entry with Triton's type text for a host tensor descriptor."""
    if p.get("type") != "tensordesc":
        return p
    d = p["descriptor"]
    return dict(p, type=f"tensordesc<{d['dtype']}[{', '.join(map(str, d['block_shape']))}]>")


def _check_descriptors(tensordesc_meta: list | None, signature: list[dict], variant: dict) -> None:
    """What triton.compile says of the descriptors (tensordesc_meta) is what the artifact records."""
    from tmlr_build.common.tensordesc import tensormap

    descriptors = [p for p in signature if p.get("descriptor")]
    if not descriptors:
        return
    tma = bool(tensordesc_meta)
    assert [p["descriptor"]["fields"] for p in descriptors] == [list(API.descriptor_fields(tma))] * len(descriptors)
    assert [p["descriptor"].get("tensormap") for p in descriptors] == (
        [tensormap(m, "") for m in tensordesc_meta] if tma else [None] * len(descriptors)), variant["target"]


def test_ttgir_loses_maxnreg_and_cluster_shape_unless_given_again(python_built: Path, tmp_path: Path) -> None:
    from tmlr_build.cli import run
    from tmlr_build.common.errors import MissingMetadataError, OptionError

    run([f"{EXAMPLES}/kernels/matmul.py:matmul", "--signature",
         "*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, i32:16, i32:16, i32:16, 64, 64, 32",
         "--num-stages", "2", "--maxnreg", "64", "-o", str(tmp_path / "ref"), "--arch", "90", "--keep-ir", "-q"])
    ref = (tmp_path / "ref" / "matmul" / "matmul.sm_90a.cubin").read_bytes()
    bare = tmp_path / "bare" / "matmul.ttgir"
    bare.parent.mkdir()
    shutil.copy(tmp_path / "ref" / "matmul" / "ir" / "sm_90a" / "matmul.ttgir", bare)
    run([str(bare), "-o", str(tmp_path / "without"), "--num-stages", "2", "-q"])
    run([str(bare), "-o", str(tmp_path / "with"), "--num-stages", "2", "--maxnreg", "64", "-q"])
    # Triton 3.4+ writes the option into the TTGIR (ttg.maxnreg), which tmlr-build reads back
    carried = "ttg.maxnreg = 64" in bare.read_text()
    assert carried == (API.release != "3.3")
    assert ((tmp_path / "without" / "matmul" / "matmul.sm_90a.cubin").read_bytes() == ref) == carried
    assert (tmp_path / "with" / "matmul" / "matmul.sm_90a.cubin").read_bytes() == ref
    if carried:
        with pytest.raises(OptionError, match="--maxnreg 32 contradicts the .ttgir"):
            run([str(bare), "-o", str(tmp_path / "other"), "--maxnreg", "32", "-q"])

    cluster = tmp_path / "bare" / "cluster_add.ttgir"
    shutil.copy(python_built / "cluster_add" / "ir" / "sm_90a" / "cluster_add.ttgir", cluster)
    if API.cluster_dims_option:  # Triton 3.3-3.5: the cluster shape is an option the TTGIR does not carry
        with pytest.raises(MissingMetadataError, match="cluster shape.*--metadata"):
            run([str(cluster), "-o", str(tmp_path / "c"), "-q"])
    else:  # 3.6+: clusters of (num_ctas, 1, 1), and ttg.num-ctas is in the TTGIR
        run([str(cluster), "-o", str(tmp_path / "c0"), "-q"])
        assert _variants(tmp_path / "c0" / "cluster_add")["sm_90a"]["launch"]["cluster_dims"] == [2, 1, 1]
    run([str(cluster), "--metadata", str(python_built / "cluster_add" / "ir" / "sm_90a" / "cluster_add.json"),
         "-o", str(tmp_path / "c"), "-q"])
    got = _variants(tmp_path / "c" / "cluster_add")["sm_90a"]
    assert got["launch"]["cluster_dims"] == [2, 1, 1] and got["launch"]["num_ctas"] == 2
    assert (tmp_path / "c" / "cluster_add" / "cluster_add.sm_90a.cubin").read_bytes() == (
        python_built / "cluster_add" / "cluster_add.sm_90a.cubin").read_bytes()
