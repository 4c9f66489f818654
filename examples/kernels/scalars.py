"""One parameter of every scalar type; each value lands in an output slot so a test can compare
what the kernel received with what the host passed."""
import triton
import triton.language as tl


@triton.jit
def scalars(ints_ptr, floats_ptr, b, i8, i16, i32, i64, u32, u64, h, bh, f, d):
    tl.store(ints_ptr + 0, b.to(tl.int64))
    tl.store(ints_ptr + 1, i8.to(tl.int64))
    tl.store(ints_ptr + 2, i16.to(tl.int64))
    tl.store(ints_ptr + 3, i32.to(tl.int64))
    tl.store(ints_ptr + 4, i64)
    tl.store(ints_ptr + 5, u32.to(tl.int64))
    tl.store(ints_ptr + 6, u64.to(tl.int64, bitcast=True))
    tl.store(floats_ptr + 0, h.to(tl.float64))
    tl.store(floats_ptr + 1, bh.to(tl.float64))
    tl.store(floats_ptr + 2, f.to(tl.float64))
    tl.store(floats_ptr + 3, d)
