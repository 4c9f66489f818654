"""@triton.heuristics functions as expressions the runtime can evaluate without Triton.

A heuristic's value becomes a constexpr of each variant, so at call time the runtime must compute it
the way Triton would. It can only when the function is a simple expression over ``args['name']``:
:func:`extract` turns the lambda's (or def's) source into such an expression text and
:func:`check_expression` (tmlr_runtime's, the one whitelist) checks it; anything
else is recorded as no expression, and the caller must pass the value by keyword. Never a guess.
:func:`decided` evaluates a recorded expression against what a variant's signature fixes, so that the
build plans only the values a call can meet (builder/variants.py).

Pure Python (no Triton), in common/ because the compile side (compile/capture.py, which may not import
the parent side) uses it: it hands in the function's code object and its file's source, and checks
that the globals an expression relies on are what they look like. The runtime's tmlr_runtime/artifact/heuristics.py
re-checks the same whitelist at load.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from types import CodeType
from typing import Any

from tmlr_runtime.artifact.heuristics import FUNCTIONS, Heuristic, check_expression  # the one whitelist, which the runtime evaluates

__all__ = ["ANY", "FUNCTIONS", "Extracted", "Unknown", "check_expression", "decided", "extract", "is_bool_expression"]

TRITON_FUNCTIONS = ("next_power_of_2", "cdiv")  # also written triton.next_power_of_2 / triton.cdiv
_COMPARE = (ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE)


@dataclass(frozen=True)
class Extracted:
    """A heuristic function read from its source."""

    expr: str | None  # the expression over args['name'], or None (the caller passes the value)
    why: str | None  # why there is no expression
    globals_used: tuple[str, ...] = ()  # module names it relies on ("triton", "cdiv", "min"): the caller checks them


def is_bool_expression(text: str) -> bool:
    """Whether the (whitelisted) expression always gives a bool: comparisons, ``not``, and/or of those."""
    return _is_bool(ast.parse(text, mode="eval").body)


def _is_bool(node: ast.AST) -> bool:
    if isinstance(node, ast.Compare) or (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)):
        return True
    if isinstance(node, ast.Constant):
        return isinstance(node.value, bool)
    if isinstance(node, ast.Call):
        return isinstance(node.func, ast.Name) and node.func.id == "bool"
    if isinstance(node, ast.BoolOp):
        return all(_is_bool(v) for v in node.values)
    if isinstance(node, ast.IfExp):
        return _is_bool(node.body) and _is_bool(node.orelse)
    return False


def extract(source: str, code: CodeType) -> Extracted:
    """The expression of the lambda or def whose code object is ``code``, in the module text ``source``."""
    try:
        module = ast.parse(source)
    except SyntaxError:
        return Extracted(None, "its source file does not parse")
    found = [n for n in ast.walk(module) if _defines(n, code)]
    if len(found) > 1:
        found = [n for n in found if _same_code(n, code)]
    if len({ast.dump(n) for n in found}) != 1:  # alike twins give the same expression
        return Extracted(None, "its source could not be found")
    node = found[0]
    body = _returned(node)
    if body is None:
        return Extracted(None, "it is not a single expression (one lambda, or a def with one return)")
    params = node.args
    if params.posonlyargs or params.kwonlyargs or params.vararg or params.kwarg or len(params.args) != 1:
        return Extracted(None, "it does not take exactly one argument (the dict of arguments)")
    body, used = _normalized(body, params.args[0].arg)
    text = ast.unparse(body)
    why = check_expression(text)
    if why:
        return Extracted(None, f"{text!r} uses {why}, which is outside the allowed expressions")
    return Extracted(text, None, used)


def _defines(node: ast.AST, code: CodeType) -> bool:
    if isinstance(node, ast.Lambda):
        return code.co_name == "<lambda>" and node.lineno == code.co_firstlineno
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        first = min([node.lineno] + [d.lineno for d in node.decorator_list])
        return node.name == code.co_name and first == code.co_firstlineno
    return False


def _same_code(node: ast.AST, code: CodeType) -> bool:
    # several lambdas on one line: the one whose compiled code has the same constants and names (the
    # bytecode itself may differ: compiled alone, a lambda can take other instructions)
    wrapped = ast.Expression(node) if isinstance(node, ast.Lambda) else ast.Module([node], [])
    compiled = compile(ast.fix_missing_locations(wrapped), code.co_filename, "eval" if isinstance(node, ast.Lambda)
                       else "exec")
    inner = [c for c in compiled.co_consts if isinstance(c, CodeType)]
    return any((c.co_consts, c.co_names, c.co_varnames) == (code.co_consts, code.co_names, code.co_varnames)
               for c in inner)


def _returned(node: ast.AST) -> ast.expr | None:
    if isinstance(node, ast.Lambda):
        return node.body
    body = list(node.body)  # type: ignore[attr-defined]
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # a docstring
    if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None:
        return body[0].value
    return None


def _normalized(body: ast.expr, param: str) -> tuple[ast.expr, tuple[str, ...]]:
    """The parameter renamed ``args``; ``triton.cdiv`` -> ``cdiv``; the module names it relies on."""
    used: set[str] = set()

    class Rename(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.AST:
            if node.id == param:
                return ast.copy_location(ast.Name("args", ast.Load()), node)
            if node.id in FUNCTIONS:
                used.add(node.id)
            return node

        def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
            if isinstance(node.value, ast.Name) and node.value.id != param and node.attr in TRITON_FUNCTIONS:
                used.add(node.value.id)
                return ast.copy_location(ast.Name(node.attr, ast.Load()), node)
            return self.generic_visit(node)

    new = Rename().visit(ast.parse(ast.unparse(body), mode="eval")).body
    return new, tuple(sorted(used))


# --- what the signature decides (issue 31): a heuristic's value at build time, where the fixed parameters give it ----
@dataclass(frozen=True)
class Unknown:
    """A value the build does not know: ``runtime`` marks an argument a variant takes at run time (never None: a None
    argument is a constexpr), ``divisor`` what its ``:16`` pattern promises of an integer (n % 16 == 0)."""

    runtime: bool = False
    divisor: int = 1


ANY = Unknown()  # a name the build knows nothing of (not a parameter, or a config's value before the config)


def decided(expr: str, known: dict[str, Any]) -> tuple[bool, Any]:
    """``(True, value)`` when the whitelisted expression ``expr`` has one value for every call that ``known`` allows
    (a name -> its value, or an :class:`Unknown`); ``(False, None)`` when the call's arguments decide it. Never a guess:
    anything this walk does not know how to narrow stays undecided."""
    value = _partial(ast.parse(expr.strip(), mode="eval").body, known)
    return (False, None) if isinstance(value, Unknown) else (True, value)


def _partial(node: ast.AST, known: dict[str, Any]) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Subscript):
        return known.get(node.slice.value, ANY)  # type: ignore[attr-defined]
    if isinstance(node, ast.BoolOp):
        for part in node.values:
            value = _partial(part, known)
            if isinstance(value, Unknown) or bool(value) != isinstance(node.op, ast.And):
                return value  # `and` stops at a false value, `or` at a true one; an unknown one decides nothing
        return value
    if isinstance(node, ast.IfExp):
        test = _partial(node.test, known)
        if not isinstance(test, Unknown):
            return _partial(node.body if test else node.orelse, known)
        body, orelse = _partial(node.body, known), _partial(node.orelse, known)
        same = not isinstance(body, Unknown) and type(body) is type(orelse) and body == orelse
        return body if same else ANY
    if isinstance(node, ast.Compare):
        return _compare(node, known)
    if isinstance(node, ast.BinOp):
        left, right = _partial(node.left, known), _partial(node.right, known)
        if isinstance(node.op, ast.Mod) and isinstance(left, Unknown) and type(right) is int and right > 0 \
                and left.divisor % right == 0:
            return 0  # n % 16 where n is i32:16
        return _computed(ast.BinOp(_constant(left), node.op, _constant(right)), left, right)
    if isinstance(node, ast.UnaryOp):
        operand = _partial(node.operand, known)
        return _computed(ast.UnaryOp(node.op, _constant(operand)), operand)
    if isinstance(node, ast.Call):
        args = [_partial(a, known) for a in node.args]
        return _computed(ast.Call(node.func, [_constant(a) for a in args], []), *args)
    return ANY


def _compare(node: ast.Compare, known: dict[str, Any]) -> Any:
    left, result = _partial(node.left, known), True
    for op, right_node in zip(node.ops, node.comparators):
        right = _partial(right_node, known)
        if isinstance(left, Unknown) or isinstance(right, Unknown):
            result = _against_none(op, left, right)
        else:
            result = _computed(ast.Compare(_constant(left), [op], [_constant(right)]))
        if isinstance(result, Unknown) or not result:
            return result
        left = right
    return result


def _against_none(op: ast.cmpop, left: Any, right: Any) -> Any:
    """``x is None``, ``x is not None``, ``x == None``, ``x != None`` where ``x`` is a runtime argument: never None."""
    other = right if isinstance(left, Unknown) else left
    arg = left if isinstance(left, Unknown) else right
    if other is not None or not arg.runtime or not isinstance(op, (ast.Is, ast.IsNot, ast.Eq, ast.NotEq)):
        return ANY
    return isinstance(op, (ast.IsNot, ast.NotEq))


def _constant(value: Any) -> ast.expr:
    return ast.Constant(value)


def _computed(tree: ast.expr, *parts: Any) -> Any:
    """The runtime's value of ``tree`` (its parts known), or unknown where a part is or where it raises: a call
    would raise there too, and the build keeps every value rather than guess."""
    if any(isinstance(p, Unknown) for p in parts):
        return ANY
    try:
        return Heuristic("decided", None, False, tree).evaluate({})
    except Exception:
        return ANY
