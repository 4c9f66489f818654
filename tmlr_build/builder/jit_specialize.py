"""Deriving a tmlr signature from the arguments of one call, exactly as the installed Triton's JIT does.

Mirrors Triton's specializer (``create_specialize_impl`` / ``native_specialize_impl`` +
``BaseBackend.get_arg_specialization``): ints -> i32/u64/i64 by value, == 1 -> constexpr 1, divisible
by 16 -> ``:16``; objects with a ``dtype`` -> ``*<type>`` (``:16`` when ``data_ptr() % 16 == 0``);
float -> fp32; bool -> the installed Triton's bool type (i1 in 3.3, u1 from 3.4); a host
TensorDescriptor (``base``, ``block_shape``) -> ``tensordesc<fp16[64, 64]>`` (3.4+).
tests/build/test_build_jit.py compares the result with Triton's own specializer.
"""
from __future__ import annotations

import inspect
import os
from dataclasses import dataclass
from typing import Any

from tmlr_runtime.abi import DTYPE_NAMES, TMA_DESC, Parameter, format_entry
from tmlr_runtime.objects import JIT_FUNCTION, TritonObject, of, unwrap

from ..common.errors import SignatureError
from ..common.signature import given_constexpr
from ..common.tensordesc import DescriptorType
from .sources import package_module


@dataclass(frozen=True)
class Specialization:
    names: tuple[str, ...]
    entries: tuple[str, ...]  # one tmlr --signature entry per parameter ("*fp16:16", "i32", "64")
    values: tuple[Any, ...]  # the bound argument of each parameter, in order
    options: dict[str, Any]  # keyword arguments that are no parameter: Triton's launch options

    @property
    def signature(self) -> str:
        return ", ".join(self.entries)


def _constexpr(name: str, value: Any, kernel: Any = None) -> Parameter:
    given = given_constexpr(value)  # a dtype or a @triton.jit function: recorded by its text (tmlr_runtime/objects.py)
    if type(given) is TritonObject:
        return Parameter(name, "constexpr", value=_as_built(given, kernel))
    if given is not None and not isinstance(given, (bool, int, float, str)):
        raise SignatureError(f"constexpr {name}={given!r}: tmlr builds bool/int/float/str constexprs, Triton dtypes "
                             "(tl.bfloat16) and @triton.jit functions; pass one of those")
    return Parameter(name, "constexpr", value=given)


def _as_built(found: TritonObject, kernel: Any) -> TritonObject:
    """A function of the kernel's own module named as the build imports that module (a script's kernel is __main__
    here, its file's name there: sources.package_module); one defined inside a function is never imported: as it is."""
    module, _, qualname = found.text.partition(":")
    if kernel is None or found.object != JIT_FUNCTION or module != kernel.fn.__module__ or "<locals>" in qualname:
        return found
    path = inspect.getsourcefile(kernel.fn) or ""
    built = package_module(path) or os.path.splitext(os.path.basename(path))[0]
    return TritonObject(JIT_FUNCTION, f"{built}:{qualname}")


def _parameter(name: str, arg: Any, specialize: bool, align: bool, is_const: bool) -> Parameter:
    if isinstance(arg, bool):
        from triton.runtime.jit import mangle_type  # the JIT runs beside Triton (jit.py imports it)

        return Parameter(name, "runtime", mangle_type(True))  # Triton's bool type: i1 (3.3), u1 (3.4+)
    if isinstance(arg, int):
        if arg == 1 and specialize:
            return Parameter(name, "equal_to_1", "i32", value=1)
        ty = "i32" if -(2**31) <= arg <= 2**31 - 1 else "u64" if 2**63 <= arg <= 2**64 - 1 else "i64"
        return Parameter(name, "runtime", ty, 16 if specialize and align and arg % 16 == 0 else 1)
    if isinstance(arg, float):
        return Parameter(name, "runtime", "fp32")
    if hasattr(arg, "tma_desc_cpu_ptr"):
        return Parameter(name, "runtime", TMA_DESC)
    if hasattr(arg, "block_shape") and hasattr(arg, "base"):
        word = str(getattr(arg.base, "dtype", None)).split(".")[-1]
        if word not in DTYPE_NAMES:
            raise SignatureError(f"argument {name}: a tensor descriptor over dtype {word}, which has no Triton type")
        return Parameter(name, "runtime", DescriptorType(DTYPE_NAMES[word], tuple(arg.block_shape)).text)
    dtype = getattr(arg, "dtype", None)
    if dtype is None:
        raise SignatureError(f"argument {name}={type(arg).__name__}: not a tensor (no .dtype), int, float or "
                             "bool; pass one of those or make the parameter a tl.constexpr")
    word = str(dtype).split(".")[-1]
    if word not in DTYPE_NAMES:
        raise SignatureError(f"argument {name}: dtype {dtype} has no Triton pointer type; known: "
                             f"{', '.join(sorted(DTYPE_NAMES))}")
    ty = ("*k" if is_const else "*") + DTYPE_NAMES[word]
    return Parameter(name, "runtime", ty, 16 if specialize and align and arg.data_ptr() % 16 == 0 else 1)


def _annotated(p: Any, param: Parameter) -> Parameter:
    """``param`` of a parameter annotated with a Triton type (``v: tl.uint8``, ``x: "*fp16"``; Triton's
    ``KernelParam.annotation_type``): compiled as that type whatever the value, its divisibility kept (a value of 1 is
    no constexpr then); not specialized at all for a bool, a float or a do_not_specialize parameter (Triton 3.4+)."""
    ty = getattr(p, "annotation_type", "")
    if not ty or not isinstance(ty, str):
        return param
    if p.do_not_specialize or ty == "u1" or ty[:2] in ("fp", "bf"):
        return Parameter(param.name, "runtime", ty)
    return Parameter(param.name, "runtime", ty, param.divisibility if param.kind == "runtime" else 1)


def specialize(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Specialization:
    """The specialization Triton's ``fn[grid](*args, **kwargs)`` compiles, as tmlr signature entries."""
    sig = inspect.signature(fn.fn)
    names = tuple(sig.parameters)
    bound_kwargs = {k: v for k, v in kwargs.items() if k in sig.parameters}
    options = {k: v for k, v in kwargs.items() if k not in sig.parameters}
    try:
        bound = sig.bind(*args, **bound_kwargs)
    except TypeError as e:
        raise SignatureError(f"{fn.__name__}: {e}; the kernel takes ({', '.join(names)})") from None
    bound.apply_defaults()
    entries, values = [], []
    for p, name in zip(fn.params, names):
        value = bound.arguments[name]
        if isinstance(value, tuple):  # a tl.constexpr one: every element a value (a tuple of constexprs)
            entries.append(_tuple_entry(name, value, fn, p.is_constexpr))
            values.append(_unwrapped(value))
            continue
        if p.is_constexpr or value is None:
            param = _constexpr(name, value, fn)
        else:
            param = _parameter(name, value, not p.do_not_specialize, not p.do_not_specialize_on_alignment, p.is_const)
            param = _annotated(p, param)
        values.append(param.value if type(param.value) is TritonObject else value)  # the record: what the build imports
        entries.append(format_entry(param))
    return Specialization(names, tuple(entries), tuple(values), options)


def _tuple_entry(name: str, value: tuple[Any, ...], kernel: Any, constexpr_param: bool = False) -> str:
    """A tuple argument's entry, as Triton specializes one: each element by the rules of a parameter (specialized,
    on alignment too), None, tl.constexpr and @triton.jit function elements as values, and every element of a
    tl.constexpr parameter's tuple; a NamedTuple's elements named by field."""
    from triton.language import constexpr  # the JIT runs beside Triton (jit.py imports it)

    fields = getattr(value, "_fields", None)
    parts = []
    for i, x in enumerate(value):
        path = f"{name}.{fields[i]}" if fields else f"{name}[{i}]"
        if isinstance(x, tuple):
            parts.append(_tuple_entry(path, x, kernel, constexpr_param))
        elif constexpr_param or x is None or isinstance(x, constexpr) or of(x) is not None:  # a JITFunction: constexpr
            parts.append(format_entry(_constexpr(path, x, kernel)))
        else:
            parts.append(format_entry(_parameter(path, x, True, True, False)))
    if not parts:
        return "()"  # an empty tuple: Triton passes nothing for it (the runtime checks the call passes ())
    if fields:
        return "(" + ", ".join(f"{f}={part}" for f, part in zip(fields, parts)) + ")"
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


def _unwrapped(value: Any) -> Any:
    """A tuple argument with its tl.constexpr elements unwrapped, as the runtime compares them (NamedTuples kept)."""
    if not isinstance(value, tuple):
        return unwrap(value)
    items = [_unwrapped(x) for x in value]
    return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
