"""Validation of metadata.json against ``schema/metadata.schema.json``.

The runtime interprets the schema file itself with a small evaluator for the keywords that file
uses, instead of importing ``jsonschema``: that import alone costs ~0.1 s, which a service pays on
every cold start. The build side validates every artifact with the real ``jsonschema`` before
writing it, and a test checks that both validators agree, so the schema file stays the one contract.
A keyword this evaluator does not know makes it fail loudly (never silently accept).
"""
from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterator

SCHEMA_PATH = Path(__file__).with_name("schema") / "metadata.schema.json"
SCHEMA_VERSION = 1

_ANNOTATIONS = frozenset({"$schema", "$id", "title", "description", "$defs", "$comment", "default"})
_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}


@lru_cache(maxsize=1)
def load_schema() -> dict[str, Any]:
    """The metadata schema as a dict (read once per process)."""
    with open(SCHEMA_PATH, encoding="utf-8") as f:
        return json.load(f)


def _is_type(value: Any, name: str) -> bool:
    if isinstance(value, bool) and name in ("integer", "number"):
        return False
    if name == "integer" and isinstance(value, float):
        return value.is_integer()
    return isinstance(value, _TYPES[name])


def _path(base: str, key: str | int) -> str:
    return f"{base}[{key}]" if isinstance(key, int) else f"{base}.{key}"


def _equal(a: Any, b: Any) -> bool:
    # JSON equality: True is not 1.
    return type(a) is type(b) and a == b if isinstance(a, bool) or isinstance(b, bool) else a == b


class _Evaluator:
    def __init__(self, root: dict[str, Any]) -> None:
        self._root = root

    def _resolve(self, ref: str) -> dict[str, Any]:
        if not ref.startswith("#/"):
            raise NotImplementedError(f"schema $ref {ref!r} is not local")
        node: Any = self._root
        for part in ref[2:].split("/"):
            node = node[part]
        return node

    def errors(self, value: Any, schema: Any, path: str) -> Iterator[tuple[str, str]]:
        if schema is True:
            return
        if schema is False:
            yield path, "is not allowed here"
            return
        for key, arg in schema.items():
            if key in _ANNOTATIONS or key in ("then", "else"):
                continue
            check = getattr(self, "_kw_" + key.lstrip("$"), None)
            if check is None:
                raise NotImplementedError(f"schema keyword {key!r} is not supported by tmlr_runtime._schema")
            yield from check(value, arg, schema, path)

    def valid(self, value: Any, schema: Any, path: str = "$") -> bool:
        return next(iter(self.errors(value, schema, path)), None) is None

    # --- keywords -------------------------------------------------------------------------------
    def _kw_ref(self, value, arg, schema, path):
        yield from self.errors(value, self._resolve(arg), path)

    def _kw_type(self, value, arg, schema, path):
        names = [arg] if isinstance(arg, str) else arg
        if not any(_is_type(value, n) for n in names):
            yield path, f"{value!r} is not of type {' or '.join(repr(n) for n in names)}"

    def _kw_const(self, value, arg, schema, path):
        if not _equal(value, arg):
            yield path, f"{arg!r} was expected, got {value!r}"

    def _kw_enum(self, value, arg, schema, path):
        if not any(_equal(value, a) for a in arg):
            yield path, f"{value!r} is not one of {arg!r}"

    def _kw_pattern(self, value, arg, schema, path):
        if isinstance(value, str) and re.search(arg, value) is None:
            about = schema.get("description")  # says what the pattern means, e.g. "a plain file name"
            yield path, f"{value!r} does not match {arg!r}" + (f" ({about.rstrip('.')})" if about else "")

    def _kw_minimum(self, value, arg, schema, path):
        if _is_type(value, "number") and value < arg:
            yield path, f"{value!r} is less than the minimum of {arg!r}"

    def _kw_maximum(self, value, arg, schema, path):
        if _is_type(value, "number") and value > arg:
            yield path, f"{value!r} is greater than the maximum of {arg!r}"

    def _kw_minItems(self, value, arg, schema, path):
        if isinstance(value, list) and len(value) < arg:
            yield path, f"{value!r} should have at least {arg} item(s)" if value else f"{value!r} should be non-empty"

    def _kw_maxItems(self, value, arg, schema, path):
        if isinstance(value, list) and len(value) > arg:
            yield path, f"{value!r} has more than {arg} items"

    def _kw_uniqueItems(self, value, arg, schema, path):
        if arg and isinstance(value, list):
            seen: list[Any] = []
            for item in value:
                if any(_equal(item, s) for s in seen):
                    yield path, f"{value!r} has non-unique elements"
                    return
                seen.append(item)

    def _kw_items(self, value, arg, schema, path):
        if isinstance(value, list):
            for i, item in enumerate(value):
                yield from self.errors(item, arg, _path(path, i))

    def _kw_required(self, value, arg, schema, path):
        if isinstance(value, dict):
            for name in arg:
                if name not in value:
                    yield path, f"{name!r} is a required property"

    def _kw_properties(self, value, arg, schema, path):
        if isinstance(value, dict):
            for name, sub in arg.items():
                if name in value:
                    yield from self.errors(value[name], sub, _path(path, name))

    def _kw_additionalProperties(self, value, arg, schema, path):
        if isinstance(value, dict):
            extra = [k for k in value if k not in schema.get("properties", {})]
            if extra and arg is False:
                yield path, f"additional properties are not allowed ({', '.join(map(repr, extra))} unexpected)"
            elif extra and arg is not True:
                for k in extra:
                    yield from self.errors(value[k], arg, _path(path, k))

    def _kw_anyOf(self, value, arg, schema, path):
        if not any(self.valid(value, sub, path) for sub in arg):
            yield path, f"{value!r} is not valid under any of the given schemas"

    def _kw_oneOf(self, value, arg, schema, path):
        if sum(self.valid(value, sub, path) for sub in arg) != 1:
            yield path, f"{value!r} is not valid under exactly one of the given schemas"

    def _kw_allOf(self, value, arg, schema, path):
        for sub in arg:
            yield from self.errors(value, sub, path)

    def _kw_if(self, value, arg, schema, path):
        branch = schema.get("then" if self.valid(value, arg, path) else "else", True)
        yield from self.errors(value, branch, path)


def _key(v: Any) -> Any:
    """A hashable identity with JSON equality (True is not 1, 1 is 1.0); None if unhashable."""
    if isinstance(v, bool):
        return ("b", v)
    if isinstance(v, (int, float)):
        return ("n", v)
    if isinstance(v, str):
        return ("s", v)
    if v is None:
        return ("z", None)
    return None


def _compile(node: Any, root: dict[str, Any], refs: dict[str, Callable[[Any], bool]]) -> Callable[[Any], bool]:
    """A fast validity predicate for ``node``; mirrors :class:`_Evaluator` keyword for keyword."""
    if node is True:
        return lambda v: True
    if node is False:
        return lambda v: False
    checks: list[Callable[[Any], bool]] = []
    add = checks.append
    for key, arg in node.items():
        if key in _ANNOTATIONS or key in ("then", "else"):
            continue
        if key == "$ref":
            if arg not in refs:
                refs[arg] = lambda v: False  # placeholder while a recursive reference compiles
                refs[arg] = _compile(_Evaluator(root)._resolve(arg), root, refs)
            add(lambda v, a=arg: refs[a](v))
        elif key == "type":
            names = [arg] if isinstance(arg, str) else list(arg)
            add(lambda v, n=names: any(_is_type(v, t) for t in n))
        elif key in ("const", "enum"):
            options = [arg] if key == "const" else list(arg)
            keys = {_key(o) for o in options}
            if None in keys:
                add(lambda v, a=options: any(_equal(v, x) for x in a))
            else:
                add(lambda v, ks=frozenset(keys): _key(v) in ks if not isinstance(v, (dict, list)) else False)
        elif key == "pattern":
            add(lambda v, r=re.compile(arg): not isinstance(v, str) or r.search(v) is not None)
        elif key == "minimum":
            add(lambda v, a=arg: not _is_type(v, "number") or v >= a)
        elif key == "maximum":
            add(lambda v, a=arg: not _is_type(v, "number") or v <= a)
        elif key == "minItems":
            add(lambda v, a=arg: not isinstance(v, list) or len(v) >= a)
        elif key == "maxItems":
            add(lambda v, a=arg: not isinstance(v, list) or len(v) <= a)
        elif key == "uniqueItems":
            if arg:
                add(lambda v: not isinstance(v, list) or not any(_equal(x, y) for i, x in enumerate(v) for y in v[:i]))
        elif key == "items":
            add(_items(_compile(arg, root, refs)))
        elif key == "required":
            add(lambda v, a=tuple(arg): not isinstance(v, dict) or all(k in v for k in a))
        elif key == "properties":
            add(_properties([(name, _compile(sub, root, refs)) for name, sub in arg.items()]))
        elif key == "additionalProperties":
            allowed = frozenset(node.get("properties", {}))
            if arg is False:
                add(lambda v, a=allowed: not isinstance(v, dict) or a.issuperset(v))
            elif arg is not True:
                sub = _compile(arg, root, refs)
                add(lambda v, a=allowed, c=sub: not isinstance(v, dict) or all(c(x) for k, x in v.items() if k not in a))
        elif key == "anyOf":
            subs = [_compile(x, root, refs) for x in arg]
            add(lambda v, ss=subs: any(c(v) for c in ss))
        elif key == "oneOf":
            subs = [_compile(x, root, refs) for x in arg]
            add(lambda v, ss=subs: sum(1 for c in ss if c(v)) == 1)
        elif key == "allOf":
            add(_all([_compile(x, root, refs) for x in arg]))
        elif key == "if":
            cond = _compile(arg, root, refs)
            then = _compile(node.get("then", True), root, refs)
            other = _compile(node.get("else", True), root, refs)
            add(lambda v, i=cond, t=then, e=other: t(v) if i(v) else e(v))
        else:
            raise NotImplementedError(f"schema keyword {key!r} is not supported by tmlr_runtime._schema")
    return checks[0] if len(checks) == 1 else _all(checks)


def _all(checks: list[Callable[[Any], bool]]) -> Callable[[Any], bool]:
    cs = tuple(checks)

    def check(v: Any) -> bool:
        for c in cs:
            if not c(v):
                return False
        return True

    return check


def _items(sub: Callable[[Any], bool]) -> Callable[[Any], bool]:
    def check(v: Any) -> bool:
        if isinstance(v, list):
            for x in v:
                if not sub(x):
                    return False
        return True

    return check


def _properties(props: list[tuple[str, Callable[[Any], bool]]]) -> Callable[[Any], bool]:
    def check(v: Any) -> bool:
        if isinstance(v, dict):
            for k, c in props:
                if k in v and not c(v[k]):
                    return False
        return True

    return check


@lru_cache(maxsize=1)
def _validator() -> Callable[[Any], bool]:
    schema = load_schema()
    return _compile(schema, schema, {})


def is_valid(doc: Any) -> bool:
    """Whether ``doc`` follows the metadata schema (fast; no messages)."""
    return _validator()(doc)


def iter_errors(doc: Any) -> Iterator[tuple[str, str]]:
    """Yield ``(json_path, message)`` for each way ``doc`` breaks the metadata schema."""
    schema = load_schema()
    yield from _Evaluator(schema).errors(doc, schema, "$")


def first_error(doc: Any) -> tuple[str, str] | None:
    """The first schema violation of ``doc`` as ``(json_path, message)``, or None if it is valid."""
    if is_valid(doc):
        return None
    return next(iter_errors(doc), ("$", "does not follow the schema"))
