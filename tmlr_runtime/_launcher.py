"""Launching one kernel variant: a plan made once at load, one short function per call.

At load, :func:`plan` gives each positional parameter a code for the work its type needs per call
(a pointer, an int assumed divisible by 16, an i1, a bf16, a TMA descriptor, a constexpr or an
int specialized to 1 passed positionally); plain scalars get none, the packing ``struct``
converts and range-checks them. It also fixes the packed layout and, per thread on first use, the
storage and the ``void**`` into it, which each call only rewrites. Per call, a torch tensor on the
launch device with the recorded dtype is read inline, and everything else goes through the one
conversion routine, :func:`convert`, which also produces the typed errors.
"""
from __future__ import annotations

import functools
import math
import operator
import struct
import sys
import threading
from types import SimpleNamespace
from typing import Any, Callable, NamedTuple

from . import _driver, _grid, _pointers, _scratch, _stream
from ._errors import ArgumentCountError, ArgumentError, ConstexprMismatchError, ScalarArgumentError, TmlrError, short_repr
from ._metadata import Parameter, Variant
from ._modules import LoadedFunction
from ._packing import SCALAR_CODES, TMA_DESC_SIZE, ArgBuffer, Layout, bf16_bits, diagnose_scalar

_MISSING = object()
_POINTER = struct.Struct("<Q")
PTR, DIV16, BOOL, BF16, TMA, CONSTEXPR, ONE = range(7)  # per-argument codes


class _NoTorch:
    """Stands in for ``torch.Tensor`` when torch is not imported: no value has this type."""


def _equals(value: Any, expected: Any) -> bool:
    """``value == expected`` as a plain bool; False when the comparison raises or gives no truth
    value (a numpy array compares element-wise)."""
    try:
        return bool(value == expected)
    except Exception:
        return False


def check_constexpr(p: Parameter, value: Any) -> None:
    if not (_equals(value, p.value) and isinstance(value, bool) == isinstance(p.value, bool)):
        raise ConstexprMismatchError(
            f"constexpr {p.name!r} was compiled as {p.value!r}, got {short_repr(value)}; pass {p.value!r} (or omit it), "
            f"or rebuild with --constexpr {p.name}={short_repr(value)}",
            p.name,
        )


def tma_bytes(p: Parameter, value: Any) -> bytes:
    """The 128 bytes of a ``CUtensorMap`` given as bytes-like, a cuda-python CUtensorMap or a
    :class:`tmlr_runtime.TensorMap`."""
    fix = "build one with tmlr_runtime.make_tensor_map(tensor, block_shape)"
    try:
        data = getattr(value, "tensor_map_bytes", None)
        if data is None and getattr(value, "opaque", None) is not None:
            data = struct.pack("<16Q", *[int(x) for x in value.opaque])
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
    if len(data) != TMA_DESC_SIZE:
        raise ArgumentError(f"parameter {p.name!r} (nvTmaDesc) needs exactly 128 bytes, got {len(data)}; {fix}", p.name)
    return data


def convert(code: int, p: Parameter, value: Any, device: int, checks: bool) -> Any:
    """What parameter ``p`` (of per-argument ``code``) passes to the cubin for ``value``, or its
    typed error; constexprs and ints specialized to 1 are only checked."""
    if code == PTR:
        return _pointers.any_pointer(p, value, device, checks)
    if code == TMA:
        return tma_bytes(p, value)
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
            return 1 if value is True or _equals(value, 1) else 0
        if checks:
            raise ScalarArgumentError(f"parameter {p.name!r} (i1) needs True/False or 0/1, got {short_repr(value)}; pass a bool", p.name)
        try:
            return 1 if value else 0
        except Exception:  # no truth value (a numpy array)
            raise ScalarArgumentError(f"parameter {p.name!r} (i1) needs True/False or 0/1, got {short_repr(value)}; pass a bool", p.name) from None
    elif code == DIV16:
        err = diagnose_scalar(p, value)
        if err is not None:
            raise err
        if value.__index__() % 16:
            raise ScalarArgumentError(
                f"parameter {p.name!r} ({p.type}) = {value.__index__()} is not divisible by 16, but the kernel was built "
                "assuming it is (':16' in --signature) and would compute wrong results; pad the size to a multiple "
                "of 16 or rebuild without ':16' for it",
                p.name,
            )
    return value


def _code(p: Parameter, checks: bool) -> int | None:
    """The per-argument code of ``p``; None when its value goes to the struct as it is."""
    t = p.type or ""
    if p.kind != "runtime":
        return (CONSTEXPR if p.kind == "constexpr" else ONE) if checks else None
    if t[:1] == "*":
        return PTR
    if t in ("i1", "u1"):
        return BOOL
    if t == "bf16" or t == "nvTmaDesc":
        return BF16 if t == "bf16" else TMA
    if checks and p.divisibility == 16 and SCALAR_CODES[t][2] is not None:
        return DIV16
    return None


class Binder:
    """Maps ``(args, kwargs)`` onto the signature, for calls with keywords or another count."""

    def __init__(self, name: str, signature: tuple[Parameter, ...], npos: int) -> None:
        self.name, self.signature, self.npos = name, signature, npos
        self.index = {p.name: i for i, p in enumerate(signature)}

    def usage(self) -> str:
        def one(p: Parameter) -> str:
            if p.kind == "constexpr":
                return f"{p.name}={p.value!r}"
            return f"{p.name}: {p.type}" + (" (must be 1)" if p.kind == "equal_to_1" else "")

        return f"{self.name}[grid]({', '.join(map(one, self.signature))})"

    def bind(self, args: tuple[Any, ...], kwargs: dict[str, Any], checks: bool) -> tuple[Any, ...]:
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
            elif p.kind == "constexpr" and checks:
                check_constexpr(p, values[i])
        return tuple(values[: self.npos])

    def meta(self, values: tuple[Any, ...]) -> dict[str, Any]:
        """The dict a callable grid receives: every argument and constexpr by name."""
        out = {p.name: p.value for p in self.signature if p.kind == "constexpr"}
        out.update({p.name: v for p, v in zip(self.signature, values)})
        return out


def _failure(binder: Binder, pointers: Any, others: Any, args: tuple[Any, ...], device: int, checks: bool,
             exc: Exception) -> Exception:
    """The typed error naming the argument that made conversion or packing raise ``exc``."""
    for i, code, p in [*pointers, *others]:
        try:
            convert(code, p, args[i], device, checks)
        except TmlrError as err:
            return err
    for p, v in zip(binder.signature, args):
        if p.kind == "runtime" and p.type in SCALAR_CODES and diagnose_scalar(p, v) is not None:
            return diagnose_scalar(p, v)  # type: ignore[return-value]
    return ArgumentError(f"{binder.name}: arguments could not be packed ({exc}); call it as {binder.usage()}")


class Plan(NamedTuple):
    """What a launch reads, fixed at load for one variant in one context (unpacked at once per call)."""

    context: Any  # the CUcontext this plan was made for
    get_context: Callable[[], Any]  # cuCtxGetCurrent
    npos: int  # positional parameters: up to the last one that is not a constexpr
    max_x: int  # an int grid up to this needs no other check
    device: int
    current_stream: Callable[[int], int]  # the stream of a launch given none
    storage: Any  # .slot: (buffer, void** address, CUlaunchConfig); per thread when a call writes into it
    pointers: tuple[tuple[int, Parameter, Any, int], ...]  # (position, parameter, torch dtype or None, alignment mask)
    others: tuple[tuple[int, int, Parameter], ...]  # (position, code, parameter) of the other parameters with work
    div16: Callable[[list[Any]], Any] | None  # the ints assumed divisible by 16 (checks on), OR-ed together
    tensor: type  # torch.Tensor, read inline
    checks: bool
    pack: Callable[..., None]  # pack(buffer, 0, *positional values): the runtime parameters into the buffer
    launch: Callable[..., Any] | None  # cuLaunchKernel; None: global scratch or cuLaunchKernelEx, see _launch_special
    function: Any
    block: int
    shared: int
    rare: SimpleNamespace  # what only calls off the common path read


def plan(name: str, signature: tuple[Parameter, ...], variant: Variant, loaded: LoadedFunction, checks: bool) -> Plan:
    """The :class:`Plan` of launching ``variant`` loaded as ``loaded``."""
    drv, device = _driver.api(), loaded.device.ordinal
    npos = max((i + 1 for i, p in enumerate(signature) if p.kind != "constexpr"), default=0)
    layout = Layout.build(tuple(p for p in signature if p.kind == "runtime"), variant.hidden_params)
    torch = sys.modules.get("torch")
    work = [(i, code, p) for i, p in enumerate(signature[:npos]) for code in [_code(p, checks)] if code is not None]
    pointers = tuple((i, p, _pointers.torch_dtype(p) if checks else None, 15 if checks and p.divisibility == 16 else 0)
                     for i, code, p in work if code == PTR)
    kept = [i for i, p in enumerate(signature[:npos]) if p.kind == "runtime"]
    use_ex = variant.is_cluster_launch or variant.cooperative or variant.pdl
    scratch = variant.scratch_size > 0 and "global_scratch" in variant.hidden_params
    cluster = variant.cluster_dims
    rare = SimpleNamespace(
        div16=tuple(w for w in work if w[1] == DIV16),
        binder=Binder(name, signature, npos), max_grid=loaded.device.max_grid, cluster=cluster, what=f"launching {name}",
        launch=drv.cuLaunchKernel, launch_ex=drv.cuLaunchKernelEx if use_ex else None,
        scratch=(variant.scratch_size * max(variant.num_ctas, math.prod(cluster)), variant.scratch_align,
                 layout.offsets[layout.names.index("global_scratch")]) if scratch else None,
        alloc=_scratch.alloc, free=_scratch.free,
    )
    # per thread where a call writes into it; else one for all
    storage: Any = threading.local() if kept or scratch or use_ex else SimpleNamespace()
    rare.new_slot = functools.partial(_new_slot, storage, layout, drv, variant, use_ex)
    if not kept and not scratch and not use_ex:
        rare.new_slot()
    head = layout.head.pack_into  # the hidden pointers after them stay zero but for global scratch
    get_context = drv.cuCtxGetCurrent
    context = get_context()[1]  # this plan's context is current: compared by value per call, not by int()
    if get_context()[1] != context:  # bindings whose handles compare by identity: compare ints
        get_context, context = (lambda: (0, int(drv.cuCtxGetCurrent()[1]))), int(context)
    return Plan(
        context, get_context, npos, loaded.device.max_grid[0] // cluster[0], device,
        _stream.bind_torch() or _stream.default_stream,  # the latter sees torch imported later
        storage, pointers, tuple(w for w in work if w[1] not in (PTR, DIV16)), _or_of(rare.div16), torch.Tensor if torch is not None else _NoTorch, checks,
        head if len(kept) == npos else (lambda buf, at, *values: head(buf, at, *[values[i] for i in kept])),
        None if scratch or use_ex else drv.cuLaunchKernel, loaded.function, variant.threads_per_block, variant.shared, rare,
    )


def _or_of(work: tuple[tuple[int, int, Parameter], ...]) -> Callable[[list[Any]], Any] | None:
    """``values -> values[i] | values[j] | ...`` of the positions in ``work``, written in C: an
    itemgetter for one position, the common case."""
    if not work:
        return None
    if len(work) == 1:
        return operator.itemgetter(work[0][0])
    get = operator.itemgetter(*[w[0] for w in work])
    return lambda values: functools.reduce(operator.or_, get(values))


def _new_slot(storage: Any, layout: Layout, drv: Any, variant: Variant, use_ex: bool) -> tuple[memoryview, int, Any]:
    buf = ArgBuffer(layout)
    storage.buffer = buf  # its views hold the memory the void** points to
    storage.slot = (buf.view, buf.address, _launch_config(drv, variant) if use_ex else None)
    return storage.slot


def launch(kernel: Any, grid: Any, *args: Any, stream: Any = None, **kwargs: Any) -> None:
    """``kernel(grid, *args, stream=None, **kwargs)`` by the plan of the current context."""
    (context, get_context, npos, max_x, device, current_stream, storage, pointers, others, div16, tensor, checks, pack,
     launch_fn, function, block, shared, rare) = kernel._plan
    if get_context()[1] != context:  # another context is current: plan for it (once) and launch there
        kernel._bind_current()
        return launch(kernel, grid, *args, stream=stream, **kwargs)
    if kwargs or len(args) != npos:
        args = rare.binder.bind(args, kwargs, checks)
    if type(grid) is int and 0 < grid <= max_x:
        gx = grid
        gy = gz = 1
    else:
        gx, gy, gz = _grid.normalize(grid, rare.max_grid, rare.cluster, rare.binder.meta, args)
    if stream is None:
        stream = current_stream(device)
    elif type(stream) is not int or stream < 0 or stream >= 18446744073709551616:
        stream = _stream.stream_handle(stream)
    try:
        buf, kp, config = storage.slot
    except AttributeError:
        buf, kp, config = rare.new_slot()
    if npos:
        try:
            values = list(args)
            for i, p, dtype, mask in pointers:
                a = values[i]
                if type(a) is tensor and (not checks or a.get_device() == device and (a.dtype is dtype or dtype is None)):
                    values[i] = v = a.data_ptr()
                    if mask and v & mask:
                        convert(PTR, p, a, device, checks)  # raises: not aligned
                else:
                    values[i] = convert(PTR, p, a, device, checks)
            if others:
                for i, code, p in others:
                    values[i] = convert(code, p, values[i], device, checks)
            if div16 is not None and div16(values) & 15:  # an int assumed divisible by 16 is not
                raise _failure(rare.binder, rare.div16, (), args, device, checks, ValueError())
            pack(buf, 0, *values)
        except TmlrError:
            raise
        except Exception as e:  # name the argument (data_ptr() of a sparse tensor raises, so does the struct)
            raise _failure(rare.binder, [(i, PTR, p) for i, p, _, _ in pointers], others + rare.div16, args, device, checks, e) from None
    if launch_fn is None:
        r = _launch_special(rare, function, block, shared, buf, kp, config, gx, gy, gz, stream)
    else:
        r = launch_fn(function, gx, gy, gz, block, 1, 1, shared, stream, kp, 0)
    if r[0]:
        raise _driver.DriverError(_driver.error_message(int(r[0]), rare.what), _driver.error_name(int(r[0])))


def _launch_special(rare: SimpleNamespace, function: Any, block: int, shared: int, buf: Any, kp: int, config: Any,
                    gx: int, gy: int, gz: int, stream: int) -> Any:
    """A launch with global scratch (allocated for the grid, freed whatever the launch does) or
    through ``cuLaunchKernelEx`` (clusters, cooperative, PDL)."""
    if rare.scratch is not None:
        per_program, align, offset = rare.scratch
        address, raw = rare.alloc(gx * gy * gz * per_program, align, stream)
    try:
        if rare.scratch is not None:
            _POINTER.pack_into(buf, offset, address)
        if rare.launch_ex is None:
            return rare.launch(function, gx, gy, gz, block, 1, 1, shared, stream, kp, 0)
        cx, cy, cz = rare.cluster
        config.gridDimX, config.gridDimY, config.gridDimZ, config.hStream = gx * cx, gy * cy, gz * cz, stream
        return rare.launch_ex(config, function, kp, 0)
    finally:
        if rare.scratch is not None:
            rare.free(raw, stream)


def _launch_config(drv: Any, variant: Variant) -> Any:
    """A ``CUlaunchConfig`` with the variant's block, shared memory and launch attributes (one per
    thread: grid and stream are written per launch)."""
    config = drv.CUlaunchConfig()
    config.blockDimX, config.blockDimY, config.blockDimZ = variant.threads_per_block, 1, 1
    config.sharedMemBytes = variant.shared
    A, attrs = drv.CUlaunchAttributeID, []

    def value(attr_id: Any) -> Any:
        a = drv.CUlaunchAttribute()
        a.id = attr_id
        attrs.append(a)
        return a.value

    if variant.is_cluster_launch:
        v = value(A.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
        v.clusterDim.x, v.clusterDim.y, v.clusterDim.z = variant.cluster_dims
        v = value(A.CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE)
        v.clusterSchedulingPolicyPreference = drv.CUclusterSchedulingPolicy.CU_CLUSTER_SCHEDULING_POLICY_SPREAD
    if variant.cooperative:
        value(A.CU_LAUNCH_ATTRIBUTE_COOPERATIVE).cooperative = 1
    if variant.pdl:
        value(A.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION).programmaticStreamSerializationAllowed = 1
    config.attrs = attrs
    config.numAttrs = len(attrs)
    return config
