"""A spec entry's "tuning" (the configs Triton chose per autotune key, as ``tmlr-build record`` saw them) written
into the family's ``tuning.json``.

A tuning table is keyed by the sha256 of the family index, which exists only once the family is built; the
recorder cannot know it, so it writes each choice as ``{"device", "key", "config": {config object}}`` and the
build turns it into a table entry here: the config object becomes its index among the configs built (so a spec
that narrows or reorders "configs" still gets the right one), the index sha256 that of the index just written.
An entry the table already has for the same device, index and key is kept as it is: a `tmlr tune` measurement is
not overwritten by a recording.
"""
from __future__ import annotations

import hashlib
import json
import os
from typing import Any, Sequence

from tmlr_runtime import METADATA_FILE
from tmlr_runtime.artifact.tuning_table import TABLE_FILE, entry, table_doc

from .variants import FamilyPlan, config_from_dict


def recorded_table(final: str, name: str, files: dict[str, bytes], drop: Sequence[str], plan: FamilyPlan | None,
                   tuning: Sequence[dict[str, Any]]) -> tuple[bytes | None, list[str]]:
    """The bytes of ``tuning.json`` with the recorded choices added (None: nothing to write), and what to say.

    ``files``: the family folder about to be written (a table :func:`table_on_rebuild` re-stamped is in it);
    ``drop``: the old folder's names that are not carried (the old table when it was set aside)."""
    if plan is None or plan.configs is None:
        return None, [f"{name}: the spec's \"tuning\" is not used: this build is no family of autotune configs"]
    index_sha = hashlib.sha256(files[METADATA_FILE]).hexdigest()
    existing = _existing(final, files, drop)
    if existing is None:
        return None, [f"{name}: {TABLE_FILE} is not a tuning table tmlr-build can read; the spec's \"tuning\" was not "
                      "added to it (move it away and build again)"]
    built = [c.to_json() for c in plan.configs]
    entries = list(existing["entries"])
    have = {(e["device"], e["index_sha256"], json.dumps(e["key"])) for e in entries}
    added, missing = 0, []
    for i, choice in enumerate(tuning):
        config = config_from_dict(choice["config"], f"{name}: \"tuning\"[{i}].config").to_json()
        if config not in built:
            missing.append(json.dumps(choice["key"]))
            continue
        ident = (choice["device"], index_sha, json.dumps(choice["key"]))
        if ident not in have:
            have.add(ident)
            entries.append(entry(choice["device"], index_sha, tuple(choice["key"]), built.index(config)))
            added += 1
    notes = [f"{name}: {TABLE_FILE}: {added} recorded choice(s) of the spec's \"tuning\" added"] if added else []
    if missing:
        notes.append(f"{name}: the spec's \"tuning\" chose a config this build does not have for key(s) "
                     f"{', '.join(missing[:3])}: not added (record again, or add the config to \"configs\")")
    if not added:
        return None, notes
    return (json.dumps(table_doc(existing.get("name", name), entries), indent=1) + "\n").encode(), notes


def _existing(final: str, files: dict[str, bytes], drop: Sequence[str]) -> dict[str, Any] | None:
    """The table the new folder will hold without the recorded choices ({"entries": []} when none); None when
    it cannot be read."""
    raw = files.get(TABLE_FILE)
    if raw is None and TABLE_FILE not in drop:
        try:
            with open(os.path.join(final, TABLE_FILE), "rb") as f:
                raw = f.read()
        except FileNotFoundError:
            raw = None
        except OSError:
            return None
    if raw is None:
        return {"entries": []}
    try:
        doc = json.loads(raw)
    except ValueError:
        return None
    entries = doc.get("entries") if isinstance(doc, dict) else None
    if not isinstance(entries, list) or not all(isinstance(e, dict) and {"device", "index_sha256", "key"} <= set(e)
                                                for e in entries):
        return None
    return doc
