"""The unchanged model code served on a GPU (docs/serving.md): tests/data/kernlib's Python ops (kernlib/ops/api.py: a
plain kernel, a @triton.heuristics kernel and an @triton.autotune one, launched with Triton's syntax) run from
tests/gpu/artifacts/served (built by tests/gpu/served_kernels.json) after one ``tmlr_runtime.serve`` call, and equal
torch's results.

- with Triton blocked (this file run again as a script, as a deployed service without Triton): the stand-in lets
  kernlib import ``triton``, its package ``__init__`` ask the driver for the target, and the ops launch; torch's own
  probe still finds no Triton;
- with Triton installed (a process of its own): no launch reaches Triton's compile, and a launch no artifact serves
  is the typed error.
"""
from __future__ import annotations

import os
import sys

import pytest

pytestmark = pytest.mark.gpu

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SERVED = os.path.join(HERE, "artifacts", "served")
CHECKS = ("doubled", "plus_one", "tripled", "no-triton-for-torch")
WITH_TRITON = ("no-compile", "unserved")


@pytest.mark.needs_sm(9, 0)
def test_kernlib_ops_served_with_triton_blocked() -> None:
    from blocked_run import assert_checks_pass  # here: the file itself runs again where tests/ is not on the path

    assert_checks_pass(__file__, CHECKS)


@pytest.mark.needs_sm(9, 0)
def test_kernlib_ops_served_with_triton_installed_never_compile(tmp_path: str) -> None:
    pytest.importorskip("triton")
    from blocked_run import assert_checks_pass

    assert_checks_pass(__file__, WITH_TRITON, ["--with-triton"], {"TMLR_CACHE_DIR": str(tmp_path)}, blocked=False)


def _ops(**serve: object) -> tuple[object, object]:
    import tmlr_runtime as tr

    sys.path.insert(0, os.path.join(ROOT, "tests", "data"))
    server = tr.serve(SERVED, **serve)
    from kernlib.ops import api

    return server, api


def _check_ops(api: object) -> list[str]:
    """Each op against torch; the PASS line of each."""
    import torch

    x = torch.randn(5000, device="cuda")
    assert torch.equal(api.doubled(x), x * 2)  # type: ignore[attr-defined]
    small = x[:1000].clone()
    assert torch.equal(api.plus_one(small), small + 1)  # type: ignore[attr-defined]
    assert torch.equal(api.tripled(x), x * 3)  # type: ignore[attr-defined]
    torch.cuda.synchronize()
    return ["PASS doubled (scale, BLOCK 1024, a triton.cdiv grid)",
            "PASS plus_one (the heuristics family: BLOCK = next_power_of_2(1000))",
            "PASS tripled (the autotune family, a grid function of its BLOCK)"]


def _main_blocked() -> None:
    assert sys.modules.get("triton", 0) is None, "run with Triton blocked"
    _, api = _ops(stand_in_triton=True)
    print("\n".join(_check_ops(api)))
    from torch.utils._triton import has_triton, has_triton_package

    assert not has_triton_package() and not has_triton()
    print("PASS no-triton-for-torch")


def _main_with_triton() -> None:
    import torch
    import triton
    import triton.compiler.compiler as compiler

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("Triton compiled a served kernel")

    triton.compile = compiler.compile = refuse
    import tmlr_runtime as tr

    _, api = _ops()
    _check_ops(api)
    print("PASS no-compile (the three ops equal torch's results)")
    try:
        api.doubled(torch.randn(100, device="cuda", dtype=torch.float16))  # type: ignore[attr-defined]
    except tr.UnservedKernelError as e:
        assert e.kernel == "kernlib.ops.plain:scale" and "x_ptr=*fp16:16" in e.specialization, str(e)
        print("PASS unserved")


if __name__ == "__main__":
    if sys.argv[1:] == ["--with-triton"]:
        _main_with_triton()
    else:
        _main_blocked()
