"""Which autotune config a key gets: the shipped table, the user's tuning cache, benchmarks, fallbacks (the modes
and fallbacks: docs/variants.md, "Autotune")."""
from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import warnings
from typing import Any, Iterator

from .. import driver
from ..artifact import locked_file
from .modes import check_mode
from ..artifact.tuning_table import CACHE_KIND, TABLE_FILE, Key, entry, file_error, read_entries, table_doc
from ..errors import SchemaError, TuningCacheWarning, TuningFileError, UnseenKeyError, short_repr



def cache_dir() -> str:
    """``$TMLR_CACHE_DIR``, else ``$XDG_CACHE_HOME/tmlr``, else ``~/.cache/tmlr``."""
    explicit = os.environ.get("TMLR_CACHE_DIR")
    if explicit:
        return explicit
    return os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "tmlr")


def cache_path(index_sha256: str) -> str:
    return os.path.join(cache_dir(), "tuning", f"{index_sha256}.json")


def choices(entries: list[dict[str, Any]], device: str, index_sha256: str) -> dict[Key, int]:
    """key -> config of the entries for this device and family index."""
    return {tuple(e["key"]): e["config"] for e in entries if e["device"] == device and e["index_sha256"] == index_sha256}


@contextlib.contextmanager
def _locked(path: str) -> Iterator[None]:
    """The lock of ``path + ".lock"`` for the block (cooperating tmlr processes; :mod:`..artifact.locked_file`).
    What the file system refuses, here or in the block (folder, lock, temp file, replace), raises
    :class:`TuningFileError`."""
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with locked_file.locked(path + ".lock"):
            yield
    except OSError as e:
        raise file_error(path, e, "written", "nothing there was changed; write the table where you may "
                         "(`tmlr tune --out PATH`) or make its folder writable") from None


def write_entries(path: str, name: str, new: list[dict[str, Any]], configs: int) -> None:
    """Merge ``new`` into the file at ``path`` (an entry of the same device, index and key is replaced):
    under the lock, read, merge and write the file whole (:func:`..artifact.locked_file.replace`), so readers see
    the old or the new file whole and writers from several processes lose nothing (:class:`TuningFileError` when
    the file system refuses)."""
    with _locked(path):
        try:
            old = read_entries(path, configs)
        except SchemaError:
            old = []  # a damaged table or cache is rewritten rather than kept failing, its bytes kept aside
            keep_aside(path)
        ident = lambda e: (e["device"], e["index_sha256"], json.dumps(e["key"]))  # noqa: E731
        merged = {ident(e): e for e in old}
        merged.update((ident(e), e) for e in new)
        locked_file.replace(path, json.dumps(table_doc(name, list(merged.values())), indent=1) + "\n")


def check_writable(path: str) -> None:
    """Raise :class:`TuningFileError` now when the folder or lock of ``path`` cannot be written (before
    ``tmlr tune`` spends minutes benchmarking what it could not keep)."""
    with _locked(path):
        pass


def keep_aside(path: str) -> str:
    """Move a table that cannot be read to ``<stem>.unreadable-<12 hex of its sha256>.json`` beside it
    (a table can only be remade on the GPU: never dropped); returns the new path."""
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()[:12]
    aside = f"{os.path.splitext(path)[0]}.unreadable-{digest}.json"
    os.replace(path, aside)
    return aside


def keep_damaged_aside(path: str, configs: int, kind: str | None = None) -> tuple[list[dict[str, Any]], str | None]:
    """A file that :func:`read_entries` found damaged, read again under the lock: (its entries, None) when another
    process rewrote it meanwhile, else ([], where :func:`keep_aside` moved it). :class:`TuningFileError` when the
    file system refuses the lock or the move."""
    with _locked(path):
        try:
            return read_entries(path, configs, kind=kind), None
        except SchemaError:
            return [], keep_aside(path)


def _distance(a: Key, b: Key) -> float | None:
    """log2 distance over the numbers of two keys whose other parts are equal; None if they are not comparable."""
    if len(a) != len(b):
        return None
    total = 0.0
    for x, y in zip(a, b):
        numbers = isinstance(x, (int, float)) and isinstance(y, (int, float)) and not isinstance(x, bool) and not isinstance(y, bool)
        if numbers:
            total += abs(math.log2(1 + abs(x)) - math.log2(1 + abs(y)))
        elif x != y:
            return None
    return total


def nearest(key: Key, known: dict[Key, int]) -> Key | None:
    """The known key closest to ``key`` (first of equals), or None when none is comparable."""
    best, best_d = None, math.inf
    for k in known:
        d = _distance(key, k)
        if d is not None and d < best_d:
            best, best_d = k, d
    return best


class Tuner:
    """The config choices of one family on one device: ``memory`` is what calls look up first."""

    def __init__(self, name: str, directory: str, index_sha256: str, configs: int, device: str, tuning: str, fallback: str,
                 stats: dict[str, os.stat_result | None] | None = None) -> None:
        """``stats`` gets the stat of the shipped table (None when there is none), for the load cache."""
        check_mode(tuning, fallback)
        self.name, self.sha256, self.configs, self.device = name, index_sha256, configs, device
        self.mode, self.fallback = tuning, fallback
        self.table_path = os.path.join(directory, TABLE_FILE)
        self.table = choices(read_entries(self.table_path, configs, stats), device, index_sha256)
        self._cache: dict[Key, int] | None = None
        self.memory: dict[Key, int] = {}
        self.cache_usable = tuning != "strict"  # False too once the file system refused the cache file

    def cache(self) -> dict[Key, int]:
        """The cache file's choices for this family and device ({} in strict mode or when unreadable), read once."""
        if self._cache is None:
            found: list[dict[str, Any]] = []
            if self.cache_usable:
                try:
                    found = read_entries(cache_path(self.sha256), self.configs, kind=CACHE_KIND)
                except TuningFileError as e:
                    self._unusable(e)
                except SchemaError as e:
                    found = self._damaged(e)
            self._cache = choices(found, self.device, self.sha256)
        return self._cache

    def _damaged(self, e: SchemaError) -> list[dict[str, Any]]:
        """A cache cut short by a crash or written by something else never stops a launch: it is kept aside
        (:func:`keep_aside`, never deleted) and a new one is written in its place; the entries found instead."""
        path = cache_path(self.sha256)
        try:
            found, aside = keep_damaged_aside(path, self.configs, CACHE_KIND)
        except TuningFileError as refused:  # a read-only cache: the damaged file stays, unused
            self._unusable(refused, f"is damaged ({e}) and cannot be moved aside")
            return []
        if aside is not None:
            warnings.warn(TuningCacheWarning(
                f"{self.name}: the tuning cache is damaged ({e}); it was kept aside as {aside}, and launches go on "
                "without it (new choices go into a new cache file)", path), stacklevel=2)
        return found

    def _unusable(self, e: TuningFileError, what: str = "cannot be used") -> None:
        """The cache file cannot be read or written here (read-only container, a file where its folder
        should be...): choices stay in memory for the process, and launches go on. Warned once per cache folder."""
        self.cache_usable = False
        folder, said = cache_dir(), driver.PROCESS.unusable_caches
        if folder not in said:
            said.add(folder)
            warnings.warn(TuningCacheWarning(
                f"{self.name}: the tuning cache {e.path} {what} ({e.reason}); the configs this process "
                "benchmarks are kept in memory only (each new process benchmarks again), and launches go on. Set "
                "TMLR_CACHE_DIR to a writable folder, or ship a table (`tmlr tune`) and load with tuning=\"table\" "
                "to never benchmark. Said once per cache folder", e.path), stacklevel=2)

    def known(self, key: Key) -> int | None:
        """The table's or the cache's config for ``key`` (remembered), else None."""
        config = self.table.get(key)
        if config is None:
            config = self.cache().get(key)
        if config is not None:
            self.memory[key] = config
        return config

    def unseen(self, key: Key) -> int:
        """The fallback's config for a key no table, cache or benchmark gives (remembered)."""
        if self.fallback == "error":
            raise UnseenKeyError(f"{self.name}: no tuned config for autotune key {short_repr(key, 200)} on {self.device} "
                                 f"(tuning={self.mode!r}, fallback='error'); tune it with `tmlr tune` and ship {TABLE_FILE}, "
                                 "or load with tuning='tune' or another fallback ('nearest', 'default')")
        config = 0
        if self.fallback == "nearest":
            known = {**self.cache(), **self.table, **self.memory}
            near = nearest(key, known)
            config = 0 if near is None else known[near]
        self.memory[key] = config
        return config

    def record(self, key: Key, config: int, times_ms: list[float]) -> None:
        """A benchmark's choice: into memory and merged into the cache file (when it can be written)."""
        self.memory[key] = config
        self.cache()[key] = config
        if self.cache_usable:
            try:
                write_entries(cache_path(self.sha256), self.name, [entry(self.device, self.sha256, key, config, times_ms)], self.configs)
            except TuningFileError as e:
                self._unusable(e)
