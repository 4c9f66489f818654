"""Launching one variant in one context: a plan made once at load, one short function per call.

1. At load, :func:`plan` gives each positional parameter a code for the work its type needs per
   call (as Inductor's static launcher does): a pointer, an int assumed divisible by 16, an i1, a
   bf16, a TMA descriptor, a tensor descriptor, a constexpr or an int specialized to 1. Plain
   scalars get none: the packing ``struct`` converts and range-checks them. A tensor descriptor
   (``tensordesc``) fills several slots, those its recorded ``fields`` name (:func:`param_slots`).
2. The plan fixes the packed layout; each thread that launches gets its argument storage and the
   ``void**`` into it once (:class:`ArgBuffer`), and a call only rewrites the values
   (as tinygrad's ops_cuda does).
3. :func:`launch` (``Kernel.__call__``) reads torch tensors on the launch device and checks ints
   assumed divisible by 16 inline, sends every other argument with work through :func:`convert`,
   the one conversion routine, which also makes the typed errors, packs the values with one
   ``pack_into`` and calls ``cuLaunchKernel``.
4. What a common call never needs (keywords, other grids, global scratch, ``cuLaunchKernelEx``, a
   thread's first launch, errors) lives in :class:`Slow`.
"""
from __future__ import annotations

import ctypes
import functools
import math
import operator
import struct
import sys
import threading
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any
from .. import driver
from .convert import DIV16, PTR, TENSORDESC, check_constexpr, code, convert, diagnose_scalar, stream_getter, stream_handle, torch_dtype
from ..errors import ArgumentCountError, ArgumentError, GridError, TmlrError, short_repr
from ..artifact.metadata import Variant
from .modules import LoadedFunction
from ..abi import PER_DIM_FIELDS, SCALAR_TYPES, SINGLE_FIELDS, TMA_DESC, TYPES, Parameter, TritonType

_MISSING = object()
_NoTorch = type("NoTorch", (), {})  # stands in for torch.Tensor when torch is not imported: no value has this type
_POINTER_TYPE = TritonType("*", "Q", 8, 8, None, None, (), None, None, False, False)  # how any pointer is passed
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
        return cls(names, tuple(offsets), sizes, max(offset + 8 * len(hidden_params), 1), _struct(fmt))


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


class Slow:
    """What a launch reads only off its common path: keywords, other grids, global scratch,
    ``cuLaunchKernelEx``, a thread's first launch, errors."""

    def __init__(self, name: str, signature: tuple[Parameter, ...], variant: Variant, loaded: LoadedFunction, checks: bool) -> None:
        self.name, self.signature, self.variant, self.checks = name, signature, variant, checks
        npos = len(signature)
        while npos and signature[npos - 1].kind == "constexpr":
            npos -= 1
        self.npos = npos  # positional parameters: up to the last one that is not a constexpr
        self.work: list[tuple[int, int, Parameter]] = []  # (position, code, parameter) of each positional one with work
        self.kept: list[int] = []  # the positions of the runtime parameters, which the cubin takes
        for i, p in enumerate(signature[:npos]):
            if (c := code(p, checks)) is not None:
                self.work.append((i, c, p))
            if p.kind == "runtime":
                self.kept.append(i)
        self.device, self.max_grid, self.cluster = loaded.device.ordinal, loaded.device.max_grid, variant.cluster_dims
        self.layout = Layout.build(tuple([signature[i] for i in self.kept]), variant.hidden_params)
        self.drv, self.function, self.what = driver.api(), loaded.function, f"launching {name}"
        self.use_ex = variant.is_cluster_launch or variant.cooperative or variant.pdl
        self.scratch = None
        if variant.scratch_size > 0 and "global_scratch" in variant.hidden_params:
            self.scratch = (variant.scratch_size * max(variant.num_ctas, math.prod(self.cluster)), variant.scratch_align,
                            self.layout.offsets[self.layout.names.index("global_scratch")])
        self.alloc, self.free = scratch_alloc, scratch_free
        # .slot: (buffer, void** address, CUlaunchConfig), one per thread where a launch writes into
        # them, else one for all
        self.storage: Any = threading.local() if self.layout.head.size or self.scratch or self.use_ex else SimpleNamespace()
        if isinstance(self.storage, SimpleNamespace):
            self.new_slot()

    @functools.cached_property
    def index(self) -> dict[str, int]:
        return {p.name: i for i, p in enumerate(self.signature)}

    def usage(self) -> str:
        def one(p: Parameter) -> str:
            if p.kind == "constexpr":
                return f"{p.name}={p.value!r}"
            return f"{p.name}: {p.type}" + (" (must be 1)" if p.kind == "equal_to_1" else "")

        return f"{self.name}[grid]({', '.join(map(one, self.signature))})"

    def bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
        """The positional values of a call with keywords, or another count of arguments."""
        sig, name = self.signature, self.name
        if len(args) > len(sig):
            raise ArgumentCountError(f"{name}: takes {self.npos} positional arguments (up to {len(sig)} with constexprs), got {len(args)}; call it as {self.usage()}")
        values: list[Any] = list(args) + [_MISSING] * (len(sig) - len(args))
        for key, value in kwargs.items():
            i = self.index.get(key)
            if i is None:
                raise ArgumentCountError(f"{name}: unknown argument {key!r}; call it as {self.usage()}", key)
            if values[i] is not _MISSING:
                raise ArgumentCountError(f"{name}: argument {key!r} given twice (by position and by keyword); pass it once", key)
            values[i] = value
        missing = [p.name for p, v in zip(sig, values) if v is _MISSING and p.kind != "constexpr"]
        if missing:
            raise ArgumentCountError(f"{name}: missing argument{'s' if len(missing) > 1 else ''} {', '.join(map(repr, missing))} "
                                     f"(got {len(args)} positional); call it as {self.usage()}", missing[0])
        for i, p in enumerate(sig):
            if p.kind == "constexpr" and values[i] is _MISSING:
                values[i] = p.value
            elif p.kind == "constexpr" and self.checks:
                check_constexpr(p, values[i])
        return tuple(values[: self.npos])

    def meta(self, values: tuple[Any, ...]) -> dict[str, Any]:
        """The dict a callable grid receives: every argument and constexpr by name."""
        return {**{p.name: p.value for p in self.signature if p.kind == "constexpr"}, **dict(zip(self.index, values))}

    def new_slot(self) -> tuple[memoryview, int, Any]:
        buf = ArgBuffer(self.layout)
        self.storage.buffer = buf  # its views hold the memory the void** points to
        self.storage.slot = (buf.view, buf.address, _launch_config(self.drv, self.variant) if self.use_ex else None)
        return self.storage.slot

    def error(self, args: tuple[Any, ...], exc: Exception | None) -> Exception:
        """The typed error naming the argument that made conversion or packing fail (raise ``exc``)."""
        for i, c, p in self.work:
            try:
                convert(c, p, args[i], self.device, self.checks)
            except TmlrError as err:
                return err
        for p, v in zip(self.signature, args):
            err = diagnose_scalar(p, v) if p.kind == "runtime" and p.type in SCALAR_TYPES else None
            if err is not None:
                return err
        return ArgumentError(f"{self.name}: arguments could not be packed ({exc}); call it as {self.usage()}")

    def convert_rest(self, values: list[Any], args: tuple[Any, ...]) -> None:
        """What a launch converts off its common path, in its ``values`` (position + 2): i1, bf16,
        TMA descriptors, constexprs and ints specialized to 1 passed by position, and the ints
        assumed divisible by 16 after the first."""
        for i, c, p in self.work:
            if c == DIV16 and values[i + 2] % 16:
                raise self.error(args, None)
            if c != PTR and c != DIV16:
                values[i + 2] = convert(c, p, values[i + 2], self.device, self.checks)

    def grid3(self, grid: Any, args: tuple[Any, ...]) -> tuple[int, int, int]:
        """``grid`` (an int, 1 to 3 ints, or a callable given :meth:`meta`) as ``(x, y, z)`` programs;
        raises :class:`GridError` unless they fit the device, the cluster multiplied in."""
        if callable(grid):
            try:
                grid = grid(self.meta(args))
            except GridError:
                raise
            except Exception as e:
                raise GridError(f"the grid callable raised {type(e).__name__}: {e}; it receives a dict of the kernel's arguments and constexprs by name") from e
        if isinstance(grid, (tuple, list)):
            if not 1 <= len(grid) <= 3:
                raise GridError(f"grid must have 1 to 3 dimensions, got {len(grid)}: {short_repr(tuple(grid))}; pass (x,), (x, y) or (x, y, z)")
            dims = [_axis(v, i) for i, v in enumerate(grid)] + [1] * (3 - len(grid))
        else:
            dims = [_axis(grid, 0), 1, 1]
        for i, (v, c, lim) in enumerate(zip(dims, self.cluster, self.max_grid)):
            if v < 1:
                raise GridError(f"grid[{i}] is {short_repr(v)}; every grid dimension must be >= 1 - skip the launch when there is no work")
            if v * c > lim:
                extra = f" ({short_repr(v)} programs x cluster {c})" if c > 1 else ""
                raise GridError(f"grid[{i}] = {short_repr(v * c)}{extra} exceeds this device's limit of {lim}; split the work or fold it into another grid axis")
        return dims[0], dims[1], dims[2]

    def launch(self, grid: Any, args: tuple[Any, ...], buf: Any, kp: int, config: Any, stream: int) -> Any:
        """A launch on any grid but an int in range, with global scratch (allocated for the grid,
        freed whatever the launch does), or through ``cuLaunchKernelEx`` (clusters, cooperative, PDL)."""
        if type(grid) is tuple and len(grid) == 1 and type(grid[0]) is int and 0 < grid[0] * self.cluster[0] <= self.max_grid[0]:
            gx, gy, gz = grid[0], 1, 1  # (n,): the common form after an int
        else:
            gx, gy, gz = self.grid3(grid, args)
        if self.scratch is not None:
            per_program, align, offset = self.scratch
            address, raw = self.alloc(gx * gy * gz * per_program, align, stream)
        try:
            if self.scratch is not None:
                struct.pack_into("<Q", buf, offset, address)
            if not self.use_ex:
                v = self.variant
                return self.drv.cuLaunchKernel(self.function, gx, gy, gz, v.threads_per_block, 1, 1, v.shared, stream, kp, 0)
            cx, cy, cz = self.cluster
            config.gridDimX, config.gridDimY, config.gridDimZ, config.hStream = gx * cx, gy * cy, gz * cz, stream
            return self.drv.cuLaunchKernelEx(config, self.function, kp, 0)
        finally:
            if self.scratch is not None:
                self.free(raw, stream)


def _axis(v: Any, i: int) -> int:
    if not isinstance(v, bool):
        try:
            return operator.index(v)
        except Exception:  # no __index__, or one that fails (a numpy array, a tensor of several elements)
            pass
    raise GridError(f"grid[{i}] must be an int, got {type(v).__name__} {short_repr(v)}; use math.ceil / triton.cdiv-style integer division")


# Global scratch (device-side TMA descriptors and the like) is allocated per launch with
# cuMemAllocAsync on the launch stream and freed with cuMemFreeAsync right after it: stream-ordered,
# so no synchronisation, correct on several streams, and allocation/free nodes under graph capture.
_POOL_ALIGN = 256  # memory-pool allocations are at least this aligned; larger alignments over-allocate


def scratch_alloc(nbytes: int, align: int, stream: int) -> tuple[int, int]:
    """``(aligned address, raw address)`` of ``nbytes`` of stream-ordered device memory."""
    extra = align - 1 if align > _POOL_ALIGN else 0
    raw = int(driver.check(driver.api().cuMemAllocAsync(nbytes + extra, stream), "cuMemAllocAsync (global scratch)"))
    return raw + (-raw % align), raw


def scratch_free(raw: int, stream: int) -> None:
    driver.check(driver.api().cuMemFreeAsync(raw, stream), "cuMemFreeAsync (global scratch)")


def plan(name: str, signature: tuple[Parameter, ...], variant: Variant, loaded: LoadedFunction, checks: bool) -> tuple[Any, ...]:
    """What a launch of ``variant`` as ``loaded`` reads, fixed at load, in the context current now: a
    plain tuple, which :func:`launch` unpacks in one step (CPython's fast unpacking is for exact
    tuples). Where a launch finds an argument is its position + 2 (see :func:`launch`)."""
    slow = Slow(name, signature, variant, loaded, checks)
    drv = slow.drv
    pointers = []  # checks on: (where, torch dtype, 16 if it must be 16-byte aligned else 1)
    unchecked = []  # checks=False: where the pointers are
    div16 = []  # where the ints are that must be multiples of 16
    for i, c, p in slow.work:
        if c == PTR and checks:
            pointers.append((i + 2, torch_dtype(p), 16 if p.divisibility == 16 else 1))
        elif c == PTR or c == DIV16:
            (unchecked if c == PTR else div16).append(i + 2)
    kept = slow.kept
    head = slow.layout.head.pack_into  # the hidden pointers after them stay zero but for global scratch
    get_context = drv.cuCtxGetCurrent
    context = get_context()[1]  # compared by value with the current one at each launch
    if get_context()[1] != context:  # bindings whose handles compare by identity: compare ints
        get_context, context = (lambda: (0, int(drv.cuCtxGetCurrent()[1]))), int(context)
    torch = sys.modules.get("torch")
    return (
        context, get_context, slow.npos, slow.device, stream_getter(), slow.storage, tuple(pointers), tuple(unchecked),
        div16[0] if div16 else 0,  # the first apart: a loop costs more
        len(div16) > 1 or len(pointers) + len(unchecked) + len(div16) < len(slow.work),  # Slow.convert_rest has work
        torch.Tensor if torch is not None else _NoTorch,
        _packer(head, kept, slow.npos, [i for i, c, _ in slow.work if c == TENSORDESC]),
        0 if slow.scratch or slow.use_ex else loaded.device.max_grid[0],  # an int grid up to this: cuLaunchKernel here
        drv.cuLaunchKernel, slow.function, variant.threads_per_block, variant.shared, slow)


def _packer(head: Any, kept: list[int], npos: int, descriptors: Any) -> Any:
    """``pack(buf, at, *values)``: the runtime parameters' values into the buffer; a tensor descriptor's
    value is the tuple of its fields' values, spliced in (kernels without one keep the plain call)."""
    if descriptors:
        descriptors = frozenset(descriptors)  # looked up once per runtime parameter per call
        return lambda buf, at, *values: head(buf, at, *[x for i in kept for x in (values[i] if i in descriptors else (values[i],))])
    return head if len(kept) == npos else (lambda buf, at, *values: head(buf, at, *[values[i] for i in kept]))


def launch(kernel: Any, grid: Any, *args: Any, stream: Any = None, **kwargs: Any) -> None:
    """``kernel(grid, *args, stream=None, **kwargs)``, by the plan of the current context."""
    (context, get_context, npos, device, current_stream, storage, pointers, unchecked, div16, rest, tensor, pack, max_x,
     launch_fn, function, block, shared, slow) = kernel._plan
    if get_context()[1] != context:  # another context is current: plan for it (once) and launch there
        kernel._bind_current()
        return launch(kernel, grid, *args, stream=stream, **kwargs)
    if kwargs or len(args) != npos:
        args = slow.bind(args, kwargs)
    if stream is None:
        stream = current_stream(device)
    elif type(stream) is not int or stream < 0 or stream >= 18446744073709551616:
        stream = stream_handle(stream)
    try:
        buf, kp, config = storage.slot
    except AttributeError:  # this thread's first launch
        buf, kp, config = slow.new_slot()
    if npos:
        try:
            values = [buf, 0, *args]  # pack_into's first arguments too: pack(*values) then copies once
            for i, dtype, mask in pointers:
                a = values[i]
                if type(a) is tensor and a.get_device() == device and a.dtype is dtype:
                    values[i] = v = a.data_ptr()
                    if v % mask:
                        raise slow.error(args, None)
                else:
                    values[i] = convert(PTR, slow.signature[i - 2], a, device, True)
            if unchecked:  # checks=False (a loop over an empty tuple still makes an iterator)
                for i in unchecked:
                    a = values[i]
                    values[i] = a.data_ptr() if type(a) is tensor else convert(PTR, slow.signature[i - 2], a, device, False)
            if div16 and values[div16] % 16:
                raise slow.error(args, None)
            if rest:
                slow.convert_rest(values, args)
            pack(*values)
        except TmlrError:
            raise
        except Exception as e:  # name the argument: data_ptr() of a sparse tensor raises, so does the struct
            raise slow.error(args, e) from None
    if type(grid) is int and grid > 0 and grid <= max_x:
        r = launch_fn(function, grid, 1, 1, block, 1, 1, shared, stream, kp, 0)
    else:
        r = slow.launch(grid, args, buf, kp, config, stream)
    if r[0]:
        driver.check(r, slow.what)  # raises


def _launch_config(drv: Any, variant: Variant) -> Any:
    """A ``CUlaunchConfig`` with the variant's block, shared memory and launch attributes (one per
    thread: grid and stream are written per launch)."""
    config = drv.CUlaunchConfig()
    config.blockDimX, config.blockDimY, config.blockDimZ = variant.threads_per_block, 1, 1
    config.sharedMemBytes = variant.shared
    A, attrs = drv.CUlaunchAttributeID, []

    def value(attr_id: Any) -> Any:
        attrs.append(drv.CUlaunchAttribute())
        attrs[-1].id = attr_id
        return attrs[-1].value

    if variant.is_cluster_launch:
        v = value(A.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
        v.clusterDim.x, v.clusterDim.y, v.clusterDim.z = variant.cluster_dims
        v = value(A.CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE)
        v.clusterSchedulingPolicyPreference = drv.CUclusterSchedulingPolicy.CU_CLUSTER_SCHEDULING_POLICY_SPREAD
    if variant.cooperative:
        value(A.CU_LAUNCH_ATTRIBUTE_COOPERATIVE).cooperative = 1
    if variant.pdl:
        value(A.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION).programmaticStreamSerializationAllowed = 1
    config.attrs, config.numAttrs = attrs, len(attrs)
    return config
