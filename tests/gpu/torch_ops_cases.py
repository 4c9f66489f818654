"""GPU cases of tmlr_runtime.torch_ops, one per torch mode; tests/gpu/test_torch_ops_gpu.py runs each in its own
process (Triton blocked unless the mode needs Inductor):

    python tests/gpu/torch_ops_cases.py CASE       (prints one line: PASS CASE ...; exits 1 on a mismatch)

The ops launch the committed ``add`` artifact (examples/artifacts/add, fp32) and the ``add`` family
(tests/gpu/artifacts/add_family, fp32/fp16/bf16, autotuned): ``tmlr_gpu::add`` returns x + y,
``tmlr_gpu::add_`` writes x += y in place, ``tmlr_gpu::add_family`` dispatches on dtype and alignment.
Each launch function counts its real runs, so a CUDA-graph replay (which runs no Python) shows.
"""
from __future__ import annotations

import os
import sys
from typing import Callable

import torch

import tmlr_runtime as tr
from tmlr_runtime import torch_ops

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ADD = torch_ops.wrap(tr.Kernel.load(os.path.join(ROOT, "examples", "artifacts", "add")))
FAMILY = torch_ops.wrap(tr.Kernel.load(os.path.join(ROOT, "tests", "gpu", "artifacts", "add_family")))
RUNS = {"add": 0, "add_": 0}  # real (not fake) runs of each launch function


def blocks(n: int, block: int = 1024) -> int:
    return (n + block - 1) // block


@torch_ops.custom_op("tmlr_gpu::add", mutates_args=())
def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    ADD[(blocks(x.numel()),)](x, y, out, x.numel())
    RUNS["add"] += not isinstance(x, torch._subclasses.FakeTensor)
    return out


@torch_ops.custom_op("tmlr_gpu::add_", mutates_args=("x",))
def add_(x: torch.Tensor, y: torch.Tensor) -> None:
    ADD[(blocks(x.numel()),)](x, y, x, x.numel())  # in place
    RUNS["add_"] += not isinstance(x, torch._subclasses.FakeTensor)


@torch_ops.custom_op("tmlr_gpu::add_family", mutates_args=())
def add_family(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    FAMILY[lambda meta: (blocks(x.numel(), meta["BLOCK"]),)](x, y, out, x.numel())
    return out


def layer(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Out-of-place and in-place tmlr ops between torch ops (the in-place one writes an intermediate)."""
    h = add(x * 2, y)
    add_(h, y)
    return torch.relu(h) - 1


def layer_ref(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return torch.relu(x * 2 + y + y) - 1


def mutate_input(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """In place on a graph input: x += y, then a new tensor from it."""
    add_(x, y)
    return add(x, y)


def inputs(n: int = 100_000, dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(n, device="cuda", dtype=dtype), torch.randn(n, device="cuda", dtype=dtype)


def check_layer(f: Callable[..., torch.Tensor], calls: int = 5) -> None:
    for _ in range(calls):  # new values each call: a replay that did not run the kernels would fail here
        x, y = inputs()
        torch.compiler.cudagraph_mark_step_begin()  # a new step for CUDA-graph trees (a no-op elsewhere)
        got = f(x, y).clone()
        torch.cuda.synchronize()
        if not torch.equal(got, layer_ref(x, y)):
            raise SystemExit(f"FAIL layer: max error {(got - layer_ref(x, y)).abs().max().item():.3g}")


def check_mutation(f: Callable[..., torch.Tensor]) -> None:
    x, y = inputs()
    x0 = x.clone()
    got = f(x, y)
    torch.cuda.synchronize()
    if not (torch.equal(x, x0 + y) and torch.equal(got, x0 + y + y)):
        raise SystemExit("FAIL in-place add_ on an input: x is not x + y")


def check_family(f: Callable[..., torch.Tensor]) -> None:
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        x, y = inputs(4099, dtype)
        got = f(x, y)
        torch.cuda.synchronize()
        if not torch.equal(got, x + y):
            raise SystemExit(f"FAIL add_family {dtype}")


def case_eager() -> str:
    check_layer(layer)
    check_mutation(mutate_input)
    check_family(add_family)
    for op in (add, add_, add_family):  # the mutation annotations and fakes agree with what the kernels do
        torch.library.opcheck(op, inputs(4096), test_utils=("test_schema", "test_faketensor"))
    return f"launch functions ran {RUNS['add']} + {RUNS['add_']} times; opcheck passed"


def compiled_case(**options: object) -> str:
    check_layer(torch.compile(layer, fullgraph=True, **options))
    check_mutation(torch.compile(mutate_input, fullgraph=True, **options))
    check_family(torch.compile(lambda x, y: add_family(x, y), fullgraph=True, **options))
    return f"launch functions ran {RUNS['add']} + {RUNS['add_']} times"


def graph_case(**options: object) -> str:
    """CUDA-graph trees: 5 calls are a warm-up, a recording and replays, which run no Python."""
    from torch._dynamo.utils import counters

    check_layer(torch.compile(layer, fullgraph=True, **options), calls=5)
    skips = counters["inductor"]["cudagraph_skips"]
    if skips or RUNS["add"] >= 5:
        raise SystemExit(f"FAIL CUDA graphs not replayed: {skips} skips, launch function ran {RUNS['add']} times in 5 calls")
    return f"5 calls, launch function ran {RUNS['add']} times (the rest were graph replays)"


def case_export() -> str:
    class M(torch.nn.Module):
        def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            return layer(x, y)

    x, y = inputs()
    ep = torch.export.export(M(), (x, y))
    if not all(f"tmlr_gpu.{op}.default" in str(ep.graph) for op in ("add", "add_")):
        raise SystemExit(f"FAIL the exported graph lost the op:\n{ep.graph}")
    check_layer(ep.module())
    return "exported graph keeps tmlr_gpu::add and tmlr_gpu::add_"


CASES: dict[str, Callable[[], str]] = {
    "eager": case_eager,
    "aot_eager": lambda: compiled_case(backend="aot_eager"),
    "cudagraphs": lambda: graph_case(backend="cudagraphs"),
    "export": case_export,
    "inductor": lambda: compiled_case(),  # Inductor needs Triton for any graph on a CUDA device
    "reduce_overhead": lambda: graph_case(mode="reduce-overhead"),
}


if __name__ == "__main__":
    case = sys.argv[1]
    detail = CASES[case]()
    print(f"PASS {case} (triton {'blocked' if sys.modules.get('triton', 0) is None else 'importable'}): {detail}")
