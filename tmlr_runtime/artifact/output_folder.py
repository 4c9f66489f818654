"""The folder ``tmlr-build -o`` writes (one artifact per kernel), met where one artifact was expected: imported by
that error and by the ``tmlr`` command."""
from __future__ import annotations

import os

from ..errors import ArtifactError, TmlrError
from .files import is_family, read_json
from .metadata import METADATA_FILE


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


def tunable_in(found: list[str]) -> list[str]:
    """Those of the artifact folders ``found`` whose metadata.json is a family index with @triton.autotune configs:
    what ``tmlr tune`` takes (a plain artifact, or a family without configs, has nothing to tune)."""
    tunable = []
    for directory in found:
        try:
            doc, _ = read_json(os.path.join(directory, METADATA_FILE))
        except TmlrError:
            continue  # a broken one is no suggestion; tmlr verify names its problem
        if is_family(doc) and doc.get("autotune"):
            tunable.append(directory)
    return tunable


def output_folder_error(directory: str, found: list[str], what: str) -> ArtifactError:
    """The error for an output folder of tmlr-build given where one artifact is needed."""
    shown = ", ".join(found[:8]) + (f" and {len(found) - 8} more" if len(found) > 8 else "")
    return ArtifactError(f"{directory}: the folder tmlr-build -o writes, holding {len(found)} artifact(s): {shown}; not one "
                         f"artifact: {what}", directory)
