"""The kernel developer's edit loop: an edited .ttgir rebuilt and launched, tmlr's jit against Triton in-process.

    python benchmarks/edit_loop.py [--rounds N] [--firsts N] [--build-only] [--json OUT.json]

The kernel is the fp16 matmul of examples/kernels/matmul.py (BM=BN=BK... 64, 64, 32; 4 warps, 2 stages),
its finished TTGIR written once by tmlr-build with this machine's Triton (outside the timing). One edit
changes the accumulator's initial value (``dense<0.0>`` -> ``dense<K.0>``, K the round), so the file's
bytes and the cubin differ every time and C = A @ B + K tells that the edit ran.

- ``per_edit`` (one process, interleaved rounds, harness.py): each round edits each system's own copy
  of the file and times, on it, ``triton``: ``triton.compile(path)`` + ``kernel[grid](...)``;
  ``tmlr``: ``@tmlr_build.jit``'s ``mm[grid](..., ttgir_dir=D)`` (the build in this process);
  ``tmlr_isolated``: the same with ``jit(isolate=True)`` (a worker process per build, as before);
  each followed by a device synchronize. Ratios per round.
- ``first_call``: a fresh process per sample (``--firsts`` each, alternating), timing the first call
  after the imports and the tensors: Triton's compile + launch against tmlr's jit call.

``--build-only`` (no GPU, no torch): the same without launching - ``triton.compile`` against
``mm.build_only(..., arch=90)`` - for the build's share on a machine without a GPU.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [ROOT, HERE, os.path.join(ROOT, "examples", "kernels")]
import harness  # noqa: E402

SIG = "*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, i32:16, i32:16, i32:16, 64, 64, 32"
CONSTEXPRS = {"BM": 64, "BN": 64, "BK": 32}
SIZE = 256  # M = N = K: every int a multiple of 16, as the signature says
ACC_INIT = re.compile(r"dense<[-+.\de]+> : tensor<64x64xf32, #mma")


def prepare(out: str, capability: int) -> str:
    """The finished TTGIR of the matmul (and its sidecars) in ``out/ir``, built by tmlr-build with this Triton."""
    from tmlr_build import BuildConfig, build, parse_arch_list, request

    build([request(os.path.join(ROOT, "examples", "kernels", "matmul.py:matmul"), signature=SIG,
                   options={"num_warps": 4, "num_stages": 2})],
          BuildConfig(out=os.path.join(out, "built"), archs=parse_arch_list(str(capability)), keep_ir=True,
                      progress=False))
    arch_dir = os.listdir(os.path.join(out, "built", "matmul", "ir"))[0]
    shutil.copytree(os.path.join(out, "built", "matmul", "ir", arch_dir), os.path.join(out, "ir"))
    return os.path.join(out, "ir")


def copy_of(ir: str, tmp: str, name: str) -> str:
    """A system's own copy of the IR folder (so that no edit of one is seen by another)."""
    dest = os.path.join(tmp, name)
    shutil.copytree(ir, dest)
    return dest


def edit(folder: str, k: float) -> str:
    """Start the accumulator at ``k``; the .ttgir's path."""
    path = os.path.join(folder, "matmul.ttgir")
    with open(path) as f:
        text = f.read()
    new, n = ACC_INIT.subn(f"dense<{k:.6e}> : tensor<64x64xf32, #mma", text, count=1)
    if n != 1:
        raise RuntimeError(f"{path}: no 64x64xf32 #mma accumulator constant to edit (another Triton's layout names?)")
    with open(path, "w") as f:
        f.write(new)
    return path


class Workload:
    """The tensors and the matmul's arguments; fake pointers (no torch) with --build-only."""

    def __init__(self, build_only: bool) -> None:
        self.build_only = build_only
        if build_only:
            self.torch = None
            self.abc = tuple(_FakeTensor(16 * (i + 1) * 4096) for i in range(3))
            self.capability = 90
            return
        import torch

        self.torch = torch
        g = torch.Generator(device="cuda").manual_seed(0)
        a, b = (torch.randn(SIZE, SIZE, device="cuda", dtype=torch.float16, generator=g) for _ in range(2))
        self.abc = (a, b, torch.empty(SIZE, SIZE, device="cuda", dtype=torch.float16))
        major, minor = torch.cuda.get_device_capability()
        self.capability = major * 10 + minor

    @property
    def args(self) -> tuple[Any, ...]:
        return (*self.abc, SIZE, SIZE, SIZE, SIZE, SIZE, SIZE)

    def sync(self) -> None:
        if self.torch is not None:
            self.torch.cuda.synchronize()

    def error(self, k: float) -> float:
        """Largest |C - (A @ B + k)| of the last launch."""
        a, b, c = self.abc
        return float((c.float() - (a.float() @ b.float() + k)).abs().max())


class _FakeTensor:
    """What the jit's specialization reads from a tensor (tests/build/test_build_jit.py's FakeTensor)."""

    dtype = "torch.float16"

    def __init__(self, ptr: int) -> None:
        self.ptr = ptr

    def data_ptr(self) -> int:
        return self.ptr


def triton_system(w: Workload, folder: str) -> Callable[[float], None]:
    import triton
    from triton.backends.compiler import GPUTarget

    target = GPUTarget("cuda", w.capability, 32)
    grid = (SIZE // 64, SIZE // 64, 1)

    def one(k: float) -> None:
        kernel = triton.compile(edit(folder, k), target=target)
        if not w.build_only:
            kernel[grid](*w.args)
    return one


def tmlr_system(w: Workload, folder: str, isolate: bool) -> Callable[[float], None]:
    import matmul

    from tmlr_build import jit

    mm = jit(matmul.matmul, isolate=isolate)
    grid = (SIZE // 64, SIZE // 64)

    def one(k: float) -> None:
        edit(folder, k)
        if w.build_only:
            mm.build_only(*w.args, **CONSTEXPRS, arch=w.capability, ttgir_dir=folder)
        else:
            mm[grid](*w.args, **CONSTEXPRS, ttgir_dir=folder)
    return one


def _systems(w: Workload, ir: str, tmp: str) -> dict[str, Callable[[float], None]]:
    return {"triton": triton_system(w, copy_of(ir, tmp, "triton")),
            "tmlr": tmlr_system(w, copy_of(ir, tmp, "tmlr"), isolate=False),
            "tmlr_isolated": tmlr_system(w, copy_of(ir, tmp, "tmlr_isolated"), isolate=True)}


def per_edit(w: Workload, ir: str, tmp: str, rounds: int, facts: dict[str, Any],
             errors: dict[str, str]) -> dict[str, Any]:
    """Seconds per edit of each system, interleaved rounds; each call gets a value no call had before."""
    systems = _systems(w, ir, tmp)
    last: dict[str, float] = {}
    counter = iter(range(1, 1 << 30))

    def timed(name: str) -> Callable[[int], None]:
        def run(n: int) -> None:
            for _ in range(n):
                last[name] = float(next(counter))
                systems[name](last[name])
                w.sync()
        return run

    samples = harness.interleave({name: timed(name) for name in systems}, rounds, 1, sync=w.sync, errors=errors,
                                 warmup=1)
    seconds = {name: [x / 1e6 for x in v] for name, v in samples.items()}
    m = {f"per_edit/{name}": harness.stats(v, "s") for name, v in seconds.items()}
    for name in ("tmlr", "tmlr_isolated"):
        if name in seconds and "triton" in seconds:
            m[f"per_edit/{name}÷triton"] = harness.ratio(seconds[name], seconds["triton"])
    if not w.build_only:  # each system's last edit launched again: C = A @ B + its value
        facts["max_error"] = {}
        for name in seconds:
            systems[name](last[name])
            w.sync()
            facts["max_error"][name] = err = w.error(last[name])
            if err > 0.5:
                errors[f"{name}_result"] = f"max |C - (A @ B + {last[name]})| = {err}: the edit did not take"
    return m


def first_call(system: str, build_only: bool, ir: str, k: float) -> float:
    """In this (fresh) process: seconds of the first call of ``system`` on a copy of ``ir`` edited to ``k``."""
    w = Workload(build_only)
    with tempfile.TemporaryDirectory(prefix="tmlr-edit-first-") as tmp:
        folder = copy_of(ir, tmp, system)
        call = triton_system(w, folder) if system == "triton" else tmlr_system(w, folder, isolate=False)
        w.sync()
        t0 = time.perf_counter()
        call(k)
        w.sync()
        return time.perf_counter() - t0


def first_calls(ir: str, build_only: bool, n: int, errors: dict[str, str]) -> dict[str, Any]:
    """``n`` fresh processes per system, alternating, each on a value no build had before (the caches
    stay warm for what does not change: Triton's launcher stubs); the ratio pairs the i-th of each."""
    seconds: dict[str, list[float]] = {"triton": [], "tmlr": []}
    for r in range(n):
        for system in harness.order(list(seconds), r):
            cmd = [sys.executable, os.path.abspath(__file__), "--first", system, "--ir", ir,
                   "--value", str(-1.0 - len(seconds["triton"]) - len(seconds["tmlr"]))]
            p = subprocess.run(cmd + (["--build-only"] if build_only else []), capture_output=True, text=True,
                               timeout=600)
            if p.returncode != 0:
                errors[f"first_call/{system}"] = (p.stderr or p.stdout).strip()[-300:]
                continue
            seconds[system].append(float(p.stdout.strip().splitlines()[-1]))
    m = {f"first_call/{k}": harness.stats(v, "s") for k, v in seconds.items() if v}
    if len(seconds["tmlr"]) == len(seconds["triton"]) == n:
        m["first_call/tmlr÷triton"] = harness.ratio(seconds["tmlr"], seconds["triton"])
    return m


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7, help=f"edits per system (at least {harness.MIN_SAMPLES})")
    ap.add_argument("--firsts", type=int, default=3, help="fresh processes per system for first_call (0 skips it)")
    ap.add_argument("--build-only", action="store_true", help="no GPU: build without launching, for sm_90a")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--first", choices=("triton", "tmlr"), help=argparse.SUPPRESS)  # one first_call sample
    ap.add_argument("--ir", help=argparse.SUPPRESS)
    ap.add_argument("--value", type=float, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.first:
        print(f"{first_call(a.first, a.build_only, a.ir, a.value):.6f}")
        return 0
    if a.rounds < harness.MIN_SAMPLES or 0 < a.firsts < harness.MIN_SAMPLES:
        ap.error(f"--rounds and --firsts must be at least {harness.MIN_SAMPLES} (--firsts 0 skips first_call)")
    errors: dict[str, str] = {}
    facts: dict[str, Any] = {"kernel": "examples/kernels/matmul.py:matmul", "signature": SIG,
                             "launch": not a.build_only, "loadavg_before": os.getloadavg()}
    with tempfile.TemporaryDirectory(prefix="tmlr-edit-loop-") as tmp:
        # fresh caches (every edit is new to both), shared with the first_call processes: Triton's launcher
        # stubs, built in the first round here, are then on disk as on a developer's machine
        os.environ["TMLR_CACHE_DIR"] = os.path.join(tmp, "tmlr-cache")
        os.environ["TRITON_CACHE_DIR"] = os.path.join(tmp, "triton-cache")
        w = Workload(a.build_only)
        ir = prepare(tmp, w.capability)
        m = per_edit(w, ir, tmp, a.rounds, facts, errors)
        if a.firsts:
            m.update(first_calls(ir, a.build_only, a.firsts, errors))
    from tmlr_build.compile import triton_api

    facts.update(capability=w.capability, loadavg_after=os.getloadavg(),
                 jit_builds_in_process=triton_api.current().compiles_alike_in_one_process)
    settings = {"rounds": a.rounds, "firsts": a.firsts, "build_only": a.build_only}
    return harness.finish({"edit_loop": harness.question(m, settings=settings, facts=facts, errors=errors)}, a.json)


if __name__ == "__main__":
    sys.exit(main())
