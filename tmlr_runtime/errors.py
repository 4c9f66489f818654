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


class PointerArgumentError(ArgumentError):
    """A pointer argument is not a device buffer usable here (CPU, other device, dtype, alignment)."""


class ScalarArgumentError(ArgumentError):
    """A scalar is out of range for its type, or breaks a specialization (divisibility, == 1)."""


class DescriptorArgumentError(ArgumentError):
    """A tensor descriptor argument does not fit its parameter (block shape, dtype, rank, TMA rules)."""


class ConstexprMismatchError(ArgumentError):
    """A constexpr was passed with a value other than the one compiled in."""


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


# --- warnings ------------------------------------------------------------------------------------
class PtxJitWarning(UserWarning):
    """A kernel was loaded from its PTX, which the driver compiled for this GPU (no cubin of the artifact runs
    here): said once per load, with what it cost; ``seconds`` holds that cost, ``arch`` the GPU's (``sm_90``)."""

    def __init__(self, message: str, seconds: float = 0.0, arch: str = "") -> None:
        super().__init__(message)
        self.seconds, self.arch = seconds, arch
