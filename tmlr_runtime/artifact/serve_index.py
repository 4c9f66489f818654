"""``OUT/serve.json``: the Python kernel each artifact of a ``tmlr-build --spec SPEC -o OUT`` folder was built from
(module, attribute, source file and its sha256), checked as ``schema/serve.schema.json`` says. tmlr-build writes it;
``tmlr_runtime.serve(OUT)`` reads it to match a running ``@triton.jit`` function to its artifacts."""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from ..errors import ArtifactError
from .files import read_json
from .metadata import METADATA_FILE
from .rules import IDENTIFIER, SHA256, Invalid, array, at, check, obj, one_of, string
from ..records import Record

SERVE_SCHEMA_PATH = Path(__file__).with_name("schema") / "serve.schema.json"
SERVE_FILE = "serve.json"
SERVE_VERSION = 1

_MODULE = string(re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*").fullmatch, "a dotted module name")
_ENTRY = obj({"artifact": IDENTIFIER, "module": _MODULE, "kernel": IDENTIFIER, "source": string(),
              "source_sha256": SHA256})
_INDEX = obj({"schema_version": one_of((SERVE_VERSION,), str(SERVE_VERSION)), "kind": one_of(("serve",), '"serve"'),
              "kernels": array(_ENTRY)})


class ServedEntry(Record):
    """One artifact of the folder and the kernel it was built from (see the schema's descriptions)."""

    artifact: str
    module: str
    kernel: str
    source: str
    source_sha256: str


def _unique(doc: Any) -> tuple[dict[str, Any], ...]:
    kernels = _INDEX(doc)["kernels"]
    seen: set[str] = set()
    for i, e in enumerate(kernels):
        if e["artifact"] in seen:
            raise at(at(at(Invalid(f"{e['artifact']!r} is listed twice"), "artifact"), i), "kernels")
        seen.add(e["artifact"])
    return kernels


def read_serve_index(directory: str) -> list[ServedEntry]:
    """The entries of ``directory/serve.json``, each artifact folder checked to be there."""
    path = os.path.join(directory, SERVE_FILE)
    if not os.path.isfile(path):
        raise _missing(directory, path)
    doc, _ = read_json(path)
    entries = [ServedEntry(**e) for e in check(_unique, doc, path, "not a tmlr serve index; rebuild the folder with "
                                                     "tmlr-build --spec SPEC -o " + directory)]
    for e in entries:
        if not os.path.isfile(os.path.join(directory, e.artifact, METADATA_FILE)):
            raise ArtifactError(f"{path}: lists {e.artifact}, and {os.path.join(directory, e.artifact)} is no artifact "
                                f"(no {METADATA_FILE}); copy the whole folder tmlr-build wrote, or rebuild it with "
                                f"tmlr-build --spec SPEC -o {directory}", path)
    return entries


def _missing(directory: str, path: str) -> ArtifactError:
    if os.path.isfile(os.path.join(directory, METADATA_FILE)):
        return ArtifactError(f"{directory}: one artifact; serve takes the folder tmlr-build --spec SPEC -o OUT wrote (its "
                             f"{SERVE_FILE} says which kernel each artifact serves): pass {os.path.dirname(directory) or '.'}"
                             " if that is it", directory)
    if not os.path.isdir(directory):
        return ArtifactError(f"{directory}: no such folder; pass the folder tmlr-build --spec SPEC -o OUT wrote", directory)
    return ArtifactError(f"{path}: missing; tmlr-build --spec SPEC -o {directory} writes it for the artifacts it builds from "
                         "Python kernels (IR inputs, and builds without --spec, have none): build the model's kernels from "
                         "a spec, e.g. the one `tmlr-build record` writes", path)
