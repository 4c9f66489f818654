"""@triton.heuristics applied outside @triton.autotune (it does not see the config), with a def and a
next_power_of_2 heuristic as public libraries write them."""
import triton
import triton.language as tl


def _is_even(args):
    return args["n"] % 16 == 0


@triton.heuristics({"BLOCK": lambda args: triton.next_power_of_2(args["n"]), "EVEN": _is_even})
@triton.autotune(configs=[triton.Config({"SCALE": 2}, num_warps=2), triton.Config({"SCALE": 3}, num_warps=4)],
                 key=["n"])
@triton.jit
def scale(x_ptr, out_ptr, n, SCALE: tl.constexpr, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * SCALE, mask=mask)
