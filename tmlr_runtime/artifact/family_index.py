"""A family index: ``metadata.json`` of schema version 3 (6 with tuple parameters, 8 with variants that failed to compile) over ``v/<vid>/`` sub-artifacts (docs/variants.md,
"Layout"), checked by the rules of ``rules`` as :data:`FAMILY_SCHEMA_PATH` says while it builds the records."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..errors import short_repr
from .heuristics import Heuristic
from .files import FAMILY_FAILED_VERSION, FAMILY_TUPLE_VERSION, FAMILY_VERSION, FAMILY_VERSIONS
from .rules import BOOL, IDENTIFIER, IS_ARCH, IS_SHA256, Invalid, array, at, check, integer, nullable, obj, one_of, string, test
from ..records import Record

FAMILY_SCHEMA_PATH = Path(__file__).with_name("schema") / "family.schema.json"
_PARAM_KINDS = ("runtime", "constexpr")


class Config(Record):
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


class Autotune(Record):
    """The ``@triton.autotune`` record: key, configs and what a benchmark must save or clear."""

    key: tuple[str, ...]
    configs: tuple[Config, ...]
    reset_to_zero: tuple[str, ...]
    restore_value: tuple[str, ...]
    has_pre_hook: bool
    dtype_in_key: bool


class FamilyVariant(Record):
    dir: str  # relative to the family directory: "v/c0-3fa2b19c0d11"
    config: int | None
    signature: str  # the sub-artifact's full signature text
    # arch -> sha256 of its cubin (None in an index written before the field): the index's own sha256, which
    # keys tuning tables and caches, changes whenever a variant's bytes do
    cubin_sha256: dict[str, str] | None = None


class FailedVariant(Record):
    """A variant the build planned but could not compile (schema v8): the family was written without it."""

    vid: str  # what its folder would have been named: "c0-3fa2b19c0d11"
    config: int | None
    signature: str  # its full signature text, as a variant's
    error: str  # the first line of its compile error


class FamilyIndex(Record):
    """A parsed, checked family index."""

    name: str
    params: tuple[tuple[str, str], ...]  # (name, "runtime" | "constexpr") in declaration order
    autotune: Autotune | None
    heuristics: tuple[Heuristic, ...]
    variants: tuple[FamilyVariant, ...]
    directory: str
    sha256: str  # of the index file's bytes: what tuning tables and caches are keyed by
    schema_version: int = FAMILY_VERSION  # FAMILY_TUPLE_VERSION: the kernel has tuple parameters; FAMILY_FAILED_VERSION: see failed
    failed: tuple[FailedVariant, ...] = ()  # the variants that failed to compile (schema v8 only)
    kind = "family"

    @classmethod
    def from_dict(cls, doc: Any, directory: str, sha256: str) -> "FamilyIndex":
        """Check ``doc`` as the schema says while building the records; raises :class:`SchemaError`."""
        said = (f"it says schema v{short_repr(doc['schema_version'])}" if type(doc) is dict and "schema_version" in doc
                else "it names no schema_version")
        d = check(_document, doc, os.path.join(directory, "metadata.json"),
                  f"not a valid tmlr family index ({said}; this tmlr_runtime reads family indexes of "
                  f"{', '.join(f'v{n}' for n in FAMILY_VERSIONS)}) - rebuild it with tmlr-build")
        return cls(d["name"], d["params"], d["autotune"], d["heuristics"], d["variants"], directory, sha256, d["schema_version"],
                   d.get("failed", ()))


# --- the document, in the order of schema/family.schema.json ---------------------------------------
_NAMES = array(IDENTIFIER)
_CONFIG = obj({"kwargs": test(lambda v: type(v) is dict and all(isinstance(x, (int, float)) for x in v.values()),
                             "an object of constexpr values (numbers or bools)"),
               "num_warps": integer(1), "num_stages": integer(0), "num_ctas": integer(1),
               "maxnreg": nullable(integer(-2**63))})
_AUTOTUNE_RULE = obj({"key": _NAMES, "configs": array(lambda c: Config(**_CONFIG(c)), 1), "reset_to_zero": _NAMES,
                      "restore_value": _NAMES, "has_pre_hook": BOOL, "dtype_in_key": BOOL})
_AUTOTUNE = lambda value: Autotune(**_AUTOTUNE_RULE(value))  # noqa: E731


def _heuristic(value: Any) -> Heuristic:
    h = obj({"name": IDENTIFIER, "expr": nullable(string()), "after_config": BOOL})(value)
    try:
        return Heuristic.make(h["name"], h["expr"], h["after_config"])
    except ValueError as e:
        raise at(Invalid(str(e)), "expr") from None


def _relative(rel: str) -> str:
    parts = rel.replace("\\", "/").split("/")
    if os.path.isabs(rel) or ".." in parts or "" in parts or rel.startswith("~"):
        raise Invalid(f"{rel!r} must be a relative path inside the family directory (no '..', not absolute)")
    return rel


_DIGESTS = test(lambda v: type(v) is dict and len(v) > 0 and all(type(k) is str and IS_ARCH(k) and type(d) is str and IS_SHA256(d)
                                                                  for k, d in v.items()),
                'an object of arch -> sha256 (lowercase hex), e.g. {"sm_90a": "3fa2..."}')
_VARIANT = obj({"dir": lambda v: _relative(string(meaning="a relative directory")(v)),
                "config": nullable(integer(0)), "signature": string(meaning="a signature text")}, {"cubin_sha256": _DIGESTS})
_FAILED = obj({"vid": string(meaning="a variant id"), "config": nullable(integer(0)), "signature": string(meaning="a signature text"),
               "error": string(meaning="the first line of the compile error")})
_PARAM = obj({"name": IDENTIFIER, "kind": one_of(_PARAM_KINDS, "runtime or constexpr")})
_DOCUMENT_RULE = obj({"schema_version": one_of(FAMILY_VERSIONS, "3, 6 or 8 (a family index)"), "kind": one_of(("family",), '"family"'),
                      "name": IDENTIFIER, "params": array(lambda p: (lambda d: (d["name"], d["kind"]))(_PARAM(p))),
                      "autotune": nullable(_AUTOTUNE), "heuristics": array(_heuristic),
                      "variants": array(lambda v: FamilyVariant(**_VARIANT(v)), 1)},
                     {"failed": array(lambda f: FailedVariant(**_FAILED(f)), 1)})


def _document(doc: Any) -> dict[str, Any]:
    d = _DOCUMENT_RULE(doc)
    if ("failed" in d) != (d["schema_version"] == FAMILY_FAILED_VERSION):
        raise at(Invalid(f'a family index lists "failed" variants exactly when its schema_version is {FAMILY_FAILED_VERSION}'),
                 "failed" if "failed" in d else "schema_version")
    n = len(d["autotune"].configs) if d["autotune"] else 0
    for field in ("variants", "failed"):
        entries = d.get(field, ())
        for i, v in enumerate(entries):
            if v.config is not None and v.config >= n:
                raise at(at(at(Invalid(f"{v.config} is not an index into autotune.configs (0..{n - 1}) or null"), "config"), i), field)
        if any((v.config is None) != (d["autotune"] is None) for v in entries):
            raise at(Invalid("every variant names its config when the kernel is autotuned, none when it is not"), field)
    return d
