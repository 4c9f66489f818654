"""What a launch argument becomes for the cubin: the one conversion routine, :func:`convert`, driven
by a per-argument code fixed at load (:func:`code`), and the typed errors of the values it refuses.

Pointers: a torch tensor, CuPy array, ``__cuda_array_interface__`` object or DLPack producer, an
int address or None, with the checks the signature implies (device, dtype, alignment); the
launcher reads torch tensors on the launch device itself and sends everything else, and every
failed check, here. Scalars: the packing ``struct`` converts and range-checks them, and
:func:`diagnose_scalar` says why it refused one; bf16, i1, TMA descriptors and (through
:mod:`._tensordesc`) host tensor descriptors are converted here,
constexprs, ints specialized to 1 and ints assumed divisible by 16 checked. The stream: an int
handle, an object with ``__cuda_stream__`` (the CUDA stream protocol), torch's ``.cuda_stream`` or
CuPy's ``.ptr``; given none, torch's current stream when torch is already imported, else the legacy
default stream (0). Nothing here imports torch or numpy: types are recognised by attributes.
"""
from __future__ import annotations

import ctypes
import math
import operator
import struct
import sys
from typing import Any, Callable
from .. import driver
from . import tensordesc
from ..errors import (ArgumentError, ConstexprMismatchError, PointerArgumentError, ScalarArgumentError, StreamError, TmlrError,
                      short_repr)
from ..abi import TYPES, Parameter, pointee

PTR, DIV16, BOOL, BF16, TMA, CONSTEXPR, ONE, TENSORDESC = range(8)  # per-argument codes
_DL_TYPES = {t.dlpack: t.name for t in TYPES.values() if t.dlpack}  # DLPack (type code, bits) -> Triton type
_DL_CUDA = (2, 13)  # kDLCUDA, kDLCUDAManaged
_ACCEPTED = "pass a CUDA torch tensor, a CuPy array, an object with __cuda_array_interface__ or __dlpack__, an int address, or None"
_TYPE_CODES = {"i1": BOOL, "u1": BOOL, "bf16": BF16, "nvTmaDesc": TMA, "tensordesc": TENSORDESC}


def code(p: Parameter, checks: bool) -> int | None:
    """The per-argument code of ``p``; None when its value goes to the struct as it is."""
    if p.kind != "runtime":
        return (CONSTEXPR if p.kind == "constexpr" else ONE) if checks else None
    if p.type[0] == "*":  # type: ignore[index]
        return PTR
    c = _TYPE_CODES.get(p.type)  # type: ignore[arg-type]
    if c is None and checks and p.divisibility == 16 and TYPES[p.type].range is not None:  # type: ignore[index]
        return DIV16
    return c


def _equals(value: Any, expected: Any) -> bool:
    """``value == expected`` as a plain bool; False when the comparison raises or gives no truth
    value (a numpy array compares element-wise)."""
    try:
        return bool(value == expected)
    except Exception:
        return False


def same_constexpr(value: Any, expected: Any) -> bool:
    """Equal as constexpr values: 1 and 1.0 are, 1 and True are not."""
    return _equals(value, expected) and isinstance(value, bool) == isinstance(expected, bool)


def check_constexpr(p: Parameter, value: Any) -> None:
    if not same_constexpr(value, p.value):
        raise ConstexprMismatchError(f"constexpr {p.name!r} was compiled as {p.value!r}, got {short_repr(value)}; pass {p.value!r} "
                                     f"(or omit it), or rebuild with --constexpr {p.name}={short_repr(value)}", p.name)


def convert(code: int, p: Parameter, value: Any, device: int, checks: bool) -> Any:
    """What parameter ``p`` (of per-argument ``code``) passes to the cubin for ``value``, or its
    typed error; constexprs and ints specialized to 1 are only checked."""
    if code == PTR:
        return any_pointer(p, value, device, checks)
    if code == TMA:
        return tma_bytes(p, value)
    if code == TENSORDESC:  # a tuple: the values of the several kernel parameters it becomes
        return tensordesc.descriptor_args(p, value, device, checks)
    if code == BF16:
        try:
            return bf16_bits(value)
        except Exception as e:
            raise diagnose_scalar(p, value) or ScalarArgumentError(f"parameter {p.name!r} (bf16): {e}", p.name) from None
    if code == CONSTEXPR:
        check_constexpr(p, value)
    elif code == ONE and not (_equals(value, 1) and not isinstance(value, float)):
        raise ScalarArgumentError(f"parameter {p.name!r} ({p.type}) was specialized to 1 at build time (removed from the cubin), "
                                  f"got {short_repr(value)}; pass 1, or rebuild without ':1' for it in --signature", p.name)
    elif code == BOOL:
        if value is True or value is False or (not isinstance(value, float) and (_equals(value, 0) or _equals(value, 1))):
            return 1 if _equals(value, 1) else 0
        try:
            if not checks:
                return 1 if value else 0
        except Exception:  # no truth value (a numpy array)
            pass
        raise ScalarArgumentError(f"parameter {p.name!r} (i1) needs True/False or 0/1, got {short_repr(value)}; pass a bool", p.name)
    elif code == DIV16:
        err = diagnose_scalar(p, value)
        if err is not None:
            raise err
        if operator.index(value) % 16:
            raise ScalarArgumentError(f"parameter {p.name!r} ({p.type}) = {operator.index(value)} is not divisible by 16, but the kernel "
                                      "was built assuming it is (':16' in --signature) and would compute wrong results; pad the size "
                                      "to a multiple of 16 or rebuild without ':16' for it", p.name)
    return value


def torch_dtype(param: Parameter) -> Any:
    """The torch dtype a tensor for ``param`` must have; None when torch is not imported or the
    pointee has no torch equivalent (then dtype is not checked)."""
    name = TYPES[pointee(param.type)].torch
    return getattr(sys.modules.get("torch"), name, None) if name else None


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
        if hasattr(value, "data_ptr") and hasattr(value, "device"):  # a torch-like tensor seen before torch was imported
            return tensor_pointer(param, value, device, checks)
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
        owner = _host_or_device(address, device) if address else device
        if owner is None:  # as Triton's launcher does: memory CUDA does not know is no device buffer
            raise _fail(param, f"its __cuda_array_interface__ address 0x{address:x} is not memory the CUDA driver knows "
                        "(pageable host memory such as a CPU tensor or numpy array, or freed memory)",
                        f"move the array to cuda:{device}, or pass the address as an int if you know the device can read it")
        if owner != device:
            where = "host memory" if owner < 0 else f"cuda:{owner}"
            raise _fail(param, f"the array lives in {where}, but the launch runs on cuda:{device}", f"move it to cuda:{device}")
    return _aligned(param, address, checks)


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


def bf16_bits(x: float) -> int:
    """bfloat16 bits of ``x``, rounded to nearest even like torch's conversion."""
    f = float(x)
    if math.isnan(f):
        return 0x7FC0
    try:
        (bits,) = struct.unpack("<I", struct.pack("<f", f))
    except OverflowError:
        return 0x7F80 if f > 0 else 0xFF80
    bits += 0x7FFF + ((bits >> 16) & 1)
    return (bits >> 16) & 0xFFFF


def diagnose_scalar(param: Parameter, value: object) -> ScalarArgumentError | None:
    """Why ``value`` cannot be packed as ``param``'s scalar type, or None if it can."""
    typ, name = param.type or "", param.name
    code, bounds = TYPES[typ].code, TYPES[typ].range
    if bounds is not None:
        try:
            v = None if isinstance(value, float) else operator.index(value)  # type: ignore[arg-type]
        except Exception:  # no __index__, or one that fails (a numpy array, a tensor of several elements)
            v = None
        if v is None:
            fix = "pass int(value) if the truncation is intended" if isinstance(value, float) else "pass an int"
            return ScalarArgumentError(f"parameter {name!r} ({typ}) needs an integer, got {type(value).__name__} {short_repr(value)}; {fix}", name)
        if not bounds[0] <= v <= bounds[1]:
            return ScalarArgumentError(f"parameter {name!r} ({typ}) must be in [{bounds[0]}, {bounds[1]}], got {short_repr(v)}; the kernel "
                                       f"was built for {typ} - rebuild it with a wider type in --signature if such values are expected", name)
        return None
    try:
        f = float(value)  # type: ignore[arg-type]
    except OverflowError:  # an int beyond even fp64
        return ScalarArgumentError(f"parameter {name!r} ({typ}) overflows: {short_repr(value)} is beyond every float type; scale the value", name)
    except Exception:
        return ScalarArgumentError(f"parameter {name!r} ({typ}) needs a float, got {type(value).__name__} {short_repr(value)}; pass a Python float", name)
    if typ in ("fp16", "fp32"):
        try:
            struct.pack("<" + code, f)
        except OverflowError:  # finite, but beyond the type
            return ScalarArgumentError(f"parameter {name!r} ({typ}) overflows: |{f}| > {'65504' if typ == 'fp16' else '3.4e38'}; rebuild "
                                       "with a wider float type in --signature or scale the value", name)
    return None


def tma_bytes(p: Parameter, value: Any) -> bytes:
    """The 128 bytes of a ``CUtensorMap`` for an ``nvTmaDesc`` parameter, given as bytes-like, a
    cuda-python CUtensorMap or a :class:`TensorMap`."""
    fix = "build one with tmlr_runtime.make_tensor_map(tensor, block_shape)"
    try:
        data = getattr(value, "tensor_map_bytes", None)
        if data is None and getattr(value, "opaque", None) is not None:
            data = tensordesc.tensor_map_bytes(value)
        elif data is None and isinstance(value, (bytes, bytearray, memoryview)):
            data = value
        elif data is None:
            raise ArgumentError(f"parameter {p.name!r} (nvTmaDesc) needs a 128-byte CUtensorMap, got {type(value).__name__}; {fix}", p.name)
        data = bytes(data)
    except TmlrError:
        raise
    except Exception as e:
        raise ArgumentError(f"parameter {p.name!r} (nvTmaDesc): reading {type(value).__name__} as a CUtensorMap raised "
                            f"{type(e).__name__}: {e}; {fix}", p.name) from None
    if len(data) != 128:
        raise ArgumentError(f"parameter {p.name!r} (nvTmaDesc) needs exactly 128 bytes, got {len(data)}; {fix}", p.name)
    return data


def stream_getter() -> Callable[[int], int]:
    """What a launch given no stream calls with its device, chosen at load: torch's current-stream
    function (a C call; ``(0).__mul__``, 0 for every device, where torch has no CUDA) when torch is
    imported, else :func:`default_stream`, which looks for torch again at each launch."""
    torch = sys.modules.get("torch")
    if torch is None:
        return default_stream
    return getattr(getattr(torch, "_C", None), "_cuda_getCurrentRawStream", None) or (0).__mul__


def default_stream(device: int) -> int:
    """torch's current stream on ``device`` when torch is imported, else 0 (the legacy default stream)."""
    get = stream_getter()
    return 0 if get is default_stream else get(device)


def _checked(handle: int, source: str) -> int:
    if handle < 0 or handle >= 2**64:
        raise StreamError(f"{source} {short_repr(handle)} is not a valid CUstream value; pass a stream object or its handle")
    return handle


def stream_handle(stream: Any) -> int:
    """The raw ``CUstream`` handle of an explicit stream argument."""
    if isinstance(stream, int) and not isinstance(stream, bool):
        return _checked(stream, "stream handle")
    try:
        proto = getattr(stream, "__cuda_stream__", None)
        if proto is not None:
            _version, handle = proto() if callable(proto) else proto
            return _checked(int(handle), f"{type(stream).__name__}.__cuda_stream__ handle")
    except StreamError:
        raise
    except Exception as e:
        raise StreamError(f"{type(stream).__name__}.__cuda_stream__ did not give (version, handle) ({type(e).__name__}: {e}); "
                          "pass the stream's int handle instead") from None
    for attr in ("cuda_stream", "ptr", "handle"):
        try:
            handle = getattr(stream, attr, None)
        except Exception:  # a property that fails is not a handle
            continue
        if isinstance(handle, int) and not isinstance(handle, bool):
            return _checked(handle, f"{type(stream).__name__}.{attr}")
    if type(stream).__name__ == "CUstream":  # a cuda-python handle object
        try:
            return _checked(int(stream), "CUstream")
        except (TypeError, ValueError) as e:
            raise StreamError(f"cannot read the handle of this CUstream ({e}); pass the stream's int handle instead") from None
    raise StreamError(f"cannot use {type(stream).__name__} as a stream; pass an int CUstream handle, a torch.cuda.Stream, "
                      "a CuPy stream, an object with __cuda_stream__, or None for the current stream")
