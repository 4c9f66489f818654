"""tmlr_runtime: load cubin + metadata.json artifacts written by tmlr-build and launch them.

No Triton, ever; torch and numpy are used only when the caller already imported them.
"""
from __future__ import annotations

from ._errors import (ArgumentCountError, ArgumentError, ArtifactError, ConstexprMismatchError, CudaUnavailableError,
                      DeviceLimitError, DriverError, GridError, IntegrityError, NoCompatibleVariantError,
                      PointerArgumentError, ScalarArgumentError, SchemaError, StreamError, TmlrError)
from ._bench import TuningError
from ._family import KernelFamily
from ._heuristics import check_expression
from ._kernel import Kernel
from ._tuning import UnseenKeyError
from ._metadata import METADATA_FILE, SCHEMA_PATH, SCHEMA_VERSION, ArtifactMetadata, Variant
from ._tensordesc import DescriptorArgumentError, TensorDescriptor, TensorMap, make_tensor_map
from .abi import Parameter

__version__ = "0.1.0"

__all__ = [
    "ArgumentCountError", "ArgumentError", "ArtifactError", "ArtifactMetadata", "ConstexprMismatchError",
    "CudaUnavailableError", "DescriptorArgumentError", "DeviceLimitError", "DriverError", "GridError", "IntegrityError", "Kernel", "KernelFamily", "METADATA_FILE",
    "NoCompatibleVariantError", "Parameter", "PointerArgumentError", "SCHEMA_PATH", "SCHEMA_VERSION",
    "ScalarArgumentError", "SchemaError", "StreamError", "TensorDescriptor", "TensorMap", "TmlrError", "TuningError", "UnseenKeyError", "Variant", "check_expression", "make_tensor_map",
]
