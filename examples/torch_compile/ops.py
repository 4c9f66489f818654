"""The example's torch ops, each one decorated launch function over a committed tmlr family (fp16, bf16):

- ``tmlr_example::rms_norm(x, weight, eps) -> Tensor``
- ``tmlr_example::fused_add_rms_norm(x, residual, weight, eps) -> ()``: in place, residual += x then
  x = rms_norm(residual) * weight (it mutates both, and says so in ``mutates_args``)
- ``tmlr_example::silu_and_mul(x) -> Tensor``: silu(x[..., :d]) * x[..., d:]

and the same three in plain torch (``*_ref``), which the run script compares them with. Loading the
families needs a CUDA device (sm_90); nothing here imports Triton.
"""
from __future__ import annotations

import os

import torch

import tmlr_runtime as tr
from tmlr_runtime import torch_ops

ARTIFACTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "artifacts")
BLOCK = 1024  # the kernels' constexpr (kernels.json): a norm row holds at most BLOCK columns


def _load(name: str) -> torch_ops.OpKernel:
    return torch_ops.wrap(tr.Kernel.load(os.path.join(ARTIFACTS, name)))


_rms_norm, _fused_add_rms_norm, _silu_and_mul = (_load(n) for n in ("rms_norm", "fused_add_rms_norm", "silu_and_mul"))


def _rows(x: torch.Tensor, cols: int) -> int:
    # The kernels read rows of contiguous columns; runs on FakeTensors too (shapes only).
    if not x.is_contiguous() or x.dtype not in (torch.float16, torch.bfloat16):
        raise ValueError(f"expected a contiguous fp16 or bf16 tensor, got {x.dtype} with strides {x.stride()}")
    return x.numel() // cols


def _norm_cols(x: torch.Tensor) -> int:
    cols = x.shape[-1]
    if cols > BLOCK:
        raise ValueError(f"rows of {cols} columns: the kernels were built for at most {BLOCK} (BLOCK in kernels.json)")
    return cols


@torch_ops.custom_op("tmlr_example::rms_norm", mutates_args=())
def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    cols = _norm_cols(x)
    out = torch.empty_like(x)
    _rms_norm[(_rows(x, cols),)](x, weight, out, cols, cols, cols, eps)
    return out


@torch_ops.custom_op("tmlr_example::fused_add_rms_norm", mutates_args=("x", "residual"))
def fused_add_rms_norm(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float) -> None:
    cols = _norm_cols(x)
    if residual.shape != x.shape:
        raise ValueError(f"residual {tuple(residual.shape)} and x {tuple(x.shape)} differ in shape")
    _rows(residual, cols)
    _fused_add_rms_norm[(_rows(x, cols),)](x, residual, weight, cols, cols, cols, eps)


@torch_ops.custom_op("tmlr_example::silu_and_mul", mutates_args=())
def silu_and_mul(x: torch.Tensor) -> torch.Tensor:
    d = x.shape[-1] // 2
    out = x.new_empty((*x.shape[:-1], d))
    _silu_and_mul[(_rows(x, 2 * d), (d + BLOCK - 1) // BLOCK)](x, out, 2 * d, d, d)
    return out


def rms_norm_ref(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(x.dtype)


def silu_and_mul_ref(x: torch.Tensor) -> torch.Tensor:
    a, b = x.float().chunk(2, dim=-1)
    return (torch.nn.functional.silu(a) * b).to(x.dtype)
