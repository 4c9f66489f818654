"""tmlr-build --split-dump: splitting a Triton 3.3.1 MLIR dump and building from the split files."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tmlr_build.arch import parse_arch_list
from tmlr_build.cli import main
from tmlr_build.dump_resume import build_from_dump
from tmlr_build.errors import InputError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_COMPILE = f"""
import sys; sys.path.insert(0, {os.path.join(ROOT, 'examples', 'kernels')!r})
import triton
from triton.backends.compiler import GPUTarget
from matmul import matmul
sig = {{n: "*fp16" for n in ("a_ptr", "b_ptr", "c_ptr")}}
sig.update({{n: "i32" for n in ("M", "N", "K", "stride_am", "stride_bk", "stride_cm")}})
sig.update({{n: "constexpr" for n in ("BM", "BN", "BK")}})
src = triton.compiler.ASTSource(fn=matmul, signature=sig, constexprs={{"BM": 64, "BN": 64, "BK": 32}},
                                attrs={{(i,): [["tt.divisibility", 16]] for i in range(9)}})
k = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={{"num_warps": 4, "num_stages": 2}})
open(sys.argv[1], "wb").write(k.asm["cubin"])
"""


@pytest.fixture(scope="module")
def dump(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, bytes]:
    d = tmp_path_factory.mktemp("dump")
    env = {**os.environ, "MLIR_ENABLE_DUMP": "1", "MLIR_DUMP_PATH": str(d / "d.log"),
           "TRITON_CACHE_DIR": str(d / "cache")}
    subprocess.run([sys.executable, "-c", _COMPILE, str(d / "ref.cubin")], env=env, check=True)
    assert main(["--split-dump", str(d / "d.log"), "-o", str(d / "split"), "-q"]) == 0
    return str(d / "split"), (d / "ref.cubin").read_bytes()


def test_index_records_stage_and_position(dump: tuple[str, bytes]) -> None:
    split, _ = dump
    with open(os.path.join(split, "index.json")) as f:
        passes = json.load(f)["passes"]
    assert all(p["position"] == "before" for p in passes)  # Triton 3.3.1 dumps before each pass
    stages = [p["stage"] for p in passes]
    assert stages == sorted(stages, key=["ttir", "ttgir", "llir-lowering"].index)
    first_ttgir = next(p for p in passes if p["stage"] == "ttgir")
    assert first_ttgir["pass_arg"] == "convert-triton-to-tritongpu"
    assert not all(p["buildable"] for p in passes)  # the inliner's per-function canonicalize dumps
    for p in passes:
        assert os.path.isfile(os.path.join(split, p["file"]))


def _passes(split: str) -> list[dict]:
    with open(os.path.join(split, "index.json")) as f:
        return json.load(f)["passes"]


def test_every_resumable_file_builds(dump: tuple[str, bytes], tmp_path) -> None:
    split, reference = dump
    same, differ, refused = [], [], []
    for p in _passes(split):
        path = os.path.join(split, p["file"])
        try:
            build_from_dump(path, str(tmp_path / p["file"]), parse_arch_list("90"),
                            {"num_warps": 4, "num_stages": 2}, name="matmul")
        except InputError:
            refused.append(p["file"])
            continue
        cubin = (tmp_path / p["file"] / "matmul" / "matmul.sm_90a.cubin").read_bytes()
        (same if cubin == reference else differ).append(p["file"])
    # Every file whose remaining passes are re-run (ttgir stage, finished TTIR/TTGIR) is byte-identical.
    for p in _passes(split):
        if p["stage"] == "ttgir" or (p["stage"] == "llir-lowering" and p["file"] not in refused):
            assert p["file"] in same, p["file"]
    pre_llvm = next(p["file"] for p in _passes(split) if p["pass_arg"] == "convert-scf-to-cf")
    assert pre_llvm in same  # still TTGIR: resumed, not refused
    # Mid-TTIR files re-run all of make_ttir (not only the rest): a valid cubin, other bytes.
    assert all(_entry_stage(split, f) == "ttir" for f in differ), differ
    assert all(_entry_stage(split, f) in ("ttir", "llir-lowering") for f in refused), refused


def _entry_stage(split: str, file: str) -> str:
    return next(p["stage"] for p in _passes(split) if p["file"] == file)


@pytest.mark.gpu
def test_resumed_matmul_runs(dump: tuple[str, bytes], tmp_path) -> None:
    import torch
    import tmlr_runtime as tr

    split, _ = dump
    mid = next(p["file"] for p in _passes(split) if p["pass_arg"] == "tritongpu-pipeline")  # mid-ttgir
    build_from_dump(os.path.join(split, mid), str(tmp_path / "out"), parse_arch_list("90"),
                    {"num_warps": 4, "num_stages": 2}, name="matmul")
    k = tr.Kernel.load(str(tmp_path / "out" / "matmul"))
    M = N = K = 256
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    c = torch.empty(M, N, device="cuda", dtype=torch.float16)
    k[(M // 64, N // 64)](a, b, c, M, N, K, a.stride(0), b.stride(0), c.stride(0))
    torch.testing.assert_close(c, (a.float() @ b.float()).half(), atol=1e-1, rtol=1e-2)
