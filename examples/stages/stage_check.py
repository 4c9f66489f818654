"""Shared driver of the run_<kernel>.py scripts: pick the artifact, run the check, print one PASS/FAIL line.

Uses only tmlr_runtime and torch (never Triton): these scripts prove a built artifact runs without it.
Every run script imports this module first, so a missing torch or GPU is one FAIL line that says what to do.
"""
import os
import sys
import traceback

import tmlr_runtime as tr

SCRIPT = os.path.basename(sys.argv[0]) or "this script"
try:
    import torch
except ModuleNotFoundError:  # tmlr_runtime needs no torch, but these checks make their inputs with it
    print(f"FAIL {SCRIPT} needs torch (with CUDA) for its inputs and reference: pip install torch, or from a tmlr "
          "checkout pip install -e '.[torch]'")
    sys.exit(1)

HERE = os.path.dirname(os.path.abspath(__file__))


def default_artifact(kernel: str) -> str:
    # The cubin-stage build for this GPU's arch family; sm_90 builds are sm_90a, sm_8x GPUs run the sm_80 one.
    major, _ = torch.cuda.get_device_capability()
    return os.path.join(HERE, "artifacts", f"{kernel}_sm{'90' if major == 9 else '80'}_cubin")


def need_gpu(name: str) -> None:
    """Exit with one FAIL line when torch sees no CUDA GPU: not a failure to debug, no traceback."""
    if not torch.cuda.is_available():
        print(f"FAIL {name} needs a CUDA GPU: torch {torch.__version__} sees none "
              f"({'built without CUDA' if torch.version.cuda is None else 'no device or driver visible'})")
        sys.exit(1)


def main(kernel: str, check, default=default_artifact) -> None:
    """check(Kernel) -> max error, raising AssertionError with the reason when the result is wrong.
    ``default(kernel)``: the artifact directory to run when none is named on the command line."""
    path = sys.argv[1] if len(sys.argv) > 1 else None
    name = os.path.basename(os.path.normpath(path)) if path else kernel
    need_gpu(name)
    try:
        path = path or default(kernel)
        name = os.path.basename(os.path.normpath(path))
        err = check(tr.Kernel.load(path))
        torch.cuda.synchronize()
    except tr.CudaUnavailableError as e:
        print(f"FAIL {name} needs a CUDA GPU: {str(e).splitlines()[0]}")
        sys.exit(1)
    except Exception as e:  # one FAIL line for any failure, the traceback on stderr for debugging
        traceback.print_exc()
        print(f"FAIL {name} {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        sys.exit(1)
    print(f"PASS {name} {err:.3g}")


def close(out: torch.Tensor, ref: torch.Tensor, atol: float, rtol: float) -> float:
    err = (out.float() - ref.float()).abs().max().item()
    if not torch.allclose(out.float(), ref.float(), atol=atol, rtol=rtol):
        raise AssertionError(f"max error {err:.3g} over atol={atol} rtol={rtol}")
    return err
