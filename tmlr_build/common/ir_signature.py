"""The full signature of an IR input (.ttir, .ttgir, .llir, .ptx, .cubin, a Triton cache entry).

The IR holds the runtime parameters only: their types, and from Triton 3.5 their names - a tuple's elements under
the tuple's name (3.5-3.6) or by their path (3.9), the elements that are constexprs or None left out. Triton leaves
the constexprs out of the IR and records their values nowhere in a cache entry (its metadata JSON holds the compile
options, 3.3-3.9), so the user gives them back - ``--constexpr NAME=VALUE``, or values in ``--signature`` - and
``--arg-names`` says where they stand among the runtime parameters. The artifact then has the kernel's parameters in
the kernel's order and is called as the Triton kernel is.
"""
from __future__ import annotations

from typing import Any, Sequence

from tmlr_runtime.tuples import call_params, format_nested, split_path

from .errors import RecordMismatchError, SignatureError
from .mlir_text import IRFunction
from .signature import Parameter, SigEntry, check_json_value, format_entry


def from_signature(where: str, entries: Sequence[SigEntry], arg_names: Sequence[str] | None,
                   constexprs: dict[str, Any], ir: IRFunction | None) -> list[Parameter]:
    """``--signature`` given: its entries named by ``--arg-names``, else the runtime ones as the IR names them
    (constexpr entries by their position, ``arg4``); with ``--constexpr``, the entries fill the parameters
    ``--arg-names`` lists that ``--constexpr`` does not give, as for a Python kernel. A tuple entry stands for its
    elements, named by path (``ptrs[0]``)."""
    if constexprs:
        if arg_names is None:
            raise SignatureError(f"{where}: --constexpr with --signature: pass --arg-names with every parameter of "
                                 "the kernel in its order; the signature's entries fill those --constexpr does not give")
        _check_known(where, arg_names, constexprs)
        open_names = [n for n in arg_names if n not in constexprs]
        if len(open_names) != len(entries):
            raise SignatureError(f"{where}: the signature has {len(entries)} entries but --arg-names leaves "
                                 f"{len(open_names)} parameters to it ({', '.join(open_names)}) besides the --constexpr "
                                 f"ones ({', '.join(constexprs)}); give one entry per parameter in this order")
        by_name = dict(zip(open_names, entries))
        params = [p for n in arg_names
                  for p in ([Parameter(n, "constexpr", value=constexprs[n])] if n in constexprs else by_name[n].leaves(n))]
    elif arg_names is not None:
        if len(arg_names) != len(entries):
            raise SignatureError(f"{where}: --arg-names has {len(arg_names)} names but the signature {len(entries)} entries")
        params = [p for n, e in zip(arg_names, entries) for p in e.leaves(n)]
    else:
        params = [p for n, e in zip(_names_by_ir(entries, ir), entries) for p in e.leaves(n)]
    return _checked(where, params, ir, arg_names is not None)


def _names_by_ir(entries: Sequence[SigEntry], ir: IRFunction | None) -> list[str]:
    """The IR's names of the entries that have arguments in it (runtime ones, tuples with a runtime element), the
    others by position (``arg4``); all by position when the IR names nothing or the counts differ (the checks say)."""
    in_ir = [any(p.kind == "runtime" for p in e.leaves("_")) for e in entries]
    roots = _roots(ir.params) if ir is not None and ir.named else []
    if not roots or len(roots) != sum(in_ir):
        return [f"arg{i}" for i in range(len(entries))]
    recorded = iter(roots)
    return [next(recorded) if there else f"arg{i}" for i, there in enumerate(in_ir)]


def _roots(params: Sequence[Parameter]) -> list[str]:
    """The call-level names of IR parameters: a plain parameter's, a tuple's once for all its elements."""
    out: list[str] = []
    for p in params:
        root = split_path(p.name)[0]
        if not out or out[-1] != root:
            out.append(root)
    return out


def from_ir(where: str, ir: IRFunction, arg_names: Sequence[str] | None, constexprs: dict[str, Any]) -> list[Parameter]:
    """No ``--signature``: the runtime parameters the IR gives (a tuple's elements as the IR records them), and the
    ``--constexpr`` ones. ``--arg-names`` lists the runtime parameters only (the constexprs follow them), or every
    parameter in the kernel's order; without it the constexprs follow the runtime parameters in the order given."""
    groups = _groups(where, ir)
    clash = [_named_group(g) for g in groups if g[0] in constexprs and arg_names is None]
    if clash:
        raise SignatureError(f"{where}: --constexpr names the runtime parameter {', '.join(clash)} of the IR; give "
                             "only the constexprs Triton left out of it")
    names = list(arg_names) if arg_names is not None else [root for root, _ in groups]
    if len(names) == len(groups) and not set(names) & set(constexprs):
        names += list(constexprs)
    elif len(names) != len(groups) + len(constexprs):
        given = f" and {len(constexprs)} --constexpr" if constexprs else ""
        raise SignatureError(f"{where}: --arg-names has {len(names)} names but the kernel has {len(groups)} runtime "
                             f"parameters ({', '.join(map(_named_group, groups))}){given}; name the runtime "
                             "parameters only, or every parameter in the kernel's order")
    _check_known(where, names, constexprs)
    values = iter(groups)
    params = [p for n in names
              for p in ([Parameter(n, "constexpr", value=constexprs[n])] if n in constexprs else _renamed(next(values), n))]
    return _checked(where, params, ir, arg_names is not None)


def _groups(where: str, ir: IRFunction) -> list[tuple[str, list[Parameter]]]:
    """The IR's runtime parameters by call-level name: a plain one alone, a tuple's elements together."""
    if not ir.named:
        return [(p.name, [p]) for p in ir.params]
    try:
        call_params(p.name for p in ir.params)
    except ValueError as e:  # t[0] and t[2] recorded: t[1] is a constexpr or None the IR leaves out
        raise SignatureError(f"{where}: the IR's arguments ({', '.join(p.name for p in ir.params)}) make no tuple: {e}. "
                             "A tuple's constexpr and None elements are not in the IR; pass --signature with every "
                             "parameter, each tuple with its values in place, e.g. '(*fp32:16, 3, *fp32:16), i32' "
                             "(and --arg-names)") from None
    out: list[tuple[str, list[Parameter]]] = []
    for p in ir.params:
        root = split_path(p.name)[0]
        if out and out[-1][0] == root:
            out[-1][1].append(p)
        else:
            out.append((root, [p]))
    return out


def _named_group(group: tuple[str, list[Parameter]]) -> str:
    return f"{group[0]}: {format_nested(group[1])}"


def _named_entry(p: Parameter) -> str:
    return f"{p.name}={p.value!r}" if p.kind == "constexpr" else f"{p.name}: {format_entry(p)}"


def _renamed(group: tuple[str, list[Parameter]], name: str) -> list[Parameter]:
    root, leaves = group
    return [Parameter(name + p.name[len(root):], p.kind, p.type, p.divisibility, p.value) for p in leaves]


def _check_known(where: str, names: Sequence[str], constexprs: dict[str, Any]) -> None:
    unknown = [n for n in constexprs if n not in names]
    if unknown:
        raise SignatureError(f"{where}: --constexpr names {', '.join(unknown)}, which --arg-names does not list "
                             f"({', '.join(names)}); list every parameter of the kernel in its order")


def _checked(where: str, params: list[Parameter], ir: IRFunction | None, renamed: bool) -> list[Parameter]:
    """No name twice; a name the IR records for a runtime parameter kept (it is the kernel's), and a tuple's
    elements where the IR records them (all but the nesting where it is a guess); values JSON can hold."""
    names = [p.name for p in params]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise SignatureError(f"{where}: parameter {', '.join(twice)} named twice ({', '.join(names)}); "
                             "name every parameter once with --arg-names")
    for p in params:
        check_json_value(where, p)
    runtime = [p for p in params if p.kind == "runtime"]
    if ir is None or not ir.named or len(runtime) != len(ir.params):  # a count that differs: check_against_ir says so
        return params
    recorded = ", ".join(r.name for r in ir.params)
    for i, (p, q) in enumerate(zip(runtime, ir.params)):
        root = split_path(p.name)[0]
        if renamed and root != split_path(q.name)[0]:
            raise RecordMismatchError(
                f"{where}: runtime parameter {i} is {p.name!r} in --arg-names but {q.name!r} in the IR (which records the "
                f"kernel's names: {recorded}); keep the IR's names and list the constexprs where the kernel has them",
                given=p.name, recorded=q.name)
        # Triton 3.5-3.6 name a tuple's elements after the tuple: flat (ptrs[0], ptrs[1]) where there are several,
        # the tuple's name alone where one element is in the IR (a NamedTuple's one pointer beside a function)
        if p.name != q.name and not (root == split_path(q.name)[0] and (ir.flat or q.name == root)):
            raise RecordMismatchError(
                f"{where}: runtime argument {i} is {p.name!r} by the signature but {q.name!r} in the IR (which records "
                f"{recorded}); give one --signature entry per parameter of the kernel, a tuple as one entry with its "
                "constexpr and None elements in place", given=p.name, recorded=q.name)
    return params


def check_recorded_constexprs(where: str, params: Sequence[Parameter], constexprs: dict[str, Any]) -> None:
    """``--constexpr`` for an input whose sidecar records every parameter (tmlr-build --keep-ir): each must be one
    of its constexprs, with the value it was compiled with."""
    recorded = {p.name: p for p in params}
    for name, value in constexprs.items():
        p = recorded.get(name)
        if p is None or p.kind != "constexpr":
            what = "no parameter" if p is None else f"the runtime parameter {_named_entry(p)}"
            raise SignatureError(f"{where}: --constexpr {name}: the sidecar records {what} of that name; its "
                                 f"parameters: {', '.join(map(_named_entry, params))}")
        if p.value != value or type(p.value) is not type(value):
            raise RecordMismatchError(f"{where}: --constexpr {name}={value!r}, but this IR was compiled with "
                                        f"{name}={p.value!r} (its sidecar says so); build it again from the .py for "
                                        "another value", given=value, recorded=p.value)


def import_note(name: str, stage: str, signature: Sequence[dict[str, Any]]) -> str:
    """What a build of an IR input given no --signature or --constexpr says: how its artifact is called, what the IR
    cannot say (constexprs, a tuple's constexpr elements and nesting, unsigned types), and how to give it back."""
    names = [p["name"] for p in signature]
    unnamed = names == [f"arg{i}" for i in range(len(names))]
    call = [p if isinstance(p, str) else p.name for p in call_params(names)]
    tuples = [n for n in call if n not in names]
    integers = [p["name"] for p in signature if p.get("type") in _MAYBE_UNSIGNED]
    return (f"{name}: imported from a .{stage} without constexprs (Triton's IR and cache entry do not record them): "
            f"call it with the runtime parameters only, {name}[grid]({', '.join(call)})"
            + ("; the IR records no parameter names (Triton 3.3 and 3.4 write none): --arg-names gives the "
               "kernel's" if unnamed else "")
            + (f"; {', '.join(tuples)}: a tuple as the IR records it, without its constexpr and None elements (and flat, "
               "from Triton 3.5-3.6, which record no nesting): if it has such elements or nests, build again with "
               "--signature, the tuple written with its values in place" if tuples else "")
            + (f"; {', '.join(integers)}: signed, as the IR has no unsigned types: where the kernel takes u64 (Triton's "
               "type of an int >= 2**63) or points to unsigned ints, give those types with --signature" if integers else "")
            + ". If the kernel has tl.constexpr parameters, build again with --constexpr NAME=VALUE for each "
            "(and --arg-names with every parameter in the kernel's order, when they do not come last) to call it "
            "as the Triton kernel is called")


# the IR's types that may stand for unsigned ones (MLIR integers are signless): Triton's JIT types an int argument
# i32, i64 or u64 (never u32), and a pointer as its tensor's dtype
_MAYBE_UNSIGNED = ("i64", "*i8", "*i16", "*i32", "*i64")
