"""A tuning table (``DIR/tuning.json`` shipped with a family, or a user's cache file): its entries, checked by
the artifact rules (``rules``) as ``schema/tuning.schema.json`` says, and the documents the runtime writes."""
from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from ..errors import SchemaError, TuningFileError
from .files import read_file
from .rules import IDENTIFIER, SHA256, Invalid, array, at, check, integer, obj, one_of, string, test

TUNING_SCHEMA_PATH = Path(__file__).with_name("schema") / "tuning.schema.json"
TABLE_FILE = "tuning.json"
TUNING_VERSION = 1
Key = tuple[Any, ...]

_KEY = array(test(lambda v: v is None or isinstance(v, (int, float, str)), "a number, string, bool or null"))
_ENTRY = obj({"device": string(), "index_sha256": SHA256, "key": lambda v: list(_KEY(v)),
              "config": integer(0)},
             {"times_ms": array(test(lambda v: v is None or type(v) in (int, float), "a number or null"))})
_TABLE = obj({"schema_version": one_of((TUNING_VERSION,), str(TUNING_VERSION)), "kind": one_of(("tuning",), '"tuning"'),
              "name": IDENTIFIER, "entries": array(_ENTRY)})


def entry(device: str, index_sha256: str, key: Key, config: int, times_ms: list[float | None] | None = None) -> dict[str, Any]:
    """One table entry; ``times_ms`` (per config, None where it failed) is kept for people, not read."""
    doc: dict[str, Any] = {"device": device, "index_sha256": index_sha256, "key": list(key), "config": config}
    if times_ms is not None:
        doc["times_ms"] = [None if t is None or math.isinf(t) else round(t, 6) for t in times_ms]
    return doc


def table_doc(name: str, entries: list[dict[str, Any]]) -> dict[str, Any]:
    return {"schema_version": TUNING_VERSION, "kind": "tuning", "name": name, "entries": entries}


def _table(configs: int) -> Any:
    def rule(doc: Any) -> tuple[dict[str, Any], ...]:
        entries = _TABLE(doc)["entries"]
        for i, e in enumerate(entries):
            if e["config"] >= configs:
                raise at(at(at(Invalid(f"{e['config']} is not a config index (0..{configs - 1})"), "config"), i), "entries")
        return entries
    return rule


def table_kind(path: str) -> str:
    """What a damaged shipped table ``DIR/tuning.json`` is and how it is made again (its error's last words)."""
    return (f"not a tmlr tuning table - write it again with `tmlr tune {os.path.dirname(path) or '.'} --cases FILE.py:func`, "
            "which keeps the damaged file aside")


CACHE_KIND = "not a tmlr tuning cache"  # a damaged cache is kept aside and rewritten (family/tuning.py): no advice


def read_entries(path: str, configs: int, stats: dict[str, os.stat_result | None] | None = None,
                 kind: str | None = None) -> list[dict[str, Any]]:
    """The checked entries of a table or cache file; [] when it does not exist (``stats[path]``: its stat, or None).
    A damaged file raises :class:`SchemaError` ending in ``kind`` (default: a shipped table's :func:`table_kind`)."""
    kind = kind or table_kind(path)
    try:
        doc = json.loads(read_file(path, stats))  # type: ignore[arg-type]
    except FileNotFoundError:
        if stats is not None:
            stats[path] = None
        return []
    except OSError as e:  # no SchemaError: the bytes may be fine, the file system refused them
        raise file_error(path, e, "read", "make it readable, or move it out of the way") from None
    except (ValueError, RecursionError) as e:
        raise SchemaError(f"{path}: cannot be read as JSON ({e}); {kind}", path) from None
    return list(check(_table(configs), doc, path, kind))


def file_error(path: str, e: OSError, doing: str, advice: str) -> TuningFileError:
    """The typed error of an OS error met reading or writing the table or cache file ``path`` (its folder, lock
    or temp file included: the OS's text names the file it refused)."""
    # os.makedirs says "File exists" of a file where a folder must be
    reason = f"{e.filename} is a file, not a folder" if isinstance(e, FileExistsError) else str(e)
    return TuningFileError(f"{path}: cannot be {doing} ({reason}); {advice}", path, reason, e.errno)
