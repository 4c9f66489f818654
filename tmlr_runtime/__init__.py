"""tmlr_runtime: load cubin + metadata.json artifacts written by tmlr-build and launch them.

No Triton, ever; torch and numpy are used only when the caller already imported them.
"""
from __future__ import annotations
from typing import Any
from .errors import (ArgumentCountError, ArgumentError, ArtifactError, ConstexprMismatchError, CudaUnavailableError,
                      DeviceLimitError, DriverError, GridError, IntegrityError, NoCompatibleVariantError,
                      PointerArgumentError, ScalarArgumentError, SchemaError, StreamError, TmlrError, TuningError,
                      UnseenKeyError)
from .launch.kernel import Kernel
from .artifact.metadata import METADATA_FILE, SCHEMA_PATH, SCHEMA_VERSION, ArtifactMetadata, Variant
from .launch.tensordesc import DescriptorArgumentError, TensorDescriptor, TensorMap, make_tensor_map
from .abi import Parameter

__version__ = "0.1.0"

__all__ = [
    "ArgumentCountError", "ArgumentError", "ArtifactError", "ArtifactMetadata", "ConstexprMismatchError",
    "CudaUnavailableError", "DescriptorArgumentError", "DeviceLimitError", "DriverError", "GridError", "IntegrityError", "Kernel", "KernelFamily", "METADATA_FILE",
    "NoCompatibleVariantError", "Parameter", "PointerArgumentError", "SCHEMA_PATH", "SCHEMA_VERSION",
    "ScalarArgumentError", "SchemaError", "StreamError", "TensorDescriptor", "TensorMap", "TmlrError", "TuningError", "UnseenKeyError", "Variant", "make_tensor_map",
]


def __getattr__(name: str) -> Any:
    # The family machinery (dispatch, heuristics, tuning) is imported on first use: Kernel.load imports it
    # when it meets a family index, so a service launching single artifacts never pays for it.
    if name == "KernelFamily":
        from .family.dispatch import KernelFamily

        return KernelFamily
    raise AttributeError(f"module 'tmlr_runtime' has no attribute {name!r}")
