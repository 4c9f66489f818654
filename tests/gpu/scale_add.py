"""A kernel with constexprs, for the cache-entry tests (tests/build/test_cache_entry.py, tests/gpu/test_cache_entry_gpu.py):
Triton compiles it into a cache entry, which tmlr-build imports."""
import triton
import triton.language as tl


@triton.jit
def scale_add(x_ptr, y_ptr, out_ptr, n_elements, alpha, BLOCK: tl.constexpr, USE_ALPHA: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask)
    if USE_ALPHA:
        x = x * alpha
    tl.store(out_ptr + offs, x + tl.load(y_ptr + offs, mask=mask), mask=mask)
