"""Run a built fused row softmax (BLOCK=1024) against torch: python run_softmax.py [ARTIFACT_DIR]."""
from stage_check import close, main  # first: it says what to install when torch is missing

import torch  # noqa: E402

ROWS, COLS, STRIDE = 333, 1000, 1008  # COLS < BLOCK exercises the masked tail; strides were built as :16


def check(kernel) -> float:
    x = (torch.randn(ROWS, STRIDE, device="cuda") * 4)[:, :COLS]
    y = torch.empty(ROWS, STRIDE, device="cuda")[:, :COLS]
    kernel((ROWS,), y, x, x.stride(0), y.stride(0), COLS)
    return close(y, torch.softmax(x, dim=1), atol=1e-6, rtol=1e-4)


if __name__ == "__main__":
    main("softmax", check)
