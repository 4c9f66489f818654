"""How kernel parameters are laid out in host memory for ``cuLaunchKernel``'s ``void**``.

Every parameter the cubin takes (the signature's runtime parameters, then the hidden trailing
pointers) gets a slot in one buffer, at an offset aligned to its size; one precompiled
``struct.Struct`` writes all values with a single ``pack_into`` call per launch. Types come from
the recorded signature, never from the Python value: a 1.5 given to an ``fp16`` parameter is
stored as the 2-byte half 0x3E00, not as a 4-byte float.
"""
from __future__ import annotations

import ctypes
import functools
import math
import operator
import struct
from dataclasses import dataclass

from ._errors import ArgumentError, ScalarArgumentError, short_repr
from .abi import TMA_DESC, TYPES, Parameter

# Triton scalar type -> (struct code, size, integer range or None)
SCALAR_CODES = {t.name: (t.code, t.size, t.range) for t in TYPES.values() if t.scalar}
POINTER_CODE = ("Q", 8)
TMA_DESC_SIZE = TYPES[TMA_DESC].size
TMA_DESC_ALIGN = TYPES[TMA_DESC].align

_F32 = struct.Struct("<f")
_U32 = struct.Struct("<I")


def bf16_bits(x: float) -> int:
    """bfloat16 bits of ``x``, rounded to nearest even like torch's conversion."""
    f = float(x)
    if math.isnan(f):
        return 0x7FC0
    try:
        (bits,) = _U32.unpack(_F32.pack(f))
    except OverflowError:
        return 0x7F80 if f > 0 else 0xFF80
    bits += 0x7FFF + ((bits >> 16) & 1)
    return (bits >> 16) & 0xFFFF


@dataclass(frozen=True)
class Slot:
    """Where one cubin parameter lives in the packed buffer."""

    name: str  # signature name, or the hidden parameter's name
    type: str  # Triton type, "*i8" for hidden pointers
    code: str  # struct code ("Q", "i", "128s", ...)
    offset: int
    size: int


@dataclass(frozen=True)
class Layout:
    """The packed-argument layout of one kernel variant (parallel tuples, one entry per slot)."""

    names: tuple[str, ...]  # signature names, then the hidden parameters' names
    types: tuple[str, ...]  # Triton types, "*i8" for hidden pointers
    offsets: tuple[int, ...]
    sizes: tuple[int, ...]
    struct: struct.Struct  # packs every slot's value at offset 0 of the aligned buffer
    size: int
    # packs only the leading runtime parameters: the hidden pointers after them stay as the
    # zero-filled buffer has them unless a launch passes global scratch
    head: struct.Struct

    @functools.cached_property
    def slots(self) -> tuple[Slot, ...]:
        """Each parameter's :class:`Slot` (made on first use; a launch needs only the tuples)."""
        return tuple(Slot(n, t, _code(t), o, s) for n, t, o, s in zip(self.names, self.types, self.offsets, self.sizes))

    @classmethod
    def build(cls, runtime_params: tuple[Parameter, ...], hidden_params: tuple[str, ...]) -> "Layout":
        names = [p.name for p in runtime_params] + list(hidden_params)
        types = [p.type or "" for p in runtime_params] + ["*i8"] * len(hidden_params)
        fmt = ["<"]
        offsets: list[int] = []
        sizes: list[int] = []
        offset = 0
        head = ""
        nruntime = len(runtime_params)
        for n, typ in enumerate(types):
            if n == nruntime:
                head = "".join(fmt)
            spec = _POINTER if typ[:1] == "*" else _SPECS.get(typ)
            if spec is None:
                raise ArgumentError(f"parameter {names[n]!r} has type {typ!r}, which tmlr_runtime cannot pass", names[n])
            code, size, align = spec
            if offset % align:
                pad = -offset % align
                fmt.append(str(pad) + "x")
                offset += pad
            offsets.append(offset)
            sizes.append(size)
            fmt.append(code)
            offset += size
        full = "".join(fmt)
        if len(types) == nruntime:
            head = full
        return cls(tuple(names), tuple(types), tuple(offsets), tuple(sizes), _struct(full), max(offset, 1), _struct(head))


# type -> (struct code, size, alignment)
_POINTER = (POINTER_CODE[0], POINTER_CODE[1], POINTER_CODE[1])
_SPECS = {t.name: (t.code, t.size, t.align) for t in TYPES.values() if t.code}


def _code(typ: str) -> str:
    return (_POINTER if typ[:1] == "*" else _SPECS[typ])[0]


_struct = functools.lru_cache(maxsize=512)(struct.Struct)  # a format's Struct, parsed once


class ArgBuffer:
    """One thread's packed-argument storage and the ``void**`` array pointing into it.

    Created once per (variant, thread); a launch only rewrites the values. Both live in
    ``bytearray``s whose addresses ctypes reads through a ``c_char`` view: a ctypes array type
    (``c_char * n``) would cost ~30 us to create for each new size, on the first launch.
    """

    __slots__ = ("raw", "view", "pointers", "address", "_views")

    def __init__(self, layout: Layout) -> None:
        # Over-allocate so the base can be 64-byte aligned (CUtensorMap by value needs it). The
        # views export the buffers, so they cannot be resized (moved) while this lives.
        self.raw = bytearray(layout.size + TMA_DESC_ALIGN)
        raw_view = ctypes.c_char.from_buffer(self.raw)
        base = ctypes.addressof(raw_view)
        shift = -base % TMA_DESC_ALIGN
        self.view = memoryview(self.raw)[shift : shift + layout.size]
        n = len(layout.offsets)
        self.pointers = bytearray(8 * max(n, 1))
        _pack_addresses(n).pack_into(self.pointers, 0, *[base + shift + o for o in layout.offsets])
        pointers_view = ctypes.c_char.from_buffer(self.pointers)
        self.address = ctypes.addressof(pointers_view) if n else 0
        self._views = (raw_view, pointers_view)


@functools.lru_cache(maxsize=64)
def _pack_addresses(n: int) -> struct.Struct:
    return struct.Struct(f"={n}Q")  # void* values in native byte order


def diagnose_scalar(param: Parameter, value: object) -> ScalarArgumentError | None:
    """Why ``value`` cannot be packed as ``param``'s scalar type, or None if it can."""
    typ = param.type or ""
    code, _, bounds = SCALAR_CODES[typ]
    if bounds is not None:
        try:
            v = None if isinstance(value, float) else operator.index(value)  # type: ignore[arg-type]
        except Exception:  # no __index__, or one that fails (a numpy array, a tensor of several elements)
            v = None
        if v is None:
            fix = "pass int(value) if the truncation is intended" if isinstance(value, float) else "pass an int"
            return ScalarArgumentError(
                f"parameter {param.name!r} ({typ}) needs an integer, got {type(value).__name__} {short_repr(value)}; {fix}",
                param.name,
            )
        lo, hi = bounds
        if not lo <= v <= hi:
            return ScalarArgumentError(
                f"parameter {param.name!r} ({typ}) must be in [{lo}, {hi}], got {short_repr(v)}; the kernel was built "
                f"for {typ} - rebuild it with a wider type in --signature if such values are expected",
                param.name,
            )
        return None
    try:
        f = float(value)  # type: ignore[arg-type]
    except OverflowError:  # an int beyond even fp64
        return ScalarArgumentError(
            f"parameter {param.name!r} ({typ}) overflows: {short_repr(value)} is beyond every float type; scale the value",
            param.name,
        )
    except Exception:
        return ScalarArgumentError(
            f"parameter {param.name!r} ({typ}) needs a float, got {type(value).__name__} {short_repr(value)}; pass a Python float",
            param.name,
        )
    if typ in ("fp16", "fp32") and math.isfinite(f):
        try:
            struct.pack("<" + code, f)
        except OverflowError:
            limit = "65504" if typ == "fp16" else "3.4e38"
            return ScalarArgumentError(
                f"parameter {param.name!r} ({typ}) overflows: |{f}| > {limit}; rebuild with a wider float type "
                "in --signature or scale the value",
                param.name,
            )
    return None
