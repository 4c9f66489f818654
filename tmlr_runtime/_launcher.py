"""The per-variant launch function, generated once at load time.

Like Triton's and Inductor's launchers, the hot path is Python source written for one signature:
arguments are unpacked by position, each parameter's conversion and checks are inlined for its
recorded type, every value is written with one ``struct.pack_into`` into a per-thread buffer
prepared at load, and the driver gets the address of a prepared ``void**``. Nothing on that path
allocates except the scratch memory a kernel asks for. Anything unusual (keywords, a callable grid,
a non-torch pointer, a failed check) leaves the fast path for a helper that explains the problem.
"""
from __future__ import annotations

import struct
import sys
import threading
from dataclasses import dataclass, field
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
_CODE: dict[str, Any] = {}


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


def to_bool(p: Parameter, value: Any) -> int:
    """0 or 1 for an i1 argument that is not True or False (0, 1, numpy bools; anything, unchecked)."""
    try:
        return 1 if value else 0
    except Exception:  # no truth value (a numpy array): say so as the checked path would
        check_bool(p, value)
        return 1 if _equals(value, 1) else 0


def bf16_arg(p: Parameter, value: Any) -> int:
    try:
        return bf16_bits(value)
    except Exception as e:
        raise diagnose_scalar(p, value) or ScalarArgumentError(f"parameter {p.name!r} (bf16): {e}", p.name) from None


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


def generate(
    name: str,
    signature: tuple[Parameter, ...],
    variant: Variant,
    target: LaunchTarget,
    checks: bool,
) -> Callable[[Any, tuple[Any, ...], dict[str, Any], Any], None]:
    """Build ``launch(grid, args, kwargs, stream)`` for one variant on one device."""
    runtime = tuple(p for p in signature if p.kind == "runtime")
    layout = Layout.build(runtime, variant.hidden_params)
    npos = _positional_count(signature)
    binder = ArgumentBinder(name, signature, npos)
    cx, cy, cz = variant.cluster_dims
    use_ex = variant.is_cluster_launch or variant.cooperative or variant.pdl
    tls = threading.local()

    def new_slot() -> tuple[memoryview, int, Any]:
        buf = ArgBuffer(layout)
        config = target.make_config() if use_ex and target.make_config else None
        slot = (buf.view, buf.address, config, buf)
        tls.slot = slot
        return slot

    torch = sys.modules.get("torch")
    ns: dict[str, Any] = {
        "_binder": binder,
        "_checks": checks,
        "_normalize": _grid.normalize,
        "_grid_check": _grid.check_limits,
        "_MAXG": target.max_grid,
        "_CLUSTER": variant.cluster_dims,
        "_default_stream": _stream.default_stream,
        "_stream_handle": _stream.stream_handle,
        "_any_ptr": _pointers.any_pointer,
        "_Tensor": torch.Tensor if torch is not None else type("_NoTorch", (), {}),
        "_pack": layout.struct.pack_into,
        "_tls": tls,
        "_new_slot": new_slot,
        "_launch": target.launch,
        "_launch_ex": target.launch_ex,
        "_FN": target.function,
        "_on_error": target.on_error,
        "_diagnose": diagnose,
        "_struct_error": Exception,  # struct's own errors, and whatever a value's __index__/__float__ raises
        "_scratch_alloc": _scratch.alloc,
        "_scratch_free": _scratch.free,
        "_bf16": bf16_arg,
        "_to_bool": to_bool,
        "_tma": tma_bytes,
        "_check_div": check_divisible,
        "_check_eq1": check_equal_to_1,
        "_check_cx": check_constexpr,
        "_check_bool": check_bool,
        "GridError": GridError,
    }
    argnames = [f"a{i}" for i in range(npos)]
    body: list[str] = []
    emit = body.append
    emit(f"def launch(grid, args, kwargs, stream):")
    emit(f"    if kwargs or len(args) != {npos}:")
    emit(f"        args = _binder.bind(args, kwargs, _checks)")
    if npos:
        emit(f"    {', '.join(argnames)}{',' if npos == 1 else ''} = args")
    emit("    if type(grid) is int:")
    emit("        gx = grid; gy = 1; gz = 1")
    emit("    else:")
    emit("        gx, gy, gz = _normalize(grid, lambda: _binder.meta(args))")
    mx, my, mz = (lim // c for lim, c in zip(target.max_grid, variant.cluster_dims))
    emit(f"    if not (0 < gx <= {mx} and 0 < gy <= {my} and 0 < gz <= {mz}):")
    emit("        _grid_check(gx, gy, gz, _MAXG, _CLUSTER)")
    emit("    if stream is None:")
    if torch is not None and hasattr(torch._C, "_cuda_getCurrentRawStream"):
        ns["_raw_stream"] = torch._C._cuda_getCurrentRawStream
        emit(f"        stream = _raw_stream({target.device})")
    else:
        emit(f"        stream = _default_stream({target.device})")
    emit("    elif type(stream) is not int or stream < 0 or stream >= 18446744073709551616:")
    emit("        stream = _stream_handle(stream)")
    values: list[str] = []
    for i, p in enumerate(signature[:npos]):
        a = f"a{i}"
        ns[f"_P{i}"] = p
        if p.kind == "constexpr":
            if checks:
                ns[f"_V{i}"] = p.value
                ns[f"_T{i}"] = type(p.value)  # type first: == on an arbitrary object may raise (a numpy array)
                emit(f"    if {a} is not _V{i} and (type({a}) is not _T{i} or {a} != _V{i}): _check_cx(_P{i}, {a})")
            continue
        if p.kind == "equal_to_1":
            if checks:
                emit(f"    if {a} is not True and (type({a}) is not int or {a} != 1): _check_eq1(_P{i}, {a})")
            continue
        v = f"v{i}"
        values.append(v)
        t = p.type or ""
        if t.startswith("*"):
            # torch tensors on the right device with the right dtype take the inline path;
            # everything else, and every failed check, goes to _any_ptr, which explains.
            cond = f"type({a}) is _Tensor"
            if checks:
                ns[f"_DT{i}"] = _pointers.torch_dtype(p)
                cond += f" and {a}.get_device() == {target.device}"
                if ns[f"_DT{i}"] is not None:
                    cond += f" and {a}.dtype is _DT{i}"
            emit(f"    {v} = {a}.data_ptr() if {cond} else _any_ptr(_P{i}, {a}, {target.device}, _checks)")
            if checks and p.divisibility == 16:
                emit(f"    if {v} & 15: _any_ptr(_P{i}, {a}, {target.device}, True)")
        elif t == "nvTmaDesc":
            emit(f"    {v} = _tma(_P{i}, {a})")
        elif t in ("i1", "u1"):
            if checks:
                emit(f"    if {a} is not True and {a} is not False: _check_bool(_P{i}, {a})")
            emit(f"    {v} = 1 if {a} is True else 0 if {a} is False else _to_bool(_P{i}, {a})")
        elif t == "bf16":
            emit(f"    {v} = _bf16(_P{i}, {a})")
        elif checks and p.divisibility == 16 and SCALAR_CODES[t][2] is not None:
            emit(f"    if type({a}) is not int or {a} & 15: _check_div(_P{i}, {a})")
            emit(f"    {v} = {a}")
        else:  # plain scalar: the struct converts and range-checks it
            emit(f"    {v} = {a}")
    hidden = []
    scratch = variant.scratch_size > 0 and "global_scratch" in variant.hidden_params
    for h in variant.hidden_params:
        hidden.append("sp" if (h == "global_scratch" and scratch) else "0")
    emit("    try:")
    emit("        buf, kp, config, _keep = _tls.slot")
    emit("    except AttributeError:")
    emit("        buf, kp, config, _keep = _new_slot()")
    if scratch:
        per_program = variant.scratch_size * max(variant.num_ctas, cx * cy * cz)
        emit(f"    sp, raw = _scratch_alloc(gx * gy * gz * {per_program}, {variant.scratch_align}, stream)")
    packed = ", ".join(values + hidden)
    emit("    try:")
    emit(f"        _pack(buf, 0{', ' if packed else ''}{packed})")
    emit("    except _struct_error as e:")
    if scratch:
        emit("        _scratch_free(raw, stream)")
    emit("        raise _diagnose(_binder, args, e) from None")
    block = f"{variant.threads_per_block}, 1, 1"
    if use_ex:
        emit(f"    config.gridDimX = gx * {cx}; config.gridDimY = gy * {cy}; config.gridDimZ = gz * {cz}")
        emit("    config.hStream = stream")
        emit("    r = _launch_ex(config, _FN, kp, 0)")
    else:
        emit(f"    r = _launch(_FN, gx, gy, gz, {block}, {variant.shared}, stream, kp, 0)")
    if scratch:
        emit("    _scratch_free(raw, stream)")
    emit("    if r[0]:")
    emit(f"        raise _on_error(r[0], 'launching {name}')")
    source = "\n".join(body) + "\n"
    code = _CODE.get(source)
    if code is None:  # parsing dominates load time; identical launchers share one code object
        code = _CODE[source] = compile(source, f"<tmlr launcher {name} {variant.arch}>", "exec")
    exec(code, ns)
    launch = ns["launch"]
    launch.__tmlr_source__ = source  # type: ignore[attr-defined]
    return launch
