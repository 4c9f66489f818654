"""The stand-in for Triton's active driver (and torch.cuda) while a compile worker imports and builds a kernel file.

Why: kernel libraries decorate kernels with ``@triton.autotune``, and ``Autotuner.__init__`` in
Triton 3.3.x asks ``triton.runtime.driver.active.get_benchmarker()`` at decoration time (later
versions look the benchmarker up when they first benchmark). On a machine without a GPU there is
no active driver, so importing such a file fails with "0 active drivers". Libraries also ask
``driver.active.get_current_target()`` at import time (to pick configs for an arch, or to tell
CUDA from HIP), ``driver.active.utils.get_device_properties(0)`` (shared memory, SM count: fla picks
its autotune configs from it) and torch.cuda (torch_cuda.py), and Triton's tutorials
``driver.active.get_active_torch_device()``. Triton 3.4's Gluon frontend (``GluonASTSource.make_ir``)
asks it for the target too, while compiling.

A build launches nothing, and what it produces must not depend on the machine it runs on. So a
worker that imports a kernel file ALWAYS installs this stand-in, GPU or not, through Triton's
public ``driver.set_active`` (present from 3.3 on), for the import and the compile: it answers as the
target (``get_current_target``) and as the build's device profile (common/devices.py), refuses with
advice whatever only a real device could answer, and :func:`standing_in` puts Triton's driver and
torch.cuda back afterwards. Nothing else in tmlr-build touches Triton's driver.
"""
from __future__ import annotations

import contextlib
from typing import Any, Iterator, NoReturn

from ..common.devices import DEFAULT_FOR, PROFILES, DeviceProfile
from .torch_cuda import DeviceQueryError, TorchCudaStandIn, refuse


class BuildDriver:
    """Answers Triton's driver questions as the target GPU of the build (``capability``) and as ``profile``."""

    def __init__(self, capability: int, profile: DeviceProfile) -> None:
        self.capability = capability
        self.profile = profile
        self.answered: set[str] = set()  # the device questions answered (provenance)
        self.utils = _Utils(self)

    def get_current_target(self) -> Any:
        from triton.backends.compiler import GPUTarget

        return GPUTarget("cuda", self.capability, 32)

    def get_current_device(self) -> int:
        return 0

    def get_device_capability(self, device: int = 0) -> tuple[int, int]:
        self.answered.add("triton driver.active.get_device_capability")
        return self.profile.capability

    def get_active_torch_device(self) -> Any:
        import torch  # only a file that asks for a torch device gets here, and it imports torch itself

        return torch.device("cuda", 0)

    def get_device_interface(self) -> Any:
        import torch

        return torch.cuda  # answering as the profile (torch_cuda.py)

    def get_benchmarker(self) -> Any:
        return _no_benchmarks

    def __getattr__(self, name: str) -> NoReturn:
        refuse(f"triton.runtime.driver.active.{name}", self.profile)


class _Utils:
    """``driver.active.utils``: the device's properties as Triton's C helper returns them."""

    def __init__(self, driver: BuildDriver) -> None:
        self._driver = driver

    def get_device_properties(self, device: int = 0) -> dict[str, int]:
        self._driver.answered.add("triton driver.active.utils.get_device_properties")
        return _Properties(self._driver.profile)

    def get_device_capability(self, device: int = 0) -> tuple[int, int]:  # Triton 3.9's torch-free path
        return self._driver.get_device_capability(device)

    def get_current_device(self) -> int:
        return 0

    def __getattr__(self, name: str) -> NoReturn:
        refuse(f"triton.runtime.driver.active.utils.{name}", self._driver.profile)


class _Properties(dict):  # type: ignore[type-arg]
    """Triton's device-properties dict; a key the profile does not know is refused by name, not made up."""

    def __init__(self, profile: DeviceProfile) -> None:
        super().__init__((k, v) for k, v in profile.triton_properties().items() if v is not None)
        self._profile = profile

    def __missing__(self, key: str) -> NoReturn:
        refuse(f"triton.runtime.driver.active.utils.get_device_properties()[{key!r}]", self._profile)


def _no_benchmarks(*args: Any, **kwargs: Any) -> NoReturn:
    raise RuntimeError("tmlr-build does not benchmark autotune configs: name the kernel and its constexprs "
                       "(--signature) to build one configuration")


class StandIn:
    """What a build answered as: the profile, and the device questions the kernel file asked (torch's and Triton's)."""

    def __init__(self, profile: DeviceProfile, driver: BuildDriver, torch_cuda: TorchCudaStandIn) -> None:
        self.profile, self._driver, self._torch = profile, driver, torch_cuda

    @property
    def answered(self) -> set[str]:
        return self._driver.answered | self._torch.answered


@contextlib.contextmanager
def standing_in(capability: int, device: str | None) -> Iterator[StandIn]:
    """Triton's driver and torch.cuda answer as target ``capability`` and device profile ``device`` (a key of
    devices.PROFILES; None: the default for the capability) inside the block; both as they were after it."""
    from triton.runtime import driver

    profile = PROFILES[device or DEFAULT_FOR[capability]]
    before = dict(vars(driver))  # Triton 3.3 keeps the driver in .active, 3.8+ in ._active: restore whichever
    build = BuildDriver(capability, profile)
    torch_cuda = TorchCudaStandIn(profile)
    driver.set_active(build)
    try:
        yield StandIn(profile, build, torch_cuda)
    finally:
        torch_cuda.restore()
        vars(driver).clear()
        vars(driver).update(before)


__all__ = ["BuildDriver", "DeviceQueryError", "StandIn", "standing_in"]
