"""Triton source of the GPU-test kernel with empty tuple parameters (tests/gpu/test_tuples_gpu.py, check ``empty``);
a file of its own, so that the other tuple kernels' artifacts keep their source digest. Built with the command in
tests/gpu/tuple_kernels.json."""
import triton
import triton.language as tl


@triton.jit
def tuple_empty(x_ptr, nothing, io, n, BLOCK: tl.constexpr):
    # nothing = (), io = (out, ()): out = 2 * x; an empty tuple passes nothing, as Triton's launcher passes it
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(io[0] + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)
