"""``OUT/serve.json`` of a ``--spec`` build: for each artifact built from a Python kernel, the module and attribute it
was built from and its source file's sha256, which ``tmlr_runtime.serve(OUT)`` matches running kernels against
(the schema: tmlr_runtime/artifact/schema/serve.schema.json).

The document is a pure function of its entries (sorted by artifact, one per artifact), so that builds of parts
of a spec merge into the bytes one build writes (:func:`merge`). A build into a folder that has one keeps the
entries of the artifacts it did not write that are still there."""
from __future__ import annotations

import json
import os
from typing import Any, Iterable, Sequence

from tmlr_runtime import METADATA_FILE
from tmlr_runtime.artifact import locked_file
from tmlr_runtime.artifact.serve_index import SERVE_FILE, SERVE_VERSION

from ..common.errors import ArtifactWriteError
from ..common.jobs import JobResult, source_name
from .sources import KernelRequest


def entry(req: KernelRequest, artifact: str, results: Sequence[JobResult]) -> dict[str, Any] | None:
    """The entry of artifact ``artifact`` built from ``req``; None for an IR input (no Python kernel to match)."""
    if req.stage != "python" or not req.kernel:
        return None
    return {"artifact": artifact, "module": _module(req), "kernel": req.kernel,
            "source": source_name(req.source, req.module), "source_sha256": results[0].provenance["source_sha256"]}


def _module(req: KernelRequest) -> str:
    """The module a running kernel is looked up in: the one a recording saw it run in (a spec's "module", written by
    tmlr-build record), which the build's view of a file may not name (a namespace package's member builds as its
    stem); else the package member's dotted name, else the file's stem (a plain file imports as that). A script's
    kernel (recorded in __main__) is found by its file's name, as a plain file's: serve() matches that to the
    running script."""
    recorded = req.identity[0] if req.identity is not None else ""
    if recorded != "__main__" and recorded and all(part.isidentifier() for part in recorded.split(".")):
        return recorded
    return req.module or os.path.splitext(os.path.basename(req.source))[0]


_KEYS = ("artifact", "module", "kernel", "source", "source_sha256")  # an entry's keys, in the order written


def document(entries: Iterable[dict[str, Any]]) -> dict[str, Any]:
    kernels = sorted(({k: e[k] for k in _KEYS} for e in entries), key=lambda e: e["artifact"])
    return {"schema_version": SERVE_VERSION, "kind": "serve", "kernels": kernels}


def merge(*entry_lists: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """One document of several lists of entries (shards of one spec, or a folder's before and after a build):
    an artifact listed again takes its last entry."""
    by_artifact = {e["artifact"]: e for entries in entry_lists for e in entries}
    return document(by_artifact.values())


def text(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=1) + "\n"


def write(out: str, new: list[dict[str, Any]], written: Sequence[str]) -> str | None:
    """Write ``out/serve.json``: ``new`` (the entries of this build) over the folder's earlier ones, less those of
    artifacts this build wrote from no Python kernel or that are gone. Returns a warning when the old file was
    unreadable (it is replaced), else None. Concurrent builds into ``out`` take turns (a lock on the folder)."""
    path = os.path.join(out, SERVE_FILE)
    rebuilt = {os.path.basename(p) for p in written}
    with locked_file.locked(out):  # the folder itself: it gets no lock file
        old, warning = _read(path)
        kept = [e for e in old if e.get("artifact") not in rebuilt
                and os.path.isfile(os.path.join(out, str(e.get("artifact")), METADATA_FILE))]
        if not kept and not new and not os.path.exists(path):
            return warning
        try:
            locked_file.replace(path, text(merge(kept, new)))
        except OSError as e:
            raise ArtifactWriteError(f"{path}: cannot write the serve index (the artifacts are written): {e}") from None
    return warning


def _read(path: str) -> tuple[list[dict[str, Any]], str | None]:
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except FileNotFoundError:
        return [], None
    except (OSError, ValueError) as e:
        return [], f"{path}: unreadable ({e}); written again from this build's kernels"
    kernels = doc.get("kernels") if isinstance(doc, dict) and doc.get("schema_version") == SERVE_VERSION else None
    if not isinstance(kernels, list) or not all(isinstance(e, dict) and set(_KEYS) <= e.keys() for e in kernels):
        return [], f"{path}: not a serve index of version {SERVE_VERSION}; written again from this build's kernels"
    return kernels, None

