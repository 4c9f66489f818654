"""Tuple parameters (schema v5): a kernel parameter that is a tuple or NamedTuple of others, nested at will.

The artifact's ``signature`` lists the leaves, named by their path (``ptrs[0]``, ``t.shape[1]``, ``t.ptr``), as
Triton's compiled kernel takes them; the leaf names alone carry the nesting, which :func:`call_params` rebuilds and
metadata.json's ``tuples`` records (the reader checks the two agree). A call passes the tuples; the runtime flattens
them into leaves (:class:`Flattener`) and launches as for any kernel. Shared by tmlr_build and tmlr_runtime.
"""
from __future__ import annotations

import re
from typing import Any, Iterable, Sequence, Union

from .abi import Parameter, format_entry
from .errors import ArgumentError, short_repr
from .records import Record

_ROOT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_STEP = re.compile(r"\[(0|[1-9][0-9]*)\]|\.([A-Za-z_][A-Za-z0-9_]*)")


class TupleParam(Record):
    """A tuple parameter (``fields`` None) or a NamedTuple one (``fields``: its field names), or one nested in another:
    ``items`` are leaf names (``signature`` entries) and nested tuples, in order."""

    name: str  # "ptrs", "t.shape"
    fields: tuple[str, ...] | None
    items: tuple[Union[str, "TupleParam"], ...]

    @property
    def leaves(self) -> tuple[str, ...]:
        return tuple(x for item in self.items for x in ((item,) if isinstance(item, str) else item.leaves))

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"name": self.name, "kind": "tuple" if self.fields is None else "namedtuple"}
        if self.fields is not None:
            doc["fields"] = list(self.fields)
        doc["items"] = [item if isinstance(item, str) else item.to_json() for item in self.items]
        return doc


def split_path(name: str) -> tuple[str, tuple[int | str, ...]]:
    """``"t.shape[1]"`` -> ``("t", ("shape", 1))``; ValueError for a name that is not a leaf path."""
    root = _ROOT.match(name)
    if root is None:
        raise ValueError(f"{name!r} is not a parameter name")
    steps, at = [], root.end()
    while at < len(name):
        m = _STEP.match(name, at)
        if m is None:
            raise ValueError(f"{name!r} is not a parameter name (write ptrs[0] or t.field)")
        steps.append(int(m.group(1)) if m.group(1) is not None else m.group(2))
        at = m.end()
    return root.group(), tuple(steps)


def call_params(names: Iterable[str]) -> list[str | TupleParam]:
    """The call-level parameters of a signature's leaf ``names``: a name, or the tuple its leaves make; ValueError
    when the leaves make no tuple (indices not 0, 1, ... in order, a name both a leaf and a tuple)."""
    groups: dict[str, list[tuple[tuple[int | str, ...], str]]] = {}
    last = None
    for name in names:
        root, steps = split_path(name)
        if root in groups and root != last:
            raise ValueError(f"the leaves of {root} are not together in the signature ({name})")
        groups.setdefault(root, []).append((steps, name))
        last = root
    return [group[0][1] if group == [((), root)] else _node(root, group) for root, group in groups.items()]


def _node(name: str, group: list[tuple[tuple[int | str, ...], str]]) -> TupleParam:
    if any(not steps for steps, _ in group):
        raise ValueError(f"{name} is both a parameter and a tuple")
    keys: list[int | str] = []
    subs: dict[int | str, list[tuple[tuple[int | str, ...], str]]] = {}
    for steps, leaf in group:
        if steps[0] not in subs:
            keys.append(steps[0])
        elif keys[-1] != steps[0]:
            raise ValueError(f"the leaves of {name} are out of order ({leaf})")
        subs.setdefault(steps[0], []).append((steps[1:], leaf))
    named = isinstance(keys[0], str)
    if any(isinstance(k, str) != named for k in keys) or (not named and keys != list(range(len(keys)))):
        raise ValueError(f"{name}: its elements must be [0], [1], ... in order, or all .field names")
    items = []
    for k in keys:
        child = f"{name}.{k}" if named else f"{name}[{k}]"
        sub = subs[k]
        items.append(sub[0][1] if sub == [((), child)] else _node(child, sub))
    return TupleParam(name, tuple(keys) if named else None, tuple(items))  # type: ignore[arg-type]


def describe(node: TupleParam, types: dict[str, str]) -> str:
    """The tuple in the signature syntax, each leaf by ``types[leaf]``: ``(*fp32:16, i32)``, ``Tensor(ptr=*fp32, ...)``."""
    parts = [types[item] if isinstance(item, str) else describe(item, types) for item in node.items]
    if node.fields is not None:
        return "(" + ", ".join(f"{f}={p}" for f, p in zip(node.fields, parts)) + ")"
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


def format_nested(params: Sequence[Parameter]) -> str:
    """:func:`~tmlr_runtime.abi.format_signature` of a signature with tuple elements."""
    types = {p.name: format_entry(p) for p in params}
    return ", ".join(types[p] if isinstance(p, str) else describe(p, types) for p in call_params(types))


class Flattener:
    """A call's tuple arguments as the leaf arguments the launch plan takes: made once at load for a kernel with tuple
    parameters (a kernel without any never meets it)."""

    __slots__ = ("kernel", "params", "by_name")

    def __init__(self, kernel: str, params: list[str | TupleParam]) -> None:
        self.kernel, self.params = kernel, params
        self.by_name = {p.name: p for p in params if isinstance(p, TupleParam)}

    def flatten(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        """``(leaf positional arguments, leaf keyword arguments)``; ArgumentError naming a tuple of the wrong shape."""
        out: list[Any] = []
        for p, value in zip(self.params, args):
            if isinstance(p, str):
                out.append(value)
            else:
                self._leaves(p, value, out)
        out += args[len(self.params):]  # too many: the binder says so
        if not kwargs:
            return out, kwargs
        named: dict[str, Any] = {}
        for key, value in kwargs.items():
            p = self.by_name.get(key)
            if p is None:
                named[key] = value
            else:
                leaves: list[Any] = []
                self._leaves(p, value, leaves)
                named.update(zip(p.leaves, leaves))
        return out, named

    def tuples(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        """The call's tuple arguments by parameter name, as passed (what a grid callable gets besides the leaves)."""
        out = {p.name: value for p, value in zip(self.params, args) if isinstance(p, TupleParam)}
        out.update((key, value) for key, value in kwargs.items() if key in self.by_name)
        return out

    def _leaves(self, node: TupleParam, value: Any, out: list[Any]) -> None:
        if not isinstance(value, (tuple, list)) or len(value) != len(node.items):
            what = f"a NamedTuple with fields {', '.join(node.fields)}" if node.fields else "a tuple"
            raise ArgumentError(f"{self.kernel}: {node.name} must be {what} of {len(node.items)} elements, got "
                                f"{type(value).__name__} {short_repr(value)}; pass a tuple, list or NamedTuple", node.name)
        fields = getattr(value, "_fields", None)
        if node.fields is not None and fields is not None and tuple(fields) != node.fields:
            raise ArgumentError(f"{self.kernel}: {node.name} was built for a NamedTuple with fields {', '.join(node.fields)}, "
                                f"got {type(value).__name__} with {', '.join(fields)}; pass one with the fields it was built for",
                                node.name)
        for item, v in zip(node.items, value):
            if isinstance(item, str):
                out.append(v)
            else:
                self._leaves(item, v, out)
