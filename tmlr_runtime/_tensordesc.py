"""Host TensorDescriptor arguments (``tensordesc`` parameters), without Triton.

The caller passes one object with ``base``, ``shape``, ``strides``, ``block_shape`` and optionally
``padding`` / ``round_f32_to_tf32`` (Triton's own ``TensorDescriptor`` or :class:`TensorDescriptor`
here); the kernel takes the parameters the artifact's ``descriptor.fields`` lists. Which fields a
Triton release uses is the build's business: this module only follows them. A ``tensormap`` field
is encoded per call with ``cuTensorMapEncodeTiled`` as Triton 3.9's ``fillTMADescriptorTiled`` does.
"""
from __future__ import annotations

import operator
import struct
from dataclasses import dataclass
from typing import Any, Sequence

from . import _convert, _driver
from ._errors import ArgumentError, TmlrError, short_repr
from .abi import TYPES, Descriptor, Parameter, TensorMapMeta

_TF32 = 11  # CU_TENSOR_MAP_DATA_TYPE_TFLOAT32: Triton's launcher encodes round_f32_to_tf32 as this type
_I32_MAX = 2**31 - 1


class DescriptorArgumentError(ArgumentError):
    """A tensor descriptor argument does not fit its parameter (block shape, dtype, rank, TMA rules)."""


@dataclass(frozen=True)
class TensorDescriptor:
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
                       tuple(_dense_strides(shape)))
        return cls(tensor, shape, strides, tuple(int(b) for b in block_shape), padding, round_f32_to_tf32)


def _dense_strides(shape: tuple[int, ...]) -> list[int]:
    strides, step = [], 1
    for dim in reversed(shape):
        strides.insert(0, step)
        step *= dim
    return strides


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
    address = _convert.any_pointer(Parameter(f"{p.name}.base", "runtime", "*" + d.dtype), base, device, checks)
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
    out: list[Any] = []
    for f in d.fields:
        if f == "tensormap":
            out.append(encode_tiled(p, d.tensormap, address, shape, strides, padding == "nan", tf32))  # type: ignore[arg-type]
        elif f == "base":
            out.append(address)
        elif f in ("shape:i32", "shape:i64"):
            out += shape
        elif f == "strides:i64":
            out += strides
        else:  # padding:i1, round_f32_to_tf32:i1 (the reader refuses any other field)
            out.append(int(padding == "nan" if f == "padding:i1" else tf32))
    return tuple(out)


def encode_tiled(p: Parameter, meta: TensorMapMeta, address: int, shape: tuple[int, ...], strides: tuple[int, ...],
                 nan: bool, tf32: bool) -> bytes:
    """The 128 bytes of the CUtensorMap Triton 3.9's launcher encodes (``fillTMADescriptorTiled``):
    dimensions innermost first, byte strides of all but the innermost, the recorded box."""
    drv = _driver.api()
    dims = list(shape)
    if meta.fp4_padded:  # two fp4 values per byte, padded: the innermost dimension counts both
        dims[-1] *= 2
    rank = len(dims)
    byte_strides = [s * meta.elem_size for s in reversed(strides[:-1])]
    # Triton's array holds one entry more (the whole tensor's span), which the driver does not read
    byte_strides.append(dims[0] * (byte_strides[-1] if byte_strides else meta.elem_size))
    fill = drv.CUtensorMapFloatOOBfill
    try:
        result = drv.cuTensorMapEncodeTiled(
            drv.CUtensorMapDataType(_TF32 if tf32 else meta.elem_type), rank, address,
            [drv.cuuint64_t(x) for x in reversed(dims)], [drv.cuuint64_t(x) for x in byte_strides],
            [drv.cuuint32_t(b) for b in reversed(meta.block_size)], [drv.cuuint32_t(1)] * rank,
            drv.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE, drv.CUtensorMapSwizzle(meta.swizzle),
            drv.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
            fill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA if nan else fill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
        tmap = _driver.check(result, f"cuTensorMapEncodeTiled for parameter {p.name!r}")
    except TmlrError as e:
        raise _fail(p, f"the driver refused to encode its TMA descriptor ({e})",
                    "check the tensor's shape, strides and alignment against the TMA limits") from None
    return struct.pack("<16Q", *[int(x) for x in tmap.opaque])
