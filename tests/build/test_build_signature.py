"""Signature syntax, IR text reading and arch names (no Triton needed), and the parent process
staying free of Triton."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tmlr_build.common.arch import parse_arch_list, triton_target
from tmlr_build.common.errors import IRParseError, SignatureError, UnsupportedArchError
from tmlr_build.common.mlir_text import module_attributes, read_function
from tmlr_build.common.signature import (SigEntry, bind_python_signature, check_against_ir,
                                         parse_constexpr_assignments, parse_signature)
from tmlr_runtime.abi import Parameter as Param, format_signature as describe
from tmlr_runtime.artifact.metadata import read_parameter


def test_aot_syntax() -> None:
    assert parse_signature("*fp16:16, *kfp16, i32:16, i32:1, fp16, 128, 1.5, True, 'relu', u64") == [
        SigEntry("runtime", "*fp16", 16), SigEntry("runtime", "*kfp16", 1), SigEntry("runtime", "i32", 16),
        SigEntry("equal_to_1", "i32"), SigEntry("runtime", "fp16", 1), SigEntry("constexpr", value=128),
        SigEntry("constexpr", value=1.5), SigEntry("constexpr", value=True), SigEntry("constexpr", value="relu"),
        SigEntry("runtime", "u64", 1)]
    assert parse_signature("") == [] and parse_signature("  ") == []
    assert parse_signature("'a, b'") == [SigEntry("constexpr", value="a, b")]


@pytest.mark.parametrize("text, needle", [
    ("*fp16:8", "must be 16"), ("fp32:16", "only pointers and integers"), ("*fp16:1", "integer types only"),
    ("i32,,i32", "empty signature entry"), ("*float16", "neither a known type"), ("int:16", "unknown type 'int'"),
])
def test_bad_entries(text: str, needle: str) -> None:
    with pytest.raises(SignatureError, match=needle):
        parse_signature(text)


def test_describe_round_trips() -> None:
    text = "*fp16:16, i32, i64:1, 128, 'x'"
    params = [e.named(f"a{i}") for i, e in enumerate(parse_signature(text))]
    assert describe(params) == text
    assert [read_parameter(p.to_json()) for p in params] == params


def test_binding_with_constexprs_by_name_and_defaults() -> None:
    entries = parse_signature("*fp32:16, i32")
    params = bind_python_signature("k", ["x", "n", "BLOCK", "ACT"], entries, {"BLOCK": 64}, {"ACT": "relu"},
                                   {"BLOCK", "ACT"})
    assert [p.to_json() for p in params] == [
        {"name": "x", "kind": "runtime", "type": "*fp32", "divisibility": 16},
        {"name": "n", "kind": "runtime", "type": "i32", "divisibility": 1},
        {"name": "BLOCK", "kind": "constexpr", "value": 64},
        {"name": "ACT", "kind": "constexpr", "value": "relu"}]
    with pytest.raises(SignatureError, match="x, n, ACT"):  # ACT has no default here
        bind_python_signature("k", ["x", "n", "BLOCK", "ACT"], entries, {"BLOCK": 64}, {}, {"BLOCK", "ACT"})
    assert parse_constexpr_assignments(["A=1", "B='s'", "C=0x10"]) == {"A": 1, "B": "s", "C": 16}
    with pytest.raises(SignatureError, match="NAME=VALUE"):
        parse_constexpr_assignments(["A"])


def test_ir_function_types_and_divisibility() -> None:
    text = """#loc = loc("k.py":1:0)
module attributes {"ttg.num-ctas" = 2 : i32, "ttg.num-warps" = 8 : i32, ttg.target = "cuda:90", "ttg.threads-per-warp" = 32 : i32} {
  tt.func public @k(%arg0: !tt.ptr<bf16> {tt.divisibility = 16 : i32} loc("k.py":1:0), %arg1: !tt.ptr<i8, 0> {tt.nv_tma_desc = 1 : i32} loc("k.py":1:0), %arg2: i64 {tt.divisibility = 16 : i32}, %arg3: f16, %arg4: i1, %arg5: !tt.ptr<f8E4M3FN>, %arg6: f64 loc("k.py":1:0)) attributes {noinline = false} {
    tt.return
  }
}"""
    fn = read_function(text, "k.ttgir")
    assert fn.name == "k"
    assert [(p.type, p.divisibility) for p in fn.params] == [
        ("*bf16", 16), ("nvTmaDesc", 1), ("i64", 16), ("fp16", 1), ("i1", 1), ("*fp8e4nv", 1), ("fp64", 1)]
    assert module_attributes(text) == {"ttg.num-ctas": 2, "ttg.num-warps": 8, "ttg.target": "cuda:90",
                                       "ttg.threads-per-warp": 32}
    with pytest.raises(IRParseError, match="no tt.func"):
        read_function("module {}", "x.ttir")


def test_signature_checked_against_ir() -> None:
    ir = [Param("arg0", "runtime", "*fp16", 16), Param("arg1", "runtime", "i32", 1)]
    ok = [Param("x", "runtime", "*fp16", 16), Param("n", "runtime", "u32", 1), Param("B", "constexpr", value=4)]
    check_against_ir("k", ok, ir)  # u32 is i32 in (signless) MLIR
    with pytest.raises(SignatureError, match="2 runtime parameters|is \\*fp32"):
        check_against_ir("k", [Param("x", "runtime", "*fp32", 16), Param("n", "runtime", "i32", 1)], ir)
    with pytest.raises(SignatureError, match="1 runtime parameters"):
        check_against_ir("k", ok[:1], ir)


def test_arch_lists() -> None:
    assert [t.arch for t in parse_arch_list("90,80, sm_86,90")] == ["sm_80", "sm_86", "sm_90a"]
    assert [t.arch for t in parse_arch_list([100, "sm_90a", 89])] == ["sm_89", "sm_90a", "sm_100a"]
    for bad in ("70", "sm_120", "", "9.0"):
        with pytest.raises(UnsupportedArchError, match="80,86,89,90,100"):
            parse_arch_list(bad)


def test_triton_target_text() -> None:
    assert triton_target("cuda:90") == parse_arch_list("90")[0] and triton_target("cuda:80").arch == "sm_80"
    for other in (None, "", "cuda:", "cuda:sm_90", "hip:gfx942", "90"):
        assert triton_target(other) is None


def test_the_parent_process_never_imports_triton(tmp_path: Path) -> None:
    examples = Path(__file__).resolve().parents[2] / "examples"
    code = ("import sys\nfrom tmlr_build.cli import run\n"
            f"run([{str(examples / 'kernels' / 'vector_add.py')!r} + ':add', '--signature', "
            f"'*fp32:16, *fp32:16, *fp32:16, i32, 1024', '-o', {str(tmp_path)!r}, '--arch', '80', '-q'])\n"
            "assert 'triton' not in sys.modules and 'torch' not in sys.modules\n")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parents[2])
