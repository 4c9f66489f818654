"""What a launch argument becomes for the cubin: :func:`convert`, driven by the step code the plan fixed at load,
for every argument the executors do not handle inline, with the typed errors of the values it refuses."""
from __future__ import annotations

import math
import operator
import struct
from typing import Any

from ..errors import ArgumentError, ScalarArgumentError, TmlrError, short_repr
from ..abi import Parameter
from .plan import BF16, BOOL, CONSTEXPR, DIV16, ONE, PTR, TENSORDESC, TMA
from .pointers import any_pointer


def _equals(value: Any, expected: Any) -> bool:
    """``value == expected`` as a plain bool; False when the comparison raises or gives no truth
    value (a numpy array compares element-wise)."""
    try:
        return bool(value == expected)
    except Exception:
        return False


def same_constexpr(value: Any, expected: Any) -> bool:
    """Equal as constexpr values: 1 and 1.0 are, 1 and True are not; a Triton object (objects.TritonObject) takes
    what stands for it (tl.float32, torch.float32, 'fp32'); a tuple a tuple of as many such values (a list is not
    one, as Triton compiles a list apart); a ``tl.constexpr(...)`` is the value it holds."""
    if type(value).__name__ == "constexpr":  # Triton's or serve's stand-in's wrapper (objects.unwrap)
        from ..objects import unwrap  # a rare value: `import tmlr_runtime` imports no objects.py

        value = unwrap(value)
    accepts = getattr(expected, "accepts", None)
    if accepts is not None:
        return accepts(value)
    if type(expected) is tuple:
        return isinstance(value, tuple) and len(value) == len(expected) and all(map(same_constexpr, value, expected))
    return _equals(value, expected) and isinstance(value, bool) == isinstance(expected, bool)


def check_constexpr(p: Parameter, value: Any) -> None:
    if not same_constexpr(value, p.value):
        from .diagnose import constexpr_mismatch  # a rare path: `import tmlr_runtime` does not import it

        raise constexpr_mismatch(p, value)


def convert(code: int, p: Parameter, value: Any, device: int, checks: bool) -> Any:
    """What parameter ``p`` (of per-argument ``code``) passes to the cubin for ``value``, or its
    typed error; constexprs and ints specialized to 1 are only checked."""
    if code == PTR:
        return any_pointer(p, value, device, checks)
    if code == TMA:
        return tma_bytes(p, value)
    if code == TENSORDESC:  # a tuple: the values of the several kernel parameters it becomes
        from .tensordesc import descriptor_args  # imported by the first kernel with a tensor descriptor

        return descriptor_args(p, value, device, checks)
    if code == BF16:
        try:
            return bf16_bits(value)
        except Exception as e:
            from .diagnose import diagnose_scalar

            raise diagnose_scalar(p, value) or ScalarArgumentError(f"parameter {p.name!r} (bf16): {e}", p.name) from None
    if code == CONSTEXPR:
        check_constexpr(p, value)
    elif code == ONE and not (_equals(value, 1) and not isinstance(value, float)):
        raise ScalarArgumentError(f"parameter {p.name!r} ({p.type}) was specialized to 1 at build time (removed from the cubin), "
                                  f"got {short_repr(value)}; pass 1, or rebuild without ':1' for it in --signature", p.name)
    elif code == BOOL:
        return bool_byte(p, value, checks)
    elif code == DIV16:  # only the error path converts these (the executors check them inline)
        from .diagnose import diagnose_scalar

        err = diagnose_scalar(p, value)
        if err is not None:
            raise err
        if operator.index(value) % 16:
            raise ScalarArgumentError(f"parameter {p.name!r} ({p.type}) = {operator.index(value)} is not divisible by 16, but the kernel "
                                      "was built assuming it is (':16' in --signature) and would compute wrong results; pad the size "
                                      "to a multiple of 16 or rebuild without ':16' for it", p.name)
    return value


def bool_byte(p: Parameter, value: Any, checks: bool) -> int:
    """The byte an i1 (or u1) parameter gets. Triton's launcher takes any int in int32's range for it and passes its
    low byte, of which the kernel reads the lowest bit (3 is True, 2 False): so does tmlr; a bool is 1 or 0."""
    if value is True or value is False or (not isinstance(value, float) and (_equals(value, 0) or _equals(value, 1))):
        return 1 if _equals(value, 1) else 0  # numpy's bool_ has no __index__
    v = None
    if not isinstance(value, float):
        try:
            v = operator.index(value)
        except Exception:  # no __index__, or one that fails (a numpy array)
            pass
    if v is not None and -(2**31) <= v < 2**31:
        return v & 0xFF
    try:
        if not checks and v is None:
            return 1 if value else 0
    except Exception:  # no truth value (a numpy array)
        pass
    got = "an int beyond int32" if v is not None else f"{type(value).__name__}"
    raise ScalarArgumentError(f"parameter {p.name!r} ({p.type}) needs a bool or an int in int32's range (as Triton's launcher, "
                              f"whose kernel reads the lowest bit), got {got} {short_repr(value)}; pass a bool", p.name)


def bf16_bits(x: float) -> int:
    """bfloat16 bits of ``x``, rounded to nearest even like torch's conversion."""
    f = float(x)
    if math.isnan(f):
        return 0x7FC0
    try:
        (bits,) = struct.unpack("<I", struct.pack("<f", f))
    except OverflowError:
        return 0x7F80 if f > 0 else 0xFF80
    bits += 0x7FFF + ((bits >> 16) & 1)
    return (bits >> 16) & 0xFFFF


def tma_bytes(p: Parameter, value: Any) -> bytes:
    """The 128 bytes of a ``CUtensorMap`` for an ``nvTmaDesc`` parameter, given as bytes-like, a
    cuda-python CUtensorMap or a :class:`TensorMap`."""
    fix = "build one with tmlr_runtime.make_tensor_map(tensor, block_shape)"
    try:
        data = getattr(value, "tensor_map_bytes", None)
        if data is None and getattr(value, "opaque", None) is not None:
            from .tensordesc import tensor_map_bytes

            data = tensor_map_bytes(value)
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
    if len(data) != 128:
        raise ArgumentError(f"parameter {p.name!r} (nvTmaDesc) needs exactly 128 bytes, got {len(data)}; {fix}", p.name)
    return data
