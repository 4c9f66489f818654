"""Constexprs whose value is a tuple (issue 29: test_core.py::test_reshape's ``kernel(Z, X, out_tuple: tl.constexpr)``
called with ``(8, 8)``; nested ones too): written ``(8, 8)`` in --constexpr, --signature and a spec's signature, a list of
arrays in a spec's constexprs (one variant each), or the tuple itself in the API and a @tmlr_build.jit call; Triton
compiles with the tuple, metadata.json records it as an array (schema v9, which jsonschema and the reader both take), and
the artifact takes the equal tuple and refuses another. A Triton cache entry given one back: tests/conformance/
test_conformance_cpu.py. The kernels: tests/gpu/triton_calls_kernels.py (reshape_kernel) and SHAPES below."""
from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import tmlr_runtime as tr
from fake_driver import H200, installed, needs_cuda_python
from tmlr_build import BuildConfig, SignatureError, SpecError, build, jit, parse_arch_list, request
from tmlr_build.builder.jit_specialize import specialize
from tmlr_build.cli import run
from tmlr_build.common import signature as sig
from triton_facts import FakeTensor

ROOT = Path(__file__).resolve().parents[2]
GPU = ROOT / "tests" / "gpu"
sys.path.insert(0, str(GPU))
import triton_calls_kernels  # noqa: E402

KERNELS = GPU / "triton_calls_kernels.py"
NESTED = ((8, 8), "a", None, True, 1.5, ())
RESHAPE = [{"name": "Z", "kind": "runtime", "type": "*fp32", "divisibility": 16},
           {"name": "X", "kind": "runtime", "type": "*fp32", "divisibility": 16},
           {"name": "out_tuple", "kind": "constexpr", "value": [8, 8]}]
SHAPES = '''
import triton
import triton.language as tl


@triton.jit
def reshape_flat(Z, X, SHAPE: tl.constexpr, META: tl.constexpr = None):
    z = tl.reshape(tl.reshape(tl.load(X + tl.arange(0, 64)), SHAPE), (64,))
    tl.store(Z + tl.arange(0, 64), z)
'''


def _meta(artifact: Path) -> dict[str, Any]:
    doc = json.loads((artifact / "metadata.json").read_text())
    jsonschema.validate(doc, json.loads(tr.SCHEMA_PATH.read_text()))  # the schema file is the contract
    return doc


def _cubin(artifact: Path) -> bytes:
    return next(artifact.glob("*.cubin")).read_bytes()


def _params(text: str, names: str, constexprs: str = "") -> list[Any]:
    return sig.bind_python_signature("k", names.split(","), sig.parse_signature(text), {}, {}, set(constexprs.split(",")))


def test_the_signature_language_writes_tuple_values() -> None:
    assert sig.parse_constexpr_assignments(["out_tuple=(8,8)", "S=((8, 8), 'a', None, True, 1.5, ())", "ONE=(4,)", "E=()"]) == {
        "out_tuple": (8, 8), "S": NESTED, "ONE": (4,), "E": ()}
    params = _params("*fp32:16, *fp32:16, (8, 8), ((8, 8), 'a', None, True, 1.5, ())", "Z,X,out_tuple,S", "out_tuple,S")
    assert [(p.name, p.kind, p.value) for p in params[2:]] == [("out_tuple", "constexpr", (8, 8)), ("S", "constexpr", NESTED)]
    assert sig.format_signature(params) == "*fp32:16, *fp32:16, (8, 8), ((8, 8), 'a', None, True, 1.5, ())"
    assert params[3].to_json() == {"name": "S", "kind": "constexpr", "value": [[8, 8], "a", None, True, 1.5, []]}
    # a parameter that is no tl.constexpr takes (8, 8) as a tuple of constexpr elements, as before
    assert [(p.name, p.value) for p in _params("(8, 8)", "t")] == [("t[0]", 8), ("t[1]", 8)]
    assert sig.spec_constexpr([8, [4, 4]]) == (8, (4, 4)) and sig.given_constexpr((8, (4, 4))) == (8, (4, 4))


@pytest.mark.parametrize("text, constexprs, words", [
    ("out_tuple=[8, 8]", True, "constexpr value '[8, 8]': write a tuple in parentheses, (8, 8): Triton passes a tuple"),
    ("out_tuple=(i32, i32)", True, "a tuple constexpr's elements are values (numbers, True/False, None, quoted strings, "),
    ("out_tuple=(a=8, b=8)", True, "a NamedTuple or a type has no constexpr value"),
    ("(i32, i32)", False, "parameter out_tuple is a tl.constexpr; give it a value (a plain tuple of values, (8, 8), is one), "
                          "not types or a NamedTuple"),
    ("(a=8, b=8)", False, "give it a value (a plain tuple of values, (8, 8), is one)"),
    ("(tl.float16, 8)", False, "constexpr out_tuple = (tl.float16, 8) cannot be recorded in metadata.json; only numbers, "
                               "booleans, strings, None, tuples of them"),
])
def test_a_bad_tuple_value_is_a_signature_error(text: str, constexprs: bool, words: str) -> None:
    with pytest.raises(SignatureError, match=words.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        if constexprs:
            sig.parse_constexpr_assignments([text])
        else:
            _params(text, "out_tuple", "out_tuple")


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TMLR_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_test_reshapes_kernel_is_built_with_its_tuple_and_takes_it(tmp_path: Path, cache: Path) -> None:
    run([f"{KERNELS}:reshape_kernel", "--signature", "*fp32:16, *fp32:16", "--constexpr", "out_tuple=(8, 8)", "--arch", "90",
         "-o", str(tmp_path / "cli"), "-q"])
    run([f"{KERNELS}:reshape_kernel", "--signature", "*fp32:16, *fp32:16, (8,8)", "--arch", "90", "-o", str(tmp_path / "sig"),
         "-q"])
    call = (FakeTensor(16), FakeTensor(32), (8, 8))
    assert specialize(triton_calls_kernels.reshape_kernel, call, {}).entries[2] == "(8, 8)"
    jitted = Path(jit(triton_calls_kernels.reshape_kernel).build_only(*call, arch=90))
    artifacts = [tmp_path / "cli" / "reshape_kernel", tmp_path / "sig" / "reshape_kernel", jitted]
    for artifact in artifacts:
        meta = _meta(artifact)
        assert meta["schema_version"] == 9 and meta["signature"] == RESHAPE, artifact
        assert _cubin(artifact) == _cubin(artifacts[0])
    needs_cuda_python()
    with installed(H200) as fake:
        k = tr.Kernel.load(str(artifacts[0]))
        assert k.metadata.constexprs == {"out_tuple": (8, 8)}
        k[(1,)](0x1000, 0x2000, (8, 8))  # as test_reshape calls it
        k[(1,)](0x1000, 0x2000)
        with pytest.raises(tr.ConstexprMismatchError, match=r"'out_tuple' was compiled as \(8, 8\), got \(16, 4\); pass \(8, 8\) "
                                                            r"\(or omit it\), or rebuild with --constexpr out_tuple=\(16, 4\)"):
            k[(1,)](0x1000, 0x2000, (16, 4))
        assert len(fake.launches) == 2


def test_a_spec_builds_tuple_values_and_variants_of_them(tmp_path: Path, cache: Path) -> None:
    (tmp_path / "shapes.py").write_text(textwrap.dedent(SHAPES))
    source = str(tmp_path / "shapes.py")
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"arch": [90], "kernels": [
        {"source": source, "kernel": "reshape_flat", "signature": "*fp32:16, *fp32:16, (8, 8), ((8, 8), 'a', None, True, 1.5, ())"},
        {"source": source, "kernel": "reshape_flat", "name": "fam", "signature": "*fp32:16, *fp32:16",
         "constexprs": {"SHAPE": [[8, 8], [4, 16]]}}]}))
    run(["--spec", str(spec), "-o", str(tmp_path / "out"), "-q"])
    meta = _meta(tmp_path / "out" / "reshape_flat")
    assert meta["schema_version"] == 9 and [p["value"] for p in meta["signature"][2:]] == [[8, 8], [[8, 8], "a", None, True, 1.5, []]]
    index = json.loads((tmp_path / "out" / "fam" / "metadata.json").read_text())
    assert sorted(v["signature"] for v in index["variants"]) == ["*fp32:16, *fp32:16, (4, 16), None", "*fp32:16, *fp32:16, (8, 8), None"]
    assert {_meta(tmp_path / "out" / "fam" / v["dir"])["schema_version"] for v in index["variants"]} == {9}
    bad = json.loads(spec.read_text())
    bad["kernels"][1]["constexprs"] = {"SHAPE": [[8, 8], [8, {}]]}
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    with pytest.raises(SpecError, match=r"a list of distinct numbers, booleans, strings, nulls or arrays \(tuples\)"):
        run(["--spec", str(tmp_path / "bad.json"), "-o", str(tmp_path / "bad"), "-q"])
    needs_cuda_python()
    with installed(H200) as fake:
        family = tr.Kernel.load(str(tmp_path / "out" / "fam"))
        family[(1,)](0x1000, 0x2000, SHAPE=(4, 16))
        family[(1,)](0x1000, 0x2000, SHAPE=(8, 8))
        with pytest.raises(tr.NoCompatibleVariantError, match=r"SHAPE"):
            family[(1,)](0x1000, 0x2000, SHAPE=(2, 32))
        assert len(fake.launches) == 2


def test_the_api_takes_tuples_with_tl_constexpr_elements(tmp_path: Path, cache: Path) -> None:
    import triton.language as tl

    (tmp_path / "shapes.py").write_text(textwrap.dedent(SHAPES))
    meta = {"SHAPE": tl.constexpr((8, 8)), "META": ((tl.constexpr(8), 8), "a", None, True, 1.5, ())}
    req = request(f"{tmp_path / 'shapes.py'}:reshape_flat", signature="*fp32:16, *fp32:16", constexprs=meta)
    assert req.constexprs == {"SHAPE": (8, 8), "META": NESTED}
    build([req], BuildConfig(out=str(tmp_path / "out"), archs=parse_arch_list("90"), progress=False))
    doc = _meta(tmp_path / "out" / "reshape_flat")
    assert doc["schema_version"] == 9 and doc["signature"][3]["value"] == [[8, 8], "a", None, True, 1.5, []]
