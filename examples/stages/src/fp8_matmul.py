"""fp8 (e4m3) matmul through TMA descriptors built on the device (sm_90a; needs global scratch).

A is M x K, B is given transposed as N x K (both K-major, as fp8 wgmma wants), C = A @ B^T is
M x N fp16; M, N, K multiples of the tiles.
"""
import triton
import triton.language as tl


@triton.jit
def fp8_matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    a_desc = tl._experimental_make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    b_desc = tl._experimental_make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BN, BK])
    c_desc = tl._experimental_make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    om = tl.program_id(0) * BM
    on = tl.program_id(1) * BN
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        acc = tl.dot(a_desc.load([om, k]), b_desc.load([on, k]).T, acc)
    c_desc.store([om, on], acc.to(tl.float16))
