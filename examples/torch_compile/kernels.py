"""Triton sources of the torch.compile example: the RMSNorm, fused residual-add + RMSNorm and SiLU-and-mul
kernels a transformer MLP layer launches (the shapes and semantics of vLLM's ``rms_norm``,
``fused_add_rms_norm`` and ``silu_and_mul``). Built on a CPU into ``artifacts/`` (see kernels.json);
``run_block.py`` launches them through ``tmlr_runtime.torch_ops`` with Triton blocked.

One program handles one row of up to ``BLOCK`` columns; arithmetic is in fp32.
"""
import triton
import triton.language as tl


@triton.jit
def rms_norm(x_ptr, w_ptr, out_ptr, x_stride, out_stride, n_cols, eps, BLOCK: tl.constexpr):
    # out = x / sqrt(mean(x^2) + eps) * w, row by row
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_stride + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    inv = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(out_ptr + row * out_stride + cols, (x * inv * w).to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def fused_add_rms_norm(x_ptr, residual_ptr, w_ptr, x_stride, residual_stride, n_cols, eps, BLOCK: tl.constexpr):
    # in place: residual = x + residual, then x = rms_norm(residual) * w
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_stride + cols, mask=mask, other=0.0).to(tl.float32)
    r = tl.load(residual_ptr + row * residual_stride + cols, mask=mask, other=0.0).to(tl.float32)
    r = (x + r).to(residual_ptr.dtype.element_ty)
    tl.store(residual_ptr + row * residual_stride + cols, r, mask=mask)
    r = r.to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    inv = tl.rsqrt(tl.sum(r * r, axis=0) / n_cols + eps)
    tl.store(x_ptr + row * x_stride + cols, (r * inv * w).to(x_ptr.dtype.element_ty), mask=mask)


@triton.jit
def silu_and_mul(x_ptr, out_ptr, x_stride, out_stride, d, BLOCK: tl.constexpr):
    # out[:, :d] = silu(x[:, :d]) * x[:, d:2d]; program (row, column block)
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < d
    a = tl.load(x_ptr + row * x_stride + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(x_ptr + row * x_stride + d + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + row * out_stride + cols, (a * tl.sigmoid(a) * b).to(out_ptr.dtype.element_ty), mask=mask)
