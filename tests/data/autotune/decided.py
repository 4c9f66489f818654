"""Families of issue 31: heuristics the signature decides (a None argument, an i32:16 size), autotune configs that set
launch options only, and a variant that fails to compile (a static_assert on a heuristic's value)."""
import triton
import triton.language as tl


@triton.heuristics({"HAS_X": lambda args: args["x"] is not None, "EVEN": lambda args: args["n"] % 16 == 0})
@triton.jit
def maybe_add(out_ptr, x, n, BLOCK: tl.constexpr, HAS_X: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.zeros([BLOCK], dtype=tl.float32)
    if HAS_X:  # x is None: only HAS_X=False compiles ('NoneType' object has no attribute 'type')
        v += tl.load(x + offs)
    tl.store(out_ptr + offs, v, mask=offs < n)


@triton.autotune(configs=[triton.Config({}, num_warps=2), triton.Config({}, num_warps=4),
                          triton.Config({}, num_warps=8, num_stages=2)], key=["n"])
@triton.jit
def warps_only(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, offs, mask=offs < n)


@triton.heuristics({"EVEN": lambda args: args["n"] % 16 == 0})
@triton.autotune(configs=[triton.Config({"BT": 32}, num_warps=2), triton.Config({"BT": 64}, num_warps=4)], key=["n"])
@triton.jit
def strict(out_ptr, n, BT: tl.constexpr, SCALE: tl.constexpr, EVEN: tl.constexpr):
    tl.static_assert(not EVEN, "EVEN sizes are not supported")  # the EVEN=True variants fail to compile
    offs = tl.arange(0, BT)
    tl.store(out_ptr + offs, offs * SCALE, mask=offs < n)
