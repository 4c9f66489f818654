"""The stand-in for Triton's active driver while a compile worker imports a kernel file.

Why: kernel libraries decorate kernels with ``@triton.autotune``, and ``Autotuner.__init__`` in
Triton 3.3.x asks ``triton.runtime.driver.active.get_benchmarker()`` at decoration time (later
versions look the benchmarker up when they first benchmark). On a machine without a GPU there is
no active driver, so importing such a file fails with "0 active drivers". Libraries also ask
``driver.active.get_current_target()`` at import time (to pick configs for an arch, or to tell
CUDA from HIP), and Triton's tutorials ``driver.active.get_active_torch_device()``. Triton 3.4's
Gluon frontend (``GluonASTSource.make_ir``) asks it for the target too, while compiling.

A build launches nothing, and what it produces must not depend on the machine it runs on. So a
worker that imports a kernel file ALWAYS installs this stand-in, GPU or not, through Triton's
public ``driver.set_active`` (present from 3.3 on): it answers as the GPU being built for and
refuses, with advice, whatever only a real device could answer. Nothing else in tmlr-build
touches Triton's driver.
"""
from __future__ import annotations

from typing import Any, NoReturn


class BuildDriver:
    """Answers Triton's driver questions as the target GPU of the build (``capability``)."""

    def __init__(self, capability: int) -> None:
        self.capability = capability

    def get_current_target(self) -> Any:
        from triton.backends.compiler import GPUTarget

        return GPUTarget("cuda", self.capability, 32)

    def get_current_device(self) -> int:
        return 0

    def get_active_torch_device(self) -> Any:
        import torch  # only a file that asks for a torch device gets here, and it imports torch itself

        return torch.device("cuda", 0)

    def get_benchmarker(self) -> Any:
        return _no_benchmarks

    def __getattr__(self, name: str) -> NoReturn:
        raise RuntimeError(
            f"triton.runtime.driver.active.{name} was used while tmlr-build imported the kernel file; a build "
            f"runs no GPU code (so that it builds the same on any machine), and only the target "
            f"(get_current_target) is known then - move that call out of import time, into the code that launches")


def _no_benchmarks(*args: Any, **kwargs: Any) -> NoReturn:
    raise RuntimeError("tmlr-build does not benchmark autotune configs: name the kernel and its constexprs "
                       "(--signature) to build one configuration")


def install(capability: int) -> None:
    """Make ``BuildDriver(capability)`` Triton's active driver in this (worker) process."""
    from triton.runtime import driver

    driver.set_active(BuildDriver(capability))
