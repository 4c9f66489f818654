"""Tuple and NamedTuple parameters in the build: the signature syntax, the nested signature Triton is given, the
elements named by path in metadata.json (schema v5), a Triton cache entry of a tuple kernel imported, @tmlr_build.jit
deriving tuple entries as Triton's JIT does; the committed tests/gpu/artifacts of tests/gpu/tuple_kernels.json."""
from __future__ import annotations

import collections
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tmlr_build import BuildConfig, build, parse_arch_list, request
from tmlr_build.builder import variants
from tmlr_build.builder.jit_specialize import specialize
from tmlr_build.builder.sources import KernelRequest
from tmlr_build.cli import run
from tmlr_build.common import signature as sig
from tmlr_build.common.errors import SignatureError
from tmlr_build.common.kernel_facts import AutotuneFact, ConfigFact, HeuristicFact, KernelFacts, ParamFact
from tmlr_runtime.abi import format_signature
from tmlr_runtime.tuples import format_nested
from triton_facts import FakeTensor, committed_triton_only, spec_entries

ROOT = Path(__file__).resolve().parents[2]
GPU = ROOT / "tests" / "gpu"
SPEC = GPU / "tuple_kernels.json"
sys.path.insert(0, str(GPU))
import make_tuple_cached  # noqa: E402
import tuple_empty  # noqa: E402
import tuple_kernels  # noqa: E402

NESTED = "((*fp32:16, None), (*fp32:16, 2)), (fp32, 3), i32, 1024"


def _params(text: str, names: list[str], constexpr_params: set[str] = frozenset()) -> list[Any]:
    return sig.bind_python_signature("k", names, sig.parse_signature(text), {}, {}, set(constexpr_params))


def test_elements_are_named_by_path_and_format_back() -> None:
    params = _params(NESTED, ["io", "coef", "n", "BLOCK"], {"BLOCK"})
    assert [(p.name, p.kind) for p in params] == [
        ("io[0][0]", "runtime"), ("io[0][1]", "constexpr"), ("io[1][0]", "runtime"), ("io[1][1]", "constexpr"),
        ("coef[0]", "runtime"), ("coef[1]", "constexpr"), ("n", "runtime"), ("BLOCK", "constexpr")]
    assert format_nested(params) == NESTED
    assert format_signature(params) == "*fp32:16, None, *fp32:16, 2, fp32, 3, i32, 1024"  # the kernel's own order
    record = _params("Tensor(ptr=*fp16, shape=(i32, i32:16), stride=(i64, i32:1)), (i32,)", ["t", "one"])
    assert [p.name for p in record] == ["t.ptr", "t.shape[0]", "t.shape[1]", "t.stride[0]", "t.stride[1]", "one[0]"]
    assert format_nested(record) == "(ptr=*fp16, shape=(i32, i32:16), stride=(i64, i32:1)), (i32,)"


def test_triton_gets_the_nested_signature() -> None:
    types, consts, attrs = sig.to_triton(_params(NESTED, ["io", "coef", "n", "BLOCK"], {"BLOCK"}))
    assert types == {"io": (("*fp32", "constexpr"), ("*fp32", "constexpr")), "coef": ("fp32", "constexpr"), "n": "i32",
                     "BLOCK": "constexpr"}
    assert consts == {(0, 0, 1): None, (0, 1, 1): 2, (1, 1): 3, (3,): 1024}
    assert attrs == {(0, 0, 0): [["tt.divisibility", 16]], (0, 1, 0): [["tt.divisibility", 16]]}
    types, _, _ = sig.to_triton(_params("(ptr=*fp16, n=i32)", ["t"]))
    assert types["t"]._fields == ("ptr", "n") and tuple(types["t"]) == ("*fp16", "i32")  # a NamedTuple type for Triton


def test_an_empty_tuple_is_a_constexpr_that_triton_gets_as_an_empty_tuple_type() -> None:
    """Triton's JIT types an empty tuple argument () and passes nothing for it: tmlr records it as a constexpr of value
    () (JSON []), which the runtime checks the call passes, and gives Triton the type ()."""
    params = _params("*fp32:16, (), (*fp32:16, ()), i32, 64", ["x", "t", "io", "n", "BLOCK"], {"BLOCK"})
    assert [(p.name, p.kind, p.value) for p in params if p.kind == "constexpr"] == [("t", "constexpr", ()), ("io[1]", "constexpr", ()),
                                                                                   ("BLOCK", "constexpr", 64)]
    assert format_nested(params) == "*fp32:16, (), (*fp32:16, ()), i32, 64" and params[1].to_json()["value"] == []
    types, consts, _ = sig.to_triton(params)
    assert types == {"x": "*fp32", "t": (), "io": ("*fp32", ()), "n": "i32", "BLOCK": "constexpr"} and consts == {(4,): 64}
    assert sig.map_leaves("(*T:16?, ())", str.upper) == "(*T:16?, ())" and sig.map_leaves("()", lambda leaf: leaf * 2) == "()()"


@pytest.mark.parametrize("text, names, constexprs, words", [
    ("Empty(), i32", ["a", "b"], set(), r"a NamedTuple without fields passes nothing; write \(\) for an empty tuple"),
    ("(ptr=*fp32, i32)", ["a"], set(), "name every element"),
    ("(x=*fp32, x=i32)", ["a"], set(), "fields repeat"),
    ("Tensor(*fp32, i32)", ["a"], set(), "field=type"),
    ("(i32, i32)", ["BLOCK"], {"BLOCK"}, "is a tl.constexpr"),
    ("(*fp33, i32)", ["a"], set(), "neither a known type"),
])
def test_bad_tuples_are_signature_errors(text: str, names: list[str], constexprs: set[str], words: str) -> None:
    with pytest.raises(SignatureError, match=words):
        _params(text, names, constexprs)


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@committed_triton_only
def test_committed_tuple_artifacts_are_what_the_spec_builds(tmp_path: Path) -> None:
    run(["--spec", str(SPEC), "-o", str(tmp_path), "-q"])
    names = [k.get("name", k["kernel"]) for k in spec_entries(json.loads(SPEC.read_text()))]
    for name in names:
        assert _tree(tmp_path / name) == _tree(GPU / "artifacts" / name), (
            f"tests/gpu/artifacts/{name} is stale: rebuild with the command in tests/gpu/tuple_kernels.json")
        for path in (tmp_path / name).rglob("metadata.json"):  # a tuple family's index (v6) and its variants' metadata (v5)
            doc = json.loads(path.read_text())
            assert doc["schema_version"] == (6 if doc.get("kind") == "family" else 5), path


@pytest.mark.parametrize("name", list(make_tuple_cached.CASES))
def test_a_cache_entry_of_a_tuple_kernel_imports_with_its_tuples(name: str, tmp_path: Path) -> None:
    kernel, _, _, _, signature, arg_names = make_tuple_cached.CASES[name]
    entry = make_tuple_cached.cache_entry(name, str(tmp_path / "cache"))
    build([request(entry, signature=signature, arg_names=arg_names.split(","), name=name)],
          BuildConfig(out=str(tmp_path / "imported"), progress=False))
    build([request(f"{GPU / 'tuple_kernels.py'}:{kernel}", signature=signature, options={"num_warps": 4})],
          BuildConfig(out=str(tmp_path / "python"), archs=parse_arch_list("90"), progress=False))
    imported = json.loads((tmp_path / "imported" / name / "metadata.json").read_text())
    python = json.loads((tmp_path / "python" / kernel / "metadata.json").read_text())
    assert imported["schema_version"] == 5 and imported["variants"][0]["provenance"]["source_stage"] == "cubin"
    assert imported["signature"] == python["signature"] and imported["tuples"] == python["tuples"]
    assert imported["variants"][0]["launch"] == python["variants"][0]["launch"]


def test_a_mismatched_tuple_signature_for_a_cache_entry_is_refused(tmp_path: Path) -> None:
    entry = make_tuple_cached.cache_entry("tuple_add_cached", str(tmp_path / "cache"))
    with pytest.raises(Exception, match="runtime parameters|in the IR"):
        build([request(entry, signature="(*fp32:16, *fp32:16), i32, 1024", arg_names=["ptrs", "n", "BLOCK"])],
              BuildConfig(out=str(tmp_path / "out"), progress=False))


def _triton_text(ty: Any, key: Any) -> str:
    """Triton's JIT specialization of one argument, nested as its tuple, in the signature syntax."""
    if isinstance(ty, tuple):
        parts = [_triton_text(t, k) for t, k in zip(ty, key)]
        fields = getattr(ty, "_fields", None)
        return "(" + ", ".join(f"{f}={p}" for f, p in zip(fields, parts)) + ")" if fields else "(" + ", ".join(parts) + ")"
    if ty == "constexpr":
        return "i32:1" if key == 1 else repr(getattr(key, "value", key))
    return ty + (":16" if key == "D" else "")


def test_jit_specializes_tuples_as_triton_does() -> None:
    from tmlr_build.compile.triton_api import current

    Tensor = collections.namedtuple("Tensor", ["ptr", "shape", "stride"])
    src, dst = Tensor(FakeTensor(32), (64, 17), (17, 1)), Tensor(FakeTensor(8), (64, 17), (17, 1))
    ours = specialize(tuple_kernels.record_scale, (src, dst, 2.0), {"BM": 32, "BN": 32})
    theirs = [_triton_text(*current().specialize(a)) for a in (src, dst)]
    assert list(ours.entries[:2]) == theirs == ["(ptr=*fp32:16, shape=(i32:16, i32), stride=(i32, i32:1))",
                                                "(ptr=*fp32, shape=(i32:16, i32), stride=(i32, i32:1))"]
    assert ours.values[0] == src and type(ours.values[0]) is Tensor
    nested = specialize(tuple_kernels.tuple_nested, (((FakeTensor(0), None), (FakeTensor(16), 1)), (1.5, 48), 100), {"BLOCK": 1024})
    assert nested.signature == "((*fp32:16, None), (*fp32:16, i32:1)), (fp32, i32:16), i32, 1024"
    empty = specialize(tuple_empty.tuple_empty, (FakeTensor(0), (), (FakeTensor(16), ()), 5), {"BLOCK": 1024})
    assert empty.signature == "*fp32:16, (), (*fp32:16, ()), i32, 1024"
    assert [_triton_text(*current().specialize(a)) for a in ((), (FakeTensor(16), ()))] == ["()", "(*fp32:16, ())"]


def test_a_family_of_a_tuple_kernel_builds_with_the_same_nesting_in_every_variant(tmp_path: Path) -> None:
    build([request(f"{GPU / 'tuple_kernels.py'}:tuple_add", signature="(*fp32:16, *fp32:16?, *fp32:16), i32:16?, 1024")],
          BuildConfig(out=str(tmp_path), archs=parse_arch_list("90"), progress=False))
    index = json.loads((tmp_path / "tuple_add" / "metadata.json").read_text())
    assert index["kind"] == "family" and [(p["name"], p["kind"]) for p in index["params"]] == [
        ("ptrs", "runtime"), ("n", "runtime"), ("BLOCK", "constexpr")]
    assert sorted(v["signature"] for v in index["variants"]) == [
        "*fp32:16, *fp32, *fp32:16, i32, 1024", "*fp32:16, *fp32, *fp32:16, i32:16, 1024",
        "*fp32:16, *fp32:16, *fp32:16, i32, 1024", "*fp32:16, *fp32:16, *fp32:16, i32:16, 1024"]
    for v in index["variants"]:
        sub = json.loads((tmp_path / "tuple_add" / v["dir"] / "metadata.json").read_text())
        assert sub["schema_version"] == 5 and sub["tuples"] == [
            {"name": "ptrs", "kind": "tuple", "items": ["ptrs[0]", "ptrs[1]", "ptrs[2]"]}]
        assert [p["name"] for p in sub["signature"]] == ["ptrs[0]", "ptrs[1]", "ptrs[2]", "n", "BLOCK"]


FACTS = KernelFacts((ParamFact("t", False), ParamFact("io", False), ParamFact("n", False), ParamFact("BLOCK", True)),
                    None, ())


def _plan(signature: str, facts: KernelFacts = FACTS, **kw: Any) -> Any:
    return variants.plan(KernelRequest(source="/x/k.py", stage="python", kernel="k", signature=signature, **kw),
                         facts, 1, 256)


def test_type_variables_and_maybe_16_inside_tuples_expand_per_element() -> None:
    plan = _plan("Rec(ptr=*T:16?, shape=(i32, i32:16?)), ((*T:16, None),), i32:16?, 1024", types={"T": ["fp16", "bf16"]})
    assert plan.count_line == "k: 2 types x 8 patterns x 1 arch = 16 variants"
    texts = [v.signature for v in plan.variants]
    assert texts[0] == "Rec(ptr=*fp16:16, shape=(i32, i32:16)), ((*fp16:16, None),), i32:16, 1024"
    assert "Rec(ptr=*bf16, shape=(i32, i32)), ((*bf16:16, None),), i32, 1024" in texts
    assert plan.variants[0].full_signature == "*fp16:16, i32, i32:16, *fp16:16, None, i32:16, 1024"
    assert len({v.vid for v in plan.variants}) == 16


def test_a_tuple_in_the_autotune_key_or_a_heuristic_is_refused_before_compiling() -> None:
    from tmlr_build.common.errors import SpecError

    tune = AutotuneFact(("t",), (ConfigFact({"BLOCK": 64}, 4, 3, 1, None),), (), (), False, (), False)
    keyed = KernelFacts(FACTS.params, tune, ())
    with pytest.raises(SpecError, match="the autotune key reads t, a tuple parameter"):
        _plan("(*fp32, i32), (*fp32,), i32", keyed)
    assert _plan("*fp32, (*fp32:16?,), i32", keyed) is not None  # t is a plain pointer here
    heur = KernelFacts(FACTS.params, None, (HeuristicFact("BLOCK", "args['io'] is None", None, False, True),))
    with pytest.raises(SpecError, match=r"heuristic BLOCK \(args\['io'\] is None\) reads io, a tuple parameter"):
        _plan("(*fp32, i32), (*fp32,), i32", heur)


def test_constexpr_of_a_tuple_element_says_where_its_value_goes() -> None:
    with pytest.raises(SignatureError, match=r"coef\[1\] is a tuple's element; write 4 in its place in coef's --signature entry"):
        sig.parse_constexpr_assignments(["coef[1]=4"])
