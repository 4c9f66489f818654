"""Kernel signatures: the AOT-tool syntax (``"*fp16:16, i32, 128"``), names, and the schema form.

The artifact records every Python-level parameter in declaration order, because Triton's own
metadata records neither the signature nor the constexpr values nor the specializations, and the
runtime needs all three to pack arguments and to check callers.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

# Parameter and format_signature are the runtime's record and formatter; the build's modules name them
# through this module (sig.Parameter, sig.format_signature)
from tmlr_runtime.abi import (PARAM_TYPES, SCALAR_TYPES, TMA_DESC, TYPES, Parameter, format_entry, format_signature,
                               split_top_level)

from .errors import SignatureError
from .tensordesc import DescriptorType, parse_type as parse_descriptor_type

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class SigEntry:
    """One unnamed entry of an AOT-syntax signature."""

    kind: str  # "runtime" | "constexpr" | "equal_to_1"
    type: str | None = None
    divisibility: int = 1
    value: Any = None

    def named(self, name: str) -> Parameter:
        return Parameter(name, self.kind, self.type, self.divisibility, 1 if self.kind == "equal_to_1" else self.value)


def parse_constexpr_value(text: str) -> Any:
    """A constexpr value written on the command line: int, float, bool, None or a quoted string."""
    word = text.strip()
    if word in ("True", "true"):
        return True
    if word in ("False", "false"):
        return False
    if word in ("None", "null"):
        return None
    try:
        return int(word, 0)
    except ValueError:
        pass
    try:
        return float(word)
    except ValueError:
        pass
    if len(word) >= 2 and word[0] == word[-1] and word[0] in "'\"":
        return ast.literal_eval(word)
    raise SignatureError(
        f"{word!r} is neither a known type nor a constexpr value; types are "
        f"{', '.join(SCALAR_TYPES)}, {TMA_DESC}, pointers like *fp16 (add :16 for divisibility, "
        f":1 for an int specialized to 1) and host tensor descriptors like tensordesc<fp16[64, 64]> (Triton 3.4+); "
        "constexpr values are numbers, True/False or quoted strings"
    )


def parse_entry(text: str) -> SigEntry:
    """Parse one entry: ``*fp16:16``, ``i32``, ``i32:1``, ``128``, ``'relu'``."""
    word = text.strip()
    if not word:
        raise SignatureError("empty signature entry (two commas in a row?); write one type or value per parameter")
    descriptor = parse_descriptor_type(word)
    if descriptor is not None:  # a host TensorDescriptor (Triton 3.4+): no hint after it
        return SigEntry("runtime", descriptor.text, 1)
    head, sep, hint = word.partition(":")
    head = head.strip()
    if head not in PARAM_TYPES:
        if sep and head[:1] not in "'\"":
            raise SignatureError(f"unknown type {head!r} in signature entry {word!r}; known types are "
                                 f"{', '.join(SCALAR_TYPES)}, {TMA_DESC} and pointers like *fp16")
        return SigEntry("constexpr", value=parse_constexpr_value(word))
    if not sep:
        return SigEntry("runtime", head, 1)
    hint = hint.strip()
    if hint == "16":
        # divisibility means something for pointers and integers of more than one bit only
        if head[:1] != "*" and TYPES[head].range in (None, (0, 1)):
            raise SignatureError(f"signature entry {word!r}: only pointers and integers wider than 1 bit take :16")
        return SigEntry("runtime", head, 16)
    if hint == "1":
        if head[:1] == "*" or TYPES[head].range is None:
            raise SignatureError(f"signature entry {word!r}: :1 (specialized to 1) applies to integer types only")
        return SigEntry("equal_to_1", head)
    raise SignatureError(f"signature entry {word!r}: the hint after ':' must be 16 (divisible by 16) or 1 (equal to 1)")


def parse_signature(text: str) -> list[SigEntry]:
    """Parse the AOT-tool signature syntax, e.g. ``"*fp16:16, *fp16:16, i32:16, fp16, 128"``."""
    if not text.strip():
        return []
    return [parse_entry(part) for part in split_top_level(text, "([{<")]  # "<": a Gluon descriptor's layout


def parse_constexpr_assignments(items: Iterable[str]) -> dict[str, Any]:
    """``["BLOCK=128", "ACT='relu'"]`` -> ``{"BLOCK": 128, "ACT": "relu"}``."""
    out: dict[str, Any] = {}
    for item in items:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not _IDENT.match(name):
            raise SignatureError(f"--constexpr {item!r}: write NAME=VALUE, e.g. --constexpr BLOCK=128")
        out[name] = parse_constexpr_value(value)
    return out


def parse_arg_names(text: str | Sequence[str]) -> list[str]:
    names = [n.strip() for n in (text.split(",") if isinstance(text, str) else text)]
    for n in names:
        if not _IDENT.match(n):
            raise SignatureError(f"--arg-names: {n!r} is not a valid parameter name")
    if len(set(names)) != len(names):
        raise SignatureError("--arg-names: parameter names repeat")
    return names


def bind_python_signature(kernel: str, arg_names: Sequence[str], entries: Sequence[SigEntry],
                          constexprs: dict[str, Any], defaults: dict[str, Any], constexpr_params: set[str]) -> list[Parameter]:
    """Name the signature entries after the Python parameters.

    Entries fill, in order, the parameters not given by ``--constexpr``; constexpr parameters with
    a default may be left out at the end.
    """
    unknown = sorted(set(constexprs) - set(arg_names))
    if unknown:
        raise SignatureError(f"{kernel}: --constexpr names {', '.join(unknown)}, which the kernel does not have "
                             f"(its parameters: {', '.join(arg_names)})")
    open_names = [n for n in arg_names if n not in constexprs]
    if len(entries) > len(open_names) or any(
            n not in defaults or n not in constexpr_params for n in open_names[len(entries):]):
        given = "" if not constexprs else f" besides the --constexpr ones ({', '.join(constexprs)})"
        raise SignatureError(
            f"{kernel}: the signature has {len(entries)} entries but the kernel has {len(open_names)} "
            f"parameters{given}: {', '.join(open_names)}; give one entry per parameter in this order "
            "(a bare value for a tl.constexpr)")
    by_name = {n: e for n, e in zip(open_names, entries)}
    params = []
    for n in arg_names:
        if n in constexprs:
            params.append(Parameter(n, "constexpr", value=constexprs[n]))
        elif n in by_name:
            e = by_name[n]
            if n in constexpr_params and e.kind != "constexpr":
                raise SignatureError(f"{kernel}: parameter {n} is a tl.constexpr; give it a value, not the type {e.type}")
            if e.kind == "constexpr" and n not in constexpr_params and not isinstance(e.value, (int, float, bool)):
                raise SignatureError(f"{kernel}: parameter {n} is not a tl.constexpr; give it a type, not {e.value!r}")
            params.append(e.named(n))
        else:
            params.append(Parameter(n, "constexpr", value=defaults[n]))
    for p in params:
        check_json_value(kernel, p)
    return params


def check_json_value(kernel: str, p: Parameter) -> None:
    """A constexpr's value must be one metadata.json can record."""
    if p.kind == "constexpr" and not isinstance(p.value, (int, float, bool, str, type(None))):
        raise SignatureError(f"{kernel}: constexpr {p.name} = {p.value!r} cannot be recorded in metadata.json; "
                             "only numbers, booleans, strings and None can")


def check_against_ir(kernel: str, params: Sequence[Parameter], ir_params: Sequence[Parameter]) -> None:
    """A signature given for an IR file must agree with the IR's own parameters."""
    runtime = [p for p in params if p.kind == "runtime"]
    if len(runtime) != len(ir_params):
        raise SignatureError(
            f"{kernel}: the signature has {len(runtime)} runtime parameters but the IR function has "
            f"{len(ir_params)} ({', '.join(p.type or '?' for p in ir_params)}); fix --signature")
    for p, q in zip(runtime, ir_params):
        same = p.type == q.type or (p.type and q.type and _signless(p.type) == _signless(q.type))
        if not same or p.divisibility != q.divisibility:
            raise SignatureError(
                f"{kernel}: parameter {p.name} is {format_entry(p)} in the signature "
                f"but {format_entry(q)} in the IR; fix --signature")


def _signless(ty: str) -> str:
    # MLIR integers are signless: u32 in Python is i32 in the IR; 'k' (const) pointers are not marked.
    # A Gluon descriptor's layout is in the IR's #shared attribute, not in the type tmlr reads.
    desc = parse_descriptor_type(ty)
    if desc is not None:
        return DescriptorType(desc.dtype, desc.block_shape).text
    ty = ty.replace("*k", "*")
    return re.sub(r"\bu(\d+)$", r"i\1", ty.replace("*u", "*i"))


def to_triton(params: Sequence[Parameter]) -> tuple[dict[str, str], dict[tuple[int, ...], Any], dict[tuple[int, ...], list]]:
    """The (signature, constexprs, attrs) triple Triton's ASTSource takes (3.3-3.9)."""
    sig: dict[str, str] = {}
    consts: dict[tuple[int, ...], Any] = {}
    attrs: dict[tuple[int, ...], list] = {}
    for i, p in enumerate(params):
        if p.kind == "runtime":
            sig[p.name] = p.type or ""
            if p.divisibility == 16:
                attrs[(i,)] = [["tt.divisibility", 16]]
        else:
            # Triton specializes an int equal to 1 into a constexpr of value 1 (3.3-3.9)
            sig[p.name] = "constexpr"
            consts[(i,)] = 1 if p.kind == "equal_to_1" else p.value
    return sig, consts, attrs
