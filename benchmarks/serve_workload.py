"""The service start-up that benchmarks/serve_startup.py measures: liger-kernel's own forward ops and the generated
kernels of ``serve_gen`` (a module serve_startup.py writes beside the workload) run once each on CUDA tensors. The
model code is the same whether Triton or tmlr serves it; ``--serve DIR`` adds the one start-up call
(``tmlr_runtime.serve(DIR, stand_in_triton=True)``) and ``--block-triton`` makes ``import triton`` fail first, as
in a service without Triton (tests/blocked_run.py does the same).

    python benchmarks/serve_workload.py [--block-triton] [--serve DIR] [--only liger|gen] [--save OUT.pt]
                                        [--compare REF.pt] [--steady ROUNDS]

Prints one line ``SERVE_WORKLOAD {json}``: the phases on the monotonic clock (Linux: one clock for all processes,
so ``spawn_to_first_s`` counts from the parent's ``$SERVE_SPAWN_T``), each op's first-call time and error, the
process's RSS, and with ``--compare`` each output against the reference file's. ``--steady N`` then times a served
``kernel[grid](...)`` against ``Kernel.load(dir)(grid, ...)`` (and ``Kernel.load(dir)[grid](...)``) of the same artifact
(N interleaved rounds).
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
from typing import Any, Callable

T0 = time.monotonic()
HERE = os.path.dirname(os.path.abspath(__file__))
ROWS, COLS = 64, 1024  # every liger op: 64 rows of 1024 fp32; the generated kernels: 65536 fp32
GEN_N = 1 << 16
MARK = "SERVE_WORKLOAD "


def rss_kib() -> dict[str, int]:
    """VmRSS and VmHWM (the peak) of this process, from /proc (Linux)."""
    out = {}
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                key = line.split(":")[0]
                if key in ("VmRSS", "VmHWM"):
                    out[key] = int(line.split()[1])
    except OSError:
        pass
    return out


class LaunchClock:
    """Seconds spent in ``kernel[grid](...)``: its ``__getitem__`` and the launch it returns (the outermost launch only),
    patched on the kernel objects' base class of each mode (Triton's ``KernelInterface``, or the stand-in's, after
    ``serve()`` put its own ``__getitem__`` there): the kernels' own share of the first calls (compiles, cache reads,
    module loads, argument checks), without the torch work of the ops around them (allocations, torch's own kernels
    loaded at their first use), which is the same whoever serves the kernels."""

    def __init__(self) -> None:
        self.s, self.calls, self._depth = 0.0, 0, 0
        self.each: list[tuple[str, float]] = []  # (kernel, seconds) of each timed launch, its __getitem__ included
        self._undo: list[Callable[[], None]] = []
        self.gc_s, self.gc_runs, self._gc_t = 0.0, 0, 0.0  # Python's collections that ran inside the timed launches
        gc.callbacks.append(self._gc)

    def _gc(self, phase: str, info: dict[str, Any]) -> None:
        if not self._depth:
            return
        if phase == "start":
            self._gc_t = time.perf_counter()
        else:
            self.gc_s += time.perf_counter() - self._gc_t
            self.gc_runs += 1

    def wrap(self, fn: Callable[..., Any], name: str = "?", t_getitem: float = 0.0) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            if self._depth:
                return fn(*args, **kwargs)
            self._depth += 1
            t = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                took = time.perf_counter() - t
                self.s += took
                self.calls += 1
                self.each.append((name, took + t_getitem))
                self._depth -= 1
        return timed

    def time_getitem(self, cls: type) -> None:
        original = cls.__getitem__  # type: ignore[attr-defined]

        def __getitem__(obj: Any, grid: Any) -> Any:
            t = time.perf_counter()
            self._depth += 1
            try:
                launcher = original(obj, grid)
            finally:
                self._depth -= 1
                took = time.perf_counter() - t
                self.s += took
            return self.wrap(launcher, _kernel_name(obj), took)

        cls.__getitem__ = __getitem__  # type: ignore[attr-defined]
        self._undo.append(lambda: setattr(cls, "__getitem__", original))

    def stop(self) -> None:
        """Take the timing off (the steady-state launches after the first calls are timed without it)."""
        while self._undo:
            self._undo.pop()()
        if self._gc in gc.callbacks:
            gc.callbacks.remove(self._gc)


def _kernel_name(obj: Any) -> str:
    while not hasattr(obj, "__name__") and hasattr(obj, "fn"):  # @triton.autotune / @triton.heuristics wrappers
        obj = obj.fn
    return getattr(obj, "__name__", type(obj).__name__)


def liger_ops(torch: Any, g: Any) -> list[tuple[str, Callable[[], Any]]]:
    """liger-kernel's forward functions as a model calls them (their own Python around ``kernel[grid](...)``)."""
    from liger_kernel.ops.cross_entropy import cross_entropy_forward
    from liger_kernel.ops.geglu import geglu_forward
    from liger_kernel.ops.layer_norm import layer_norm_forward
    from liger_kernel.ops.relu_squared import relu_squared_forward
    from liger_kernel.ops.rms_norm import rms_norm_forward
    from liger_kernel.ops.softmax import _softmax_forward
    from liger_kernel.ops.swiglu import swiglu_forward

    x, a, b = (torch.randn(ROWS, COLS, device="cuda", generator=g) for _ in range(3))
    w, bias = torch.randn(COLS, device="cuda", generator=g), torch.randn(COLS, device="cuda", generator=g)
    logits = torch.randn(ROWS, COLS, device="cuda", generator=g)
    target = torch.randint(0, COLS, (ROWS,), device="cuda", generator=g)
    return [
        ("liger.rms_norm", lambda: rms_norm_forward(x, w, 1e-6, 0.0, "llama", False)[0]),
        ("liger.layer_norm", lambda: layer_norm_forward(x, w, bias, 1e-6)[0]),
        ("liger.swiglu", lambda: swiglu_forward(a, b)[2]),
        ("liger.geglu", lambda: geglu_forward(a, b)[2]),
        ("liger.softmax", lambda: _softmax_forward(x)[0]),
        ("liger.relu_squared", lambda: relu_squared_forward(x)),
        ("liger.cross_entropy", lambda: cross_entropy_forward(logits, target, None, -100, 0.0, 0.0, "mean", None, False)[0]),
    ]


def gen_ops(torch: Any, g: Any) -> list[tuple[str, Callable[[], Any]]]:
    import serve_gen

    x, y = torch.randn(GEN_N, device="cuda", generator=g), torch.randn(GEN_N, device="cuda", generator=g)
    return [(f"gen.{name}", (lambda i=i: serve_gen.run(i, x, y))) for i, name in enumerate(serve_gen.NAMES)]


def first_calls(ops: list[tuple[str, Callable[[], Any]]], torch: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """Each op called once and synchronized: ``({name: {"s": seconds, "error": text}}, {name: output})``."""
    report, outputs = {}, {}
    for name, op in ops:
        t = time.monotonic()
        try:
            outputs[name] = op()
            torch.cuda.synchronize()
            report[name] = {"s": time.monotonic() - t}
        except Exception as e:  # noqa: BLE001 - one op's failure is reported, the others still run
            lines = str(e).strip().splitlines()
            report[name] = {"s": time.monotonic() - t, "error": f"{type(e).__name__}: {lines[0] if lines else ''}"[:400]}
    return report, outputs


def compare(outputs: dict[str, Any], path: str, torch: Any) -> dict[str, Any]:
    """Each output against the reference's: bit-equal, allclose, the largest difference."""
    ref = torch.load(path)
    out = {}
    for name, got in outputs.items():
        want = ref.get(name)
        if want is None:
            out[name] = {"missing_in_reference": True}
            continue
        got = got.cpu()
        same_shape = got.shape == want.shape and got.dtype == want.dtype
        out[name] = {"equal": bool(same_shape and torch.equal(got, want)),
                     "allclose": bool(same_shape and torch.allclose(got, want, rtol=1e-5, atol=1e-6)),
                     "max_abs_diff": float((got.double() - want.double()).abs().max()) if same_shape else None}
    return out


def steady(directory: str, rounds: int, torch: Any) -> dict[str, Any]:
    """µs per launch of a served ``kernel[grid](...)`` and of ``Kernel.load(dir)(grid, ...)`` of its artifact, for one
    generated kernel and liger's rms_norm kernel, in interleaved rounds (benchmarks/harness.py)."""
    sys.path.insert(0, HERE)
    import harness
    import serve_gen
    import tmlr_runtime as tr
    from liger_kernel.ops import rms_norm as rn

    with open(os.path.join(directory, "serve.json"), encoding="utf-8") as f:
        artifact = {e["kernel"]: e["artifact"] for e in json.load(f)["kernels"]}
    x, y = torch.randn(GEN_N, device="cuda"), torch.randn(GEN_N, device="cuda")
    out = torch.empty_like(x)
    gen_kernel = getattr(serve_gen, serve_gen.NAMES[0])
    gen_args, gen_grid = (x, y, out, GEN_N), (GEN_N // 1024,)
    X, W = torch.randn(ROWS, COLS, device="cuda"), torch.randn(COLS, device="cuda")
    Y, R = torch.empty_like(X), torch.empty(ROWS, device="cuda")
    rms_args = (Y, COLS, X, COLS, W, 1, R, 1, COLS, 1e-6, 0.0)
    rms_kw = dict(casting_mode=0, elementwise_affine=True, BLOCK_SIZE=1024, num_warps=4)
    cases = {serve_gen.NAMES[0]: (gen_kernel, gen_grid, gen_args, {"BLOCK": 1024}),
             "_rms_norm_forward_kernel": (rn._rms_norm_forward_kernel, (ROWS,), rms_args, rms_kw)}
    result: dict[str, Any] = {}
    for name, (kernel, grid, args, kw) in cases.items():
        errors: dict[str, str] = {}
        try:
            direct = tr.Kernel.load(os.path.join(directory, artifact[name]))
        except Exception as e:  # noqa: BLE001
            result[name] = {"errors": {"load": harness.error_text(e)}}
            continue
        # direct: the call a careful engineer writes; direct[]: the same kernel launched as served code is, through
        # Kernel.__getitem__ (a Python call and a partial), which is what a served launch is at best
        systems = {"served": harness.repeated(lambda k=kernel, g=grid, a=args, w=kw: k[g](*a, **w)),
                   "direct": harness.repeated(lambda d=direct, g=grid, a=args, w=kw: d(g, *a, **w)),
                   "direct[]": harness.repeated(lambda d=direct, g=grid, a=args, w=kw: d[g](*a, **w))}
        samples = harness.interleave(systems, rounds, 200, sync=torch.cuda.synchronize, errors=errors)
        result[name] = {"samples_us": samples, "errors": errors}
    return result


def write_profile(profiler: Any, path: str) -> None:
    """cProfile's statistics as text, the 60 largest by cumulative time and by own time."""
    import io
    import pstats

    text = io.StringIO()
    for order in ("cumulative", "tottime"):
        pstats.Stats(profiler, stream=text).sort_stats(order).print_stats(60)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text.getvalue())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--block-triton", action="store_true", help="make `import triton` fail (a service without Triton)")
    ap.add_argument("--serve", metavar="DIR", help="tmlr_runtime.serve(DIR, stand_in_triton=True) before the model imports")
    ap.add_argument("--only", choices=("liger", "gen"), help="run only these ops")
    ap.add_argument("--save", metavar="OUT.pt", help="torch.save every op's output (on the CPU) here")
    ap.add_argument("--compare", metavar="REF.pt", help="compare every op's output with this file's")
    ap.add_argument("--profile", metavar="FILE", help="write cProfile's statistics of the runtime's start and the first "
                    "calls to FILE (text: by cumulative and by own time)")
    ap.add_argument("--steady", type=int, default=0, metavar="ROUNDS", help="then time served against direct launches")
    a = ap.parse_args(argv)
    if a.block_triton:
        sys.modules["triton"] = None  # type: ignore[assignment]
    import torch

    torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
    t_torch = time.monotonic()
    server, clock = None, LaunchClock()
    profiler = None
    if a.profile:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    if a.serve:
        import tmlr_runtime

        server = tmlr_runtime.serve(a.serve, stand_in_triton=True)
        from tmlr_runtime.serving import stand_in

        clock.time_getitem(stand_in.KernelInterface)
    elif not a.block_triton:
        from triton.runtime.jit import KernelInterface  # Triton's own start-up, timed apart from the model's imports

        clock.time_getitem(KernelInterface)
    t_serve = time.monotonic()
    if profiler is not None:
        profiler.disable()
    g = torch.Generator(device="cuda")
    g.manual_seed(0)
    ops, import_errors = [], {}
    for name, source in (("liger", liger_ops), ("gen", gen_ops)):
        if a.only in (None, name):
            try:
                ops += source(torch, g)
            except Exception as e:  # noqa: BLE001 - a library that does not import is reported; the rest still runs
                import_errors[name] = f"{type(e).__name__}: {e}"[:400]
    torch.cuda.synchronize()
    # the collection the imports left owing (torch's and the library's objects: 0.24 s on an H100 host) runs here, in
    # every mode, not inside whichever first launch happens to tip the collector's threshold
    gc.collect()
    t_imports = time.monotonic()
    if profiler is not None:
        profiler.enable()
    report, outputs = first_calls(ops, torch)
    t_first = time.monotonic()
    if profiler is not None:
        profiler.disable()
        write_profile(profiler, a.profile)
    clock.stop()
    spawn = float(os.environ.get("SERVE_SPAWN_T", "nan"))
    doc: dict[str, Any] = {
        "mode": "tmlr_serve" if a.serve else "triton", "triton_blocked": a.block_triton, "kernels": len(ops),
        "ok": sum("error" not in r for r in report.values()), "ops": report, "import_errors": import_errors,
        "phases_s": {"torch": t_torch - T0, "runtime_start": t_serve - t_torch, "model_imports": t_imports - t_serve,
                     "first_launches": t_first - t_imports, "after_torch": t_first - t_torch,
                     "in_launches": clock.s, "kernels_own": t_serve - t_torch + clock.s},
        "launch_calls": clock.calls, "gc_in_launches": {"s": clock.gc_s, "runs": clock.gc_runs},
        "slowest_launches_s": [[k, round(s, 5)] for k, s in sorted(clock.each, key=lambda e: -e[1])[:6]],
        "bytecode_cache": not sys.dont_write_bytecode,
        "spawn_to_first_s": t_first - spawn, "rss_kib": rss_kib(),
        "triton_in_sys_modules": sys.modules.get("triton") is not None}
    if server is not None:
        from tmlr_runtime.launch import compiled

        doc["launch_path"] = compiled.describe()
    if a.block_triton:
        from torch.utils._triton import has_triton

        doc["torch_has_triton"] = has_triton()
    if a.save:
        torch.save({k: v.detach().cpu() for k, v in outputs.items()}, a.save)
    if a.compare:
        doc["compare"] = compare(outputs, a.compare, torch)
    if a.steady and a.serve:
        doc["steady"] = steady(a.serve, a.steady, torch)
    print(MARK + json.dumps(doc), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
