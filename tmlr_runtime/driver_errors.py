"""What a failed CUDA driver call means for a tmlr user and what to do about it; imported by the first failure
(or ``driver.init``), so a process whose driver calls succeed never reads the table."""
from __future__ import annotations

from typing import Any

from .errors import DriverError

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


def driver_error(drv: Any, code: int, what: str, cls: type[DriverError] = DriverError) -> DriverError:
    """The typed error of a failed call of the bindings ``drv``: the CUresult's name, what it means and what to do."""
    try:
        name = drv.CUresult(code).name
    except ValueError:
        name = f"CUresult {code}"
    meaning = _MEANINGS.get(name, "see the CUDA driver API documentation for this code")
    note = mismatch_note(drv) if name in _OLD_DRIVER_RESULTS or what == "cuInit" else ""
    return cls(f"{name}: {meaning} (in {what}){note}", name)


def version_mismatch(drv: Any) -> str:
    """The fix, when cuda-python is built for a newer CUDA major than the driver supports (cuda-python 13
    under a CUDA 12 driver); "" when they agree or either version cannot be read."""
    try:
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


def mismatch_note(drv: Any) -> str:
    note = version_mismatch(drv)
    return f"; {note}" if note else ""
