"""Triton source of the GPU-test kernels that take tuple and NamedTuple parameters (tests/gpu/test_tuples_gpu.py).

Built on a CPU with ``tmlr-build --spec tests/gpu/tuple_kernels.json -o tests/gpu/artifacts`` and committed, so the
GPU tests need no Triton.
"""
import triton
import triton.language as tl

# the device-side descriptor constructor: tl.make_tensor_descriptor from Triton 3.4, experimental before
make_descriptor = getattr(tl, "make_tensor_descriptor", None) or tl._experimental_make_tensor_descriptor


@triton.jit
def tuple_add(ptrs, n, BLOCK: tl.constexpr):
    # ptrs = (x, y, out): out = x + y
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(ptrs[0] + offs, mask=mask)
    y = tl.load(ptrs[1] + offs, mask=mask)
    tl.store(ptrs[2] + offs, x + y, mask=mask)


@triton.jit
def tuple_nested(io, coef, n, BLOCK: tl.constexpr):
    # io = ((x, None or bias), (out, K)), coef = (a, B): out = (x + bias) * a * K + B
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(io[0][0] + offs, mask=mask)
    if io[0][1] is not None:
        x += tl.load(io[0][1] + offs, mask=mask)
    tl.store(io[1][0] + offs, x * coef[0] * io[1][1] + coef[1], mask=mask)


@triton.jit
def record_scale(src, dst, alpha, BM: tl.constexpr, BN: tl.constexpr):
    # src, dst: NamedTuples Tensor(ptr, shape, stride) of 2-D matrices: dst = alpha * src, element by element
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    mask = (rm[:, None] < src.shape[0]) & (rn[None, :] < src.shape[1])
    v = tl.load(src.ptr + rm[:, None] * src.stride[0] + rn[None, :] * src.stride[1], mask=mask)
    tl.store(dst.ptr + rm[:, None] * dst.stride[0] + rn[None, :] * dst.stride[1], v * alpha, mask=mask)


@triton.jit
def tuple_descriptor_copy(src_ptr, dst_ptr, shape, strides, BM: tl.constexpr, BN: tl.constexpr):
    # shape = (M, N), strides = (N, 1): the tuples go straight into the device-side descriptors
    src = make_descriptor(src_ptr, shape=shape, strides=strides, block_shape=[BM, BN])
    dst = make_descriptor(dst_ptr, shape=shape, strides=strides, block_shape=[BM, BN])
    om = tl.program_id(0) * BM
    on = tl.program_id(1) * BN
    dst.store([om, on], src.load([om, on]) * 2)
