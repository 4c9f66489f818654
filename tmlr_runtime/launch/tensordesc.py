"""Host tensor descriptors without Triton: ``tensordesc`` arguments, and ``nvTmaDesc`` TMA descriptors (:func:`make_tensor_map`).

A ``tensordesc`` argument (Triton's ``TensorDescriptor`` or :class:`TensorDescriptor`) becomes the parameters its
artifact's ``descriptor.fields`` lists (which fields is the build's business); a ``tensormap`` field is encoded per
call as Triton 3.9's ``fillTMADescriptorTiled`` does. :func:`make_tensor_map` reproduces Triton 3.3's
``create_{1,2}d_tma_descriptor`` encoding exactly (unsigned types by size, dense row-major, swizzle from the inner
block width), on which its compiler relies."""
from __future__ import annotations

import itertools
import operator
import struct
from typing import Any, Sequence
from .pointers import any_pointer
from .. import driver
from ..errors import ArgumentError, DescriptorArgumentError, TmlrError, short_repr
from ..abi import TYPES, Descriptor, Parameter, TensorMapMeta
from ..records import Record

_TF32 = 11  # CU_TENSOR_MAP_DATA_TYPE_TFLOAT32: Triton's launcher encodes round_f32_to_tf32 as this type
_I32_MAX = 2**31 - 1


class TensorDescriptor(Record):
    """A host tensor descriptor: what a ``tensordesc`` parameter takes (shapes and strides in elements,
    outermost first, as in torch)."""

    base: Any  # a CUDA tensor or array
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    block_shape: tuple[int, ...]
    padding: str = "zero"  # "zero" | "nan": what out-of-bounds loads read
    round_f32_to_tf32: bool = False

    @classmethod
    def from_tensor(cls, tensor: Any, block_shape: Sequence[int], padding: str = "zero",
                    round_f32_to_tf32: bool = False) -> "TensorDescriptor":
        """The descriptor of all of ``tensor`` (torch-like ``.shape`` / ``.stride()``, or an object with
        ``__cuda_array_interface__``), moved in blocks of ``block_shape``."""
        shape = tuple(int(s) for s in tensor.shape)
        if hasattr(tensor, "stride"):
            strides = tuple(int(s) for s in tensor.stride())
        else:
            cai = tensor.__cuda_array_interface__
            size = int(str(cai["typestr"])[2:])
            strides = (tuple(int(s) // size for s in cai["strides"]) if cai.get("strides") else
                       tuple(itertools.accumulate(shape[:0:-1], operator.mul, initial=1))[::-1])
        return cls(tensor, shape, strides, tuple(int(b) for b in block_shape), padding, round_f32_to_tf32)


def _fail(p: Parameter, what: str, fix: str) -> DescriptorArgumentError:
    return DescriptorArgumentError(f"parameter {p.name!r} (tensordesc<{p.descriptor.dtype}{list(p.descriptor.block_shape)}>): "  # type: ignore[union-attr]
                                   f"{what}; {fix}", p.name)


def _ints(p: Parameter, value: Any, what: str) -> tuple[int, ...]:
    try:
        return tuple(operator.index(v) for v in value if not isinstance(v, bool))  # tuples, lists, torch.Size
    except Exception:
        raise _fail(p, f"its {what} {short_repr(value)} is not a sequence of ints", f"give {what} as ints") from None


def _read(p: Parameter, value: Any) -> tuple[Any, tuple[int, ...], tuple[int, ...], tuple[int, ...], str, bool]:
    """``(base, shape, strides, block_shape, padding, round_f32_to_tf32)`` of the argument."""
    try:
        base, shape, strides, block = value.base, value.shape, value.strides, value.block_shape
    except AttributeError:
        raise _fail(p, f"got {type(value).__name__}, which is no tensor descriptor",
                    "pass tmlr_runtime.TensorDescriptor.from_tensor(t, block_shape) (or Triton's TensorDescriptor)") from None
    padding, tf32 = getattr(value, "padding", "zero"), getattr(value, "round_f32_to_tf32", False)
    return base, _ints(p, shape, "shape"), _ints(p, strides, "strides"), _ints(p, block, "block_shape"), padding, bool(tf32)


def _check(p: Parameter, d: Descriptor, shape: tuple[int, ...], strides: tuple[int, ...], block: tuple[int, ...],
           padding: str, tf32: bool) -> None:
    if block != d.block_shape:
        raise _fail(p, f"block_shape {list(block)} differs from the {list(d.block_shape)} the kernel was built for",
                    f"make the descriptor with block_shape={list(d.block_shape)}, or rebuild with that block shape")
    if len(shape) != d.ndim or len(strides) != d.ndim:
        raise _fail(p, f"shape {list(shape)} and strides {list(strides)} must both have {d.ndim} dimensions (the block's rank)",
                    "describe the tensor with as many dimensions as the block")
    if min(shape) <= 0:
        raise _fail(p, f"shape {list(shape)} has an empty dimension", "skip the launch when there is no data")
    if strides[-1] != 1:
        raise _fail(p, f"the innermost stride is {strides[-1]}", "make the innermost dimension contiguous (.contiguous())")
    if padding not in ("zero", "nan"):
        raise _fail(p, f"padding {short_repr(padding)} is neither 'zero' nor 'nan'", "pass padding='zero' or padding='nan'")
    if tf32 and d.dtype != "fp32":
        raise _fail(p, f"round_f32_to_tf32 is set for a {d.dtype} tensor", "set it only for fp32 tensors")
    if "shape:i32" in d.fields and max(shape) > _I32_MAX:
        raise _fail(p, f"shape {list(shape)} exceeds the 32-bit sizes the kernel takes", "split the tensor")


def _address(p: Parameter, d: Descriptor, base: Any, strides: tuple[int, ...], device: int, checks: bool) -> int:
    """The base's device address, after the TMA rules (Triton's TensorDescriptor checks them too)."""
    address = any_pointer(Parameter(f"{p.name}.base", "runtime", "*" + d.dtype), base, device, checks)
    if address % 16:
        raise _fail(p, f"the base address 0x{address:x} is not 16-byte aligned", "pass an aligned tensor (e.g. a .clone() of the slice)")
    size = TYPES[d.dtype].size
    bad = [s for s in strides[:-1] if s * size % 16]
    if bad:
        raise _fail(p, f"strides {list(strides)} ({d.dtype}: {size} bytes each): {bad} are not multiples of 16 bytes",
                    "pad the rows so every stride but the innermost spans a multiple of 16 bytes")
    return address


def descriptor_args(p: Parameter, value: Any, device: int, checks: bool) -> tuple[Any, ...]:
    """The values of the kernel parameters ``p``'s ``fields`` list, for the descriptor ``value``."""
    d: Descriptor = p.descriptor  # type: ignore[assignment]
    base, shape, strides, block, padding, tf32 = _read(p, value)
    _check(p, d, shape, strides, block, padding, tf32)
    address = _address(p, d, base, strides, device, checks)
    nan = padding == "nan"
    tensormap = (encode_tiled(p, d.tensormap, address, shape, strides, nan, tf32),) if "tensormap" in d.fields else ()  # type: ignore[arg-type]
    values = {"tensormap": tensormap, "base": (address,), "shape:i32": shape, "shape:i64": shape, "strides:i64": strides,
              "padding:i1": (int(nan),), "round_f32_to_tf32:i1": (int(tf32),)}  # each field's parameters
    return tuple([x for f in d.fields for x in values[f]])


def encode_tiled(p: Parameter, meta: TensorMapMeta, address: int, shape: tuple[int, ...], strides: tuple[int, ...],
                 nan: bool, tf32: bool) -> bytes:
    """The 128 bytes of the CUtensorMap Triton 3.9's launcher encodes (``fillTMADescriptorTiled``):
    dimensions innermost first, byte strides of all but the innermost, the recorded box."""
    drv = driver.api()
    dims = list(shape)
    if meta.fp4_padded:  # two fp4 values per byte, padded: the innermost dimension counts both
        dims[-1] *= 2
    byte_strides = [s * meta.elem_size for s in reversed(strides[:-1])]
    # Triton's array holds one entry more (the whole tensor's span), which the driver does not read
    byte_strides.append(dims[0] * (byte_strides[-1] if byte_strides else meta.elem_size))
    fill = drv.CUtensorMapFloatOOBfill
    try:
        return _encode(drv, drv.CUtensorMapDataType(_TF32 if tf32 else meta.elem_type), address, dims[::-1], byte_strides,
                       meta.block_size[::-1], drv.CUtensorMapSwizzle(meta.swizzle),
                       drv.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                       fill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA if nan else fill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
                       f"cuTensorMapEncodeTiled for parameter {p.name!r}")
    except TmlrError as e:
        raise _fail(p, f"the driver refused to encode its TMA descriptor ({e})",
                    "check the tensor's shape, strides and alignment against the TMA limits") from None


def _encode(drv: Any, data_type: Any, address: int, dims: Sequence[int], strides: Sequence[int], box: Sequence[int],
            swizzle: Any, l2: Any, fill: Any, what: str) -> bytes:
    """The 128 bytes ``cuTensorMapEncodeTiled`` writes; dims, byte strides and box innermost first."""
    tmap = driver.check(drv.cuTensorMapEncodeTiled(
        data_type, len(dims), address, [drv.cuuint64_t(x) for x in dims], [drv.cuuint64_t(x) for x in strides],
        [drv.cuuint32_t(b) for b in box], [drv.cuuint32_t(1)] * len(dims), drv.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        swizzle, l2, fill), what)
    return tensor_map_bytes(tmap)


def tensor_map_bytes(tmap: Any) -> bytes:
    """The 128 bytes of a cuda-python ``CUtensorMap``."""
    return struct.pack("<16Q", *[int(x) for x in tmap.opaque])


# --- Triton 3.3's host-side TMA descriptors (nvTmaDesc parameters) --------------------------------


class TensorMap(Record):
    """A 128-byte ``CUtensorMap``; pass it where the signature says ``nvTmaDesc``."""

    tensor_map_bytes: bytes
    shape: tuple[int, ...]
    block_shape: tuple[int, ...]
    element_size: int


def _base_address(base: Any) -> tuple[int, int | None, tuple[int, ...] | None]:
    if isinstance(base, int) and not isinstance(base, bool):
        return base, None, None
    if hasattr(base, "data_ptr") and hasattr(base, "element_size"):
        return int(base.data_ptr()), int(base.element_size()), tuple(int(s) for s in base.shape)
    cai = getattr(base, "__cuda_array_interface__", None)
    if cai is not None:
        return int(cai["data"][0]), int(str(cai["typestr"])[2:]), tuple(int(s) for s in cai["shape"])
    raise ArgumentError(f"make_tensor_map needs a CUDA tensor, an array with __cuda_array_interface__ or an int address, got {type(base).__name__}")


def _positive(what: str, value: Any) -> tuple[int, ...]:
    """``value`` as a tuple of positive ints, or an :class:`ArgumentError` saying how to pass it."""
    try:
        items = () if isinstance(value, (str, bytes)) else tuple(value)
        dims = tuple(operator.index(d) for d in items if not isinstance(d, bool))
    except TypeError:
        items = dims = ()
    if not items or len(dims) != len(items) or min(dims) <= 0:
        raise ArgumentError(f"make_tensor_map: got {what}={short_repr(value)}; pass {what} as a tuple of positive ints, outer "
                            f"dimension first, e.g. {what}=(64, 64)", what)
    return dims


def make_tensor_map(base: Any, block_shape: Sequence[int], shape: Sequence[int] | None = None,
                    element_size: int | None = None) -> TensorMap:
    """Encode a TMA descriptor for a dense row-major 1-D or 2-D tensor and a block (box) shape.

    ``base`` is a CUDA tensor/array (its shape and element size are used unless given) or an int
    address (then ``shape`` and ``element_size`` are required). Shapes are outer-first, as in torch.
    """
    address, esize, tshape = _base_address(base)
    shape = _positive("shape", shape) if shape is not None else tshape or ()
    esize = element_size if element_size is not None else esize
    block = _positive("block_shape", block_shape)
    if not shape or esize is None:
        raise ArgumentError("make_tensor_map: give shape= and element_size= when base is an int address")
    if len(shape) != len(block) or len(shape) not in (1, 2):
        raise ArgumentError(f"make_tensor_map: shape {shape} and block_shape {block} must both be 1-D or 2-D")
    drv = driver.init()
    T = drv.CUtensorMapDataType
    types = {1: T.CU_TENSOR_MAP_DATA_TYPE_UINT8, 2: T.CU_TENSOR_MAP_DATA_TYPE_UINT16, 4: T.CU_TENSOR_MAP_DATA_TYPE_UINT32}
    if esize not in types:
        raise ArgumentError(f"make_tensor_map: element size {esize} is not 1, 2 or 4 bytes")
    if address % 16:
        raise ArgumentError(f"make_tensor_map: address 0x{address:x} must be 16-byte aligned for TMA")
    dims, strides, box, swizzle, l2 = _geometry(drv, shape, block, esize)
    data = _encode(drv, types[esize], address, dims, strides[: len(dims) - 1] if len(dims) > 1 else strides, box, swizzle, l2,
                   drv.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE, "cuTensorMapEncodeTiled")
    return TensorMap(data, shape, block, esize)

def _geometry(drv: Any, shape: tuple[int, ...], block: tuple[int, ...], esize: int) -> tuple[list[int], list[int], list[int], Any, Any]:
    """``(dims, strides, box, swizzle, l2 promotion)``, innermost first, as Triton 3.3 encodes them."""
    S, L2 = drv.CUtensorMapSwizzle, drv.CUtensorMapL2promotion
    if len(shape) == 1:
        if esize * block[0] < 32:
            raise ArgumentError(f"make_tensor_map: a 1-D block must span at least 32 bytes, got {esize * block[0]}")
        return [shape[0]], [shape[0] * esize], [block[0]], S.CU_TENSOR_MAP_SWIZZLE_NONE, L2.CU_TENSOR_MAP_L2_PROMOTION_NONE
    (rows, cols), (brows, bcols) = shape, block
    inner_bytes = esize * bcols
    if inner_bytes < 32:
        raise ArgumentError(f"make_tensor_map: the inner block dimension must span at least 32 bytes, got {inner_bytes}")
    swizzle = S.CU_TENSOR_MAP_SWIZZLE_128B if inner_bytes >= 128 else S.CU_TENSOR_MAP_SWIZZLE_64B if inner_bytes >= 64 else S.CU_TENSOR_MAP_SWIZZLE_32B
    if inner_bytes > 128:
        bcols = 128 // esize  # the box inner dim may not exceed the swizzle; Triton's codegen issues several copies
    return [cols, rows], [cols * esize, cols * rows * esize], [bcols, brows], swizzle, L2.CU_TENSOR_MAP_L2_PROMOTION_L2_128B
