"""A stand-in for cuda-python's driver module, so ``Kernel.load`` and launches run on a CPU.

:func:`installed` swaps it in for ``tmlr_runtime._driver``'s bindings, with one device described
by a :class:`tmlr_runtime._driver.DeviceInfo` (see :data:`H200`) and empty module/kernel caches,
and puts everything back afterwards. Enums and structs (``CUresult``, ``CUlaunchConfig``, …) are
the real bindings' (they import without libcuda); the calls are fakes that behave like the driver
where tmlr depends on it:

- ``cuModuleLoadData`` reads the image with ``tmlr_runtime._elf`` (not an ELF cubin:
  ``CUDA_ERROR_INVALID_IMAGE``), ``cuModuleGetFunction`` looks the entry up in its symbol table
  (missing: ``CUDA_ERROR_NOT_FOUND``);
- ``cuPointerGetAttribute`` calls every address device memory of its device, except those put in
  ``host_addresses`` (pinned host memory) or ``unknown_addresses`` (memory CUDA does not know);
- ``cuMemAllocAsync`` / ``cuMemFreeAsync`` (global scratch) are recorded in ``scratch``;
- ``cuLaunchKernel`` / ``cuLaunchKernelEx`` record each launch, and for the ``add`` kernel of
  ``examples/kernels/vector_add.py`` (BLOCK 1024) also *run* it on host memory, so a test can pass
  CPU tensors that pose as CUDA tensors (:class:`FakeCudaTensor`) and check ``out == x + y``.
"""
from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import functools
from typing import Any, Iterator

from tmlr_runtime import _driver, _kernel, _modules
from tmlr_runtime._elf import functions
from tmlr_runtime._errors import IntegrityError

H200 = _driver.DeviceInfo(
    ordinal=0, name="NVIDIA H200 (fake)", major=9, minor=0, max_threads_per_block=1024, max_shared_optin=232448,
    max_grid=(2**31 - 1, 65535, 65535), cluster_launch=True, cooperative_launch=True, sm_count=132,
)
A100 = dataclasses.replace(H200, name="NVIDIA A100 (fake)", major=8, minor=0, max_shared_optin=166912,
                           cluster_launch=False, sm_count=108)

_OK, _INVALID_VALUE, _INVALID_IMAGE, _NOT_FOUND = 0, 1, 200, 500
_CONTEXT = 0xC0C0


@dataclasses.dataclass
class _Module:
    symbols: dict[str, Any]


@dataclasses.dataclass
class _Function:
    name: str
    registers: int


class FakeDriver:
    """The subset of ``cuda.bindings.driver`` that tmlr_runtime calls, for one device."""

    def __init__(self, real: Any, device: _driver.DeviceInfo) -> None:
        self._real = real
        self.device = device
        self.launches: list[dict[str, Any]] = []
        self.loaded: list[str] = []
        self.scratch: list[tuple[str, int, int]] = []  # ("alloc", bytes, stream) and ("free", address, stream)
        self.host_addresses: set[int] = set()
        self.unknown_addresses: set[int] = set()

    def __getattr__(self, name: str) -> Any:  # enums and structs come from the real bindings
        return getattr(self._real, name)

    # -- context and device -------------------------------------------------------------------
    def cuInit(self, flags: int) -> tuple[int]:
        return (_OK,)

    def cuCtxGetCurrent(self) -> tuple[int, int]:
        return _OK, _CONTEXT

    def cuCtxGetDevice(self) -> tuple[int, int]:
        return _OK, self.device.ordinal

    def cuPointerGetAttribute(self, attribute: Any, address: int) -> tuple[int, Any]:
        """Every address is device memory of this device (the host memory of FakeCudaTensor poses as it);
        ``host_addresses`` / ``unknown_addresses`` say otherwise for the addresses in them."""
        A = self._real.CUpointer_attribute
        if address in self.unknown_addresses:
            return _INVALID_VALUE, None
        if attribute == A.CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
            M = self._real.CUmemorytype
            return _OK, M.CU_MEMORYTYPE_HOST if address in self.host_addresses else M.CU_MEMORYTYPE_DEVICE
        if attribute == A.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
            return _OK, self.device.ordinal
        return _INVALID_VALUE, None

    # -- modules ------------------------------------------------------------------------------
    def cuModuleLoadData(self, image: bytes) -> tuple[int, Any]:
        try:
            symbols = functions(bytes(image))
        except IntegrityError:
            return _INVALID_IMAGE, None
        self.loaded.append(",".join(sorted(symbols)))
        return _OK, _Module(symbols)

    def cuModuleGetFunction(self, module: _Module, name: bytes) -> tuple[int, Any]:
        found = module.symbols.get(name.decode())
        if found is None:
            return _NOT_FOUND, None
        return _OK, _Function(found.name, found.registers or 0)

    def cuModuleUnload(self, module: _Module) -> tuple[int]:
        return (_OK,)

    def cuFuncGetAttribute(self, attribute: Any, function: _Function) -> tuple[int, int]:
        A = self._real.CUfunction_attribute
        return _OK, function.registers if attribute == A.CU_FUNC_ATTRIBUTE_NUM_REGS else 0

    def cuFuncSetAttribute(self, function: _Function, attribute: Any, value: int) -> tuple[int]:
        return (_OK,)

    # -- global scratch -------------------------------------------------------------------------
    def cuMemAllocAsync(self, nbytes: int, stream: int) -> tuple[int, int]:
        self.scratch.append(("alloc", nbytes, stream))
        return _OK, 0x7F00_0000_0000  # never dereferenced: launches of kernels with scratch are only recorded

    def cuMemFreeAsync(self, address: int, stream: int) -> tuple[int]:
        self.scratch.append(("free", address, stream))
        return (_OK,)

    # -- launches -----------------------------------------------------------------------------
    def cuLaunchKernel(self, f: _Function, gx: int, gy: int, gz: int, bx: int, by: int, bz: int, shared: int,
                       stream: int, params: int, extra: int) -> tuple[int]:
        self.launches.append({"kernel": f.name, "grid": (gx, gy, gz), "block": (bx, by, bz), "stream": stream})
        if f.name == "add":
            _run_add(params, gx)
        return (_OK,)

    def cuLaunchKernelEx(self, config: Any, f: _Function, params: int, extra: int) -> tuple[int]:
        self.launches.append({"kernel": f.name, "grid": (config.gridDimX, config.gridDimY, config.gridDimZ),
                              "stream": config.hStream})
        return (_OK,)


def _run_add(params: int, programs: int, block: int = 1024) -> None:
    """``out[i] = x[i] + y[i]`` for ``i < min(n, programs * block)``, as vector_add.py's kernel."""
    slots = (ctypes.c_void_p * 4).from_address(params)
    x, y, out = (ctypes.c_uint64.from_address(slots[i]).value for i in range(3))
    count = min(ctypes.c_int32.from_address(slots[3]).value, programs * block)
    if count <= 0:
        return
    import torch

    xs, ys, outs = (torch.frombuffer((ctypes.c_float * count).from_address(a), dtype=torch.float32) for a in (x, y, out))
    torch.add(xs, ys, out=outs)


@contextlib.contextmanager
def installed(device: _driver.DeviceInfo = H200) -> Iterator[FakeDriver]:
    """Run the block with :class:`FakeDriver` as tmlr_runtime's driver and fresh caches."""
    real = _driver.api()
    fake = FakeDriver(real, device)
    with _patched(_driver, _api=fake, _initialised=True, _devices={device.ordinal: device}), fresh_caches():
        yield fake


@contextlib.contextmanager
def fresh_caches() -> Iterator[None]:
    """Run the block with empty module and loaded-kernel caches (the process's own come back after),
    so a damaged cubin is read again even where its sha256 is already loaded."""
    with _patched(_modules, _cache={}), _patched(_kernel, _loaded={}):
        yield


@contextlib.contextmanager
def _patched(module: Any, **values: Any) -> Iterator[None]:
    saved = {name: getattr(module, name) for name in values}
    for name, value in values.items():
        setattr(module, name, value)
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(module, name, value)


@functools.lru_cache(maxsize=None)
def fake_cuda_tensor_type(device: int) -> type:
    """A torch.Tensor subclass whose ``get_device()`` says ``device``: host memory posing as a
    CUDA tensor there, so the runtime's tensor checks and :class:`FakeDriver`'s ``add`` both work."""
    import torch

    class FakeCudaTensor(torch.Tensor):
        def get_device(self) -> int:
            return device

    FakeCudaTensor.__name__ = FakeCudaTensor.__qualname__ = f"FakeCudaTensor{device}"
    return FakeCudaTensor
