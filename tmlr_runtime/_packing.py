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
import struct
from dataclasses import dataclass

from .abi import TMA_DESC, TYPES, TritonType, Parameter

_POINTER = TritonType("*", "Q", 8, 8, None, None, (), None, None, False, False)  # how any pointer is passed
_BASE_ALIGN = TYPES[TMA_DESC].align  # a CUtensorMap passed by value needs its slot 64-byte aligned


_struct = functools.lru_cache(maxsize=512)(struct.Struct)  # a format's Struct, parsed once


@dataclass(frozen=True)
class Layout:
    """Where each parameter the cubin takes lives in the packed buffer: the runtime parameters,
    each at an offset aligned to its size, then the hidden pointers."""

    names: tuple[str, ...]  # the runtime parameters' names, then the hidden parameters'
    offsets: tuple[int, ...]
    sizes: tuple[int, ...]
    size: int
    head: struct.Struct  # packs the runtime parameters at offset 0; the hidden pointers stay zero

    @classmethod
    def build(cls, runtime_params: tuple[Parameter, ...], hidden_params: tuple[str, ...]) -> "Layout":
        types = [_POINTER if p.type[0] == "*" else TYPES[p.type] for p in runtime_params]  # type: ignore[index]
        fmt, offsets, offset = "<", [], 0
        for i, t in enumerate(types + [_POINTER] * len(hidden_params)):
            pad = -offset % t.align
            offsets.append(offset + pad)
            offset += pad + t.size
            if i < len(types):
                fmt += f"{pad}x{t.code}" if pad else t.code
        names = tuple(p.name for p in runtime_params) + tuple(hidden_params)
        return cls(names, tuple(offsets), tuple(t.size for t in types) + (8,) * len(hidden_params), max(offset, 1), _struct(fmt))


class ArgBuffer:
    """One thread's packed-argument storage and the ``void**`` array pointing into it.

    Created once per (variant, thread); a launch only rewrites the values. Both live in
    ``bytearray``s whose addresses ctypes reads through a ``c_char`` view: a ctypes array type
    (``c_char * n``) per size would be slow to create on a thread's first launch.
    """

    __slots__ = ("raw", "view", "pointers", "address", "_views")

    def __init__(self, layout: Layout) -> None:
        # Over-allocate so the base can be 64-byte aligned. The views export the buffers, so they
        # cannot be resized (moved) while this lives.
        self.raw = bytearray(layout.size + _BASE_ALIGN)
        raw_view = ctypes.c_char.from_buffer(self.raw)
        base = ctypes.addressof(raw_view)
        shift = -base % _BASE_ALIGN
        self.view = memoryview(self.raw)[shift : shift + layout.size]
        n = len(layout.offsets)
        self.pointers = bytearray(8 * max(n, 1))
        struct.pack_into(f"={n}Q", self.pointers, 0, *[base + shift + o for o in layout.offsets])  # native void*
        pointers_view = ctypes.c_char.from_buffer(self.pointers)
        self.address = ctypes.addressof(pointers_view) if n else 0
        self._views = (raw_view, pointers_view)
