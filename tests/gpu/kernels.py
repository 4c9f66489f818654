"""Triton source of GPU-test kernels that the examples do not already provide.

Built on a CPU with ``tmlr-build --spec tests/gpu/kernels.json -o tests/gpu/artifacts`` and
committed, so the GPU tests need no Triton.
"""
import triton
import triton.language as tl


@triton.jit
def tma_host_copy(src_desc, dst_ptr, N, BM: tl.constexpr, BN: tl.constexpr):
    # src_desc is a CUtensorMap built on the host and passed by value (nvTmaDesc).
    om = tl.program_id(0) * BM
    on = tl.program_id(1) * BN
    v = tl._experimental_descriptor_load(src_desc, [om, on], [BM, BN], tl.float16)
    rm = om + tl.arange(0, BM)
    rn = on + tl.arange(0, BN)
    tl.store(dst_ptr + rm[:, None] * N + rn[None, :], v)
