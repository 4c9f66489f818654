"""Triton source of the GPU-test kernels whose constexprs are Triton objects: a dtype (``DT``) and a @triton.jit
function (``ACT``) (tests/gpu/test_objects_gpu.py).

Built on a CPU with ``tmlr-build --spec tests/gpu/object_kernels.json -o tests/gpu/artifacts`` and committed, so the
GPU tests need no Triton.
"""
import triton
import triton.language as tl


@triton.jit
def relu(x):
    return tl.maximum(x, 0.0)


@triton.jit
def cast(x_ptr, out_ptr, n, DT: tl.constexpr, BLOCK: tl.constexpr):
    # out = x converted to DT (out_ptr points to DT)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x.to(DT), mask=mask)


@triton.jit
def apply(x_ptr, out_ptr, n, ACT: tl.constexpr, BLOCK: tl.constexpr):
    # out = ACT(x), ACT a @triton.jit function of one value
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, ACT(x), mask=mask)
