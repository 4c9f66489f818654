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

from .common.errors import *  # noqa: F401,F403
from .common.errors import ERROR_CLASSES
from .version import __version__

# Loaded on first use: a compile worker imports tmlr_build.compile, which runs this file, and must
# not load the builder with it.
_LAZY = {
    "BuildConfig": "builder.build", "BuildReport": "builder.build", "build": "builder.build",
    "KernelRequest": "builder.sources", "request": "builder.sources",
    "JitKernel": "builder.jit", "jit": "builder.jit",
    "Target": "common.arch", "parse_arch_list": "common.arch",
}

__all__ = [*_LAZY, *ERROR_CLASSES]


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
