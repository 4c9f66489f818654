"""Reading the files of an artifact: each once, its stat kept for the load cache, JSON parsed with typed errors,
and what kind of document a metadata.json is, as its own fields say."""
from __future__ import annotations

import json
import os
from typing import Any

from ..errors import ArtifactError, SchemaError

FAMILY_VERSION = 3  # a family index; kernel metadata is version 1, 2, 4, 5, 7 or 9 (metadata.SCHEMA_VERSIONS)
# 6: the index of a family whose kernel has tuple parameters (its variants say 5). Numbered past the kernel
# metadata's versions so that a runtime without tuple families names the version it cannot read
FAMILY_TUPLE_VERSION = 6
# 8: the index of a family written without the variants that failed to compile (its "failed" list names them; tuple
# parameters or not, its variants say). A runtime that reads only 3 and 6 refuses it naming the version, rather than
# dispatching a call to a variant that is not there
FAMILY_FAILED_VERSION = 8
FAMILY_VERSIONS = (FAMILY_VERSION, FAMILY_TUPLE_VERSION, FAMILY_FAILED_VERSION)
_O_READ = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)


def read_file(path: str, stats: dict[str, os.stat_result] | None = None) -> bytes:
    """The bytes of ``path``; ``stats[path]`` gets the stat of the file they were read from (one open,
    the stat taken before reading: what :class:`Kernel`'s load cache compares later)."""
    fd = os.open(path, _O_READ)
    try:
        st = os.fstat(fd)
        data = os.read(fd, st.st_size + 1)
        if len(data) > st.st_size:  # it grew since the fstat: read on to the end
            data += b"".join(iter(lambda: os.read(fd, 1 << 20), b""))
    finally:
        os.close(fd)
    if stats is not None:
        stats[path] = st
    return data


def read_json(path: str, stats: dict[str, os.stat_result] | None = None) -> tuple[Any, bytes]:
    """The JSON document at ``path`` (an artifact directory's metadata.json) and its bytes, read once;
    ``stats`` as for :func:`read_file`."""
    try:
        raw = read_file(path, stats)
    except (FileNotFoundError, NotADirectoryError):
        directory = os.path.dirname(path)
        if not os.path.isdir(directory):
            raise ArtifactError(f"{directory}: not an artifact directory (it does not exist or is a file); pass the "
                                "directory tmlr-build wrote, e.g. OUT/<kernel_name>", directory) from None
        raise ArtifactError(f"{path}: missing; an artifact directory needs the metadata.json that tmlr-build "
                            "writes beside the cubins - copy the whole artifact directory, or rebuild it with tmlr-build",
                            path) from None
    try:
        return json.loads(raw), raw
    except (ValueError, RecursionError) as e:  # UnicodeDecodeError is a ValueError
        raise SchemaError(f"{path}: not valid JSON ({e}); rebuild the artifact with tmlr-build", path) from None


def is_family(doc: Any) -> bool:
    """Whether a parsed metadata.json is a family index (kind "family", schema version 3, 6 or 8); any other
    document stays the kernel metadata reader's (which names its version)."""
    return type(doc) is dict and doc.get("kind") == "family" and type(doc.get("schema_version")) is int \
        and doc["schema_version"] in FAMILY_VERSIONS
