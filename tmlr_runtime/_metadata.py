"""Reading an artifact directory: metadata.json (validated) into frozen records, cubins verified.

An artifact directory holds ``metadata.json`` and one ``.cubin`` per variant (target arch). The
schema (``schema/metadata.schema.json``) is the contract with tmlr_build; this module turns a valid
document into :class:`ArtifactMetadata` so nothing downstream indexes raw dicts.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, fields
from typing import Any

from ._errors import ArtifactError, IntegrityError, NoCompatibleVariantError, SchemaError
from ._schema import SCHEMA_VERSION, first_error
from .abi import Parameter

METADATA_FILE = "metadata.json"


@dataclass(frozen=True)
class Variant:
    """One compiled cubin of the kernel, for one target architecture."""

    capability: int
    arch: str
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
    def threads_per_block(self) -> int:
        return 32 * self.num_warps

    @property
    def is_cluster_launch(self) -> bool:
        return self.cluster_dims != (1, 1, 1)

    def runs_on(self, major: int, minor: int) -> bool:
        """Whether this cubin's SASS can run on a device of compute capability major.minor.

        SASS is forward compatible only within one major version, and arch-specific targets
        (``sm_90a``) run on exactly their own capability.
        """
        c_major, c_minor = divmod(self.capability, 10)
        if self.arch.endswith("a"):
            return (c_major, c_minor) == (major, minor)
        return c_major == major and c_minor <= minor


@dataclass(frozen=True)
class ArtifactMetadata:
    """A parsed, schema-valid metadata.json."""

    name: str
    signature: tuple[Parameter, ...]
    variants: tuple[Variant, ...]
    path: str | None = None

    @classmethod
    def from_dict(cls, doc: Any, path: str | None = None) -> "ArtifactMetadata":
        """Validate ``doc`` against the schema and build the record; raises :class:`SchemaError`."""
        where = path or "metadata"
        if isinstance(doc, dict) and doc.get("schema_version") not in (SCHEMA_VERSION, None):
            raise SchemaError(
                f"{where}: schema_version {doc.get('schema_version')!r} is not supported by this "
                f"tmlr_runtime (it reads version {SCHEMA_VERSION}); rebuild the artifact with a "
                "matching tmlr-build or upgrade tmlr_runtime",
                path,
                "$.schema_version",
            )
        err = first_error(doc)
        if err is not None:
            json_path, message = err
            raise SchemaError(
                f"{where}: {json_path}: {message}; the file does not follow the tmlr metadata "
                f"schema v{SCHEMA_VERSION} - rebuild it with tmlr-build",
                path,
                json_path,
            )
        signature = tuple([_parameter(p) for p in doc["signature"]])
        if len({p.name for p in signature}) != len(signature):
            names = [p.name for p in signature]
            dup = sorted({n for n in names if names.count(n) > 1})
            raise SchemaError(f"{where}: $.signature: parameter names repeat: {', '.join(dup)}; rebuild it with tmlr-build", path, "$.signature")
        variants = tuple([_variant(v) for v in doc["variants"]])
        for i, v in enumerate(variants):
            if v.num_warps > 32:
                raise SchemaError(f"{where}: $.variants[{i}].launch.num_warps: {v.num_warps} warps exceed 1024 threads per block", path, f"$.variants[{i}].launch.num_warps")
        if len({v.arch for v in variants}) != len(variants):
            archs = [v.arch for v in variants]
            raise SchemaError(f"{where}: $.variants: two variants for the same arch ({', '.join(archs)}); rebuild it with tmlr-build", path, "$.variants")
        return cls(doc["name"], signature, variants, path)

    @classmethod
    def read(cls, directory: str | os.PathLike[str]) -> "ArtifactMetadata":
        """Read and validate ``directory/metadata.json``."""
        return read_metadata(directory)[0]

    @property
    def runtime_params(self) -> tuple[Parameter, ...]:
        return tuple(p for p in self.signature if p.kind == "runtime")

    @property
    def constexprs(self) -> dict[str, Any]:
        return {p.name: p.value for p in self.signature if p.kind == "constexpr"}

    def select_variant(self, major: int, minor: int) -> Variant:
        """The best variant for a device of compute capability major.minor.

        An exact arch-specific match first, then the newest portable cubin of the same major.
        """
        fits = [v for v in self.variants if v.runs_on(major, minor)]
        if not fits:
            have = ", ".join(v.arch for v in self.variants)
            raise NoCompatibleVariantError(
                f"{self.name}: no variant runs on this device (compute capability {major}.{minor}, "
                f"sm_{major}{minor}); the artifact has {have}. Rebuild with "
                f"`tmlr-build ... --arch {major}{minor}` (add it to the existing --arch list)"
                + (" and --num-ctas 1: thread-block clusters need sm_90 or newer"
                   if major < 9 and all(v.is_cluster_launch for v in self.variants) else "")
            )
        return max(fits, key=lambda v: (v.arch.endswith("a"), v.capability))


# Records of a validated document are made without their dataclass __init__ (a frozen
# dataclass's sets each field through object.__setattr__, which made up most of building them);
# the field lists are checked against the classes at import so the two cannot drift apart.
_new = object.__new__
_set = object.__setattr__
_PARAMETER_FIELDS = ("name", "kind", "type", "divisibility", "value")
_VARIANT_FIELDS = (
    "capability", "arch", "entry", "cubin_file", "cubin_sha256", "cubin_size", "num_warps", "num_ctas", "cluster_dims",
    "shared", "tmem_size", "cooperative", "pdl", "scratch_size", "scratch_align", "hidden_params", "resources", "provenance",
)
if tuple(f.name for f in fields(Parameter)) != _PARAMETER_FIELDS or tuple(f.name for f in fields(Variant)) != _VARIANT_FIELDS:
    raise AssertionError("tmlr_runtime._metadata: the record fields changed; update _parameter/_variant")


def _parameter(p: dict[str, Any]) -> Parameter:
    kind = p["kind"]
    record = _new(Parameter)
    _set(record, "__dict__", {
        "name": p["name"],
        "kind": kind,
        "type": p.get("type"),
        "divisibility": int(p.get("divisibility", 1)),  # JSON Schema takes 16.0 as an integer
        "value": 1 if kind == "equal_to_1" else p.get("value"),
    })
    return record


def _variant(v: dict[str, Any]) -> Variant:
    # int(): JSON Schema takes 4.0 as an integer, but the driver wants Python ints
    t, c, l, s = v["target"], v["cubin"], v["launch"], v["scratch"]
    record = _new(Variant)
    _set(record, "__dict__", {
        "capability": int(t["capability"]),
        "arch": t["arch"],
        "entry": v["entry"],
        "cubin_file": c["file"],
        "cubin_sha256": c["sha256"],
        "cubin_size": int(c["size"]),
        "num_warps": int(l["num_warps"]),
        "num_ctas": int(l["num_ctas"]),
        "cluster_dims": tuple([int(d) for d in l["cluster_dims"]]),
        "shared": int(l["shared"]),
        "tmem_size": int(l["tmem_size"]),
        "cooperative": l["launch_cooperative_grid"],
        "pdl": l["launch_pdl"],
        "scratch_size": int(s["global_scratch_size"]),
        "scratch_align": int(s["global_scratch_align"]),
        "hidden_params": tuple(s["hidden_params"]),
        "resources": dict(v.get("resources", {})),
        "provenance": dict(v["provenance"]),
    })
    return record


_O_READ = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)


def read_file(path: str) -> tuple[bytes, os.stat_result]:
    """The bytes of ``path`` and the ``fstat`` of the file they were read from (one open; the
    stat is what :class:`Kernel`'s load cache compares later, so it describes exactly these bytes)."""
    fd = os.open(path, _O_READ)
    try:
        st = os.fstat(fd)
        data = os.read(fd, st.st_size + 1)
        if len(data) > st.st_size:  # it grew since the fstat: read on to the end
            chunks = [data]
            while True:
                more = os.read(fd, 1 << 20)
                if not more:
                    break
                chunks.append(more)
            data = b"".join(chunks)
        return data, st
    finally:
        os.close(fd)


def read_metadata(directory: str | os.PathLike[str]) -> tuple[ArtifactMetadata, os.stat_result]:
    """:meth:`ArtifactMetadata.read`, and the stat of the metadata.json it read."""
    directory = os.fspath(directory)
    meta_path = os.path.join(directory, METADATA_FILE)
    try:
        raw, st = read_file(meta_path)
    except (FileNotFoundError, NotADirectoryError):
        if not os.path.isdir(directory):
            raise ArtifactError(
                f"{directory}: not an artifact directory (it does not exist or is a file); pass the "
                "directory tmlr-build wrote, e.g. OUT/<kernel_name>",
                directory,
            ) from None
        raise ArtifactError(
            f"{meta_path}: missing; an artifact directory needs the metadata.json that tmlr-build "
            "writes beside the cubins - copy the whole artifact directory, or rebuild it with tmlr-build",
            meta_path,
        ) from None
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError) as e:  # UnicodeDecodeError is a ValueError
        raise SchemaError(f"{meta_path}: not valid JSON ({e}); rebuild the artifact with tmlr-build", meta_path) from None
    return ArtifactMetadata.from_dict(doc, meta_path), st


def read_cubin(directory: str | os.PathLike[str], variant: Variant) -> bytes:
    """The variant's cubin bytes, after checking size and sha256 against the metadata."""
    return read_cubin_stat(directory, variant)[0]


def read_cubin_stat(directory: str | os.PathLike[str], variant: Variant) -> tuple[bytes, os.stat_result]:
    """:func:`read_cubin`, and the stat of the file it read."""
    name = variant.cubin_file
    if os.path.basename(name) != name or name in (".", "..") or "/" in name or "\\" in name:
        # the schema pattern already forbids this; checked again because this is a file access
        raise SchemaError(f"cubin file name {name!r} has path parts; it must be a plain file name inside the artifact directory", None, "$.variants[].cubin.file")
    path = os.path.join(os.fspath(directory), name)
    try:
        data, st = read_file(path)
    except FileNotFoundError:
        raise ArtifactError(f"{path}: missing; metadata.json names it for {variant.arch} - copy the whole artifact directory", path) from None
    if len(data) != variant.cubin_size:
        raise IntegrityError(
            f"{path}: {len(data)} bytes, metadata.json records {variant.cubin_size}; the file is truncated or "
            "replaced - copy the artifact directory again or rebuild it",
            path,
        )
    digest = hashlib.sha256(data).hexdigest()
    if digest != variant.cubin_sha256:
        raise IntegrityError(
            f"{path}: sha256 {digest} does not match metadata.json ({variant.cubin_sha256}); the cubin was "
            "changed after the build - rebuild the artifact with tmlr-build",
            path,
        )
    if data[:4] != b"\x7fELF":
        raise IntegrityError(
            f"{path}: not a cubin (no ELF header), though its size and sha256 match metadata.json; rebuild it with tmlr-build",
            path,
        )
    return data, st
