"""tmlr_build: compile Triton kernels (Python, TTIR, TTGIR, LLIR, PTX or cubin) into tmlr artifacts.

An artifact is a directory ``OUT/<kernel>/`` with ``metadata.json`` and one cubin per target arch,
loadable by ``tmlr_runtime.Kernel.load`` on a machine without Triton. Building needs no GPU.

    from tmlr_build import BuildConfig, build, request, parse_arch_list
    build([request("k.py:add", signature="*fp32:16, *fp32:16, *fp32:16, i32, 1024")],
          BuildConfig(out="out", archs=parse_arch_list("80,90")))
"""
from __future__ import annotations

__version__ = "0.1.0"

from .arch import Target, parse_arch_list  # noqa: E402
from .build import BuildConfig, BuildFailedError, BuildReport, build  # noqa: E402
from .errors import *  # noqa: E402,F401,F403
from .errors import ERROR_CLASSES  # noqa: E402
from .sources import KernelRequest, request  # noqa: E402
from .jit import JitKernel, jit  # noqa: E402

__all__ = ["BuildConfig", "BuildFailedError", "BuildReport", "JitKernel", "KernelRequest", "Target", "build", "jit",
           "parse_arch_list", "request", *ERROR_CLASSES]
