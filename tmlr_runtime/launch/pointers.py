"""The device address of a pointer argument, with the checks its parameter implies (device, dtype,
alignment): a torch tensor, CuPy array, ``__cuda_array_interface__`` object or DLPack producer, an int
address or None. Nothing here imports torch: types are recognised by attributes.
"""
from __future__ import annotations

import ctypes
import sys
from typing import Any

from .. import driver
from ..abi import DTYPE_NAMES, TYPES, Parameter, pointee
from ..errors import PointerArgumentError, TmlrError, short_repr
from .plan import torch_dtype

_DL_TYPES = {t.dlpack: t.name for t in TYPES.values() if t.dlpack}  # DLPack (type code, bits) -> Triton type
_DL_CUDA = (2, 13)  # kDLCUDA, kDLCUDAManaged
_ACCEPTED = "pass a CUDA torch tensor, a CuPy array, an object with __cuda_array_interface__ or __dlpack__, an int address, or None"


def _fail(param: Parameter, what: str, fix: str) -> PointerArgumentError:
    return PointerArgumentError(f"parameter {param.name!r} ({param.type}): {what}; {fix}", param.name)


def _aligned(param: Parameter, address: int, checks: bool) -> int:
    if checks and param.divisibility == 16 and address % 16:
        raise _fail(param, f"address 0x{address:x} is not 16-byte aligned, but the kernel was built assuming it is (tt.divisibility=16) "
                    "and would compute wrong results", "pass an aligned buffer (e.g. .clone() of the slice) or rebuild without ':16' for this pointer")
    return address


def any_pointer(param: Parameter, value: Any, device: int, checks: bool) -> int:
    """Device address for any accepted pointer argument; raises :class:`PointerArgumentError`,
    also when reading the object's own protocol (``__cuda_array_interface__``, DLPack, ...) fails."""
    try:
        torch = sys.modules.get("torch")
        if value is None:
            return 0
        if torch is not None and isinstance(value, torch.Tensor):
            return tensor_pointer(param, value, device, checks)
        if isinstance(value, int) and not isinstance(value, bool):
            if not 0 <= value < 2**64:
                raise _fail(param, f"address {short_repr(value)} is not a 64-bit unsigned value", "pass a device pointer")
            return _aligned(param, value, checks)
        cai = getattr(value, "__cuda_array_interface__", None)
        if cai is not None:
            return _cai_pointer(param, cai, device, checks)
        if hasattr(value, "__dlpack__") and hasattr(value, "__dlpack_device__"):
            return _dlpack_pointer(param, value, device, checks)
        if hasattr(value, "data_ptr") and hasattr(value, "get_device"):  # a torch-like tensor seen before torch was imported
            return tensor_pointer(param, value, device, checks)
        if hasattr(value, "data_ptr"):  # as Triton's launcher takes any such object (its reinterpret's TensorWrapper)
            return _data_ptr_pointer(param, value, device, checks)
    except TmlrError:
        raise
    except Exception as e:
        raise _fail(param, f"reading {type(value).__name__} as a device buffer raised {type(e).__name__}: {e}", _ACCEPTED) from None
    raise _fail(param, f"got {type(value).__name__}, which is not a device buffer", _ACCEPTED)


def tensor_pointer(param: Parameter, t: Any, device: int, checks: bool) -> int:
    """Address of a torch tensor, checking layout, device, dtype and alignment."""
    torch = sys.modules.get("torch")
    layout = getattr(t, "layout", None)
    if torch is not None and layout is not None and layout is not torch.strided:
        # checked even with checks off: data_ptr() of a sparse tensor raises torch's own RuntimeError
        raise _fail(param, f"got a {layout} tensor, but the kernel reads dense memory through this pointer",
                    "convert it with .to_dense() (a strided tensor) before launching")
    d = t.get_device() if checks else device
    if d != device:
        kind = getattr(getattr(t, "device", None), "type", "cpu")
        where = f"a tensor on cuda:{d}" if d >= 0 else "a CPU tensor" if kind == "cpu" else f"a tensor on {kind}"
        raise _fail(param, f"got {where}, but the launch runs on cuda:{device}",
                    f"move it with .to('cuda:{device}') or make cuda:{d if d >= 0 else device} current before launching")
    want = torch_dtype(param) if checks else None
    if want is not None and t.dtype != want:
        raise _fail(param, f"got a {t.dtype} tensor, the kernel was built for {want}",
                    f"convert it with .to({want}) (or .view({want}) to reinterpret the bits), or rebuild with a matching --signature")
    return _aligned(param, t.data_ptr(), checks)


def _cai_pointer(param: Parameter, cai: Any, device: int, checks: bool) -> int:
    try:
        address = int(cai["data"][0])
    except (KeyError, IndexError, TypeError, ValueError) as e:
        raise _fail(param, f"its __cuda_array_interface__ has no usable 'data' (address, read_only) entry ({type(e).__name__}: {e})",
                    "pass an object whose __cuda_array_interface__ follows the protocol (version 3)") from None
    if not 0 <= address < 2**64:
        raise _fail(param, f"its __cuda_array_interface__ address {short_repr(address)} is not a 64-bit unsigned value", "pass a device buffer")
    if checks:
        want = pointee(param.type)
        if TYPES[want].typestrs and str(cai.get("typestr", ""))[1:] not in TYPES[want].typestrs:
            raise _fail(param, f"got an array of typestr {cai.get('typestr')!r}, the kernel was built for {want}", "convert the array or rebuild with a matching --signature")
        _check_owner(param, address, device, "its __cuda_array_interface__ address")
    return _aligned(param, address, checks)


def _check_owner(param: Parameter, address: int, device: int, what: str) -> None:
    """Raise unless the driver says ``address`` (``what``, for the message; 0 passes) is memory of ``device``."""
    owner = _host_or_device(address, device) if address else device
    if owner is None:  # as Triton's launcher does: memory CUDA does not know is no device buffer
        raise _fail(param, f"{what} 0x{address:x} is not memory the CUDA driver knows "
                    "(pageable host memory such as a CPU tensor or numpy array, or freed memory)",
                    f"move the array to cuda:{device}, or pass the address as an int if you know the device can read it")
    if owner != device:
        where = "host memory" if owner < 0 else f"cuda:{owner}"
        raise _fail(param, f"the array lives in {where}, but the launch runs on cuda:{device}", f"move it to cuda:{device}")


def _data_ptr_pointer(param: Parameter, obj: Any, device: int, checks: bool) -> int:
    """Address of an object with ``data_ptr()`` and perhaps ``dtype`` but no ``get_device()`` (Triton's
    ``TensorWrapper``): its dtype read by name, as Triton's JIT reads it; its device asked of the driver."""
    address = obj.data_ptr()
    if not isinstance(address, int) or isinstance(address, bool) or not 0 <= address < 2**64:
        raise _fail(param, f"its data_ptr() returned {short_repr(address)}, not a 64-bit unsigned int", _ACCEPTED)
    if checks:
        _check_dtype_name(param, obj)
        _check_owner(param, address, device, "its data_ptr()")
    return _aligned(param, address, checks)


def _check_dtype_name(param: Parameter, obj: Any) -> None:
    """Raise unless ``obj.dtype`` (torch's or Triton's, read by its name as Triton's JIT reads it; not checked where it
    has none or the name is no Triton type's) is the pointee's, or shares its torch dtype (i1, u1: bool)."""
    dtype = getattr(obj, "dtype", None)
    word = str(dtype).split(".")[-1]
    got, want = DTYPE_NAMES.get(word) or (word if word in TYPES else None), pointee(param.type)
    if dtype is None or got is None or want is None or got == want or TYPES[got].torch is not None and TYPES[got].torch == TYPES[want].torch:
        return
    named = "" if str(dtype) == got else f" ({got})"
    raise _fail(param, f"got a {type(obj).__name__} of dtype {dtype}{named}, the kernel was built for {want}",
                f"pass {want} data (reinterpret the tensor as {want}), or rebuild with a matching --signature")


def _host_or_device(address: int, device: int) -> int | None:
    """Device ordinal owning ``address`` per the driver, -1 for host memory, None if unknown."""
    drv = driver.api()
    A = drv.CUpointer_attribute
    err, mem_type = drv.cuPointerGetAttribute(A.CU_POINTER_ATTRIBUTE_MEMORY_TYPE, address)
    if int(err) != 0:
        return None  # not known to CUDA: pageable host memory (malloc), or freed
    if int(mem_type) == int(drv.CUmemorytype.CU_MEMORYTYPE_HOST):
        return -1
    err, ordinal = drv.cuPointerGetAttribute(A.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, address)
    return int(ordinal) if int(err) == 0 else None


def _dlpack_pointer(param: Parameter, obj: Any, device: int, checks: bool) -> int:
    dev_type, dev_id = obj.__dlpack_device__()
    if int(dev_type) not in _DL_CUDA:
        raise _fail(param, f"got a DLPack producer on device type {int(dev_type)} (not CUDA)", "move the array to the GPU first")
    if checks and int(dev_id) != device:
        raise _fail(param, f"got an array on cuda:{int(dev_id)}, but the launch runs on cuda:{device}", f"move it to cuda:{device}")
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    capsule = obj.__dlpack__()  # held while its DLManagedTensor is read: freeing it may free the tensor struct
    try:
        managed = get(capsule, b"dltensor")
    except (TypeError, ValueError) as e:  # not a capsule, or one already consumed ("used_dltensor")
        raise _fail(param, f"its __dlpack__() did not return an unused 'dltensor' capsule ({e})",
                    "pass the array itself (not an exported capsule), or a torch tensor / CuPy array") from None
    # DLManagedTensor starts with DLTensor {void* data; DLDevice device (2 x int32); int32 ndim;
    # DLDataType dtype (u8 code, u8 bits, u16 lanes); int64* shape; int64* strides; u64 byte_offset}
    data = ctypes.c_void_p.from_address(managed).value or 0
    got = _DL_TYPES.get((ctypes.c_uint8.from_address(managed + 20).value, ctypes.c_uint8.from_address(managed + 21).value))
    want = pointee(param.type)
    if checks and got is not None and TYPES[want].dlpack is not None and got != want:
        raise _fail(param, f"got a DLPack array of {got}, the kernel was built for {want}", "convert the array or rebuild with a matching --signature")
    return _aligned(param, data + ctypes.c_uint64.from_address(managed + 40).value, checks)
