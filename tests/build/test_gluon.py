"""@gluon.jit kernels (Triton 3.4+): built from Python and from their TTGIR with the installed Triton,
the same cubin and descriptor records as Triton's own compile, their pass dumps resumed, and the
committed example (examples/gluon, built with Triton 3.9.0) up to date and run on a GPU.

Kernels: examples/gluon/gluon_matmul.py (TMA + wgmma, 3.5+) and tests/data/gluon/gluon_copy.py (TMA
copy, every release with Gluon; its signature writes the layout out, which 3.4 needs).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tmlr_build import BuildConfig, build, parse_arch_list, request
from tmlr_build.cli import main
from tmlr_build.common.errors import OptionError, SignatureError
from tmlr_build.common.tensordesc import parse_type, tensormap
from triton_facts import API, ROOT, spec_entries

pytestmark = pytest.mark.skipif(not API.has_gluon, reason=f"Gluon (@gluon.jit) needs Triton 3.4+ ({API.version} here)")

EXAMPLE = ROOT / "examples" / "gluon"
SPEC = json.loads((EXAMPLE / "gluon.json").read_text())
COMMITTED = EXAMPLE / "artifacts"
COMMITTED_TRITON = json.loads((COMMITTED / "gluon_matmul" / "metadata.json").read_text())[
    "variants"][0]["provenance"]["triton_version"]
_LAYOUT = "NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=2)"
COPY = (str(ROOT / "tests" / "data" / "gluon" / "gluon_copy.py"), "gluon_copy",
        f"tensordesc<fp16[64, 64],{_LAYOUT}>, tensordesc<fp16[64, 64],{_LAYOUT}>, 64, 64")
MATMUL = (str(EXAMPLE / "gluon_matmul.py"), "gluon_matmul", SPEC["kernels"][0]["signature"])
# the example needs warpgroup_mma (3.5+): its spec entry says which releases build it
KERNELS = [COPY] + ([MATMUL] if any(k.get("kernel") == "gluon_matmul" for k in spec_entries(SPEC)) else [])
IDS = [k[1] for k in KERNELS]


def _build(src: str, kernel: str, signature: str, out: Path, **config) -> Path:
    build([request(f"{src}:{kernel}", signature=signature, options={"num_warps": 4})],
          BuildConfig(out=str(out), archs=parse_arch_list("90"), progress=False, **config))
    return out / kernel


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Each kernel from Python (line info off, IR kept) under ``python/``, and from that TTGIR under ``ttgir/``."""
    root = tmp_path_factory.mktemp("gluon")
    for src, kernel, signature in KERNELS:
        art = _build(src, kernel, signature, root / "python", line_info=False, keep_ir=True)
        build([request(str(art / "ir" / "sm_90a" / f"{kernel}.ttgir"))],
              BuildConfig(out=str(root / "ttgir"), progress=False, line_info=False))
    return root


def _variant(art: Path) -> dict:
    return json.loads((art / "metadata.json").read_text())["variants"][0]


@pytest.mark.parametrize("kernel", IDS)
def test_ttgir_builds_what_the_python_source_builds(built: Path, kernel: str) -> None:
    py, ir = built / "python" / kernel, built / "ttgir" / kernel
    assert (py / f"{kernel}.sm_90a.cubin").read_bytes() == (ir / f"{kernel}.sm_90a.cubin").read_bytes()
    doc_py, doc_ir = (json.loads((a / "metadata.json").read_text()) for a in (py, ir))
    assert doc_ir["signature"] == doc_py["signature"]  # names from the sidecar, TMA records from the TTGIR
    assert _variant(ir)["launch"] == _variant(py)["launch"] and _variant(ir)["scratch"] == _variant(py)["scratch"]
    assert _variant(ir)["provenance"]["source_stage"] == "ttgir"


@pytest.mark.parametrize("kernel", IDS)
def test_no_ttir_stage_is_kept(built: Path, kernel: str) -> None:
    # Gluon's frontend writes TTGIR; 3.9's glir stage (that TTGIR as is) is no input tmlr takes
    kept = sorted(p.suffix for p in (built / "python" / kernel / "ir" / "sm_90a").iterdir())
    assert kept == ["", ".json", ".json", ".llir", ".ptx", ".ttgir"]  # "": SHA256SUMS


_REFERENCE = textwrap.dedent("""
    # triton.compile of a Gluon kernel (no tmlr code); 3.4's GluonASTSource asks the active driver for the target
    import json, os, sys, types
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    class Target:
        def get_current_target(self):
            return GPUTarget("cuda", 90, 32)

    triton.runtime.driver.set_active(Target())
    case = json.loads(sys.argv[1])
    os.chdir(os.path.dirname(case["file"]))
    name = os.path.basename(case["file"])
    mod = types.ModuleType(name[:-3]); mod.__file__ = name
    exec(compile(open(name).read(), name, "exec"), mod.__dict__)
    fn = getattr(mod, case["kernel"])
    consts = {(i,): v for i, v in case["constexprs"]}
    attrs = {(i,): [["tt.divisibility", 16]] for i in case["divisible"]}
    k = triton.compile(GluonASTSource(fn, case["signature"], consts, attrs), target=GPUTarget("cuda", 90, 32),
                       options={"num_warps": 4})
    open(case["out"] + ".cubin", "wb").write(k.asm["cubin"])
    json.dump(dict(tensordesc_meta=k.metadata.tensordesc_meta, shared=k.metadata.shared), open(case["out"] + ".json", "w"))
""")


def _triton_signature(doc: dict, raw: str) -> dict:
    """What Triton's JIT would pass for the artifact's parameters: a descriptor's type names its layout."""
    from tmlr_build.common.signature import parse_signature

    types = {p["name"]: e.type for p, e in zip((p for p in doc["signature"] if p["kind"] == "runtime"),
                                                (e for e in parse_signature(raw) if e.kind == "runtime"))}
    out = {}
    for p in doc["signature"]:
        desc = parse_type(types.get(p["name"]))
        out[p["name"]] = ("constexpr" if p["kind"] == "constexpr" else
                          API.gluon_descriptor(desc.dtype, desc.block_shape, desc.layout) if desc else p["type"])
    return out


@pytest.mark.parametrize("src, kernel, signature", KERNELS, ids=IDS)
def test_python_build_matches_triton_compile(built: Path, tmp_path: Path, src: str, kernel: str, signature: str) -> None:
    art = built / "python" / kernel
    doc = json.loads((art / "metadata.json").read_text())
    case = {"file": src, "kernel": kernel, "out": str(tmp_path / "ref"), "signature": _triton_signature(doc, signature),
            "constexprs": [(i, p["value"]) for i, p in enumerate(doc["signature"]) if p["kind"] == "constexpr"],
            "divisible": [i for i, p in enumerate(doc["signature"]) if p.get("divisibility") == 16]}
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRITON_")}
    env.update(TRITON_CACHE_DIR=str(tmp_path / "cache"), TRITON_DISABLE_LINE_INFO="1")
    subprocess.run([sys.executable, "-c", _REFERENCE, json.dumps(case)], env=env, check=True)
    assert (art / f"{kernel}.sm_90a.cubin").read_bytes() == (tmp_path / "ref.cubin").read_bytes()
    ref = json.loads((tmp_path / "ref.json").read_text())
    assert _variant(art)["launch"]["shared"] == ref["shared"]
    descriptors = [p["descriptor"] for p in doc["signature"] if p.get("type") == "tensordesc"]
    assert [d["fields"] for d in descriptors] == [list(API.descriptor_fields(tma=True))] * len(descriptors)
    assert [d["tensormap"] for d in descriptors] == [tensormap(m, "") for m in ref["tensordesc_meta"]]


def test_stop_after_ttir_is_refused(tmp_path: Path) -> None:
    src, kernel, signature = COPY
    with pytest.raises(OptionError, match="a Gluon kernel has no TTIR stage"):
        _build(src, kernel, signature, tmp_path, stop_after="ttir")


def test_a_layout_is_for_gluon_kernels_only(tmp_path: Path) -> None:
    with pytest.raises(SignatureError, match="a descriptor type with a layout is for @gluon.jit kernels"):
        _build(str(ROOT / "examples" / "kernels" / "host_desc.py"), "desc_scale",
               f"tensordesc<fp16[64, 128],{_LAYOUT}>, tensordesc<fp16[64, 128]>, 64, 128", tmp_path)


@pytest.mark.skipif(API.has_gluon and API.gluon_descriptor("fp16", (64, 64), None) is not None,
                    reason=f"Triton {API.version} has NVMMASharedLayout.get_default_for: a signature may leave the layout out")
def test_without_a_default_layout_the_signature_must_name_it(tmp_path: Path) -> None:
    src, kernel, _ = COPY
    with pytest.raises(SignatureError, match=r"write it in the signature, e\.g\. 'tensordesc<fp16\[64, 64\],NVMMA"):
        _build(src, kernel, "tensordesc<fp16[64, 64]>, tensordesc<fp16[64, 64]>, 64, 64", tmp_path)


@pytest.mark.parametrize("src, kernel, signature", KERNELS, ids=IDS)
def test_pass_dump_resumes_from_every_ttgir_file(tmp_path: Path, src: str, kernel: str, signature: str) -> None:
    # Gluon has no ttir stage: the dump starts in gluon_to_ttgir (stage "gluon"); every file up to
    # convert-scf-to-cf resumes (the rest of that stage, or make_llir from its start) to the same bytes
    art = _build(src, kernel, signature, tmp_path / "dumped", dump_passes=str(tmp_path / "d.log"))
    assert main(["--split-dump", str(tmp_path / "d.log"), "-o", str(tmp_path / "split"), "-q"]) == 0
    passes = json.loads((tmp_path / "split" / "index.json").read_text())["passes"]
    assert passes[0]["stage"] == "gluon" and passes[0]["pass_arg"] in ("inline", "gluon-inline")
    assert {p["stage"] for p in passes} == {"gluon", "llir-lowering"}
    last = next(i for i, p in enumerate(passes) if p["pass_arg"] == "convert-scf-to-cf")
    resumable = [p for p in passes[:last + 1] if p["buildable"]]
    assert len(resumable) >= last  # at most 3.4's one per-function canonicalize is left out
    for p in resumable:
        out = tmp_path / "resumed" / p["file"]
        assert main([str(tmp_path / "split" / p["file"]), "-o", str(out), "--arch", "90", "-q"]) == 0
        cubin = f"{kernel}.sm_90a.cubin"
        assert (out / kernel / cubin).read_bytes() == (art / cubin).read_bytes(), p["file"]


@pytest.mark.skipif(API.version != COMMITTED_TRITON,
                    reason=f"compares bytes with examples/gluon/artifacts, built with Triton {COMMITTED_TRITON} "
                           f"({API.version} here)")
def test_committed_example_is_what_build_sh_makes(tmp_path: Path) -> None:
    # build.sh's two steps: the TTGIR input (--stop-after ttgir), then the spec
    src, kernel, signature = MATMUL
    _build(src, kernel, signature, tmp_path / "ir", stop_after="ttgir")
    kept = tmp_path / "ir" / kernel / "ir" / "sm_90a"
    for name in (f"{kernel}.ttgir", f"{kernel}.tmlr.json"):
        assert (kept / name).read_bytes() == (EXAMPLE / "sm_90a" / kernel / name).read_bytes(), name
    assert main(["--spec", str(EXAMPLE / "gluon.json"), "-o", str(tmp_path / "out"), "-q"]) == 0
    tree = lambda root: {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}  # noqa: E731
    assert tree(tmp_path / "out") == tree(COMMITTED), "examples/gluon is stale: run examples/gluon/build.sh"


def test_run_script_imports_only_the_runtime_and_torch() -> None:
    import ast

    tree = ast.parse((EXAMPLE / "run_gluon_matmul.py").read_text())
    roots = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    roots |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert roots <= {"torch", "tmlr_runtime", "os", "sys", "types", "stage_check"}, roots
