"""Validation of metadata.json against ``schema/metadata.schema.json``.

The runtime reads the schema file itself instead of importing ``jsonschema``: that import alone
costs ~0.1 s, which a service pays on every cold start. The build side validates every artifact
with the real ``jsonschema`` before writing it, and tests check that the runtime agrees, so the
schema file stays the one contract. Two readers of it live here:

- :class:`_Codegen` writes the schema as one Python function with every check inlined; that
  decides validity on load (a few tens of µs for a metadata.json). The function generated from the
  current schema file is kept at the end of this module, so it is compiled with the module (its
  .pyc) rather than at run time; it is used only while the schema file's sha256 matches, else the
  same code is generated and compiled on first use.
- :class:`_Evaluator` walks the schema for a document already found invalid and says where and
  why, in the error message.

A keyword neither knows makes them fail loudly (never silently accept).
"""
from __future__ import annotations

import hashlib
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


class _Codegen:
    """Writes one Python function that decides validity against the schema, keyword for keyword
    what :class:`_Evaluator` checks, with every check inlined: a document of tmlr-build's shape is
    decided in one pass with no call per keyword (see :func:`_validator` for where it is compiled).

    ``stmts`` emits statements that ``return False`` on the first failure; ``expr`` gives a boolean
    expression for the small schemas that ``if``/``anyOf``/``oneOf`` test (None when a node needs
    statements, which then become a helper function). A ``$ref`` is inlined unless it is already
    being inlined (a recursive schema), when it becomes a helper function too.
    """

    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root
        self.consts: list[str] = []  # module-level definitions of the constants the checks use
        self.helpers: list[str] = []
        self.ref_funcs: dict[str, str] = {}
        self.inlining: list[str] = []
        # (variable, key) -> a variable already holding variable[key] where that is in scope: a
        # required property bound by "properties" is not looked up again by an "if" on the same value
        self.bound: dict[tuple[str, str], str] = {}
        self.n = 0

    def name(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}{self.n}"

    def const(self, value: Any, prefix: str = "_s_K") -> str:
        """A module-level constant holding ``value`` (a set, list or compiled pattern), by name."""
        name = self.name(prefix)
        if isinstance(value, frozenset):
            text = "frozenset({" + ", ".join(sorted(map(repr, value))) + "})"
        elif isinstance(value, re.Pattern):
            text = f"re.compile({value.pattern!r})"
        else:
            text = repr(value)
        self.consts.append(f"{name} = {text}\n")
        return name

    def resolve(self, ref: str) -> Any:
        return _Evaluator(self.root)._resolve(ref)

    # -- boolean expressions of one value ----------------------------------------------------------
    @staticmethod
    def type_expr(v: str, names: list[str]) -> str:
        # ``type(v) is T`` first: what json.loads makes takes one identity test
        one = {
            "object": f"type({v}) is dict or isinstance({v}, dict)",
            "array": f"type({v}) is list or isinstance({v}, list)",
            "string": f"type({v}) is str or isinstance({v}, str)",
            "boolean": f"{v} is True or {v} is False",
            "null": f"{v} is None",
            "number": f"type({v}) is int or type({v}) is float or _is_type({v}, 'number')",
            "integer": f"type({v}) is int or _is_type({v}, 'integer')",
        }
        return "(" + " or ".join(one[n] for n in names) + ")"

    def enum_expr(self, v: str, options: list[Any]) -> str:
        if options and all(isinstance(o, str) for o in options):
            return f"({self.type_expr(v, ['string'])} and {v} in {self.const(frozenset(options))})"
        if options and all(isinstance(o, (int, float)) and not isinstance(o, bool) for o in options):
            return f"({self.type_expr(v, ['number'])} and {v} in {self.const(frozenset(options))})"
        return f"_enum_match({v}, {self.const(options)})"

    def expr(self, node: Any, v: str, known: str | None = None) -> str | None:
        """A boolean expression for ``node`` at ``v`` (``v`` may be evaluated several times), or None.

        ``known``: a JSON type ``v`` is already known to have.
        """
        if node is True:
            return "True"
        if node is False:
            return "False"
        parts: list[str] = []
        t = node.get("type")
        if isinstance(t, str) and known is None:
            known = t
            parts.append(self.type_expr(v, [t]))
        dict_guard = "" if known == "object" else f"not isinstance({v}, dict) or "
        for key, arg in node.items():
            if key in _ANNOTATIONS or key in ("then", "else"):
                continue
            if key == "type":
                names = [arg] if isinstance(arg, str) else list(arg)
                if known not in names:
                    parts.append(self.type_expr(v, names))
            elif key in ("const", "enum"):
                parts.append(self.enum_expr(v, [arg] if key == "const" else list(arg)))
            elif key == "pattern":
                parts.append(f"(not isinstance({v}, str) or {self.const(re.compile(arg), '_s_R')}.search({v}) is not None)")
            elif key == "required":
                req = " and ".join(f"{k!r} in {v}" for k in arg) or "True"
                parts.append(f"({dict_guard}({req}))")
            elif key == "properties":
                subs = []
                for k, sub in arg.items():
                    x = self.bound.get((v, k))
                    e = self.expr(sub, x or f"{v}[{k!r}]")
                    if e is None:
                        return None
                    if e != "True":
                        subs.append(e if x else f"({k!r} not in {v} or {e})")
                if subs:
                    parts.append(f"({dict_guard}({' and '.join(subs)}))")
            elif key == "additionalProperties" and arg is False:
                allowed = self.const(frozenset(node.get("properties", {})))
                parts.append(f"({dict_guard}{allowed}.issuperset({v}))")
            elif key == "$ref" and arg not in self.inlining:
                self.inlining.append(arg)
                try:
                    e = self.expr(self.resolve(arg), v, known)
                finally:
                    self.inlining.pop()
                if e is None:
                    return None
                parts.append(e)
            elif key in ("allOf", "anyOf", "oneOf"):
                es = [self.expr(sub, v, known) for sub in arg]
                if any(e is None for e in es):
                    return None
                if key == "allOf":
                    parts.append("(" + " and ".join(es) + ")" if es else "True")
                elif key == "anyOf":
                    parts.append("(" + " or ".join(es) + ")" if es else "False")
                else:
                    parts.append("((" + ") + (".join(f"1 if {e} else 0" for e in es) + ") == 1)" if es else "False")
            elif key == "if":
                cond = self.expr(arg, v, known)
                then, other = self.expr(node.get("then", True), v, known), self.expr(node.get("else", True), v, known)
                if cond is None or then is None or other is None:
                    return None
                parts.append(f"({then} if {cond} else {other})")
            else:
                return None  # needs statements (or is unknown: stmts() raises for that)
        return "(" + " and ".join(parts) + ")" if parts else "True"

    def predicate(self, node: Any, v: str, known: str | None = None) -> str:
        """``expr`` when possible, else a call of a helper function written with ``stmts``."""
        e = self.expr(node, v, known)
        if e is not None:
            return e
        return f"{self.helper(node)}({v})"

    def helper(self, node: Any, name: str | None = None) -> str:
        name = name or self.name("_s_h")
        outer, self.bound = self.bound, {}  # another function: nothing bound there
        try:
            body = self.stmts(node, "v", "    ")
        finally:
            self.bound = outer
        self.helpers.append(f"def {name}(v):\n" + "".join(body) + "    return True\n")
        return name

    # -- statements --------------------------------------------------------------------------------
    def stmts(self, node: Any, v: str, ind: str, known: str | None = None) -> list[str]:
        """Lines (indented by ``ind``) that ``return False`` when ``v`` breaks ``node``.

        ``known``: a JSON type ``v`` is already known to have (checked by an enclosing node for
        the same value); the node's own single ``type`` is checked first and known after that.
        """
        if node is True:
            return []
        if node is False:
            return [f"{ind}return False\n"]
        out: list[str] = []
        t = node.get("type")
        if t is not None:
            names = [t] if isinstance(t, str) else list(t)
            if known not in names:
                out.append(f"{ind}if not {self.type_expr(v, names)}: return False\n")
                known = names[0] if len(names) == 1 else None
        is_dict = known == "object"
        is_list = known == "array"
        required: set[str] = set()
        if node.get("required"):
            req = node["required"]
            guard = "" if is_dict else f"isinstance({v}, dict) and "
            out.append(f"{ind}if {guard}not ({' and '.join(f'{k!r} in {v}' for k in req)}): return False\n")
            if is_dict:  # checked just above, so "properties" may subscript them
                required = set(req)
        # "properties" first: what it binds is then in scope for the rest (their order is free)
        keys = sorted(node, key=lambda k: k != "properties")
        for key in keys:
            arg = node[key]
            if key in _ANNOTATIONS or key in ("then", "else", "type", "required"):
                continue
            if key in ("const", "enum"):
                out.append(f"{ind}if not {self.enum_expr(v, [arg] if key == 'const' else list(arg))}: return False\n")
            elif key == "pattern":
                guard = "" if known == "string" else f"isinstance({v}, str) and "
                out.append(f"{ind}if {guard}{self.const(re.compile(arg), '_s_R')}.search({v}) is None: return False\n")
            elif key in ("minimum", "maximum"):
                op = "<" if key == "minimum" else ">"
                guard = "" if known in ("integer", "number") else f"isinstance({v}, (int, float)) and not isinstance({v}, bool) and "
                out.append(f"{ind}if {guard}{v} {op} {arg!r}: return False\n")
            elif key in ("minItems", "maxItems"):
                op = "<" if key == "minItems" else ">"
                guard = "" if is_list else f"isinstance({v}, list) and "
                out.append(f"{ind}if {guard}len({v}) {op} {arg!r}: return False\n")
            elif key == "uniqueItems":
                if arg:
                    guard = "" if is_list else f"isinstance({v}, list) and "
                    out.append(f"{ind}if {guard}not _unique({v}): return False\n")
            elif key == "additionalProperties":
                allowed = frozenset(node.get("properties", {}))
                if arg is False:
                    guard = "" if is_dict else f"isinstance({v}, dict) and "
                    out.append(f"{ind}if {guard}not {self.const(allowed)}.issuperset({v}): return False\n")
                elif arg is not True:
                    k, x = self.name("k"), self.name("x")
                    if is_dict:
                        body = self.stmts(arg, x, ind + "        ")
                        head = f"{ind}for {k}, {x} in {v}.items():\n{ind}    if {k} not in {self.const(allowed)}:\n"
                    else:
                        body = self.stmts(arg, x, ind + "            ")
                        head = (f"{ind}if isinstance({v}, dict):\n{ind}    for {k}, {x} in {v}.items():\n"
                                f"{ind}        if {k} not in {self.const(allowed)}:\n")
                    if body:
                        out.append(head)
                        out += body
            elif key == "items":
                x = self.name("x")
                body = self.stmts(arg, x, ind + ("    " if is_list else "        "))
                if body:
                    if is_list:
                        out.append(f"{ind}for {x} in {v}:\n")
                    else:
                        out.append(f"{ind}if isinstance({v}, list):\n{ind}    for {x} in {v}:\n")
                    out += body
            elif key == "properties":
                inner_ind = ind if is_dict else ind + "    "
                block: list[str] = []
                for k, sub in arg.items():
                    if sub is True:
                        continue
                    x = self.name("x")
                    if k in required:
                        body = self.stmts(sub, x, inner_ind)
                        if body:
                            block.append(f"{inner_ind}{x} = {v}[{k!r}]\n")
                            block += body
                            self.bound[(v, k)] = x
                    else:
                        body = self.stmts(sub, x, inner_ind + "    ")
                        if body:
                            block.append(f"{inner_ind}{x} = {v}.get({k!r}, _MISSING)\n{inner_ind}if {x} is not _MISSING:\n")
                            block += body
                if block:
                    if not is_dict:
                        out.append(f"{ind}if isinstance({v}, dict):\n")
                    out += block
            elif key == "$ref":
                if arg in self.inlining:
                    fn = self.ref_funcs.get(arg)
                    if fn is None:
                        fn = self.ref_funcs[arg] = self.name("_s_ref")
                        self.helper(self.resolve(arg), fn)
                    out.append(f"{ind}if not {fn}({v}): return False\n")
                else:
                    self.inlining.append(arg)
                    try:
                        out += self.stmts(self.resolve(arg), v, ind, known)
                    finally:
                        self.inlining.pop()
            elif key == "allOf":
                for sub in arg:
                    out += self.stmts(sub, v, ind, known)
            elif key == "anyOf":
                out.append(f"{ind}if not ({' or '.join(self.predicate(sub, v, known) for sub in arg) or 'False'}): return False\n")
            elif key == "oneOf":
                terms = " + ".join(f"(1 if {self.predicate(sub, v, known)} else 0)" for sub in arg) or "0"
                out.append(f"{ind}if {terms} != 1: return False\n")
            elif key == "if":
                cond = self.predicate(arg, v, known)
                outer = dict(self.bound)  # what a branch binds is out of scope after it
                then = self.stmts(node.get("then", True), v, ind + "    ", known)
                self.bound = dict(outer)
                other = self.stmts(node.get("else", True), v, ind + "    ", known)
                self.bound = outer
                if then or other:
                    out.append(f"{ind}if {cond}:\n")
                    out += then or [f"{ind}    pass\n"]
                    if other:
                        out.append(f"{ind}else:\n")
                        out += other
            else:
                raise NotImplementedError(f"schema keyword {key!r} is not supported by tmlr_runtime._schema")
        return out

    def source(self) -> str:
        """Module-level Python: ``_s_make()``, which makes the constants (sets, compiled patterns)
        and helper functions and returns ``_s_valid(v) -> bool`` (nothing is made at import)."""
        body = self.stmts(self.root, "v", "    ")
        main = "def _s_valid(v):\n" + "".join(body) + "    return True\n"
        inner = "".join(self.consts) + "".join(h + "\n" for h in self.helpers) + main + "return _s_valid\n"
        return "def _s_make():\n" + "".join("    " + line if line.strip() else line for line in inner.splitlines(True))


_MISSING = object()


def _enum_match(value: Any, options: list[Any]) -> bool:
    """``const``/``enum`` with JSON equality (True is not 1, 1 is 1.0), as :class:`_Evaluator`."""
    if isinstance(value, (dict, list)):
        return any(_equal(value, o) for o in options)
    k = _key(value)
    return any(_key(o) == k if _key(o) is not None else _equal(value, o) for o in options)


def _unique(items: list[Any]) -> bool:
    return not any(_equal(x, y) for i, x in enumerate(items) for y in items[:i])


# Bump when _Codegen changes what it writes, so the validator generated into this file is not used
# until it is written again with write_generated().
_CODEGEN_VERSION = 4


def validator_source(schema_bytes: bytes | None = None) -> str:
    """The generated validator for the schema file (or ``schema_bytes``), as module-level source."""
    if schema_bytes is None:
        with open(SCHEMA_PATH, "rb") as f:
            schema_bytes = f.read()
    return _Codegen(json.loads(schema_bytes)).source()


@lru_cache(maxsize=1)
def _validator() -> Callable[[Any], bool]:
    """The validity predicate: the one generated into this module when it was written for this
    schema file (no work at run time but hashing the file), else generated and compiled now."""
    with open(SCHEMA_PATH, "rb") as f:
        raw = f.read()
    if _GENERATED_FOR == (hashlib.sha256(raw).hexdigest(), _CODEGEN_VERSION):
        return _s_make()
    ns: dict[str, Any] = {"re": re, "_MISSING": _MISSING, "_enum_match": _enum_match, "_unique": _unique, "_is_type": _is_type}
    exec(compile(validator_source(raw), "<tmlr metadata schema validator>", "exec"), ns)
    return ns["_s_make"]()


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


_BEGIN = "# --- generated by tmlr_runtime._schema.write_generated(); do not edit ---\n"
_END = "# --- end of generated code ---\n"


def write_generated(check: bool = False) -> bool:
    """Rewrite the generated validator at the end of this file from the schema file; with
    ``check``, only tell whether it is up to date. Run after editing the schema or _Codegen::

        python -c "import tmlr_runtime._schema as s; s.write_generated()"
    """
    with open(SCHEMA_PATH, "rb") as f:
        raw = f.read()
    block = (
        _BEGIN
        + f"_GENERATED_FOR = ({hashlib.sha256(raw).hexdigest()!r}, {_CODEGEN_VERSION})\n"
        + validator_source(raw)
        + _END
    )
    with open(__file__, encoding="utf-8") as f:
        text = f.read()
    start, end = text.index(_BEGIN), text.index(_END) + len(_END)
    if check:
        return text[start:end] == block
    with open(__file__, "w", encoding="utf-8") as f:
        f.write(text[:start] + block + text[end:])
    return True


# The validator generated from schema/metadata.schema.json, compiled with this module (so with its
# .pyc). _validator() uses it only while _GENERATED_FOR matches the schema file's sha256 and
# _CODEGEN_VERSION; otherwise it generates and compiles the same code at run time.
# --- generated by tmlr_runtime._schema.write_generated(); do not edit ---
_GENERATED_FOR = ('d56498918f452502ce6c181992593df9e12427c2d38a6b1c8461ca4c63be6f6c', 4)
def _s_make():
    _s_K2 = frozenset({1})
    _s_R4 = re.compile('^[A-Za-z_][A-Za-z0-9_]*$(?!\\n)')
    _s_R8 = re.compile('^[A-Za-z_][A-Za-z0-9_]*$(?!\\n)')
    _s_K10 = frozenset({'constexpr', 'equal_to_1', 'runtime'})
    _s_K11 = frozenset({'runtime'})
    _s_K13 = frozenset({'bf16', 'fp16', 'fp32', 'fp64', 'i1', 'i16', 'i32', 'i64', 'i8', 'u1', 'u16', 'u32', 'u64', 'u8'})
    _s_R14 = re.compile('^\\*k?(i1|u1|i8|u8|i16|u16|i32|u32|i64|u64|fp8e4nv|fp8e5|fp8e4b15|fp8e4b8|fp8e5b16|fp16|bf16|fp32|fp64)$(?!\\n)')
    _s_K15 = frozenset({'nvTmaDesc'})
    _s_K17 = frozenset({1, 16})
    _s_K18 = frozenset({'divisibility', 'kind', 'name', 'type'})
    _s_K19 = frozenset({'constexpr'})
    _s_K21 = frozenset({'kind', 'name', 'value'})
    _s_K22 = frozenset({'equal_to_1'})
    _s_K24 = frozenset({'bf16', 'fp16', 'fp32', 'fp64', 'i1', 'i16', 'i32', 'i64', 'i8', 'u1', 'u16', 'u32', 'u64', 'u8'})
    _s_K25 = frozenset({'kind', 'name', 'type'})
    _s_K30 = frozenset({'cuda'})
    _s_R33 = re.compile('^sm_[0-9]+a?$(?!\\n)')
    _s_K35 = frozenset({32})
    _s_K36 = frozenset({'arch', 'backend', 'capability', 'warp_size'})
    _s_R38 = re.compile('^[A-Za-z_][A-Za-z0-9_]*$(?!\\n)')
    _s_R41 = re.compile('^[A-Za-z0-9_][A-Za-z0-9_.-]*\\.cubin$(?!\\n)')
    _s_R43 = re.compile('^[0-9a-f]{64}$(?!\\n)')
    _s_K45 = frozenset({'file', 'sha256', 'size'})
    _s_K55 = frozenset({'cluster_dims', 'launch_cooperative_grid', 'launch_pdl', 'num_ctas', 'num_warps', 'shared', 'tmem_size'})
    _s_K61 = frozenset({'global_scratch', 'profile_scratch'})
    _s_K62 = frozenset({'global_scratch_align', 'global_scratch_size', 'hidden_params'})
    _s_K69 = frozenset({'registers', 'spill_loads', 'spill_stores', 'stack_frame', 'static_shared'})
    _s_K74 = frozenset({'cubin', 'llir', 'ptx', 'python', 'ttgir', 'ttir'})
    _s_R77 = re.compile('^[0-9a-f]{64}$(?!\\n)')
    _s_K80 = frozenset({'options', 'ptxas_version', 'source_name', 'source_sha256', 'source_stage', 'tmlr_version', 'triton_version'})
    _s_K81 = frozenset({'cubin', 'entry', 'launch', 'provenance', 'resources', 'scratch', 'target'})
    _s_K82 = frozenset({'name', 'schema_version', 'signature', 'variants'})
    def _s_valid(v):
        if not (type(v) is dict or isinstance(v, dict)): return False
        if not ('schema_version' in v and 'name' in v and 'signature' in v and 'variants' in v): return False
        x1 = v['schema_version']
        if not ((type(x1) is int or type(x1) is float or _is_type(x1, 'number')) and x1 in _s_K2): return False
        x3 = v['name']
        if not (type(x3) is str or isinstance(x3, str)): return False
        if _s_R4.search(x3) is None: return False
        x5 = v['signature']
        if not (type(x5) is list or isinstance(x5, list)): return False
        for x6 in x5:
            if not (type(x6) is dict or isinstance(x6, dict)): return False
            if not ('name' in x6 and 'kind' in x6): return False
            x7 = x6['name']
            if not (type(x7) is str or isinstance(x7, str)): return False
            if _s_R8.search(x7) is None: return False
            x9 = x6['kind']
            if not ((type(x9) is str or isinstance(x9, str)) and x9 in _s_K10): return False
            if ((((((type(x9) is str or isinstance(x9, str)) and x9 in _s_K11))))):
                if not ('type' in x6 and 'divisibility' in x6): return False
                x12 = x6['type']
                if not (((((type(x12) is str or isinstance(x12, str)) and x12 in _s_K13))) or (((type(x12) is str or isinstance(x12, str)) and (not isinstance(x12, str) or _s_R14.search(x12) is not None))) or (((type(x12) is str or isinstance(x12, str)) and x12 in _s_K15))): return False
                x16 = x6['divisibility']
                if not ((type(x16) is int or type(x16) is float or _is_type(x16, 'number')) and x16 in _s_K17): return False
                if not _s_K18.issuperset(x6): return False
            if ((((((type(x9) is str or isinstance(x9, str)) and x9 in _s_K19))))):
                if not ('value' in x6): return False
                x20 = x6['value']
                if not (type(x20) is int or _is_type(x20, 'integer') or type(x20) is int or type(x20) is float or _is_type(x20, 'number') or x20 is True or x20 is False or type(x20) is str or isinstance(x20, str) or x20 is None): return False
                if not _s_K21.issuperset(x6): return False
            if ((((((type(x9) is str or isinstance(x9, str)) and x9 in _s_K22))))):
                if not ('type' in x6): return False
                x23 = x6['type']
                if not ((type(x23) is str or isinstance(x23, str)) and x23 in _s_K24): return False
                if not _s_K25.issuperset(x6): return False
        x26 = v['variants']
        if not (type(x26) is list or isinstance(x26, list)): return False
        if len(x26) < 1: return False
        for x27 in x26:
            if not (type(x27) is dict or isinstance(x27, dict)): return False
            if not ('target' in x27 and 'entry' in x27 and 'cubin' in x27 and 'launch' in x27 and 'scratch' in x27 and 'provenance' in x27): return False
            x28 = x27['target']
            if not (type(x28) is dict or isinstance(x28, dict)): return False
            if not ('backend' in x28 and 'capability' in x28 and 'arch' in x28 and 'warp_size' in x28): return False
            x29 = x28['backend']
            if not ((type(x29) is str or isinstance(x29, str)) and x29 in _s_K30): return False
            x31 = x28['capability']
            if not (type(x31) is int or _is_type(x31, 'integer')): return False
            if x31 < 50: return False
            x32 = x28['arch']
            if not (type(x32) is str or isinstance(x32, str)): return False
            if _s_R33.search(x32) is None: return False
            x34 = x28['warp_size']
            if not ((type(x34) is int or type(x34) is float or _is_type(x34, 'number')) and x34 in _s_K35): return False
            if not _s_K36.issuperset(x28): return False
            x37 = x27['entry']
            if not (type(x37) is str or isinstance(x37, str)): return False
            if _s_R38.search(x37) is None: return False
            x39 = x27['cubin']
            if not (type(x39) is dict or isinstance(x39, dict)): return False
            if not ('file' in x39 and 'sha256' in x39 and 'size' in x39): return False
            x40 = x39['file']
            if not (type(x40) is str or isinstance(x40, str)): return False
            if _s_R41.search(x40) is None: return False
            x42 = x39['sha256']
            if not (type(x42) is str or isinstance(x42, str)): return False
            if _s_R43.search(x42) is None: return False
            x44 = x39['size']
            if not (type(x44) is int or _is_type(x44, 'integer')): return False
            if x44 < 1: return False
            if not _s_K45.issuperset(x39): return False
            x46 = x27['launch']
            if not (type(x46) is dict or isinstance(x46, dict)): return False
            if not ('num_warps' in x46 and 'num_ctas' in x46 and 'cluster_dims' in x46 and 'shared' in x46 and 'tmem_size' in x46 and 'launch_cooperative_grid' in x46 and 'launch_pdl' in x46): return False
            x47 = x46['num_warps']
            if not (type(x47) is int or _is_type(x47, 'integer')): return False
            if x47 < 1: return False
            if x47 > 32: return False
            x48 = x46['num_ctas']
            if not (type(x48) is int or _is_type(x48, 'integer')): return False
            if x48 < 1: return False
            x49 = x46['cluster_dims']
            if not (type(x49) is list or isinstance(x49, list)): return False
            for x50 in x49:
                if not (type(x50) is int or _is_type(x50, 'integer')): return False
                if x50 < 1: return False
            if len(x49) < 3: return False
            if len(x49) > 3: return False
            x51 = x46['shared']
            if not (type(x51) is int or _is_type(x51, 'integer')): return False
            if x51 < 0: return False
            x52 = x46['tmem_size']
            if not (type(x52) is int or _is_type(x52, 'integer')): return False
            if x52 < 0: return False
            x53 = x46['launch_cooperative_grid']
            if not (x53 is True or x53 is False): return False
            x54 = x46['launch_pdl']
            if not (x54 is True or x54 is False): return False
            if not _s_K55.issuperset(x46): return False
            x56 = x27['scratch']
            if not (type(x56) is dict or isinstance(x56, dict)): return False
            if not ('global_scratch_size' in x56 and 'global_scratch_align' in x56 and 'hidden_params' in x56): return False
            x57 = x56['global_scratch_size']
            if not (type(x57) is int or _is_type(x57, 'integer')): return False
            if x57 < 0: return False
            x58 = x56['global_scratch_align']
            if not (type(x58) is int or _is_type(x58, 'integer')): return False
            if x58 < 1: return False
            x59 = x56['hidden_params']
            if not (type(x59) is list or isinstance(x59, list)): return False
            for x60 in x59:
                if not ((type(x60) is str or isinstance(x60, str)) and x60 in _s_K61): return False
            if not _unique(x59): return False
            if not _s_K62.issuperset(x56): return False
            x63 = x27.get('resources', _MISSING)
            if x63 is not _MISSING:
                if not (type(x63) is dict or isinstance(x63, dict)): return False
                x64 = x63.get('registers', _MISSING)
                if x64 is not _MISSING:
                    if not (type(x64) is int or _is_type(x64, 'integer')): return False
                    if x64 < 0: return False
                x65 = x63.get('spill_stores', _MISSING)
                if x65 is not _MISSING:
                    if not (type(x65) is int or _is_type(x65, 'integer')): return False
                    if x65 < 0: return False
                x66 = x63.get('spill_loads', _MISSING)
                if x66 is not _MISSING:
                    if not (type(x66) is int or _is_type(x66, 'integer')): return False
                    if x66 < 0: return False
                x67 = x63.get('stack_frame', _MISSING)
                if x67 is not _MISSING:
                    if not (type(x67) is int or _is_type(x67, 'integer')): return False
                    if x67 < 0: return False
                x68 = x63.get('static_shared', _MISSING)
                if x68 is not _MISSING:
                    if not (type(x68) is int or _is_type(x68, 'integer')): return False
                    if x68 < 0: return False
                if not _s_K69.issuperset(x63): return False
            x70 = x27['provenance']
            if not (type(x70) is dict or isinstance(x70, dict)): return False
            if not ('triton_version' in x70 and 'ptxas_version' in x70 and 'source_stage' in x70 and 'source_sha256' in x70 and 'options' in x70): return False
            x71 = x70['triton_version']
            if not (type(x71) is str or isinstance(x71, str)): return False
            x72 = x70['ptxas_version']
            if not (type(x72) is str or isinstance(x72, str)): return False
            x73 = x70['source_stage']
            if not ((type(x73) is str or isinstance(x73, str)) and x73 in _s_K74): return False
            x75 = x70.get('source_name', _MISSING)
            if x75 is not _MISSING:
                if not (type(x75) is str or isinstance(x75, str)): return False
            x76 = x70['source_sha256']
            if not (type(x76) is str or isinstance(x76, str)): return False
            if _s_R77.search(x76) is None: return False
            x78 = x70['options']
            if not (type(x78) is dict or isinstance(x78, dict)): return False
            x79 = x70.get('tmlr_version', _MISSING)
            if x79 is not _MISSING:
                if not (type(x79) is str or isinstance(x79, str)): return False
            if not _s_K80.issuperset(x70): return False
            if not _s_K81.issuperset(x27): return False
        if not _s_K82.issuperset(v): return False
        return True
    return _s_valid
# --- end of generated code ---
