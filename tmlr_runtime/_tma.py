"""Host-side TMA descriptors (``CUtensorMap``) for ``nvTmaDesc`` parameters, without Triton.

Triton 3.3 kernels that take a host descriptor expect the encoding of Triton's own
``create_1d_tma_descriptor`` / ``create_2d_tma_descriptor``: unsigned element types by size, a
dense row-major tensor, and (2-D) a swizzle chosen from the inner block width; the compiler relies
on that convention, so this helper reproduces it exactly.
"""
from __future__ import annotations

import operator
import struct
from dataclasses import dataclass
from typing import Any, Sequence

from . import _driver
from ._errors import ArgumentError, short_repr


@dataclass(frozen=True)
class TensorMap:
    """A 128-byte ``CUtensorMap``; pass it where the signature says ``nvTmaDesc``."""

    tensor_map_bytes: bytes
    shape: tuple[int, ...]
    block_shape: tuple[int, ...]
    element_size: int


def _address(base: Any) -> tuple[int, int | None, tuple[int, ...] | None]:
    if isinstance(base, int) and not isinstance(base, bool):
        return base, None, None
    if hasattr(base, "data_ptr") and hasattr(base, "element_size"):
        return int(base.data_ptr()), int(base.element_size()), tuple(int(s) for s in base.shape)
    cai = getattr(base, "__cuda_array_interface__", None)
    if cai is not None:
        return int(cai["data"][0]), int(str(cai["typestr"])[2:]), tuple(int(s) for s in cai["shape"])
    raise ArgumentError(f"make_tensor_map needs a CUDA tensor, an array with __cuda_array_interface__ or an int address, got {type(base).__name__}")


def _dims(what: str, value: Any) -> tuple[int, ...]:
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
    address, esize, tshape = _address(base)
    shape = _dims("shape", shape) if shape is not None else tshape or ()
    esize = element_size if element_size is not None else esize
    block = _dims("block_shape", block_shape)
    if not shape or esize is None:
        raise ArgumentError("make_tensor_map: give shape= and element_size= when base is an int address")
    if len(shape) != len(block) or len(shape) not in (1, 2):
        raise ArgumentError(f"make_tensor_map: shape {shape} and block_shape {block} must both be 1-D or 2-D")
    drv = _driver.init()
    T = drv.CUtensorMapDataType
    types = {1: T.CU_TENSOR_MAP_DATA_TYPE_UINT8, 2: T.CU_TENSOR_MAP_DATA_TYPE_UINT16, 4: T.CU_TENSOR_MAP_DATA_TYPE_UINT32}
    if esize not in types:
        raise ArgumentError(f"make_tensor_map: element size {esize} is not 1, 2 or 4 bytes")
    if address % 16:
        raise ArgumentError(f"make_tensor_map: address 0x{address:x} must be 16-byte aligned for TMA")
    dims, strides, box, swizzle, l2 = _geometry(drv, shape, block, esize)
    tmap = _driver.check(drv.cuTensorMapEncodeTiled(
        types[esize], len(dims), address, [drv.cuuint64_t(d) for d in dims],
        [drv.cuuint64_t(s) for s in (strides[: len(dims) - 1] if len(dims) > 1 else strides)],
        [drv.cuuint32_t(b) for b in box], [drv.cuuint32_t(1)] * len(dims), drv.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        swizzle, l2, drv.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE), "cuTensorMapEncodeTiled")
    return TensorMap(struct.pack("<16Q", *[int(x) for x in tmap.opaque]), shape, block, esize)


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
