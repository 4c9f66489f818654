"""Served kernels inside torch.compile'd models on a GPU (docs/serving.md, "In torch.compile'd models"): tests/data/kernlib's
Python ops, unchanged, made torch custom ops with ``torch_ops.custom_op``, their ``kernel[grid](...)`` served from
tests/gpu/artifacts/served; a model calling them runs eagerly and compiled with ``fullgraph=True`` (``aot_eager``, and
CUDA-graph trees with ``cudagraphs``), equal to torch's results, new inputs at every call.

- with Triton blocked (this file run again as a script, as a deployed service): the stand-in serves kernlib; torch
  finds no Triton;
- with Triton installed (a process of its own): Triton's compile is refused, Dynamo never records a user-defined Triton
  kernel (no ``triton_kernel_wrapper`` op in the graph) and torch never lowers one to TTIR.
"""
from __future__ import annotations

import os
import sys
from typing import Any, Callable

import pytest

pytestmark = pytest.mark.gpu

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SERVED = os.path.join(HERE, "artifacts", "served")
CHECKS = ("fake", "eager", "aot_eager", "cudagraphs", "no-triton-for-torch")
WITH_TRITON = ("fake", "eager", "aot_eager", "cudagraphs", "no-triton-compile")


@pytest.mark.needs_sm(9, 0)
def test_kernlib_ops_as_custom_ops_compiled_with_triton_blocked() -> None:
    from blocked_run import assert_checks_pass  # here: the file itself runs again where tests/ is not on the path

    assert_checks_pass(__file__, CHECKS)


@pytest.mark.needs_sm(9, 0)
def test_kernlib_ops_as_custom_ops_compiled_with_triton_installed(tmp_path: str) -> None:
    pytest.importorskip("triton")
    from blocked_run import assert_checks_pass

    assert_checks_pass(__file__, WITH_TRITON, ["--with-triton"], {"TMLR_CACHE_DIR": str(tmp_path)}, blocked=False)


def _model(stand_in: bool) -> tuple[Callable[[Any], Any], Callable[[Any], Any]]:
    """kernlib's three ops as custom ops after serve(); the model over them and torch's own."""
    import torch

    import tmlr_runtime as tr
    from tmlr_runtime import torch_ops

    sys.path.insert(0, os.path.join(ROOT, "tests", "data"))
    tr.serve(SERVED, stand_in_triton=stand_in)
    from kernlib.ops import api  # annotated functions of tensors: custom_op takes them as they are

    doubled = torch_ops.custom_op("kernlib::doubled", api.doubled, mutates_args=())
    plus_one = torch_ops.custom_op("kernlib::plus_one", api.plus_one, mutates_args=())
    tripled = torch_ops.custom_op("kernlib::tripled", api.tripled, mutates_args=())

    def model(x: torch.Tensor) -> torch.Tensor:  # 1000 elements: plus_one's one program of next_power_of_2(n)
        return tripled(plus_one(doubled(x)) * 0.5)

    def reference(x: torch.Tensor) -> torch.Tensor:
        return (x * 2 + 1) * 0.5 * 3

    return model, reference


def _checks(model: Callable[[Any], Any], reference: Callable[[Any], Any], graphs: list[str]) -> list[str]:
    """The model's fake, eager and compiled runs against torch; the PASS line of each."""
    import torch

    with torch._subclasses.FakeTensorMode():  # a launch here would read a FakeTensor's address: TorchOpError
        out = model(torch.empty(1000, device="cuda"))
    assert isinstance(out, torch._subclasses.FakeTensor) and out.shape == (1000,) and out.device.type == "cuda"
    lines = ["PASS fake (derived on FakeTensors, no launch)"]

    def same(f: Callable[[Any], Any], calls: int = 1) -> None:
        for _ in range(calls):  # new values each call: a CUDA-graph replay that ran no kernel would fail here
            x = torch.randn(1000, device="cuda")
            torch.compiler.cudagraph_mark_step_begin()
            got = f(x).clone()
            torch.cuda.synchronize()
            assert torch.equal(got, reference(x)), (got - reference(x)).abs().max()

    same(model, 2)  # the autotune family benchmarks its configs at its first call, before any graph records
    lines.append("PASS eager")
    aot_eager = torch._dynamo.lookup_backend("aot_eager")

    def counting(gm: Any, example_inputs: Any) -> Any:
        graphs.append(str(gm.graph))
        return aot_eager(gm, example_inputs)

    torch._dynamo.reset()
    same(torch.compile(model, fullgraph=True, backend=counting), 3)
    ops = [op for op in ("kernlib.doubled", "kernlib.plus_one", "kernlib.tripled") if op in graphs[0]]
    assert len(graphs) == 1 and len(ops) == 3, graphs
    lines.append("PASS aot_eager (fullgraph: one graph holding the three ops)")
    torch._dynamo.reset()  # the same function again, with another backend
    same(torch.compile(model, fullgraph=True, backend="cudagraphs"), 5)
    lines.append("PASS cudagraphs (fullgraph, CUDA-graph trees: replays with new inputs)")
    return lines


def _main_blocked() -> None:
    assert sys.modules.get("triton", 0) is None, "run with Triton blocked"
    print("\n".join(_checks(*_model(stand_in=True), [])))
    from torch.utils._triton import has_triton, has_triton_package

    assert not has_triton_package() and not has_triton()
    print("PASS no-triton-for-torch")


def _main_with_triton() -> None:
    import torch._higher_order_ops.triton_kernel_wrap as wrap
    import triton
    import triton.compiler.compiler as compiler

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("Triton compiled a served kernel")

    ttir: list[object] = []  # torch lowering a user-defined Triton kernel to TTIR (Triton's front end) while tracing
    lower = wrap.generate_ttir
    wrap.generate_ttir = lambda *args, **kwargs: ttir.append(args) or lower(*args, **kwargs)
    triton.compile = compiler.compile = refuse
    graphs: list[str] = []
    print("\n".join(_checks(*_model(stand_in=False), graphs)))
    assert not ttir and "triton_kernel_wrapper" not in graphs[0], graphs
    print("PASS no-triton-compile (no compile, no TTIR, no triton_kernel_wrapper op)")


if __name__ == "__main__":
    if sys.argv[1:] == ["--with-triton"]:
        _main_with_triton()
    else:
        _main_blocked()
