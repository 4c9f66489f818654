"""The compiled launch path on a real GPU.

Where the extension is built (``pip install``, or ``python3 setup.py build_ext --inplace`` for a checkout on
PYTHONPATH) and ``TMLR_PURE_PYTHON`` is not set, every kernel a GPU test loads launches through it: the
other GPU tests (threads, streams, graph capture, scratch, families, CuPy, bad inputs) exercise it, and
tests/gpu_all.sh runs them again with ``TMLR_PURE_PYTHON=1``. This file checks that the path really is
the compiled one there, and runs each kind of call through it against torch results.
Run: ``python -m pytest -m gpu tests/gpu/test_compiled_gpu.py``.
"""
from __future__ import annotations

import os

import pytest

torch = pytest.importorskip("torch")

import tmlr_runtime as tr  # noqa: E402
from tmlr_runtime import driver  # noqa: E402
from tmlr_runtime.launch import compiled  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(os.environ.get("TMLR_PURE_PYTHON", "") not in ("", "0"),
                                                  reason="TMLR_PURE_PYTHON is set: the Python path runs")]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ADD = os.path.join(ROOT, "examples", "artifacts", "add")
FAMILY = os.path.join(ROOT, "tests", "gpu", "artifacts", "add_family")


@pytest.fixture
def vectors():
    n = 100_000
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    return x, y, torch.empty_like(x), n


def test_the_compiled_path_is_active():
    assert compiled.fastlaunch is not None, compiled.describe()  # build it: python3 setup.py build_ext --inplace
    fns = compiled.entry_points(driver.api())
    assert fns is not None and all(fns), fns  # cuCtxGetCurrent, cuLaunchKernel(Ex), cuMemAllocAsync, cuMemFreeAsync
    k = tr.Kernel.load(ADD)
    assert k._compiled is not None


@pytest.mark.parametrize("checks", [True, False])
def test_calls_through_the_compiled_path(vectors, checks):
    x, y, out, n = vectors
    k = tr.Kernel.load(ADD, checks=checks)
    assert k._compiled is not None
    stream = torch.cuda.Stream()
    calls = [
        lambda: k((n + 1023) // 1024, x, y, out, n),  # int grid, torch's current stream
        lambda: k(((n + 1023) // 1024,), x, y, out, n, stream=stream),  # tuple grid, a torch stream
        lambda: k(((n + 1023) // 1024, 1, 1), x, y, out, n, stream=stream.cuda_stream),  # an int handle
        lambda: k[lambda meta: ((meta["n"] + meta["BLOCK"] - 1) // meta["BLOCK"],)](x, y, out, n, BLOCK=1024),  # callable grid, keyword
        lambda: k((n + 1023) // 1024, x, y, out.data_ptr(), n),  # an int address
    ]
    for call in calls:
        out.zero_()
        torch.cuda.synchronize()
        call()
        torch.cuda.synchronize()
        assert torch.equal(out, x + y)


def test_cupy_arrays_through_the_compiled_path():
    cupy = pytest.importorskip("cupy")
    n = 4096
    x, y = cupy.arange(n, dtype=cupy.float32), cupy.ones(n, dtype=cupy.float32)
    out = cupy.zeros(n, dtype=cupy.float32)
    k = tr.Kernel.load(ADD)
    k(n // 1024, x, y, out, n, stream=cupy.cuda.get_current_stream())
    cupy.cuda.get_current_stream().synchronize()
    assert bool((out == x + y).all())


def test_graph_capture_through_the_compiled_path(vectors):
    x, y, out, n = vectors
    k = tr.Kernel.load(ADD)
    k((n + 1023) // 1024, x, y, out, n)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(3):
            k((n + 1023) // 1024, x, y, out, n)
    out.zero_()
    x.copy_(torch.randn_like(x))
    g.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, x + y)


def test_a_refused_call_launches_nothing(vectors):
    x, y, out, n = vectors
    k = tr.Kernel.load(ADD)
    out.fill_(7)
    with pytest.raises(tr.PointerArgumentError, match="float16"):
        k((n + 1023) // 1024, x.half(), y, out, n)
    with pytest.raises(tr.PointerArgumentError, match="not 16-byte aligned"):
        k((n + 1023) // 1024, x[1:], y, out, n - 1)
    with pytest.raises(tr.ScalarArgumentError, match="must be in"):
        k((n + 1023) // 1024, x, y, out, 2**31)
    torch.cuda.synchronize()
    assert bool((out == 7).all())


def test_a_family_dispatches_from_compiled_code(tmp_path, monkeypatch):
    monkeypatch.setenv("TMLR_CACHE_DIR", str(tmp_path))
    family = tr.Kernel.load(FAMILY, tuning="table", fallback="default")
    assert family._fast_call is not None
    n = 1 << 20
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    for _ in range(3):  # the first call chooses and memoizes; the others dispatch from C
        out.zero_()
        family(lambda meta: ((n + meta["BLOCK"] - 1) // meta["BLOCK"],), x, y, out, n)
        torch.cuda.synchronize()
        assert torch.equal(out, x + y)
    block = family.choose(x, y, out, n).constexprs.get("BLOCK", 1024)
    out.zero_()
    family((n + block - 1) // block, x, y, out, n)
    torch.cuda.synchronize()
    assert torch.equal(out, x + y) and len(family._fast) == 1
