"""The other source files a Python kernel's code comes from, for its provenance (runs in a compile worker).

``source_sha256`` covers the named file; a @triton.jit helper of another module is inlined into the cubin as well,
so two builds from different helper code would look alike. The helpers are the ones Triton's own cache key
covers: ``JITFunction.cache_key`` runs Triton's ``DependenciesFinder`` over the kernel, which resolves every
called name and hashes each @triton.jit function it reaches (its ``_update_hash``, Triton 3.3 to 3.9). tmlr-build
watches that method to learn which functions they are, and records each one's module with the sha256 of the
module's file (which covers its constants too).
"""
from __future__ import annotations

import hashlib
import inspect
import os
from typing import Any


def other_sources(kernel: Any, source: str) -> list[dict[str, str]]:
    """``[{"module": name, "sha256": hex}]``, sorted by module, of every module but the file ``source`` (absolute) that
    holds the kernel or a @triton.jit function it calls, directly or through others; Triton's own modules are left
    out (``triton_version`` covers them). A module whose file cannot be read is hashed by its functions' sources."""
    modules: dict[str, list[Any]] = {}
    for fn in called_functions(kernel):
        module = fn.fn.__module__ or ""
        path = inspect.getsourcefile(fn.fn) or ""
        if module.split(".")[0] != "triton" and os.path.realpath(path) != os.path.realpath(source):
            modules.setdefault(module, []).append(fn)
    return [{"module": module, "sha256": _digest(fns)} for module, fns in sorted(modules.items())]


def called_functions(kernel: Any) -> list[Any]:
    """The kernel and every @triton.jit function it calls, directly or through others, as Triton's cache key finds
    them. Each one's cached key is computed again (the same value): a cached key would not visit its calls."""
    from triton.runtime import jit

    found = {id(kernel): kernel}
    original = jit.DependenciesFinder._update_hash

    def update_hash(finder: Any, func: Any) -> Any:
        if inspect.isfunction(getattr(func, "fn", None)) and hasattr(func, "cache_key"):
            found.setdefault(id(func), func)
        return original(finder, func)

    jit.DependenciesFinder._update_hash = update_hash
    try:
        visited: set[int] = set()
        while len(visited) < len(found):
            for key, fn in list(found.items()):
                if key not in visited:
                    visited.add(key)
                    fn.hash = None
                    fn.cache_key  # noqa: B018 - computing it visits the calls
    finally:
        jit.DependenciesFinder._update_hash = original
    return list(found.values())


def _digest(fns: list[Any]) -> str:
    path = inspect.getsourcefile(fns[0].fn)
    try:
        with open(path or "", "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return hashlib.sha256("\n".join(sorted(fn.src for fn in fns)).encode()).hexdigest()
