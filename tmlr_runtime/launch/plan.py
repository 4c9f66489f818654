"""The launch plan: what a launch of one variant in one context does, fixed at load as plain data that an executor in
any language can run (``execute.py``, ``_fastlaunch.c``); its fields are described in docs/contributing.md."""
from __future__ import annotations

import ctypes
import functools
import math
import struct
import sys
import threading
from types import SimpleNamespace
from collections import namedtuple
from typing import TYPE_CHECKING, Any, Callable

from .. import driver
from ..abi import PER_DIM_FIELDS, SINGLE_FIELDS, TMA_DESC, TYPES, Parameter, TritonType, pointee
from .streams import stream_getter

if TYPE_CHECKING:
    from ..artifact.metadata import Variant
    from .modules import LoadedFunction

# What a step does with its argument (as Inductor's static launcher gives each argument a code).
SCALAR = 0  # packed by fmt; the struct converts and range-checks it
PTR = 1  # a device address: torch tensor, array interface, DLPack, int or None; checked (device, dtype, mask)
DIV16 = 2  # an int packed by fmt that must be a multiple of 16
BOOL = 3  # i1: True/False or 0/1
BF16 = 4  # a float packed as its bfloat16 bits
TMA = 5  # an nvTmaDesc: 128 bytes of a CUtensorMap
TENSORDESC = 6  # a host tensor descriptor: the values of the fields fmt lists
CONSTEXPR = 7  # not passed; must equal the compiled value
ONE = 8  # an int specialized to 1: not passed; must be 1
IGNORED = 9  # a constexpr or an int specialized to 1 with checks off: nothing to do
Step = tuple[int, int, int, int, str, Any, int]
_INLINE = frozenset((SCALAR, PTR, DIV16, IGNORED))  # the codes the Python executor handles without convert

_TYPE_CODES = {"i1": BOOL, "u1": BOOL, "bf16": BF16, TMA_DESC: TMA, "tensordesc": TENSORDESC}
_POINTER_TYPE = TritonType("*", "Q", 8, 8, None, None, (), None, None, False, False)  # how any pointer is passed
BASE_ALIGN = TYPES[TMA_DESC].align  # a CUtensorMap passed by value needs its slot 64-byte aligned
_struct = functools.lru_cache(maxsize=512)(struct.Struct)  # a format's Struct, parsed once
_NoTorch = type("NoTorch", (), {})  # stands in for torch.Tensor when torch is not imported: no value has this type


def code(p: Parameter, checks: bool) -> int:
    """The step code of parameter ``p``."""
    if p.kind != "runtime":
        return (CONSTEXPR if p.kind == "constexpr" else ONE) if checks else IGNORED
    if p.type[0] == "*":  # type: ignore[index]
        return PTR
    c = _TYPE_CODES.get(p.type, SCALAR)  # type: ignore[arg-type]
    if c == SCALAR and checks and p.divisibility == 16 and TYPES[p.type].range is not None:  # type: ignore[index]
        return DIV16
    return c


def torch_dtype(param: Parameter) -> Any:
    """The torch dtype a tensor for ``param`` must have; None when torch is not imported or the
    pointee has no torch equivalent (then dtype is not checked)."""
    name = TYPES[pointee(param.type)].torch  # type: ignore[arg-type]
    return getattr(sys.modules.get("torch"), name, None) if name else None


class Layout(namedtuple("Layout", "names offsets sizes formats size head")):
    """Where each parameter the cubin takes lives in the packed buffer: the runtime parameters, each at an offset aligned
    to its size, then the hidden pointers (a namedtuple, made at each load: a record's ``__init__`` costs more; not
    typing's, which compiles each annotation's text when the class is made)."""
    __slots__ = ()
    names: tuple[str, ...]  # the runtime parameters' names, then the hidden parameters'
    offsets: tuple[int, ...]
    sizes: tuple[int, ...]
    formats: tuple[str, ...]  # each slot's struct code
    size: int
    head: struct.Struct  # packs the runtime parameters at offset 0; the hidden pointers stay zero

    @classmethod
    def build(cls, runtime_params: tuple[Parameter, ...], hidden_params: tuple[str, ...]) -> "Layout":
        slots = [s for p in runtime_params for s in param_slots(p)]
        types = [_POINTER_TYPE if t[0] == "*" else TYPES[t] for _, t in slots]
        fmt, offsets, offset = "<", [], 0
        for t in types:
            pad = -offset % t.align
            fmt += f"{pad}x{t.code}" if pad else t.code
            offsets.append(offset + pad)
            offset += pad + t.size
        offset += -offset % 8  # then the hidden pointers
        offsets += range(offset, offset + 8 * len(hidden_params), 8)
        names = tuple([name for name, _ in slots]) + tuple(hidden_params)
        sizes = tuple([t.size for t in types]) + (8,) * len(hidden_params)
        formats = tuple([t.code for t in types]) + ("Q",) * len(hidden_params)
        return cls(names, tuple(offsets), sizes, formats, max(offset + 8 * len(hidden_params), 1), _struct(fmt))


def _padded(offsets: Any, sizes: Any, formats: Any, start: int) -> str:
    """The struct format of slots at ``offsets`` (absolute), packed from ``start``, with pad bytes between."""
    fmt, at = "", start
    for offset, size, f in zip(offsets, sizes, formats):
        fmt += f"{offset - at}x{f}" if offset > at else f
        at = offset + size
    return fmt


def param_slots(p: Parameter) -> list[tuple[str, str]]:
    """``(name, Triton type)`` of each kernel parameter runtime parameter ``p`` becomes: itself, or a
    tensor descriptor's fields (``a_desc.tensormap``, ``a_desc.shape[0]``, ...; the base pointer's type is ``"*"``)."""
    d = p.descriptor
    if d is None:
        return [(p.name, p.type)]  # type: ignore[list-item]
    slots = []
    for f in d.fields:
        name = f"{p.name}.{f.split(':')[0]}"
        slots += [(f"{name}[{i}]", PER_DIM_FIELDS[f]) for i in range(d.ndim)] if f in PER_DIM_FIELDS else [(name, SINGLE_FIELDS[f])]
    return slots


def steps(signature: tuple[Parameter, ...], npos: int, layout: Layout, checks: bool) -> tuple[Step, ...]:
    """One step per positional parameter (docs/contributing.md, "The launch plan")."""
    out, slot, offsets, sizes, formats = [], 0, layout.offsets, layout.sizes, layout.formats
    for i, p in enumerate(signature[:npos]):
        c = code(p, checks)
        if p.kind != "runtime":
            out.append((c, i, -1, 0, "", None, 0))
            continue
        offset = offsets[slot]
        if p.descriptor is None:
            size, fmt, slot = sizes[slot], formats[slot], slot + 1
        else:  # its fields' slots, with the padding between them
            n = len(param_slots(p))
            size = offsets[slot + n - 1] + sizes[slot + n - 1] - offset
            fmt, slot = _padded(offsets[slot: slot + n], sizes[slot: slot + n], formats[slot: slot + n], offset), slot + n
        if c == PTR:
            out.append((c, i, offset, size, fmt, torch_dtype(p) if checks else None, 15 if checks and p.divisibility == 16 else 0))
        else:
            out.append((c, i, offset, size, fmt, None, 15 if c == DIV16 else 0))
    return tuple(out)


class ArgBuffer:
    """One thread's packed-argument storage and the ``void**`` array pointing into it.

    Created once per (plan, thread); a launch only rewrites the values. Both live in ``bytearray``s
    whose addresses ctypes reads through a ``c_char`` view: a ctypes array type (``c_char * n``) per
    size would be slow to create on a thread's first launch.
    """

    __slots__ = ("raw", "view", "pointers", "address", "_views")

    def __init__(self, layout: Layout) -> None:
        # Over-allocate so the base can be 64-byte aligned. The views export the buffers, so they
        # cannot be resized (moved) while this lives.
        self.raw = bytearray(layout.size + BASE_ALIGN)
        raw_view = ctypes.c_char.from_buffer(self.raw)
        base = ctypes.addressof(raw_view)
        shift = -base % BASE_ALIGN
        self.view = memoryview(self.raw)[shift: shift + layout.size]
        n = len(layout.offsets)
        self.pointers = bytearray(8 * max(n, 1))
        struct.pack_into(f"={n}Q", self.pointers, 0, *[base + shift + o for o in layout.offsets])  # native void*
        pointers_view = ctypes.c_char.from_buffer(self.pointers)
        self.address = ctypes.addressof(pointers_view) if n else 0
        self._views = (raw_view, pointers_view)


def positional_count(signature: tuple[Parameter, ...]) -> int:
    """The parameters a plain call passes by position: up to the last one that is not a constexpr."""
    npos = len(signature)
    while npos and signature[npos - 1].kind == "constexpr":
        npos -= 1
    return npos


class LaunchPlan:
    """What a launch of ``variant`` as ``loaded`` reads, fixed at load in the context current then
    (docs/contributing.md, "The launch plan"). Fields after ``storage`` serve the Python executor alone."""

    __slots__ = (
        # the description
        "name", "signature", "checks", "npos", "steps", "size", "fmt", "hidden", "scratch", "function", "block", "shared",
        "cluster", "max_grid", "use_ex", "context", "device", "variant", "loaded", "layout", "storage",
        # the Python executor's: the positions of its values list (each argument's position + 2, after
        # pack_into's buffer and offset) of checked pointers (with dtype and mask), unchecked pointers,
        # the first int to check for divisibility by 16, whether other steps have work, the packing call,
        # torch.Tensor, the context and stream getters, cuLaunchKernel and the largest int grid it takes
        "pointers", "unchecked", "div16", "rest", "pack", "tensor", "get_context", "current_stream", "drv", "launch_fn",
        "max_x", "what", "fast", "_binder",
    )

    def __init__(self, name: str, signature: tuple[Parameter, ...], variant: Variant, loaded: LoadedFunction, checks: bool) -> None:
        self.name, self.signature, self.checks, self.variant, self.loaded = name, signature, checks, variant, loaded
        self.npos = positional_count(signature)
        runtime = tuple([p for p in signature[: self.npos] if p.kind == "runtime"])
        self.layout = layout = Layout.build(runtime, variant.hidden_params)
        self.steps = steps(signature, self.npos, layout, checks)
        self.size, self.fmt = layout.size, layout.head.format
        self.hidden = tuple(zip(variant.hidden_params, layout.offsets[len(layout.offsets) - len(variant.hidden_params):]))
        self.cluster, self.max_grid = variant.cluster_dims, loaded.device.max_grid
        self.scratch = None
        if variant.scratch_size > 0 and "global_scratch" in variant.hidden_params:
            self.scratch = (variant.scratch_size * max(variant.num_ctas, math.prod(self.cluster)), variant.scratch_align,
                            dict(self.hidden)["global_scratch"])
        self.function, self.block, self.shared, self.device = loaded.function, variant.threads_per_block, variant.shared, loaded.device.ordinal
        self.use_ex = variant.is_cluster_launch or variant.cooperative or variant.pdl
        # .slot: (buffer, void** address, CUlaunchConfig), one per thread where a launch writes into them, else one for all
        self.storage: Any = threading.local() if layout.head.size or self.scratch or self.use_ex else SimpleNamespace()
        self.what, self._binder = f"launching {name}", None
        self._python_executor(driver.api())

    def _python_executor(self, drv: Any) -> None:
        """The fields only the Python executor reads, derived from the steps (a value's index in its
        values list is its position + 2: see __slots__)."""
        pointers, unchecked, div16, kept, descriptors, rest = [], [], [], [], [], False
        for c, i, offset, _, _, dtype, mask in self.steps:
            if c == PTR and self.checks:
                pointers.append((i + 2, dtype, mask))
            elif c == PTR:
                unchecked.append(i + 2)
            elif c == DIV16:
                div16.append(i + 2)
            elif c == TENSORDESC:
                descriptors.append(i)
            rest = rest or c not in _INLINE
            if offset >= 0:
                kept.append(i)
        self.pointers, self.unchecked = tuple(pointers), tuple(unchecked)
        self.div16 = div16[0] if div16 else 0  # the first apart: a loop costs more
        self.rest = rest or len(div16) > 1
        self.pack = _packer(self.layout.head.pack_into, kept, self.npos, frozenset(descriptors))
        torch = sys.modules.get("torch")
        self.tensor = torch.Tensor if torch is not None else _NoTorch
        get_context = drv.cuCtxGetCurrent
        self.context = get_context()[1]  # compared by value with the current one at each launch
        if get_context()[1] != self.context:  # bindings whose handles compare by identity: compare ints
            get_context, self.context = (lambda: (0, int(drv.cuCtxGetCurrent()[1]))), int(self.context)
        self.get_context = get_context
        self.current_stream = stream_getter()
        self.drv, self.launch_fn = drv, drv.cuLaunchKernel  # the bindings of the load, also where a test fakes them
        self.max_x = 0 if self.scratch or self.use_ex else self.max_grid[0]  # an int grid up to this: cuLaunchKernel here
        # what execute.launch reads, in the order it unpacks them: one unpack of an exact tuple costs less than as many
        # attribute loads (3 % of a launch on the CPU, tools/runtime_ab.py)
        self.fast = (self.get_context, self.context, self.npos, self.current_stream, self.device, self.storage, self.pointers,
                     self.unchecked, self.div16, self.rest, self.tensor, self.pack, self.max_x, self.launch_fn, self.function,
                     self.block, self.shared, self)
        if not isinstance(self.storage, threading.local):
            self.new_slot()

    @property
    def binder(self) -> Any:
        """What binds a call with keywords or another count of arguments (``bind.Binder``, made on the first such call)."""
        if self._binder is None:
            from .bind import Binder, option_names, usage

            sig = self.signature
            self._binder = Binder(self.name, [p.name for p in sig], [p.kind for p in sig], self.npos, functools.partial(usage, self.name, sig),
                                  defaults={i: p.value for i, p in enumerate(sig) if p.kind == "constexpr"}, options=option_names([self.variant]))
        return self._binder

    def new_slot(self) -> tuple[memoryview, int, Any]:
        """This thread's ``(buffer, void** address, CUlaunchConfig or None)``, made on its first launch."""
        buf = ArgBuffer(self.layout)
        self.storage.buffer = buf  # its views hold the memory the void** points to
        config = None
        if self.use_ex:
            from .attributes import launch_config

            config = launch_config(self.drv, self.variant)
        self.storage.slot = (buf.view, buf.address, config)
        return self.storage.slot


def _packer(head: Callable[..., None], kept: list[int], npos: int, descriptors: frozenset[int]) -> Callable[..., None]:
    """``pack(buf, at, *values)``: the runtime parameters' values into the buffer; a tensor descriptor's
    value is the tuple of its fields' values, spliced in (kernels without one keep the plain call)."""
    if descriptors:
        return lambda buf, at, *values: head(buf, at, *[x for i in kept for x in (values[i] if i in descriptors else (values[i],))])
    return head if len(kept) == npos else (lambda buf, at, *values: head(buf, at, *[values[i] for i in kept]))
