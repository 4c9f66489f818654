"""What a rebuild does with the files it finds under the folders it replaces whole (ir/ and v/).

A rebuild may replace only what tmlr-build wrote. Each IR folder it writes holds SHA256SUMS, the sha256
of every file it wrote there; a variant folder v/<vid>/ holds metadata.json, cubins and PTX by name, as
an artifact folder does. Any other file under ir/ or v/ - edited since it was written, or not recorded
(a user's file, or IR an older tmlr-build wrote without SHA256SUMS) - that the new folder does not hold
as it is (the same bytes at the same path, or left in place as an input of this build) is kept: the
files of its folder are copied to ``edited-<12 hex>/`` at the same paths, so that a kept IR file still
has beside it the files a build from it reads, and the build says so. The name is the sha256 of what is
kept: keeping the same files again names the same folder.
"""
from __future__ import annotations

import hashlib
import os
import posixpath
from dataclasses import dataclass
from typing import Iterator, Sequence

from ..common.errors import ArtifactWriteError
from .artifact import IR_DIR, SUMS_FILE, VARIANTS_DIR, built_names, read_sums

EDITED_PREFIX = "edited-"
_SHOWN = 4  # kept files the note names; it counts the rest


@dataclass(frozen=True)
class Kept:
    folder: str  # edited-<12 hex>, relative to the artifact folder
    files: dict[str, str]  # what made each file the user's: "edited" or "not recorded"


def edits_on_rebuild(final: str, name: str, files: dict[str, bytes],
                     carry: Sequence[str]) -> tuple[dict[str, bytes], Kept | None]:
    """For the artifact ``name`` about to be written to ``final`` as ``files`` (``carry`` as
    write_directory takes it): the copies to add to ``files``, and what they keep (None: nothing)."""
    lost: dict[str, str] = {}
    sums: dict[str, dict[str, str] | None] = {}
    ours = built_names(name)
    for rel in _old_files(final):
        folder, base = posixpath.split(rel)
        if base == SUMS_FILE or (_is_variant(folder) and ours(base)):
            continue  # tmlr-build's by name, as metadata.json and the cubins at the top
        data = _read(final, rel)
        if folder not in sums:
            sums[folder] = read_sums(os.path.join(final, folder, SUMS_FILE))
        recorded = (sums[folder] or {}).get(base)
        if recorded == hashlib.sha256(data).hexdigest() or _survives(rel, data, files, carry):
            continue
        lost[rel] = "not recorded" if recorded is None else "edited"
    if not lost:
        return {}, None
    folders = {posixpath.dirname(rel) for rel in lost}
    keep = {rel: _read(final, rel) for rel in _old_files(final) if posixpath.dirname(rel) in folders}
    digest = hashlib.sha256()
    for rel, data in sorted(keep.items()):
        digest.update(f"{rel}\0{len(data)}\0".encode())
        digest.update(data)
    aside = EDITED_PREFIX + digest.hexdigest()[:12]
    return {f"{aside}/{rel}": data for rel, data in keep.items()}, Kept(aside, lost)


def kept_note(name: str, final: str, kept: Kept) -> str:
    """The line the build prints about ``kept``."""
    listed = [f"{rel} ({why})" for rel, why in sorted(kept.files.items())]
    more = len(listed) - _SHOWN
    shown = ", ".join(listed[:_SHOWN]) + (f" and {more} more" if more > 0 else "")
    trees = " and ".join(sorted({rel.split("/")[0] + "/" for rel in kept.files}))
    count = f"{len(listed)} files" if len(listed) > 1 else "1 file"
    as_is = "as they are" if len(listed) > 1 else "as it is"
    return (f"{name}: kept {count} under {trees} that tmlr-build did not write {as_is}, with the files beside "
            f"{'them' if len(listed) > 1 else 'it'}, in {os.path.join(final, kept.folder)}/ at the same paths: {shown}")


def _old_files(final: str) -> Iterator[str]:
    """Relative paths ('/'-separated) of the files under the old artifact's ir/ and v/."""
    for tree in (IR_DIR, VARIANTS_DIR):
        top = os.path.join(final, tree)
        if not os.path.isdir(top) or os.path.islink(top):
            continue
        for here, dirs, names in os.walk(top):
            dirs.sort()
            rel_dir = os.path.relpath(here, final).replace(os.sep, "/")
            yield from (f"{rel_dir}/{n}" for n in sorted(names) if os.path.isfile(os.path.join(here, n)))


def _is_variant(folder: str) -> bool:
    parts = folder.split("/")
    return len(parts) == 2 and parts[0] == VARIANTS_DIR


def _survives(rel: str, data: bytes, files: dict[str, bytes], carry: Sequence[str]) -> bool:
    """Whether the new folder holds ``rel`` as it is: written with the same bytes, or carried in place
    (write_directory carries a folder only where no new file lies in it)."""
    if rel in files:
        return files[rel] == data
    for c in carry:
        inside = rel.startswith(c + "/")
        if rel == c or (inside and not any(k.startswith(c + "/") for k in files)):
            return True
    return False


def _read(final: str, rel: str) -> bytes:
    path = os.path.join(final, rel)
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise ArtifactWriteError(f"{path}: cannot read it ({e.strerror}), and a rebuild keeps every file under ir/ "
                                 "and v/ that tmlr-build did not write as it is; make it readable or move it away "
                                 "(the artifact is unchanged)") from None
