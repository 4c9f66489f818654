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

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples" / "kernels"))
import matmul as matmul_module  # noqa: E402
import vector_add  # noqa: E402

SIG = "*fp32:16, *fp32:16, *fp32:16, i32, 1024"


class FakeTensor:
    """What Triton's JIT reads from a tensor: dtype and data_ptr (so no GPU is needed)."""

    def __init__(self, ptr: int, dtype: str = "torch.float32") -> None:
        self.ptr, self.dtype = ptr, dtype

    def data_ptr(self) -> int:
        return self.ptr


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
    (ir / "add.ttgir").write_text((ir / "add.ttgir").read_text() + "\n// edited\n")
    k.build_only(*_args(), BLOCK=1024, arch=90, ttgir_dir=str(ir))
    assert k.builds == 5  # the edited file is picked up on the next call


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
    with pytest.raises(BuildError, match=r"add\.ttir"):
        jit(vector_add.add).build_only(FakeTensor(16, "torch.float16"), *_args()[1:], BLOCK=1024, arch=90,
                                       ttir_dir=str(stage_dir / "ir" / "sm_90a"))


@pytest.mark.gpu
def test_edited_ttgir_is_launched_without_restart(stage_dir: Path, cache: Path, tmp_path: Path) -> None:
    import torch

    ir = tmp_path / "ir"
    shutil.copytree(stage_dir / "ir" / "sm_90a", ir)
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
