"""Reading an artifact directory: its metadata.json read once, and what it is told by its own fields
(``kind`` and ``schema_version``: a family index, else kernel metadata), then checked by that kind's rules."""
from __future__ import annotations

import hashlib
import os
from typing import Any

from ..errors import ArtifactError
from .files import is_family, read_json
from .metadata import METADATA_FILE, ArtifactMetadata

def read(directory: str, stats: dict[str, os.stat_result] | None = None) -> Any:
    """The checked records of ``directory/metadata.json``: an :class:`ArtifactMetadata` or a
    ``FamilyIndex`` (``.kind`` says which); ``stats`` gets its stat (see ``files.read_file``)."""
    path = os.path.join(directory, METADATA_FILE)
    doc, raw = read_json(path, stats)
    if is_family(doc):
        from .family_index import FamilyIndex  # the family rules (and heuristics) only where there are families

        return FamilyIndex.from_dict(doc, directory, hashlib.sha256(raw).hexdigest())
    return ArtifactMetadata.from_dict(doc, path)


def read_index(directory: str, stats: dict[str, os.stat_result] | None = None) -> Any:
    """``directory/metadata.json`` checked as a family index, whatever it says it is (``tmlr verify`` of a family)."""
    from .family_index import FamilyIndex

    doc, raw = read_json(os.path.join(directory, METADATA_FILE), stats)
    return FamilyIndex.from_dict(doc, directory, hashlib.sha256(raw).hexdigest())


def artifacts_in(directory: str) -> list[str]:
    """The artifact folders right under ``directory`` when it holds no metadata.json itself: what
    ``tmlr-build -o DIR`` writes (one folder per kernel), sorted; [] otherwise."""
    if os.path.exists(os.path.join(directory, METADATA_FILE)):
        return []
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return []
    return [os.path.join(directory, name) for name in names if os.path.isfile(os.path.join(directory, name, METADATA_FILE))]


def output_folder_error(directory: str, found: list[str], what: str) -> ArtifactError:
    """The error for an output folder of tmlr-build given where one artifact is needed."""
    shown = ", ".join(found[:8]) + (f" and {len(found) - 8} more" if len(found) > 8 else "")
    return ArtifactError(f"{directory}: the folder tmlr-build -o writes, holding {len(found)} artifact(s): {shown}; not one "
                         f"artifact: {what}", directory)
