"""What a recording knows of one kernel's launches, as one family spec entry; pure data, no Triton.

A :class:`Family` holds the launches of one kernel that one spec entry can build: the same launch options,
the same constexpr and heuristic names, and each signature entry of the same shape (a tuple's nesting) with the
same kind of leaf (pointer, int, float, bool; a fixed type such as ``nvTmaDesc``; a value such as ``None``).
What may differ between its launches, and how the entry says so (docs/spec-format.md, "Variants"):

- a pointer's or int's divisibility by 16: ``:16`` seen and not -> ``:16?``; ``:1`` (equal to 1) seen beside
  others -> the plain type, which takes 1 too;
- types: each leaf's type per launch ("rows"); leaves whose types always changed together share one type
  variable (``*T:16, *T:16`` with ``"types": {"T": ["fp16", "bf16"]}``), others get their own;
- constexpr values -> ``"constexprs": {"BLOCK": [256, 1024]}``; heuristic values -> ``"heuristics"``.

An entry read back (:meth:`Family.of_entry`) gives the same family, so merging a recording into a spec that
already holds it changes nothing (``of_entry(f.entry()) == f``).
"""
from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterable

from tmlr_runtime.abi import POINTEE_TYPES, SCALAR_TYPES, split_top_level

from ..common.signature import map_leaves

_TYPE_LEAF = re.compile(r"^(\*k?)?([A-Za-z_]\w*)(?::(16\?|16|1))?$")
_PATTERNS = {None: "", "16": "16", "1": "1"}
_HOLE = "@"  # a leaf's place in an entry's template (no signature word holds it)
VARIABLE_KINDS = ("ptr", "int", "float", "bool")


def _kind(prefix: str, types: list[str]) -> str:
    if prefix == "*":
        return "ptr"
    if all(t in ("i1", "u1") for t in types):
        return "bool"
    return "float" if all(t.startswith(("fp", "bf")) for t in types) else "int"


def _unique(values: Iterable[Any]) -> list[Any]:
    seen: dict[str, Any] = {}
    for v in values:
        seen.setdefault(json.dumps(v), v)
    return list(seen.values())


@dataclass
class Leaf:
    kind: str  # one of VARIABLE_KINDS, or a fixed leaf: "=*kfp16", "=nvTmaDesc", "=tensordesc<...>", "=None", "=3"
    types: list[str]  # the types it may have (one, or a variable's); [] for a fixed leaf
    variable: str | None  # the type variable the entry names it by
    patterns: set[str]  # divisibility seen: "16", "1", "" (plain)


def parse_leaf(text: str, types: dict[str, list[str]]) -> Leaf:
    """One leaf of a signature entry (``*fp16:16``, ``*T:16?``, ``i32:1``, ``None``, ``1024``)."""
    m = _TYPE_LEAF.match(text)
    if m is None:
        return Leaf("=" + text, [], None, {""})
    prefix, base, pattern = m.group(1) or "", m.group(2), m.group(3)
    patterns = {"16", ""} if pattern == "16?" else {_PATTERNS[pattern]}
    if prefix == "*k" and base not in types:  # a constant pointer: no type variables (*kT would read as *k + T)
        return Leaf("=*k" + base, [], None, patterns)
    if base in types:
        return Leaf(_kind(prefix, types[base]), list(types[base]), base, patterns)
    if base in SCALAR_TYPES and (prefix != "*" or base in POINTEE_TYPES):
        return Leaf(_kind(prefix, [base]), [base], None, patterns)
    return Leaf("=" + text, [], None, {""})  # nvTmaDesc, True, None: fixed


def _template(entry: str, leaves: list[str]) -> str:
    return map_leaves(entry, lambda leaf: leaves.append(leaf) or _HOLE)


@dataclass
class Family:
    """The launches one spec entry builds (see the module's docstring)."""

    template: tuple[str, ...]  # each signature entry with its leaves as "@": "@", "(@, @)", "Pair(a=@, b=@)"
    kinds: tuple[str, ...]  # per leaf, in order over the entries
    options: dict[str, Any]
    rows: list[tuple[str | None, ...]]  # per launch (or type choice of an entry read back): each leaf's type
    patterns: list[set[str]]  # per leaf
    constexprs: dict[str, list[Any]] = field(default_factory=dict)
    heuristics: dict[str, list[Any]] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """What two families must share to be one entry."""
        return json.dumps([self.template, self.kinds, self.options, sorted(self.constexprs),
                           sorted(self.heuristics)], sort_keys=True)

    @classmethod
    def of_launch(cls, entries: Iterable[str], options: dict[str, Any], constexprs: dict[str, Any],
                  heuristics: dict[str, Any]) -> Family:
        """One launch: its signature entries (as tmlr_build.builder.jit_specialize writes them), without the
        constexprs, which come by name as the call's values, like the heuristics'."""
        texts: list[str] = []
        template = tuple(_template(e, texts) for e in entries)
        leaves = [parse_leaf(t, {}) for t in texts]
        return cls(template, tuple(leaf.kind for leaf in leaves), dict(options),
                   [tuple(leaf.types[0] if leaf.types else None for leaf in leaves)],
                   [leaf.patterns for leaf in leaves], {n: [v] for n, v in constexprs.items()},
                   {n: [v] for n, v in heuristics.items()})

    @classmethod
    def of_entry(cls, entry: dict[str, Any]) -> Family:
        """The family a recorded spec entry builds (ValueError when it is not one this module writes)."""
        types = entry.get("types") or {}
        sig = entry.get("signature", "")
        if not isinstance(sig, str) or not isinstance(types, dict):
            raise ValueError("its signature or types are not as tmlr-build record writes them")
        texts: list[str] = []
        template = tuple(_template(e, texts) for e in (split_top_level(sig) if sig.strip() else []))
        leaves = [parse_leaf(t, types) for t in texts]
        names = list(types)
        rows = []
        for choice in itertools.product(*(types[n] for n in names)):
            chosen = dict(zip(names, choice))
            rows.append(tuple(chosen[leaf.variable] if leaf.variable else (leaf.types[0] if leaf.types else None)
                              for leaf in leaves))
        constexprs = {n: list(v) if isinstance(v, list) else [v] for n, v in (entry.get("constexprs") or {}).items()}
        heuristics = {n: list(v) for n, v in (entry.get("heuristics") or {}).items()}
        return cls(template, tuple(leaf.kind for leaf in leaves), dict(entry.get("options") or {}), _unique(rows),
                   [leaf.patterns for leaf in leaves], constexprs, heuristics)

    def merge(self, other: Family) -> bool:
        """Take ``other``'s launches (same :attr:`key`); whether anything was new."""
        before = self.entry()
        self.rows = [tuple(r) for r in _unique([*self.rows, *other.rows])]
        for mine, theirs in zip(self.patterns, other.patterns):
            mine |= theirs
        for own, new in ((self.constexprs, other.constexprs), (self.heuristics, other.heuristics)):
            for name, values in new.items():
                own[name] = _unique([*own.get(name, []), *values])
        return self.entry() != before

    def entry(self) -> dict[str, Any]:
        """The spec keys of this family: "signature", and "types", "constexprs", "heuristics", "options" when any."""
        names = self._variables()
        texts = [self._leaf_text(i, names.get(i)) for i in range(len(self.kinds))]
        leaves = iter(texts)
        sig = ", ".join(re.sub(_HOLE, lambda _: next(leaves), t) for t in self.template)
        out: dict[str, Any] = {"signature": sig}
        types = {name: _unique(r[i] for r in self.rows) for i, name in sorted(names.items())}
        if types:
            out["types"] = types
        if self.constexprs:
            out["constexprs"] = {n: v[0] if len(v) == 1 else v for n, v in self.constexprs.items()}
        if self.heuristics:
            out["heuristics"] = dict(self.heuristics)
        if self.options:
            out["options"] = dict(self.options)
        return out

    def _variables(self) -> dict[int, str]:
        """Leaf index -> type variable, for the leaves whose type differs between rows; leaves whose types changed
        together (the same column over the rows) share one."""
        columns: dict[tuple[Any, ...], str] = {}
        out = {}
        for i, kind in enumerate(self.kinds):
            column = tuple(r[i] for r in self.rows)
            if kind in VARIABLE_KINDS and len(set(column)) > 1:
                if column not in columns:
                    n = len(columns)
                    columns[column] = "TUVW"[n] if n < 4 else f"T{n - 3}"
                out[i] = columns[column]
        return out

    def _leaf_text(self, i: int, variable: str | None) -> str:
        kind = self.kinds[i]
        if kind.startswith("="):
            fixed = kind[1:]
            return fixed if not fixed.startswith("*k") else fixed + _pattern(self.patterns[i])
        base = variable or str(self.rows[0][i])
        return ("*" if kind == "ptr" else "") + base + _pattern(self.patterns[i])


def _pattern(seen: set[str]) -> str:
    """``:16`` / ``:1`` / plain when only that was seen; ``:16?`` when 16 and another; plain for 1 and plain."""
    if len(seen) == 1:
        (only,) = seen
        return f":{only}" if only else ""
    return ":16?" if "16" in seen else ""
