"""tmlr_build: compile Triton kernels (Python, TTIR, TTGIR, LLIR, PTX or cubin) into tmlr artifacts.

An artifact is a directory ``OUT/<kernel>/`` with ``metadata.json`` and one cubin per target arch,
loadable by ``tmlr_runtime.Kernel.load`` on a machine without Triton. Building needs no GPU.

    from tmlr_build import BuildConfig, build, request, parse_arch_list
    build([request("k.py:add", signature="*fp32:16, *fp32:16, *fp32:16, i32, 1024")],
          BuildConfig(out="out", archs=parse_arch_list("80,90")))

The parts: ``builder/`` (the parent process: requests, jobs, workers, artifacts), ``compile/`` (the
worker processes, which import Triton), ``passdump/`` (MLIR pass dumps), ``common/`` (what both use).
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .version import __version__

# Loaded on first use: every import of a tmlr_build module runs this file first - in a compile
# worker, which must not load the builder, and in tmlr-build, which starts its compile processes
# before importing anything heavy.
_API = {
    "builder.build": ("BuildConfig", "BuildReport", "build"),
    "builder.sources": ("KernelRequest", "request"),
    "builder.jit": ("JitKernel", "jit"),
    "common.arch": ("Target", "parse_arch_list"),
    "common.errors": ("BuildError", "UsageError", "UnsupportedArchError", "OptionError", "SpecError",
                      "OutputPathError", "DeviceProfileError", "ShardError", "ShardMissingError", "ShardMismatchError",
                      "TritonVersionError", "InputError", "InputKindError", "KernelNotFoundError",
                      "SignatureError", "RecordMismatchError", "MissingMetadataError", "IRParseError", "ArchMismatchError",
                      "TritonReleaseMismatchError", "CompileError",
                      "PtxasError", "CompilerCrashError", "UnsupportedKernelError", "ArtifactWriteError",
                      "BuildFailedError"),
}
_LAZY = {name: module for module, names in _API.items() for name in names}

__all__ = list(_LAZY)


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:
    from .builder.build import BuildConfig, BuildReport, build
    from .builder.jit import JitKernel, jit
    from .builder.sources import KernelRequest, request
    from .common.arch import Target, parse_arch_list
    from .common.errors import *  # noqa: F401,F403
