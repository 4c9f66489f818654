"""tmlr_build.jit: Triton-identical specialization, content-keyed cache, stage-dir inputs, typed errors."""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from tmlr_build import BuildConfig, BuildError, InputError, build, jit, parse_arch_list, request
from tmlr_build.builder.jit_specialize import specialize
from tmlr_build.common.errors import UnsupportedArchError
from tmlr_build.common.triton_check import release_in_range
from triton_facts import API, FakeTensor

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples" / "kernels"))
import matmul as matmul_module  # noqa: E402
import vector_add  # noqa: E402

SIG = "*fp32:16, *fp32:16, *fp32:16, i32, 1024"


def _triton_entries(fn: Any, args: tuple[Any, ...], constexprs: dict[str, Any]) -> list[str]:
    from tmlr_build.compile.triton_api import current

    out = []
    for p, arg in zip(fn.params, list(args) + list(constexprs.values())):
        if p.is_constexpr:
            out.append(repr(arg))
            continue
        ty, key = current().specialize(arg, p.is_const, not p.do_not_specialize, not p.do_not_specialize_on_alignment)
        out.append("i32:1" if (ty, key) == ("constexpr", 1) else ty + (":16" if key == "D" else ""))
    return out


@pytest.mark.parametrize("args", [
    (FakeTensor(16, "torch.float16"), FakeTensor(8, "torch.float16"), FakeTensor(0, "torch.float16"),
     64, 1, 3, 2**40, 2**63, 48),
    (FakeTensor(4, "torch.bfloat16"), FakeTensor(32, "torch.float8_e4m3fn"), FakeTensor(17, "torch.int8"),
     -16, 0, 2**31, -(2**40) - 1, 17, 1),
])
def test_specialization_equals_tritons(args: tuple[Any, ...]) -> None:
    constexprs = {"BM": 64, "BN": 32, "BK": 16}
    ours = specialize(matmul_module.matmul, args, {**constexprs, "num_warps": 4})
    assert list(ours.entries) == _triton_entries(matmul_module.matmul, args, constexprs)
    assert ours.options == {"num_warps": 4}


def test_defaults_and_bool_and_float() -> None:
    import triton
    import triton.language as tl

    @triton.jit
    def k(p, f, b, n, C: tl.constexpr = 7):
        pass

    from tmlr_build.compile.triton_api import current

    args = (FakeTensor(32), 1.5, True, 5)
    bool_type = current().bool_type  # i1 in Triton 3.3, u1 from 3.4
    assert list(specialize(k, args, {}).entries) == _triton_entries(k, args, {"C": 7}) == [
        "*fp32:16", "fp32", bool_type, "i32", "7"]
    assert bool_type == ("i1" if current().release == "3.3" else "u1")


def _binder_entries(fn: Any, args: tuple[Any, ...]) -> list[str]:
    """The entries of Triton's own binder (``create_function_from_signature``, which applies annotations) for a call."""
    from triton.backends.compiler import BaseBackend
    from triton.runtime.jit import create_function_from_signature

    specialization = create_function_from_signature(fn.signature, fn.params, BaseBackend)(*args)[1]
    return ["i32:1" if (ty, key) == ("constexpr", 1) else ty + (":16" if key == "D" else "") for ty, key in specialization]


@pytest.mark.parametrize("v", [3, 1, 16, 2**40])
def test_annotated_parameters_are_specialized_as_tritons_binder_does(v: int) -> None:
    """Triton's test_annotations.py: ``v: tl.uint8`` compiles as u8 whatever int is passed (1 is no constexpr then), a
    float annotation as that float type (Triton 3.4+), a pointer annotation as that pointer."""
    import triton
    import triton.language as tl

    def k(X, v, w, f, b):
        pass

    k.__annotations__ = {"X": "*fp16", "v": tl.uint8, "w": "tl.int64", "f": tl.float16, "b": tl.int1}
    k = triton.jit(k)
    args = (FakeTensor(32, "torch.float16"), v, v, 2.0, True)
    assert list(specialize(k, args, {}).entries) == _binder_entries(k, args)
    assert specialize(k, args, {}).entries[1].split(":")[0] == "u8"


@pytest.fixture(scope="module")
def stage_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("keepir")
    build([request(f"{vector_add.__file__}:add", signature=SIG)],
          BuildConfig(out=str(out), archs=parse_arch_list("90"), keep_ir=True, progress=False))
    return out / "add"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TMLR_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _args() -> tuple[Any, ...]:
    return FakeTensor(1024), FakeTensor(2048), FakeTensor(4096), 1000


def test_stage_dirs_build_the_same_cubin_and_hit_the_cache(stage_dir: Path, cache: Path, tmp_path: Path) -> None:
    ir = tmp_path / "ir"
    shutil.copytree(stage_dir / "ir" / "sm_90a", ir)
    reference = (stage_dir / "add.sm_90a.cubin").read_bytes()
    k = jit(vector_add.add)
    for kw in ("ttir_dir", "ttgir_dir", "ptx_dir"):
        art = k.build_only(*_args(), BLOCK=1024, arch=90, **{kw: str(ir)})
        assert Path(art, "add.sm_90a.cubin").read_bytes() == reference, kw
    assert k.builds == 3
    for kw in ("ttir_dir", "ttgir_dir", "ptx_dir"):
        k.build_only(*_args(), BLOCK=1024, arch=90, **{kw: str(ir)})
    assert k.builds == 3  # unchanged content, options and specialization: no rebuild
    k.build_only(*_args(), BLOCK=1024, arch=90, num_warps=4, ttgir_dir=str(ir))  # default-equal but new options
    assert k.builds == 4
    original = (ir / "add.ttgir").read_text()
    (ir / "add.ttgir").write_text(original + "\n// edited\n")
    k.build_only(*_args(), BLOCK=1024, arch=90, ttgir_dir=str(ir))
    assert k.builds == 5  # the edited file is picked up on the next call
    (ir / "add.ttgir").write_text(original)
    k.build_only(*_args(), BLOCK=1024, arch=90, ttgir_dir=str(ir))
    assert k.builds == 5  # the original bytes again: their artifact is in the cache


def test_python_source_without_a_dir(cache: Path) -> None:
    k = jit(vector_add.add)
    art = k.build_only(*_args(), BLOCK=1024, arch=90)
    assert os.path.isfile(os.path.join(art, "metadata.json")) and k.builds == 1


def test_missing_file_names_it(cache: Path, tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"add\.ttgir: no such file"):
        jit(vector_add.add).build_only(*_args(), BLOCK=1024, arch=90, ttgir_dir=str(tmp_path))


@pytest.mark.parametrize("arch", ["gfx90a", "70", "9.0"])
def test_bad_arch_is_a_typed_error(cache: Path, arch: str) -> None:
    with pytest.raises(UnsupportedArchError, match=r"80,86,89,90,100"):
        jit(vector_add.add).build_only(*_args(), BLOCK=1024, arch=arch)


def test_ir_that_does_not_match_the_call(stage_dir: Path, cache: Path) -> None:
    with pytest.raises(BuildError) as info:
        jit(vector_add.add).build_only(FakeTensor(16, "torch.float16"), *_args()[1:], BLOCK=1024, arch=90,
                                       ttir_dir=str(stage_dir / "ir" / "sm_90a"))
    # in the words of the call: a Python call has no --signature to fix
    named = release_in_range(API.version, ">=3.5")  # the IR records the kernel's parameter names
    assert str(info.value) == (f"add.ttir: parameter {'x_ptr' if named else 'arg0'} is *fp16:16 in the call's arguments but *fp32:16 in the IR; "
                               "pass arguments of the types the IR was compiled for, or write the IR file again for these")


@pytest.mark.gpu
def test_edited_ttgir_is_launched_without_restart(stage_dir: Path, cache: Path, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    ir = tmp_path / "ir"
    shutil.copytree(stage_dir / "ir" / "sm_90a", ir)
    spy = _Spy(monkeypatch)
    k = jit(vector_add.add)
    # n = 4001 is not divisible by 16: the same specialization ("i32") the kept IR was built with.
    x, y = torch.randn(4001, device="cuda"), torch.randn(4001, device="cuda")
    out = torch.empty_like(x)
    cap = torch.cuda.get_device_capability()
    if cap != (9, 0):
        pytest.skip("the kept IR is for sm_90a")
    k[(4,)](x, y, out, 4001, BLOCK=1024, ttgir_dir=str(ir))
    torch.cuda.synchronize()
    torch.testing.assert_close(out, x + y)
    text = (ir / "add.ttgir").read_text()
    assert "arith.addf" in text
    (ir / "add.ttgir").write_text(text.replace("arith.addf", "arith.subf"))
    k[(4,)](x, y, out, 4001, BLOCK=1024, ttgir_dir=str(ir))
    torch.cuda.synchronize()
    torch.testing.assert_close(out, x - y)
    assert k.builds == 2
    assert spy.calls == ["here" if ALIKE else "workers"] * 2  # beside torch and CUDA: built in this process


def test_launch_loads_once_and_passes_args_in_order(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tmlr_runtime

    loads, calls = [], []

    class FakeKernel:
        def __call__(self, grid: Any, *args: Any, stream: Any = None) -> None:
            calls.append((grid, args, stream))

    monkeypatch.setattr(tmlr_runtime.Kernel, "load", staticmethod(lambda d: loads.append(d) or FakeKernel()))
    k = jit(vector_add.add)
    for _ in range(2):
        k[(4,)](*_args(), BLOCK=1024, arch=90, num_warps=4)
    assert len(loads) == 1 and k.builds == 1
    assert calls[0][0] == (4,) and calls[0][1][3:] == (1000, 1024) and calls[0][2] is None


# --- where the jit compiles: in this process (Triton imported, a stage file) or in workers ------------------

from tmlr_build.builder import in_process  # noqa: E402
from tmlr_build.builder.sources import make_jobs  # noqa: E402
from tmlr_build.builder.workers import Task  # noqa: E402
from tmlr_build.compile.triton_api import current as triton_api  # noqa: E402

ALIKE = triton_api().compiles_alike_in_one_process
NOT_ALIKE = "Triton 3.3: a process's second compile gives other bytes, so the jit keeps workers there"
MM_SIG = "*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, i32:16, i32:16, i32:16, 64, 64, 32"


def _job(path: Path) -> Any:
    return make_jobs(request(str(path)), parse_arch_list("90"), None, False, True)[0]


def test_where_jobs_are_compiled(stage_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ttgir, python = _job(stage_dir / "ir" / "sm_90a" / "add.ttgir"), _job(Path(f"{vector_add.__file__}:add"))
    assert in_process.usable([ttgir]) is ALIKE  # Triton is imported here (the jit imports it)
    assert not in_process.usable([python])  # a Python kernel: its compile would change this process's Triton
    assert not in_process.usable([ttgir, python]) and not in_process.usable([])
    monkeypatch.setenv("PTXAS_OPTIONS", "-O1")  # read into Triton's option defaults at import, in this process
    assert not in_process.usable([ttgir])
    monkeypatch.delenv("PTXAS_OPTIONS")
    monkeypatch.delitem(sys.modules, "triton")  # the command line's process: Triton not imported
    assert not in_process.usable([ttgir])


class _Spy:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        import tmlr_build.builder.build as build_module

        self.calls: list[str] = []
        for name, module, attr in (("workers", build_module, "run_jobs"), ("here", in_process, "run_jobs")):
            real = getattr(module, attr)
            monkeypatch.setattr(module, attr, lambda *a, _n=name, _r=real, **k: self.calls.append(_n) or _r(*a, **k))


@pytest.mark.parametrize("isolate", [False, True])
def test_the_jit_builds_a_stage_file_here_unless_isolated(stage_dir: Path, cache: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch, isolate: bool) -> None:
    spy = _Spy(monkeypatch)
    k = jit(vector_add.add, isolate=isolate)
    k.build_only(*_args(), BLOCK=1024, arch=90, ttgir_dir=str(stage_dir / "ir" / "sm_90a"))
    k.build_only(*_args(), BLOCK=1024, arch=90)  # the Python source: always a worker
    assert spy.calls == ["here" if ALIKE and not isolate else "workers", "workers"]
    build([request(str(stage_dir / "ir" / "sm_90a" / "add.ttgir"))], BuildConfig(out=str(tmp_path), progress=False))
    assert spy.calls[-1] == "workers"  # the library's default (and the command line): workers


def test_a_task_here_leaves_the_environment_and_directory_as_they_were(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    # scrub_environment is what a compile does to its process first: unset TRITON_* and set its own cache
    monkeypatch.setenv("TRITON_DISABLE_LINE_INFO", "1")
    monkeypatch.delenv("TRITON_CACHE_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    before = dict(os.environ)
    assert in_process.run_here(Task("tmlr_build.compile.options:scrub_environment", (True,), "scrub")) is None
    assert dict(os.environ) == before and os.getcwd() == str(tmp_path)
    failed = in_process.run_here(Task("tmlr_build.compile.options:scrub_environment", (), "bad call"))
    assert isinstance(failed, BuildError) and "bad call: unexpected TypeError" in str(failed)


@pytest.fixture(scope="module")
def matmul_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("keepir-mm")
    build([request(f"{matmul_module.__file__}:matmul", signature=MM_SIG, options={"num_warps": 4, "num_stages": 2})],
          BuildConfig(out=str(out), archs=parse_arch_list("90"), keep_ir=True, progress=False))
    return out / "matmul" / "ir" / "sm_90a"


def _files(artifact: str) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in Path(artifact).iterdir() if p.is_file()}


def _compile_with_triton(path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Triton's own in-process compile, as a developer's process does beside the jit (its LLVM options stay set)."""
    import triton
    from triton.backends.compiler import GPUTarget

    with monkeypatch.context() as m:
        m.setenv("TRITON_CACHE_DIR", str(cache_dir))
        assert triton.compile(str(path), target=GPUTarget("cuda", 90, 32)).asm["cubin"]


@pytest.mark.skipif(not ALIKE, reason=NOT_ALIKE)
def test_here_and_in_a_worker_give_the_same_bytes(stage_dir: Path, matmul_dir: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A sequence of edits compiled in this process (after other compiles, by tmlr and by Triton itself), each
    against a worker's build of the same bytes."""
    monkeypatch.setenv("TRITON_DISABLE_LINE_INFO", "1")  # removed for the compile on both paths
    ir = tmp_path / "ir"
    shutil.copytree(matmul_dir, ir)
    text = (ir / "matmul.ttgir").read_text()
    assert "dense<0.000000e+00> : tensor<64x64xf32, #mma" in text
    fake = (FakeTensor(1024, "torch.float16"), FakeTensor(2048, "torch.float16"), FakeTensor(4096, "torch.float16"))
    args = (*fake, 256, 256, 256, 256, 256, 256)
    here, worker = jit(matmul_module.matmul), jit(matmul_module.matmul, isolate=True)
    jit(vector_add.add).build_only(*_args(), BLOCK=1024, arch=90, ttgir_dir=str(stage_dir / "ir" / "sm_90a"))
    _compile_with_triton(stage_dir / "ir" / "sm_90a" / "add.ttgir", tmp_path / "triton-cache", monkeypatch)
    for k in ("1", "2", "0"):  # this process has compiled before each: its bytes must not depend on that
        (ir / "matmul.ttgir").write_text(text.replace("dense<0.000000e+00> : tensor<64x64xf32, #mma",
                                                      f"dense<{k}.000000e+00> : tensor<64x64xf32, #mma"))
        monkeypatch.setenv("TMLR_CACHE_DIR", str(tmp_path / "here"))
        a = here.build_only(*args, BM=64, BN=64, BK=32, arch=90, ttgir_dir=str(ir))
        monkeypatch.setenv("TMLR_CACHE_DIR", str(tmp_path / "worker"))
        b = worker.build_only(*args, BM=64, BN=64, BK=32, arch=90, ttgir_dir=str(ir))
        assert _files(a) == _files(b), k
    assert here.builds == worker.builds == 3
    assert os.environ["TRITON_DISABLE_LINE_INFO"] == "1"


@pytest.mark.skipif(not ALIKE, reason=NOT_ALIKE)
def test_bad_ir_here_is_a_compile_error(stage_dir: Path, cache: Path, tmp_path: Path) -> None:
    ir = tmp_path / "ir"
    shutil.copytree(stage_dir / "ir" / "sm_90a", ir)
    (ir / "add.ttgir").write_text((ir / "add.ttgir").read_text().replace("arith.addf", "arith.nosuchop", 1))
    cwd = os.getcwd()
    with pytest.raises(BuildError, match=r"add\.ttgir"):
        jit(vector_add.add).build_only(*_args(), BLOCK=1024, arch=90, ttgir_dir=str(ir))
    assert os.getcwd() == cwd
