import triton
import triton.language as tl


@triton.jit
def load_block(ptr, offs, mask):
    return tl.load(ptr + offs, mask=mask)
