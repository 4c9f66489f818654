"""Constexprs that are Triton objects on a real GPU: the committed artifacts of tests/gpu/object_kernels.json (built on
a CPU; nothing is built here) launched with the dtype or @triton.jit function they were built with, against torch.

- ``test_objects_against_torch``: ``cast_fp16`` (DT = tl.float16) called with ``tl.float16``, ``torch.float16``, the
  text and DT left out writes x.to(torch.float16); ``cast_family`` (DT = tl.T over fp16 and bf16) picks its variant by
  the dtype passed; ``apply_relu`` (ACT = object_kernels:relu) called with the function object writes torch.relu(x);
  another dtype is a ConstexprMismatchError and launches nothing.
- ``test_objects_with_triton_blocked``: the same artifacts in a process where Triton cannot be imported (this file as a
  script), called with torch dtypes and the text; then served (``tmlr_runtime.serve(..., stand_in_triton=True)``):
  object_kernels' own ``cast[grid](...)`` / ``apply[grid](...)`` with the stand-in's ``tl.float16``, ``tl.bfloat16``,
  ``tl.constexpr(...)`` and its ``@triton.jit`` ``relu``.
"""
from __future__ import annotations

import os
import sys

import pytest

pytestmark = pytest.mark.gpu

HERE = os.path.dirname(os.path.abspath(__file__))
ARTIFACTS = os.path.join(HERE, "artifacts")
N = 100_003  # not a multiple of BLOCK: the last program is masked


def _load(name: str):
    import tmlr_runtime as tr

    return tr.Kernel.load(os.path.join(ARTIFACTS, name))


def _cast(torch, dtypes: dict) -> None:
    """``dtypes``: what a call passes for DT, by the torch dtype of the output."""
    import tmlr_runtime as tr

    x = torch.randn(N, device="cuda")
    grid = (N + 1023) // 1024
    for value in (dtypes[torch.float16], torch.float16, "fp16", "tl.float16", None):
        out = torch.zeros(N, device="cuda", dtype=torch.float16)
        k = _load("cast_fp16")
        k(grid, x, out, N) if value is None else k(grid, x, out, N, DT=value)
        torch.cuda.synchronize()
        assert torch.equal(out, x.to(torch.float16)), value
    family = _load("cast_family")
    for dtype in (torch.float16, torch.bfloat16):
        out = torch.zeros(N, device="cuda", dtype=dtype)
        family(grid, x, out, N, DT=dtypes[dtype])
        torch.cuda.synchronize()
        assert torch.equal(out, x.to(dtype)), dtype
    out = torch.full((N,), 7.0, device="cuda", dtype=torch.float16)
    with pytest.raises(tr.ConstexprMismatchError, match="compiled as tl.float16"):
        _load("cast_fp16")(grid, x, out, N, DT=torch.float32)
    torch.cuda.synchronize()
    assert torch.equal(out, torch.full_like(out, 7.0))  # nothing launched


def _apply(torch, act) -> None:
    x = torch.randn(N, device="cuda")
    out = torch.empty_like(x)
    _load("apply_relu")((N + 1023) // 1024, x, out, N, act)
    torch.cuda.synchronize()
    assert torch.equal(out, torch.relu(x))


@pytest.mark.needs_sm(9, 0)
def test_objects_against_torch() -> None:
    import torch
    import triton.language as tl

    sys.path.insert(0, HERE)
    import object_kernels

    _cast(torch, {torch.float16: tl.float16, torch.bfloat16: tl.bfloat16})
    _apply(torch, object_kernels.relu)


@pytest.mark.needs_sm(9, 0)
def test_objects_with_triton_blocked() -> None:
    from blocked_run import assert_checks_pass  # here: the file itself runs again where tests/ is not on the path

    assert_checks_pass(__file__, ("cast", "apply", "served"))


def _served(torch) -> None:
    """The model's launches under serve, Triton blocked: the stand-in's objects are taken as Triton's (issue 30)."""
    import tmlr_runtime as tr

    server = tr.serve(ARTIFACTS, stand_in_triton=True)
    sys.path.insert(0, HERE)
    import object_kernels as ok  # its `import triton` gets the stand-in

    tl, grid = ok.tl, ((N + 1023) // 1024,)
    x = torch.randn(N, device="cuda")
    for dt, want in ((tl.float16, torch.float16), (tl.bfloat16, torch.bfloat16), (tl.constexpr(tl.bfloat16), torch.bfloat16)):
        out = torch.zeros(N, device="cuda", dtype=want)
        ok.cast[grid](x, out, N, DT=dt, BLOCK=1024)
        torch.cuda.synchronize()
        assert torch.equal(out, x.to(want)), dt
    out = torch.empty_like(x)
    ok.apply[grid](x, out, N, ACT=ok.relu, BLOCK=tl.constexpr(1024))
    torch.cuda.synchronize()
    assert torch.equal(out, torch.relu(x))
    server.close()


def _main() -> None:
    assert sys.modules.get("triton", 0) is None, "run with Triton blocked"
    import torch

    torch.cuda.init()
    _cast(torch, {torch.float16: torch.float16, torch.bfloat16: torch.bfloat16})
    print("PASS cast (DT as torch.float16, 'fp16', 'tl.float16' or left out; a family by torch.bfloat16; equal torch's)")
    _apply(torch, "object_kernels:relu")
    print("PASS apply (ACT as 'object_kernels:relu': equal torch.relu)")
    _served(torch)
    print("PASS served (object_kernels' launches under serve's stand-in: tl.float16, tl.bfloat16, tl.constexpr(...), relu)")


if __name__ == "__main__":
    _main()
