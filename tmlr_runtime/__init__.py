"""tmlr_runtime: load cubin + metadata.json artifacts written by tmlr-build and launch them. No Triton, ever;
torch and numpy only when the caller imported them. The layout: docs/contributing.md."""
from __future__ import annotations

from typing import Any

from .abi import Parameter
from .errors import (ArgumentCountError, ArgumentError, ArtifactError, ConstexprMismatchError, CubinMismatchError,
                     CudaUnavailableError, DescriptorArgumentError, DeviceLimitError, DriverError, GridError, IntegrityError,
                     LaunchOptionMismatchError,
                     NoCompatibleVariantError, PointerArgumentError, PtxJitWarning, ScalarArgumentError, SchemaError, StreamError,
                     TmlrError, TuningCacheWarning, TuningError, TuningFileError, UnseenKeyError, UnservedKernelError,
                     UnservedKernelWarning, VariantNotBuiltError)
from .launch.kernel import Kernel

__version__ = "0.1.0"

__all__ = [
    "ArgumentCountError", "ArgumentError", "ArtifactError", "ArtifactMetadata", "ConstexprMismatchError",
    "CubinMismatchError", "CudaUnavailableError", "DescriptorArgumentError", "DeviceLimitError", "DriverError", "GridError",
    "IntegrityError", "Kernel", "KernelFamily",
    "LaunchOptionMismatchError", "METADATA_FILE", "NoCompatibleVariantError", "Parameter", "PointerArgumentError", "PtxJitWarning", "SCHEMA_PATH",
    "SCHEMA_VERSION", "ScalarArgumentError", "SchemaError", "StreamError", "TensorDescriptor", "TensorMap", "TmlrError", "TuningCacheWarning",
    "TuningError", "TuningFileError", "UnseenKeyError", "UnservedKernelError", "UnservedKernelWarning", "Variant",
    "VariantNotBuiltError", "make_tensor_map", "serve",
]


def __getattr__(name: str) -> Any:
    # Families (dispatch, heuristics, tuning) and host tensor descriptors are imported on first use (Kernel.load
    # imports the family code when it meets a family index), so a service of plain kernels never pays for them;
    # the artifact reader with the first Kernel.load.
    if name in ("METADATA_FILE", "SCHEMA_PATH", "SCHEMA_VERSION", "ArtifactMetadata", "Variant"):
        from .artifact import metadata

        return getattr(metadata, name)
    if name == "KernelFamily":
        from .family.dispatch import KernelFamily

        return KernelFamily
    if name in ("TensorDescriptor", "TensorMap", "make_tensor_map"):
        from .launch import tensordesc

        return getattr(tensordesc, name)
    if name == "serve":  # the serving layer (it patches Triton, or stands in for it) only for the one who calls it
        from .serving import serve

        return serve
    raise AttributeError(f"module 'tmlr_runtime' has no attribute {name!r}")


def __dir__() -> list[str]:  # the names imported on first use too
    return sorted({*globals(), *__all__})
