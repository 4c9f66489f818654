"""The launch-latency workloads: tritonbench's empty-kernel pair and a 4-argument vector add."""
import triton
import triton.language as tl


@triton.jit
def nop():
    pass


@triton.jit
def nop_args(
    t1, t2, t3, t4, t5,
    i1, i2, i3, i4, i5, i6, i7, i8, i9,
    c1: tl.constexpr, c2: tl.constexpr, c3: tl.constexpr, c4: tl.constexpr, c5: tl.constexpr,
):
    pass


@triton.jit
def add4(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)
