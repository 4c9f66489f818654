"""The full signature of an IR input (.ttir, .ttgir, .llir, .ptx, .cubin, a Triton cache entry).

The IR holds the runtime parameters only: their types, and from Triton 3.5 their names. Triton leaves
the constexprs out of the IR and records their values nowhere in a cache entry (its metadata JSON holds
the compile options, 3.3-3.9), so the user gives them back - ``--constexpr NAME=VALUE``, or values in
``--signature`` - and ``--arg-names`` says where they stand among the runtime parameters. The artifact
then has the kernel's parameters in the kernel's order and is called as the Triton kernel is.
"""
from __future__ import annotations

from typing import Any, Sequence

from .errors import RecordMismatchError, SignatureError
from .mlir_text import IRFunction
from .signature import Parameter, SigEntry, check_json_value, format_entry


def from_signature(where: str, entries: Sequence[SigEntry], arg_names: Sequence[str] | None,
                   constexprs: dict[str, Any], ir: IRFunction | None) -> list[Parameter]:
    """``--signature`` given: its entries named by ``--arg-names``, else the runtime ones as the IR names them
    (constexpr entries by their position, ``arg4``); with ``--constexpr``, the entries fill the parameters
    ``--arg-names`` lists that ``--constexpr`` does not give, as for a Python kernel."""
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
        params = [Parameter(n, "constexpr", value=constexprs[n]) if n in constexprs else by_name[n].named(n)
                  for n in arg_names]
    elif arg_names is not None:
        if len(arg_names) != len(entries):
            raise SignatureError(f"{where}: --arg-names has {len(arg_names)} names but the signature {len(entries)} entries")
        params = [e.named(n) for n, e in zip(arg_names, entries)]
    else:
        params = _named_by_ir(where, entries, ir)
    return _checked(where, params, ir, arg_names is not None)


def _named_by_ir(where: str, entries: Sequence[SigEntry], ir: IRFunction | None) -> list[Parameter]:
    runtime = [e for e in entries if e.kind != "constexpr"]
    if ir is None or not ir.named or len(runtime) != len(ir.params):  # a count that differs: check_against_ir says so
        return [e.named(f"arg{i}") for i, e in enumerate(entries)]
    recorded = iter(ir.params)
    return [e.named(f"arg{i}" if e.kind == "constexpr" else next(recorded).name) for i, e in enumerate(entries)]


def from_ir(where: str, runtime: Sequence[Parameter], named: bool, arg_names: Sequence[str] | None,
            constexprs: dict[str, Any]) -> list[Parameter]:
    """No ``--signature``: the runtime parameters the IR (or tmlr's sidecar) gives, and the ``--constexpr`` ones.
    ``--arg-names`` lists the runtime parameters only (the constexprs follow them), or every parameter in the
    kernel's order; without it the constexprs follow the runtime parameters in the order given."""
    clash = [_named_entry(p) for p in runtime if p.name in constexprs and arg_names is None]
    if clash:
        raise SignatureError(f"{where}: --constexpr names the runtime parameter {', '.join(clash)} of the IR; give "
                             "only the constexprs Triton left out of it")
    names = list(arg_names) if arg_names is not None else [p.name for p in runtime]
    if len(names) == len(runtime) and not set(names) & set(constexprs):
        names += list(constexprs)
    elif len(names) != len(runtime) + len(constexprs):
        given = f" and {len(constexprs)} --constexpr" if constexprs else ""
        raise SignatureError(f"{where}: --arg-names has {len(names)} names but the kernel has {len(runtime)} runtime "
                             f"parameters ({', '.join(map(_named_entry, runtime))}){given}; name the runtime "
                             "parameters only, or every parameter in the kernel's order")
    _check_known(where, names, constexprs)
    values = iter(runtime)
    params = [Parameter(n, "constexpr", value=constexprs[n]) if n in constexprs else _renamed(next(values), n)
              for n in names]
    return _checked(where, params, IRFunction("", tuple(runtime), named), arg_names is not None)


def _named_entry(p: Parameter) -> str:
    return f"{p.name}={p.value!r}" if p.kind == "constexpr" else f"{p.name}: {format_entry(p)}"


def _renamed(p: Parameter, name: str) -> Parameter:
    return Parameter(name, p.kind, p.type, p.divisibility, p.value)


def _check_known(where: str, names: Sequence[str], constexprs: dict[str, Any]) -> None:
    unknown = [n for n in constexprs if n not in names]
    if unknown:
        raise SignatureError(f"{where}: --constexpr names {', '.join(unknown)}, which --arg-names does not list "
                             f"({', '.join(names)}); list every parameter of the kernel in its order")


def _checked(where: str, params: list[Parameter], ir: IRFunction | None, renamed: bool) -> list[Parameter]:
    """No name twice; a name the IR records for a runtime parameter kept (it is the kernel's); values JSON can hold."""
    names = [p.name for p in params]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise SignatureError(f"{where}: parameter {', '.join(twice)} named twice ({', '.join(names)}); "
                             "name every parameter once with --arg-names")
    for p in params:
        check_json_value(where, p)
    if ir is None or not ir.named or not renamed:
        return params
    runtime = [p for p in params if p.kind != "constexpr"]
    for i, (p, q) in enumerate(zip(runtime, ir.params)):
        if p.name != q.name:
            raise RecordMismatchError(
                f"{where}: runtime parameter {i} is {p.name!r} in --arg-names but {q.name!r} in the IR (which records "
                f"the kernel's names: {', '.join(r.name for r in ir.params)}); keep the IR's names and list the "
                "constexprs where the kernel has them", given=p.name, recorded=q.name)
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
    """What a build of an IR input given no --signature or --constexpr says: how its artifact is called, and
    how to make it callable as the Triton kernel."""
    names = [p["name"] for p in signature]
    unnamed = names == [f"arg{i}" for i in range(len(names))]
    return (f"{name}: imported from a .{stage} without constexprs (Triton's IR and cache entry do not record them): "
            f"call it with the runtime parameters only, {name}[grid]({', '.join(names)})"
            + ("; the IR records no parameter names (Triton before 3.5 writes none): --arg-names gives the "
               "kernel's" if unnamed else "")
            + ". If the kernel has tl.constexpr parameters, build again with --constexpr NAME=VALUE for each "
            "(and --arg-names with every parameter in the kernel's order, when they do not come last) to call it "
            "as the Triton kernel is called")
