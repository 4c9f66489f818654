import triton
import triton.language as tl


@triton.jit
def doubled(x):
    return x * 2.0
