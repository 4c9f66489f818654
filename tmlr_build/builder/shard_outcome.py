"""One compile's outcome as files of a shard folder, and back (shards.py).

A shard build hands its outcomes to the merge through files, not pickles (a merge reads folders a CI job
uploaded; unpickling them would run whatever they hold): ``result.json`` with the JobResult's fields, and
the bytes it carries beside it (``cubin``, ``ptx``, ``ir/<file>``); or ``error.json`` with a failed
compile's error type and message. Read back, a JobResult gives the artifact files the compile's own result
gives (tests/build/test_build_shards.py compares the bytes).
"""
from __future__ import annotations

import json
import os
from typing import Any

from tmlr_runtime.abi import Target

from ..common.errors import ERROR_CLASSES, BuildError, ShardMissingError
from ..common.jobs import JobResult

RESULT_FILE = "result.json"
ERROR_FILE = "error.json"
_JSON_FIELDS = ("name", "signature", "entry", "launch", "scratch", "resources", "provenance")


def outcome_files(outcome: JobResult | BuildError) -> dict[str, bytes]:
    """Relative path -> bytes of one compile's folder in a shard."""
    if isinstance(outcome, BuildError):
        return {ERROR_FILE: _json({"type": type(outcome).__name__, "message": str(outcome)})}
    doc: dict[str, Any] = {k: getattr(outcome, k) for k in _JSON_FIELDS}
    doc["target"] = {"capability": outcome.target.capability, "arch": outcome.target.arch}
    doc["cubin"], doc["ptx"] = outcome.cubin is not None, outcome.ptx is not None
    doc["ir_files"] = {fname: "text" if isinstance(data, str) else "bytes" for fname, data in outcome.ir_files.items()}
    files = {RESULT_FILE: _json(doc)}
    if outcome.cubin is not None:
        files["cubin"] = outcome.cubin
    if outcome.ptx is not None:
        files["ptx"] = outcome.ptx
    for fname, data in outcome.ir_files.items():
        files[f"ir/{fname}"] = data.encode() if isinstance(data, str) else data
    return files


def read_outcome(folder: str, label: str) -> JobResult | BuildError:
    """The outcome a shard folder's ``folder`` holds; ``label`` names the compile in errors."""
    if os.path.isfile(os.path.join(folder, ERROR_FILE)):
        doc = _load(folder, ERROR_FILE, label)
        return ERROR_CLASSES.get(str(doc.get("type")), BuildError)(str(doc.get("message")))
    doc = _load(folder, RESULT_FILE, label)
    try:
        target = Target(int(doc["target"]["capability"]), str(doc["target"]["arch"]))
        fields = {k: doc[k] for k in _JSON_FIELDS}
        ir_files = {fname: _ir_file(folder, fname, kind, label) for fname, kind in doc["ir_files"].items()}
        return JobResult(**fields, target=target, cubin=_bytes(folder, "cubin", label) if doc["cubin"] else None,
                         ptx=_bytes(folder, "ptx", label) if doc["ptx"] else None, ir_files=ir_files)
    except (KeyError, TypeError, ValueError, AttributeError):
        raise _damaged(folder, label, f"{RESULT_FILE} lacks a field or holds one of another kind") from None


def _ir_file(folder: str, fname: str, kind: str, label: str) -> str | bytes:
    if "/" in fname or os.sep in fname or fname in ("", ".", ".."):
        raise _damaged(folder, label, f"{RESULT_FILE} names an IR file {fname!r} outside its folder")
    data = _bytes(folder, f"ir/{fname}", label)
    return data.decode() if kind == "text" else data


def _json(doc: dict[str, Any]) -> bytes:
    # key order kept: metadata.json writes the dicts of a JobResult (launch, provenance) in their own order
    return (json.dumps(doc, indent=1) + "\n").encode()


def _load(folder: str, fname: str, label: str) -> dict[str, Any]:
    try:
        doc = json.loads(_bytes(folder, fname, label))
    except ValueError:
        raise _damaged(folder, label, f"{fname} is not JSON") from None
    if not isinstance(doc, dict):
        raise _damaged(folder, label, f"{fname} is not a JSON object")
    return doc


def _bytes(folder: str, rel: str, label: str) -> bytes:
    try:
        with open(os.path.join(folder, rel), "rb") as f:
            return f.read()
    except OSError as e:
        raise _damaged(folder, label, f"cannot read {rel} ({e.strerror})") from None


def _damaged(folder: str, label: str, why: str) -> ShardMissingError:
    return ShardMissingError(f"{folder}: the compile of {label} in this shard folder is incomplete: {why}; build this "
                             "shard again (the same command with its --shard I/N) and merge again")
