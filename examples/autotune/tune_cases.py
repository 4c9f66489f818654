"""The calls `tmlr tune` benchmarks on the target GPU for the shipped table (examples/autotune/kernels.json):
each yields (grid, args, kwargs) for one autotune key, i.e. one (M, N, K) and dtype."""
import torch

SHAPES = [(512, 512, 512), (1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096), (1000, 1024, 1040), (8192, 1024, 4096)]


def grid(M: int, N: int):
    return lambda meta: (((M + meta["BLOCK_M"] - 1) // meta["BLOCK_M"]) * ((N + meta["BLOCK_N"] - 1) // meta["BLOCK_N"]),)


def cases():
    for dtype in (torch.float16, torch.bfloat16):
        for M, N, K in SHAPES:
            a = torch.randn(M, K, device="cuda", dtype=dtype)
            b = torch.randn(K, N, device="cuda", dtype=dtype)
            c = torch.empty(M, N, device="cuda", dtype=dtype)
            yield grid(M, N), (a, b, c, M, N, K, a.stride(0), b.stride(0), c.stride(0)), {}
