"""CPU-only profile of ``Kernel.load`` and of the per-call Python work, with the CUDA driver faked.

    python benchmarks/cpu_load_profile.py [--copies N] [--rounds N] [--burst N] [--procs N]
                                          [--profile] [--json OUT.json] [--only load|call]
                                          [--compare DIR [DIR ...]] [--passes N]

No GPU is needed: ``tmlr_runtime._driver`` is given a fake driver module whose ``cuModuleLoadData``,
``cuModuleGetFunction``, ``cuFuncGetAttribute``, ``cuLaunchKernel``... return at once (the real
cuda-python enums and ``CUlaunchConfig`` are used where cuda-python is installed). What is left is
the runtime's own Python work, the part of the first load that the H200 measurement puts above the
raw ``cuModuleLoadData`` + ``cuModuleGetFunction`` (docs/performance.md).

load
  Every artifact in ``examples/artifacts/{add4,nop_args,matmul}`` is copied to ``--copies`` fresh
  temporary directories, so the load cache (keyed by path) never hits; the module cache (keyed by
  context and cubin sha256, which the copies share) is cleared before each load so the cubin is
  read and hashed every time. Reported, median over the copies (µs):

  * ``first load, cold``: caches of generated launcher code cleared too - the first artifact of
    its signature in a process;
  * ``first load, warm``: an artifact with the same signature was loaded earlier in the process;
  * ``first load + first call``: a cold first load plus the first launch (per-thread buffers are
    made then);
  * ``cached load``: loading an unchanged, already loaded directory again;
  * ``process``: ``import tmlr_runtime``, the very first ``Kernel.load`` and the first launch in
    a fresh interpreter (``--procs`` of them; modules from .pyc files, as installed);
  * ``tier-up launch``: the launch that switches a launcher from its op loop to the converter
    generated for its signature (the compile), with no such converter cached yet.

  Then a breakdown by stage, each stage timed alone on the same inputs: read + ``json.loads``,
  the reader (``ArtifactMetadata.read`` minus read + ``json.loads``: every field checked, the
  records built), variant selection, cubin read + size + sha256 (``read_cubin``), sha256 alone, the
  module cache with the fake driver (``_modules.get_function``), the launch plan (``_launcher.plan``;
  for checkouts before it, ``_launcher.generate``) with code caches cleared and again, a whole cold
  ``Kernel.load``, and what that has beyond the stages (``rest``: stamps, context, bookkeeping;
  from the medians).

call
  ``kernel(grid, *args)`` per call for nop (0 args), nop_args (5 tensors, 9 ints, 5 constexprs
  omitted) and add4, checks on and off, against ``floor``: the same fake ``cuLaunchKernel`` called
  with a prebuilt ``void**`` (the least any launcher can do) and ``handwritten``: ctypes values and
  ``void**`` built per call from ``data_ptr()`` like the GPU benchmark's hand-written launcher.
  Also ``kernel((1,), *args)`` (a tuple grid) and, where the runtime converts arguments with an
  op loop before generating a converter (``_launcher.TIER_UP_CALLS``), a launcher held in that
  first phase. Tensors are CPU torch tensors and the fake context's device is -1 (``get_device()``
  of a CPU tensor), so the launcher's inline tensor path with its device and dtype checks is the
  one timed; torch without CUDA makes the default stream a Python call here (on a GPU machine it
  is torch's C ``_cuda_getCurrentRawStream``). Systems are interleaved round-robin, ``--burst``
  calls per sample, median of ``--rounds``; all launchers are warmed by 1000 calls first.

``--profile`` adds cProfile listings of cold loads and of nop calls (top functions by own time).

``--compare DIR [DIR ...]``: the same measurements for several checkouts (each DIR holds a
``tmlr_runtime`` package, e.g. ``git archive HEAD~3 tmlr_runtime | tar -x -C /tmp/before``) in one
run: ``--passes`` rounds, each running every checkout once in a child process (``--copies`` and
``--rounds`` per pass), interleaved so that load on a shared machine hits all alike; the samples of
all passes are pooled and their medians reported side by side (``--json`` also keeps each pass's
medians, under ``passes``). ``--repo DIR`` runs one checkout.
"""
from __future__ import annotations

import argparse
import cProfile
import ctypes
import gc
import hashlib
import io
import json
import os
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
ARTIFACTS = os.path.join(ROOT, "examples", "artifacts")
LOAD_WORKLOADS = ("add4", "nop_args", "matmul")
NOP_ARGS_INTS = [3, 5, 7, 11, 13, 17, 19, 23, 29]

# ----------------------------------------------------------------------------------------------
# the fake driver
# ----------------------------------------------------------------------------------------------
def make_fake_driver(ordinal: int = 0, major: int = 9, minor: int = 0) -> Any:
    """A stand-in for ``cuda.bindings.driver`` covering the calls tmlr_runtime's load and launch
    paths make; every call returns at once with success."""
    from types import SimpleNamespace
    try:
        from cuda.bindings import driver as real
    except ImportError:
        real = None
    if real is not None:
        OK = real.CUresult.CUDA_SUCCESS
        CUresult, DA, FA = real.CUresult, real.CUdevice_attribute, real.CUfunction_attribute
        CUlaunchConfig, CUlaunchAttribute = real.CUlaunchConfig, real.CUlaunchAttribute
        CUlaunchAttributeID, CUclusterSchedulingPolicy = real.CUlaunchAttributeID, real.CUclusterSchedulingPolicy
        CUpointer_attribute, CUmemorytype = real.CUpointer_attribute, real.CUmemorytype
    else:
        import enum

        class CUresult(enum.IntEnum):
            CUDA_SUCCESS = 0

        OK = CUresult.CUDA_SUCCESS
        names = ["COMPUTE_CAPABILITY_MAJOR", "COMPUTE_CAPABILITY_MINOR", "MAX_THREADS_PER_BLOCK",
                 "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN", "MAX_GRID_DIM_X", "MAX_GRID_DIM_Y", "MAX_GRID_DIM_Z",
                 "CLUSTER_LAUNCH", "COOPERATIVE_LAUNCH", "MULTIPROCESSOR_COUNT"]
        DA = enum.IntEnum("CUdevice_attribute", {"CU_DEVICE_ATTRIBUTE_" + n: i for i, n in enumerate(names)})
        FA = enum.IntEnum("CUfunction_attribute", {"CU_FUNC_ATTRIBUTE_" + n: i for i, n in enumerate(
            ["SHARED_SIZE_BYTES", "NUM_REGS", "LOCAL_SIZE_BYTES", "MAX_DYNAMIC_SHARED_SIZE_BYTES"])})

        class CUlaunchConfig:
            gridDimX = gridDimY = gridDimZ = blockDimX = blockDimY = blockDimZ = sharedMemBytes = numAttrs = 0
            hStream = 0
            attrs = ()

        CUlaunchAttribute = CUlaunchAttributeID = CUclusterSchedulingPolicy = None
        CUpointer_attribute = CUmemorytype = None
    dev_attrs = {
        DA.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: major,
        DA.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: minor,
        DA.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: 1024,
        DA.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: 232448,
        DA.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: 2**31 - 1,
        DA.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: 65535,
        DA.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: 65535,
        DA.CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH: 1,
        DA.CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: 1,
        DA.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: 132,
    }
    fn_attrs = {FA.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: 0, FA.CU_FUNC_ATTRIBUTE_NUM_REGS: 32,
                FA.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: 0}
    ctx = 0x5A5A000
    ok1 = (OK,)

    def cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shm, stream, kp, extra):
        return ok1

    def cuLaunchKernelEx(config, f, kp, extra):
        return ok1

    drv = SimpleNamespace(
        CUresult=CUresult, CUdevice_attribute=DA, CUfunction_attribute=FA,
        CUlaunchConfig=CUlaunchConfig, CUlaunchAttribute=CUlaunchAttribute,
        CUlaunchAttributeID=CUlaunchAttributeID, CUclusterSchedulingPolicy=CUclusterSchedulingPolicy,
        CUpointer_attribute=CUpointer_attribute, CUmemorytype=CUmemorytype,
        cuInit=lambda flags: ok1,
        cuCtxGetCurrent=lambda: (OK, ctx),
        cuCtxSetCurrent=lambda c: ok1,
        cuCtxGetDevice=lambda: (OK, ordinal),
        cuDeviceGet=lambda i: (OK, i),
        cuDevicePrimaryCtxRetain=lambda dev: (OK, ctx),
        cuDeviceGetName=lambda n, dev: (OK, b"Fake H200\0"),
        cuDeviceGetAttribute=lambda a, dev: (OK, dev_attrs[a]),
        cuModuleLoadData=lambda data: (OK, object()),
        cuModuleGetFunction=lambda mod, name: (OK, object()),
        cuModuleUnload=lambda mod: ok1,
        cuFuncGetAttribute=lambda a, f: (OK, fn_attrs.get(a, 0)),
        cuFuncSetAttribute=lambda f, a, v: ok1,
        cuLaunchKernel=cuLaunchKernel,
        cuLaunchKernelEx=cuLaunchKernelEx,
        cuMemAllocAsync=lambda n, s: (OK, 0x7000000),
        cuMemFreeAsync=lambda p, s: ok1,
        cuPointerGetAttribute=lambda a, p: (OK, 0),
    )
    return drv


def install_fake_driver(drv: Any) -> None:
    """Make tmlr_runtime use ``drv`` (nothing else of the driver module is touched)."""
    from tmlr_runtime import _driver
    _driver._api = drv
    _driver._initialised = True
    _driver._devices.clear()


# ----------------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------------
def us(seconds: float) -> float:
    return seconds * 1e6


def median_us(samples: list[float]) -> float:
    return us(statistics.median(samples))


def copies(tmp: str, name: str, n: int) -> list[str]:
    src = os.path.join(ARTIFACTS, name)
    out = []
    for _ in range(n):
        d = tempfile.mkdtemp(prefix=name + "-", dir=tmp)
        shutil.copytree(src, d, dirs_exist_ok=True)
        out.append(d)
    return out


def clear_code_caches() -> None:
    """Forget generated launcher code (whatever caches this version of the runtime keeps)."""
    from tmlr_runtime import _launcher

    for attr in ("_CODE", "_SPECIALIZED"):
        cache = getattr(_launcher, attr, None)
        if hasattr(cache, "clear"):
            cache.clear()


def clear_load_caches() -> None:
    from tmlr_runtime import _kernel, _modules

    _modules.clear()
    _kernel._loaded.clear()


def nargs_of(k: Any) -> int:
    return sum(p.kind != "constexpr" for p in k.signature)


# ----------------------------------------------------------------------------------------------
# load
# ----------------------------------------------------------------------------------------------
def time_loads(dirs: list[str], cold: bool, call: Any = None) -> list[float]:
    import tmlr_runtime as tr

    out = []
    pc = time.perf_counter
    for d in dirs:
        clear_load_caches()
        if cold:
            clear_code_caches()
        t0 = pc()
        k = tr.Kernel.load(d)
        if call is not None:
            call(k)
        out.append(pc() - t0)
    return out


def get_function(handle: int, name: str, variant: Any, data: bytes) -> Any:
    from tmlr_runtime import _modules

    if "cubin" in _modules.get_function.__code__.co_varnames:  # checkouts before the launch plan
        return _modules.get_function(handle, 0, name, variant, data, None)
    return _modules.get_function(handle, 0, name, variant, lambda: data)


def make_launcher(meta: Any, variant: Any, loaded: Any) -> Any:
    """The launch plan of this checkout (or, before it, the generated launcher)."""
    from tmlr_runtime import _driver, _kernel, _launcher

    if hasattr(_launcher, "plan"):
        return _launcher.plan(meta.name, meta.signature, variant, loaded, True)
    drv, dev = _driver.api(), _driver.device_info(0)
    target = _launcher.LaunchTarget(device=0, max_grid=dev.max_grid, function=loaded.function, launch=drv.cuLaunchKernel,
                                    launch_ex=drv.cuLaunchKernelEx, make_config=None, on_error=_kernel._launch_error)
    return _launcher.generate(meta.name, meta.signature, variant, target, True)


STAGES = ("read+json", "reader (checks+records)", "variant selection", "cubin read+size+sha256",
          "sha256 alone", "module cache (fake driver)", "launch plan, cold", "launch plan, warm",
          "Kernel.load total, cold")


def stage_samples(dirs: list[str]) -> dict[str, list[float]]:
    """Each load stage run alone on the same inputs (see the module docstring)."""
    from tmlr_runtime import _driver, _kernel, _launcher, _modules
    from tmlr_runtime._metadata import ArtifactMetadata, read_cubin

    drv = _driver.api()
    handle = int(drv.cuCtxGetCurrent()[1])
    dev = _driver.device_info(0)
    s: dict[str, list[float]] = {k: [] for k in STAGES}
    pc = time.perf_counter
    for d in dirs:
        meta_path = os.path.join(d, "metadata.json")
        t0 = pc()
        with open(meta_path, "rb") as f:
            raw = f.read()
        doc = json.loads(raw)
        t1 = pc()
        meta = ArtifactMetadata.read(d)
        t3 = pc()
        variant = meta.select_variant(dev.major, dev.minor)
        t4 = pc()
        data = read_cubin(d, variant)
        t5 = pc()
        hashlib.sha256(data).hexdigest()
        t6 = pc()
        _modules.clear()
        t7 = pc()
        loaded = get_function(handle, meta.name, variant, data)
        t8 = pc()
        clear_code_caches()
        t9 = pc()
        make_launcher(meta, variant, loaded)
        t10 = pc()
        make_launcher(meta, variant, loaded)
        t11 = pc()
        clear_load_caches()
        clear_code_caches()
        t12 = pc()
        _kernel.Kernel.load(d)
        t13 = pc()
        for key, t in zip(STAGES, (t1 - t0, max(0.0, (t3 - t1) - (t1 - t0)), t4 - t3, t5 - t4, t6 - t5,
                                   t8 - t7, t10 - t9, t11 - t10, t13 - t12)):
            s[key].append(t)
    return s


PROCESS_SCRIPT = r"""
import sys, time, json
t0 = time.perf_counter()
import tmlr_runtime as tr
t1 = time.perf_counter()
sys.path.insert(0, sys.argv[3])
from cpu_load_profile import install_fake_driver, make_fake_driver
install_fake_driver(make_fake_driver())
t2 = time.perf_counter()
k = tr.Kernel.load(sys.argv[1])
t3 = time.perf_counter()
k(1, *([0] * int(sys.argv[2])))
t4 = time.perf_counter()
print(json.dumps({"process: import tmlr_runtime": t1 - t0, "process: first load": t3 - t2, "process: first call": t4 - t3,
                  "file": tr.__file__}))
"""


def process_samples(dirs: list[str], nargs: int, procs: int) -> dict[str, list[float]]:
    import tmlr_runtime

    env = dict(os.environ)
    repo = os.path.dirname(os.path.dirname(os.path.abspath(tmlr_runtime.__file__)))
    env["PYTHONPATH"] = os.pathsep.join(x for x in (repo, env.get("PYTHONPATH")) if x)
    # as an installed package runs: modules from their .pyc (kept outside the checkout), written
    # by a first run that is not counted
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = os.path.join(tempfile.gettempdir(), "tmlr-cpu-load-pycache")
    res: dict[str, list[float]] = {}
    for n, d in enumerate(dirs[: procs + 1]):
        # cwd: ``python -c`` puts it first on sys.path, ahead of PYTHONPATH
        out = subprocess.run([sys.executable, "-c", PROCESS_SCRIPT, d, str(nargs), HERE],
                             capture_output=True, text=True, env=env, check=True, cwd=repo).stdout
        row = json.loads(out.strip().splitlines()[-1])
        if os.path.dirname(os.path.dirname(row.pop("file"))) != repo:
            raise RuntimeError(f"the process imported another tmlr_runtime than {repo}'s")
        for k, v in row.items():
            if n:
                res.setdefault(k, []).append(v)
    return res


def tier_up_samples(dirs: list[str], nargs: int) -> list[float]:
    """The launch that switches a launcher to its generated converter (none: nothing to time)."""
    import tmlr_runtime as tr
    from tmlr_runtime import _launcher

    n = getattr(_launcher, "TIER_UP_CALLS", 0)
    if n <= 0:
        return []
    zeros = [0] * nargs
    out = []
    for d in dirs[: max(1, len(dirs) // 5)]:
        clear_load_caches()
        clear_code_caches()
        k = tr.Kernel.load(d)
        for _ in range(n - 1):
            k(1, *zeros)
        t0 = time.perf_counter()
        k(1, *zeros)
        out.append(time.perf_counter() - t0)
    return out


def load_samples(a: argparse.Namespace, tmp: str) -> dict[str, dict[str, list[float]]]:
    import tmlr_runtime as tr
    from tmlr_runtime import _driver

    install_fake_driver(make_fake_driver())
    doc: dict[str, dict[str, list[float]]] = {}
    for name in LOAD_WORKLOADS:
        dirs = copies(tmp, name, a.copies)
        k = tr.Kernel.load(dirs[0])  # device info, imports
        nargs = nargs_of(k)
        zeros = [0] * nargs
        gc.collect()
        row: dict[str, list[float]] = {
            "first load, cold": time_loads(dirs, cold=True),
            "first load, warm": time_loads(dirs, cold=False),
            "first load + first call": time_loads(dirs, cold=True, call=lambda k: k(1, *zeros)),
        }
        k = tr.Kernel.load(dirs[0])
        cached = []
        for _ in range(len(dirs)):
            t0 = time.perf_counter()
            tr.Kernel.load(dirs[0])
            cached.append(time.perf_counter() - t0)
        row["cached load"] = cached
        row["tier-up launch"] = tier_up_samples(dirs, nargs)
        if a.procs:
            row.update(process_samples(dirs, nargs, a.procs))
        row.update(stage_samples(dirs))
        doc[name] = row
        for d in dirs:
            shutil.rmtree(d, ignore_errors=True)
    _driver._devices.clear()
    return doc


def profile_loads(a: argparse.Namespace, tmp: str) -> str:
    import tmlr_runtime as tr

    install_fake_driver(make_fake_driver())
    sub = tempfile.mkdtemp(prefix="profile-", dir=tmp)
    dirs = [d for name in LOAD_WORKLOADS for d in copies(sub, name, a.copies)]
    tr.Kernel.load(dirs[0])
    prof = cProfile.Profile()
    for d in dirs:
        clear_load_caches()
        clear_code_caches()
        prof.enable()
        tr.Kernel.load(d)
        prof.disable()
    buf = io.StringIO()
    st = pstats.Stats(prof, stream=buf)
    st.sort_stats("tottime").print_stats(25)
    st.sort_stats("cumulative").print_stats(25)
    return buf.getvalue()


# ----------------------------------------------------------------------------------------------
# call
# ----------------------------------------------------------------------------------------------
def _c(value: Any, ty: str) -> Any:
    if ty.startswith("*"):
        return ctypes.c_uint64(value.data_ptr())
    return ctypes.c_int32(value)


def call_systems(drv: Any, path: str, args: list[Any]) -> dict[str, Callable[[], None]]:
    import tmlr_runtime as tr
    from tmlr_runtime import _launcher

    k = tr.Kernel.load(path)
    kf = tr.Kernel.load(path, checks=False)
    v = k.variant
    fn = k.function.function
    types = [p.type for p in k.metadata.runtime_params]
    n_hidden = len(v.hidden_params)
    block, shared, launch = v.threads_per_block, v.shared, drv.cuLaunchKernel
    vals = [_c(x, t) for x, t in zip(args, types)] + [ctypes.c_uint64(0) for _ in range(n_hidden)]
    arr = (ctypes.c_void_p * max(len(vals), 1))(*[ctypes.addressof(x) for x in vals])
    addr = ctypes.addressof(arr)
    arr_t = ctypes.c_void_p * max(len(vals), 1)
    hidden = vals[len(types):]

    def floor() -> None:
        launch(fn, 1, 1, 1, block, 1, 1, shared, 0, addr, 0)

    def handwritten() -> None:
        vs = [_c(x, t) for x, t in zip(args, types)] + hidden
        p = arr_t(*[ctypes.addressof(x) for x in vs])
        err, = launch(fn, 1, 1, 1, block, 1, 1, shared, 0, ctypes.addressof(p), 0)
        if err:
            raise RuntimeError(err)

    floor._keep = (vals, arr)  # type: ignore[attr-defined]
    systems = {
        "floor": floor,
        "handwritten": handwritten,
        "tmlr": lambda: k(1, *args),
        "tmlr, checks=False": lambda: kf(1, *args),
        "tmlr, grid (1,)": lambda: k((1,), *args),
    }
    n = getattr(_launcher, "TIER_UP_CALLS", 0)
    if n > 0 and args:
        # a launcher still converting with its op loop: copied directory, warmed past the count
        # with the count out of reach, so it never switches
        tmp = tempfile.mkdtemp(prefix="tmlr-loop-")
        shutil.copytree(path, tmp, dirs_exist_ok=True)
        _launcher.TIER_UP_CALLS = 1 << 60
        try:
            kl = tr.Kernel.load(tmp)
            for _ in range(n + 1):
                kl(1, *args)
        finally:
            _launcher.TIER_UP_CALLS = n
            shutil.rmtree(tmp, ignore_errors=True)
        systems["tmlr, first calls (op loop)"] = lambda: kl(1, *args)
    return systems


def call_samples(a: argparse.Namespace) -> dict[str, dict[str, list[float]]]:
    import torch  # the launchers' inline tensor path needs torch imported before load

    drv = make_fake_driver(ordinal=-1)
    install_fake_driver(drv)
    clear_load_caches()
    clear_code_caches()
    ts = [torch.empty(1024) for _ in range(5)]
    x, y, out = (torch.empty(1024) for _ in range(3))
    workloads = {"nop": [], "nop_args": ts + NOP_ARGS_INTS, "add4": [x, y, out, 1024]}
    doc: dict[str, dict[str, list[float]]] = {}
    burst = a.burst
    pc = time.perf_counter
    for name, args in workloads.items():
        systems = call_systems(drv, os.path.join(ARTIFACTS, name), args)
        samples: dict[str, list[float]] = {s: [] for s in systems}
        for f in systems.values():  # warm up: per-thread buffers, generated converters
            for _ in range(1000):
                f()
        for _ in range(a.rounds):
            for s, f in systems.items():
                t0 = pc()
                for _ in range(burst):
                    f()
                samples[s].append((pc() - t0) / burst)
        doc[name] = samples
    clear_load_caches()
    return doc


def profile_calls(a: argparse.Namespace) -> str:
    import torch  # noqa: F401 - imported before load, as in call_samples

    import tmlr_runtime as tr

    install_fake_driver(make_fake_driver(ordinal=-1))
    k = tr.Kernel.load(os.path.join(ARTIFACTS, "nop"))
    k(1)
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(20000):
        k(1)
    prof.disable()
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(12)
    return buf.getvalue()


# ----------------------------------------------------------------------------------------------
# reporting
# ----------------------------------------------------------------------------------------------
def merge(into: dict[str, Any], part: dict[str, Any]) -> None:
    for section, workloads in part.items():
        for w, rows in workloads.items():
            for k, v in rows.items():
                into.setdefault(section, {}).setdefault(w, {}).setdefault(k, []).extend(v)


_PARTS = ("read+json", "reader (checks+records)", "variant selection", "cubin read+size+sha256",
          "module cache (fake driver)", "launch plan, cold")


def medians(samples: dict[str, Any]) -> dict[str, Any]:
    out = {sec: {w: {k: (median_us(v) if v else None) for k, v in rows.items()} for w, rows in ws.items()}
           for sec, ws in samples.items()}
    for row in out.get("load", {}).values():
        if all(row.get(k) is not None for k in _PARTS + ("Kernel.load total, cold",)):
            row["rest (stamps, context, ...)"] = row["Kernel.load total, cold"] - sum(row[k] for k in _PARTS)
    return out


def print_table(results: dict[str, dict[str, Any]], section: str, title: str, fmt: str) -> None:
    labels = list(results)
    first = results[labels[0]].get(section)
    if not first:
        return
    print(title)
    workloads = list(first)
    rows: list[str] = []
    for w in workloads:
        for label in labels:
            for k in results[label].get(section, {}).get(w, {}):
                if k not in rows:
                    rows.append(k)
    cols = [(w, label) for w in workloads for label in labels]
    print(f"  {'':34s}" + "".join(f"{w[:12]:>12s}" if len(labels) == 1 else f"{(w[:8] + ':' + str(i)):>12s}"
                                   for w, _ in cols for i in [labels.index(_)]))
    for k in rows:
        cells = []
        for w, label in cols:
            v = results[label].get(section, {}).get(w, {}).get(k)
            cells.append(f"{v:12{fmt}}" if v is not None else f"{'-':>12s}")
        print(f"  {k[:34]:34s}" + "".join(cells))
    if len(labels) > 1:
        for i, label in enumerate(labels):
            print(f"    :{i} = {label}")


def print_call_ratios(results: dict[str, dict[str, Any]]) -> None:
    for label, res in results.items():
        calls = res.get("call")
        if not calls:
            continue
        parts = []
        for w, row in calls.items():
            parts.append(f"{w} {row['tmlr'] / row['handwritten']:.3f} (tmlr - floor {row['tmlr'] - row['floor']:.3f} µs)")
        print(f"  tmlr / handwritten, {label}: " + "; ".join(parts))


def run_child(repo: str, a: argparse.Namespace, out_json: str) -> None:
    cmd = [sys.executable, os.path.abspath(__file__), "--repo", repo, "--child", "--json", out_json,
           "--copies", str(a.copies), "--procs", str(a.procs), "--rounds", str(a.rounds), "--burst", str(a.burst)]
    if a.only:
        cmd += ["--only", a.only]
    subprocess.run(cmd, check=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--copies", type=int, default=200, help="fresh copies of each artifact to load (per pass)")
    ap.add_argument("--procs", type=int, default=10, help="fresh interpreters for the first-load-in-process timing (0: skip)")
    ap.add_argument("--rounds", type=int, default=31, help="rounds of call bursts (per pass)")
    ap.add_argument("--burst", type=int, default=2000)
    ap.add_argument("--only", choices=("load", "call"))
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--repo", help="import tmlr_runtime from this checkout")
    ap.add_argument("--compare", nargs="+", metavar="DIR", help="checkouts to compare in one run")
    ap.add_argument("--passes", type=int, default=3, help="interleaved passes over the --compare checkouts")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    if a.compare:
        pooled: dict[str, dict[str, Any]] = {d: {} for d in a.compare}
        passes: dict[str, list[Any]] = {d: [] for d in a.compare}  # each pass's medians, for the spread
        with tempfile.TemporaryDirectory(prefix="tmlr-compare-") as tmp:
            for p in range(a.passes):
                for i, d in enumerate(a.compare):
                    out = os.path.join(tmp, f"{p}-{i}.json")
                    run_child(os.path.abspath(d), a, out)
                    with open(out) as f:
                        samples = json.load(f)
                    merge(pooled[d], samples)
                    passes[d].append(medians(samples))
        results = {d: {**medians(s), "passes": passes[d]} for d, s in pooled.items()}
    else:
        sys.path.insert(0, os.path.abspath(a.repo) if a.repo else ROOT)
        import tmlr_runtime

        label = os.path.dirname(os.path.dirname(os.path.abspath(tmlr_runtime.__file__)))
        if not a.child:
            print(f"tmlr_runtime from {label}; Python {sys.version.split()[0]}")
        samples: dict[str, Any] = {}
        tmp = tempfile.mkdtemp(prefix="tmlr-cpu-load-")
        try:
            if a.only != "call":
                samples["load"] = load_samples(a, tmp)
            if a.only != "load":
                samples["call"] = call_samples(a)
            if a.profile:
                print(profile_loads(a, tmp))
                print(profile_calls(a))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        if a.child:
            if label != os.path.abspath(a.repo):
                raise RuntimeError(f"imported tmlr_runtime from {label}, not from {a.repo}")
            with open(a.json, "w") as f:
                json.dump(samples, f)
            return 0
        results = {label: medians(samples)}
    print_table(results, "load", "Kernel.load with a fake driver, median µs", ".1f")
    print_table(results, "call", "per call, median µs (fake cuLaunchKernel returns at once)", ".3f")
    print_call_ratios(results)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
