"""tmlr_runtime.abi, the one type vocabulary: it agrees with the schema file, with struct, torch and
Triton's own tables, and its signature text, splitter and targets do what the build and runtime need."""
from __future__ import annotations

import json
import re
import struct

import pytest

from tmlr_runtime import SCHEMA_PATH, abi
from tmlr_runtime.abi import TYPES, Parameter, Target, format_signature, split_top_level

SCHEMA = json.loads(SCHEMA_PATH.read_text())


def test_the_schema_names_the_same_types() -> None:
    defs = SCHEMA["$defs"]
    assert tuple(defs["scalar_type"]["enum"]) == abi.SCALAR_TYPES
    pointees = re.fullmatch(r"\^\\\*k\?\((.*)\)\$\(\?!\\n\)", defs["pointer_type"]["pattern"]).group(1).split("|")
    assert sorted(pointees) == sorted(abi.POINTEE_TYPES)
    runtime = defs["parameter"]["allOf"][0]["then"]["properties"]["type"]["anyOf"]
    assert {"const": abi.TMA_DESC} in runtime


@pytest.mark.parametrize("name", [n for n, t in TYPES.items() if t.code])
def test_struct_codes_fit_size_and_range(name: str) -> None:
    t = TYPES[name]
    assert struct.calcsize("<" + t.code) == t.size and t.size % t.align == 0
    if t.range is not None:
        lo, hi = t.range
        struct.pack("<" + t.code, lo)
        struct.pack("<" + t.code, hi)
        if hi > 1:  # i1/u1 take 0 or 1 in a byte
            with pytest.raises(struct.error):
                struct.pack("<" + t.code, hi + 1)


def test_torch_dtypes_exist_with_the_size() -> None:
    torch = pytest.importorskip("torch")
    for t in TYPES.values():
        if t.torch:
            assert getattr(torch, t.torch).itemsize == t.size, t.name


def test_dtype_names_and_arch_names_agree_with_triton() -> None:
    jit = pytest.importorskip("triton.runtime.jit")
    from triton.backends.nvidia.compiler import sm_arch_from_capability

    theirs = {k: v for k, v in jit.type_canonicalisation_dict.items() if k not in TYPES}
    assert {k: abi.DTYPE_NAMES[k] for k in theirs} == theirs
    for capability in (50, 80, 86, 89, 90, 100, 120):
        assert Target.from_capability(capability).arch == sm_arch_from_capability(capability)


def test_param_types() -> None:
    good = ["i32", "fp16", "nvTmaDesc", "*fp16", "*kfp16", "*fp8e4nv", "*i1"]
    bad = ["", "*", "*k", "fp8e4nv", "*nvTmaDesc", "*fp17", "int", "i32\n", "*kkfp16"]
    assert [t in abi.PARAM_TYPES for t in good] == [True] * len(good)
    assert [t in abi.PARAM_TYPES for t in bad] == [False] * len(bad)
    assert abi.pointee("*kbf16") == "bf16" and abi.pointee("bf16") is None


def test_signature_text_and_json() -> None:
    params = [Parameter("x", "runtime", "*fp32", 16), Parameter("n", "runtime", "i32"),
              Parameter("one", "equal_to_1", "i64", value=1), Parameter("B", "constexpr", value=1024),
              Parameter("ACT", "constexpr", value="relu, fast")]
    assert format_signature(params) == "*fp32:16, i32, i64:1, 1024, 'relu, fast'"
    assert [Parameter.from_json(p.to_json()) for p in params] == params
    assert split_top_level(format_signature(params)) == ["*fp32:16", "i32", "i64:1", "1024", "'relu, fast'"]


def test_splitter_brackets_and_quotes() -> None:
    assert split_top_level("a(1, 2), [b, c], {d: 1, e: 2}, ' , ', \" , \"") == [
        "a(1, 2)", "[b, c]", "{d: 1, e: 2}", "' , '", '" , "']
    assert split_top_level("!tt.ptr<f16, 1>, i32", "([{<", '"') == ["!tt.ptr<f16, 1>", "i32"]
    assert split_top_level("x,,y, ") == ["x", "", "y", ""]


@pytest.mark.parametrize("text, capability, arch", [
    (90, 90, "sm_90a"), ("90", 90, "sm_90a"), ("sm_90a", 90, "sm_90a"), ("SM_90", 90, "sm_90a"), (" 80 ", 80, "sm_80"),
    ("sm86", 86, "sm_86"), ("100", 100, "sm_100a"),
])
def test_target_parse(text: object, capability: int, arch: str) -> None:
    assert Target.parse(text) == Target(capability, arch)  # type: ignore[arg-type]


@pytest.mark.parametrize("text", ["", "9.0", "sm_", "gfx90a", "ninety"])
def test_target_parse_refuses(text: str) -> None:
    with pytest.raises(ValueError, match="write it like 80 or 90"):
        Target.parse(text)


@pytest.mark.parametrize("arch, device, runs", [
    ("sm_80", (8, 0), True), ("sm_80", (8, 6), True), ("sm_86", (8, 0), False), ("sm_80", (9, 0), False),
    ("sm_90a", (9, 0), True), ("sm_90a", (9, 1), False), ("sm_90a", (10, 0), False), ("sm_90", (9, 1), True),
])
def test_target_runs_on(arch: str, device: tuple[int, int], runs: bool) -> None:
    target = Target(int(arch[3:].rstrip("a")), arch)
    assert target.runs_on(*device) is runs
