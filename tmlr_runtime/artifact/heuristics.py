"""``@triton.heuristics`` values reproduced at call time without Triton: the expression whitelist's one home, and
the walk that evaluates an accepted expression (no ``eval``) within the bounds docs/variants.md gives ("Heuristics")."""
from __future__ import annotations

import ast
import numbers
import operator
from typing import Any, Callable

from ..errors import short_repr
from ..records import Record


def next_power_of_2(n: int) -> int:
    """``triton.next_power_of_2``, its own arithmetic step by step, so that a heuristic and a model's wrapper under
    serve's stand-in get what Triton's gives for every ``n``: the smallest power of two >= ``n`` for 1 <= n <= 2**64,
    0 for n <= 0, past 2**64 what shifts of up to 32 bits make (not always a power of two); a float is a TypeError."""
    n -= 1
    for shift in (1, 2, 4, 8, 16, 32):
        n |= n >> shift
    return n + 1


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


MAX_TEXT = 1000  # characters of an expression: a recorded lambda body is one short line
MAX_DEPTH = 40  # nesting of an expression's syntax tree
INT_BITS = 64  # every integer an expression reads or computes has |value| < 2**64 (what Triton passes: i32..u64)


class HeuristicLimitError(ArithmeticError):
    """An expression computed (or was about to compute) an integer beyond :data:`INT_BITS` bits."""


def check_expression(text: str) -> str | None:
    """None when ``text`` is a heuristic expression the runtime evaluates; else why not (one line)."""
    if len(text) > MAX_TEXT:
        return f"{len(text)} characters, over the {MAX_TEXT} a heuristic expression may have"
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as e:
        return f"not a Python expression ({e.msg})"
    except (RecursionError, MemoryError, ValueError) as e:
        return f"not a Python expression ({type(e).__name__})"
    if _depth(tree) > MAX_DEPTH:
        return f"nested over {MAX_DEPTH} levels deep"
    subscripts = [n for n in ast.walk(tree) if isinstance(n, ast.Subscript)]
    inside = {id(n.value) for n in subscripts} | {id(n.slice) for n in subscripts}  # judged with their subscript
    for node in ast.walk(tree):
        if id(node) in inside:
            continue
        if isinstance(node, ast.Name) and node.id == "args":
            return "args used other than as args['name']"
        why = _refusal(node)
        if why is None and isinstance(node, ast.Constant) and type(node.value) is int and not _fits(node.value):
            why = f"constant {short_int(node.value)} (integers have at most {INT_BITS} bits)"
        if why is not None:
            return why
    return None


def _depth(tree: ast.AST) -> int:
    deepest, stack = 0, [(tree, 1)]
    while stack:  # not recursive: a hostile tree is as deep as its text is long
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        stack += [(child, depth + 1) for child in ast.iter_child_nodes(node)]
    return deepest


def _fits(value: int) -> bool:
    return value.bit_length() <= INT_BITS


def short_int(value: int) -> str:
    return str(value) if value.bit_length() < 200 else f"an integer of {value.bit_length()} bits"


def names_used(text: str) -> tuple[str, ...]:
    """The ``args['name']`` names an accepted expression reads, in order of first use."""
    found = [n.slice.value for n in ast.walk(ast.parse(text.strip(), mode="eval")) if isinstance(n, ast.Subscript)]
    return tuple(dict.fromkeys(found))  # type: ignore[arg-type]


class Heuristic(Record):
    """One recorded ``@triton.heuristics`` value: ``expr`` None means the caller passes it by keyword."""

    name: str
    expr: str | None
    after_config: bool
    tree: Any = None  # the parsed expression, walked by _value (never compiled or eval'd)

    @classmethod
    def make(cls, name: str, expr: str | None, after_config: bool) -> "Heuristic":
        """Checks the whitelist again and parses; ValueError says why an expression is refused."""
        if expr is None:
            return cls(name, None, after_config)
        why = check_expression(expr)
        if why is not None:
            raise ValueError(f"heuristic {name!r}: expression {short_text(expr)!r} is outside the whitelist ({why})")
        return cls(name, expr, after_config, ast.parse(expr.strip(), mode="eval").body)

    def evaluate(self, args: dict[str, Any]) -> Any:
        """The value for the call whose arguments (by name) are ``args``; KeyError names a missing one,
        HeuristicLimitError an integer beyond 64 bits (refused before it is computed when it would be huge)."""
        return _value(self.tree, args)


def short_text(text: str) -> str:
    return text if len(text) <= 120 else text[:100] + f"... ({len(text)} characters)"


_OPS: dict[type, Callable[..., Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod, ast.Pow: operator.pow, ast.LShift: operator.lshift, ast.RShift: operator.rshift,
    ast.BitAnd: operator.and_, ast.BitOr: operator.or_, ast.USub: operator.neg, ast.Invert: operator.invert,
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
    ast.GtE: operator.ge, ast.Is: operator.is_, ast.IsNot: operator.is_not,
    ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}


def _value(node: ast.AST, args: dict[str, Any]) -> Any:
    """Python's value of a whitelisted expression, with every number it reads or makes bounded."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Subscript):
        return _bounded(args[node.slice.value])  # type: ignore[attr-defined]
    if isinstance(node, ast.Name):
        return FUNCTIONS[node.id]
    if isinstance(node, ast.BinOp):
        left, right = _number(_value(node.left, args)), _number(_value(node.right, args))
        _refuse_huge(node.op, left, right)
        return _bounded(_OPS[type(node.op)](left, right))
    if isinstance(node, ast.UnaryOp):
        operand = _value(node.operand, args)
        return not operand if isinstance(node.op, ast.Not) else _bounded(_OPS[type(node.op)](_number(operand)))
    if isinstance(node, ast.BoolOp):
        is_and = isinstance(node.op, ast.And)
        for part in node.values:
            result = _value(part, args)
            if bool(result) != is_and:  # `and` stops at a false value, `or` at a true one
                return result
        return result
    if isinstance(node, ast.Compare):
        left, result = _value(node.left, args), True
        for op, right_node in zip(node.ops, node.comparators):
            right = _value(right_node, args)
            result = _OPS[type(op)](left, right)
            if not result:
                return result
            left = right
        return result
    if isinstance(node, ast.IfExp):
        return _value(node.body, args) if _value(node.test, args) else _value(node.orelse, args)
    if isinstance(node, ast.Call):
        return _bounded(_value(node.func, args)(*(_number(_value(a, args)) for a in node.args)))
    raise ValueError(f"{type(node).__name__} syntax")  # check_expression refused it already


def _number(value: Any) -> Any:
    if not isinstance(value, numbers.Number):
        raise TypeError(f"{short_repr(value)} is no number (arithmetic in a heuristic takes numbers)")
    return value


def _bounded(value: Any) -> Any:
    if isinstance(value, int) and value.bit_length() > INT_BITS:
        raise HeuristicLimitError(f"it computes {short_int(value)}, beyond the {INT_BITS} bits a value Triton passes has")
    return value


def _refuse_huge(op: ast.operator, left: Any, right: Any) -> None:
    """Refuse before computing an int power or shift whose result would have more than INT_BITS bits
    (computing 7 ** 10**7 or 1 << 10**10 first would take minutes or all memory)."""
    ints = isinstance(left, int) and isinstance(right, int)
    if ints and isinstance(op, ast.Pow) and abs(left) > 1 and right >= INT_BITS:
        raise HeuristicLimitError(f"{left} ** {right} has more than {INT_BITS} bits")
    if ints and isinstance(op, ast.LShift) and left != 0 and right > INT_BITS:
        raise HeuristicLimitError(f"{left} << {right} has more than {INT_BITS} bits")
