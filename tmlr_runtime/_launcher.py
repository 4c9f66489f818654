"""The per-variant launch function, built once at load time from code compiled with this module.

The hot path is a closure over everything fixed at load: the device, function handle, launch
entry point, block, shared memory and grid limits, the packing ``struct`` and, per parameter that
needs work, one entry of a small op list (a torch tensor's device/dtype/alignment checks, a
divisibility check, a conversion such as bf16 bits). Plain scalars pass straight to one
``struct.pack_into`` into a per-thread buffer prepared on first use, and the driver gets the
address of its prepared ``void**``. Nothing is parsed or compiled at load (``compile()`` of a
generated launcher cost more than everything else in ``Kernel.load`` together), and nothing on the
hot path allocates except the argument tuple and the scratch memory a kernel asks for. A kernel
without parameters (only constexprs) gets a launcher with a constant parameter buffer: no packing
and no per-thread state. Anything unusual (keywords, a callable grid, a non-torch pointer, a failed
check) leaves the fast path for a helper that explains the problem.
"""
from __future__ import annotations

import struct
import sys
import threading
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any, Callable

from . import _grid, _pointers, _scratch, _stream
from ._errors import (
    ArgumentCountError,
    ArgumentError,
    ConstexprMismatchError,
    GridError,
    ScalarArgumentError,
    TmlrError,
    short_repr,
)
from ._metadata import Parameter, Variant
from ._packing import SCALAR_CODES, TMA_DESC_SIZE, ArgBuffer, Layout, bf16_bits, diagnose_scalar

_MISSING = object()


@dataclass
class LaunchTarget:
    """What a generated launcher needs to know about the device, function and driver entry points.

    ``launch`` is ``cuLaunchKernel``-shaped, ``launch_ex`` ``cuLaunchKernelEx``-shaped; tests
    pass recorders instead of the driver's.
    """

    device: int
    max_grid: tuple[int, int, int]
    function: Any
    launch: Callable[..., Any]
    launch_ex: Callable[..., Any] | None = None
    make_config: Callable[[], Any] | None = None  # a per-thread CUlaunchConfig with attributes set
    on_error: Callable[[Any, str], Exception] = field(default=lambda code, what: RuntimeError(f"{what}: {code}"))


def _positional_count(signature: tuple[Parameter, ...]) -> int:
    """Parameters up to the last non-constexpr one: what a plain positional call passes."""
    last = -1
    for i, p in enumerate(signature):
        if p.kind != "constexpr":
            last = i
    return last + 1


class ArgumentBinder:
    """Maps ``(args, kwargs)`` onto the signature for calls that leave the fast path."""

    def __init__(self, name: str, signature: tuple[Parameter, ...], npos: int) -> None:
        self.name = name
        self.signature = signature
        self.npos = npos
        self._index = {p.name: i for i, p in enumerate(signature)}

    def usage(self) -> str:
        parts = []
        for p in self.signature:
            if p.kind == "constexpr":
                parts.append(f"{p.name}={p.value!r}")
            elif p.kind == "equal_to_1":
                parts.append(f"{p.name}: {p.type} (must be 1)")
            else:
                parts.append(f"{p.name}: {p.type}")
        return f"{self.name}[grid]({', '.join(parts)})"

    def bind(self, args: tuple[Any, ...], kwargs: dict[str, Any], checks: bool) -> tuple[Any, ...]:
        sig = self.signature
        if len(args) > len(sig):
            raise ArgumentCountError(f"{self.name}: takes {self.npos} positional arguments (up to {len(sig)} with constexprs), got {len(args)}; call it as {self.usage()}")
        values: list[Any] = list(args) + [_MISSING] * (len(sig) - len(args))
        for key, value in kwargs.items():
            i = self._index.get(key)
            if i is None:
                raise ArgumentCountError(f"{self.name}: unknown argument {key!r}; call it as {self.usage()}", key)
            if values[i] is not _MISSING:
                raise ArgumentCountError(f"{self.name}: argument {key!r} given twice (by position and by keyword); pass it once", key)
            values[i] = value
        missing = [p.name for p, v in zip(sig, values) if v is _MISSING and p.kind != "constexpr"]
        if missing:
            raise ArgumentCountError(
                f"{self.name}: missing argument{'s' if len(missing) > 1 else ''} {', '.join(map(repr, missing))} "
                f"(got {len(args)} positional); call it as {self.usage()}",
                missing[0],
            )
        for i, p in enumerate(sig):
            if p.kind == "constexpr":
                if values[i] is _MISSING:
                    values[i] = p.value
                elif checks:
                    check_constexpr(p, values[i])
        return tuple(values[: self.npos])

    def meta(self, values: tuple[Any, ...]) -> dict[str, Any]:
        """The dict a callable grid receives: every argument and constexpr by name."""
        out = {p.name: p.value for p in self.signature if p.kind == "constexpr"}
        out.update({p.name: v for p, v in zip(self.signature, values)})
        return out


def _equals(value: Any, expected: Any) -> bool:
    """``value == expected`` as a plain bool; False when the comparison raises or is not a truth
    value (a numpy array compares element-wise)."""
    try:
        return bool(value == expected)
    except Exception:
        return False


def check_constexpr(p: Parameter, value: Any) -> None:
    same = _equals(value, p.value) and isinstance(value, bool) == isinstance(p.value, bool)
    if not same:
        raise ConstexprMismatchError(
            f"constexpr {p.name!r} was compiled as {p.value!r}, got {short_repr(value)}; pass {p.value!r} (or omit it), "
            f"or rebuild with --constexpr {p.name}={short_repr(value)}",
            p.name,
        )


def check_equal_to_1(p: Parameter, value: Any) -> None:
    if not (_equals(value, 1) and not isinstance(value, float)):
        raise ScalarArgumentError(
            f"parameter {p.name!r} ({p.type}) was specialized to 1 at build time (removed from the cubin), "
            f"got {short_repr(value)}; pass 1, or rebuild without ':1' for it in --signature",
            p.name,
        )


def check_divisible(p: Parameter, value: Any) -> None:
    err = diagnose_scalar(p, value)
    if err is not None:
        raise err
    v = value.__index__()
    if v % 16:
        raise ScalarArgumentError(
            f"parameter {p.name!r} ({p.type}) = {v} is not divisible by 16, but the kernel was built "
            "assuming it is (':16' in --signature) and would compute wrong results; pad the size to a multiple "
            "of 16 or rebuild without ':16' for it",
            p.name,
        )


def check_bool(p: Parameter, value: Any) -> None:
    if not (value is True or value is False or (not isinstance(value, float) and (_equals(value, 0) or _equals(value, 1)))):
        raise ScalarArgumentError(f"parameter {p.name!r} (i1) needs True/False or 0/1, got {short_repr(value)}; pass a bool", p.name)


def tma_bytes(p: Parameter, value: Any) -> bytes:
    """The 128 bytes of a ``CUtensorMap`` given as bytes-like, a cuda-python CUtensorMap or a
    :class:`tmlr_runtime.TensorMap`."""
    fix = "build one with tmlr_runtime.make_tensor_map(tensor, block_shape)"
    try:
        data = getattr(value, "tensor_map_bytes", None)
        if data is None:
            opaque = getattr(value, "opaque", None)
            if opaque is not None:
                data = struct.pack("<16Q", *[int(x) for x in opaque])
            elif isinstance(value, (bytes, bytearray, memoryview)):
                data = bytes(value)
            else:
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


def diagnose(binder: ArgumentBinder, values: tuple[Any, ...], exc: BaseException) -> Exception:
    """Turn a failed ``pack_into`` into an error that names the parameter."""
    for p, v in zip(binder.signature, values):
        if p.kind == "runtime" and p.type in SCALAR_CODES:
            err = diagnose_scalar(p, v)
            if err is not None:
                return err
    return ArgumentError(f"{binder.name}: arguments could not be packed ({exc}); call it as {binder.usage()}")


# kinds of per-parameter work on the hot path (entries of the op list)
_PTR, _PTR_NOCHECK, _DIV16, _CONVERT, _CHECK = range(5)

# A launcher converts arguments with a loop over its op list until it has been called this many
# times, then with a function generated for its signature (see _specialize). Compiling that takes
# 0.1-0.5 ms on a CPU machine, about what the loop loses (~0.1 us per pointer argument) in this
# many launches: only kernels launched that often pay for it, and loading never does (compiling a
# whole generated launcher at load was most of the first load). 0 or less: generate at once (for
# tests of that path).
TIER_UP_CALLS = 1000


def _convert_bool(p: Parameter, value: Any) -> int:
    try:
        return 1 if value else 0
    except Exception:  # no truth value (a numpy array): say so as the checked path would
        check_bool(p, value)
        return 1 if _equals(value, 1) else 0


def _convert_bool_checked(p: Parameter, value: Any) -> int:
    if value is not True and value is not False:
        check_bool(p, value)
    return 1 if value else 0


def _convert_bf16(p: Parameter, value: Any) -> int:
    try:
        return bf16_bits(value)
    except Exception as e:
        raise diagnose_scalar(p, value) or ScalarArgumentError(f"parameter {p.name!r} (bf16): {e}", p.name) from None


def _check_constexpr(p: Parameter, value: Any) -> None:
    # type() first: == on an arbitrary object may raise or give no truth value (a numpy array)
    if value is not p.value and (type(value) is not type(p.value) or value != p.value):
        check_constexpr(p, value)


def _check_equal_to_1(p: Parameter, value: Any) -> None:
    if value is not True and (type(value) is not int or value != 1):
        check_equal_to_1(p, value)


_Op = tuple[int, int, Parameter, Any]  # (position, kind, parameter, torch dtype or function)


def _plan(signature: tuple[Parameter, ...], npos: int, checks: bool) -> tuple[tuple[_Op, ...], tuple[int, ...]]:
    """``(ops, kept)`` for the positional parameters: the work each needs per call, and the
    positions whose values the cubin takes (constexprs and ints specialized to 1 are dropped)."""
    ops: list[_Op] = []
    kept: list[int] = []
    for i, p in enumerate(signature[:npos]):
        kind = p.kind
        if kind == "constexpr":
            if checks:
                ops.append((i, _CHECK, p, _check_constexpr))
            continue
        if kind == "equal_to_1":
            if checks:
                ops.append((i, _CHECK, p, _check_equal_to_1))
            continue
        kept.append(i)
        t = p.type or ""
        if t[:1] == "*":
            ops.append((i, _PTR, p, _pointers.torch_dtype(p)) if checks else (i, _PTR_NOCHECK, p, None))
        elif t == "nvTmaDesc":
            ops.append((i, _CONVERT, p, tma_bytes))
        elif t == "i1" or t == "u1":
            ops.append((i, _CONVERT, p, _convert_bool_checked if checks else _convert_bool))
        elif t == "bf16":
            ops.append((i, _CONVERT, p, _convert_bf16))
        elif checks and p.divisibility == 16 and SCALAR_CODES[t][2] is not None:
            ops.append((i, _DIV16, p, None))
        # else: a plain scalar, packed as is (the struct converts and range-checks it)
    return tuple(ops), tuple(kept)


def _keeper(kept: tuple[int, ...], npos: int) -> Callable[[Any], Any] | None:
    """Picks the packed values out of the positional ones; None when all are packed."""
    if len(kept) == npos:
        return None
    if len(kept) > 1:
        return itemgetter(*kept)
    if kept:  # itemgetter of one index gives the value, not a 1-tuple
        k = kept[0]
        return lambda values: (values[k],)
    return lambda values: ()


_STRUCT_ERRORS = Exception  # struct's own errors, and whatever a value's __index__/__float__ raises
_SCRATCH_POINTER = struct.Struct("<Q")
_SPECIALIZED: dict[tuple[Any, ...], tuple[Callable[..., Any], str]] = {}  # shape -> (factory, source)


def _specialize(
    ops: tuple[_Op, ...], kept: tuple[int, ...], npos: int, device: int, tensor: type, pack: Callable[..., None], fail: Callable[..., None]
) -> Callable[[tuple[Any, ...], Any], None]:
    """``convert(args, buf)``: what the op loop does, written out for this signature: checks and
    converts ``args`` and packs the values into ``buf`` (``fail(args, error)`` when that fails).

    Compiled once per process for each shape (positions and kinds of work, not names or values),
    which the constants of one kernel are then bound into.
    """
    shape = (npos, kept, tuple((i, kind, kind == _PTR and extra is not None, kind == _PTR and p.divisibility == 16)
                               for i, kind, p, extra in ops))
    hit = _SPECIALIZED.get(shape)
    if hit is None:
        consts, lines = ["T", "dev", "anyp", "cdiv", "pack", "fail", "E"], []
        out = {i: f"a{i}" for i in kept}
        for i, kind, p, extra in ops:
            a, v = f"a{i}", f"v{i}"
            consts.append(f"P{i}")
            if kind == _PTR:
                cond = f"type({a}) is T and {a}.get_device() == dev"
                if extra is not None:
                    consts.append(f"D{i}")
                    cond += f" and {a}.dtype is D{i}"
                lines.append(f"{v} = {a}.data_ptr() if {cond} else anyp(P{i}, {a}, dev, True)")
                if p.divisibility == 16:
                    lines.append(f"if {v} & 15: anyp(P{i}, {a}, dev, True)")
                out[i] = v
            elif kind == _PTR_NOCHECK:
                lines.append(f"{v} = {a}.data_ptr() if type({a}) is T else anyp(P{i}, {a}, dev, False)")
                out[i] = v
            elif kind == _DIV16:
                lines.append(f"if type({a}) is not int or {a} & 15: cdiv(P{i}, {a})")
            else:
                consts.append(f"F{i}")
                lines.append(f"{v} = F{i}(P{i}, {a})" if kind == _CONVERT else f"F{i}(P{i}, {a})")
                if kind == _CONVERT:
                    out[i] = v
        names = [f"a{i}" for i in range(npos)]
        packed = "".join(", " + out[i] for i in kept)
        body = [f"{', '.join(names)}, = args", *lines, "try:", f"    pack(buf, 0{packed})", "except E as e:", "    fail(args, e)"]
        source = f"def factory({', '.join(consts)}):\n    def convert(args, buf):\n" + "".join(f"        {line}\n" for line in body) + "    return convert\n"
        ns: dict[str, Any] = {}
        exec(compile(source, f"<tmlr converter {npos} args>", "exec"), ns)
        hit = _SPECIALIZED[shape] = (ns["factory"], source)
    factory, source = hit
    values: list[Any] = [tensor, device, _pointers.any_pointer, check_divisible, pack, fail, _STRUCT_ERRORS]
    for _, kind, p, extra in ops:
        values.append(p)
        if extra is not None:
            values.append(extra)
    convert = factory(*values)
    convert.__tmlr_source__ = source
    return convert


def build(
    name: str,
    signature: tuple[Parameter, ...],
    variant: Variant,
    target: LaunchTarget,
    checks: bool,
    context: tuple[int, Callable[[], Any], Callable[..., Any]] | None = None,
) -> Callable[..., None]:
    """``call(grid, *args, stream=None, **kwargs)`` for one variant on one device.

    ``context``: ``(handle, cuCtxGetCurrent, other)``: every call first checks that the context
    ``handle`` is current and otherwise hands ``(grid, args, kwargs, stream)`` to ``other``
    (the :class:`Kernel` binds the current context there); None skips that check.
    """
    npos = _positional_count(signature)
    runtime = tuple(p for p in signature if p.kind == "runtime")
    layout = Layout.build(runtime, variant.hidden_params)
    device = target.device
    cx, cy, cz = cluster = variant.cluster_dims
    max_grid = target.max_grid
    mx, my, mz = max_grid[0] // cx, max_grid[1] // cy, max_grid[2] // cz
    use_ex = variant.is_cluster_launch or variant.cooperative or variant.pdl
    scratch = variant.scratch_size > 0 and "global_scratch" in variant.hidden_params
    block, shared = variant.threads_per_block, variant.shared
    fn, launch, on_error = target.function, target.launch, target.on_error
    what = f"launching {name}"
    torch = sys.modules.get("torch")
    tensor = torch.Tensor if torch is not None else _NoTorch
    raw_stream = getattr(getattr(torch, "_C", None), "_cuda_getCurrentRawStream", None)
    current_stream = raw_stream if raw_stream is not None else _stream.default_stream
    stream_handle = _stream.stream_handle
    has_ctx = context is not None
    handle, get_context, other = context if context is not None else (0, None, None)
    binders: list[ArgumentBinder] = []

    def binder() -> ArgumentBinder:
        if not binders:
            binders.append(ArgumentBinder(name, signature, npos))
        return binders[0]

    def bind(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
        return binder().bind(args, kwargs, checks)

    def grid3(grid: Any, args: tuple[Any, ...]) -> tuple[int, int, int]:
        """Any grid form but a positive int within the limits (that one is handled inline)."""
        if type(grid) is tuple and 0 < len(grid) <= 3:
            gx, gy, gz = grid + (1, 1)[: 3 - len(grid)]
            if type(gx) is int and type(gy) is int and type(gz) is int and 0 < gx <= mx and 0 < gy <= my and 0 < gz <= mz:
                return gx, gy, gz
        gx, gy, gz = _grid.normalize(grid, lambda: binder().meta(args))
        if not (0 < gx <= mx and 0 < gy <= my and 0 < gz <= mz):
            _grid.check_limits(gx, gy, gz, max_grid, cluster)
        return gx, gy, gz

    if npos == 0 and not scratch and not use_ex:
        # Nothing varies per call but grid and stream: one constant parameter buffer (the hidden
        # pointers' zeros) serves every thread.
        const_buf = ArgBuffer(layout)
        kp = const_buf.address

        # (its first lines are call's below, written out again: a shared helper would be one
        # more Python call per launch, which is what this launcher exists to save)
        def call_const(grid: Any, *args: Any, stream: Any = None, **kwargs: Any) -> None:
            if has_ctx and int(get_context()[1]) != handle:
                return other(grid, args, kwargs, stream)
            if kwargs or args:
                args = bind(args, kwargs)
            if type(grid) is int and 0 < grid <= mx:
                gx = grid
                gy = gz = 1
            else:
                gx, gy, gz = grid3(grid, args)
            if stream is None:
                stream = current_stream(device)
            elif type(stream) is not int or stream < 0 or stream >= 18446744073709551616:
                stream = stream_handle(stream)
            r = launch(fn, gx, gy, gz, block, 1, 1, shared, stream, kp, 0)
            if r[0]:
                raise on_error(r[0], what)

        call_const.__tmlr_launcher__ = (name, variant, signature, (), (), checks, const_buf)  # type: ignore[attr-defined]
        return call_const

    ops, kept = _plan(signature, npos, checks)
    keep = _keeper(kept, npos)
    pack = layout.head.pack_into  # hidden pointers: zeros, or the scratch below

    def fail(args: tuple[Any, ...], error: BaseException) -> None:
        raise diagnose(binder(), args, error) from None

    calls = 0

    def loop_convert(args: tuple[Any, ...], buf: Any) -> None:
        """Check, convert and pack ``args`` by the op list (until TIER_UP_CALLS)."""
        nonlocal calls, convert
        calls += 1
        if calls == TIER_UP_CALLS:
            try:
                convert = _specialize(ops, kept, npos, device, tensor, pack, fail)
            except Exception:  # never fail a launch over a speed-up: keep converting with this loop
                pass
        values = list(args)
        for i, kind, p, extra in ops:
            a = values[i]
            if kind == 0:  # _PTR
                if type(a) is tensor and a.get_device() == device and (a.dtype is extra or extra is None):
                    v = a.data_ptr()
                    if v & 15 and p.divisibility == 16:
                        _pointers.any_pointer(p, a, device, True)
                    values[i] = v
                else:
                    values[i] = _pointers.any_pointer(p, a, device, True)
            elif kind == 1:  # _PTR_NOCHECK
                values[i] = a.data_ptr() if type(a) is tensor else _pointers.any_pointer(p, a, device, False)
            elif kind == 2:  # _DIV16
                if type(a) is not int or a & 15:
                    check_divisible(p, a)
            elif kind == 3:  # _CONVERT
                values[i] = extra(p, a)
            else:  # _CHECK
                extra(p, a)
        try:
            pack(buf, 0, *(values if keep is None else keep(values)))
        except _STRUCT_ERRORS as e:
            fail(args, e)

    convert: Callable[[tuple[Any, ...], Any], None] = loop_convert
    if TIER_UP_CALLS <= 0:
        convert = _specialize(ops, kept, npos, device, tensor, pack, fail)
    tls = threading.local()
    make_config = target.make_config if use_ex else None
    launch_ex = target.launch_ex
    per_program = variant.scratch_size * max(variant.num_ctas, cx * cy * cz)
    scratch_align = variant.scratch_align
    scratch_alloc, scratch_free = _scratch.alloc, _scratch.free
    put_scratch = _SCRATCH_POINTER.pack_into
    scratch_offset = layout.offsets[len(runtime) + variant.hidden_params.index("global_scratch")] if scratch else 0

    pointer_ops = tuple(op for op in ops if op[1] in (_PTR, _PTR_NOCHECK))

    def explain(args: tuple[Any, ...], exc: Exception) -> Exception:
        """The typed error of the pointer argument that made conversion raise ``exc``, else ``exc``."""
        for i, _kind, p, _extra in pointer_ops:
            try:
                _pointers.any_pointer(p, args[i], device, checks)
            except TmlrError as err:
                return err
        return exc

    def new_slot() -> tuple[memoryview, int, Any, ArgBuffer]:
        buf = ArgBuffer(layout)
        slot = (buf.view, buf.address, make_config() if make_config is not None else None, buf)
        tls.slot = slot
        return slot

    def call(grid: Any, *args: Any, stream: Any = None, **kwargs: Any) -> None:
        if has_ctx and int(get_context()[1]) != handle:
            return other(grid, args, kwargs, stream)
        if kwargs or len(args) != npos:
            args = bind(args, kwargs)
        if type(grid) is int and 0 < grid <= mx:
            gx = grid
            gy = gz = 1
        else:
            gx, gy, gz = grid3(grid, args)
        if stream is None:
            stream = current_stream(device)
        elif type(stream) is not int or stream < 0 or stream >= 18446744073709551616:
            stream = stream_handle(stream)
        try:
            buf, kp, config, _ = tls.slot
        except AttributeError:
            buf, kp, config, _ = new_slot()
        try:
            convert(args, buf)
        except TmlrError:
            raise
        except Exception as e:  # e.g. data_ptr() of a sparse tensor on the fast path: name the argument
            raise explain(args, e) from None
        if scratch:
            sp, raw = scratch_alloc(gx * gy * gz * per_program, scratch_align, stream)
        try:  # (no cost in CPython 3.11+ unless something raises)
            if scratch:
                put_scratch(buf, scratch_offset, sp)
            if use_ex:
                config.gridDimX = gx * cx
                config.gridDimY = gy * cy
                config.gridDimZ = gz * cz
                config.hStream = stream
                r = launch_ex(config, fn, kp, 0)
            else:
                r = launch(fn, gx, gy, gz, block, 1, 1, shared, stream, kp, 0)
        finally:  # the scratch is freed whatever the launch did, raising included
            if scratch:
                scratch_free(raw, stream)
        if r[0]:
            raise on_error(r[0], what)

    call.__tmlr_launcher__ = (name, variant, signature, ops, kept, checks, lambda: convert)  # type: ignore[attr-defined]
    return call


class _NoTorch:
    """Stands in for ``torch.Tensor`` when torch is not imported: no value has this type."""


_KIND_TEXT = {
    _PTR: "torch tensor: device, dtype{align} checked inline; anything else via _pointers.any_pointer",
    _PTR_NOCHECK: "torch tensor inline, unchecked; anything else via _pointers.any_pointer",
    _DIV16: "int, divisibility by 16 checked; range checked by the struct",
    _CONVERT: "converted",
    _CHECK: "checked, not packed",
}


def describe(launch: Callable[..., Any]) -> str:
    """What a launcher from :func:`build` does per parameter, for debugging."""
    info = getattr(launch, "__tmlr_launcher__", None)
    if info is None:
        return ""
    name, variant, signature, ops, kept, checks, extra = info
    how = "cuLaunchKernelEx" if (variant.is_cluster_launch or variant.cooperative or variant.pdl) else "cuLaunchKernel"
    lines = [f"launcher of {name} ({variant.arch}): {how}, block {variant.threads_per_block}, shared {variant.shared}, checks {'on' if checks else 'off'}"]
    by_pos = {i: (kind, p) for i, kind, p, _ in ops}
    for i, p in enumerate(signature[: _positional_count(signature)]):
        if i in by_pos:
            kind, _ = by_pos[i]
            text = _KIND_TEXT[kind].format(align=", 16-byte alignment" if p.divisibility == 16 else "")
        else:
            text = "packed as is (the struct converts and range-checks it)" if i in kept else "not packed, not checked"
        lines.append(f"  {p.name}: {p.type if p.kind != 'constexpr' else 'constexpr ' + repr(p.value)} - {text}")
    if not callable(extra):
        lines.append("  no parameters: one constant parameter buffer, nothing packed per call")
    else:
        convert = extra()
        source = getattr(convert, "__tmlr_source__", None)
        if source:
            lines.append(f"  arguments converted by the function generated after {TIER_UP_CALLS} calls:\n{source}")
        elif convert is not None:
            lines.append(f"  arguments converted by the op loop (a generated function takes over after {TIER_UP_CALLS} calls)")
    lines.append(f"  hidden: {', '.join(variant.hidden_params) or 'none'}; global scratch {variant.scratch_size} bytes per program")
    return "\n".join(lines) + "\n"


def generate(
    name: str,
    signature: tuple[Parameter, ...],
    variant: Variant,
    target: LaunchTarget,
    checks: bool,
) -> Callable[[Any, tuple[Any, ...], dict[str, Any], Any], None]:
    """``launch(grid, args, kwargs, stream)`` for one variant on one device (no context check):
    :func:`build`'s launcher with the arguments as a tuple and a dict."""
    call = build(name, signature, variant, target, checks)

    def launch(grid: Any, args: tuple[Any, ...], kwargs: dict[str, Any], stream: Any) -> None:
        call(grid, *args, stream=stream, **kwargs)

    launch.__tmlr_launcher__ = call.__tmlr_launcher__  # type: ignore[attr-defined]
    return launch
