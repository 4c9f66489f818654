"""Kernel signatures: the AOT-tool syntax (``"*fp16:16, i32, 128"``), names, and the schema form.

The artifact records every Python-level parameter in declaration order, because Triton's own
metadata records neither the signature nor the constexpr values nor the specializations, and the
runtime needs all three to pack arguments and to check callers.
"""
from __future__ import annotations

import ast
import collections
import json
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

# Parameter and format_signature are the runtime's record and formatter; the build's modules name them
# through this module (sig.Parameter, sig.format_signature)
from tmlr_runtime.abi import (PARAM_TYPES, SCALAR_TYPES, TL_DTYPES, TMA_DESC, TYPES, Parameter, format_entry,
                               format_signature, split_top_level)
from tmlr_runtime.artifact.metadata import is_tuple_value, tuple_of

from tmlr_runtime.objects import TritonObject, of as of_object, parse as parse_object, unwrap
from tmlr_runtime.tuples import TupleParam, call_params, split_path

from .errors import SignatureError
from .tensordesc import DescriptorType, parse_type as parse_descriptor_type
from .wording import CLI, Words

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class SigEntry:
    """One unnamed entry of an AOT-syntax signature."""

    kind: str  # "runtime" | "constexpr" | "equal_to_1" | "tuple"
    type: str | None = None
    divisibility: int = 1
    value: Any = None
    items: tuple["SigEntry", ...] = ()  # a tuple's elements
    fields: tuple[str, ...] | None = None  # a NamedTuple's field names

    def named(self, name: str) -> Parameter:
        return Parameter(name, self.kind, self.type, self.divisibility, 1 if self.kind == "equal_to_1" else self.value)

    def leaves(self, name: str) -> list[Parameter]:
        """The parameters the kernel takes for this entry: itself, or a tuple's elements named by path (``ptrs[0]``,
        ``t.shape[1]``), as Triton flattens a tuple argument."""
        if self.kind != "tuple":
            return [self.named(name)]
        keys = [f".{f}" for f in self.fields] if self.fields is not None else [f"[{i}]" for i in range(len(self.items))]
        return [p for key, item in zip(keys, self.items) for p in item.leaves(name + key)]

    def tuple_value(self) -> tuple[Any, ...] | None:
        """A tuple entry whose elements are all values, ``(8, (4, 4))``, as that tuple (a tl.constexpr's value); None
        for any other entry (an element that is a type, a NamedTuple)."""
        if self.kind == "constexpr" and type(self.value) is tuple:
            return self.value  # (): the empty tuple
        if self.kind != "tuple" or self.fields is not None:
            return None
        values = [item.value if item.kind == "constexpr" else item.tuple_value() for item in self.items]
        if any(v is None and item.kind != "constexpr" for v, item in zip(values, self.items)):
            return None
        return tuple(values)


def parse_constexpr_value(text: str) -> Any:
    """A constexpr value written on the command line: int, float, bool, None, a quoted string, a Triton object
    (tl.bfloat16, a @triton.jit function as module:qualname), or a tuple of values ((8, 8), nested too)."""
    word = text.strip()
    if word[:1] in "([" and word[-1:] in ")]":
        return _tuple_value(word)
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
    return triton_object(word)


def _tuple_value(word: str) -> tuple[Any, ...]:
    """The tuple ``(8, (4, 4))`` writes; a list's brackets are refused, as Triton's tuple constexpr is a tuple."""
    if word[0] == "[":
        raise SignatureError(f"constexpr value {word!r}: write a tuple in parentheses, ({word[1:-1]}): Triton passes a "
                             "tuple constexpr as a tuple (a list is another value to Triton), and a call passes it so")
    entry = parse_tuple(word)
    value = entry.tuple_value() if entry is not None else None
    if value is None:
        raise SignatureError(f"constexpr value {word!r}: a tuple constexpr's elements are values (numbers, True/False, "
                             "None, quoted strings, tuples of them), e.g. (8, 8); a NamedTuple or a type has no constexpr value")
    return value


def triton_object(word: str) -> TritonObject:
    """The Triton object ``word`` names (tmlr_runtime/objects.py), or the SignatureError saying what a value may be."""
    found = parse_object(word)
    if found is not None:
        return found
    if word.startswith(("tl.", "triton.language.")):
        raise SignatureError(f"{word!r} is no Triton dtype; write one as triton.language names it: "
                             f"{', '.join(f'tl.{attr}' for attr, _ in TL_DTYPES.values())}")
    raise SignatureError(
        f"{word!r} is neither a known type nor a constexpr value; types are "
        f"{', '.join(SCALAR_TYPES)}, {TMA_DESC}, pointers like *fp16 (add :16 for divisibility, "
        f":1 for an int specialized to 1) and host tensor descriptors like tensordesc<fp16[64, 64]> (Triton 3.4+); "
        "constexpr values are numbers, True/False, quoted strings, Triton dtypes like tl.bfloat16 and @triton.jit "
        "functions as module:qualname (kernels:relu)"
    )


def given_constexpr(value: Any) -> Any:
    """A constexpr's value given in Python (the API's ``constexprs``, a call's argument): a Triton object (``tl.int8``,
    a @triton.jit function) as its record (tmlr_runtime/objects.py), a ``tl.constexpr(...)`` as its value; others as
    they are (a value metadata.json cannot hold is refused where the signature is checked)."""
    value = unwrap(value)
    if type(value) is tuple:  # a tuple constexpr: its tl.constexpr elements as their values
        return tuple(given_constexpr(x) for x in value)
    found = of_object(value)
    return value if found is None else found


def spec_constexpr(value: Any) -> Any:
    """A spec file's constexpr value: JSON's, but a string that names a Triton object (``"tl.bfloat16"``,
    ``"kernels:relu"``) is that object, and an array (a value in a list of variants) a tuple."""
    if isinstance(value, list):
        return tuple_of(value)
    found = parse_object(value) if isinstance(value, str) else None
    return value if found is None else found


_NAMED = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)?\((.*)\)$", re.S)
_FIELD = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*=(?!=)(.*)$", re.S)


def parse_tuple(word: str) -> SigEntry | None:
    """A tuple entry, ``(*fp32:16, (i32, 3), None)``, or a NamedTuple one, ``(ptr=*fp32, shape=(i32, i32))`` (a type name
    may come first: ``Tensor(ptr=*fp32, ...)``); None for any other text."""
    m = _NAMED.match(word)
    if m is None:
        return None
    parts = split_top_level(m.group(2), "([{<")
    if len(parts) > 1 and parts[-1] == "":
        parts.pop()  # (i32,): a tuple of one
    if parts == [""] and not m.group(1):  # (): an empty tuple passes nothing; the runtime checks the call passes () there
        return SigEntry("constexpr", value=())
    if parts == [""]:
        raise SignatureError(f"signature entry {word!r}: a NamedTuple without fields passes nothing; write () for an empty tuple")
    named = [_FIELD.match(part) for part in parts]
    if any(named) and not all(named):
        raise SignatureError(f"signature entry {word!r}: name every element of a NamedTuple (field=type) or none")
    if m.group(1) and not all(named):
        raise SignatureError(f"signature entry {word!r}: a NamedTuple's elements are written field=type, e.g. "
                             f"{m.group(1)}(ptr=*fp32:16, n=i32)")
    fields = tuple(f.group(1) for f in named) if all(named) else None  # type: ignore[union-attr]
    if fields is not None and len(set(fields)) != len(fields):
        raise SignatureError(f"signature entry {word!r}: NamedTuple fields repeat")
    texts = [f.group(2) for f in named] if fields is not None else parts  # type: ignore[union-attr]
    return SigEntry("tuple", items=tuple(parse_entry(t) for t in texts), fields=fields)


def map_leaves(word: str, leaf: Callable[[str], str]) -> str:
    """``word`` (one signature entry) with each of its leaf entries replaced by ``leaf(text)``, in order: the entry
    itself, or a tuple's elements at any depth (``(*T:16?, i32)``), its field names and type name kept."""
    m = _NAMED.match(word.strip())
    if m is None or word.strip() == "()":  # (): an empty tuple is a leaf (a constexpr)
        return leaf(word.strip())
    parts = split_top_level(m.group(2), "([{<")
    one = len(parts) > 1 and parts[-1] == ""  # (i32,): a tuple of one
    out = [f"{f.group(1)}={map_leaves(f.group(2), leaf)}" if f else map_leaves(part, leaf)
           for part, f in ((part, _FIELD.match(part)) for part in parts[:len(parts) - one])]
    return f"{m.group(1) or ''}({', '.join(out)}{',' if one else ''})"


def parse_entry(text: str) -> SigEntry:
    """Parse one entry: ``*fp16:16``, ``i32``, ``i32:1``, ``128``, ``'relu'``, ``(*fp32:16, i32)``."""
    word = text.strip()
    if not word:
        raise SignatureError("empty signature entry (two commas in a row?); write one type or value per parameter")
    named = _FIELD.match(word)
    if named:  # BLOCK=1024: a NamedTuple's field=type is written inside its parentheses only
        raise _named_entry(word, named.group(1), named.group(2).strip())
    try:
        return _parse_entry(word)
    except SignatureError:
        parts = word.split()  # "*fp32:16 i32": a comma left out
        if len(parts) < 2 or not all(_parses(part) for part in parts):
            raise
        raise SignatureError(f"signature entry {word!r}: separate entries with commas: {', '.join(parts)!r}") from None


def _parses(word: str) -> bool:
    try:
        parse_entry(word)
    except SignatureError:
        return False
    return True


def _named_entry(word: str, name: str, value: str) -> SignatureError:
    """The error of a signature entry written NAME=VALUE: entries stand for parameters by their place."""
    try:
        entry = _parse_entry(value)
    except SignatureError:
        entry = None
    if entry is not None and entry.kind == "constexpr":
        return SignatureError(
            f"signature entry {word!r}: write the constexpr's value alone: {value}, or leave it out of the signature "
            f"and pass --constexpr {name}={value} (a spec entry: \"constexprs\": {json.dumps({name: entry.value}, default=repr)})")
    what = value if entry is not None else "the parameter's type or constexpr value"
    return SignatureError(f"signature entry {word!r}: entries are not named; write {what} alone (one entry per "
                          "parameter, in the kernel's order)")


def _parse_entry(word: str) -> SigEntry:
    entry = parse_tuple(word)
    if entry is not None:
        return entry
    descriptor = parse_descriptor_type(word)
    if descriptor is not None:  # a host TensorDescriptor (Triton 3.4+): no hint after it
        return SigEntry("runtime", descriptor.text, 1)
    head, sep, hint = word.partition(":")
    head = head.strip()
    found = parse_object(word) if head not in PARAM_TYPES else None
    if found is not None:  # tl.bfloat16; kernels:relu (a @triton.jit function, by module:qualname)
        return SigEntry("constexpr", value=found)
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


def _is_leaf_path(name: str) -> bool:
    try:
        return bool(split_path(name)[1])
    except ValueError:
        return False


def parse_constexpr_assignments(items: Iterable[str]) -> dict[str, Any]:
    """``["BLOCK=128", "ACT='relu'"]`` -> ``{"BLOCK": 128, "ACT": "relu"}``."""
    out: dict[str, Any] = {}
    for item in items:
        name, sep, value = item.partition("=")
        name = name.strip()
        if sep and _IDENT.match(name) is None and _is_leaf_path(name):
            raise SignatureError(f"--constexpr {item!r}: {name} is a tuple's element; write {value.strip()} in its place in "
                                 f"{split_path(name)[0]}'s --signature entry, as in (fp32, {value.strip()}); "
                                 "--constexpr sets whole parameters only")
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
        optional = optional_tail(open_names, lambda n: n in defaults and n in constexpr_params)
        raise SignatureError(
            f"{kernel}: the signature has {len(entries)} entries but the kernel has {len(open_names)} "
            f"parameters{given}: {', '.join(open_names)}; give one entry per parameter in this order "
            f"(a bare value for a tl.constexpr){may_leave_out(open_names, optional)}")
    by_name = {n: e for n, e in zip(open_names, entries)}
    params = []
    for n in arg_names:
        if n in constexprs:
            params.append(Parameter(n, "constexpr", value=constexprs[n]))
        elif n in by_name:
            e = by_name[n]
            whole = e.tuple_value() if e.kind == "tuple" and n in constexpr_params else None
            if whole is not None:
                params.append(Parameter(n, "constexpr", value=whole))  # a tuple constexpr: (8, 8)
                continue
            if e.kind == "tuple":
                params.extend(_tuple_leaves(kernel, n, e, n in constexpr_params))
                continue
            if n in constexpr_params and e.kind != "constexpr":
                raise SignatureError(f"{kernel}: parameter {n} is a tl.constexpr; give it a value, not the type {e.type}")
            if e.kind == "constexpr" and n not in constexpr_params and not isinstance(e.value, (int, float, bool, type(None), tuple)):
                raise SignatureError(f"{kernel}: parameter {n} is not a tl.constexpr; give it a type, not {e.value!r}")
            params.append(e.named(n))
        else:
            params.append(Parameter(n, "constexpr", value=defaults[n]))
    for p in params:
        check_json_value(kernel, p)
    return params


def optional_tail(names: Sequence[str], has_default: Callable[[str], bool]) -> list[str]:
    """The last ``names`` that a signature may leave out: constexprs with a default, after every other parameter."""
    tail: list[str] = []
    for name in reversed(names):
        if not has_default(name):
            break
        tail.insert(0, name)
    return tail


def may_leave_out(names: Sequence[str], optional: Sequence[str]) -> str:
    """What a count error adds when some of ``names`` may be left out: how few entries are enough."""
    if not optional:
        return ""
    enough = len(names) - len(optional)
    return (f"; {enough} {'entry is' if enough == 1 else 'entries are'} enough: the last {len(optional)} "
            f"({', '.join(optional)}) {'is a constexpr' if len(optional) == 1 else 'are constexprs'} with "
            f"{'a default and' if len(optional) == 1 else 'defaults and'} may be left out")


def _tuple_leaves(kernel: str, name: str, entry: SigEntry, constexpr: bool) -> list[Parameter]:
    if constexpr:
        raise SignatureError(f"{kernel}: parameter {name} is a tl.constexpr; give it a value (a plain tuple of "
                             "values, (8, 8), is one), not types or a NamedTuple (a tuple of types is a plain parameter: drop "
                             "tl.constexpr)")
    return entry.leaves(name)


def check_json_value(kernel: str, p: Parameter) -> None:
    """A constexpr's value must be one metadata.json can record."""
    if p.kind == "constexpr" and not isinstance(p.value, (int, float, bool, str, type(None), TritonObject)) and \
            not is_tuple_value(p.value):
        raise SignatureError(f"{kernel}: constexpr {p.name} = {p.value!r} cannot be recorded in metadata.json; "
                             "only numbers, booleans, strings, None, tuples of them (nested too), Triton dtypes and "
                             "@triton.jit functions can")


def check_against_ir(kernel: str, params: Sequence[Parameter], ir_params: Sequence[Parameter],
                     words: Words = CLI) -> None:
    """A signature given for an IR file (by tmlr-build, or derived from a jit call's arguments: ``words``) must
    agree with the IR's own parameters."""
    runtime = [p for p in params if p.kind == "runtime"]
    if len(runtime) != len(ir_params):
        given = ", ".join(f"{p.name}: {format_entry(p)}" for p in runtime)
        raise SignatureError(
            f"{kernel}: {len(runtime)} runtime parameters in {words.signature} ({given}) but {len(ir_params)} in the "
            f"IR function ({', '.join(p.type or '?' for p in ir_params)}); {words.fix_signature}")
    for p, q in zip(runtime, ir_params):
        same = p.type == q.type or (p.type and q.type and _signless(p.type) == _signless(q.type))
        if not same or p.divisibility != q.divisibility:
            raise SignatureError(
                f"{kernel}: parameter {p.name} is {format_entry(p)} in {words.signature} "
                f"but {format_entry(q)} in the IR; {words.fix_signature}")


def _signless(ty: str) -> str:
    # MLIR integers are signless: u32 in Python is i32 in the IR; 'k' (const) pointers are not marked.
    # A Gluon descriptor's layout is in the IR's #shared attribute, not in the type tmlr reads.
    desc = parse_descriptor_type(ty)
    if desc is not None:
        return DescriptorType(desc.dtype, desc.block_shape).text
    ty = ty.replace("*k", "*")
    return re.sub(r"\bu(\d+)$", r"i\1", ty.replace("*u", "*i"))


def to_triton(params: Sequence[Parameter]) -> tuple[dict[str, Any], dict[tuple[int, ...], Any], dict[tuple[int, ...], list]]:
    """The (signature, constexprs, attrs) triple Triton's ASTSource takes (3.3-3.9): a tuple parameter's type is the
    tuple of its elements' (a NamedTuple's a namedtuple), its elements' constexprs and attributes keyed by their path."""
    by_name = {p.name: p for p in params}
    sig: dict[str, Any] = {}
    consts: dict[tuple[int, ...], Any] = {}
    attrs: dict[tuple[int, ...], list] = {}

    def leaf(p: Parameter, path: tuple[int, ...]) -> str:
        if p.kind == "runtime":
            if p.divisibility == 16:
                attrs[path] = [["tt.divisibility", 16]]
            return p.type or ""
        if p.kind == "constexpr" and p.value == ():
            return ()  # an empty tuple: Triton's JIT types it () and passes nothing
        # Triton specializes an int equal to 1 into a constexpr of value 1 (3.3-3.9)
        consts[path] = 1 if p.kind == "equal_to_1" else p.value
        return "constexpr"

    def node(item: str | TupleParam, path: tuple[int, ...]) -> Any:
        if isinstance(item, str):
            return leaf(by_name[item], path)
        types = [node(x, path + (i,)) for i, x in enumerate(item.items)]
        if item.fields is None:
            return tuple(types)
        return collections.namedtuple("_".join(re.findall(r"[A-Za-z0-9_]+", item.name)), item.fields)(*types)

    for i, item in enumerate(call_params(by_name)):
        sig[item if isinstance(item, str) else item.name] = node(item, (i,))
    return sig, consts, attrs
