"""Calls Triton's own launcher takes, on a real GPU (issue 29; the CPU tests: tests/runtime/test_runtime_triton_calls.py):
``num_warps=`` equal to the artifact's beside the arguments (another value refused); an empty grid, which launches
nothing (an object with only ``data_ptr()`` and ``dtype``: tests/gpu/test_runtime_gpu_inputs.py). Uses
``examples/artifacts/add`` (sm_80 and sm_90a cubins, num_warps 4): ``python -m pytest -m gpu tests/gpu/test_triton_calls_gpu.py``."""
from __future__ import annotations

import os
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import tmlr_runtime as tr  # noqa: E402

pytestmark = pytest.mark.gpu

ADD = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "examples", "artifacts", "add")
N = 100_000
GRID = (N + 1023) // 1024


@pytest.fixture
def vectors() -> tuple[Any, Any, Any]:
    x = torch.randn(N, device="cuda")
    return x, torch.randn(N, device="cuda"), torch.zeros_like(x)


def test_num_warps_equal_to_the_build_is_taken_and_another_refused(vectors) -> None:
    x, y, out = vectors
    k = tr.Kernel.load(ADD)
    assert k.variant.num_warps == 4
    k[GRID](x, y, out, N, num_warps=4, num_stages=3, BLOCK=1024)
    torch.cuda.synchronize()
    assert torch.equal(out, x + y)
    out.zero_()
    with pytest.raises(tr.LaunchOptionMismatchError, match="built with num_warps=4, called with num_warps=8"):
        k[GRID](x, y, out, N, num_warps=8)
    torch.cuda.synchronize()
    assert not out.any()


@pytest.mark.parametrize("grid", [0, (0,), (GRID, 0), lambda meta: ((meta["n"] * 0 + 1023) // meta["BLOCK"],)],
                         ids=["0", "(0,)", "(GRID, 0)", "callable"])
def test_an_empty_grid_launches_nothing(vectors, grid) -> None:
    """As triton.cdiv(0, BLOCK) in a Triton call: the arguments are checked, nothing runs, nothing fails later."""
    x, y, out = vectors
    k = tr.Kernel.load(ADD)
    k(grid, x, y, out, N)
    with pytest.raises(tr.PointerArgumentError):
        k(grid, x[1:], y, out, N)  # still checked
    torch.cuda.synchronize()
    assert not out.any()
    k(GRID, x, y, out, N)  # and the next launch runs
    torch.cuda.synchronize()
    assert torch.equal(out, x + y)
