"""A copy through host-side tensor descriptors (Triton 3.4+): the caller passes TensorDescriptor objects.

On sm_90 Triton lowers them to TMA: each becomes a CUtensorMap (encoded on the host per launch) plus
the shape and strides. On sm_80 there is no TMA: each becomes a base pointer with shape and strides.
"""
import triton
import triton.language as tl


@triton.jit
def desc_scale(in_desc, out_desc, BM: tl.constexpr, BN: tl.constexpr):
    # out = 2 * in, one BM x BN block per program. With fp16 and BN = 128 a block row is 256 bytes,
    # wider than the 128-byte swizzle: Triton moves each block as two 64-column TMA boxes.
    om = tl.program_id(0) * BM
    on = tl.program_id(1) * BN
    out_desc.store([om, on], in_desc.load([om, on]) * 2)
