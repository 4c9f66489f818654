"""CUDA-graph replay of launch functions, and what each captured graph holds (for launch_overhead.py).

A graph is captured either by torch (``torch.cuda.graph``, as users capture) or straight through
the driver (``cuStreamBeginCapture`` on a torch stream, ``cuGraphInstantiate`` with no flags, as
the C floor does), so the suite can tell a difference made by the launcher from one made by the
capture. Every graph's nodes are listed by type, and its kernel nodes by function, grid, block
and shared memory: a memory-allocation node, a memset or a different kernel would show there.
"""
from __future__ import annotations

from collections import Counter
from typing import Any, Callable

import torch
from cuda.bindings import driver as drv

from bench_common import error_text, guarded

Launch = Callable[[], None]


def _ok(result: Any, what: str) -> Any:
    err, *rest = result
    if int(err):
        raise RuntimeError(f"{what}: {err}")
    return rest[0] if len(rest) == 1 else rest


def graph_nodes(graph: Any) -> dict[str, Any]:
    """Node counts by type, and kernel nodes by (function, grid, block, shared)."""
    g = graph if isinstance(graph, drv.CUgraph) else drv.CUgraph(int(graph))
    _, count = _ok(drv.cuGraphGetNodes(g, 0), "cuGraphGetNodes")
    nodes, count = _ok(drv.cuGraphGetNodes(g, count), "cuGraphGetNodes")
    types: Counter[str] = Counter()
    kernels: Counter[str] = Counter()
    for node in nodes[:count]:
        t = _ok(drv.cuGraphNodeGetType(node), "cuGraphNodeGetType")
        types[t.name.removeprefix("CU_GRAPH_NODE_TYPE_")] += 1
        if t == drv.CUgraphNodeType.CU_GRAPH_NODE_TYPE_KERNEL:
            p = _ok(drv.cuGraphKernelNodeGetParams(node), "cuGraphKernelNodeGetParams")
            kernels[f"func {int(p.func):#x} grid {p.gridDimX}x{p.gridDimY}x{p.gridDimZ} "
                    f"block {p.blockDimX}x{p.blockDimY}x{p.blockDimZ} shared {p.sharedMemBytes}"] += 1
    return {"nodes": count, "types": dict(types), "kernel_nodes": dict(kernels)}


def listed_nodes(get_graph: Callable[[], Any]) -> dict[str, Any]:
    """:func:`graph_nodes` of ``get_graph()``, or the error that stopped it (the replay is timed
    all the same)."""
    try:
        return graph_nodes(get_graph())
    except Exception as e:  # noqa: BLE001 - a diagnostic must not cost the measurement
        return {"error": error_text(e)}


def _warm(f: Launch, stream: torch.cuda.Stream) -> None:
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):  # first-call paths run outside the capture, as torch recommends
        for _ in range(3):
            f()
    torch.cuda.synchronize()


def torch_graph(f: Launch, n: int) -> tuple[Launch, dict[str, Any] | None]:
    """``n`` calls of ``f`` captured with ``torch.cuda.graph``: its replay and its nodes (None
    when this torch cannot keep the captured graph for inspection)."""
    _warm(f, torch.cuda.Stream())
    try:
        g, kept = torch.cuda.CUDAGraph(keep_graph=True), True
    except TypeError:  # an older torch: the graph is gone once instantiated
        g, kept = torch.cuda.CUDAGraph(), False
    with torch.cuda.graph(g):
        for _ in range(n):
            f()
    if not kept:
        return g.replay, None
    g.instantiate()
    return g.replay, listed_nodes(g.raw_cuda_graph)


def driver_graph(f: Launch, n: int) -> tuple[Launch, dict[str, Any]]:
    """``n`` calls of ``f`` captured with the driver API on a torch stream (``f`` launches on
    torch's current stream), instantiated with no flags; its replay goes to torch's current stream."""
    side = torch.cuda.Stream()
    _warm(f, side)
    handle = side.cuda_stream
    with torch.cuda.stream(side):
        _ok(drv.cuStreamBeginCapture(handle, drv.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_GLOBAL), "cuStreamBeginCapture")
        try:
            for _ in range(n):
                f()
        finally:
            graph = _ok(drv.cuStreamEndCapture(handle), "cuStreamEndCapture")
    exe = _ok(drv.cuGraphInstantiate(graph, 0), "cuGraphInstantiate")
    nodes = listed_nodes(lambda: graph)

    def replay() -> None:
        _ok(drv.cuGraphLaunch(exe, torch.cuda.current_stream().cuda_stream), "cuGraphLaunch")

    replay._keep = (graph, exe)  # type: ignore[attr-defined]
    return replay, nodes


def replay_samples(replays: dict[str, Launch], n: int, rounds: int, errors: dict[str, str]) -> dict[str, list[float]]:
    """GPU µs per kernel of each replay (CUDA events around it), systems round-robin per round."""
    live = dict(replays)
    for name, r in list(live.items()):

        def first(r: Launch = r) -> bool:  # the first replay uploads the graph
            r()
            torch.cuda.synchronize()
            return True

        if not guarded(errors, name, first, False):
            del live[name]
    samples: dict[str, list[float]] = {k: [] for k in live}
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(rounds):
        for name, r in live.items():
            e0.record()
            r()
            e1.record()
            e1.synchronize()
            samples[name].append(e0.elapsed_time(e1) * 1000.0 / n)
    return samples
