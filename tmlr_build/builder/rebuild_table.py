"""What a family rebuild does with the tuning table (tuning.json) it finds in the family folder.

A table can only be remade on the GPU, so a rebuild never drops it. Its entries are keyed by the
index's sha256, and the index records every variant's cubin sha256, so:

- the new index is byte-identical: the table is carried as it is;
- the index differs only in what it records (an index written before ``cubin_sha256`` existed), with the
  same configs, variants and cubin bytes: the entries of the old index are re-stamped with the new sha256;
- anything else (a config, a variant or a cubin changed): the table is kept aside as
  ``tuning.stale-<old index sha256, 12 hex>.json`` and the build warns; the family runs untuned until
  ``tmlr tune`` writes a new table.
"""
from __future__ import annotations

import hashlib
import json
import os
from typing import Any

from tmlr_runtime import METADATA_FILE
from tmlr_runtime.artifact.tuning_table import TABLE_FILE


def table_on_rebuild(final: str, name: str, files: dict[str, bytes]) -> tuple[dict[str, bytes], list[str], str | None]:
    """For a family about to be written to ``final`` as ``files``: (files to add, top-level names of the old
    folder not to carry, a line saying what happened to the table or None when there was nothing to do)."""
    table = os.path.join(final, TABLE_FILE)
    new_index = files[METADATA_FILE]
    old_index = _read(os.path.join(final, METADATA_FILE))
    raw = _read(table)
    if raw is None or old_index == new_index:
        return {}, [], None  # no table, or one still keyed by this very index: carried untouched
    old_sha, new_sha = hashlib.sha256(old_index or b"").hexdigest(), hashlib.sha256(new_index).hexdigest()
    why = _changed(final, old_index, files)
    if why is None:
        restamped, count = _restamp(raw, old_sha, new_sha)
        if restamped is not None:
            return {TABLE_FILE: restamped}, [], (
                f"{name}: kept {TABLE_FILE}: its configs, variants and cubins are unchanged; {count} entries now name "
                f"the new index sha256 {new_sha[:12]}")
        why = "it is not a readable tuning table"
    aside = _free_name(final, f"tuning.stale-{old_sha[:12]}")
    return {aside: raw}, [TABLE_FILE], (
        f"{name}: {TABLE_FILE} was measured on another build ({why}): kept as {aside} and not used; tune again on "
        f"the GPU (tmlr tune {final} --cases FILE.py:func)")


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def _changed(final: str, old_index: bytes | None, files: dict[str, bytes]) -> str | None:
    """Why the old family's table does not fit the new one, or None when only the recorded digests differ."""
    try:
        old = json.loads(old_index or b"")
    except ValueError:
        old = None
    if not isinstance(old, dict) or old.get("kind") != "family" or not isinstance(old.get("variants"), list):
        return "the folder held no family index"
    new = json.loads(files[METADATA_FILE])
    if _without_digests(old) != _without_digests(new):
        return "the family's configs, heuristics or variants changed"
    moved = [v["dir"] for o, v in zip(old["variants"], new["variants"])
             if (o.get("cubin_sha256") or _digests_on_disk(final, o["dir"])) != v["cubin_sha256"]]
    if moved:
        return f"{len(moved)} of {len(new['variants'])} variants have other cubin bytes, e.g. {moved[0]}"
    return None


def _without_digests(doc: dict[str, Any]) -> dict[str, Any]:
    variants = [{k: v for k, v in variant.items() if k != "cubin_sha256"} if isinstance(variant, dict) else variant
                for variant in doc["variants"]]
    return {**doc, "variants": variants}


def _digests_on_disk(final: str, rel: str) -> dict[str, str] | None:
    """arch -> sha256 of the cubin bytes an old variant folder holds (for an index that records none)."""
    if not isinstance(rel, str) or ".." in rel.split("/"):
        return None
    meta = _read(os.path.join(final, rel, METADATA_FILE))
    try:
        doc = json.loads(meta or b"")
        out = {}
        for variant in doc["variants"]:
            cubin = _read(os.path.join(final, rel, os.path.basename(variant["cubin"]["file"])))
            if cubin is None:
                return None
            out[variant["target"]["arch"]] = hashlib.sha256(cubin).hexdigest()
        return dict(sorted(out.items()))
    except (ValueError, KeyError, TypeError):
        return None


def _restamp(raw: bytes, old_sha: str, new_sha: str) -> tuple[bytes | None, int]:
    """The table with the old index's entries keyed by the new one (written as `tmlr tune` writes it)."""
    try:
        doc = json.loads(raw)
        entries = doc["entries"]
        count = 0
        for e in entries:
            if e["index_sha256"] == old_sha:
                e["index_sha256"] = new_sha
                count += 1
    except (ValueError, KeyError, TypeError):
        return None, 0
    return (json.dumps(doc, indent=1) + "\n").encode(), count


def _free_name(final: str, stem: str) -> str:
    name, n = f"{stem}.json", 1
    while os.path.lexists(os.path.join(final, name)):
        n += 1
        name = f"{stem}-{n}.json"
    return name
