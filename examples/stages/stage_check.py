"""Shared driver of the run_<kernel>.py scripts: pick the artifact, run the check, print one PASS/FAIL line.

Uses only tmlr_runtime and torch (never Triton): these scripts prove a built artifact runs without it.
"""
import os
import sys
import traceback

import torch

import tmlr_runtime as tr

HERE = os.path.dirname(os.path.abspath(__file__))


def default_artifact(kernel: str) -> str:
    # The cubin-stage build for this GPU's arch family; sm_90 builds are sm_90a, sm_8x GPUs run the sm_80 one.
    major, _ = torch.cuda.get_device_capability()
    return os.path.join(HERE, "artifacts", f"{kernel}_sm{'90' if major == 9 else '80'}_cubin")


def main(kernel: str, check, default=default_artifact) -> None:
    """check(Kernel) -> max error, raising AssertionError with the reason when the result is wrong.
    ``default(kernel)``: the artifact directory to run when none is named on the command line."""
    path = sys.argv[1] if len(sys.argv) > 1 else None
    name = os.path.basename(os.path.normpath(path)) if path else kernel
    if not torch.cuda.is_available():  # not a failure to debug: say what is missing, no traceback
        print(f"FAIL {name} needs a CUDA GPU: torch {torch.__version__} sees none "
              f"({'built without CUDA' if torch.version.cuda is None else 'no device or driver visible'})")
        sys.exit(1)
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
