"""Every error tmlr raises derives from :class:`TmlrError`.

Messages say what is wrong *and* what to do; attributes carry the same facts for code.
"""
from __future__ import annotations


class TmlrError(Exception):
    """Base class of every error raised by tmlr_runtime and tmlr_build."""


def short_repr(value: object, limit: int = 80) -> str:
    """``repr(value)`` for a message: cut to ``limit`` characters, and never raising."""
    if isinstance(value, int) and value.bit_length() > 256:  # repr of a huge int is slow or refused
        return f"<{'-' if value < 0 else ''}int of {value.bit_length()} bits>"
    try:
        text = repr(value)
    except Exception:
        return f"<{type(value).__name__} without a repr>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --- artifacts on disk -------------------------------------------------------------------------
class ArtifactError(TmlrError):
    """The artifact directory or its files cannot be used as they are."""

    def __init__(self, message: str, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


class SchemaError(ArtifactError):
    """metadata.json does not follow the schema; ``json_path`` names the offending field."""

    def __init__(self, message: str, path: str | None = None, json_path: str = "$") -> None:
        super().__init__(message, path)
        self.json_path = json_path


class IntegrityError(ArtifactError):
    """A cubin does not match the size or sha256 recorded in metadata.json, or is not a whole cubin."""


class CubinMismatchError(IntegrityError):
    """A whole cubin contradicts metadata.json: its ELF header names another SM architecture than the variant's
    target, or its kernel takes other parameters than the signature makes."""


# --- device fit ----------------------------------------------------------------------------------
class NoCompatibleVariantError(TmlrError):
    """No variant of the artifact was compiled for the current device."""


class VariantNotBuiltError(NoCompatibleVariantError):
    """The variant a family call needs failed to compile when the family was built (its index lists it under
    "failed"); ``vid`` names it, ``error`` is its compile error's first line."""

    def __init__(self, message: str, vid: str | None = None, error: str | None = None) -> None:
        super().__init__(message)
        self.vid, self.error = vid, error


class DeviceLimitError(TmlrError):
    """The kernel asks for more than the device offers (shared memory, clusters, threads)."""


# --- calls ---------------------------------------------------------------------------------------
class ArgumentError(TmlrError, TypeError):
    """A launch argument does not fit the recorded signature; ``param`` names it."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


class ArgumentCountError(ArgumentError):
    """Too few or too many positional arguments, or an unknown keyword."""


class PointerArgumentError(ArgumentError, ValueError):
    """A pointer argument is not a device buffer usable here (CPU, other device, dtype, alignment). Also a ValueError:
    Triton's launcher raises one for a pointer it cannot access (a CPU tensor), and callers catch that."""


class ScalarArgumentError(ArgumentError):
    """A scalar is out of range for its type, or breaks a specialization (divisibility, == 1)."""


class DescriptorArgumentError(ArgumentError):
    """A tensor descriptor argument does not fit its parameter (block shape, dtype, rank, TMA rules)."""


class ConstexprMismatchError(ArgumentError):
    """A constexpr was passed with a value other than the one compiled in."""


class LaunchOptionMismatchError(ArgumentError):
    """A launch option passed in the call (``num_warps=8``) other than the one the artifact was built with."""


class GridError(TmlrError, ValueError):
    """The launch grid is malformed or beyond the device's limits."""


class StreamError(TmlrError, TypeError):
    """The stream argument is not something a stream handle can be read from."""


# --- the driver ----------------------------------------------------------------------------------
class DriverError(TmlrError):
    """A CUDA driver call failed; ``code`` is the CUresult name, e.g. ``CUDA_ERROR_INVALID_IMAGE``."""

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.code = code


class CudaUnavailableError(DriverError):
    """No usable CUDA driver or device on this machine."""


# --- families ------------------------------------------------------------------------------------
class TuningError(TmlrError):
    """Benchmarking the configs of a family is not possible here (stream capture, unknown buffer size, pre_hook)."""


class UnseenKeyError(TmlrError):
    """No config is known for an autotune key and the mode may not benchmark (fallback="error")."""


class TuningFileError(ArtifactError):
    """A tuning table or cache file (its folder, lock or temp file included) cannot be read or written: an OS
    error (read-only file system, permission, no space, a file where a folder must be). ``reason`` is the OS's
    text, ``errno`` its code."""

    def __init__(self, message: str, path: str, reason: str, errno: int | None) -> None:
        super().__init__(message, path)
        self.reason, self.errno = reason, errno


# --- serving (tmlr_runtime.serve) -----------------------------------------------------------------
class UnservedKernelError(TmlrError):
    """Under ``tmlr_runtime.serve``, a ``@triton.jit`` kernel was launched that no served artifact serves: it was
    not recorded, this specialization of it was not, or its source changed since the build. ``kernel`` names it
    (``module:name``), ``specialization`` the launch (``x_ptr=*fp16:16, n=i32, BLOCK=1024``), ``command`` the
    ``tmlr-build record`` command that adds it."""

    def __init__(self, message: str, kernel: str = "", specialization: str = "", command: str = "") -> None:
        super().__init__(message)
        self.kernel, self.specialization, self.command = kernel, specialization, command


# --- warnings ------------------------------------------------------------------------------------
class PtxJitWarning(UserWarning):
    """A kernel was loaded from its PTX, which the driver compiled for this GPU (no cubin of the artifact runs
    here): said once per load, with what it cost; ``seconds`` holds that cost, ``arch`` the GPU's (``sm_90``)."""

    def __init__(self, message: str, seconds: float = 0.0, arch: str = "") -> None:
        super().__init__(message)
        self.seconds, self.arch = seconds, arch


class TuningCacheWarning(UserWarning):
    """The tuning cache cannot be read or written here (``TuningFileError``'s causes): the configs chosen stay in
    memory for the process and launches go on; said once per cache folder and process. Or the cache is damaged:
    it was moved aside and a new one is started. ``path``: the file."""

    def __init__(self, message: str, path: str = "") -> None:
        super().__init__(message)
        self.path = path


class UnservedKernelWarning(UserWarning):
    """Under ``tmlr_runtime.serve(..., mode="fallback")``, a launch no served artifact serves went to Triton's JIT
    (which compiles it); said once per kernel and specialization, with the facts :class:`UnservedKernelError` has."""

    def __init__(self, message: str, kernel: str = "", specialization: str = "", command: str = "") -> None:
        super().__init__(message)
        self.kernel, self.specialization, self.command = kernel, specialization, command
