import triton
import triton.language as tl

from .common import load_block


@triton.heuristics({"BLOCK": lambda args: triton.next_power_of_2(args["n"])})
@triton.jit
def heur_scale(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, load_block(x_ptr, offs, mask) + 1.0, mask=mask)
