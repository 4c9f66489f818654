"""A family's variants: each sub-artifact's metadata read once and checked against the index."""
from __future__ import annotations

import os
from typing import Any

from .. import driver
from ..abi import format_signature, split_top_level
from ..artifact.family_index import FamilyIndex
from ..artifact.metadata import ArtifactMetadata
from ..errors import IntegrityError
from ..tuples import split_path


class Member:
    """One variant of a family: its sub-artifact's metadata, and its kernel once a call needs it
    (made from that metadata by ``kernel_type``, the ``Kernel`` class, and kept in the load cache)."""

    def __init__(self, number: int, vid: str, config: int | None, meta: ArtifactMetadata, directory: str, checks: bool,
                 kernel_type: Any, stats: dict[str, os.stat_result]) -> None:
        self.number, self.vid, self.config, self.meta, self.directory, self.checks = number, vid, config, meta, directory, checks
        self.signature = format_signature(meta.signature)
        self.constexprs = meta.constexprs
        self._kernel_type, self._stats, self._kernel = kernel_type, stats, None

    @property
    def kernel(self) -> Any:
        if self._kernel is None:
            key = (self.directory, self.checks)
            kernel = driver.PROCESS.cached(key)
            if kernel is None:  # its metadata is read already: only the cubin is read, once
                kernel = self._kernel_type(self.meta, self.directory, checks=self.checks, stats=self._stats)
                driver.PROCESS.remember(key, self._stats, kernel)
            self._kernel = kernel
        return self._kernel


def leaf_params(meta: ArtifactMetadata) -> list[tuple[str, str]]:
    """(name, "runtime" | "constexpr") of each parameter the variant's kernel takes: a tuple's elements by path."""
    return [(p.name, "constexpr" if p.kind == "constexpr" else "runtime") for p in meta.signature]


def _kernel_params(leaves: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The kernel's own parameters, as the index records them, that ``leaves`` make: a tuple is a runtime parameter."""
    out: list[tuple[str, str]] = []
    for name, kind in leaves:
        root, steps = split_path(name)
        if not out or out[-1][0] != root or not steps:
            out.append((root, "runtime" if steps else kind))
    return out


def _names(params: list[tuple[str, str]]) -> str:
    return ", ".join(n for n, _ in params)


def read_members(index: FamilyIndex, checks: bool, kernel_type: Any) -> list[Member]:
    """Every variant's sub-artifact read and checked against the index (its parameters, a tuple's elements alike in
    every variant)."""
    first: list[tuple[str, str]] | None = None
    out = []
    for i, v in enumerate(index.variants):
        directory = os.path.join(index.directory, v.dir)
        stats: dict[str, os.stat_result] = {}
        meta = ArtifactMetadata.read(directory, stats)
        text = format_signature(meta.signature)
        if split_top_level(text) != split_top_level(v.signature):
            raise IntegrityError(f"{directory}: its signature {text!r} differs from the family index's {v.signature!r}; "
                                 "the family directory was changed after the build - rebuild it with tmlr-build", directory)
        if v.cubin_sha256 is not None and {m.arch: m.cubin_sha256 for m in meta.variants} != v.cubin_sha256:
            raise IntegrityError(f"{directory}: its cubins differ from those the family index records (a tuning table or cache "
                                 "keyed by the index would be applied to other bytes); rebuild the family with tmlr-build", directory)
        leaves = leaf_params(meta)
        first = first or leaves
        if leaves != first or _kernel_params(leaves) != list(index.params):
            theirs = _names(list(index.params)) + ("" if first == leaves else f"; its first variant's {_names(first)}")
            raise IntegrityError(f"{directory}: its parameters ({_names(leaves)}) differ from the family's ({theirs}); "
                                 "rebuild the family with tmlr-build", directory)
        out.append(Member(i, v.dir.rstrip("/").rsplit("/", 1)[-1], v.config, meta, directory, checks, kernel_type, stats))
    return out
