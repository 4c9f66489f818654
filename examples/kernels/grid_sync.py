"""A grid-wide barrier: every program waits until all have arrived. Correct only when all programs
are resident at once, which a cooperative launch guarantees (built with launch_cooperative_grid)."""
import triton
import triton.language as tl


@triton.jit
def grid_sync(counter_ptr, out_ptr):
    # counter_ptr: one int32 set to 0 before the launch; out_ptr: one int32 per program.
    n = tl.num_programs(0)
    tl.atomic_add(counter_ptr, 1, sem="release")
    seen = tl.atomic_add(counter_ptr, 0, sem="acquire")
    while seen < n:
        seen = tl.atomic_add(counter_ptr, 0, sem="acquire")
    tl.store(out_ptr + tl.program_id(0), seen)
