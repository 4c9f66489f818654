"""Deriving a tmlr signature from the arguments of one call, exactly as Triton 3.3.1's JIT does.

Mirrors ``triton.runtime.jit.create_specialize_impl`` + ``BaseBackend.get_arg_specialization``:
ints -> i32/u64/i64 by value, == 1 -> constexpr 1, divisible by 16 -> ``:16``; objects with a
``dtype`` -> ``*<type>`` (``:16`` when ``data_ptr() % 16 == 0``); bool -> i1; float -> fp32.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

from ..common.errors import SignatureError

# triton.runtime.jit.type_canonicalisation_dict (3.3.1), keyed by the dtype's last dotted word.
_DTYPES = {
    "bool": "i1", "float8e4nv": "fp8e4nv", "float8e5": "fp8e5", "float8e4b15": "fp8e4b15",
    "float8_e4m3fn": "fp8e4nv", "float8e4b8": "fp8e4b8", "float8_e4m3fnuz": "fp8e4b8", "float8_e5m2": "fp8e5",
    "float8e5b16": "fp8e5b16", "float8_e5m2fnuz": "fp8e5b16", "half": "fp16", "float16": "fp16",
    "bfloat16": "bf16", "float": "fp32", "float32": "fp32", "double": "fp64", "float64": "fp64",
    "int8": "i8", "int16": "i16", "int": "i32", "int32": "i32", "int64": "i64", "uint8": "u8",
    "uint16": "u16", "uint32": "u32", "uint64": "u64",
}


@dataclass(frozen=True)
class Specialization:
    names: tuple[str, ...]
    entries: tuple[str, ...]  # one tmlr --signature entry per parameter ("*fp16:16", "i32", "64")
    values: tuple[Any, ...]  # the bound argument of each parameter, in order
    options: dict[str, Any]  # keyword arguments that are no parameter: Triton's launch options

    @property
    def signature(self) -> str:
        return ", ".join(self.entries)


def _constexpr_text(name: str, value: Any) -> str:
    value = getattr(value, "value", value)  # tl.constexpr wrapper
    if isinstance(value, (bool, int, float)):
        return repr(value)
    raise SignatureError(f"constexpr {name}={value!r}: tmlr builds only bool/int/float constexprs; "
                         "pass a number")


def _entry(name: str, arg: Any, specialize: bool, align: bool, is_const: bool) -> str:
    if isinstance(arg, bool):
        return "i1"
    if isinstance(arg, int):
        if arg == 1 and specialize:
            return "i32:1"
        ty = "i32" if -(2**31) <= arg <= 2**31 - 1 else "u64" if 2**63 <= arg <= 2**64 - 1 else "i64"
        return ty + (":16" if specialize and align and arg % 16 == 0 else "")
    if isinstance(arg, float):
        return "fp32"
    if hasattr(arg, "tma_desc_cpu_ptr"):
        return "nvTmaDesc"
    dtype = getattr(arg, "dtype", None)
    if dtype is None:
        raise SignatureError(f"argument {name}={type(arg).__name__}: not a tensor (no .dtype), int, float or "
                             "bool; pass one of those or make the parameter a tl.constexpr")
    word = str(dtype).split(".")[-1]
    if word not in _DTYPES:
        raise SignatureError(f"argument {name}: dtype {dtype} has no Triton pointer type; known: "
                             f"{', '.join(sorted(_DTYPES))}")
    ty = ("*k" if is_const else "*") + _DTYPES[word]
    return ty + (":16" if specialize and align and arg.data_ptr() % 16 == 0 else "")


def specialize(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Specialization:
    """The specialization Triton 3.3.1's ``fn[grid](*args, **kwargs)`` compiles, as tmlr signature entries."""
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
        values.append(value)
        if p.is_constexpr or value is None:
            entries.append(_constexpr_text(name, value) if value is not None else "None")
        else:
            entries.append(_entry(name, value, not p.do_not_specialize, not p.do_not_specialize_on_alignment,
                                  p.is_const))
    return Specialization(names, tuple(entries), tuple(values), options)
