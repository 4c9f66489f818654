"""A Triton cache entry, written by Triton's JIT launching a kernel with constexprs, imported by tmlr-build with
the constexprs given back, and launched by tmlr_runtime with the very call the Triton kernel takes.

Needs Triton (it writes the cache entry, in a process of its own) as well as the GPU; the launch in this
process is tmlr_runtime's. Run on the GPU machine: ``python -m pytest -m gpu tests/gpu/test_cache_entry_gpu.py``.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")

import tmlr_runtime as tr  # noqa: E402
from tmlr_build.cli import run  # noqa: E402
from tmlr_build.common.triton_check import release_in_range  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.needs_sm(9, 0)]

KERNEL = Path(__file__).resolve().parent / "scale_add.py"
NAMES = "x_ptr,y_ptr,out_ptr,n_elements,alpha,BLOCK,USE_ALPHA"
# Triton's JIT compiles and launches scale_add as a user's program does; its cache entry is what we import
JIT_LAUNCH = textwrap.dedent("""
    import importlib.util, sys
    import torch, triton
    spec = importlib.util.spec_from_file_location("scale_add", sys.argv[1])
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    n = 100_003  # not a multiple of 16: Triton's JIT specializes it as i32, so any n may be passed
    x, y = torch.ones(n, device="cuda"), torch.ones(n, device="cuda")
    out = torch.empty_like(x)
    mod.scale_add[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, out, n, 2.0, BLOCK=256, USE_ALPHA=True)
    torch.cuda.synchronize()
    assert torch.equal(out, x * 2.0 + y)
""")


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> str:
    d = tmp_path_factory.mktemp("cache-entry-gpu")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRITON_")}
    env["TRITON_CACHE_DIR"] = str(d / "cache")
    subprocess.run([sys.executable, "-c", JIT_LAUNCH, str(KERNEL)], env=env, check=True)
    entry = next((d / "cache").rglob("scale_add.cubin")).parent
    names = [] if release_in_range(triton.__version__, ">=3.5") else ["--arg-names", NAMES]  # 3.5+: the IR's names
    run([str(entry), "-o", str(d / "out"), "-q", "--constexpr", "BLOCK=256", "--constexpr", "USE_ALPHA=True", *names])
    return str(d / "out" / "scale_add")


def test_an_imported_cache_entry_is_called_as_its_triton_kernel(imported: str) -> None:
    k = tr.Kernel.load(imported)
    assert [p.name for p in k.signature] == NAMES.split(",")
    n = 100_003  # as the JIT's call
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    grid = lambda meta: ((n + meta["BLOCK"] - 1) // meta["BLOCK"],)  # noqa: E731
    k[grid](x, y, out, n, 2.0, BLOCK=256, USE_ALPHA=True)  # the call scale_add[grid](...) takes
    torch.cuda.synchronize()
    torch.testing.assert_close(out, x * 2.0 + y)
    out.zero_()
    k[grid](x, y, out, 4001, 0.5, 256, True)  # another n, constexprs by position
    torch.cuda.synchronize()
    torch.testing.assert_close(out[:4001], x[:4001] * 0.5 + y[:4001])
    k[grid](x, y, out, n, 0.5, 256, True)
    torch.cuda.synchronize()
    torch.testing.assert_close(out, x * 0.5 + y)
    with pytest.raises(tr.ConstexprMismatchError, match="BLOCK"):
        k[grid](x, y, out, n, 2.0, BLOCK=128, USE_ALPHA=True)
