"""The serving-library corpus's kernels called as their libraries call them, and torch references written here.

One :class:`Case` per artifact that ``python3 tools/corpus.py build`` writes for sm_90 (tools/corpus/*.json):

- ``inputs(device, **sizes)``: the tensors and sizes of one call, at a real model's shapes by default (the sizes the
  artifact's constexprs fix must stay); outputs are allocated as the library allocates them;
- ``call(a)``: ``(grid, args, kwargs)`` of the launch, with the library's own arguments, keywords and grid (the
  functions named in each case); ``launch(kernel, a)`` runs it;
- ``reference(a)``: the expected outputs, computed with torch from the inputs (never the library's Triton code), each
  with its tolerance; ``naive(a)``: the same outputs by explicit loops, which tests/test_corpus.py holds the reference
  to on the CPU at ``small`` sizes.

tests/gpu/test_corpus_gpu.py runs every case on a GPU with Triton blocked; tests/test_corpus.py binds each call to
the built artifacts on the fake driver. Nothing here imports Triton; torch is imported by the functions.
"""
from __future__ import annotations

import dataclasses
import math
from itertools import accumulate
from typing import Any, Callable

Inputs = dict[str, Any]
Expected = dict[str, tuple[Any, float, float]]  # output name -> (tensor, rtol, atol)


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclasses.dataclass(frozen=True)
class Case:
    name: str  # the artifact's name (tools/corpus/*.json)
    inputs: Callable[..., Inputs]
    call: Callable[[Inputs], tuple[Any, tuple[Any, ...], dict[str, Any]]]
    reference: Callable[[Inputs], Expected]
    naive: Callable[[Inputs], dict[str, Any]]
    small: dict[str, Any]  # sizes for the reference-against-loops check on the CPU (any)
    bind: dict[str, Any]  # sizes for the launch on the fake driver: small, but the artifact's constexpr sizes kept

    def launch(self, kernel: Any, a: Inputs) -> None:
        grid, args, kwargs = self.call(a)
        kernel[grid](*args, **kwargs)


def _gen(device: str, seed: int) -> Any:
    import torch

    return torch.Generator(device=device).manual_seed(seed)


def mismatches(got: Inputs, expected: Expected) -> list[str]:
    """What differs beyond the tolerance: ``|got - want| <= atol + rtol * |want|`` element by element."""
    out = []
    for name, (want, rtol, atol) in expected.items():
        g, w = got[name].float(), want.float()
        if g.shape != w.shape:
            out.append(f"{name}: shape {tuple(g.shape)}, expected {tuple(w.shape)}")
            continue
        bad = ~((g - w).abs() <= atol + rtol * w.abs())  # NaN counts as bad
        if bool(bad.any()):
            i = int(bad.flatten().nonzero()[0])
            out.append(f"{name}: {int(bad.sum())} of {w.numel()} elements differ, e.g. [{i}] {g.flatten()[i].item()!r} "
                       f"vs {w.flatten()[i].item()!r} (rtol {rtol}, atol {atol})")
    return out


def max_error(got: Inputs, expected: Expected) -> float:
    return max(float((got[n].float() - w.float()).abs().max()) for n, (w, _, _) in expected.items())


# -- fla-core 0.6.0: fla/modules/norm/l2norm.py, l2norm_fwd (D <= 512) -----------------------------------------
def l2norm_inputs(device: str, T: int = 8192, D: int = 128, seed: int = 0) -> Inputs:
    import torch

    x = torch.randn(T, D, device=device, generator=_gen(device, seed)).to(torch.bfloat16)
    return {"x": x, "y": torch.empty_like(x), "rstd": torch.empty(T, dtype=torch.float32, device=device),
            "eps": 1e-6, "T": T, "D": D}


def l2norm_call(a: Inputs) -> tuple[Any, tuple[Any, ...], dict[str, Any]]:
    T, D = a["T"], a["D"]
    grid = lambda meta: (cdiv(T, meta["BT"]),)  # noqa: E731
    return grid, (), dict(x=a["x"], y=a["y"], rstd=a["rstd"], eps=a["eps"], T=T, D=D, BD=D, NB=cdiv(T, 2048 * 32))


def l2norm_reference(a: Inputs) -> Expected:
    import torch

    x = a["x"].float()
    rstd = 1 / torch.sqrt((x * x).sum(-1) + a["eps"])
    return {"y": ((x * rstd[:, None]).to(torch.bfloat16), 1e-2, 1e-2), "rstd": (rstd, 1e-4, 1e-6)}


def l2norm_naive(a: Inputs) -> dict[str, Any]:
    import torch

    y, rstd = torch.empty_like(a["x"]), torch.empty(a["T"])
    for t in range(a["T"]):
        r = 1 / math.sqrt(sum(float(v) ** 2 for v in a["x"][t].float()) + a["eps"])
        rstd[t] = r
        y[t] = a["x"][t].float() * r
    return {"y": y, "rstd": rstd}


# -- fla/ops/utils/cumsum.py, chunk_local_cumsum_scalar ----------------------------------------------------------
def cumsum_scalar_inputs(device: str, B: int = 2, T: int = 4000, H: int = 32, BT: int = 64, seed: int = 1) -> Inputs:
    import torch

    s = torch.randn(B, T, H, device=device, generator=_gen(device, seed))
    return {"s": s, "o": torch.empty_like(s), "B": B, "T": T, "H": H, "BT": BT}


def cumsum_scalar_call(a: Inputs) -> tuple[Any, tuple[Any, ...], dict[str, Any]]:
    B, T, H, BT = a["B"], a["T"], a["H"], a["BT"]
    grid = (cdiv(T, BT) * B * H,)
    return grid, (), dict(s=a["s"], o=a["o"], scale=None, cu_seqlens=None, chunk_indices=None, T=T, B=B, H=H, BT=BT,
                          REVERSE=False, USE_GRAPH=False)


def _chunk_cumsum(x: Any, BT: int) -> Any:
    """Cumulative sums along dim 1 that restart every ``BT`` steps (the last chunk may be short)."""
    import torch

    T = x.shape[1]
    pad = cdiv(T, BT) * BT - T
    padded = torch.cat([x, x.new_zeros(x.shape[0], pad, *x.shape[2:])], 1) if pad else x
    chunks = padded.reshape(x.shape[0], -1, BT, *x.shape[2:]).cumsum(2)
    return chunks.reshape(padded.shape)[:, :T]


def cumsum_scalar_reference(a: Inputs) -> Expected:
    return {"o": (_chunk_cumsum(a["s"].double(), a["BT"]).float(), 1e-5, 1e-4)}


def cumsum_scalar_naive(a: Inputs) -> dict[str, Any]:
    import torch

    s, BT = a["s"], a["BT"]
    o = torch.empty_like(s)
    for b in range(a["B"]):
        for h in range(a["H"]):
            total = 0.0
            for t in range(a["T"]):
                total = (0.0 if t % BT == 0 else total) + float(s[b, t, h])
                o[b, t, h] = total
    return {"o": o}


# -- chunk_local_cumsum_vector with cu_seqlens -----------------------------------------------------------------
def cumsum_vector_inputs(device: str, lens: tuple[int, ...] = (1000, 500, 2596), H: int = 32, S: int = 128, BT: int = 64,
                         seed: int = 2) -> Inputs:
    import torch

    T = sum(lens)
    s = torch.randn(1, T, H, S, device=device, generator=_gen(device, seed))
    cu = torch.tensor([0, *accumulate(lens)], dtype=torch.int64, device=device)
    # fla/ops/utils/index.py's prepare_chunk_indices: (sequence, chunk within it) of every chunk
    chunks = [(i, c) for i, n in enumerate(lens) for c in range(cdiv(n, BT))]
    return {"s": s, "o": torch.empty_like(s), "cu_seqlens": cu,
            "chunk_indices": torch.tensor(chunks, dtype=torch.int64, device=device), "T": T, "H": H, "S": S, "BT": BT,
            "lens": lens}


def cumsum_vector_call(a: Inputs) -> tuple[Any, tuple[Any, ...], dict[str, Any]]:
    NT, H = a["chunk_indices"].shape[0], a["H"]
    grid = lambda meta: (cdiv(meta["S"], meta["BS"]) * NT, 1 * H)  # noqa: E731  (B = 1 with cu_seqlens)
    return grid, (), dict(s=a["s"], o=a["o"], scale=None, cu_seqlens=a["cu_seqlens"], chunk_indices=a["chunk_indices"],
                          T=a["T"], B=1, H=H, S=a["S"], BT=a["BT"], REVERSE=False, USE_GRAPH=False)


def cumsum_vector_reference(a: Inputs) -> Expected:
    import torch

    s, bounds = a["s"].double(), [0, *accumulate(a["lens"])]
    o = torch.cat([_chunk_cumsum(s[:, b:e], a["BT"]) for b, e in zip(bounds, bounds[1:])], 1)
    return {"o": (o.float(), 1e-5, 1e-4)}


def cumsum_vector_naive(a: Inputs) -> dict[str, Any]:
    import torch

    s, BT, bounds = a["s"], a["BT"], [0, *accumulate(a["lens"])]
    o = torch.empty_like(s)
    for bos, eos in zip(bounds, bounds[1:]):
        total = None
        for t in range(bos, eos):
            total = s[0, t].clone() if (t - bos) % BT == 0 else total + s[0, t]
            o[0, t] = total
    return {"o": o}


# -- fla/ops/gated_delta_rule/fused_recurrent.py, fused_recurrent_gated_delta_rule_fwd ------------------------
def gdr_inputs(device: str, B: int = 4, T: int = 64, H: int = 16, HV: int = 32, K: int = 128, V: int = 128,
               seed: int = 3) -> Inputs:
    import torch

    g = _gen(device, seed)
    rand = lambda *shape: torch.randn(*shape, device=device, generator=g)  # noqa: E731
    v = rand(B, T, HV, V).to(torch.bfloat16)
    return {"q": rand(B, T, H, K).to(torch.bfloat16), "k": rand(B, T, H, K).to(torch.bfloat16), "v": v,
            "g": -torch.nn.functional.softplus(rand(B, T, HV)),  # log decay <= 0, as a gated delta net's gate
            "beta": torch.sigmoid(rand(B, T, HV)).to(torch.bfloat16), "h0": 0.1 * rand(B, HV, K, V),
            "o": torch.empty_like(v), "ht": torch.empty(B, HV, K, V, dtype=torch.float32, device=device),
            "scale": K ** -0.5, "B": B, "T": T, "H": H, "HV": HV, "K": K, "V": V}


def gdr_call(a: Inputs) -> tuple[Any, tuple[Any, ...], dict[str, Any]]:
    K, V = a["K"], a["V"]
    BK, BV = 1 << (K - 1).bit_length(), min(8, 1 << (V - 1).bit_length())
    grid = (cdiv(V, BV) * a["B"] * a["HV"],)
    return grid, (), dict(q=a["q"], k=a["k"], v=a["v"], g=a["g"], gk=None, gv=None, beta=a["beta"], A_log=None,
                          dt_bias=None, o=a["o"], h0=a["h0"], ht=a["ht"], cu_seqlens=None, scale=a["scale"], T=a["T"],
                          H=a["H"], HV=a["HV"], K=K, V=V, BK=BK, BV=BV, IS_BETA_HEADWISE=True,
                          USE_QK_L2NORM_IN_KERNEL=True, APPLY_BETA_SIGMOID=False, ALLOW_NEG_EIGVAL=False,
                          STATE_V_FIRST=False, num_warps=1, num_stages=3)


def _l2norm_last(x: Any) -> Any:
    import torch

    return x / torch.sqrt((x * x).sum(-1, keepdim=True) + 1e-6)


def gdr_reference(a: Inputs) -> Expected:
    """The gated delta rule, all heads at once: per step S <- S * exp(g); v' = beta (v - S^T k); S <- S + k v'^T;
    o = S^T q, with q and k l2-normalized (q also scaled); q/k head h serves v heads h * HV/H ... (h+1) * HV/H - 1."""
    import torch

    group = a["HV"] // a["H"]
    q = _l2norm_last(a["q"].float()).repeat_interleave(group, 2) * a["scale"]
    k = _l2norm_last(a["k"].float()).repeat_interleave(group, 2)
    v, beta, g = a["v"].float(), a["beta"].float(), a["g"]
    S = a["h0"].clone()
    outs = []
    for t in range(a["T"]):
        S = S * torch.exp(g[:, t])[..., None, None]
        v_new = beta[:, t, :, None] * (v[:, t] - torch.einsum("bhk,bhkv->bhv", k[:, t], S))
        S = S + k[:, t, :, :, None] * v_new[:, :, None, :]
        outs.append(torch.einsum("bhk,bhkv->bhv", q[:, t], S))
    return {"o": (torch.stack(outs, 1).to(torch.bfloat16), 2e-2, 2e-2), "ht": (S, 1e-3, 1e-3)}


def gdr_naive(a: Inputs) -> dict[str, Any]:
    import torch

    o, ht = torch.empty(a["v"].shape), torch.empty(a["ht"].shape)
    for b in range(a["B"]):
        for hv in range(a["HV"]):
            h = hv // (a["HV"] // a["H"])
            S = a["h0"][b, hv].clone()
            for t in range(a["T"]):
                q, k = a["q"][b, t, h].float(), a["k"][b, t, h].float()
                q = q / math.sqrt(float((q * q).sum()) + 1e-6) * a["scale"]
                k = k / math.sqrt(float((k * k).sum()) + 1e-6)
                S = S * math.exp(float(a["g"][b, t, hv]))
                for j in range(a["V"]):  # column by column: v'_j = beta (v_j - sum_i S_ij k_i); S_:j += k v'_j
                    u = float(a["beta"][b, t, hv]) * (float(a["v"][b, t, hv, j]) - float((S[:, j] * k).sum()))
                    S[:, j] = S[:, j] + k * u
                    o[b, t, hv, j] = float((S[:, j] * q).sum())
            ht[b, hv] = S
    return {"o": o, "ht": ht}


# -- fla/modules/norm/layernorm_gated.py, layer_norm_fwd as rmsnorm_fn(x, w, None, z, group_size=128) ----------
def gated_rmsnorm_inputs(device: str, T: int = 4096, G: int = 32, D: int = 128, seed: int = 4) -> Inputs:
    import torch

    g = _gen(device, seed)
    x = torch.randn(T, G * D, device=device, generator=g).to(torch.bfloat16)
    return {"x": x, "z": torch.randn(T, G * D, device=device, generator=g).to(torch.bfloat16),
            "w": (1 + 0.1 * torch.randn(G * D, device=device, generator=g)).to(torch.bfloat16), "y": torch.empty_like(x),
            "rstd": torch.empty(G * T, dtype=torch.float32, device=device), "eps": 1e-6, "T": T, "G": G, "D": D}


def gated_rmsnorm_call(a: Inputs) -> tuple[Any, tuple[Any, ...], dict[str, Any]]:
    x, y, z, D = a["x"], a["y"], a["z"], a["D"]
    BD = 1 << (D - 1).bit_length()
    return (a["T"], a["G"]), (), dict(x=x, y=y, w=a["w"], b=None, g=z, mean=None, rstd=a["rstd"],
                                      stride_x_row=x.stride(0), stride_y_row=y.stride(0), stride_g_row=z.stride(0),
                                      T=a["T"], D=D, eps=a["eps"], BD=BD, NORM_BEFORE_GATE=True, IS_RMS_NORM=True,
                                      num_warps=min(max(BD // 256, 1), 8))


def gated_rmsnorm_reference(a: Inputs) -> Expected:
    import torch

    T, G, D = a["T"], a["G"], a["D"]
    x, z = a["x"].float().view(T, G, D), a["z"].float().view(T, G, D)
    rstd = 1 / torch.sqrt((x * x).mean(-1) + a["eps"])  # [T, G]
    y = x * rstd[..., None] * a["w"].float().view(G, D) * (z * torch.sigmoid(z))
    return {"y": (y.view(T, G * D).to(torch.bfloat16), 1e-2, 1e-2), "rstd": (rstd.t().reshape(-1), 1e-4, 1e-6)}


def gated_rmsnorm_naive(a: Inputs) -> dict[str, Any]:
    import torch

    T, G, D = a["T"], a["G"], a["D"]
    y, rstd = torch.empty(T, G * D), torch.empty(G * T)
    for t in range(T):
        for g in range(G):
            cols = slice(g * D, (g + 1) * D)
            x, z, w = a["x"][t, cols].float(), a["z"][t, cols].float(), a["w"][cols].float()
            r = 1 / math.sqrt(float((x * x).sum()) / D + a["eps"])
            rstd[g * T + t] = r
            y[t, cols] = torch.tensor([float(x[i]) * r * float(w[i]) * float(z[i]) / (1 + math.exp(-float(z[i])))
                                       for i in range(D)])
    return {"y": y, "rstd": rstd}


# -- fla/modules/token_shift.py, token_shift_fwd (T <= 4096: the short kernel) ---------------------------------
def token_shift_inputs(device: str, B: int = 4, T: int = 2048, D: int = 2048, seed: int = 5) -> Inputs:
    import torch

    x = torch.randn(B, T, D, device=device, generator=_gen(device, seed)).to(torch.bfloat16)
    return {"x": x, "y": torch.empty_like(x), "B": B, "T": T, "D": D}


def token_shift_call(a: Inputs) -> tuple[Any, tuple[Any, ...], dict[str, Any]]:
    T, D = a["T"], a["D"]
    return (a["B"], T), (), dict(x=a["x"], y=a["y"], cu_seqlens=None, cache=None, cache_out=None, T=T, D=D,
                                 BD=1 << (D - 1).bit_length(), STORE_FINAL_STATE=False, IS_DECODE=T == 1)


def token_shift_reference(a: Inputs) -> Expected:
    import torch

    x = a["x"].float()
    shifted = torch.cat([torch.zeros_like(x[:, :1]), x[:, :-1]], 1)
    return {"y": ((shifted - x).to(torch.bfloat16), 1e-2, 1e-2)}


def token_shift_naive(a: Inputs) -> dict[str, Any]:
    import torch

    y = torch.empty_like(a["x"])
    for b in range(a["B"]):
        for t in range(a["T"]):
            prev = a["x"][b, t - 1].float() if t > 0 else torch.zeros(a["D"])
            y[b, t] = prev - a["x"][b, t].float()
    return {"y": y}


# -- vllm 0.33.0: vllm/model_executor/layers/fused_moe/fused_moe.py, fused_moe_kernel ----------------------------
BLOCK_M = 32  # the config the corpus builds (vLLM's E=128,N=768 H200 config for M = 256)


def moe_align_block_size(topk_ids: Any, block: int, experts: int) -> tuple[Any, Any, Any]:
    """vLLM's moe_align_block_size (a CUDA op there), in torch: the flat (token, slot) indices grouped by expert, each
    expert's group padded to a multiple of ``block`` with the index ``topk_ids.numel()``; the expert of each block; the
    padded total."""
    import torch

    flat = topk_ids.flatten().long()
    counts = torch.bincount(flat, minlength=experts)
    padded = (counts + block - 1) // block * block
    starts = torch.cumsum(padded, 0) - padded  # where each expert's group begins
    order = torch.argsort(flat, stable=True)  # flat indices, grouped by expert
    rank = torch.arange(flat.numel(), device=flat.device) - (torch.cumsum(counts, 0) - counts)[flat[order]]
    total = int(padded.sum())
    sorted_ids = torch.full((total,), flat.numel(), dtype=torch.int32, device=flat.device)
    sorted_ids[starts[flat[order]] + rank] = order.to(torch.int32)
    expert_ids = torch.repeat_interleave(torch.arange(experts, device=flat.device), padded // block).to(torch.int32)
    return sorted_ids, expert_ids, torch.tensor([total], dtype=torch.int32, device=flat.device)


def _route(device: str, M: int, E: int, top_k: int, g: Any) -> tuple[Any, Any]:
    """Softmax top-k routing with renormalized weights, as Qwen3's MoE routes: (topk_weights fp32, topk_ids int32)."""
    import torch

    probs = torch.softmax(torch.randn(M, E, device=device, generator=g), -1)
    weights, ids = torch.topk(probs, top_k, -1)
    return weights / weights.sum(-1, keepdim=True), ids.to(torch.int32)


def moe_inputs(device: str, stage: str, M: int = 256, E: int = 128, hidden: int = 2048, inter: int = 768, top_k: int = 8,
               seed: int = 6) -> Inputs:
    """Qwen3-30B-A3B's MoE layer; ``stage`` "w13" (gate/up: [M, hidden] -> [M, top_k, 2 inter]) or "w2" (down, the
    routed weights applied: [M * top_k, inter] -> [M, top_k, hidden])."""
    import torch

    g = _gen(device, seed)
    weights, ids = _route(device, M, E, top_k, g)
    sorted_ids, expert_ids, post = moe_align_block_size(ids, BLOCK_M, E)
    if stage == "w13":
        A = torch.randn(M, hidden, device=device, generator=g).to(torch.bfloat16)
        W = (torch.randn(E, 2 * inter, hidden, device=device, generator=g) * hidden ** -0.5).to(torch.bfloat16)
        C = torch.empty(M, top_k, 2 * inter, dtype=torch.bfloat16, device=device)
    else:
        A = torch.randn(M * top_k, inter, device=device, generator=g).to(torch.bfloat16)
        W = (torch.randn(E, hidden, inter, device=device, generator=g) * inter ** -0.5).to(torch.bfloat16)
        C = torch.empty(M, top_k, hidden, dtype=torch.bfloat16, device=device)
    return {"A": A, "W": W, "C": C, "topk_weights": weights, "topk_ids": ids, "sorted_ids": sorted_ids,
            "expert_ids": expert_ids, "num_tokens_post_padded": post, "stage": stage, "top_k": top_k}


def moe_call(a: Inputs) -> tuple[Any, tuple[Any, ...], dict[str, Any]]:
    """invoke_fused_moe_triton_kernel's launch (vLLM passes compute_type as tl.bfloat16: here its torch dtype for w13
    and its text for w2, the other two ways a call may give a Triton dtype without Triton)."""
    import torch

    A, W, C = a["A"], a["W"], a["C"]
    w2 = a["stage"] == "w2"
    top_k = 1 if w2 else a["top_k"]
    EM = a["sorted_ids"].shape[0]
    grid = lambda meta: (cdiv(EM, meta["BLOCK_SIZE_M"]) * cdiv(W.shape[1], meta["BLOCK_SIZE_N"]),)  # noqa: E731
    args = (A, W, C, None, None, None, a["topk_weights"], a["sorted_ids"], a["expert_ids"], a["num_tokens_post_padded"],
            W.shape[1], W.shape[2], EM, A.shape[0] * top_k, A.stride(0), A.stride(1), W.stride(0), W.stride(2),
            W.stride(1), C.stride(1), C.stride(2), 0, 0, 0, 0, 0, 0, 0, 0, 0)
    kwargs = dict(MUL_ROUTED_WEIGHT=w2, top_k=top_k, compute_type="tl.bfloat16" if w2 else torch.bfloat16,
                  use_fp8_w8a8=False, use_int8_w8a8=False, use_int8_w8a16=False, per_channel_quant=False,
                  naive_block_assignment=False, HAS_BIAS=False, BLOCK_SIZE_K=128, SWAP_AB=False, USE_TD=False,
                  BLOCK_SIZE_M=BLOCK_M, BLOCK_SIZE_N=256, GROUP_SIZE_M=16, SPLIT_K=1)
    return grid, args, kwargs


def moe_reference(a: Inputs) -> Expected:
    """Row (token t, slot k) of C: A's row (t for w13, t * top_k + k for w2) times expert topk_ids[t, k]'s matrix,
    w2 also times topk_weights[t, k]; computed one expert at a time in fp32."""
    import torch

    A, W, ids = a["A"].float(), a["W"], a["topk_ids"].long()
    M, top_k = ids.shape
    out = torch.empty(M * top_k, W.shape[1], device=A.device)
    pairs = torch.arange(M * top_k, device=A.device)
    rows = pairs if a["stage"] == "w2" else pairs // top_k
    for e in torch.unique(ids).tolist():
        sel = pairs[ids.flatten() == e]
        out[sel] = A[rows[sel]] @ W[e].float().t()
    if a["stage"] == "w2":
        out = out * a["topk_weights"].flatten()[:, None]
    return {"C": (out.view(M, top_k, -1).to(torch.bfloat16), 2e-2, 2e-2)}


def moe_naive(a: Inputs) -> dict[str, Any]:
    import torch

    ids, W = a["topk_ids"], a["W"].float()
    M, top_k = ids.shape
    C = torch.empty(a["C"].shape)
    for t in range(M):
        for k in range(top_k):
            row = a["A"][t * top_k + k if a["stage"] == "w2" else t].float()
            for n in range(W.shape[1]):
                value = float((row * W[int(ids[t, k]), n]).sum())
                C[t, k, n] = value * float(a["topk_weights"][t, k]) if a["stage"] == "w2" else value
    return {"C": C}


# -- gemlite 0.6.0.post2: gemlite/triton_kernels/gemv_revsplitK_kernels.py, gemv_revsplitK_forward -------------
def gemv_inputs(device: str, M: int = 4, K: int = 4096, N: int = 4096, group: int = 128, seed: int = 7,
                nonzero: int = 16) -> Inputs:
    """An A16W4 layer as gemlite packs it (A16W4_HQQ_INT, packing_bitwidth 32, fma mode): 4-bit values q [K, N] packed
    8 to an int32 along K (value k at bits 4 (k % 8) of W_q[k // 8]), W = q * scale + zero' per group of 128 rows.

    The kernel adds each K split's partial sum into the bf16 output with atomics, in an order that changes from run to
    run, and bf16 keeps 8 significant bits: with real-valued inputs the result depends on the order by a few bf16
    steps. So the values are chosen to make every order exact: ``nonzero`` entries of each row of x are ±1, the rest
    0; scales are 1 or 2 per group and zero' = -8 * scale, so W is an integer in [-16, 14]. Every partial sum, and
    every sum of them, is then an integer of magnitude at most 16 * nonzero = 256, which bf16 holds exactly: any
    split and any order give the reference's bits. The nonzero positions are random, so wrong unpacking, grouping
    or split indexing still shows."""
    import torch

    g = _gen(device, seed)
    q = torch.randint(0, 16, (K, N), device=device, generator=g, dtype=torch.int64)
    packed = (q.view(K // 8, 8, N) << (4 * torch.arange(8, device=device)).view(1, 8, 1)).sum(1)
    W_q = torch.where(packed >= 2 ** 31, packed - 2 ** 32, packed).to(torch.int32)
    scales = torch.randint(1, 3, (K // group, N), device=device, generator=g).to(torch.bfloat16)
    zeros = (-8 * scales.float()).to(torch.bfloat16)  # gemlite's fma mode stores -zero * scale
    x = torch.zeros(M, K, device=device)
    for m in range(M):
        where = torch.randperm(K, device=device, generator=g)[:nonzero]
        x[m, where] = torch.randint(0, 2, (nonzero,), device=device, generator=g).float() * 2 - 1
    return {"x": x.to(torch.bfloat16), "q": q, "W_q": W_q, "scales": scales, "zeros": zeros,
            "c": torch.zeros(M, N, dtype=torch.bfloat16, device=device), "M": M, "K": K, "N": N, "group": group}


def gemv_call(a: Inputs) -> tuple[Any, tuple[Any, ...], dict[str, Any]]:
    import torch

    x, W_q, c, scales = a["x"], a["W_q"], a["c"], a["scales"]
    M, K, N = x.shape[0], x.shape[1], W_q.shape[1]
    grid = lambda meta: (cdiv(M, meta["BLOCK_SIZE_M"]) * cdiv(N, meta["BLOCK_SIZE_N"]),  # noqa: E731
                         cdiv(K, meta["BLOCK_SIZE_K"] * 2))
    args = (x, W_q, c, scales, a["zeros"], None, M, N, K, 4, a["group"], 15, 8, 104, False, x.stride(0), x.stride(1),
            W_q.stride(0), W_q.stride(1), c.stride(0), c.stride(1), 0, 0, scales.stride(0), scales.stride(1))
    kwargs = dict(input_dtype=torch.bfloat16, output_dtype=torch.bfloat16, acc_dtype=torch.float32,
                  meta_dtype=torch.bfloat16, channel_scale_mode=0, W_group_mode=4, zero_is_scalar=False,
                  data_contiguous=True, dump_b_val=0)
    return grid, args, kwargs


def _dequantized(a: Inputs) -> Any:
    import torch

    per_row = lambda t: t.float().repeat_interleave(a["group"], 0)  # noqa: E731
    return (a["q"].float() * per_row(a["scales"]) + per_row(a["zeros"])).to(torch.bfloat16).float()


def gemv_reference(a: Inputs) -> Expected:
    """x @ W in fp32 from the dequantized weights: exact, as is the kernel's bf16 result for these inputs
    (:func:`gemv_inputs`), so the check is exact too."""
    return {"c": (a["x"].float() @ _dequantized(a), 0.0, 0.0)}


def gemv_naive(a: Inputs) -> dict[str, Any]:
    import torch

    c = torch.zeros(a["M"], a["N"])
    for n in range(a["N"]):
        column = []
        for k in range(a["K"]):  # unpack as the kernel does: (word >> 4 (k % 8)) & 15, the word a signed int32
            word = int(a["W_q"][k // 8, n])
            value = (word >> (4 * (k % 8))) & 15
            gi = k // a["group"]
            column.append(float(torch.tensor(value * float(a["scales"][gi, n]) + float(a["zeros"][gi, n]))
                                .to(torch.bfloat16)))
        col = torch.tensor(column)
        for m in range(a["M"]):
            c[m, n] = float((a["x"][m].float() * col).sum())
    return {"c": c}


CASES: dict[str, Case] = {c.name: c for c in (
    Case("fla_l2norm_fwd", l2norm_inputs, l2norm_call, l2norm_reference, l2norm_naive, {"T": 37}, {"T": 37}),
    Case("fla_chunk_local_cumsum_scalar", cumsum_scalar_inputs, cumsum_scalar_call, cumsum_scalar_reference,
         cumsum_scalar_naive, {"B": 2, "T": 150, "H": 3}, {"T": 150}),
    Case("fla_chunk_local_cumsum_vector_varlen", cumsum_vector_inputs, cumsum_vector_call, cumsum_vector_reference,
         cumsum_vector_naive, {"lens": (70, 5, 130), "H": 2, "S": 8}, {"lens": (70, 5, 130)}),
    Case("fla_fused_recurrent_gated_delta_rule_fwd", gdr_inputs, gdr_call, gdr_reference, gdr_naive,
         {"B": 1, "T": 3, "H": 2, "HV": 4, "K": 8, "V": 8}, {"B": 1, "T": 2}),
    Case("fla_gated_rmsnorm_fwd", gated_rmsnorm_inputs, gated_rmsnorm_call, gated_rmsnorm_reference,
         gated_rmsnorm_naive, {"T": 3, "G": 2, "D": 128}, {"T": 3, "G": 2}),
    Case("fla_token_shift_fwd", token_shift_inputs, token_shift_call, token_shift_reference, token_shift_naive,
         {"B": 2, "T": 5, "D": 16}, {"B": 2, "T": 5}),
    Case("vllm_fused_moe_w13", lambda device, **kw: moe_inputs(device, "w13", **kw), moe_call, moe_reference,
         moe_naive, {"M": 5, "E": 16, "hidden": 32, "inter": 16}, {"M": 5, "E": 16, "hidden": 32, "inter": 16}),
    Case("vllm_fused_moe_w2", lambda device, **kw: moe_inputs(device, "w2", **kw), moe_call, moe_reference,
         moe_naive, {"M": 5, "E": 16, "hidden": 32, "inter": 16}, {"M": 5, "E": 16, "hidden": 32, "inter": 16}),
    Case("gemlite_a16w4_gemv", gemv_inputs, gemv_call, gemv_reference, gemv_naive,
         {"M": 2, "K": 256, "N": 16, "group": 128}, {"M": 1}),
)}
