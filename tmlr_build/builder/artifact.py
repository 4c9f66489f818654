"""Assembling metadata.json from compile results, validating it, and writing the directory atomically."""
from __future__ import annotations

import hashlib
import json
import os
import posixpath
import re
import shutil
import tempfile
from typing import Any, Callable, Sequence

import tmlr_runtime
from tmlr_runtime import METADATA_FILE, SCHEMA_PATH, ArtifactMetadata, SchemaError
from tmlr_runtime.abi import TENSORDESC, Target
from tmlr_runtime.tuples import TupleParam, call_params

from ..common.errors import ArtifactWriteError, OutputPathError
from ..common.jobs import JobResult

IR_DIR = "ir"
# In each IR folder tmlr-build writes: the sha256 of every file it wrote there (``sha256sum -c`` reads it), so
# that a rebuild tells the files a user edited or added from its own (rebuild_edits.py)
SUMS_FILE = "SHA256SUMS"
VARIANTS_DIR = "v"  # a family's variants, one artifact each (family.py)
# schema_version of a document: 1 unless it needs what version 2 added (host tensor descriptor
# parameters), what version 4 added (a variant's PTX), what version 5 added (tuple parameters) or what version 7
# added (constexprs that are Triton objects) or what version 9 added (constexprs whose value is a non-empty tuple), so
# that a runtime that reads version 1 only still loads every artifact it can launch (3, 6 and 8 are family indexes)
_DESCRIPTOR_SCHEMA = 2
_PTX_SCHEMA = 4
_TUPLE_SCHEMA = 5
_OBJECT_SCHEMA = 7
_TUPLE_VALUE_SCHEMA = 9


def cubin_file_name(name: str, arch: str) -> str:
    return f"{name}.{arch}.cubin"


def ptx_file_name(name: str, target: Target) -> str:
    """The PTX file of a portable target: add.compute_80.ptx for sm_80."""
    return f"{name}.{target.ptx().arch}.ptx"


def metadata_document(name: str, results: Sequence[JobResult]) -> dict[str, Any]:
    """The metadata.json document of one kernel built for every arch in ``results``."""
    _check_same_signature(name, results)
    variants = []
    for r in sorted(results, key=lambda r: r.target):
        if r.cubin is None or r.entry is None:
            raise ArtifactWriteError(f"{name}: no cubin for {r.target.arch} (the build stopped early); this is a "
                                     "tmlr-build bug")
        variant: dict[str, Any] = {
            "target": {"backend": "cuda", "capability": r.target.capability, "arch": r.target.arch, "warp_size": 32},
            "entry": r.entry,
            "cubin": {"file": cubin_file_name(name, r.target.arch), "sha256": hashlib.sha256(r.cubin).hexdigest(),
                      "size": len(r.cubin)},
            **({} if r.ptx is None else {"ptx": {"file": ptx_file_name(name, r.target), "sha256": hashlib.sha256(r.ptx).hexdigest(),
                                                  "size": len(r.ptx), "arch": r.target.ptx().arch}}),
            "launch": r.launch,
            "scratch": r.scratch,
        }
        if r.resources:
            variant["resources"] = r.resources
        variant["provenance"] = r.provenance
        variants.append(variant)
    signature = results[0].signature
    version = _DESCRIPTOR_SCHEMA if any(p.get("type") == TENSORDESC for p in signature) else 1
    version = _PTX_SCHEMA if any(r.ptx is not None for r in results) else version
    tuples = [p.to_json() for p in call_params(p["name"] for p in signature) if isinstance(p, TupleParam)]
    arrays = [p["value"] for p in signature if p["kind"] == "constexpr" and isinstance(p["value"], (tuple, list))]  # tuples
    version = _TUPLE_SCHEMA if tuples or arrays else version  # an empty tuple, written []
    version = _OBJECT_SCHEMA if any("object" in p for p in signature) else version
    version = _TUPLE_VALUE_SCHEMA if any(arrays) else version  # (8, 8), written [8, 8]
    # the tuple parameters, as their elements' names make them (tmlr_runtime/tuples.py)
    return {"schema_version": version, "name": name, "signature": signature, **({"tuples": tuples} if tuples else {}),
            "variants": variants}


def _check_same_signature(name: str, results: Sequence[JobResult]) -> None:
    signatures = {json.dumps(r.signature, sort_keys=True) for r in results}
    if len(signatures) == 1:
        return
    archs = ", ".join(r.target.arch for r in results)
    fields = {json.dumps([p.get("descriptor", {}).get("fields") for p in r.signature]) for r in results}
    if len(fields) > 1:
        raise ArtifactWriteError(
            f"{name}: its tensor descriptors are passed differently on {archs} (as a TMA tensor map on sm_90 and "
            "newer, as a pointer with shape and strides before), and one artifact has one signature: build each "
            "arch into its own artifact (a spec entry per arch with its own \"name\", or --arch and --name)")
    raise ArtifactWriteError(f"{name}: the builds for {archs} disagree on the signature; build each arch from the "
                             "same source and options")


def validate(doc: dict[str, Any]) -> None:
    """Check ``doc`` with the real jsonschema and with the runtime's own reader."""
    check_schema(doc, str(SCHEMA_PATH), "the metadata")
    if doc["schema_version"] > tmlr_runtime.SCHEMA_VERSION:
        return  # a reader of an older schema refuses it at load, saying which version it reads
    try:
        ArtifactMetadata.from_dict(doc)
    except SchemaError as e:
        raise ArtifactWriteError(f"{doc.get('name')}: tmlr_runtime would reject the metadata: {e}; this is a "
                                 "tmlr-build bug, please report it") from None


def check_schema(doc: dict[str, Any], schema_path: str, what: str) -> None:
    """Validate ``doc`` with the real jsonschema against the schema file ``schema_path``."""
    import jsonschema

    with open(schema_path, encoding="utf-8") as f:
        schema = json.load(f)
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(doc))
    if error is not None:
        where = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
        raise ArtifactWriteError(f"{doc.get('name')}: {what} would not follow the schema at {where}: "
                                 f"{error.message}; this is a tmlr-build bug, please report it")


def artifact_files(name: str, results: Sequence[JobResult], with_metadata: bool) -> dict[str, bytes]:
    """Relative path -> bytes of everything the artifact directory holds."""
    files: dict[str, bytes] = {}
    if with_metadata:
        doc = metadata_document(name, results)
        validate(doc)
        files[METADATA_FILE] = (json.dumps(doc, indent=2) + "\n").encode()
        for r in results:
            files[cubin_file_name(name, r.target.arch)] = r.cubin or b""
            if r.ptx is not None:
                files[ptx_file_name(name, r.target)] = r.ptx
    for r in results:
        folder = {fname: content if isinstance(content, bytes) else content.encode()
                  for fname, content in r.ir_files.items()}
        if folder:
            folder[SUMS_FILE] = sums_text({fname: hashlib.sha256(data).hexdigest() for fname, data in folder.items()})
        files.update((f"{IR_DIR}/{r.target.arch}/{fname}", data) for fname, data in folder.items())
    return files


def sums_text(digests: dict[str, str]) -> bytes:
    """SHA256SUMS of one folder (file name -> sha256), in sha256sum's format."""
    return "".join(f"{digest}  {fname}\n" for fname, digest in sorted(digests.items())).encode()


def parse_sums(text: str) -> dict[str, str]:
    """File name -> sha256 of a SHA256SUMS text (lines of another form are skipped)."""
    sums = {}
    for line in text.splitlines():
        digest, sep, fname = line.partition("  ")
        if sep and re.fullmatch(r"[0-9a-f]{64}", digest):
            sums[fname] = digest
    return sums


def read_sums(path: str) -> dict[str, str] | None:
    """File name -> sha256 as the SHA256SUMS at ``path`` records them; None where there is none (or it cannot be read)."""
    try:
        with open(path, encoding="utf-8") as f:
            return parse_sums(f.read())
    except (OSError, UnicodeDecodeError):
        return None


def unrecord(files: dict[str, bytes], inputs: Sequence[str]) -> None:
    """Leave the inputs of this build out of the SHA256SUMS of ``files``: a stage file built from its own place
    in the IR folder is echoed there as it is, and stays the user's (a later rebuild keeps it, edited or not)."""
    for rel in inputs:
        folder, base = posixpath.split(rel)
        record = posixpath.join(folder, SUMS_FILE)
        if rel in files and record in files:
            sums = parse_sums(files[record].decode())
            sums.pop(base, None)
            files[record] = sums_text(sums)


def prepare_output(out: str) -> str:
    """Create the output directory; refuse a path that is a file."""
    out = os.path.abspath(out)
    if os.path.exists(out) and not os.path.isdir(out):
        raise OutputPathError(f"{out}: exists and is not a directory; -o names a directory that receives one "
                              "folder per kernel - pick another path or remove the file")
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as e:
        raise OutputPathError(f"{out}: cannot create the output directory: {e.strerror}") from None
    return out


def built_names(name: str) -> Callable[[str], bool]:
    """Whether a top-level entry of an artifact directory is tmlr-build's (a rebuild replaces it): metadata.json,
    the kernel's cubins and PTX, ir/ and v/. Everything else there is the user's and survives a rebuild."""
    ours = re.compile(re.escape(name) + r"\.(sm_[0-9]+a?\.cubin|compute_[0-9]+\.ptx)")
    return lambda entry: entry in (METADATA_FILE, IR_DIR, VARIANTS_DIR) or bool(ours.fullmatch(entry))


def user_entries(final: str, name: str) -> list[str]:
    """The top-level entries of the existing ``final`` that no build writes (a tuning table, notes)."""
    if not os.path.isdir(final):
        return []
    ours = built_names(name)
    return sorted(e for e in os.listdir(final) if not ours(e))


def write_directory(out: str, name: str, files: dict[str, bytes], carry: Sequence[str] = (),
                    drop: Sequence[str] = ()) -> str:
    """Write ``out/name`` so that readers see the old directory or the complete new one, never a mix.

    ``carry``: folders and files of the old directory (relative) to keep when the new files do not
    replace them - the IR a user edited in place and is building from must survive the rebuild. Every
    top-level entry of the old directory that no build writes (:func:`built_names`) is kept as well,
    unless ``files`` replaces it or ``drop`` names it (the caller kept its bytes under another name).
    """
    final = os.path.join(out, name)
    if os.path.exists(final) and not os.path.isdir(final):
        raise OutputPathError(f"{final}: exists and is not a directory; remove it so the artifact can be written")
    tmp = tempfile.mkdtemp(prefix=f".{name}.tmp-", dir=out)
    try:
        for rel, data in sorted(files.items()):
            path = os.path.join(tmp, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(data)
        kept = [e for e in user_entries(final, name) if e not in drop]
        for rel in [*carry, *kept]:
            source, target = os.path.join(final, rel), os.path.join(tmp, rel)
            if os.path.lexists(target) or not os.path.lexists(source):
                continue
            if os.path.isdir(source) and not os.path.islink(source):
                shutil.copytree(source, target, symlinks=True)
            else:
                os.makedirs(os.path.dirname(target), exist_ok=True)
                shutil.copy2(source, target, follow_symlinks=False)
        os.chmod(tmp, 0o755)
        _swap(out, name, tmp, final)
    except OSError as e:
        shutil.rmtree(tmp, ignore_errors=True)
        raise ArtifactWriteError(f"{final}: cannot write the artifact (the previous one, if any, is unchanged): {e}") from None
    return final


def _swap(out: str, name: str, tmp: str, final: str) -> None:
    if not os.path.isdir(final):
        os.replace(tmp, final)
        return
    # A directory cannot replace a non-empty one in a single rename: move the old one aside first.
    old = tempfile.mkdtemp(prefix=f".{name}.old-", dir=out)
    os.replace(final, os.path.join(old, name))
    try:
        os.replace(tmp, final)
    except OSError:
        os.replace(os.path.join(old, name), final)  # put the previous artifact back
        os.rmdir(old)
        raise
    # Only now that the new directory (with every user file copied in) is in place.
    shutil.rmtree(old, ignore_errors=True)
