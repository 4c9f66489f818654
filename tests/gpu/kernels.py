"""Triton source of the kernels the runtime's GPU tests launch.

Their artifacts are built on a CPU with tmlr-build (``tests/gpu/build.sh``) and committed under
``tests/gpu/artifacts/``, so the GPU tests need no Triton.
"""
import triton
import triton.language as tl


@triton.jit
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@triton.jit
def scalars(ints_ptr, floats_ptr, b, i8, i16, i32, i64, u32, u64, h, bh, f, d):
    # Each scalar lands in an output slot so the host can compare what the kernel saw.
    tl.store(ints_ptr + 0, b.to(tl.int64))
    tl.store(ints_ptr + 1, i8.to(tl.int64))
    tl.store(ints_ptr + 2, i16.to(tl.int64))
    tl.store(ints_ptr + 3, i32.to(tl.int64))
    tl.store(ints_ptr + 4, i64)
    tl.store(ints_ptr + 5, u32.to(tl.int64))
    tl.store(ints_ptr + 6, u64.to(tl.int64, bitcast=True))
    tl.store(floats_ptr + 0, h.to(tl.float64))
    tl.store(floats_ptr + 1, bh.to(tl.float64))
    tl.store(floats_ptr + 2, f.to(tl.float64))
    tl.store(floats_ptr + 3, d)


@triton.jit
def matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
           BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = a_ptr + rm[:, None] * stride_am + rk[None, :]
    b = b_ptr + rk[:, None] * stride_bk + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        acc += tl.dot(tl.load(a), tl.load(b))
        a += BK
        b += BK * stride_bk
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc.to(tl.float16))


@triton.jit
def tma_device_copy(src_ptr, dst_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    # Builds TMA descriptors on the device: needs global scratch.
    src = tl._experimental_make_tensor_descriptor(src_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    dst = tl._experimental_make_tensor_descriptor(dst_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    om = tl.program_id(0) * BM
    on = tl.program_id(1) * BN
    v = src.load([om, on])
    dst.store([om, on], v * 2)


@triton.jit
def tma_host_copy(src_desc, dst_ptr, N, BM: tl.constexpr, BN: tl.constexpr):
    # src_desc is a host-built CUtensorMap passed by value (nvTmaDesc).
    om = tl.program_id(0) * BM
    on = tl.program_id(1) * BN
    v = tl._experimental_descriptor_load(src_desc, [om, on], [BM, BN], tl.float16)
    rm = om + tl.arange(0, BM)
    rn = on + tl.arange(0, BN)
    tl.store(dst_ptr + rm[:, None] * N + rn[None, :], v)
