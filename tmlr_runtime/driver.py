"""The one place that talks to cuda-python (version differences, error translation, device facts), and
the one object that holds the process's state: :data:`PROCESS`, a :class:`Process`.

cuda-python 12.x exposes the driver as ``cuda.cuda`` (and, from 12.6, also as
``cuda.bindings.driver``); 13.x only as ``cuda.bindings.driver``. Everything else in tmlr_runtime
goes through :func:`api` and :func:`check`, so a difference between the two lives here alone.
The bindings are imported on first use, not at ``import tmlr_runtime``, and no driver call is made
before the first :func:`init`.
"""
from __future__ import annotations

import os
import threading
import warnings
from dataclasses import dataclass, field
from typing import Any

from .errors import CudaUnavailableError, DriverError

# What a CUresult means for a tmlr user, and what to do about it.
_MEANINGS: dict[str, str] = {
    "CUDA_ERROR_INVALID_IMAGE": "the cubin is not a valid image for this device or driver; rebuild it for this GPU's arch with tmlr-build",
    "CUDA_ERROR_NO_BINARY_FOR_GPU": "the cubin was compiled for another architecture; rebuild with --arch matching this GPU",
    "CUDA_ERROR_UNSUPPORTED_PTX_VERSION": "the installed driver is older than the toolchain that built the cubin or PTX; update the NVIDIA driver",
    "CUDA_ERROR_INVALID_PTX": "the driver could not compile the artifact's PTX for this GPU; build a cubin for this GPU's arch with tmlr-build --arch",
    "CUDA_ERROR_NOT_FOUND": "the entry symbol is not in the cubin; the metadata and cubin do not belong together - rebuild the artifact",
    "CUDA_ERROR_OUT_OF_MEMORY": "the GPU is out of memory; free memory or launch a smaller problem",
    "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES": "too many registers or threads for this launch; rebuild with fewer --num-warps or a --maxnreg limit",
    "CUDA_ERROR_INVALID_VALUE": "the driver rejected a launch parameter (grid, block, shared memory or cluster shape)",
    "CUDA_ERROR_INVALID_HANDLE": "a handle (stream, function, context) is invalid or belongs to another context",
    "CUDA_ERROR_INVALID_CONTEXT": "no valid CUDA context is current in this thread",
    "CUDA_ERROR_CONTEXT_IS_DESTROYED": "the CUDA context was destroyed; load the kernel again",
    "CUDA_ERROR_ILLEGAL_ADDRESS": "a kernel accessed an illegal address; the context is now unusable - restart the process and check pointer arguments and sizes",
    "CUDA_ERROR_NOT_INITIALIZED": "the CUDA driver is not initialised",
    "CUDA_ERROR_NO_DEVICE": "no CUDA-capable device is visible (check CUDA_VISIBLE_DEVICES)",
    "CUDA_ERROR_INVALID_DEVICE": "the device ordinal does not exist",
    "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE": "a cooperative grid must fit on the device at once; launch fewer programs",
    "CUDA_ERROR_CLUSTER_OUT_OF_RESOURCES": "the cluster shape cannot be scheduled with this kernel's resources; rebuild with a smaller --num-ctas",
    "CUDA_ERROR_INVALID_CLUSTER_SIZE": "the cluster shape is not supported on this device",
    "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED": "this operation is not allowed while the stream is being captured into a CUDA graph",
    "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED": "the stream capture was invalidated by an earlier error",
    "CUDA_ERROR_SHARED_OBJECT_INIT_FAILED": "the CUDA driver library failed to initialise",
    "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH": "the NVIDIA driver does not match the CUDA version cuda-python was built for",
    "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER": "this call needs a newer NVIDIA driver than the installed one",
}
# What a driver too old for the installed cuda-python answers (35 is CUDA's "insufficient driver",
# which cuda-python's CUresult does not name).
_OLD_DRIVER_RESULTS = ("CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER", "CUresult 35")

Stamp = tuple[int, int, int]  # what identifies a file's contents: mtime_ns, size, inode


@dataclass
class Process:
    """Everything tmlr_runtime keeps for the life of the process; tests swap in another (``tests/fake_driver.py``).

    ``api``: the driver bindings once imported; ``devices``: :class:`DeviceInfo` by ordinal; ``modules``:
    the loaded functions by (context, cubin sha256, entry) (``launch/modules.py``); ``loaded``: what
    ``Kernel.load`` gave for a key, with the stamp of each file it read (None: the file was absent).
    """

    api: Any = None
    initialised: bool = False
    devices: dict[int, Any] = field(default_factory=dict)
    modules: dict[tuple[int, str, str], Any] = field(default_factory=dict)
    loaded: dict[tuple[Any, ...], tuple[dict[str, Stamp | None], Any]] = field(default_factory=dict)
    lock: Any = field(default_factory=threading.Lock)  # guards modules and loaded

    def cached(self, key: tuple[Any, ...]) -> Any:
        """What was loaded for ``key``, while every file it read is unchanged; else None."""
        hit = self.loaded.get(key)
        if hit is not None and all(stamp_of(path) == stamp for path, stamp in hit[0].items()):
            return hit[1]
        return None

    def remember(self, key: tuple[Any, ...], stats: dict[str, os.stat_result | None], value: Any) -> None:
        """Keep ``value`` for ``key`` with the stats of the files it was read from (``artifact.read_file``)."""
        with self.lock:
            self.loaded[key] = ({path: None if st is None else stamp(st) for path, st in stats.items()}, value)


def stamp(st: os.stat_result) -> Stamp:
    return st.st_mtime_ns, st.st_size, st.st_ino


def stamp_of(path: str) -> Stamp | None:
    try:
        return stamp(os.stat(path))
    except OSError:  # gone (or never there)
        return None


PROCESS = Process()


def api() -> Any:
    """The cuda-python driver module (``cuda.bindings.driver`` or, on old 12.x, ``cuda.cuda``)."""
    process = PROCESS
    if process.api is None:
        try:
            from cuda.bindings import driver as bindings
        except ImportError:
            try:
                from cuda import cuda as bindings  # cuda-python < 12.6
            except ImportError as e:
                raise CudaUnavailableError("cuda-python is not installed; pip install 'cuda-python>=12.3,<13' for a CUDA "
                                           "12 driver, 'cuda-python>=13,<14' for CUDA 13 (nvidia-smi shows which; from a "
                                           "tmlr checkout: pip install -e '.[cu12]' or '.[cu13]')") from e
        process.api = bindings
    return process.api


def error(code: int, what: str, cls: type[DriverError] = DriverError) -> DriverError:
    """The typed error of a failed driver call: the CUresult's name, what it means and what to do."""
    try:
        name = api().CUresult(code).name
    except ValueError:
        name = f"CUresult {code}"
    meaning = _MEANINGS.get(name, "see the CUDA driver API documentation for this code")
    note = _mismatch_note() if name in _OLD_DRIVER_RESULTS or what == "cuInit" else ""
    return cls(f"{name}: {meaning} (in {what}){note}", name)


def version_mismatch() -> str:
    """The fix, when cuda-python is built for a newer CUDA major than the driver supports (cuda-python 13
    under a CUDA 12 driver); "" when they agree or either version cannot be read."""
    try:
        drv = api()
        built = int(drv.CUDA_VERSION)
        result = drv.cuDriverGetVersion()
        supported = int(result[1]) if not int(result[0]) else 0
    except Exception:  # an old binding without CUDA_VERSION, or no libcuda: nothing to compare
        return ""
    if not supported or built // 1000 <= supported // 1000:
        return ""
    major = supported // 1000
    fix = "update the NVIDIA driver (tmlr_runtime needs a CUDA 12 or 13 driver)"
    if major == 12:
        fix = ("install the cuda-python of the driver's CUDA major, pip install 'cuda-python>=12.3,<13' (from a tmlr "
               "checkout: pip install -e '.[cu12]'), or update the NVIDIA driver")
    return (f"cuda-python here is built for CUDA {built // 1000}.{built % 1000 // 10}, but this NVIDIA driver supports "
            f"CUDA {major}.{supported % 1000 // 10}: {fix}")


def _mismatch_note() -> str:
    note = version_mismatch()
    return f"; {note}" if note else ""


def check(result: Any, what: str) -> Any:
    """Unwrap a cuda-python ``(CUresult, *values)`` tuple: None, the one value or the values;
    raise :class:`DriverError` on failure."""
    err, values = (result[0], result[1:]) if isinstance(result, tuple) else (result, ())
    if int(err):
        raise error(int(err), what)
    return values[0] if len(values) == 1 else (values or None)


def init() -> Any:
    """Initialise the driver once per process and return the bindings module; a machine without
    libcuda gets :class:`CudaUnavailableError`, not cuda-bindings' own loader exception."""
    drv = api()
    if not PROCESS.initialised:  # cuInit is idempotent and thread-safe: two threads may both call it
        try:
            result = drv.cuInit(0)
        except Exception as e:  # cuda-bindings raises its own loader errors when libcuda is absent
            raise CudaUnavailableError(f"the NVIDIA driver library (libcuda) could not be loaded: {e}; tmlr_runtime "
                                       f"needs a machine with an NVIDIA GPU and driver{_mismatch_note()}") from None
        code = int(result[0] if isinstance(result, tuple) else result)
        if code:
            raise error(code, "cuInit", CudaUnavailableError)
        note = version_mismatch()
        if note:  # cuInit passed, but a later call may need a function this driver lacks: say the fix now
            warnings.warn(f"tmlr_runtime: {note}", RuntimeWarning, stacklevel=2)
        PROCESS.initialised = True
    return drv


@dataclass(frozen=True)
class DeviceInfo:
    """Facts about one device that loading and launching check against."""

    ordinal: int
    name: str
    major: int
    minor: int
    max_threads_per_block: int
    max_shared_optin: int
    max_grid: tuple[int, int, int]
    cluster_launch: bool
    cooperative_launch: bool

    @property
    def capability(self) -> int:
        return self.major * 10 + self.minor


def device_info(ordinal: int) -> DeviceInfo:
    """Cached :class:`DeviceInfo` of device ``ordinal``."""
    info = PROCESS.devices.get(ordinal)
    if info is None:
        drv = init()
        dev = check(drv.cuDeviceGet(ordinal), "cuDeviceGet")

        def attr(name: str) -> int:
            a = getattr(drv.CUdevice_attribute, "CU_DEVICE_ATTRIBUTE_" + name)
            return int(check(drv.cuDeviceGetAttribute(a, dev), f"cuDeviceGetAttribute({a.name})"))

        name = check(drv.cuDeviceGetName(256, dev), "cuDeviceGetName").split(b"\0", 1)[0].decode(errors="replace")
        info = PROCESS.devices[ordinal] = DeviceInfo(
            ordinal, name, attr("COMPUTE_CAPABILITY_MAJOR"), attr("COMPUTE_CAPABILITY_MINOR"), attr("MAX_THREADS_PER_BLOCK"),
            attr("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"), (attr("MAX_GRID_DIM_X"), attr("MAX_GRID_DIM_Y"), attr("MAX_GRID_DIM_Z")),
            bool(attr("CLUSTER_LAUNCH")), bool(attr("COOPERATIVE_LAUNCH")),
        )
    return info


def current_context() -> int:
    """The handle of this thread's current context, making device 0's primary context current when
    none is (the context torch uses, so torch pointers work)."""
    drv = init()
    ctx = check(drv.cuCtxGetCurrent(), "cuCtxGetCurrent")
    if not int(ctx):
        ctx = check(drv.cuDevicePrimaryCtxRetain(check(drv.cuDeviceGet(0), "cuDeviceGet")), "cuDevicePrimaryCtxRetain")
        check(drv.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    return int(ctx)
