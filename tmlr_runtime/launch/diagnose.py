"""Why a scalar argument cannot be packed, said as the typed error that the packing ``struct``'s own does not
say: imported by the first such error."""
from __future__ import annotations

import operator
import struct

from ..abi import TYPES, Parameter
from ..errors import ConstexprMismatchError, ScalarArgumentError, short_repr


def diagnose_scalar(param: Parameter, value: object) -> ScalarArgumentError | None:
    """Why ``value`` cannot be packed as ``param``'s scalar type, or None if it can."""
    typ, name = param.type or "", param.name
    code, bounds = TYPES[typ].code, TYPES[typ].range
    if bounds is not None:
        try:
            v = None if isinstance(value, float) else operator.index(value)  # type: ignore[arg-type]
        except Exception:  # no __index__, or one that fails (a numpy array, a tensor of several elements)
            v = None
        if v is None:
            fix = "pass int(value) if the truncation is intended" if isinstance(value, float) else "pass an int"
            return ScalarArgumentError(f"parameter {name!r} ({typ}) needs an integer, got {type(value).__name__} {short_repr(value)}; {fix}", name)
        if not bounds[0] <= v <= bounds[1]:
            return ScalarArgumentError(f"parameter {name!r} ({typ}) must be in [{bounds[0]}, {bounds[1]}], got {short_repr(v)}; the kernel "
                                       f"was built for {typ} - rebuild it with a wider type in --signature if such values are expected", name)
        return None
    try:
        f = float(value)  # type: ignore[arg-type]
    except OverflowError:  # an int beyond even fp64
        return ScalarArgumentError(f"parameter {name!r} ({typ}) overflows: {short_repr(value)} is beyond every float type; scale the value", name)
    except Exception:
        return ScalarArgumentError(f"parameter {name!r} ({typ}) needs a float, got {type(value).__name__} {short_repr(value)}; pass a Python float", name)
    if typ in ("fp16", "fp32"):
        try:
            struct.pack("<" + code, f)
        except OverflowError:  # finite, but beyond the type
            return ScalarArgumentError(f"parameter {name!r} ({typ}) overflows: |{f}| > {'65504' if typ == 'fp16' else '3.4e38'}; rebuild "
                                       "with a wider float type in --signature or scale the value", name)
    return None


def constexpr_mismatch(p: Parameter, value: object) -> ConstexprMismatchError:
    """The error of a call's ``value`` for constexpr ``p``, which was compiled with another: both as they are written,
    and the rebuild that takes the call's value."""
    from ..objects import of, unwrap  # a rare path: `import tmlr_runtime` imports neither
    from ..tuples import split_path

    value = unwrap(value)  # tl.constexpr(tl.float32): said as tl.float32
    found = of(value)  # a Triton object: written as tmlr-build reads it (tl.float16 for torch.float16 too)
    written = repr(found) if found is not None else short_repr(value)
    root = split_path(p.name)[0]
    if type(value) is list and type(p.value) is tuple:  # no rebuild helps: a build records a tuple
        advice = ": a list is another value than the tuple to Triton"
    elif p.value == ():  # an empty tuple parameter or element, typed () in --signature
        advice = f", or rebuild with {p.name}'s --signature entry typed for {written} (() is the empty tuple)"
    elif root == p.name:
        advice = f", or rebuild with --constexpr {p.name}={written}"
    else:  # a tuple's element (coef[1]) has its value in the tuple's signature entry: --constexpr takes parameters only
        advice = f", or rebuild with {written} in the place of {p.name} in {root}'s --signature entry"
    return ConstexprMismatchError(f"constexpr {p.name!r} was compiled as {p.value!r}, got {short_repr(value)}; pass "
                                  f"{p.value!r} (or omit it){advice}", p.name)
