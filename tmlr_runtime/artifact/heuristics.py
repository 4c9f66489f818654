"""``@triton.heuristics`` values reproduced at call time without Triton: the expression whitelist.

tmlr-build records a heuristic's expression (the lambda's returned expression, with
``triton.next_power_of_2`` / ``triton.cdiv`` renamed to the bare names) only when
:func:`check_expression` accepts it; the runtime checks it again at load and evaluates it with no
builtins but :data:`FUNCTIONS`. Anything else is recorded as ``null`` and the caller must pass the
value by keyword: an expression is never guessed. This module is the whitelist's one home.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any, Callable


def next_power_of_2(n: int) -> int:
    """The smallest power of two >= ``n`` (1 for n <= 1), as ``triton.next_power_of_2``."""
    n = int(n)
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def cdiv(x: int, y: int) -> int:
    """``ceil(x / y)`` for ints, as ``triton.cdiv``."""
    return (x + y - 1) // y


FUNCTIONS: dict[str, Callable[..., Any]] = {"min": min, "max": max, "abs": abs, "int": int, "bool": bool,
                                            "next_power_of_2": next_power_of_2, "cdiv": cdiv}
_BINOPS = (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod, ast.Pow, ast.LShift, ast.RShift, ast.BitAnd, ast.BitOr)
_UNARY = (ast.USub, ast.Not, ast.Invert)
_PLAIN = (ast.Expression, ast.Compare, ast.BoolOp, ast.IfExp, ast.BinOp, ast.UnaryOp, ast.Load, ast.cmpop, ast.boolop,
          *_BINOPS, *_UNARY)


def _refusal(node: ast.AST) -> str | None:
    """Why ``node`` is outside the whitelist, or None."""
    if isinstance(node, ast.BinOp) and not isinstance(node.op, _BINOPS):
        return f"operator {type(node.op).__name__}"
    if isinstance(node, ast.UnaryOp) and not isinstance(node.op, _UNARY):
        return f"operator {type(node.op).__name__}"
    if isinstance(node, _PLAIN):
        return None
    if isinstance(node, ast.Constant):
        ok = node.value is None or type(node.value) in (int, float, bool)
        return None if ok else f"constant {node.value!r} (only int, float, bool and None)"
    if isinstance(node, ast.Subscript):
        ok = (isinstance(node.value, ast.Name) and node.value.id == "args" and isinstance(node.slice, ast.Constant)
              and isinstance(node.slice.value, str))
        return None if ok else "a subscript other than args['name']"
    if isinstance(node, ast.Name):
        return None if node.id in FUNCTIONS else f"name {node.id!r}"
    if isinstance(node, ast.Call):
        ok = isinstance(node.func, ast.Name) and node.func.id in FUNCTIONS and not node.keywords
        return None if ok else f"call of {ast.unparse(node.func)} (only {', '.join(FUNCTIONS)}, positional arguments)"
    return f"{type(node).__name__} syntax"


def check_expression(text: str) -> str | None:
    """None when ``text`` is a heuristic expression the runtime evaluates; else why not (one line)."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as e:
        return f"not a Python expression ({e.msg})"
    subscripts = [n for n in ast.walk(tree) if isinstance(n, ast.Subscript)]
    inside = {id(n.value) for n in subscripts} | {id(n.slice) for n in subscripts}  # judged with their subscript
    for node in ast.walk(tree):
        if id(node) in inside:
            continue
        if isinstance(node, ast.Name) and node.id == "args":
            return "args used other than as args['name']"
        why = _refusal(node)
        if why is not None:
            return why
    return None


def names_used(text: str) -> tuple[str, ...]:
    """The ``args['name']`` names an accepted expression reads, in order of first use."""
    found = [n.slice.value for n in ast.walk(ast.parse(text.strip(), mode="eval")) if isinstance(n, ast.Subscript)]
    return tuple(dict.fromkeys(found))  # type: ignore[arg-type]


@dataclass(frozen=True)
class Heuristic:
    """One recorded ``@triton.heuristics`` value: ``expr`` None means the caller passes it by keyword."""

    name: str
    expr: str | None
    after_config: bool
    code: Any = None  # the compiled expression

    @classmethod
    def make(cls, name: str, expr: str | None, after_config: bool) -> "Heuristic":
        """Checks the whitelist again and compiles; ValueError says why an expression is refused."""
        if expr is None:
            return cls(name, None, after_config)
        why = check_expression(expr)
        if why is not None:
            raise ValueError(f"heuristic {name!r}: expression {expr!r} is outside the whitelist ({why})")
        return cls(name, expr, after_config, compile(expr.strip(), f"<heuristic {name}>", "eval"))

    def evaluate(self, args: dict[str, Any]) -> Any:
        """The value for the call whose arguments (by name) are ``args``; KeyError names a missing one."""
        return eval(self.code, {"__builtins__": {}, "args": args, **FUNCTIONS})
