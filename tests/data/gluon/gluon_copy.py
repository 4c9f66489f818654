"""A Gluon TMA copy for the build tests: it compiles with every release that has Gluon (3.4+; no wgmma).

Host descriptor in, TMA load into shared memory behind an mbarrier, TMA store out. The TMA copy names
changed (3.8 adds async_load/async_store, 3.9 removes the old ones): the aliases take what exists.
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as ttgl
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier, tma

tma_load = getattr(tma, "async_load", None) or tma.async_copy_global_to_shared
tma_store = getattr(tma, "async_store", None) or tma.async_copy_shared_to_global


@gluon.jit
def gluon_copy(in_desc, out_desc, BM: ttgl.constexpr, BN: ttgl.constexpr):
    smem = ttgl.allocate_shared_memory(in_desc.dtype, [BM, BN], in_desc.layout)
    bar = ttgl.allocate_shared_memory(ttgl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    mbarrier.expect(bar, BM * BN * 2)
    tma_load(in_desc, [ttgl.program_id(0) * BM, 0], bar, smem)
    mbarrier.wait(bar, 0)
    mbarrier.invalidate(bar)
    fence_async_shared()
    tma_store(out_desc, [ttgl.program_id(0) * BM, 0], smem)
    tma.store_wait(0)
