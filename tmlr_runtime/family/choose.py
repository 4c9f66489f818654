"""Specialization keys and the choice of a family's variant, as Triton's JIT would specialize a call (the
entries and the rules by which a variant accepts one: docs/variants.md, "A call")."""
from __future__ import annotations
from typing import Any, Callable
from ..abi import DTYPE_NAMES, TYPES, Parameter, format_entry, pointee

_I32 = TYPES["i32"].range
_I64 = TYPES["i64"].range
_dtype_names: dict[Any, str] = {}  # dtype object -> Triton type, filled as calls bring dtypes


def autotune_key(keys: Any, position: dict[str, int], args: tuple[Any, ...], given: dict[str, Any], dtypes: bool) -> tuple[Any, ...]:
    """The autotune key of a call, as Triton's Autotuner.run builds it: each key parameter's value (``position``: each
    parameter's index; past ``args``, taken from ``given``), then with ``dtypes`` the Triton type of every argument that
    has a dtype. A family keys its tuning with it, and tmlr-build record the choices it records."""
    key = []
    for name in keys:
        i = position.get(name, len(position))
        if i < len(args):
            key.append(args[i])
        elif name in given:
            key.append(given[name])
    if dtypes:
        key += [dtype_name(a.dtype) for a in (*args, *given.values()) if hasattr(a, "dtype")]
    return tuple(key)


def dtype_name(dtype: Any) -> str:
    """The Triton type of a dtype object (torch, numpy, CuPy: by its name), or ``str(dtype)``."""
    try:
        return _dtype_names[dtype]
    except (KeyError, TypeError):
        word = str(dtype).split(".")[-1]
        name = DTYPE_NAMES.get(word, str(dtype))
        try:
            _dtype_names[dtype] = name
        except TypeError:  # unhashable dtype object
            pass
        return name


def _address(value: Any) -> int | None:
    if value is None:
        return 0
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    data_ptr = getattr(value, "data_ptr", None)
    if data_ptr is not None:
        return int(data_ptr())
    cai = getattr(value, "__cuda_array_interface__", None)
    return int(cai["data"][0]) if cai is not None else None


def pointer_entry(value: Any) -> str:
    """``*fp16:16`` / ``*fp16`` for a pointer argument; ``*?`` where no dtype can be read."""
    dtype = getattr(value, "dtype", None)
    if dtype is None and getattr(value, "__cuda_array_interface__", None) is not None:
        typestr = str(value.__cuda_array_interface__.get("typestr", ""))[1:]
        name = next((n for n, t in TYPES.items() if typestr in t.typestrs), "?")
    else:
        name = "?" if dtype is None else dtype_name(dtype)
    address = _address(value)
    return f"*{name}:16" if address is not None and address % 16 == 0 else f"*{name}"


def int_entry(value: Any) -> str:
    """Triton's entry for an int argument: ``i32:1``, ``i32:16``, ``i64``, ``u64``...; ``fp32``/``i1`` for others."""
    if isinstance(value, bool):
        return "i1"
    if not isinstance(value, int):
        return "fp32" if isinstance(value, float) else "?"
    if value == 1:
        return "i32:1"
    ty = "i32" if _I32[0] <= value <= _I32[1] else "i64" if _I64[0] <= value <= _I64[1] else "u64"
    return f"{ty}:16" if value % 16 == 0 else ty


_DTYPE, _ALIGNED, _INT_CLASS, _VALUE = range(4)  # what fast_key reads of an argument (KEY_* in _fastlaunch.c)


def fast_key_parts(dtypes: list[int], aligned: list[int], ints: list[int], raw: list[int]) -> tuple[tuple[int, int], ...]:
    """What a family's fast key reads, as (position, _DTYPE | _ALIGNED | _INT_CLASS | _VALUE): the
    dtypes of the pointers whose dtype differs between variants or is in the autotune key, the
    alignment of those whose alignment differs, the class of the distinguishing ints (divisible by
    16, equal to 1) and the values the autotune key and the heuristics read."""
    return tuple([(i, _DTYPE) for i in dtypes] + [(i, _ALIGNED) for i in aligned]
                 + [(i, _INT_CLASS) for i in ints if i not in raw] + [(i, _VALUE) for i in raw])


def fast_key(parts: tuple[tuple[int, int], ...]) -> Callable[[tuple[Any, ...]], tuple[Any, ...]]:
    """A function of a call's positional arguments whose value fixes the family's whole choice (see
    :func:`fast_key_parts`; the compiled path makes the same key in C). It raises for pointers without
    ``.dtype``/``.data_ptr()`` (ints, CuPy), which take the general path."""

    def key(args: tuple[Any, ...]) -> tuple[Any, ...]:
        out = []
        for i, what in parts:
            v = args[i]
            if what == _DTYPE:
                out.append(v.dtype)
            elif what == _ALIGNED:
                out.append(not v.data_ptr() & 15)
            elif what == _INT_CLASS:
                out.append((not v & 15, v == 1))
            else:
                out.append(v)
        return tuple(out)

    return key


def accepts(p: Parameter, call: str) -> bool:
    """Whether variant parameter ``p`` serves an argument whose call entry is ``call``."""
    if p.kind == "equal_to_1":
        return call == "i32:1"
    if p.is_pointer:
        name, _, div = call[1:].partition(":")
        return (name == pointee(p.type) or name == "?") and (p.divisibility != 16 or div == "16")
    ty, _, div = call.partition(":")
    if p.type in ("i32", "i64", "u64", "i16", "i8", "u8", "u16", "u32"):
        # Triton's JIT types an int by its value (i32, i64, u64): an i32 or i64 variant takes the values of its range; a
        # variant of another int type (an annotation: u32, u64, i8...) takes any int, and its kernel checks the range
        fits = ty in ("i32", "i64", "u64") and (p.type not in ("i32", "i64") or p.type in {"i32": ("i32", "i64"), "i64": ("i64",)}.get(ty, ()))
        return fits and (p.divisibility != 16 or div == "16")
    return True  # floats and bools: one pattern whatever the value


def exact(p: Parameter, call: str) -> bool:
    entry = format_entry(p)
    return (entry if not p.is_pointer else "*" + entry[1:].removeprefix("k")) == call


def specialization(p: Parameter) -> int:
    return 1 if p.kind == "equal_to_1" or p.divisibility == 16 else 0
