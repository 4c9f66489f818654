"""Reading an artifact directory: metadata.json into frozen records, cubins verified against it.

The schema file (:data:`SCHEMA_PATH`) is the contract with tmlr_build, which validates with
``jsonschema`` before writing; the reader here checks each field by the rule its record's table gives
it (``_PARAMETER``, ``_DESCRIPTOR``, ``_VARIANT``; tests show the reader and jsonschema accept and reject
the same documents) while it builds the records, naming a bad field by JSON path.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable
from ..errors import ArtifactError, IntegrityError, NoCompatibleVariantError, SchemaError, short_repr
from ..abi import (DESCRIPTOR_FIELDS, PARAM_TYPES, POINTEE_TYPES, SCALAR_TYPES, TENSORDESC, Descriptor, Parameter, Target,
                  TensorMapMeta)

SCHEMA_PATH = Path(__file__).with_name("schema") / "metadata.schema.json"
SCHEMA_VERSION = 2  # the newest this reader reads
SCHEMA_VERSIONS = (1, 2)  # 2 added tensordesc parameters; a document without one says 1
METADATA_FILE = "metadata.json"


@dataclass(frozen=True)
class Variant:
    """One compiled cubin of the kernel, for one target architecture."""

    target: Target
    entry: str
    cubin_file: str
    cubin_sha256: str
    cubin_size: int
    num_warps: int
    num_ctas: int
    cluster_dims: tuple[int, int, int]
    shared: int
    tmem_size: int
    cooperative: bool
    pdl: bool
    scratch_size: int
    scratch_align: int
    hidden_params: tuple[str, ...]
    resources: dict[str, int]
    provenance: dict[str, Any]

    @property
    def capability(self) -> int:
        return self.target.capability

    @property
    def arch(self) -> str:
        return self.target.arch

    @property
    def threads_per_block(self) -> int:
        return 32 * self.num_warps

    @property
    def is_cluster_launch(self) -> bool:
        return self.cluster_dims != (1, 1, 1)

    def runs_on(self, major: int, minor: int) -> bool:
        return self.target.runs_on(major, minor)


@dataclass(frozen=True)
class ArtifactMetadata:
    """A parsed, checked metadata.json."""

    name: str
    signature: tuple[Parameter, ...]
    variants: tuple[Variant, ...]
    path: str | None = None
    schema_version: int = 1

    @classmethod
    def from_dict(cls, doc: Any, path: str | None = None) -> "ArtifactMetadata":
        """Check ``doc`` as the schema says while building the records; raises :class:`SchemaError`."""
        where = path or "metadata"
        version = doc.get("schema_version", SCHEMA_VERSION) if isinstance(doc, dict) else SCHEMA_VERSION
        if isinstance(version, bool) or version not in SCHEMA_VERSIONS:
            raise SchemaError(f"{where}: schema_version {short_repr(version)} is not supported by this tmlr_runtime (it "
                              f"reads versions {', '.join(map(str, SCHEMA_VERSIONS))}); rebuild the artifact with a matching tmlr-build or upgrade "
                              "tmlr_runtime", path, "$.schema_version")
        try:
            name, signature, variants = _document(doc)
            if version == 1 and any(p.descriptor is not None for p in signature):
                raise _at(_Invalid("1, but the signature has a tensordesc parameter, which needs schema_version 2"), "schema_version")
        except _Invalid as e:
            json_path, problem = "$" + e.where, e.problem
            raise SchemaError(f"{where}: {json_path}: {problem}; not a tmlr metadata.json (schema v{SCHEMA_VERSION}) "
                              "- rebuild it with tmlr-build", path, json_path) from None
        return _record(cls, {"name": name, "signature": signature, "variants": variants, "path": path,
                                     "schema_version": int(version)})

    @classmethod
    def read(cls, directory: str | os.PathLike[str], stats: dict[str, os.stat_result] | None = None) -> "ArtifactMetadata":
        """Read and check ``directory/metadata.json``; ``stats`` gets the stat of the file read, by path."""
        directory = os.fspath(directory)
        meta_path = os.path.join(directory, METADATA_FILE)
        try:
            raw = read_file(meta_path, stats)
        except (FileNotFoundError, NotADirectoryError):
            if not os.path.isdir(directory):
                raise ArtifactError(f"{directory}: not an artifact directory (it does not exist or is a file); pass the "
                                    "directory tmlr-build wrote, e.g. OUT/<kernel_name>", directory) from None
            raise ArtifactError(f"{meta_path}: missing; an artifact directory needs the metadata.json that tmlr-build "
                                "writes beside the cubins - copy the whole artifact directory, or rebuild it with tmlr-build",
                                meta_path) from None
        try:
            doc = json.loads(raw)
        except (ValueError, RecursionError) as e:  # UnicodeDecodeError is a ValueError
            raise SchemaError(f"{meta_path}: not valid JSON ({e}); rebuild the artifact with tmlr-build", meta_path) from None
        return cls.from_dict(doc, meta_path)

    @property
    def runtime_params(self) -> tuple[Parameter, ...]:
        return tuple(p for p in self.signature if p.kind == "runtime")

    @property
    def constexprs(self) -> dict[str, Any]:
        return {p.name: p.value for p in self.signature if p.kind == "constexpr"}

    def select_variant(self, major: int, minor: int) -> Variant:
        """The best variant for a device of compute capability major.minor: an exact arch-specific
        match first, then the newest portable cubin of the same major."""
        fits = [v for v in self.variants if v.runs_on(major, minor)]
        if not fits:
            clusters = major < 9 and all(v.is_cluster_launch for v in self.variants)
            raise NoCompatibleVariantError(
                f"{self.name}: no variant runs on this device (compute capability {major}.{minor}, sm_{major}{minor}); the "
                f"artifact has {', '.join(v.arch for v in self.variants)}. Rebuild with `tmlr-build ... --arch {major}{minor}` "
                "(add it to the existing --arch list)"
                + (" and --num-ctas 1: thread-block clusters need sm_90 or newer" if clusters else ""))
        return max(fits, key=lambda v: (v.target.arch_specific, v.capability))


# --- rules: each checks one JSON value and returns what the record keeps, or raises _Invalid --------
class _Invalid(Exception):
    """``(problem, where)``: a value breaks the schema; ``where`` is its JSON path below the value
    being read, prefixed by each enclosing reader on the way out (no path is formatted unless one fails)."""

    def __init__(self, problem: str, where: str = "") -> None:
        super().__init__(problem, where)
        self.problem, self.where = problem, where


Rule = Callable[[Any], Any]


def _not(value: Any, what: str) -> _Invalid:
    return _Invalid(f"{short_repr(value)} is not {what}")


def _at(e: _Invalid, key: str | int) -> _Invalid:
    e.where = (f"[{key}]" if isinstance(key, int) else f".{key}") + e.where
    return e


def _int(minimum: int = 0, maximum: int | None = None) -> Rule:
    """An integer in range, as a Python int: JSON Schema takes 4.0 as an integer, the driver does not."""
    def rule(value: Any) -> int:
        if type(value) is not int:
            if isinstance(value, bool) or not (isinstance(value, int) or isinstance(value, float) and value.is_integer()):
                raise _not(value, "an integer")
            value = int(value)
        if value < minimum or (maximum is not None and value > maximum):
            raise _not(value, f"in [{minimum}, {maximum}]" if maximum else f">= {minimum}")
        return value
    return rule


def _is(test: Callable[[Any], bool], meaning: str) -> Rule:
    def rule(value: Any) -> Any:
        if not test(value):
            raise _not(value, meaning)
        return value
    return rule


def _one_of(values: tuple[Any, ...], meaning: str) -> Rule:
    """A value equal to one of ``values`` (as JSON Schema's enum and const: 32.0 is 32, True is not 1)."""
    def rule(value: Any) -> Any:
        if type(value) is bool or value not in values:
            raise _not(value, meaning)
        return value
    return rule


def _str(accepts: Callable[[str], Any] | None = None, meaning: str = "a string") -> Rule:
    """A string ``accepts`` takes (a regex's ``fullmatch``, a set's ``__contains__``)."""
    def rule(value: Any) -> str:
        if type(value) is not str or accepts is not None and not accepts(value):
            raise _not(value, meaning)
        return value
    return rule


def _array(item: Rule, least: int = 0, most: int | None = None, unique: bool = False) -> Rule:
    """A list of ``least`` to ``most`` items, each read by ``item``, as a tuple."""
    meaning = (f"an array of {least} items" if least == most else f"an array of {least} to {most} items" if most
               else f"an array of at least {least} items")

    def rule(value: Any) -> tuple[Any, ...]:
        if type(value) is not list or len(value) < least or (most is not None and len(value) > most):
            raise _not(value, meaning)
        out: list[Any] = []
        try:
            for x in value:
                out.append(item(x))
        except _Invalid as e:
            raise _at(e, len(out)) from None
        if unique and len(set(out)) != len(out):
            raise _not(value, "a list without repeats")
        return tuple(out)
    return rule


def _object(required: dict[str, Rule], optional: dict[str, Rule] | None = None) -> Rule:
    """An object with every key of ``required``, no other but those of ``optional``, each value read by
    its rule: a dict of what the rules return, in the document's order."""
    rules = {**required, **(optional or {})}
    names, required_keys, keys = ", ".join(sorted(rules)), required.keys(), rules.keys()

    def rule(value: Any) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise _not(value, "an object")
        if value.keys() != required_keys and not (optional and required_keys <= value.keys() <= keys):
            missing = next((key for key in required if key not in value), None)
            if missing is not None:
                raise _Invalid(f"{missing!r} is a required property")
            extra = next(key for key in value if key not in rules)
            raise _Invalid(f"{short_repr(extra)} is not a property it may have ({names})")
        out = {}
        try:
            for key, x in value.items():
                out[key] = rules[key](x)
        except _Invalid as e:
            raise _at(e, key) from None
        return out
    return rule


_new, _set = object.__new__, object.__setattr__


def _record(cls: type, fields: dict[str, Any]) -> Any:
    # made without the frozen dataclass's __init__, whose object.__setattr__ per field is most of
    # the cost of a record; tests check the dicts name exactly the class's fields
    record = _new(cls)
    _set(record, "__dict__", fields)
    return record


# --- the document, in the order of schema/metadata.schema.json -----------------------------------
_SHA256 = _str(re.compile(r"[0-9a-f]{64}").fullmatch, "a sha256 in lowercase hex")
_CUBIN_FILE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*\.cubin").fullmatch
_IDENTIFIER = _str(re.compile(r"[A-Za-z_][A-Za-z0-9_]*").fullmatch, "an identifier")
_ANY, _TEXT, _DIMS = (lambda v: v), _str(), _array(_int(1), 1, 5)
_BOOL = _is(lambda v: type(v) is bool, "a boolean")
_TENSORMAP = _object({"elem_type": _int(0, 15), "elem_size": _int(1, 8), "swizzle": _int(0, 3), "fp4_padded": _BOOL, "block_size": _DIMS})
_DESCRIPTOR = _object({"dtype": _str(POINTEE_TYPES.__contains__, f"one of {list(POINTEE_TYPES)}"), "block_shape": _DIMS,
                       "fields": _array(_str(DESCRIPTOR_FIELDS.__contains__, f"one of {list(DESCRIPTOR_FIELDS)} (a field this "
                                             "tmlr_runtime does not know cannot be launched: upgrade tmlr_runtime)"), 1)},
                      {"tensormap": _TENSORMAP})


def _descriptor(value: Any) -> Descriptor:
    d = _DESCRIPTOR(value)
    if ("tensormap" in d["fields"]) != ("tensormap" in d):
        raise _Invalid("'tensormap' is required when fields holds 'tensormap', and allowed only then")
    meta = d.get("tensormap")
    return _record(Descriptor, {"dtype": d["dtype"], "block_shape": d["block_shape"], "fields": d["fields"],
                                "tensormap": None if meta is None else TensorMapMeta(**meta)})


_KINDS = ("runtime", "constexpr", "equal_to_1")
_PARAMETER = {
    "runtime": _object({"name": _IDENTIFIER, "kind": _ANY, "divisibility": _one_of((1, 16), "1 or 16"),
                        "type": _str(PARAM_TYPES.__contains__, "a Triton scalar, pointer, nvTmaDesc or tensordesc type")}),
    TENSORDESC: _object({"name": _IDENTIFIER, "kind": _ANY, "type": _ANY, "descriptor": _descriptor,
                         "divisibility": _one_of((1,), "1 (a tensordesc parameter has no divisibility)")}),
    "constexpr": _object({"name": _IDENTIFIER, "kind": _ANY, "value": _is(lambda v: not isinstance(v, (list, dict)),
                                                                         "a number, boolean, string or null")}),
    "equal_to_1": _object({"name": _IDENTIFIER, "kind": _ANY, "type": _str(SCALAR_TYPES.__contains__, f"one of {list(SCALAR_TYPES)}")}),
}
_VARIANT = _object({
    "target": _object({"backend": _one_of(("cuda",), "'cuda'"), "capability": _int(50),
                       "arch": _str(re.compile(r"sm_[0-9]+a?").fullmatch, "an arch like sm_90a"),
                       "warp_size": _one_of((32,), "32")}),
    "entry": _IDENTIFIER,
    "cubin": _object({"file": _str(_CUBIN_FILE, "a plain file name in the artifact directory, ending in .cubin"), "sha256": _SHA256,
                      "size": _int(1)}),
    "launch": _object({"num_warps": _int(1, 32), "num_ctas": _int(1), "cluster_dims": _array(_int(1), 3, 3), "shared": _int(),
                       "tmem_size": _int(), "launch_cooperative_grid": _BOOL, "launch_pdl": _BOOL}),
    "scratch": _object({"global_scratch_size": _int(), "global_scratch_align": _int(1), "hidden_params": _array(
        _one_of(("global_scratch", "profile_scratch"), "global_scratch or profile_scratch"), unique=True)}),
    "provenance": _object({"triton_version": _TEXT, "ptxas_version": _TEXT, "source_stage": _one_of(
        ("python", "ttir", "ttgir", "llir", "ptx", "cubin"), "one of ['python', 'ttir', 'ttgir', 'llir', 'ptx', 'cubin']"),
        "source_sha256": _SHA256, "options": _is(lambda v: type(v) is dict, "an object")}, {"source_name": _TEXT, "tmlr_version": _TEXT}),
}, {"resources": _object({}, dict.fromkeys(("registers", "spill_stores", "spill_loads", "stack_frame", "static_shared"), _int()))})


def _parameter(p: Any) -> Parameter:
    kind = p.get("kind") if type(p) is dict else None
    if type(kind) is not str or kind not in _KINDS:
        if isinstance(p, dict) and "kind" in p:
            raise _at(_not(p["kind"], f"one of {list(_KINDS)}"), "kind")
        _object({"kind": _ANY})(p)
    d = _PARAMETER[TENSORDESC if kind == "runtime" and p.get("type") == TENSORDESC else kind](p)
    return _record(Parameter, {"name": d["name"], "kind": kind, "type": d.get("type"), "divisibility": int(d.get("divisibility", 1)),
                               "value": 1 if kind == "equal_to_1" else d.get("value"), "descriptor": d.get("descriptor")})


def _variant(value: Any) -> Variant:
    d = _VARIANT(value)
    t, c, launch, scratch = d["target"], d["cubin"], d["launch"], d["scratch"]
    return _record(Variant, {
        "target": _record(Target, {"capability": t["capability"], "arch": t["arch"]}), "entry": d["entry"],
        "cubin_file": c["file"], "cubin_sha256": c["sha256"], "cubin_size": c["size"],
        "num_warps": launch["num_warps"], "num_ctas": launch["num_ctas"], "cluster_dims": launch["cluster_dims"],
        "shared": launch["shared"], "tmem_size": launch["tmem_size"], "cooperative": launch["launch_cooperative_grid"],
        "pdl": launch["launch_pdl"], "scratch_size": scratch["global_scratch_size"], "scratch_align": scratch["global_scratch_align"],
        "hidden_params": scratch["hidden_params"], "resources": d.get("resources", {}), "provenance": d["provenance"]})


_DOCUMENT = _object({"schema_version": _ANY, "name": _IDENTIFIER, "signature": _array(_parameter), "variants": _array(_variant, 1)})


def _document(doc: Any) -> tuple[str, tuple[Parameter, ...], tuple[Variant, ...]]:
    d = _DOCUMENT(doc)
    name, signature, variants = d["name"], d["signature"], d["variants"]
    names = [p.name for p in signature]
    if len(set(names)) != len(names):
        raise _at(_Invalid(f"parameter names repeat: {', '.join(sorted({n for n in names if names.count(n) > 1}))}"), "signature")
    if len({v.arch for v in variants}) != len(variants):
        raise _at(_Invalid(f"two variants for the same arch ({', '.join(v.arch for v in variants)})"), "variants")
    return name, signature, variants


# --- files ---------------------------------------------------------------------------------------
_O_READ = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)


def read_file(path: str, stats: dict[str, os.stat_result] | None = None) -> bytes:
    """The bytes of ``path``; ``stats[path]`` gets the stat of the file they were read from (one open,
    the stat taken before reading: what :class:`Kernel`'s load cache compares later)."""
    fd = os.open(path, _O_READ)
    try:
        st = os.fstat(fd)
        data = os.read(fd, st.st_size + 1)
        if len(data) > st.st_size:  # it grew since the fstat: read on to the end
            data += b"".join(iter(lambda: os.read(fd, 1 << 20), b""))
    finally:
        os.close(fd)
    if stats is not None:
        stats[path] = st
    return data


def read_cubin(directory: str | os.PathLike[str], variant: Variant, stats: dict[str, os.stat_result] | None = None) -> bytes:
    """The variant's cubin bytes, after checking size and sha256 against the metadata; ``stats`` as
    for :func:`read_file`."""
    name = variant.cubin_file
    if _CUBIN_FILE(name) is None:  # the reader refuses it too; checked again before a file access
        raise SchemaError(f"cubin file name {name!r} has path parts; it must be a plain file name inside the artifact "
                          "directory", None, "$.variants[].cubin.file")
    path = os.path.join(os.fspath(directory), name)
    try:
        data = read_file(path, stats)
    except FileNotFoundError:
        raise ArtifactError(f"{path}: missing; metadata.json names it for {variant.arch} - copy the whole artifact "
                            "directory", path) from None
    if len(data) != variant.cubin_size:
        raise IntegrityError(f"{path}: {len(data)} bytes, metadata.json records {variant.cubin_size}; the file is "
                             "truncated or replaced - copy the artifact directory again or rebuild it", path)
    digest = hashlib.sha256(data).hexdigest()
    if digest != variant.cubin_sha256:
        raise IntegrityError(f"{path}: sha256 {digest} does not match metadata.json ({variant.cubin_sha256}); the cubin "
                             "was changed after the build - rebuild the artifact with tmlr-build", path)
    if data[:4] != b"\x7fELF":
        raise IntegrityError(f"{path}: not a cubin (no ELF header), though its size and sha256 match metadata.json; "
                             "rebuild it with tmlr-build", path)
    return data
