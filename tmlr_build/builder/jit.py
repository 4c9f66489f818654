"""``tmlr_build.jit``: a drop-in for ``@triton.jit`` that builds through tmlr-build and launches with tmlr_runtime.

``kernel[grid](*args, ttgir_dir=D)`` builds ``D/<kernel>.ttgir`` (any of ttir/ttgir/llir/ptx/cubin) with the
call's specialization; without a ``*_dir`` it builds the Python source. Artifacts live under a content-keyed
cache (``$TMLR_CACHE_DIR`` or ``~/.cache/tmlr``): an edited input file changes the key, so the next call
rebuilds without a restart, and an unchanged one is loaded from memory.
"""
from __future__ import annotations

import hashlib
import inspect
import json
import os
from dataclasses import replace
from typing import Any, Callable

from ..common.arch import call_target
from ..common.errors import InputError, UsageError
from .build import BuildConfig, build
from .jit_specialize import Specialization, specialize
from .sources import request

DIR_KWARGS = {"ttir_dir": "ttir", "ttgir_dir": "ttgir", "llir_dir": "llir", "ptx_dir": "ptx", "cubin_dir": "cubin"}
# Files that change what a stage input builds (see sources.make_jobs): hashed with the input.
_SIDECARS = (".json", ".tmlr.json")


def cache_root() -> str:
    return os.path.abspath(os.path.expanduser(os.environ.get("TMLR_CACHE_DIR") or "~/.cache/tmlr"))


def _current_capability() -> int:
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None and torch.cuda.is_available():
        major, minor = torch.cuda.get_device_capability()
        return major * 10 + minor
    raise UsageError("no CUDA device to build for: pass arch=<capability> (e.g. arch=90) to the call")


class JitKernel:
    """What ``@tmlr_build.jit`` returns; ``kernel[grid](...)`` or ``kernel.build_only(...)``."""

    def __init__(self, fn: Any, isolate: bool = False) -> None:
        import triton

        self.fn = fn if isinstance(fn, triton.runtime.JITFunction) else triton.jit(fn)
        self.__name__ = self.fn.__name__
        # False: a stage file is compiled in this process (builder/in_process.py); True: in a worker process,
        # where a crash of Triton/LLVM on bad IR becomes an error instead of ending this process
        self.isolate = isolate
        self.builds = 0  # how many times a build ran (cache misses), for tests and diagnostics
        self._loaded: dict[str, Any] = {}

    def __getitem__(self, grid: Any) -> Callable[..., Any]:
        return lambda *args, **kwargs: self.run(grid, *args, **kwargs)

    def _input(self, stage_dirs: dict[str, str]) -> tuple[str, str]:
        if len(stage_dirs) > 1:
            raise UsageError(f"{self.__name__}: pass one of {', '.join(DIR_KWARGS)}, not {', '.join(stage_dirs)}")
        if not stage_dirs:
            return inspect.getsourcefile(self.fn.fn) or "", "python"
        (kw, directory), = stage_dirs.items()
        path = os.path.abspath(os.path.join(os.path.expanduser(directory), f"{self.__name__}.{DIR_KWARGS[kw]}"))
        if not os.path.isfile(path):
            raise InputError(f"{path}: no such file ({kw}={directory!r}); write it there, e.g. with "
                             f"tmlr-build --stop-after {DIR_KWARGS[kw]} --keep-ir, or pass another {kw}")
        return path, DIR_KWARGS[kw]

    def _key(self, path: str, stage: str, spec: Specialization, capability: int) -> str:
        h = hashlib.sha256()
        stem = os.path.splitext(path)[0]
        for p in [path] + ([stem + s for s in _SIDECARS] if stage != "python" else []):
            if os.path.isfile(p):
                with open(p, "rb") as f:
                    h.update(p.encode() + b"\0" + hashlib.sha256(f.read()).digest())
        h.update(json.dumps([self.__name__, stage, spec.signature, spec.options, capability], sort_keys=True,
                            default=repr).encode())
        return h.hexdigest()[:32]

    def build_only(self, *args: Any, **kwargs: Any) -> str:
        """Build (or find in the cache) what ``kernel[grid](*args, **kwargs)`` would launch; return its dir."""
        return self._build(args, kwargs)[0]

    def _build(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[str, Specialization]:
        stage_dirs = {k: kwargs.pop(k) for k in list(kwargs) if k in DIR_KWARGS}
        arch = kwargs.pop("arch", None)
        target = call_target(arch if arch else _current_capability())
        spec = specialize(self.fn, args, kwargs)
        path, stage = self._input(stage_dirs)
        key = self._key(path, stage, spec, target.capability)
        out = os.path.join(cache_root(), key)
        artifact = os.path.join(out, self.__name__)
        if not os.path.isfile(os.path.join(artifact, "metadata.json")):
            source = f"{path}:{self.__name__}" if stage == "python" else path
            # from_call: the build's errors speak of this call's arguments, not of tmlr-build's flags
            req = replace(request(source, signature=spec.signature, options=spec.options, name=self.__name__),
                          from_call=True)
            self.builds += 1
            build([req], BuildConfig(out=out, archs=(target,), progress=False, in_process=not self.isolate))
        return artifact, spec

    def run(self, grid: Any, *args: Any, stream: Any = None, **kwargs: Any) -> Any:
        """Build if needed, load once per cache key, launch through tmlr_runtime."""
        import tmlr_runtime

        artifact, spec = self._build(args, kwargs)
        kernel = self._loaded.get(artifact)
        if kernel is None:
            kernel = self._loaded[artifact] = tmlr_runtime.Kernel.load(artifact)
        return kernel(grid, *spec.values, stream=stream)


def jit(fn: Any = None, *, isolate: bool = False, **triton_kwargs: Any) -> Any:
    """``@tmlr_build.jit`` / ``@tmlr_build.jit(do_not_specialize=[...])``: like ``@triton.jit``.

    ``isolate=True``: build stage files in worker processes too (slower per edit; a Triton/LLVM crash on
    bad IR is reported as CompilerCrashError instead of ending this process)."""
    import triton

    if fn is None:
        return lambda f: JitKernel(triton.jit(f, **triton_kwargs), isolate)
    return JitKernel(triton.jit(fn) if not isinstance(fn, triton.runtime.JITFunction) else fn, isolate)
