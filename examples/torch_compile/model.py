"""The example's model: a vLLM-style decoder MLP stack whose RMSNorms and SiLU-and-mul are the tmlr ops of
ops.py (``use_tmlr=True``) or plain torch (``use_tmlr=False``), with the same parameters either way."""
from __future__ import annotations

import torch

from ops import fused_add_rms_norm, rms_norm, rms_norm_ref, silu_and_mul, silu_and_mul_ref

EPS = 1e-6
VOCAB, D, HIDDEN, LAYERS, TOKENS = 4096, 1024, 2048, 4, 256


class MLPStack(torch.nn.Module):
    """Embedding, then LAYERS x (up, SiLU-and-mul, down, residual add + RMSNorm)."""

    def __init__(self, use_tmlr: bool) -> None:
        super().__init__()
        self.use_tmlr = use_tmlr
        self.embed = torch.nn.Embedding(VOCAB, D)
        self.up = torch.nn.ModuleList(torch.nn.Linear(D, 2 * HIDDEN, bias=False) for _ in range(LAYERS))
        self.down = torch.nn.ModuleList(torch.nn.Linear(HIDDEN, D, bias=False) for _ in range(LAYERS))
        self.norms = torch.nn.ParameterList(torch.nn.Parameter(1 + 0.1 * torch.randn(D)) for _ in range(LAYERS + 1))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        residual = self.embed(ids)
        x = (rms_norm if self.use_tmlr else rms_norm_ref)(residual, self.norms[0], EPS)
        for i in range(LAYERS):
            y = self.down[i]((silu_and_mul if self.use_tmlr else silu_and_mul_ref)(self.up[i](x)))
            if self.use_tmlr:
                fused_add_rms_norm(y, residual, self.norms[i + 1], EPS)  # in place: residual += y; y = norm(residual)
                x = y
            else:
                residual = y + residual
                x = rms_norm_ref(residual, self.norms[i + 1], EPS)
        return x
