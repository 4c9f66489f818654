"""Reading an artifact directory: its metadata.json read once, and what it is told by its own fields
(``kind`` and ``schema_version``: a family index, else kernel metadata), then checked by that kind's rules."""
from __future__ import annotations

import hashlib
import os
from typing import Any

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
