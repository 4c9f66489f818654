"""The process-wide module cache: one ``CUmodule`` per (CUDA context, cubin sha256).

Loading an artifact that is already loaded in the current context does no driver work; a second
context (another device) gets its own module the first time a kernel is launched there.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Callable

from . import _driver
from ._errors import DeviceLimitError, DriverError
from ._metadata import Variant

_DEFAULT_SHARED_LIMIT = 48 * 1024


@dataclass(frozen=True)
class LoadedFunction:
    """A kernel function ready to launch in one context."""

    context: int
    device: _driver.DeviceInfo
    module: Any
    function: Any
    static_shared: int
    registers: int
    local_bytes: int


_lock = threading.Lock()
_cache: dict[tuple[int, str, str], LoadedFunction] = {}


def check_fits(name: str, variant: Variant, dev: _driver.DeviceInfo) -> None:
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


def get_function(context: int, ordinal: int, name: str, variant: Variant, read_cubin: Callable[[], bytes]) -> LoadedFunction:
    """The loaded function for ``variant`` in ``context`` (current), loading the module once.

    ``read_cubin()`` is called only when the module is not cached yet.
    """
    key = (context, variant.cubin_sha256, variant.entry)
    hit = _cache.get(key)
    if hit is not None:
        return hit
    with _lock:
        hit = _cache.get(key)
        if hit is not None:
            return hit
        dev = _driver.device_info(ordinal)
        check_fits(name, variant, dev)
        drv = _driver.api()
        # Each call's result is checked inline; the message (with names) is made only on failure.
        r = drv.cuModuleLoadData(read_cubin())
        if int(r[0]):
            _driver.check(r, f"cuModuleLoadData({variant.cubin_file})")
        module = r[1]
        try:
            r = drv.cuModuleGetFunction(module, variant.entry.encode())
            if int(r[0]):
                _driver.check(r, f"cuModuleGetFunction({variant.entry})")
            function = r[1]
            A = drv.CUfunction_attribute

            def attr(a: Any) -> int:
                r = drv.cuFuncGetAttribute(a, function)
                if int(r[0]):
                    _driver.check(r, f"cuFuncGetAttribute({a.name})")
                return int(r[1])

            static = attr(A.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)
            if variant.shared + static > dev.max_shared_optin:
                raise DeviceLimitError(
                    f"{name}: {variant.shared} bytes of dynamic + {static} of static shared memory exceed the "
                    f"{dev.max_shared_optin} bytes {dev.name} allows; rebuild with smaller tiles or --num-stages"
                )
            if variant.shared + static > _DEFAULT_SHARED_LIMIT:
                # Opt in once here, never per launch.
                _driver.check(
                    drv.cuFuncSetAttribute(function, A.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, dev.max_shared_optin - static),
                    "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)",
                )
            loaded = LoadedFunction(
                context=context,
                device=dev,
                module=module,
                function=function,
                static_shared=static,
                registers=attr(A.CU_FUNC_ATTRIBUTE_NUM_REGS),
                local_bytes=attr(A.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES),
            )
        except BaseException:
            drv.cuModuleUnload(module)
            raise
        _cache[key] = loaded
        return loaded


def clear() -> None:
    """Unload every cached module (for tests and long-lived processes that rotate kernels)."""
    with _lock:
        drv = _driver.api() if _cache else None
        for loaded in _cache.values():
            try:
                _driver.check(drv.cuModuleUnload(loaded.module), "cuModuleUnload")
            except DriverError:
                pass  # the context may already be gone
        _cache.clear()
