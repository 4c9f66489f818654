"""Run a built fp8 (e4m3) matmul with device-built TMA descriptors: python run_fp8_matmul.py [ARTIFACT_DIR]."""
from stage_check import close, main  # first: it says what to install when torch is missing

import torch  # noqa: E402

M, N, K = 256, 192, 256  # multiples of the 64x64x64 tiles


def check(kernel) -> float:
    a = torch.randn(M, K, device="cuda").to(torch.float8_e4m3fn)
    bt = torch.randn(N, K, device="cuda").to(torch.float8_e4m3fn)  # B transposed: N x K, K-major
    # zeros, not empty: initcheck does not see the TMA store that writes c, and would flag reading it
    c = torch.zeros(M, N, device="cuda", dtype=torch.float16)
    kernel((M // 64, N // 64), a, bt, c, M, N, K)
    # Reference on the same fp8 values upcast; only accumulation order and the fp16 output rounding differ.
    ref = a.float() @ bt.float().T
    return close(c, ref, atol=0.1, rtol=1e-2)


if __name__ == "__main__":
    main("fp8_matmul", check)
