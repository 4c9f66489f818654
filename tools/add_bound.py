"""Whether benchmarks/launch.py's 1M-element add measures the launch path or the kernel, on a machine with a GPU.

    python3 tools/add_bound.py [--build BLOCK:WARPS,...] [--rounds 7] [--json OUT]

launch.py times ``kernel(grid, x, y, out, n)`` back to back: once the GPU takes longer per kernel than the host
takes per launch, the queue fills and the figure is the kernel's GPU time, whatever launches it. Here each
system, in interleaved rounds (benchmarks/harness.py), is timed two ways:

- ``host``: µs per call in a burst of 3,000 back-to-back calls ending in one synchronize (what launch.py
  measures);
- ``gpu``: µs per kernel of a CUDA graph of 200 captured calls, replayed and timed with CUDA events (no host
  work at all).

Systems: tmlr launching ``examples/artifacts/add`` (BLOCK 1024, 4 warps: the artifact launch.py uses), tmlr
launching each ``--build`` of ``examples/kernels/vector_add.py:add`` with another BLOCK and warp count (built here
by ``python -m tmlr_build`` for this GPU, so this process's Triton is needed), and ``torch.add(x, y, out=out)``.
Every output is checked against ``x + y``.
"""
from __future__ import annotations

import argparse
import functools
import os
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "benchmarks")]
import harness  # noqa: E402

N = 1 << 20
BURST, CAPTURED, REPLAYS = 3000, 200, 5


def build(spec: str, out: str, arch: str) -> tuple[str, int]:
    """``BLOCK:WARPS`` built into ``out``; its directory and BLOCK."""
    block, warps = (int(v) for v in spec.split(":"))
    name = f"add_b{block}_w{warps}"
    subprocess.run([sys.executable, "-m", "tmlr_build", os.path.join(ROOT, "examples", "kernels", "vector_add.py") + ":add",
                    "--signature", f"*fp32:16, *fp32:16, *fp32:16, i32, {block}", "--num-warps", str(warps), "--arch", arch,
                    "--name", name, "-o", out, "-q"], check=True)
    return os.path.join(out, name), block


def host_time(call: Callable[[], Any], sync: Callable[[], None]) -> float:
    sync()
    t0 = time.perf_counter()
    for _ in range(BURST):
        call()
    sync()
    return (time.perf_counter() - t0) / BURST * 1e6


def gpu_time(torch: Any, graph: Any) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(REPLAYS):
        graph.replay()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1e3 / (REPLAYS * CAPTURED)


def capture(torch: Any, call: Callable[[], Any]) -> Any:
    graph, stream = torch.cuda.CUDAGraph(), torch.cuda.Stream()
    with torch.cuda.stream(stream):
        call()
        torch.cuda.synchronize()
        with torch.cuda.graph(graph, stream=stream):
            for _ in range(CAPTURED):
                call()
    return graph


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="", help="comma-separated BLOCK:WARPS builds of vector_add.py:add to time as well")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    import torch

    import tmlr_runtime as tr

    x, y, out = (torch.randn(N, device="cuda") for _ in range(3))
    major, minor = torch.cuda.get_device_capability()
    tmp = tempfile.mkdtemp()
    kernels = [(os.path.join(ROOT, "examples", "artifacts", "add"), 1024)]
    kernels += [build(spec, tmp, f"{major}{minor}") for spec in a.build.split(",") if spec]
    calls: dict[str, Callable[[], Any]] = {}
    for d, block in kernels:
        k = tr.Kernel.load(d)
        calls[f"tmlr BLOCK {block}, {k.variant.num_warps} warps"] = functools.partial(k, -(-N // block), x, y, out, N)
    calls["torch.add"] = functools.partial(torch.add, x, y, out=out)
    correct = {}
    for name, call in calls.items():
        out.zero_()
        call()
        torch.cuda.synchronize()
        correct[name] = bool(torch.equal(out, x + y))
    graphs = {name: capture(torch, call) for name, call in calls.items()}
    samples: dict[str, list[float]] = {f"{name}/{how}": [] for name in calls for how in ("host", "gpu")}
    for r in range(a.rounds):
        for name in harness.order(list(calls), r):
            samples[f"{name}/host"].append(host_time(calls[name], torch.cuda.synchronize))
            samples[f"{name}/gpu"].append(gpu_time(torch, graphs[name]))
    measurements = {key: harness.stats(v, "us") for key, v in samples.items()}
    for name in calls:
        if name != "torch.add":
            measurements[f"{name}/host÷torch.add host"] = harness.ratio(samples[f"{name}/host"], samples["torch.add/host"])
    harness.finish({"add_bound": harness.question(measurements, settings={"rounds": a.rounds, "n": N, "burst": BURST,
                                                                       "captured": CAPTURED}, facts={"correct": correct})}, a.json)
    return 0 if all(correct.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
