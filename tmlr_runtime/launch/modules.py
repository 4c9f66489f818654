"""The module cache (``driver.PROCESS.modules``): one ``CUmodule`` per (CUDA context, cubin sha256), so loading
an artifact already loaded in the current context does no driver work; each loaded function keeps the parameters its
cubin's kernel takes, which every plan of it is held against (:func:`check_params`)."""
from __future__ import annotations

import time
import warnings
from collections import namedtuple
from typing import Any, Callable

from .. import driver
from ..errors import CubinMismatchError, DeviceLimitError, DriverError, PtxJitWarning
from ..artifact.elf import Cubin
from ..artifact.metadata import Variant

_DEFAULT_SHARED_LIMIT = 48 * 1024


class LoadedFunction(namedtuple("LoadedFunction", "context device module function static_shared registers local_bytes params")):
    """A kernel function ready to launch in one context (collections' namedtuple: see plan.Layout)."""

    __slots__ = ()
    context: int
    device: driver.DeviceInfo
    module: Any
    function: Any
    static_shared: int
    registers: int
    local_bytes: int
    params: tuple[tuple[int, ...], tuple[int, ...]] | None  # offsets and sizes of the kernel's parameters; None: PTX


def check_fits(name: str, variant: Variant, dev: driver.DeviceInfo) -> None:
    """Refuse, before any driver work, what this device cannot run."""
    if variant.threads_per_block > dev.max_threads_per_block:
        raise DeviceLimitError(
            f"{name}: {variant.num_warps} warps = {variant.threads_per_block} threads per block, {dev.name} allows "
            f"{dev.max_threads_per_block}; rebuild with --num-warps {dev.max_threads_per_block // 32} or fewer"
        )
    if variant.shared > dev.max_shared_optin:
        raise DeviceLimitError(
            f"{name}: needs {variant.shared} bytes of shared memory per block, {dev.name} (sm_{dev.capability}) "
            f"allows at most {dev.max_shared_optin}; rebuild with smaller tiles or --num-stages, or use a GPU with more shared memory"
        )
    if variant.is_cluster_launch and (dev.major < 9 or not dev.cluster_launch):
        why = (f"which need sm_90 or newer; {dev.name} is sm_{dev.capability}" if dev.major < 9
               else f"which {dev.name} does not support (CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH is 0)")
        raise DeviceLimitError(f"{name}: launches clusters of {variant.cluster_dims}, {why} - rebuild with --num-ctas 1")
    if variant.cooperative and not dev.cooperative_launch:
        raise DeviceLimitError(f"{name}: needs a cooperative launch, which {dev.name} does not support; rebuild without launch_cooperative_grid")


def get_function(context: int, ordinal: int, name: str, variant: Variant, read_image: Callable[[], Cubin | bytes],
                 ptx: bool = False) -> LoadedFunction:
    """The loaded function of ``variant`` in ``context`` (current); ``read_image()`` (the checked cubin) only when its
    module is not loaded there yet. ``ptx``: ``read_image()`` gives the variant's PTX text, which the driver
    compiles (a :class:`PtxJitWarning` says so, with its cost)."""
    digest = variant.ptx.sha256 if ptx and variant.ptx else variant.cubin_sha256
    key, process = (context, digest, variant.entry), driver.PROCESS
    with process.lock:
        hit = process.modules.get(key)
        if hit is None:
            dev, drv = driver.device_info(ordinal), driver.api()
            check_fits(name, variant, dev)
            image, params = read_image(), None
            if isinstance(image, Cubin):  # parsed with the entry's parameters (metadata.check_cubin)
                params = image.params
                module = driver.check(drv.cuModuleLoadData(image.data), f"cuModuleLoadData({variant.cubin_file})")
            else:
                module = _compile_ptx(drv, name, variant, image, dev)
            try:
                function = driver.check(drv.cuModuleGetFunction(module, variant.entry.encode()), f"cuModuleGetFunction({variant.entry})")
                A = drv.CUfunction_attribute
                registers, local, static = (int(driver.check(drv.cuFuncGetAttribute(a, function), f"cuFuncGetAttribute({a.name})"))
                                            for a in (A.CU_FUNC_ATTRIBUTE_NUM_REGS, A.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES,
                                                      A.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES))
                if variant.shared + static > dev.max_shared_optin:
                    raise DeviceLimitError(f"{name}: {variant.shared} bytes of dynamic + {static} of static shared memory exceed the "
                                           f"{dev.max_shared_optin} bytes {dev.name} allows; rebuild with smaller tiles or --num-stages")
                if variant.shared + static > _DEFAULT_SHARED_LIMIT:  # opt in once here, never per launch
                    driver.check(drv.cuFuncSetAttribute(function, A.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                         dev.max_shared_optin - static), "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)")
            except BaseException:
                drv.cuModuleUnload(module)
                raise
            hit = process.modules[key] = LoadedFunction(context, dev, module, function, static, registers, local, params)
    return hit


def _compile_ptx(drv: Any, name: str, variant: Variant, text: bytes, dev: driver.DeviceInfo) -> Any:
    """The module of ``variant``'s PTX, which the driver compiles for ``dev`` here; says so once, with the cost."""
    ptx = variant.ptx
    assert ptx is not None  # the choice (ArtifactMetadata.pick) takes the PTX of a variant that has one
    start = time.perf_counter()
    module = driver.check(drv.cuModuleLoadData(text + b"\0"), f"cuModuleLoadData({ptx.file}: PTX the driver compiles)")
    seconds = time.perf_counter() - start
    arch = f"sm_{dev.major}{dev.minor}"
    warnings.warn(PtxJitWarning(
        f"{name}: no cubin of the artifact runs on {dev.name} ({arch}), so the driver compiled its PTX "
        f"({ptx.target.arch}, of the {variant.arch} build) for it, in {seconds * 1e3:.0f} ms; the "
        "driver's JIT cache (CUDA_CACHE_PATH, ~/.nv/ComputeCache by default) keeps the result for later processes. "
        f"Build with --arch {dev.major}{dev.minor} for a cubin that loads without compiling", seconds, arch), stacklevel=2)
    return module


def check_params(layout: Any, params: tuple[tuple[int, ...], tuple[int, ...]] | None, path: str, entry: str) -> None:
    """Refuse the cubin at ``path`` when its kernel ``entry`` takes other parameters than ``layout`` (a plan.Layout)
    packs: ``params`` holds their offsets and sizes as ptxas laid them out (``elf.kernel_params``; None: not known,
    as for PTX).
    The driver copies each parameter by the cubin's sizes, so a signature that lies would launch with garbage."""
    if params is None or params == (layout.offsets, layout.sizes):
        return
    theirs, ours = list(zip(*params)), list(zip(layout.offsets, layout.sizes))
    if len(theirs) != len(ours):
        total = lambda slots: slots[-1][0] + slots[-1][1] if slots else 0  # noqa: E731
        what = (f"takes {len(theirs)} parameters ({total(theirs)} bytes), but metadata.json's signature makes {len(ours)} "
                f"({', '.join(layout.names) or 'none'}: {total(ours)} bytes)")
    else:
        i = next(i for i, (a, b) in enumerate(zip(theirs, ours)) if a != b)
        what = (f"takes {theirs[i][1]} bytes at offset {theirs[i][0]} as parameter {i}, but metadata.json's signature makes "
                f"it {layout.names[i]}: {ours[i][1]} bytes at offset {ours[i][0]}")
    raise CubinMismatchError(f"{path}: kernel {entry} {what}; metadata.json does not describe this cubin - rebuild the "
                             "artifact with tmlr-build", path)


def clear() -> None:
    """Unload every cached module (for tests and long-lived processes that rotate kernels)."""
    process = driver.PROCESS
    with process.lock:
        for loaded in process.modules.values():
            try:
                driver.check(driver.api().cuModuleUnload(loaded.module), "cuModuleUnload")
            except DriverError:
                pass  # the context may already be gone
        process.modules.clear()
