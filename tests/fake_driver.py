"""The one fake-driver seam of the CPU tests: a stand-in for cuda-python's driver module, so
``Kernel.load`` and launches run on a CPU, and the metadata documents to load with it.

:func:`installed` swaps in a fresh ``tmlr_runtime.driver.Process`` (the one object that holds the
runtime's process-wide state) whose bindings are this fake, with one device described by a
:class:`tmlr_runtime.driver.DeviceInfo` (see :data:`H200`) and empty module and load caches, and puts
the process's own back afterwards. Enums and structs (``CUresult``, ``CUlaunchConfig``, …) are
the real bindings' (they import without libcuda); the calls are fakes that behave like the driver
where tmlr depends on it:

- ``cuModuleLoadData`` reads the image with ``tmlr_runtime.artifact.elf`` (not an ELF cubin:
  ``CUDA_ERROR_INVALID_IMAGE``), or PTX text ending in one NUL (its ``.entry`` names; no NUL at the end:
  ``CUDA_ERROR_INVALID_PTX``) and records ``ptx:<entries>`` in ``loaded``; ``cuModuleGetFunction`` looks
  the entry up in its symbol table (missing: ``CUDA_ERROR_NOT_FOUND``);
- ``cuPointerGetAttribute`` calls every address device memory of its device, except those put in
  ``host_addresses`` (pinned host memory), ``unknown_addresses`` (memory CUDA does not know) or
  ``other_devices`` (address -> the ordinal of the device whose memory it is);
- ``cuMemAllocAsync`` / ``cuMemFreeAsync`` (global scratch) are recorded in ``scratch``;
- ``cuTensorMapEncodeTiled`` records its arguments (as plain ints and lists) in ``tensor_maps`` and
  returns a map whose 16 words are the address, the rank, the data type and 13 words counting up;
- ``cuGetProcAddress`` gives the compiled launch path (``tmlr_runtime._fastlaunch``) C callbacks
  into these same fakes (``cuCtxGetCurrent``, the launches, global scratch); one that raises returns
  ``CUDA_ERROR_UNKNOWN`` and leaves the exception in ``raised``;
- ``cuLaunchKernel`` / ``cuLaunchKernelEx`` record each launch (with the bytes of each parameter
  when ``param_sizes`` is set; they return ``result`` or raise ``error`` when those are set), and
  for the ``add`` kernel of ``examples/kernels/vector_add.py`` (BLOCK 1024) also *run* it on host
  memory, so a test can pass CPU tensors that pose as CUDA tensors (:class:`FakeCudaTensor`) and
  check ``out == x + y``.

:func:`fake_launcher` loads a metadata document (:func:`metadata_doc`) as a :class:`Kernel` on a
fake driver of its own, which the kernel keeps using after it returns.
"""
from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import functools
import hashlib
import json
import os
import re
import struct
import sys
import tempfile
from types import SimpleNamespace
from typing import Any, Callable, Iterator

from tmlr_runtime import records
import tmlr_runtime as tr
from tmlr_runtime import driver
from tmlr_runtime.artifact import elf
from tmlr_runtime.errors import IntegrityError
from tmlr_runtime.launch.plan import Layout

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

H200 = driver.DeviceInfo(
    ordinal=0, name="NVIDIA H200 (fake)", major=9, minor=0, max_threads_per_block=1024, max_shared_optin=232448,
    max_grid=(2**31 - 1, 65535, 65535), cluster_launch=True, cooperative_launch=True,
)
A100 = records.replace(H200, name="NVIDIA A100 (fake)", major=8, minor=0, max_shared_optin=166912,
                           cluster_launch=False)

_OK, _INVALID_VALUE, _INVALID_IMAGE, _INVALID_PTX, _NOT_FOUND = 0, 1, 200, 218, 500
_CONTEXT = 0xC0C0


@dataclasses.dataclass
class _Module:
    symbols: dict[str, Any]


@dataclasses.dataclass
class _Function:
    name: str
    registers: int

    def __int__(self) -> int:  # the handle the compiled path passes back to FakeDriver's callbacks
        return id(self)


# The C prototypes of the driver entry points the compiled path calls (as _fastlaunch.c declares them)
class _Attribute(ctypes.Structure):
    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4), ("value", ctypes.c_uint * 16)]


class _LaunchConfig(ctypes.Structure):
    _fields_ = [*((f, ctypes.c_uint) for f in ("gridDimX", "gridDimY", "gridDimZ", "blockDimX", "blockDimY", "blockDimZ",
                                              "sharedMemBytes")),
                ("hStream", ctypes.c_void_p), ("attrs", ctypes.POINTER(_Attribute)), ("numAttrs", ctypes.c_uint)]


_U, _P = ctypes.c_uint, ctypes.c_void_p
_PROTOTYPES = {
    "cuCtxGetCurrent": ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_uint64)),
    "cuLaunchKernel": ctypes.CFUNCTYPE(ctypes.c_int, _P, _U, _U, _U, _U, _U, _U, _U, _P, _P, _P),
    "cuLaunchKernelEx": ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(_LaunchConfig), _P, _P, _P),
    "cuMemAllocAsync": ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t, _P),
    "cuMemFreeAsync": ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_uint64, _P),
}
_UNKNOWN = 999  # CUDA_ERROR_UNKNOWN


class FakeDriver:
    """The subset of ``cuda.bindings.driver`` that tmlr_runtime calls, for one device."""

    def __init__(self, real: Any, device: driver.DeviceInfo) -> None:
        self._real = real
        self.device = device
        self.launches: list[dict[str, Any]] = []
        self.loaded: list[str] = []
        self.scratch: list[tuple[str, int, int]] = []  # ("alloc", bytes, stream) and ("free", address, stream)
        self.tensor_maps: list[dict[str, Any]] = []  # the arguments of each cuTensorMapEncodeTiled
        self.tensor_map_error = _OK  # the CUresult cuTensorMapEncodeTiled returns when not _OK
        self.host_addresses: set[int] = set()
        self.unknown_addresses: set[int] = set()
        self.other_devices: dict[int, int] = {}  # address -> ordinal: memory of another device
        self.context = _CONTEXT  # the current context's handle: a test may make another current
        self.param_sizes: tuple[int, ...] | None = None  # set: each launch records its parameters' bytes
        self.result = _OK  # the CUresult each launch returns
        self.error: BaseException | None = None  # raised by each launch instead, after recording it
        self.allocations: dict[int, Any] = {}  # cuMemAlloc'd host buffers by address
        self.memory_ops: list[tuple[Any, ...]] = []  # ("alloc"|"free"|"memset"|"copy", ...)
        self.unbacked: set[int] = set()  # allocations too large to back: memsets there are only recorded
        self.functions: dict[int, _Function] = {}  # by handle, for the compiled path's callbacks
        self.raised: list[BaseException] = []  # what a fake called through a C callback raised
        self.c_calls: dict[str, int] = {}  # how often each C callback was called
        self._callbacks: dict[str, Any] = {}  # kept alive while this driver lives

    def __getattr__(self, name: str) -> Any:  # enums and structs come from the real bindings
        return getattr(self._real, name)

    # -- context and device -------------------------------------------------------------------
    def cuInit(self, flags: int) -> tuple[int]:
        return (_OK,)

    def cuCtxGetCurrent(self) -> tuple[int, int]:
        return _OK, self.context

    def cuCtxGetDevice(self) -> tuple[int, int]:
        return _OK, self.device.ordinal

    def cuPointerGetAttribute(self, attribute: Any, address: int) -> tuple[int, Any]:
        """Every address is device memory of this device (the host memory of FakeCudaTensor poses as it);
        ``host_addresses`` / ``unknown_addresses`` / ``other_devices`` say otherwise for the addresses in them."""
        A = self._real.CUpointer_attribute
        if address in self.unknown_addresses:
            return _INVALID_VALUE, None
        if attribute == A.CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
            M = self._real.CUmemorytype
            return _OK, M.CU_MEMORYTYPE_HOST if address in self.host_addresses else M.CU_MEMORYTYPE_DEVICE
        if attribute == A.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
            return _OK, self.other_devices.get(address, self.device.ordinal)
        return _INVALID_VALUE, None

    # -- modules ------------------------------------------------------------------------------
    def cuModuleLoadData(self, image: bytes) -> tuple[int, Any]:
        image = bytes(image)
        if image[:4] != b"\x7fELF" and b".entry" in image:  # PTX, which the driver reads up to its NUL
            if not image.endswith(b"\0") or b"\0" in image[:-1]:
                return _INVALID_PTX, None
            names = re.findall(rb"\.entry\s+([A-Za-z_][A-Za-z0-9_]*)", image)
            self.loaded.append("ptx:" + ",".join(sorted(n.decode() for n in names)))
            return _OK, _Module({n.decode(): SimpleNamespace(name=n.decode(), registers=0) for n in names})
        try:
            symbols = elf.functions(image)
        except IntegrityError:
            return _INVALID_IMAGE, None
        self.loaded.append(",".join(sorted(symbols)))
        return _OK, _Module(symbols)

    def cuModuleGetFunction(self, module: _Module, name: bytes) -> tuple[int, Any]:
        found = module.symbols.get(name.decode())
        if found is None:
            return _NOT_FOUND, None
        f = _Function(found.name, found.registers or 0)
        self.functions[int(f)] = f
        return _OK, f

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

    def cuTensorMapEncodeTiled(self, data_type: Any, rank: int, address: int, dims: list, strides: list, box: list,
                               element_strides: list, interleave: Any, swizzle: Any, l2: Any, fill: Any) -> tuple[int, Any]:
        self.tensor_maps.append({
            "data_type": int(data_type), "rank": rank, "address": address, "dims": [int(x) for x in dims],
            "strides": [int(x) for x in strides], "box": [int(x) for x in box], "element_strides": [int(x) for x in element_strides],
            "interleave": int(interleave), "swizzle": int(swizzle), "l2": int(l2), "fill": int(fill)})
        if self.tensor_map_error != _OK:
            return (self.tensor_map_error, None)
        return (_OK, SimpleNamespace(opaque=[address, rank, int(data_type), *range(len(self.tensor_maps), len(self.tensor_maps) + 13)]))

    # -- the compiled path: C callbacks into the fakes above and below ------------------------
    def cuGetProcAddress(self, symbol: bytes, version: int, flags: int) -> tuple[int, int, int]:
        name = symbol.decode()
        if name not in _PROTOTYPES:
            return _OK, 0, 1  # CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND
        if name not in self._callbacks:
            self._callbacks[name] = _PROTOTYPES[name](functools.partial(self._from_c, getattr(self, "_c_" + name)))
        return _OK, ctypes.cast(self._callbacks[name], ctypes.c_void_p).value or 0, 0

    def _from_c(self, fake: Callable[..., int], *args: Any) -> int:
        name = fake.__name__.removeprefix("_c_")
        self.c_calls[name] = self.c_calls.get(name, 0) + 1
        try:
            return fake(*args)
        except BaseException as e:  # a C caller cannot take an exception: keep it for the test
            self.raised.append(e)
            return _UNKNOWN

    def _c_cuCtxGetCurrent(self, out: Any) -> int:
        out[0] = self.context
        return _OK

    def _c_cuLaunchKernel(self, f: int, gx: int, gy: int, gz: int, bx: int, by: int, bz: int, shared: int, stream: int | None,
                          params: int, extra: int | None) -> int:
        return int(self.cuLaunchKernel(self.functions[f], gx, gy, gz, bx, by, bz, shared, stream or 0, params, extra or 0)[0])

    def _c_cuLaunchKernelEx(self, config: Any, f: int, params: int, extra: int | None) -> int:
        c = config[0]
        view = SimpleNamespace(**{name: getattr(c, name) for name, _ in _LaunchConfig._fields_ if name not in ("attrs", "hStream")},
                               hStream=c.hStream or 0, attrs=[(c.attrs[i].id, tuple(c.attrs[i].value)) for i in range(c.numAttrs)])
        return int(self.cuLaunchKernelEx(view, self.functions[f], params, extra or 0)[0])

    def _c_cuMemAllocAsync(self, out: Any, nbytes: int, stream: int | None) -> int:
        err, address = self.cuMemAllocAsync(nbytes, stream or 0)
        out[0] = address
        return int(err)

    def _c_cuMemFreeAsync(self, address: int, stream: int | None) -> int:
        return int(self.cuMemFreeAsync(address, stream or 0)[0])

    # -- launches -----------------------------------------------------------------------------
    def _record(self, launch: dict[str, Any], params: int) -> tuple[int]:
        self.clock += self.launch_time(launch)
        if self.param_sizes is not None:
            slots = (ctypes.c_void_p * max(len(self.param_sizes), 1)).from_address(params)
            launch["params"] = [ctypes.string_at(slots[i], size) for i, size in enumerate(self.param_sizes)]
        self.launches.append(launch)
        if self.error is not None:
            raise self.error
        return (self.result,)

    def cuLaunchKernel(self, f: _Function, gx: int, gy: int, gz: int, bx: int, by: int, bz: int, shared: int,
                       stream: int, params: int, extra: int) -> tuple[int]:
        if f.name == "add":
            _run_add(params, gx)
        return self._record({"kernel": f.name, "grid": (gx, gy, gz), "block": (bx, by, bz), "shared": shared, "stream": stream}, params)

    def cuLaunchKernelEx(self, config: Any, f: _Function, params: int, extra: int) -> tuple[int]:
        return self._record({"kernel": f.name, "grid": (config.gridDimX, config.gridDimY, config.gridDimZ),
                             "stream": int(config.hStream), "config": config}, params)

    # -- benchmarking (tuning a family): events read a clock that each launch advances ----------------
    # by launch_time(launch) ms; memsets and copies act on host memory (FakeCudaTensor poses as device
    # memory) except in allocations too large to back, which are only recorded in memory_ops
    capturing = False  # cuStreamIsCapturing says ACTIVE when True
    clock = 0.0
    launch_time: Callable[[dict[str, Any]], float] = staticmethod(lambda launch: 0.001)  # type: ignore[assignment]
    _BACKED = 64 << 20

    def cuStreamIsCapturing(self, stream: int) -> tuple[int, Any]:
        S = self._real.CUstreamCaptureStatus
        return _OK, S.CU_STREAM_CAPTURE_STATUS_ACTIVE if self.capturing else S.CU_STREAM_CAPTURE_STATUS_NONE

    def cuStreamSynchronize(self, stream: int) -> tuple[int]:
        return (_OK,)

    def cuEventCreate(self, flags: int) -> tuple[int, Any]:
        return _OK, SimpleNamespace(at=None)

    def cuEventRecord(self, event: Any, stream: int) -> tuple[int]:
        event.at = self.clock
        return (_OK,)

    def cuEventSynchronize(self, event: Any) -> tuple[int]:
        return (_OK,)

    def cuEventElapsedTime(self, start: Any, end: Any) -> tuple[int, float]:
        return _OK, end.at - start.at

    def cuEventDestroy(self, event: Any) -> tuple[int]:
        return (_OK,)

    def cuMemAlloc(self, nbytes: int) -> tuple[int, int]:
        if nbytes > self._BACKED:
            address = 0x7E00_0000_0000 + 0x1_0000_0000 * len(self.unbacked)
            self.unbacked.add(address)
        else:
            buf = ctypes.create_string_buffer(nbytes)
            address = ctypes.addressof(buf)
            self.allocations[address] = buf
        self.memory_ops.append(("alloc", address, nbytes))
        return _OK, address

    def cuMemFree(self, address: int) -> tuple[int]:
        self.allocations.pop(int(address), None)
        self.unbacked.discard(int(address))
        self.memory_ops.append(("free", int(address)))
        return (_OK,)

    def cuMemsetD8Async(self, address: int, value: int, count: int, stream: int) -> tuple[int]:
        self.memory_ops.append(("memset", int(address), count))
        if int(address) not in self.unbacked:
            ctypes.memset(int(address), value, count)
        return (_OK,)

    def cuMemcpyDtoDAsync(self, dst: int, src: int, count: int, stream: int) -> tuple[int]:
        self.memory_ops.append(("copy", int(dst), int(src), count))
        ctypes.memmove(int(dst), int(src), count)
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


def needs_cuda_python() -> None:
    """Skip the test where cuda-python is missing: the fake driver takes its enums from cuda-python's bindings (a build
    test's venv of another Triton may have none)."""
    try:
        driver.api()
    except tr.CudaUnavailableError as e:
        import pytest  # the tools that use the fake driver run without it

        pytest.skip(f"loading on the fake driver needs cuda-python: {e}")


@contextlib.contextmanager
def installed(device: driver.DeviceInfo = H200) -> Iterator[FakeDriver]:
    """Run the block with :class:`FakeDriver` as tmlr_runtime's driver and fresh caches."""
    fake = FakeDriver(driver.api(), device)
    with _patched(driver, PROCESS=driver.Process(api=fake, initialised=True, devices={device.ordinal: device})), \
            _torch_stream_on_the_fake_device():
        yield fake


def _torch_stream_on_the_fake_device() -> contextlib.AbstractContextManager[None]:
    """torch's current stream is 0 while the fake device stands in: a CUDA build of torch on a machine whose driver
    cannot serve it (or has no GPU) raises from its current-stream function, which a launch given no stream calls;
    a CPU build has no such function and the runtime already takes 0."""
    torch_c = getattr(sys.modules.get("torch"), "_C", None)
    current = getattr(torch_c, "_cuda_getCurrentRawStream", None)
    try:  # asked, not torch.cuda.is_available(), which a build's device profile may be answering for
        current is None or current(0)
    except RuntimeError:
        return _patched(torch_c, _cuda_getCurrentRawStream=(0).__mul__)
    return contextlib.nullcontext()


@contextlib.contextmanager
def fresh_caches() -> Iterator[None]:
    """Run the block with empty module and loaded-kernel caches (the process's own come back after),
    so a damaged cubin is read again even where its sha256 is already loaded."""
    process = driver.PROCESS
    with _patched(driver, PROCESS=driver.Process(api=process.api, initialised=process.initialised, devices=process.devices)):
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


# -- metadata documents, and kernels loaded from them ------------------------------------------------
FAKE_CUBIN = b"\x7fELF fake cubin for tests"


def any_signature(cubin: bytes, entry: str) -> bytes:
    """``cubin`` to stand for kernel ``entry`` of any signature in a test: its parameter records (section
    .nv.info.<entry>) renamed away, so that the runtime has nothing to hold a made-up signature against."""
    return cubin.replace(f".nv.info.{entry}\0".encode(), f".nv.info.{entry[:-1]}_\0".encode())


def nop_cubin(arch: str = "sm_90a") -> bytes:
    """The nop example's cubin for a kernel of any signature (:func:`any_signature`) and target ``arch``: the sm_90a
    one, or the sm_80 one for a target without "a", its ELF header made to name ``arch`` (ELF ABI 7: the SM in e_flags'
    bits 0-7 and 16-23, 0x800 for "a", 0x500 for 64-bit addresses and unified textures)."""
    specific = arch.endswith("a")
    with open(os.path.join(ROOT, "examples", "artifacts", "nop", f"nop.{'sm_90a' if specific else 'sm_80'}.cubin"), "rb") as f:
        data = bytearray(any_signature(f.read(), "nop"))
    sm = int(arch[3:].rstrip("a"))
    data[0x30:0x34] = (sm | 0x500 | 0x800 * specific | sm << 16).to_bytes(4, "little")
    return bytes(data)


def section_past_the_end(cubin: bytes, name: str) -> bytes:
    """``cubin`` with the size its section table records for section ``name`` grown to the file's size, so that
    the section reaches past the end of the file."""
    parsed = elf.parse(cubin)
    index = parsed.sections.index(elf.section(parsed, name))
    (shoff,) = struct.unpack_from("<Q", cubin, 0x28)
    out = bytearray(cubin)
    struct.pack_into("<Q", out, shoff + 64 * index + 32, len(cubin))  # its sh_size
    return bytes(out)


def param(name: str, type_: str, div: int = 1) -> dict[str, Any]:
    return {"name": name, "kind": "runtime", "type": type_, "divisibility": div}


def constexpr(name: str, value: Any) -> dict[str, Any]:
    return {"name": name, "kind": "constexpr", "value": value}


def equal_to_1(name: str, type_: str = "i32") -> dict[str, Any]:
    return {"name": name, "kind": "equal_to_1", "type": type_}


def variant_doc(arch: str = "sm_90a", cubin: bytes = FAKE_CUBIN, name: str = "k", **launch: Any) -> dict[str, Any]:
    capability = int(arch[3:].rstrip("a"))
    scratch = launch.pop("scratch", (0, 1))
    doc = {
        "target": {"backend": "cuda", "capability": capability, "arch": arch, "warp_size": 32},
        "entry": name,
        "cubin": {"file": f"{name}.{arch}.cubin", "sha256": hashlib.sha256(cubin).hexdigest(), "size": len(cubin)},
        "launch": {"num_warps": 4, "num_ctas": 1, "cluster_dims": [1, 1, 1], "shared": 0, "tmem_size": 0,
                   "launch_cooperative_grid": False, "launch_pdl": False},
        "scratch": {"global_scratch_size": scratch[0], "global_scratch_align": scratch[1], "hidden_params": ["global_scratch"]},
        "provenance": {"triton_version": "3.3.1", "ptxas_version": "12.4.99", "source_stage": "python",
                       "source_sha256": "0" * 64, "options": {}},
    }
    doc["launch"].update(launch)
    return doc


def metadata_doc(signature: list[dict[str, Any]], name: str = "k", archs: tuple[str, ...] = ("sm_90a",), **launch: Any) -> dict[str, Any]:
    return {"schema_version": 1, "name": name, "signature": signature,
            "variants": [variant_doc(a, name=name, **dict(launch)) for a in archs]}


def write_artifact(directory: str, doc: dict[str, Any], cubin: bytes | dict[str, bytes] = FAKE_CUBIN) -> str:
    """``doc`` and its cubins (``cubin``: the bytes of each, or by file name) in ``directory``."""
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "metadata.json"), "w") as f:
        json.dump(doc, f)
    for v in doc["variants"]:
        with open(os.path.join(directory, v["cubin"]["file"]), "wb") as f:
            f.write(cubin[v["cubin"]["file"]] if isinstance(cubin, dict) else cubin)
    return directory


Launch = Callable[[Any, tuple, dict, Any], None]


def fake_launcher(doc: dict[str, Any], checks: bool = True, device: int = 0,
                  max_grid: tuple[int, int, int] = H200.max_grid) -> tuple[Launch, FakeDriver]:
    """``(launch, fake)``: ``launch(grid, args, kwargs, stream)`` calls a :class:`Kernel` of ``doc``
    loaded on a fake device of ordinal ``device`` (that of the first variant's capability), whose
    driver ``fake`` records each launch with its parameters' bytes. Every variant's cubin is the nop
    example's (the fake driver needs a real ELF with the entry symbol: :func:`nop_cubin`), the rest of ``doc`` is kept."""
    doc, cubins = json.loads(json.dumps(doc)), {}
    for v in doc["variants"]:
        cubin = cubins[v["cubin"]["file"]] = nop_cubin(v["target"]["arch"])
        v["entry"] = "nop"
        v["cubin"].update(sha256=hashlib.sha256(cubin).hexdigest(), size=len(cubin))
    major, minor = divmod(int(doc["variants"][0]["target"]["capability"]), 10)
    dev = records.replace(H200, ordinal=device, major=major, minor=minor, max_grid=max_grid)
    with tempfile.TemporaryDirectory() as d, installed(dev) as fake:
        kernel = tr.Kernel.load(write_artifact(d, doc, cubins), checks=checks)
        fake.param_sizes = Layout.build(kernel.metadata.runtime_params, kernel.variant.hidden_params).sizes

    def launch(grid: Any, args: tuple[Any, ...], kwargs: dict[str, Any], stream: Any) -> None:
        kernel(grid, *args, stream=stream, **kwargs)

    return launch, fake
