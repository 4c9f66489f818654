"""tmlr-build --split-dump: splitting a Triton 3.3.1 MLIR dump and building from the split files."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from tmlr_build.build import BuildConfig, build
from tmlr_build.arch import parse_arch_list
from tmlr_build.cli import main
from tmlr_build.sources import request

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


def _resumable(split: str) -> list[tuple[str, str]]:
    """(file, input suffix) for every split file that tmlr-build resumes (see README)."""
    with open(os.path.join(split, "index.json")) as f:
        passes = json.load(f)["passes"]
    out = [(p["file"], ".ttir") for p in passes if p["buildable"] and p["stage"] == "ttir"
           and p["pass_arg"] != "inline"]  # pre-inliner IR: see README
    out.append((next(p for p in passes if p["stage"] == "ttgir")["file"], ".ttir"))  # the finished ttir
    out.append((next(p for p in passes if p["stage"] == "llir-lowering")["file"], ".ttgir"))  # finished ttgir
    return out


def test_resumed_files_build_the_same_cubin(dump: tuple[str, bytes], tmp_path) -> None:
    split, reference = dump
    reqs = []
    for i, (name, suffix) in enumerate(_resumable(split)):
        path = tmp_path / f"k{i}{suffix}"
        shutil.copy(os.path.join(split, name), path)
        reqs.append(request(str(path), name=f"k{i}", options={"num_warps": 4, "num_stages": 2}))
    build(reqs, BuildConfig(out=str(tmp_path / "out"), archs=parse_arch_list("90"), progress=False))
    files = _resumable(split)
    for i, (name, _) in enumerate(files):
        cubin = (tmp_path / "out" / f"k{i}" / f"k{i}.sm_90a.cubin").read_bytes()
        assert cubin.startswith(b"\x7fELF"), name
        if i >= len(files) - 2:  # the finished ttir and finished ttgir reproduce the normal build exactly
            assert cubin == reference, name


@pytest.mark.gpu
def test_resumed_matmul_runs(dump: tuple[str, bytes], tmp_path) -> None:
    import torch
    import tmlr_runtime as tr

    split, _ = dump
    name = _resumable(split)[-1][0]
    shutil.copy(os.path.join(split, name), tmp_path / "matmul.ttgir")
    build([request(str(tmp_path / "matmul.ttgir"))], BuildConfig(out=str(tmp_path / "out"), progress=False))
    k = tr.Kernel.load(str(tmp_path / "out" / "matmul"))
    M = N = K = 256
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    c = torch.empty(M, N, device="cuda", dtype=torch.float16)
    k[(M // 64, N // 64)](a, b, c, M, N, K, a.stride(0), b.stride(0), c.stride(0))
    torch.testing.assert_close(c, (a.float() @ b.float()).half(), atol=1e-1, rtol=1e-2)
