"""Run the shipped autotuned matmul family as a service would: no Triton, no benchmarking at run time.

    python examples/autotune/run_matmul.py [FAMILY_DIR]     (default: examples/autotune/artifacts/matmul)

Loads the family with tuning="strict" (configs come from the shipped tuning.json beside it; an unseen key
raises instead of benchmarking), launches every tuned shape in fp16 and bf16 plus one shape the table has
not seen (which must raise UnseenKeyError), checks each result against torch and prints PASS/FAIL.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "stages")]
from stage_check import need_gpu  # noqa: E402  (first: it says what to install when torch is missing)

import torch  # noqa: E402

import tmlr_runtime as tr  # noqa: E402
from tune_cases import cases, grid  # noqa: E402


def main() -> int:
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "artifacts", "matmul")
    need_gpu("matmul family")
    try:
        family = tr.Kernel.load(path, tuning="strict", fallback="error")
    except tr.CudaUnavailableError as e:  # torch sees a GPU that the driver API cannot use: one line, as above
        print(f"FAIL matmul family needs a CUDA GPU: {str(e).splitlines()[0]}")
        return 1
    worst, n = 0.0, 0
    for g, args, _ in cases():
        a, b, c = args[:3]
        family(g, *args)
        torch.cuda.synchronize()
        err = (c.float() - a.float() @ b.float()).abs().max().item()
        tol = 0.5 if a.dtype == torch.bfloat16 else 0.1
        if not err <= tol + 2e-2 * (a.float() @ b.float()).abs().max().item():
            print(f"FAIL matmul {tuple(a.shape)}x{tuple(b.shape)} {a.dtype}: max error {err:.3g}")
            return 1
        worst, n = max(worst, err), n + 1
    a = torch.randn(64, 64, device="cuda", dtype=torch.float16)
    try:
        family(grid(64, 64), a, a, torch.empty_like(a), 64, 64, 64, 64, 64, 64)
        print("FAIL an untuned key launched in strict mode")
        return 1
    except tr.TmlrError as e:
        refused = type(e).__name__
    print(f"PASS matmul family: {n} tuned shapes (fp16, bf16) match torch (max error {worst:.3g}); untuned key -> {refused}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
