"""Facts read from the text of a .ttir/.ttgir file: the kernel's parameters and module attributes.

IR files carry no constexprs and no unsigned types (MLIR integers are signless); what they do carry -
types, ``tt.divisibility``, ``ttg.*`` module attributes, and from Triton 3.5 the parameter names (each
argument's name location, ``loc("x_ptr"(#loc))``, which also names its SSA value ``%x_ptr``) - is read
here with plain text scanning so the parent process can check inputs without loading Triton.

A tuple parameter is one argument per element that is not a constexpr or None. Triton 3.5 and 3.6 name each
such element after the tuple (``ptrs``, ``ptrs``, ``ptrs``); Triton 3.9 by its path (``ptrs.0``, ``t.shape.1``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from tmlr_runtime.abi import MLIR_TYPES, TMA_DESC, Parameter, split_top_level

from .errors import IRParseError
from .tensordesc import DescriptorType, parse_type

# !tt.tensordesc<tensor<64x64xf16>> (Triton 3.4-3.7), !tt.tensordesc<64x64xf16> (3.8+); a layout may follow the type
_DESCRIPTOR = re.compile(r"!tt\.tensordesc<(?:tensor<)?((?:\d+x)+)([A-Za-z0-9]+)\s*(?:,[^<>]*)?>?>")
_FUNC = re.compile(r"tt\.func\s+(?:public\s+)?@([A-Za-z_][A-Za-z0-9_$.]*)\s*\(")
_MODULE_ATTRS = re.compile(r"^\s*module\s+attributes\s*\{(.*)\}\s*\{\s*$", re.MULTILINE)


# TTGIR carries layouts (#ttg.blocked<...>) and ttg.* module attributes; TTIR has neither.
# (triton_gpu.*: the same before Triton 3.2.)
_TTGIR_MARK = re.compile(r"#ttg\.|ttg\.num-warps|#triton_gpu\.|triton_gpu\.num-warps")
_PTX_MARK = re.compile(r"^\s*\.version\s+\d+\.\d+.*?^\s*\.target\s+sm_", re.MULTILINE | re.DOTALL)
_LLIR_MARK = re.compile(r"^\s*(define\s|target\s+triple\s*=)", re.MULTILINE)


@dataclass(frozen=True)
class IRFunction:
    name: str
    # runtime parameters only, named as the IR records (a tuple's elements by path, ptrs[0]), else arg0, arg1, ...
    params: tuple[Parameter, ...]
    named: bool = False  # whether the IR records the parameters' names (Triton 3.5+)
    # the tuples' nesting is a guess: Triton 3.5-3.6 name a tuple's elements after the tuple only, so they are
    # taken as a flat tuple (ptrs[0], ptrs[1]); only the tuple's name is the kernel's
    flat: bool = False


def _split(text: str) -> list[str]:
    parts = split_top_level(text, "([{<", '"')
    return parts[:-1] if parts and not parts[-1] else parts


def _arg_list(text: str, start: int) -> str:
    depth, quote = 1, False
    for i in range(start, len(text)):
        ch = text[i]
        if ch == '"':
            quote = not quote
        elif not quote and ch == "(":
            depth += 1
        elif not quote and ch == ")":
            depth -= 1
            if depth == 0:
                return text[start:i]
    raise IRParseError("unterminated tt.func argument list")


def _triton_type(mlir: str, attrs: str, where: str) -> str:
    if "tt.nv_tma_desc = 1" in attrs:
        return TMA_DESC
    ptr = re.fullmatch(r"!tt\.ptr<([^,>]+)(?:,\s*\d+)?>", mlir)
    if ptr:
        return "*" + _triton_type(ptr.group(1).strip(), "", where)
    if mlir in MLIR_TYPES:
        return MLIR_TYPES[mlir]
    desc = _DESCRIPTOR.fullmatch(mlir)
    if desc and desc.group(2) in MLIR_TYPES:
        return DescriptorType(MLIR_TYPES[desc.group(2)], tuple(int(d) for d in desc.group(1).split("x")[:-1])).text
    raise IRParseError(f"{where}: parameter type {mlir!r} is not one a kernel parameter can have in tmlr")


def read_function(text: str, where: str) -> IRFunction:
    """The public tt.func of the module: its name and runtime parameters."""
    m = _FUNC.search(text)
    if m is None:
        raise IRParseError(f"{where}: no tt.func found; is this a Triton .ttir/.ttgir file?")
    params, names = [], []
    aliases = dict(_LOC_ALIAS.findall(text))
    for i, arg in enumerate(_split(_arg_list(text, m.end()))):
        am = re.match(r"%([\w.$-]+)\s*:\s*(.+?)\s*(\{.*\})?\s*(loc\(.*\))?$", arg, re.DOTALL)
        if am is None:
            raise IRParseError(f"{where}: cannot read tt.func argument {arg!r}")
        attrs = am.group(3) or ""
        div = re.search(r"tt\.divisibility\s*=\s*(\d+)", attrs)
        ty = _triton_type(am.group(2).strip(), attrs, where)
        params.append(Parameter(f"arg{i}", "runtime", ty, 16 if div and int(div.group(1)) % 16 == 0 else 1))
        names.append(_recorded_name(am.group(1), am.group(4) or "", aliases))
    folded = _fold_descriptors(params, names)
    return _named(m.group(1), folded)


# loc("x_ptr"(#loc)) inline, or loc(#loc14) with "#loc14 = loc("x_ptr"(#loc))" among the file's aliases; without
# line info, loc("x_ptr")
_NAME_LOC = re.compile(r'^loc\("([^"]*)"\s*(?:\(|\)$)')
_LOC_ALIAS = re.compile(r"^(#loc\d*)\s*=\s*(loc\(.*\))\s*$", re.MULTILINE)


def _recorded_name(ssa: str, loc: str, aliases: dict[str, str]) -> str | None:
    """The name Triton 3.5+ gives an argument: its name location, else its SSA name (unless MLIR's
    own ``%argN``). A file location (``loc("k.py":5:0)``) names nothing."""
    alias = re.fullmatch(r"loc\((#loc\d*)\)", loc.strip())
    found = _NAME_LOC.match(aliases.get(alias.group(1), "") if alias else loc.strip())
    if found:
        return found.group(1)
    return None if re.fullmatch(r"arg\d+", ssa) else ssa


def _named(name: str, params: list[tuple[Parameter, str | None]]) -> IRFunction:
    """Parameters named as the IR records, when it records a usable name for every one; else arg0, arg1, ..."""
    leaves, flat = _leaf_names([n for _, n in params])
    if leaves is None or len(set(leaves)) != len(leaves):
        leaves, flat = None, False
    out = tuple(Parameter(leaves[i] if leaves else f"arg{i}", p.kind, p.type, p.divisibility)
                for i, (p, _) in enumerate(params))
    return IRFunction(name, out, bool(leaves), flat)


def _leaf_names(recorded: list[str | None]) -> tuple[list[str] | None, bool]:
    """tmlr's leaf names of the recorded ones, and whether the tuples are taken flat: a path (Triton 3.9) as
    ``ptrs[0]``, ``t.shape[1]``; a run of one name (Triton 3.5-3.6) as ``ptrs[0]``, ``ptrs[1]``, ...; None for
    names that are neither."""
    names = [n for n in recorded if n is not None]
    if len(names) != len(recorded):
        return None, False
    if any("." in n for n in names):
        paths = [_path(n) for n in names]
        return ([p for p in paths if p] if None not in paths else None), False
    runs: list[tuple[str, int]] = []  # (name, how many times in a row)
    for n in names:
        if runs and runs[-1][0] == n:
            runs[-1] = (n, runs[-1][1] + 1)
        elif not n.isidentifier() or any(r == n for r, _ in runs):
            return None, False
        else:
            runs.append((n, 1))
    return [f"{n}[{i}]" if count > 1 else n for n, count in runs for i in range(count)], any(c > 1 for _, c in runs)


def _path(name: str) -> str | None:
    """``t.shape.1`` -> ``t.shape[1]``: a field stays a field, an index becomes [i]."""
    root, *steps = name.split(".")
    if not root.isidentifier() or not all(s.isidentifier() or re.fullmatch(r"0|[1-9][0-9]*", s) for s in steps):
        return None
    return root + "".join(f"[{s}]" if s[0].isdigit() else f".{s}" for s in steps)


def _fold_descriptors(params: list[Parameter], names: list[str | None]) -> list[tuple[Parameter, str | None]]:
    """A host tensor descriptor argument is, in the IR, the descriptor followed by its shape (ndim i32) and
    strides (ndim i64): one parameter of the kernel's signature, named as the descriptor is."""
    out, i = [], 0
    while i < len(params):
        desc = parse_type(params[i].type)
        n = len(desc.block_shape) if desc else 0
        folds = desc is not None and [p.type for p in params[i + 1:i + 1 + 2 * n]] == ["i32"] * n + ["i64"] * n
        out.append((params[i], names[i]))
        i += 1 + 2 * n if folds else 1
    return out


def module_attributes(text: str) -> dict[str, object]:
    """``ttg.num-warps``, ``ttg.num-ctas``, ``ttg.threads-per-warp`` (ints) and ``ttg.target`` (str)."""
    m = _MODULE_ATTRS.search(text)
    out: dict[str, object] = {}
    if m is None:
        return out
    for item in _split(m.group(1)):
        key, sep, value = item.partition("=")
        if not sep:
            continue
        key, value = key.strip().strip('"'), value.strip()
        num = re.fullmatch(r"(-?\d+)\s*:\s*i\d+", value)
        out[key] = int(num.group(1)) if num else value.strip('"')
    return out


def stage_of(data: bytes) -> str | None:
    """The stage a file's content is ("ttir", "ttgir", "llir", "ptx", "cubin"), or None for no IR at all."""
    if data.startswith(b"\x7fELF"):
        return "cubin"
    text = data.decode("utf-8", errors="replace")
    if _PTX_MARK.search(text):
        return "ptx"
    if _FUNC.search(text):
        return "ttgir" if _TTGIR_MARK.search(text) else "ttir"
    if _LLIR_MARK.search(text):
        return "llir"
    return None
