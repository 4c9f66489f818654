"""Triton sources of the torch.compile example: the RMSNorm, fused residual-add + RMSNorm and SiLU-and-mul
kernels a transformer MLP layer launches (the shapes and semantics of vLLM's ``rms_norm``,
``fused_add_rms_norm`` and ``silu_and_mul``). Built on a CPU into ``artifacts/`` (see kernels.json);
``run_block.py`` launches them through ``tmlr_runtime.torch_ops`` with Triton blocked.

One program handles one row of up to ``BLOCK`` columns; arithmetic is in fp32.
"""
import triton
import triton.language as tl


@triton.jit
def _normalized(x, w_ptr, cols, mask, n_cols, eps):
    # x / sqrt(mean(x^2) + eps) * w for one row held in fp32 (masked columns are 0)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    return x * tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps) * w


@triton.jit
def rms_norm(x_ptr, w_ptr, out_ptr, x_stride, out_stride, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_stride + cols, mask=mask, other=0.0).to(tl.float32)
    y = _normalized(x, w_ptr, cols, mask, n_cols, eps)
    tl.store(out_ptr + row * out_stride + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def fused_add_rms_norm(x_ptr, residual_ptr, w_ptr, x_stride, residual_stride, n_cols, eps, BLOCK: tl.constexpr):
    # in place: residual = x + residual (rounded to its dtype), then x = rms_norm(residual) * w
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x_row, r_row = x_ptr + row * x_stride + cols, residual_ptr + row * residual_stride + cols
    r = tl.load(x_row, mask=mask, other=0.0).to(tl.float32) + tl.load(r_row, mask=mask, other=0.0).to(tl.float32)
    r = r.to(residual_ptr.dtype.element_ty)
    tl.store(r_row, r, mask=mask)
    y = _normalized(r.to(tl.float32), w_ptr, cols, mask, n_cols, eps)
    tl.store(x_row, y.to(x_ptr.dtype.element_ty), mask=mask)


@triton.jit
def silu_and_mul(x_ptr, out_ptr, x_stride, out_stride, d, BLOCK: tl.constexpr):
    # out[:, :d] = silu(x[:, :d]) * x[:, d:2d]; program (row, column block)
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < d
    a = tl.load(x_ptr + row * x_stride + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(x_ptr + row * x_stride + d + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + row * out_stride + cols, (a * tl.sigmoid(a) * b).to(out_ptr.dtype.element_ty), mask=mask)
