"""Model code as a service runs it (tests/runtime/test_serving.py): a Python op over examples/kernels/vector_add.py's
``add``, what such code touches of Triton at import time and in its wrapper, and a kernel no artifact serves."""
import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice  # noqa: F401  (imported at module level, as libraries do)

from vector_add import add

DTYPES = {torch.float32: tl.float32, torch.float16: tl.float16}


@triton.jit
def _twice(x):  # a device function: never launched on its own
    return x * 2


@triton.jit
def unrecorded(x_ptr, n, BLOCK: tl.constexpr):
    pass


add_heuristic = triton.heuristics({"BLOCK": lambda args: min(triton.next_power_of_2(args["n"]), 1024)})(add)
add_tuned = triton.autotune(configs=[triton.Config({"BLOCK": 256}, num_warps=2), triton.Config({"BLOCK": 1024}, num_warps=4)],
                            key=["n"])(add)


def add_op(x: torch.Tensor, y: torch.Tensor, kernel: object = add) -> torch.Tensor:
    """``x + y`` for fp32 tensors, launched as model code launches: a grid function of the meta-parameters."""
    assert DTYPES[x.dtype] == tl.float32 and str(tl.float32) == "fp32"
    out = torch.empty_like(x)
    n = x.numel()
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)  # noqa: E731
    if kernel is add:
        add[grid](x, y, out, n, BLOCK=1024)
    else:
        kernel[grid](x, y, out, n)
    return out
