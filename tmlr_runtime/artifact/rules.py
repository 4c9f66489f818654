"""The rules the artifact reader checks JSON documents with (kernel metadata, family index, tuning table): each
reads one value as its schema file says and returns what the record keeps, or raises :class:`Invalid` with the
JSON path below it, which :func:`check` makes the :class:`~tmlr_runtime.SchemaError` naming the file."""
from __future__ import annotations

import re
from typing import Any, Callable

from ..errors import SchemaError, short_repr

class Invalid(Exception):
    """``(problem, where)``: a value breaks the schema; ``where`` is its JSON path below the value
    being read, prefixed by each enclosing reader on the way out (no path is formatted unless one fails)."""

    def __init__(self, problem: str, where: str = "") -> None:
        super().__init__(problem, where)
        self.problem, self.where = problem, where


Rule = Callable[[Any], Any]


def not_(value: Any, what: str) -> Invalid:
    return Invalid(f"{short_repr(value)} is not {what}")


def at(e: Invalid, key: str | int) -> Invalid:
    e.where = (f"[{key}]" if isinstance(key, int) else f".{key}") + e.where
    return e


def integer(minimum: int = 0, maximum: int | None = None) -> Rule:
    """An integer in range, as a Python int: JSON Schema takes 4.0 as an integer, the driver does not."""
    def rule(value: Any) -> int:
        if type(value) is not int:
            if isinstance(value, bool) or not (isinstance(value, int) or isinstance(value, float) and value.is_integer()):
                raise not_(value, "an integer")
            value = int(value)
        if value < minimum or (maximum is not None and value > maximum):
            raise not_(value, f"in [{minimum}, {maximum}]" if maximum else f">= {minimum}")
        return value
    return rule


def test(test: Callable[[Any], bool], meaning: str) -> Rule:
    def rule(value: Any) -> Any:
        if not test(value):
            raise not_(value, meaning)
        return value
    return rule


def one_of(values: tuple[Any, ...], meaning: str) -> Rule:
    """A value equal to one of ``values`` (as JSON Schema's enum and const: 32.0 is 32, True is not 1)."""
    def rule(value: Any) -> Any:
        if type(value) is bool or value not in values:
            raise not_(value, meaning)
        return value
    return rule


def string(accepts: Callable[[str], Any] | None = None, meaning: str = "a string") -> Rule:
    """A string ``accepts`` takes (a regex's ``fullmatch``, a set's ``__contains__``)."""
    def rule(value: Any) -> str:
        if type(value) is not str or accepts is not None and not accepts(value):
            raise not_(value, meaning)
        return value
    return rule


def array(item: Rule, least: int = 0, most: int | None = None, unique: bool = False) -> Rule:
    """A list of ``least`` to ``most`` items, each read by ``item``, as a tuple."""
    meaning = (f"an array of {least} items" if least == most else f"an array of {least} to {most} items" if most
               else f"an array of at least {least} items")

    def rule(value: Any) -> tuple[Any, ...]:
        if type(value) is not list or len(value) < least or (most is not None and len(value) > most):
            raise not_(value, meaning)
        out: list[Any] = []
        try:
            for x in value:
                out.append(item(x))
        except Invalid as e:
            raise at(e, len(out)) from None
        if unique and len(set(out)) != len(out):
            raise not_(value, "a list without repeats")
        return tuple(out)
    return rule


def obj(required: dict[str, Rule], optional: dict[str, Rule] | None = None) -> Rule:
    """An object with every key of ``required``, no other but those of ``optional``, each value read by
    its rule: a dict of what the rules return, in the document's order."""
    rules = {**required, **(optional or {})}
    names, required_keys, keys = ", ".join(sorted(rules)), required.keys(), rules.keys()

    def rule(value: Any) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise not_(value, "an object")
        if value.keys() != required_keys and not (optional and required_keys <= value.keys() <= keys):
            missing = next((key for key in required if key not in value), None)
            if missing is not None:
                raise Invalid(f"{missing!r} is a required property")
            extra = next(key for key in value if key not in rules)
            raise Invalid(f"{short_repr(extra)} is not a property it may have ({names})")
        out = {}
        try:
            for key, x in value.items():
                out[key] = rules[key](x)
        except Invalid as e:
            raise at(e, key) from None
        return out
    return rule


_new, _set = object.__new__, object.__setattr__


def record(cls: type, fields: dict[str, Any]) -> Any:
    # made without the record's __init__ (its checks of what was given are the reader's here); tests check the
    # dicts name exactly the class's fields
    record = _new(cls)
    _set(record, "__dict__", fields)
    return record


IDENTIFIER = string(re.compile(r"[A-Za-z_][A-Za-z0-9_]*").fullmatch, "an identifier")
IS_SHA256, IS_ARCH = re.compile(r"[0-9a-f]{64}").fullmatch, re.compile(r"sm_[0-9]+a?").fullmatch
IS_PTX_ARCH = re.compile(r"compute_[0-9]+").fullmatch  # never "a": arch-specific PTX cannot be compiled for another GPU
SHA256 = string(IS_SHA256, "a sha256 in lowercase hex")
BOOL = test(lambda v: type(v) is bool, "a boolean")
ANY: Rule = lambda v: v  # noqa: E731


def nullable(rule: Rule) -> Rule:
    """None, or what ``rule`` reads."""
    return lambda value: None if value is None else rule(value)


def check(rule: Rule, doc: Any, path: str | None, kind: str) -> Any:
    """``rule(doc)``; a broken rule becomes a :class:`SchemaError` for file ``path``: ``PATH: $.json.path: problem; kind``."""
    try:
        return rule(doc)
    except Invalid as e:
        json_path = "$" + e.where
        raise SchemaError(f"{path or 'metadata'}: {json_path}: {e.problem}; {kind}", path, json_path) from None
