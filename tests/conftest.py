"""Test-wide setup: tests marked ``gpu`` run where a CUDA device is usable and skip where there is none.

A machine without the NVIDIA driver library (libcuda) has no GPU: ``gpu`` tests skip, also under
``-m gpu``. Where the library is, the driver is asked for its devices through tmlr_runtime's own
bindings (``cuda.bindings.driver``, or ``cuda.cuda`` on cuda-python before 12.6: one way, the
runtime's). If that fails or finds no device, plain runs skip the ``gpu`` tests saying why, and a
run selected with ``-m gpu`` stops with the driver's error: asked to test the GPU, it must not pass
by skipping everything.

Tests live in runtime/, build/ and gpu/ (the GPU tests and their artifacts); the helpers they share
(fake_driver, schema_sample, skip_reasons) stay here, on the import path of every test.
"""
from __future__ import annotations

import ctypes
import functools
import os
import re
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from tmlr_runtime import TmlrError, driver  # noqa: E402

NO_DRIVER_LIBRARY = "no NVIDIA driver library (libcuda) on this machine"


def driver_library_present() -> bool:
    """Whether the NVIDIA driver library can be loaded, as cuda-python loads it (system search)."""
    try:
        ctypes.CDLL("nvcuda.dll" if sys.platform == "win32" else "libcuda.so.1")
    except OSError:
        return False
    return True


@functools.lru_cache(maxsize=1)
def gpu_probe() -> tuple[int, str]:
    """``(CUDA devices, why there are none)``; the reason is "" when there are devices."""
    if not driver_library_present():
        return 0, NO_DRIVER_LIBRARY
    try:
        drv = driver.init()
        count = int(driver.check(drv.cuDeviceGetCount(), "cuDeviceGetCount"))
    except TmlrError as e:
        return 0, f"the NVIDIA driver library is present but failed: {e}"
    return count, "" if count else "the NVIDIA driver reports 0 devices"


def cuda_device_count() -> int:
    """Number of CUDA devices the driver reports; 0 when there is no driver or no device."""
    return gpu_probe()[0]


def selects(markexpr: str, marker: str) -> bool:
    """Whether a ``-m`` expression selects tests marked ``marker`` (``gpu``, ``gpu and not slow``; not ``not gpu``)."""
    tokens = re.findall(r"[\w.]+|\S", markexpr or "")
    return any(t == marker and (i == 0 or tokens[i - 1] != "not") for i, t in enumerate(tokens))


def gpu_requested(markexpr: str) -> bool:
    """Whether a ``-m`` expression selects ``gpu`` tests."""
    return selects(markexpr, "gpu")


def gpu_skip_reason(markexpr: str) -> str | None:
    """None when ``gpu`` tests can run here; else why they skip. Raises :class:`pytest.UsageError`
    when ``-m`` asked for them and the driver library is present but no device can be used."""
    count, why = gpu_probe()
    if count > 0:
        return None
    if gpu_requested(markexpr) and why != NO_DRIVER_LIBRARY:
        raise pytest.UsageError(f"-m {markexpr!r} selects the GPU tests, but no CUDA device can be used: {why}")
    return f"needs a CUDA device ({why})"


def need_skip_reason(item: pytest.Item) -> str | None:
    """Why a GPU test marked ``needs_gpus(n)`` or ``needs_sm(major, minor)`` cannot run on this machine (its
    devices as the driver reports them), in the words of tests/skip_reasons.py; None when it can."""
    from skip_reasons import NEEDS_SM80, NEEDS_SM90, NEEDS_TWO_GPUS

    count = cuda_device_count()
    need = item.get_closest_marker("needs_gpus")
    if need is not None and count < need.args[0]:
        return f"{NEEDS_TWO_GPUS}: this machine has {count}"
    need = item.get_closest_marker("needs_sm")
    if need is not None:
        have = {(driver.device_info(i).major, driver.device_info(i).minor) for i in range(count)}
        if have != {tuple(need.args)}:
            words = NEEDS_SM90 if need.args[0] == 9 else NEEDS_SM80
            return f"{words} (cubins for sm_{need.args[0]}{need.args[1]} only; this machine has {sorted(have)})"
    return None


SLOW = "slow: downloads hundreds of MB and builds for minutes; run it with -m slow"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``slow`` tests run only when ``-m`` selects them; ``gpu`` tests skip where there is no usable device; those that
    need more (``needs_gpus``, ``needs_sm``) skip only for the reasons tests/skip_reasons.py names, which
    tests/gpu_all.sh then judges."""
    if not selects(config.getoption("markexpr", "") or "", "slow"):
        for item in items:
            if "slow" in item.keywords:
                item.add_marker(pytest.mark.skip(reason=SLOW))
    gpu_items = [item for item in items if "gpu" in item.keywords]
    if not gpu_items:
        return
    reason = gpu_skip_reason(config.getoption("markexpr", "") or "")
    for item in gpu_items:
        why = reason or need_skip_reason(item)
        if why is not None:
            item.add_marker(pytest.mark.skip(reason=why))
