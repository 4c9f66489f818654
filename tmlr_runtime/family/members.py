"""A family's variants: each sub-artifact's metadata read once and checked against the index."""
from __future__ import annotations

import ast
import os
from typing import Any, Sequence

from .. import driver
from ..abi import Parameter, format_signature, split_top_level
from ..artifact.family_index import FailedVariant, FamilyIndex
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


def failed_params(failed: FailedVariant, leaves: Sequence[tuple[str, str]]) -> list[Parameter] | None:
    """The parameters of a variant that failed to compile, read back from its signature text (one entry per parameter
    the variants' kernels take, ``leaves``, as the index writes a variant's); None where the text does not read so."""
    entries = split_top_level(failed.signature, "([{<")
    if len(entries) != len(leaves):
        return None
    out = []
    for (name, kind), text in zip(leaves, entries):
        if kind == "constexpr":
            try:
                out.append(Parameter(name, "constexpr", value=ast.literal_eval(text)))
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                return None
        else:
            type_, _, hint = text.partition(":")
            out.append(Parameter(name, "equal_to_1" if hint == "1" else "runtime", type_, 16 if hint == "16" else 1))
    return out
