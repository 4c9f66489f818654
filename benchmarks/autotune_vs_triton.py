"""An autotuned family tuned by tmlr on this GPU, against Triton's own @triton.autotune on the same GPU, in one process.

    python benchmarks/autotune_vs_triton.py FAMILY [--json OUT.json] [--reps N] [--rounds N]

FAMILY: examples/autotune/matmul built on a CPU machine with the Triton release this process imports
(``tmlr-build --python VENV/bin/python --spec examples/autotune/kernels.json -o OUT``), so both sides
run the same compiler's code. For each shape (and fp16 / bf16):

1. tmlr tunes the call (``KernelFamily.tune``: every config benchmarked, data preserved) and launches
   it; the result is checked against torch.
2. Triton's autotuner runs the same kernel file (``matmul[grid](...)``), records ``best_config``;
   its result is checked against torch too.
3. Every config of the family is then re-timed through tmlr, independently of the tuning run
   (L2 flushed before each launch, CUDA events, ``reps`` launches per round, ``rounds`` rounds
   alternating the order), and so are tmlr's chosen launch and Triton's tuned launch; medians over
   all samples. ``chosen / fastest`` is the time of tmlr's choice over the fastest config's.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from typing import Any, Callable

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tmlr_runtime as tr  # noqa: E402
from bench_common import EXAMPLES, stats, triton_version, write_json  # noqa: E402

SHAPES = [(512, 512, 512, "fp16"), (1024, 1024, 1024, "fp16"), (2048, 2048, 2048, "fp16"), (4096, 4096, 4096, "fp16"),
          (1000, 1024, 1040, "fp16"), (8192, 1024, 4096, "fp16"), (2048, 2048, 2048, "bf16"), (1000, 1024, 1040, "bf16")]
DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}
FLUSH = torch.empty(256 << 20, dtype=torch.int8, device="cuda")


def triton_matmul() -> Any:
    path = os.path.join(EXAMPLES, "autotune", "matmul.py")
    spec = importlib.util.spec_from_file_location("tmlr_autotune_example", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.matmul


def grid_of(M: int, N: int) -> Callable[[dict[str, Any]], tuple[int]]:
    return lambda meta: (((M + meta["BLOCK_M"] - 1) // meta["BLOCK_M"]) * ((N + meta["BLOCK_N"] - 1) // meta["BLOCK_N"]),)


def time_all(systems: dict[str, Callable[[], None]], reps: int, rounds: int) -> dict[str, dict[str, Any]]:
    """Median ms per launch of each system, L2 flushed before each launch, order alternating per round."""
    samples: dict[str, list[float]] = {k: [] for k in systems}
    names = list(systems)
    for f in systems.values():  # warm-up
        f()
    for r in range(rounds):
        for name in names if r % 2 == 0 else reversed(names):
            ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
            for e0, e1 in ev:
                FLUSH.zero_()
                e0.record()
                systems[name]()
                e1.record()
            torch.cuda.synchronize()
            samples[name] += [e0.elapsed_time(e1) for e0, e1 in ev]
    return {k: stats(v, 5) for k, v in samples.items()}


def config_index(family: Any, best: Any) -> int | None:
    for i, c in enumerate(family.configs):
        if dict(c.kwargs) == dict(best.kwargs) and c.num_warps == best.num_warps and c.num_stages == best.num_stages:
            return i
    return None


def one_shape(family: Any, triton_fn: Any, M: int, N: int, K: int, dt: str, reps: int, rounds: int) -> dict[str, Any]:
    a = torch.randn(M, K, device="cuda", dtype=DTYPES[dt])
    b = torch.randn(K, N, device="cuda", dtype=DTYPES[dt])
    c_tmlr, c_triton = (torch.empty(M, N, device="cuda", dtype=DTYPES[dt]) for _ in range(2))
    args = lambda c: (a, b, c, M, N, K, a.stride(0), b.stride(0), c.stride(0))  # noqa: E731
    grid = grid_of(M, N)
    ref = (a.float() @ b.float())
    chosen, tune_ms = family.tune(grid, *args(c_tmlr))
    family(grid, *args(c_tmlr))
    triton_fn[grid](*args(c_triton))
    torch.cuda.synchronize()
    tol = dict(atol=0.5 if dt == "bf16" else 0.1, rtol=2e-2)
    doc: dict[str, Any] = {"shape": [M, N, K], "dtype": dt, "tmlr_config": chosen, "tmlr_tuning_ms": tune_ms,
                           "triton_config": config_index(family, triton_fn.best_config), "triton_best_config": str(triton_fn.best_config),
                           "tmlr_correct": bool(torch.allclose(c_tmlr.float(), ref, **tol)),
                           "triton_correct": bool(torch.allclose(c_triton.float(), ref, **tol)),
                           "variant": family.choose(*args(c_tmlr)).vid}
    systems: dict[str, Callable[[], None]] = {"tmlr_chosen": lambda: family(grid, *args(c_tmlr)),
                                              "triton_autotuned": lambda: triton_fn[grid](*args(c_triton))}
    for i in range(len(family.configs)):
        member = family.variant(i, *args(c_tmlr))
        g = grid(member.constexprs)
        systems[f"config_{i}"] = lambda k=member.kernel, g=g: k(g, *args(c_tmlr))
    doc["ms"] = time_all(systems, reps, rounds)
    per_config = {i: doc["ms"][f"config_{i}"]["median"] for i in range(len(family.configs))}
    fastest = min(per_config, key=per_config.__getitem__)
    doc.update(fastest_config=fastest, chosen_over_fastest=round(per_config[chosen] / per_config[fastest], 4),
               tmlr_over_triton=round(doc["ms"]["tmlr_chosen"]["median"] / doc["ms"]["triton_autotuned"]["median"], 4))
    return doc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("family")
    ap.add_argument("--json")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args(argv)
    family = tr.Kernel.load(args.family, tuning="tune")
    triton_fn = triton_matmul()
    results: dict[str, Any] = {"device": torch.cuda.get_device_name(), "triton": triton_version(), "family": args.family,
                               "reps": args.reps, "rounds": args.rounds, "shapes": []}
    ok = True
    for M, N, K, dt in SHAPES:
        d = one_shape(family, triton_fn, M, N, K, dt, args.reps, args.rounds)
        results["shapes"].append(d)
        ms = d["ms"]
        print(f"{dt} {M}x{N}x{K}: tmlr config {d['tmlr_config']} {ms['tmlr_chosen']['median']:.4f} ms | fastest config "
              f"{d['fastest_config']} (chosen/fastest {d['chosen_over_fastest']:.3f}) | Triton config {d['triton_config']} "
              f"{ms['triton_autotuned']['median']:.4f} ms | tmlr/Triton {d['tmlr_over_triton']:.3f} | correct "
              f"{d['tmlr_correct']}/{d['triton_correct']}")
        ok &= d["tmlr_correct"] and d["triton_correct"] and d["chosen_over_fastest"] <= 1.05
        if args.json:
            write_json(args.json, results)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
