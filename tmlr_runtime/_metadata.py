"""Reading an artifact directory: metadata.json into frozen records, cubins verified against it.

The schema file (:data:`SCHEMA_PATH`) is the contract with tmlr_build, which validates with
``jsonschema`` before writing; the reader here checks each field as the schema says while it builds
the records (tests show both accept and reject the same documents), naming a bad one by JSON path.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ._errors import ArtifactError, IntegrityError, NoCompatibleVariantError, SchemaError, short_repr
from .abi import (DESCRIPTOR_FIELDS, PARAM_TYPES, POINTEE_TYPES, SCALAR_TYPES, TENSORDESC, Descriptor, Parameter, Target,
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
            _descriptors_need_v2(version, signature)
        except _Invalid as e:
            json_path, problem = e.args
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


# --- typed field readers: each returns the field's value or raises _Invalid naming it ------------
class _Invalid(Exception):
    """``(json_path, problem)``: a field breaks the schema."""


def _not(obj: Any, key: str | int, path: str, what: str) -> _Invalid:
    """The error for ``obj[key]``, which is not ``what``."""
    return _Invalid(f"{path}[{key}]" if isinstance(key, int) else f"{path}.{key}", f"{short_repr(obj[key])} is not {what}")


def _object(value: Any, path: str, required: dict[str, None], allowed: dict[str, None] | None = None) -> dict[str, Any]:
    """``value``, an object holding every key of ``required`` and no other (but those of ``allowed``).
    The key sets are dicts: their keys views compare as sets, and they keep the order messages use."""
    if not isinstance(value, dict):
        raise _Invalid(path, f"{short_repr(value)} is not an object")
    if value.keys() == required.keys() or allowed and required.keys() <= value.keys() <= allowed.keys():
        return value
    for key in required:
        if key not in value:
            raise _Invalid(path, f"{key!r} is a required property")
    extra = next(k for k in value if k not in (allowed or required))
    raise _Invalid(path, f"{short_repr(extra)} is not a property it may have ({', '.join(sorted(allowed or required))})")


def _array(obj: Any, key: str, path: str, items: int = 0, exactly: bool = False) -> list[Any]:
    value = obj[key]
    if type(value) is not list or len(value) < items or (exactly and len(value) > items):
        raise _not(obj, key, path, f"an array of {'' if exactly else 'at least '}{items} items")
    return value


def _int(obj: Any, key: str | int, path: str, minimum: int = 0, maximum: int | None = None) -> int:
    """``obj[key]`` as an int: JSON Schema takes 4.0 as an integer, but the driver wants Python ints."""
    value = obj[key]
    if type(value) is not int:
        if isinstance(value, bool) or not (isinstance(value, int) or isinstance(value, float) and value.is_integer()):
            raise _not(obj, key, path, "an integer")
        value = int(value)
    if value < minimum or (maximum is not None and value > maximum):
        raise _not(obj, key, path, f"in [{minimum}, {maximum}]" if maximum else f">= {minimum}")
    return value


def _str(obj: Any, key: str, path: str, pattern: Callable[[str], Any] | None = None, meaning: str = "a string") -> str:
    """``obj[key]``, a string ``pattern`` accepts (a regex's ``fullmatch``, or :func:`_identifier`)."""
    value = obj[key]
    if type(value) is not str or pattern is not None and not pattern(value):
        raise _not(obj, key, path, meaning)
    return value


def _identifier(text: str) -> bool:
    return text.isidentifier() and text.isascii()  # the schema's [A-Za-z_][A-Za-z0-9_]*


_new, _set = object.__new__, object.__setattr__


def _record(cls: type, fields: dict[str, Any]) -> Any:
    # made without the frozen dataclass's __init__, whose object.__setattr__ per field is most of
    # the cost of a record; tests check the dicts name exactly the class's fields
    record = _new(cls)
    _set(record, "__dict__", fields)
    return record


# --- the document, in the order of schema/metadata.schema.json -----------------------------------
_SHA256 = re.compile(r"[0-9a-f]{64}").fullmatch
_CUBIN_FILE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*\.cubin").fullmatch
_ARCH = re.compile(r"sm_[0-9]+a?").fullmatch
_keys = dict.fromkeys
_DOCUMENT = _keys(("schema_version", "name", "signature", "variants"))
_DESCRIPTOR_PARAMETER = _keys(("name", "kind", "type", "divisibility", "descriptor")).keys()
_DESCRIPTOR = _keys(("dtype", "block_shape", "fields"))
_DESCRIPTOR_ALLOWED = _DESCRIPTOR | {"tensormap": None}
_TENSORMAP = _keys(("elem_type", "elem_size", "swizzle", "fp4_padded", "block_size"))
_PARAMETER = {"runtime": _keys(("name", "kind", "type", "divisibility")).keys(), "constexpr": _keys(("name", "kind", "value")).keys(),
              "equal_to_1": _keys(("name", "kind", "type")).keys()}
_VARIANT = _keys(("target", "entry", "cubin", "launch", "scratch", "provenance"))
_VARIANT_ALLOWED = _VARIANT | {"resources": None}
_TARGET, _CUBIN = _keys(("backend", "capability", "arch", "warp_size")), _keys(("file", "sha256", "size"))
_LAUNCH = _keys(("num_warps", "num_ctas", "cluster_dims", "shared", "tmem_size", "launch_cooperative_grid", "launch_pdl"))
_SCRATCH = _keys(("global_scratch_size", "global_scratch_align", "hidden_params"))
_RESOURCES = _keys(("registers", "spill_stores", "spill_loads", "stack_frame", "static_shared"))
_PROVENANCE = _keys(("triton_version", "ptxas_version", "source_stage", "source_sha256", "options"))
_PROVENANCE_ALLOWED = _PROVENANCE | {"source_name": None, "tmlr_version": None}


def _document(doc: Any) -> tuple[str, tuple[Parameter, ...], tuple[Variant, ...]]:
    _object(doc, "$", _DOCUMENT)
    name = _str(doc, "name", "$", _identifier, "an identifier")
    signature = tuple([_parameter(p, i) for i, p in enumerate(_array(doc, "signature", "$"))])
    variants = tuple([_variant(v, f"$.variants[{i}]") for i, v in enumerate(_array(doc, "variants", "$", 1))])
    names = [p.name for p in signature]
    if len(set(names)) != len(names):
        raise _Invalid("$.signature", f"parameter names repeat: {', '.join(sorted({n for n in names if names.count(n) > 1}))}")
    if len({v.arch for v in variants}) != len(variants):
        raise _Invalid("$.variants", f"two variants for the same arch ({', '.join(v.arch for v in variants)})")
    return name, signature, variants


def _parameter(p: Any, i: int) -> Parameter:
    # (the JSON path is formatted only for a message: it would be a good part of the cost)
    kind = p.get("kind") if type(p) is dict else None
    keys = _PARAMETER.get(kind) if type(kind) is str else None
    if kind == "runtime" and p.get("type") == TENSORDESC:
        keys = _DESCRIPTOR_PARAMETER
    if keys is None or p.keys() != keys:
        if isinstance(p, dict) and "kind" in p and keys is None:
            raise _not(p, "kind", f"$.signature[{i}]", f"one of {list(_PARAMETER)}")
        _object(p, f"$.signature[{i}]", dict.fromkeys(keys or ("kind",)))
    name, type_, value, divisibility = p["name"], p.get("type"), p.get("value"), p.get("divisibility", 1)
    if type(name) is not str or not name.isidentifier() or not name.isascii():  # as _identifier
        raise _not(p, "name", f"$.signature[{i}]", "an identifier")
    descriptor = None
    if keys is _DESCRIPTOR_PARAMETER:
        if divisibility != 1 or type(divisibility) is bool:
            raise _not(p, "divisibility", f"$.signature[{i}]", "1 (a tensordesc parameter has no divisibility)")
        divisibility, descriptor = 1, _descriptor(p["descriptor"], f"$.signature[{i}].descriptor")
    elif kind == "runtime":
        if type(type_) is not str or type_ not in PARAM_TYPES:
            raise _not(p, "type", f"$.signature[{i}]", "a Triton scalar, pointer, nvTmaDesc or tensordesc type")
        if divisibility not in (1, 16) or type(divisibility) is bool:
            raise _not(p, "divisibility", f"$.signature[{i}]", "1 or 16")
        divisibility = int(divisibility)
    elif kind == "equal_to_1":
        if type_ not in SCALAR_TYPES:
            raise _not(p, "type", f"$.signature[{i}]", f"one of {list(SCALAR_TYPES)}")
        value = 1
    elif isinstance(value, (list, dict)):
        raise _not(p, "value", f"$.signature[{i}]", "a number, boolean, string or null")
    return _record(Parameter, {"name": name, "kind": kind, "type": type_, "divisibility": divisibility, "value": value,
                               "descriptor": descriptor})


def _dims(obj: Any, key: str, path: str) -> tuple[int, ...]:
    """``obj[key]``: 1 to 5 positive integers (a block shape or TMA box)."""
    dims = _array(obj, key, path, 1)
    if len(dims) > 5:
        raise _not(obj, key, path, "an array of 1 to 5 items")
    return tuple([_int(dims, j, f"{path}.{key}", 1) for j in range(len(dims))])


def _descriptor(d: Any, path: str) -> Descriptor:
    _object(d, path, _DESCRIPTOR, _DESCRIPTOR_ALLOWED)
    dtype = _str(d, "dtype", path, POINTEE_TYPES.__contains__, f"one of {list(POINTEE_TYPES)}")
    block_shape = _dims(d, "block_shape", path)
    fields = _array(d, "fields", path, 1)
    for j, f in enumerate(fields):
        if type(f) is not str or f not in DESCRIPTOR_FIELDS:
            raise _not(fields, j, path + ".fields", f"one of {list(DESCRIPTOR_FIELDS)} (a field this tmlr_runtime does not "
                       "know cannot be launched: upgrade tmlr_runtime)")
    if ("tensormap" in fields) != ("tensormap" in d):
        raise _Invalid(path, "'tensormap' is required when fields holds 'tensormap', and allowed only then")
    meta = None
    if "tensormap" in d:
        tm = _object(d["tensormap"], mp := path + ".tensormap", _TENSORMAP)
        if type(tm["fp4_padded"]) is not bool:
            raise _not(tm, "fp4_padded", mp, "a boolean")
        meta = _record(TensorMapMeta, {"elem_type": _int(tm, "elem_type", mp, 0, 15), "elem_size": _int(tm, "elem_size", mp, 1, 8),
                                       "swizzle": _int(tm, "swizzle", mp, 0, 3), "fp4_padded": tm["fp4_padded"],
                                       "block_size": _dims(tm, "block_size", mp)})
    return _record(Descriptor, {"dtype": dtype, "block_shape": block_shape, "fields": tuple(fields), "tensormap": meta})


def _descriptors_need_v2(version: int, signature: tuple[Parameter, ...]) -> None:
    if version == 1 and any(p.descriptor is not None for p in signature):
        raise _Invalid("$.schema_version", "1, but the signature has a tensordesc parameter, which needs schema_version 2")


def _variant(v: Any, path: str) -> Variant:
    _object(v, path, _VARIANT, _VARIANT_ALLOWED)
    t = _object(v["target"], tp := path + ".target", _TARGET)
    if t["backend"] != "cuda":
        raise _not(t, "backend", tp, "'cuda'")
    if t["warp_size"] != 32:  # as JSON Schema's const: 32.0 is 32 too
        raise _not(t, "warp_size", tp, "32")
    c = _object(v["cubin"], cp := path + ".cubin", _CUBIN)
    launch = _object(v["launch"], lp := path + ".launch", _LAUNCH)
    dims = _array(launch, "cluster_dims", lp, 3, exactly=True)
    for key in ("launch_cooperative_grid", "launch_pdl"):
        if type(launch[key]) is not bool:
            raise _not(launch, key, lp, "a boolean")
    scratch = _object(v["scratch"], sp := path + ".scratch", _SCRATCH)
    hidden = _array(scratch, "hidden_params", sp)
    for i, name in enumerate(hidden):
        if name not in ("global_scratch", "profile_scratch"):
            raise _not(hidden, i, sp + ".hidden_params", "global_scratch or profile_scratch")
    if len(set(hidden)) != len(hidden):
        raise _not(scratch, "hidden_params", sp, "a list without repeats")
    resources = _object(v.get("resources", {}), rp := path + ".resources", {}, _RESOURCES)
    return _record(Variant, {
        "target": _record(Target, {"capability": _int(t, "capability", tp, 50), "arch": _str(t, "arch", tp, _ARCH, "an arch like sm_90a")}),
        "entry": _str(v, "entry", path, _identifier, "an identifier"),
        "cubin_file": _str(c, "file", cp, _CUBIN_FILE, "a plain file name in the artifact directory, ending in .cubin"),
        "cubin_sha256": _str(c, "sha256", cp, _SHA256, "a sha256 in lowercase hex"),
        "cubin_size": _int(c, "size", cp, 1),
        "num_warps": _int(launch, "num_warps", lp, 1, 32),
        "num_ctas": _int(launch, "num_ctas", lp, 1),
        "cluster_dims": tuple([_int(dims, i, lp + ".cluster_dims", 1) for i in range(3)]),
        "shared": _int(launch, "shared", lp),
        "tmem_size": _int(launch, "tmem_size", lp),
        "cooperative": launch["launch_cooperative_grid"],
        "pdl": launch["launch_pdl"],
        "scratch_size": _int(scratch, "global_scratch_size", sp),
        "scratch_align": _int(scratch, "global_scratch_align", sp, 1),
        "hidden_params": tuple(hidden),
        "resources": {k: _int(resources, k, rp) for k in resources},
        "provenance": _provenance(v["provenance"], path + ".provenance"),
    })


def _provenance(p: Any, path: str) -> dict[str, Any]:
    _object(p, path, _PROVENANCE, _PROVENANCE_ALLOWED)
    for key in ("triton_version", "ptxas_version", "source_name", "tmlr_version"):
        if key in p:
            _str(p, key, path)
    if p["source_stage"] not in ("python", "ttir", "ttgir", "llir", "ptx", "cubin"):
        raise _not(p, "source_stage", path, "one of ['python', 'ttir', 'ttgir', 'llir', 'ptx', 'cubin']")
    _str(p, "source_sha256", path, _SHA256, "a sha256 in lowercase hex")
    if type(p["options"]) is not dict:
        raise _not(p, "options", path, "an object")
    return dict(p)


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
