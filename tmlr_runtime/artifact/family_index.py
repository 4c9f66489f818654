"""Reading a family index: ``metadata.json`` of schema version 3 over ``v/<vid>/`` sub-artifacts.

A family directory holds ordinary (v1/v2) artifacts under ``v/<vid>/``, one per specialization
pattern x autotune config x heuristic value, and this index, which names the kernel's parameters,
its ``@triton.autotune`` configs and key, its ``@triton.heuristics`` expressions and every variant
with its signature text. The schema file is :data:`FAMILY_SCHEMA_PATH`; as for single artifacts the
reader checks every field itself and names a bad one by JSON path (tests hold both to the same
documents).
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from ..errors import ArtifactError, SchemaError, short_repr
from .heuristics import Heuristic
from .metadata import METADATA_FILE, read_file

FAMILY_SCHEMA_PATH = Path(__file__).with_name("schema") / "family.schema.json"
FAMILY_VERSION = 3
_PARAM_KINDS = ("runtime", "constexpr")


@dataclass(frozen=True)
class Config:
    """One ``triton.Config``: constexpr values and launch options."""

    kwargs: dict[str, Any]
    num_warps: int
    num_stages: int
    num_ctas: int
    maxnreg: int | None

    def meta(self) -> dict[str, Any]:
        """What Triton's ``Config.all_kwargs()`` gives a heuristic or a grid callable."""
        return {**self.kwargs, "num_warps": self.num_warps, "num_stages": self.num_stages, "num_ctas": self.num_ctas,
                "maxnreg": self.maxnreg}

    def to_json(self) -> dict[str, Any]:
        """The config as the family index records it."""
        return {"kwargs": dict(self.kwargs), "num_warps": self.num_warps, "num_stages": self.num_stages,
                "num_ctas": self.num_ctas, "maxnreg": self.maxnreg}

    def describe(self) -> str:
        kw = ", ".join(f"{k}={v!r}" for k, v in self.kwargs.items())
        return f"{kw}{', ' if kw else ''}num_warps={self.num_warps}, num_stages={self.num_stages}"


@dataclass(frozen=True)
class Autotune:
    """The ``@triton.autotune`` record: key, configs and what a benchmark must save or clear."""

    key: tuple[str, ...]
    configs: tuple[Config, ...]
    reset_to_zero: tuple[str, ...]
    restore_value: tuple[str, ...]
    has_pre_hook: bool
    dtype_in_key: bool


@dataclass(frozen=True)
class FamilyVariant:
    dir: str  # relative to the family directory: "v/c0-3fa2b19c0d11"
    config: int | None
    signature: str  # the sub-artifact's full signature text


@dataclass(frozen=True)
class FamilyIndex:
    """A parsed, checked family index."""

    name: str
    params: tuple[tuple[str, str], ...]  # (name, "runtime" | "constexpr") in declaration order
    autotune: Autotune | None
    heuristics: tuple[Heuristic, ...]
    variants: tuple[FamilyVariant, ...]
    directory: str
    sha256: str  # of the index file's bytes: what tuning tables and caches are keyed by


class _Bad(Exception):
    """``(json_path, problem)``."""


def _get(obj: Any, key: str, path: str, kinds: type | tuple[type, ...], what: str) -> Any:
    if not isinstance(obj, dict) or key not in obj:
        raise _Bad(path, f"{key!r} is a required property")
    value = obj[key]
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in (kinds if isinstance(kinds, tuple) else (kinds,))):
        raise _Bad(f"{path}.{key}", f"{short_repr(value)} is not {what}")
    return value


def _names(obj: Any, key: str, path: str) -> tuple[str, ...]:
    values = _get(obj, key, path, list, "an array of parameter names")
    if not all(isinstance(v, str) and v.isidentifier() for v in values):
        raise _Bad(f"{path}.{key}", f"{short_repr(values)} is not an array of parameter names")
    return tuple(values)


def _config(c: Any, path: str) -> Config:
    kwargs = _get(c, "kwargs", path, dict, "an object of constexpr values")
    if not all(isinstance(v, (int, float, bool)) for v in kwargs.values()):
        raise _Bad(f"{path}.kwargs", f"{short_repr(kwargs)} holds a value that is not a number or bool")
    ints = [_get(c, k, path, int, "an integer >= 1") for k in ("num_warps", "num_stages", "num_ctas")]
    maxnreg = c.get("maxnreg") if isinstance(c, dict) else None
    if maxnreg is not None and (not isinstance(maxnreg, int) or isinstance(maxnreg, bool)):
        raise _Bad(f"{path}.maxnreg", f"{short_repr(maxnreg)} is not an integer or null")
    if min(ints) < 0 or ints[0] < 1 or ints[2] < 1:
        raise _Bad(path, f"num_warps/num_stages/num_ctas {ints} out of range")
    return Config(dict(kwargs), ints[0], ints[1], ints[2], maxnreg)


def _autotune(a: Any, path: str) -> Autotune | None:
    if a is None:
        return None
    configs = _get(a, "configs", path, list, "an array of configs")
    if not configs:
        raise _Bad(f"{path}.configs", "an autotuned kernel needs at least one config")
    return Autotune(_names(a, "key", path), tuple(_config(c, f"{path}.configs[{i}]") for i, c in enumerate(configs)),
                    _names(a, "reset_to_zero", path), _names(a, "restore_value", path),
                    _get(a, "has_pre_hook", path, bool, "a bool"), _get(a, "dtype_in_key", path, bool, "a bool"))


def _heuristic(h: Any, path: str) -> Heuristic:
    name = _get(h, "name", path, str, "a parameter name")
    expr = h.get("expr") if isinstance(h, dict) else None
    if expr is not None and not isinstance(expr, str):
        raise _Bad(f"{path}.expr", f"{short_repr(expr)} is not a string or null")
    try:
        return Heuristic.make(name, expr, _get(h, "after_config", path, bool, "a bool"))
    except ValueError as e:
        raise _Bad(f"{path}.expr", str(e)) from None


def _variant(v: Any, path: str, configs: int) -> FamilyVariant:
    rel = _get(v, "dir", path, str, "a relative directory")
    parts = rel.replace("\\", "/").split("/")
    if os.path.isabs(rel) or ".." in parts or "" in parts or rel.startswith("~"):
        raise _Bad(f"{path}.dir", f"{rel!r} must be a relative path inside the family directory (no '..', not absolute)")
    config = v.get("config") if isinstance(v, dict) else None
    if config is not None and (not isinstance(config, int) or isinstance(config, bool) or not 0 <= config < configs):
        raise _Bad(f"{path}.config", f"{short_repr(config)} is not an index into autotune.configs (0..{configs - 1}) or null")
    return FamilyVariant(rel, config, _get(v, "signature", path, str, "a signature text"))


def _document(doc: Any, directory: str, sha256: str) -> FamilyIndex:
    if _get(doc, "kind", "$", str, '"family"') != "family":
        raise _Bad("$.kind", f"{doc['kind']!r} is not \"family\"")
    name = _get(doc, "name", "$", str, "an identifier")
    params = []
    for i, p in enumerate(_get(doc, "params", "$", list, "an array of parameters")):
        kind = _get(p, "kind", f"$.params[{i}]", str, "runtime or constexpr")
        if kind not in _PARAM_KINDS:
            raise _Bad(f"$.params[{i}].kind", f"{kind!r} is not runtime or constexpr")
        params.append((_get(p, "name", f"$.params[{i}]", str, "a parameter name"), kind))
    if "autotune" not in doc:
        raise _Bad("$", "'autotune' is a required property")
    autotune = _autotune(doc["autotune"], "$.autotune")
    heuristics = tuple(_heuristic(h, f"$.heuristics[{i}]") for i, h in enumerate(_get(doc, "heuristics", "$", list, "an array")))
    n = len(autotune.configs) if autotune else 0
    variants = tuple(_variant(v, f"$.variants[{i}]", n) for i, v in enumerate(_get(doc, "variants", "$", list, "an array")))
    if not variants:
        raise _Bad("$.variants", "a family needs at least one variant")
    if (autotune is None) != all(v.config is None for v in variants) or autotune and any(v.config is None for v in variants):
        raise _Bad("$.variants", "every variant names its config when the kernel is autotuned, none when it is not")
    return FamilyIndex(name, tuple(params), autotune, heuristics, variants, directory, sha256)


def is_family(directory: str) -> bool:
    """Whether ``directory/metadata.json`` is a family index (schema version 3, kind "family"); a
    v3 document of another kind stays the single-artifact reader's (which names its version)."""
    try:
        doc = json.loads(read_file(os.path.join(directory, METADATA_FILE)))
    except (OSError, ValueError, RecursionError):
        return False
    return isinstance(doc, dict) and doc.get("kind") == "family" and doc.get("schema_version") == FAMILY_VERSION \
        and not isinstance(doc.get("schema_version"), bool)


def read_index(directory: str, stats: dict[str, os.stat_result] | None = None) -> FamilyIndex:
    """Read and check ``directory/metadata.json`` as a family index; raises :class:`SchemaError`."""
    path = os.path.join(directory, METADATA_FILE)
    try:
        raw = read_file(path, stats)
    except OSError as e:
        raise ArtifactError(f"{path}: cannot be read ({e.strerror}); pass the family directory tmlr-build wrote", path) from None
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError) as e:
        raise SchemaError(f"{path}: not valid JSON ({e}); rebuild the family with tmlr-build", path) from None
    try:
        if _get(doc, "schema_version", "$", int, "3") != FAMILY_VERSION:
            raise _Bad("$.schema_version", f"{doc['schema_version']!r} is not 3 (a family index)")
        return _document(doc, directory, hashlib.sha256(raw).hexdigest())
    except _Bad as e:
        json_path, problem = e.args
        raise SchemaError(f"{path}: {json_path}: {problem}; not a tmlr family index (schema v3) - rebuild it with tmlr-build",
                          path, json_path) from None
