"""tmlr_build: compile Triton kernels (Python, TTIR, TTGIR, LLIR, PTX or cubin) into tmlr artifacts.

An artifact is a directory ``OUT/<kernel>/`` with ``metadata.json`` and one cubin per target arch,
loadable by ``tmlr_runtime.Kernel.load`` on a machine without Triton. Building needs no GPU.
"""
from __future__ import annotations

__version__ = "0.1.0"
