"""The library's Python ops, launching its kernels as model code does (Triton's launch syntax, triton.cdiv, a grid
function of the autotuned meta-parameters): tests/gpu/test_serving_gpu.py and tests/runtime/test_serving.py serve
them from tests/gpu/artifacts/served. Not imported by the package's __init__."""
import torch
import triton

from .heur import heur_scale
from .plain import scale
from .tuned import tuned_scale


def doubled(x: torch.Tensor) -> torch.Tensor:
    """``x * 2``."""
    out = torch.empty_like(x)
    n = x.numel()
    scale[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
    return out


def plus_one(x: torch.Tensor) -> torch.Tensor:
    """``x + 1`` in one program of ``next_power_of_2(n)`` elements (its @triton.heuristics): n up to 1024."""
    out = torch.empty_like(x)
    heur_scale[(1,)](x, out, x.numel())
    return out


def tripled(x: torch.Tensor) -> torch.Tensor:
    """``x * 3`` with the block its @triton.autotune chooses."""
    out = torch.empty_like(x)
    n = x.numel()
    tuned_scale[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, n)
    return out
