"""An accumulating kernel: the autotuner zeroes the output before each config (reset_to_zero) and
prunes configs by a function that needs the call's arguments (skipped at build time)."""
import triton
import triton.language as tl


def _prune(configs, named_args, **kwargs):
    return [c for c in configs if c.kwargs["BLOCK"] <= named_args["n"]]


@triton.autotune(configs=[triton.Config({"BLOCK": 128}), triton.Config({"BLOCK": 256}, num_warps=8)],
                 key=["n"], reset_to_zero=["out_ptr"], prune_configs_by={"early_config_prune": _prune})
@triton.heuristics({"MASKED": lambda args: args["n"] % args["BLOCK"] != 0, "LIMIT": lambda args: len(args)})
@triton.jit
def accumulate(x_ptr, out_ptr, n, BLOCK: tl.constexpr, MASKED: tl.constexpr, LIMIT: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if MASKED:
        x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    else:
        x = tl.load(x_ptr + offs)
    tl.atomic_add(out_ptr, tl.sum(x, axis=0) + LIMIT)
