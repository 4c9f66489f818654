"""The one place that calls cuda-python (12.x: ``cuda.cuda`` or ``cuda.bindings.driver``; 13.x: the latter only),
and :data:`PROCESS`, the process's state. The bindings are imported on first use; no driver call precedes :func:`init`."""
from __future__ import annotations

import os
import threading
import warnings
from typing import Any

from .errors import CudaUnavailableError, DriverError
from .records import Record

Stamp = tuple[int, int, int]  # what identifies a file's contents: mtime_ns, size, inode


class Process:
    """Everything tmlr_runtime keeps for the life of the process; tests swap in another (``tests/fake_driver.py``).

    ``api``: the driver bindings once imported; ``devices``: :class:`DeviceInfo` by ordinal; ``modules``:
    the loaded functions by (context, cubin sha256, entry) (``launch/modules.py``); ``loaded``: what
    ``Kernel.load`` gave for a key, with the stamp of each file it read (None: the file was absent);
    ``unusable_caches``: the tuning cache folders found unusable, each warned about once (``family/tuning.py``).
    """

    def __init__(self, api: Any = None, initialised: bool = False, devices: dict[int, Any] | None = None) -> None:
        self.api, self.initialised = api, initialised
        self.devices: dict[int, Any] = {} if devices is None else devices
        self.modules: dict[tuple[int, str, str], Any] = {}
        self.loaded: dict[tuple[Any, ...], tuple[dict[str, Stamp | None], Any]] = {}
        self.lock = threading.Lock()  # guards modules and loaded
        self.unusable_caches: set[str] = set()

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
    """The typed error of a failed driver call (``driver_errors``: what the CUresult means, what to do)."""
    from .driver_errors import driver_error

    return driver_error(api(), code, what, cls)


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
            from .driver_errors import mismatch_note

            raise CudaUnavailableError(f"the NVIDIA driver library (libcuda) could not be loaded: {e}; tmlr_runtime "
                                       f"needs a machine with an NVIDIA GPU and driver{mismatch_note(drv)}") from None
        code = int(result[0] if isinstance(result, tuple) else result)
        if code:
            raise error(code, "cuInit", CudaUnavailableError)
        from .driver_errors import version_mismatch

        note = version_mismatch(drv)
        if note:  # cuInit passed, but a later call may need a function this driver lacks: say the fix now
            warnings.warn(f"tmlr_runtime: {note}", RuntimeWarning, stacklevel=2)
        PROCESS.initialised = True
    return drv


class DeviceInfo(Record):
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


def current_device() -> int:
    """The ordinal of the current context's device (a context must be current: see :func:`current_context`)."""
    return int(check(api().cuCtxGetDevice(), "cuCtxGetDevice"))


def current_context() -> int:
    """The handle of this thread's current context, making device 0's primary context current when
    none is (the context torch uses, so torch pointers work)."""
    drv = init()
    ctx = check(drv.cuCtxGetCurrent(), "cuCtxGetCurrent")
    if not int(ctx):
        ctx = check(drv.cuDevicePrimaryCtxRetain(check(drv.cuDeviceGet(0), "cuDeviceGet")), "cuDevicePrimaryCtxRetain")
        check(drv.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    return int(ctx)
