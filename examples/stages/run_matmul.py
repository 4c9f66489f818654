"""Run a built fp16 tl.dot matmul (64x64x32 tiles) against torch: python run_matmul.py [ARTIFACT_DIR]."""
from stage_check import close, main  # first: it says what to install when torch is missing

import torch  # noqa: E402

M, N, K = 256, 192, 128  # multiples of the 64x64x32 tiles, as the kernel requires


def check(kernel) -> float:
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    c = torch.empty(M, N, device="cuda", dtype=torch.float16)
    kernel((M // 64, N // 64), a, b, c, M, N, K, a.stride(0), b.stride(0), c.stride(0))
    return close(c, a.float() @ b.float(), atol=5e-2, rtol=1e-2)


if __name__ == "__main__":
    main("matmul", check)
