"""Run a built Gluon TMA + wgmma matmul (64x64x64 tiles, sm_90a) against torch with only tmlr_runtime and torch:
python run_gluon_matmul.py [ARTIFACT_DIR]   (default: artifacts/gluon_matmul). Prints PASS/FAIL like the
stage examples' run scripts (examples/stages/stage_check.py).

The kernel takes three host tensor descriptors. Each is passed as an object with .base (the tensor),
.shape, .strides and .block_shape; tmlr_runtime encodes the CUtensorMap from it and the TMA facts
metadata.json records (no Triton involved).
"""
import os
import sys
from types import SimpleNamespace

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "stages"))

from stage_check import close, main  # noqa: E402  (first: it says what to install when torch is missing)

import torch  # noqa: E402

import tmlr_runtime as tr  # noqa: E402

M, N, K = 256, 192, 512  # multiples of the 64x64x64 tiles, as the kernel requires
BLOCK = [64, 64]


def descriptor(t: torch.Tensor, block_shape: list) -> object:
    """A host tensor descriptor: tmlr_runtime's own where it has one, else any object with the same fields."""
    if hasattr(tr, "TensorDescriptor"):
        return tr.TensorDescriptor.from_tensor(t, block_shape)
    return SimpleNamespace(base=t, shape=list(t.shape), strides=list(t.stride()), block_shape=list(block_shape))


def check(kernel) -> float:
    major, minor = torch.cuda.get_device_capability()
    if (major, minor) != (9, 0):
        raise AssertionError(f"an sm_90a kernel (wgmma, TMA) needs a compute capability 9.0 GPU, this is {major}.{minor}")
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    c = torch.full((M, N), float("nan"), device="cuda", dtype=torch.float16)  # every tile must be written
    kernel((M // 64, N // 64), descriptor(a, BLOCK), descriptor(b, BLOCK), descriptor(c, BLOCK), K)
    return close(c, a.float() @ b.float(), atol=5e-2, rtol=1e-2)


if __name__ == "__main__":
    main("gluon_matmul", check, default=lambda kernel: os.path.join(HERE, "artifacts", kernel))
