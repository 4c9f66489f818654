"""An fp16 matmul written in Gluon for sm_90a: TMA loads into NVMMA-swizzled shared memory, wgmma
(``warpgroup_mma``) into an fp32 accumulator, a TMA store of the fp16 result.

C[M, N] = A[M, K] @ B[K, N], all row-major; the caller passes three host tensor descriptors with
block shapes [BM, BK], [BK, BN] and [BM, BN], and M, N, K multiples of the blocks. One BM x BN tile
per program, 4 warps (one warpgroup), one shared-memory buffer per operand: the load of the next K
block waits for the previous wgmma (a plain example, not a tuned kernel).

Triton releases: Gluon has ``warpgroup_mma`` from 3.5. The TMA copy names changed: 3.5-3.7 have
``tma.async_copy_global_to_shared`` / ``async_copy_shared_to_global``, 3.8 adds ``tma.async_load`` /
``async_store``, 3.9 removes the old names; the aliases below take whichever the installed Triton has,
so this file builds with every release from 3.5.1 to 3.9.0.
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as ttgl
from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, mbarrier, tma, warpgroup_mma,
                                                              warpgroup_mma_wait)

tma_load = getattr(tma, "async_load", None) or tma.async_copy_global_to_shared
tma_store = getattr(tma, "async_store", None) or tma.async_copy_shared_to_global


@gluon.jit
def gluon_matmul(a_desc, b_desc, c_desc, K, BM: ttgl.constexpr, BN: ttgl.constexpr, BK: ttgl.constexpr):
    off_m = ttgl.program_id(0) * BM
    off_n = ttgl.program_id(1) * BN
    a_s = ttgl.allocate_shared_memory(a_desc.dtype, [BM, BK], a_desc.layout)
    b_s = ttgl.allocate_shared_memory(b_desc.dtype, [BK, BN], b_desc.layout)
    bar = ttgl.allocate_shared_memory(ttgl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    # wgmma's accumulator layout: 4 warps stacked along M, an m16 x nBN x k16 instruction each
    acc_layout: ttgl.constexpr = ttgl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                             instr_shape=[16, BN, 16])
    acc = ttgl.zeros([BM, BN], ttgl.float32, acc_layout)
    phase = 0
    for k in range(0, K, BK):
        mbarrier.expect(bar, BM * BK * 2 + BK * BN * 2)  # bytes both fp16 loads bring
        tma_load(a_desc, [off_m, k], bar, a_s)
        tma_load(b_desc, [k, off_n], bar, b_s)
        mbarrier.wait(bar, phase)
        phase ^= 1
        acc = warpgroup_mma(a_s, b_s, acc, is_async=True)
        acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc, ))  # a_s/b_s are free again
    mbarrier.invalidate(bar)
    c_s = ttgl.allocate_shared_memory(c_desc.dtype, [BM, BN], c_desc.layout, acc.to(c_desc.dtype))
    fence_async_shared()
    tma_store(c_desc, [off_m, off_n], c_s)
    tma.store_wait(0)
