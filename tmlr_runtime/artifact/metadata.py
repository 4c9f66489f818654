"""A kernel's metadata.json as frozen records: the signature and one :class:`Variant` per cubin.

The schema file (:data:`SCHEMA_PATH`) is the contract with tmlr_build, which validates with ``jsonschema``
before writing; :meth:`ArtifactMetadata.from_dict` checks each field by the rule its record's table gives
it (``_PARAMETER``, ``_DESCRIPTOR``, ``_VARIANT``, made by ``rules``) while it builds the records.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

from ..abi import (DESCRIPTOR_FIELDS, PARAM_TYPES, POINTEE_TYPES, SCALAR_TYPES, TENSORDESC, TL_DTYPES, Descriptor, Parameter,
                   Target, TensorMapMeta)
from ..errors import ArtifactError, CubinMismatchError, IntegrityError, SchemaError, short_repr
from ..objects import DTYPE, IS_JIT_TEXT, KINDS as OBJECT_KINDS, TritonObject
from .elf import Cubin, parse, target_problem
from .files import FAMILY_VERSIONS, read_file, read_json
from .rules import ANY, BOOL, IDENTIFIER, IS_ARCH, IS_PTX_ARCH, SHA256, Invalid, array, at, check, integer, not_, obj, one_of, record, string, test
from .targets import choose
from ..records import Record

SCHEMA_PATH = Path(__file__).with_name("schema") / "metadata.schema.json"
SCHEMA_VERSION = 9  # the newest this reader reads
# 2 added tensordesc parameters (a document without one says 1); 3 is a family index (files.FAMILY_VERSION);
# 4 added a variant's PTX (a document without any says 1 or 2, as before); 5 added tuple parameters (tuples.py: a
# document without any says 1, 2 or 4, as before); 6 is a family index of tuple variants; 7 added constexprs that
# are Triton objects (objects.py: a document without any says 1, 2, 4 or 5, as before); 8 is a family index with
# variants that failed to compile (files.FAMILY_FAILED_VERSION); 9 added constexprs whose value is a non-empty tuple
# ((8, 8), nested too: an array of numbers, booleans, strings, nulls and arrays; a document without any says 1 to 7, as before)
SCHEMA_VERSIONS = (1, 2, 4, 5, 7, 9)
_READS = ", ".join(f"v{n}" for n in SCHEMA_VERSIONS)  # what the kernel metadata reader reads, said when it refuses
PTX_VERSION = 4
TUPLE_VERSION = 5
OBJECT_VERSION = 7
TUPLE_VALUE_VERSION = 9
METADATA_FILE = "metadata.json"


class Ptx(Record):
    """A variant's PTX (schema v4): what the driver compiles at load for a GPU that none of the cubins runs on."""

    target: Target  # compute_80
    file: str
    sha256: str
    size: int


class Variant(Record):
    """One compiled cubin of the kernel, for one target architecture (and its PTX, when the build kept it)."""

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
    ptx: Ptx | None

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


class ArtifactMetadata(Record):
    """A parsed, checked metadata.json."""

    name: str
    signature: tuple[Parameter, ...]
    variants: tuple[Variant, ...]
    path: str | None = None
    schema_version: int = 1
    tuples: tuple[Any, ...] = ()  # the tuple parameters (tuples.TupleParam), schema v5
    kind = "kernel"  # a FamilyIndex says "family"

    @classmethod
    def from_dict(cls, doc: Any, path: str | None = None) -> "ArtifactMetadata":
        """Check ``doc`` as the schema says while building the records; raises :class:`SchemaError`."""
        version = doc.get("schema_version", SCHEMA_VERSION) if isinstance(doc, dict) else SCHEMA_VERSION
        if isinstance(version, bool) or version not in SCHEMA_VERSIONS:
            raise SchemaError(f"{path or 'metadata'}: {unreadable_version(doc)}", path, "$.schema_version")
        said = f"it says schema v{version}" if isinstance(doc, dict) and "schema_version" in doc else "it names no schema_version"
        name, signature, variants, tuples = check(lambda d: _document(d, version), doc, path,
                                                  f"not a valid tmlr metadata.json ({said}; this tmlr_runtime reads {_READS}) - "
                                                  "rebuild it with tmlr-build")
        return record(cls, {"name": name, "signature": signature, "variants": variants, "path": path, "schema_version": int(version),
                            "tuples": tuples})

    @classmethod
    def read(cls, directory: str | os.PathLike[str], stats: dict[str, os.stat_result] | None = None) -> "ArtifactMetadata":
        """Read and check ``directory/metadata.json`` as kernel metadata; ``stats`` gets the stat of the file read, by path."""
        path = os.path.join(os.fspath(directory), METADATA_FILE)
        return cls.from_dict(read_json(path, stats)[0], path)

    @property
    def runtime_params(self) -> tuple[Parameter, ...]:
        return tuple(p for p in self.signature if p.kind == "runtime")

    @property
    def constexprs(self) -> dict[str, Any]:
        return {p.name: p.value for p in self.signature if p.kind == "constexpr"}

    def pick(self, major: int, minor: int) -> tuple[Variant, bool]:
        """What a device of compute capability major.minor loads, by CUDA's rules (targets.choose): the
        variant, and whether from its PTX (no cubin runs there) rather than its cubin; raises
        :class:`NoCompatibleVariantError` naming what the artifact has and what the device needs."""
        clusters = major < 9 and all(v.is_cluster_launch for v in self.variants)
        found = choose(self.name, [(v.target, v.ptx and v.ptx.target) for v in self.variants], major, minor,
                       "; with --num-ctas 1 in either case: thread-block clusters need sm_90 or newer" if clusters else "")
        return self.variants[found.index], found.ptx

    def select_variant(self, major: int, minor: int) -> Variant:
        """The variant a device of compute capability major.minor runs (see :meth:`pick`)."""
        return self.pick(major, minor)[0]


_SCALAR_VALUES = (int, float, str, type(None))  # bool is an int


def is_tuple_value(value: Any, sequence: type = tuple) -> bool:
    """Whether ``value`` is a tuple constexpr's value metadata.json records as an array (schema v9; () since v5): a
    ``sequence`` (a tuple; a list as JSON reads it) of numbers, booleans, strings, None and such sequences."""
    return type(value) is sequence and all(isinstance(x, _SCALAR_VALUES) or is_tuple_value(x, sequence) for x in value)


def tuple_of(value: Any) -> Any:
    """A constexpr's value read from JSON: arrays as tuples, at any depth (``[8, [4, 4]]`` -> ``(8, (4, 4))``)."""
    return tuple(tuple_of(x) for x in value) if type(value) is list else value


# --- the document, in the order of schema/metadata.schema.json -----------------------------------
CUBIN_FILE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*\.cubin").fullmatch
PTX_FILE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*\.ptx").fullmatch
_TEXT, _DIMS = string(), array(integer(1), 1, 5)
_TENSORMAP = obj({"elem_type": integer(0, 15), "elem_size": integer(1, 8), "swizzle": integer(0, 3), "fp4_padded": BOOL, "block_size": _DIMS})
_DESCRIPTOR = obj({"dtype": string(POINTEE_TYPES.__contains__, f"one of {list(POINTEE_TYPES)}"), "block_shape": _DIMS,
                       "fields": array(string(DESCRIPTOR_FIELDS.__contains__, f"one of {list(DESCRIPTOR_FIELDS)} (a field this "
                                             "tmlr_runtime does not know cannot be launched: upgrade tmlr_runtime)"), 1)},
                      {"tensormap": _TENSORMAP})


def _descriptor(value: Any) -> Descriptor:
    d = _DESCRIPTOR(value)
    if ("tensormap" in d["fields"]) != ("tensormap" in d):
        raise Invalid("'tensormap' is required when fields holds 'tensormap', and allowed only then")
    meta = d.get("tensormap")
    return record(Descriptor, {"dtype": d["dtype"], "block_shape": d["block_shape"], "fields": d["fields"],
                                "tensormap": None if meta is None else TensorMapMeta(**meta)})


_KINDS = ("runtime", "constexpr", "equal_to_1")
# a parameter's name, or a tuple element's (as the schema's "parameter_name"; tuples.split_path reads it)
_NAME = string(re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\[(0|[1-9][0-9]*)\]|\.[A-Za-z_][A-Za-z0-9_]*)*").fullmatch, "an identifier, or a tuple element's path like ptrs[0] or t.shape[1]")
_PARAMETER = {
    "runtime": obj({"name": _NAME, "kind": ANY, "divisibility": one_of((1, 16), "1 or 16"),
                        "type": string(PARAM_TYPES.__contains__, "a Triton scalar, pointer, nvTmaDesc or tensordesc type")}),
    TENSORDESC: obj({"name": _NAME, "kind": ANY, "type": ANY, "descriptor": _descriptor,
                         "divisibility": one_of((1,), "1 (a tensordesc parameter has no divisibility)")}),
    "constexpr": obj({"name": _NAME, "kind": ANY, "value": test(
        lambda v: is_tuple_value(v, list) if isinstance(v, list) else not isinstance(v, dict),
        "a number, boolean, string, null or an array of them (a tuple; [] the empty tuple)")},
                     {"object": one_of(OBJECT_KINDS, f"one of {list(OBJECT_KINDS)} (a Triton object this tmlr_runtime "
                                                     "does not know cannot be checked: upgrade tmlr_runtime)")}),
    "equal_to_1": obj({"name": _NAME, "kind": ANY, "type": string(SCALAR_TYPES.__contains__, f"one of {list(SCALAR_TYPES)}")}),
}
_RUNTIME = _PARAMETER["runtime"]
_VARIANT = obj({
    "target": obj({"backend": one_of(("cuda",), "'cuda'"), "capability": integer(50),
                       "arch": string(IS_ARCH, "an arch like sm_90a"),
                       "warp_size": one_of((32,), "32")}),
    "entry": IDENTIFIER,
    "cubin": obj({"file": string(CUBIN_FILE, "a plain file name in the artifact directory, ending in .cubin"), "sha256": SHA256,
                      "size": integer(1)}),
    "launch": obj({"num_warps": integer(1, 32), "num_ctas": integer(1), "cluster_dims": array(integer(1), 3, 3), "shared": integer(),
                       "tmem_size": integer(), "launch_cooperative_grid": BOOL, "launch_pdl": BOOL}),
    "scratch": obj({"global_scratch_size": integer(), "global_scratch_align": integer(1), "hidden_params": array(
        one_of(("global_scratch", "profile_scratch"), "global_scratch or profile_scratch"), unique=True)}),
    "provenance": obj({"triton_version": _TEXT, "ptxas_version": _TEXT, "source_stage": one_of(
        ("python", "ttir", "ttgir", "llir", "ptx", "cubin"), "one of ['python', 'ttir', 'ttgir', 'llir', 'ptx', 'cubin']"),
        "source_sha256": SHA256, "options": test(lambda v: type(v) is dict, "an object")}, {"source_name": _TEXT, "tmlr_version": _TEXT,
        "dependencies": array(obj({"module": _TEXT, "sha256": SHA256}), 1), "device": _TEXT}),
}, {"ptx": obj({"file": string(PTX_FILE, "a plain file name in the artifact directory, ending in .ptx"), "sha256": SHA256,
                "size": integer(1), "arch": string(IS_PTX_ARCH, "a virtual arch like compute_80 (PTX of an arch-specific "
                                                              "target such as sm_90a runs on that GPU only: build no PTX for it)")}),
    "resources": obj({}, dict.fromkeys(("registers", "spill_stores", "spill_loads", "stack_frame", "static_shared"), integer()))})


def _parameter(p: Any) -> Parameter:
    kind = p.get("kind") if type(p) is dict else None
    if kind == "runtime" and p.get("type") != TENSORDESC:  # most of a signature, read with the fewest steps
        d = _RUNTIME(p)
        return record(Parameter, {"name": d["name"], "kind": kind, "type": d["type"], "divisibility": int(d["divisibility"]),
                                   "value": None, "descriptor": None})
    if type(kind) is not str or kind not in _KINDS:
        if isinstance(p, dict) and "kind" in p:
            raise at(not_(p["kind"], f"one of {list(_KINDS)}"), "kind")
        obj({"kind": ANY})(p)
    d = _PARAMETER[TENSORDESC if kind == "runtime" else kind](p)
    value = _object(d["object"], d["value"]) if "object" in d else 1 if kind == "equal_to_1" else \
        tuple_of(d.get("value"))  # an array: a tuple ([]: the empty tuple)
    return record(Parameter, {"name": d["name"], "kind": kind, "type": d.get("type"), "divisibility": int(d.get("divisibility", 1)),
                               "value": value, "descriptor": d.get("descriptor")})


def _object(kind: str, text: Any) -> TritonObject:
    """A constexpr's Triton object (schema v7): a dtype by Triton's name for it, a @triton.jit function by module:qualname."""
    if kind == DTYPE and (type(text) is not str or text not in TL_DTYPES):
        raise at(not_(text, f"a Triton dtype name, one of {list(TL_DTYPES)}"), "value")
    if kind != DTYPE and (type(text) is not str or not IS_JIT_TEXT(text)):
        raise at(not_(text, "a @triton.jit function's module:qualname, e.g. 'kernels:relu'"), "value")
    return TritonObject(kind, text)


def unreadable_version(doc: dict[str, Any]) -> str:
    """Why this reader refuses the ``schema_version`` of ``doc`` (a metadata.json), and what to do."""
    version, family = doc["schema_version"], doc.get("kind") == "family"
    reads = f"family indexes of {', '.join(f'v{n}' for n in FAMILY_VERSIONS)}" if family else f"kernel metadata of {_READS}"
    if not family and version in FAMILY_VERSIONS:
        why = f'{version} numbers a family index, but the document has no "kind": "family" - rebuild it with tmlr-build'
    elif type(version) is int and version > max(FAMILY_VERSIONS if family else SCHEMA_VERSIONS):
        why = ("a newer tmlr-build wrote it: upgrade tmlr_runtime to one that reads it, or rebuild the artifact with the "
               "tmlr-build of this tmlr_runtime")
    else:
        why = "no tmlr-build writes that version - rebuild the artifact with tmlr-build"
    return f"schema_version {short_repr(version)} is not one this tmlr_runtime reads ({reads}); {why}"


def read_parameter(doc: Any, path: str | None = None) -> Parameter:
    """One ``signature`` entry (as ``Parameter.to_json`` writes it) checked by metadata.json's rules; ``path``
    names its file in a :class:`SchemaError`."""
    return check(_parameter, doc, path, f"not a tmlr signature entry (schema v{SCHEMA_VERSION}) - rebuild it with tmlr-build")


def _variant(value: Any) -> Variant:
    d = _VARIANT(value)
    t, c, launch, scratch, p = d["target"], d["cubin"], d["launch"], d["scratch"], d.get("ptx")
    ptx = None if p is None else record(Ptx, {"target": Target.of_ptx(p["arch"]), "file": p["file"], "sha256": p["sha256"],
                                              "size": p["size"]})
    if t["arch"].removeprefix("sm_").removesuffix("a") != str(int(t["capability"])):
        raise at(Invalid(f"capability {t['capability']} and arch {t['arch']!r} disagree: a variant's cubin is for one GPU "
                         f"(sm_{t['capability']} or sm_{t['capability']}a for capability {t['capability']})"), "target")
    return record(Variant, {
        "target": record(Target, {"capability": t["capability"], "arch": t["arch"]}), "entry": d["entry"],
        "cubin_file": c["file"], "cubin_sha256": c["sha256"], "cubin_size": c["size"],
        "num_warps": launch["num_warps"], "num_ctas": launch["num_ctas"], "cluster_dims": launch["cluster_dims"],
        "shared": launch["shared"], "tmem_size": launch["tmem_size"], "cooperative": launch["launch_cooperative_grid"],
        "pdl": launch["launch_pdl"], "scratch_size": scratch["global_scratch_size"], "scratch_align": scratch["global_scratch_align"],
        "hidden_params": scratch["hidden_params"], "resources": d.get("resources", {}), "provenance": d["provenance"], "ptx": ptx})


def _tuple(value: Any) -> dict[str, Any]:
    d = _TUPLE(value)
    if (d["kind"] == "namedtuple") != ("fields" in d):
        raise Invalid("'fields' is required when kind is 'namedtuple', and allowed only then")
    return d


_TUPLE = obj({"name": _NAME, "kind": one_of(("tuple", "namedtuple"), "'tuple' or 'namedtuple'"),
              "items": array(lambda v: v if isinstance(v, str) else _tuple(v), 1)}, {"fields": array(IDENTIFIER, 1, unique=True)})
_DOCUMENT = obj({"schema_version": ANY, "name": IDENTIFIER, "signature": array(_parameter), "variants": array(_variant, 1)},
                {"tuples": array(_tuple, 1)})


def _document(doc: Any, version: int) -> tuple[str, tuple[Parameter, ...], tuple[Variant, ...], tuple[Any, ...]]:
    d = _DOCUMENT(doc)
    name, signature, variants = d["name"], d["signature"], d["variants"]
    names = [p.name for p in signature]
    if len(set(names)) != len(names):
        raise at(Invalid(f"parameter names repeat: {', '.join(sorted({n for n in names if names.count(n) > 1}))}"), "signature")
    archs = [v.arch for v in variants]
    twice = next((i for i, arch in enumerate(archs) if arch in archs[:i]), None)
    if twice is not None:
        raise at(at(Invalid(f"a second variant for {archs[twice]} (variant {archs.index(archs[twice])} is one): an artifact "
                            "holds one cubin per arch"), twice), "variants")
    if version == 1 and any(p.descriptor is not None for p in signature):
        raise at(Invalid("1, but the signature has a tensordesc parameter, which needs schema_version 2"), "schema_version")
    empty = next((i for i, p in enumerate(signature) if p.value == () and p.kind == "constexpr"), None)
    if version < TUPLE_VERSION and empty is not None:
        raise at(at(at(Invalid(f"[] (an empty tuple), which needs schema_version {TUPLE_VERSION} (this is {version})"), "value"), empty),
                 "signature")
    full = next((i for i, p in enumerate(signature) if type(p.value) is tuple and p.value and p.kind == "constexpr"), None)
    if version < TUPLE_VALUE_VERSION and full is not None:
        problem = Invalid(f"{json.dumps(signature[full].value)} (a tuple), which needs schema_version {TUPLE_VALUE_VERSION} "
                          f"(this is {version})")
        raise at(at(at(problem, "value"), full), "signature")
    if version < PTX_VERSION and any(v.ptx is not None for v in variants):
        raise at(Invalid(f"{version}, but a variant has ptx, which needs schema_version {PTX_VERSION}"), "schema_version")
    if version < OBJECT_VERSION and any(type(p.value) is TritonObject for p in signature):
        raise at(Invalid(f"{version}, but a constexpr is a Triton object, which needs schema_version {OBJECT_VERSION}"),
                 "schema_version")
    return name, signature, variants, _tuples(doc, names, version)


def _tuples(d: dict[str, Any], names: list[str], version: int) -> tuple[Any, ...]:
    """The tuple parameters, which the leaf names make and ``tuples`` records (``d``: the document, checked): the two
    must agree."""
    if version < TUPLE_VERSION:
        if "tuples" in d:
            raise at(Invalid(f"{version}, but the document has tuples, which need schema_version {TUPLE_VERSION}"), "schema_version")
        element = next((i for i, n in enumerate(names) if "[" in n or "." in n), None)  # names passed _NAME
        if element is not None:
            problem = Invalid(f"{names[element]!r} is a tuple element, which needs schema_version {TUPLE_VERSION} (this is {version})")
            raise at(at(at(problem, "name"), element), "signature")
        return ()
    from ..tuples import TupleParam, call_params

    try:
        made = tuple(p for p in call_params(names) if isinstance(p, TupleParam))
    except ValueError as e:
        raise at(Invalid(f"its tuple elements make no tuple: {e}"), "signature") from None
    if [p.to_json() for p in made] != d.get("tuples", []):
        raise at(Invalid(f"the tuples do not match the signature's tuple elements, which make "
                         f"{[p.to_json() for p in made]}"), "tuples")
    return made


def read_cubin(directory: str | os.PathLike[str], variant: Variant, stats: dict[str, os.stat_result] | None = None) -> bytes:
    """The variant's cubin bytes, after checking size and sha256 against the metadata; ``stats`` as
    for :func:`read_file`."""
    data = _read_recorded(directory, variant.arch, "cubin", variant.cubin_file, variant.cubin_size, variant.cubin_sha256, stats)
    if data[:4] != b"\x7fELF":
        path = os.path.join(os.fspath(directory), variant.cubin_file)
        raise IntegrityError(f"{path}: not a cubin (no ELF header), though its size and sha256 match metadata.json; "
                             "rebuild it with tmlr-build", path)
    return data


def open_cubin(directory: str | os.PathLike[str], variant: Variant, stats: dict[str, os.stat_result] | None = None) -> Cubin:
    """The variant's cubin, read (:func:`read_cubin`) and held against the variant (:func:`check_cubin`)."""
    path = os.path.join(os.fspath(directory), variant.cubin_file)
    return check_cubin(read_cubin(directory, variant, stats), variant, path)


def check_cubin(data: bytes, variant: Variant, path: str) -> Cubin:
    """The cubin ``data`` (at ``path``) parsed with its entry's parameters (``elf.parse``), after checking that it is
    whole (:class:`IntegrityError`) and that its ELF header names the variant's target (:class:`CubinMismatchError`)."""
    cubin = parse(data, path, variant.entry)
    problem = target_problem(cubin, variant.target)
    if problem is not None:
        raise CubinMismatchError(f"{path}: {problem}; the cubin was swapped or the target edited - rebuild the artifact "
                                 "with tmlr-build", path)
    return cubin


def read_ptx(directory: str | os.PathLike[str], variant: Variant, stats: dict[str, os.stat_result] | None = None) -> bytes:
    """The variant's PTX text (bytes, without a terminating NUL), after checking size and sha256 against the
    metadata; ``stats`` as for :func:`read_file`. ArtifactError when the variant has none."""
    ptx = variant.ptx
    if ptx is None:
        raise ArtifactError(f"{variant.arch} of {directory} has no PTX; rebuild it with tmlr-build --ptx", os.fspath(directory))
    data = _read_recorded(directory, variant.arch, "ptx", ptx.file, ptx.size, ptx.sha256, stats)
    if b"\0" in data:
        path = os.path.join(os.fspath(directory), ptx.file)
        raise IntegrityError(f"{path}: not PTX text (it holds a NUL byte), though its size and sha256 match metadata.json; "
                             "rebuild it with tmlr-build --ptx", path)
    return data


def _read_recorded(directory: str | os.PathLike[str], arch: str, what: str, name: str, size: int, sha256: str,
                   stats: dict[str, os.stat_result] | None) -> bytes:
    """The bytes of the file ``name`` that metadata.json records for ``arch`` (its ``what``: cubin or ptx), checked
    against the recorded size and sha256."""
    if (CUBIN_FILE if what == "cubin" else PTX_FILE)(name) is None:  # the reader refuses it too; checked again before a file access
        raise SchemaError(f"{what} file name {name!r} has path parts; it must be a plain file name inside the artifact "
                          "directory", None, f"$.variants[].{what}.file")
    path = os.path.join(os.fspath(directory), name)
    try:
        data = read_file(path, stats)
    except FileNotFoundError:
        raise ArtifactError(f"{path}: missing; metadata.json names it for {arch} - copy the whole artifact "
                            "directory", path) from None
    if len(data) != size:
        raise IntegrityError(f"{path}: {len(data)} bytes, metadata.json records {size}; the file is "
                             "truncated or replaced - copy the artifact directory again or rebuild it", path)
    digest = hashlib.sha256(data).hexdigest()
    if digest != sha256:
        raise IntegrityError(f"{path}: sha256 {digest} does not match metadata.json ({sha256}); the {what} "
                             "was changed after the build - rebuild the artifact with tmlr-build", path)
    return data
