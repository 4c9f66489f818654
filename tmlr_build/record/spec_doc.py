"""Merging what a recording saw into a spec document (a dict), keeping everything the user wrote; pure data.

The recorder owns the entries it wrote ("recorded": true), and in them only :data:`OWNED`: their other keys
("arch", "triton", "ptx", "$comment", a "name" you changed, ...) are the user's and kept as they are. An entry
without "recorded": true is the user's and never touched, nor is any top-level key but "kernels" (entries
appended or extended), "not_recorded" (reports added) and "arch" (set once, when the spec has none).
Merging is idempotent: the same recording merged twice gives the same document.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

from .family import Family

OWNED = ("source", "kernel", "signature", "types", "constexprs", "heuristics", "options", "configs", "tuning",
         "module", "qualname", "recorded")
COMMENT = ("written by tmlr-build record (docs/record.md); build with: tmlr-build --spec THIS_FILE -o OUT. "
           "Entries with \"recorded\": true are extended by the next recording; your own entries and keys are kept")


@dataclass
class KernelSeen:
    """One kernel's launches in a recording: where it is, its families, autotune configs and choices."""

    source: str  # as the spec names it: "pkg.ops.norm" or a path relative to the spec's folder
    kernel: str  # its module-level name
    module: str  # the running function's __module__ and __qualname__ (the serving layer's key)
    qualname: str
    configs: list[dict[str, Any]] | None = None  # the @triton.autotune configs, as spec config objects
    families: dict[str, Family] = field(default_factory=dict)
    tuning: dict[str, dict[str, Any]] = field(default_factory=dict)  # json [device, key] -> {"device", "key", "config"}

    def add(self, family: Family) -> bool:
        """Take one launch's family; whether the spec learns anything from it."""
        own = self.families.get(family.key)
        if own is None:
            self.families[family.key] = family
            return True
        return own.merge(family)


def merge(doc: dict[str, Any] | None, kernels: list[KernelSeen], not_recorded: list[dict[str, str]],
          arch: int | None = None) -> dict[str, Any]:
    """``doc`` (a spec document, or None for a new one) with the recording merged in; ``doc`` is not changed."""
    out = json.loads(json.dumps(doc)) if doc is not None else {"$comment": COMMENT, "kernels": []}
    if arch is not None and "arch" not in out:  # the recording GPU's, where the user named none (placed before "kernels")
        out = {**{k: v for k, v in out.items() if k == "$comment"}, "arch": [arch],
               **{k: v for k, v in out.items() if k != "$comment"}}
    entries = out["kernels"]
    for seen in kernels:
        for family in seen.families.values():
            found = _find(entries, seen, family)
            if found is None:
                entries.append(_new_entry(entries, seen, family))
            else:
                _update(found, seen, family)
    reports = out.get("not_recorded", [])
    for item in not_recorded:
        if item not in reports:
            reports.append(item)
    if reports:
        out["not_recorded"] = reports
    return out


def _find(entries: list[Any], seen: KernelSeen, family: Family) -> dict[str, Any] | None:
    """The recorded entry of this kernel that builds this family's kind of launch."""
    for e in entries:
        # a script's kernels all run as __main__: for those the file tells two apart
        if isinstance(e, dict) and e.get("recorded") is True and (e.get("module"), e.get("qualname")) == (
                seen.module, seen.qualname) and (seen.module != "__main__" or e.get("source") == seen.source):
            try:
                if Family.of_entry(e).key == family.key:
                    return e
            except (ValueError, TypeError, AttributeError):
                continue  # an entry edited past what the recorder writes: left as it is
    return None


def _new_entry(entries: list[Any], seen: KernelSeen, family: Family) -> dict[str, Any]:
    name = _free_name(entries, seen.kernel)
    # "name" only where another entry builds an artifact of the kernel's name; the user's thereafter
    return _ordered(_owned(seen, family, None), {"name": name} if name != seen.kernel else {})


def _ordered(owned: dict[str, Any], user: dict[str, Any]) -> dict[str, Any]:
    """An entry's keys: source, kernel and name first, then what it builds, the user's keys, and the recorder's
    marks last."""
    head = {k: owned[k] for k in ("source", "kernel") if k in owned}
    head.update({k: user[k] for k in ("name",) if k in user})
    tail = {k: owned[k] for k in ("module", "qualname", "recorded") if k in owned}
    middle = {k: v for k, v in owned.items() if k not in head and k not in tail}
    return {**head, **middle, **{k: v for k, v in user.items() if k != "name"}, **tail}


def _update(entry: dict[str, Any], seen: KernelSeen, family: Family) -> None:
    """Extend the recorded ``entry`` in place: the recorder's keys anew, the user's kept (after them)."""
    mine = Family.of_entry(entry)
    mine.merge(family)
    new = _owned(seen, mine, entry)
    user = {k: v for k, v in entry.items() if k not in OWNED}
    entry.clear()
    entry.update(_ordered(new, user))


def _owned(seen: KernelSeen, family: Family, old: dict[str, Any] | None) -> dict[str, Any]:
    """The recorder's keys of an entry, in the order a new entry lists them."""
    out: dict[str, Any] = {"source": seen.source, "kernel": seen.kernel, **family.entry()}
    configs = _merged_configs(old.get("configs") if old else None, seen.configs)
    if configs:
        out["configs"] = configs
    tuning = {json.dumps([t["device"], t["key"]]): t for t in (old or {}).get("tuning") or [] if isinstance(t, dict)}
    tuning.update(seen.tuning)
    if tuning:
        out["tuning"] = list(tuning.values())
    out.update({"module": seen.module, "qualname": seen.qualname, "recorded": True})
    return out


def _merged_configs(old: Any, new: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
    """The configs recorded before, then those of this recording they lack (a list of config objects)."""
    kept = list(old) if isinstance(old, list) and all(isinstance(c, dict) for c in old) else []
    for c in new or []:
        if c not in kept:
            kept.append(c)
    return kept or None


def _free_name(entries: list[Any], kernel: str) -> str:
    taken = {artifact_name(e) for e in entries if isinstance(e, dict)}
    name, n = kernel, 1
    while name in taken:
        n += 1
        name = f"{kernel}_{n}"
    return name


def artifact_name(entry: dict[str, Any]) -> str:
    """The artifact folder a spec entry builds (its "name", else its kernel, else its source file's stem)."""
    if "name" in entry:
        return str(entry["name"])
    if "kernel" in entry:
        return str(entry["kernel"])
    source = str(entry.get("source", ""))
    return source.rpartition(":")[2] if ":" in source else os.path.splitext(os.path.basename(source))[0]
