"""tma_device.py for Triton 3.4 and newer, where the device-side descriptor lost its _experimental_ prefix."""
import triton
import triton.language as tl


@triton.jit
def tma_scale(src_ptr, dst_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    # dst = 2 * src for row-major M x N fp16 matrices; N * 2 bytes must be a multiple of 16.
    src = tl.make_tensor_descriptor(src_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    dst = tl.make_tensor_descriptor(dst_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    om = tl.program_id(0) * BM
    on = tl.program_id(1) * BN
    dst.store([om, on], src.load([om, on]) * 2)
