import triton
import triton.language as tl

from .common import load_block

# Libraries pick configs for the GPU at import time; during a build the "current" GPU is the target.
_BIG = triton.runtime.driver.active.get_current_target().arch >= 90


@triton.autotune(configs=[triton.Config({"BLOCK": 256 if _BIG else 128}, num_warps=4),
                          triton.Config({"BLOCK": 1024}, num_warps=8)], key=["n"])
@triton.jit
def tuned_scale(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, load_block(x_ptr, offs, mask) * 3.0, mask=mask)
