"""A transformer MLP stack whose norms and activation are tmlr kernels, compiled with torch.compile, Triton blocked.

    python examples/torch_compile/run_block.py [--json FILE]    (an sm_90 GPU; prints PASS/FAIL, then a table)

The model: an embedding, then per layer an up projection, SiLU-and-mul, a down projection and the
residual add + RMSNorm, as a vLLM-style decoder MLP does (4 layers, d=1024, hidden=2048, 256 tokens,
fp16). The same weights run as

- plain torch in eager mode (the reference) and compiled with CUDA graphs;
- with the ops of ops.py (tmlr kernels through tmlr_runtime.torch_ops) in eager mode, compiled with
  ``torch.compile(fullgraph=True, backend="aot_eager")`` and with ``backend="cudagraphs"`` (CUDA-graph
  trees, as ``mode="reduce-overhead"`` uses; Inductor itself needs Triton for any graph on a GPU).

Each tmlr variant must match the eager torch output; the table gives GPU kernels per forward (torch
profiler, eager variants) and microseconds per forward (median of 5 samples of 50 forwards, min-max).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from typing import Callable

sys.modules["triton"] = None  # a service without Triton: nothing below may import it

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "stages")]
from stage_check import need_gpu  # noqa: E402  (first: it says what to install when torch is missing)

import torch  # noqa: E402

import tmlr_runtime as tr  # noqa: E402
from model import TOKENS, VOCAB, MLPStack  # noqa: E402


def kernels_per_forward(f: Callable[[], torch.Tensor]) -> int:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        f()
        torch.cuda.synchronize()
    return sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)


def microseconds(f: Callable[[], torch.Tensor], samples: int = 5, forwards: int = 50) -> list[float]:
    out = []
    for _ in range(samples):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(forwards):
            f()
        end.record()
        end.synchronize()
        out.append(start.elapsed_time(end) * 1000 / forwards)
    return out


def step(model: Callable[[torch.Tensor], torch.Tensor], ids: torch.Tensor) -> Callable[[], torch.Tensor]:
    def run() -> torch.Tensor:
        torch.compiler.cudagraph_mark_step_begin()  # each call is a new step for CUDA-graph trees
        return model(ids)

    return run


def variants() -> tuple[dict[str, Callable[[torch.Tensor], torch.Tensor]], torch.Tensor]:
    """Every way the example runs the module, by name, and the token ids it runs on."""
    torch.manual_seed(0)
    ref = MLPStack(use_tmlr=False).to("cuda", torch.float16).requires_grad_(False)
    tm = MLPStack(use_tmlr=True).to("cuda", torch.float16).requires_grad_(False)
    tm.load_state_dict(ref.state_dict())
    ids = torch.randint(0, VOCAB, (TOKENS,), device="cuda")
    return {
        "torch eager": ref,
        "torch compile(fullgraph, cudagraphs)": torch.compile(ref, fullgraph=True, backend="cudagraphs"),
        "tmlr eager": tm,
        "tmlr compile(fullgraph, aot_eager)": torch.compile(tm, fullgraph=True, backend="aot_eager"),
        "tmlr compile(fullgraph, cudagraphs)": torch.compile(tm, fullgraph=True, backend="cudagraphs"),
    }, ids


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", help="also write the check and the table to this file")
    args = parser.parse_args()
    need_gpu("torch_compile block")  # one FAIL line, no traceback, where torch sees no CUDA GPU
    try:
        return check_and_time(args.json)
    except tr.CudaUnavailableError as e:  # torch sees a GPU that the driver API cannot use: one line, as above
        print(f"FAIL torch_compile block needs a CUDA GPU: {str(e).splitlines()[0]}")
        return 1


def check_and_time(json_file: str | None) -> int:
    """Every variant against torch eager (PASS/FAIL), then the table; ``json_file``: where to write both too."""
    models, ids = variants()
    with torch.no_grad():
        expected = models["torch eager"](ids).float()
        tolerance = 2e-2 * expected.abs().max().item()
        errors = {}
        for name, model in models.items():
            for _ in range(3):  # warm-up, recording, replay for the CUDA-graph variants
                got = step(model, ids)().float()
            errors[name] = (got - expected).abs().max().item()
            if not errors[name] <= tolerance:
                print(f"FAIL torch_compile block: {name} differs from torch eager by {errors[name]:.3g} (tolerance {tolerance:.3g})")
                return 1
        print(f"PASS torch_compile block (triton {'blocked' if sys.modules.get('triton') is None else 'imported'}): "
              f"tmlr eager, compile(fullgraph) aot_eager and cudagraphs match torch eager "
              f"(max error {max(errors.values()):.3g}, tolerance {tolerance:.3g})")
        print(f"{'variant':40} {'kernels/forward':>16}   us/forward: median (min-max) of 5 x 50")
        rows = {}
        for name, model in models.items():
            run = step(model, ids)
            kernels = kernels_per_forward(run) if "cudagraphs" not in name else None
            us = microseconds(run)
            rows[name] = {"kernels_per_forward": kernels, "us_per_forward": us, "median_us": statistics.median(us),
                          "max_error": errors[name]}
            print(f"{name:40} {'1 graph' if kernels is None else kernels:>16}   {statistics.median(us):8.1f} ({min(us):.1f}-{max(us):.1f})")
    if json_file:
        with open(json_file, "w") as f:
            json.dump({"command": "python examples/torch_compile/run_block.py", "device": torch.cuda.get_device_name(),
                       "torch": torch.__version__, "tolerance": tolerance, "variants": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
