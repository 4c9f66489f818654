"""The served kernels of one artifacts folder, and what a launch of a ``@triton.jit`` function does under
``tmlr_runtime.serve``: the artifacts built from that very function (its module's attribute, from an unchanged
source file) launch it, the most specialized that accepts the call first; a launch none of them serves is an
:class:`UnservedKernelError` (mode "strict") or goes to Triton's JIT with a warning and a pending spec line
(mode "fallback"). Shared by the hooks on Triton's classes (triton_hooks.py) and the stand-in (stand_in.py)."""
from __future__ import annotations

import functools
import hashlib
import json
import os
import sys
import threading
import warnings
from typing import Any, Callable

from ..errors import UnservedKernelError, UnservedKernelWarning
from ..artifact.serve_index import ServedEntry
from ..family.choose import specialization as specialized
from ..launch import faking
from ..launch.kernel import Kernel
from .fast import NOT_THIS_SPECIALIZATION, chain, config_call, general_route, heuristics, trying, with_configs, with_heuristics


class Served:
    """The artifacts of one running kernel, loaded on its first launch: ``outer``, the families that apply its
    @triton.autotune / @triton.heuristics themselves (called as the outermost wrapper is), and ``inner``, the
    rest (called as the @triton.jit function is), each list most specialized first."""

    def __init__(self, name: str, directory: str, entries: list[ServedEntry], stale: list[str], tuning: str) -> None:
        self.name, self.directory, self.entries, self.stale, self.tuning = name, directory, entries, stale, tuning
        self._loaded: tuple[list[tuple[str, Any]], list[tuple[str, Any]]] | None = None

    def loaded(self) -> tuple[list[tuple[str, Any]], list[tuple[str, Any]]]:
        """(outer, inner): each a list of (artifact, loaded kernel), loaded at the first call."""
        if self._loaded is None:
            outer, inner = [], []
            for e in self.entries:
                k = Kernel.load(os.path.join(self.directory, e.artifact), tuning=self.tuning)
                index = getattr(k, "index", None)  # a KernelFamily's
                (outer if index is not None and (index.autotune or index.heuristics) else inner).append((e.artifact, k))
            inner.sort(key=lambda ak: -sum(map(specialized, getattr(ak[1], "signature", ()))))
            self._loaded = outer, inner
        return self._loaded

    @property
    def wraps(self) -> bool:
        return bool(self.loaded()[0])

    def launch(self, level: int, grid: Any, args: tuple[Any, ...], kwargs: dict[str, Any], reasons: list[str]) -> bool:
        """Launch with the first artifact of ``level`` (0: outer, 1: inner) that takes the call; else False, with each
        artifact's refusal added to ``reasons``."""
        for artifact, kernel in self.loaded()[level]:
            try:
                kernel(grid, *args, **kwargs)
                return True
            except NOT_THIS_SPECIALIZATION as e:
                reasons.append(f"artifact {artifact}: {e}")
        return False


class Server:
    """What ``tmlr_runtime.serve(...)`` returns: the folder's served kernels; ``close()`` undoes the hooks."""

    def __init__(self, directory: str, entries: list[ServedEntry], mode: str, pending_spec: str | None,
                 tuning: str = "tune") -> None:
        self.directory, self.entries, self.mode, self.pending_spec, self.tuning = directory, entries, mode, pending_spec, tuning
        self.jit_types: tuple[type, ...] = ()  # Triton's JITFunction, or the stand-in's: where unwrapping stops
        # Kernel objects are keyed by id(), never hashed: Triton 3.5+ hashes a JITFunction by its cache_key (its source
        # parsed the first time, a lock each time). _kept holds each object keyed, so that no other takes its id.
        self._kept: dict[int, Any] = {}
        self._served: dict[int, Served] = {}  # running @triton.jit function -> its artifacts
        self.fast: dict[int, Callable[..., Any]] = {}  # kernel object -> what its kernel[grid] binds to grid (fast.py)
        self._general: set[int] = set()  # kernel objects whose kernel[grid] goes the general route (bind)
        self._warned: set[tuple[str, str]] = set()  # (kernel, specialization) of each fallback warned about
        self._written: set[str] = set()  # the pending spec lines this process wrote
        self._lock = threading.Lock()
        self._sums: dict[str, str | None] = {}
        self._undo: list[Callable[[], None]] = []

    # -- which artifacts serve a running kernel ---------------------------------------------------------------------
    def innermost(self, obj: Any) -> Any:
        """The @triton.jit function under @triton.autotune / @triton.heuristics wrappers (each has ``.fn``)."""
        while obj is not None and not isinstance(obj, self.jit_types) and hasattr(obj, "fn"):
            obj = obj.fn
        return obj

    def served(self, jit: Any) -> Served:
        found = self._served.get(id(jit))
        if found is None:
            with self._lock:
                found = self._served.setdefault(self._keep(jit), self._resolve(jit))
        return found

    def _keep(self, obj: Any) -> int:
        self._kept[id(obj)] = obj
        return id(obj)

    def _resolve(self, jit: Any) -> Served:
        """The entries whose module attribute is this very kernel (or a wrapper of it), less those whose source file
        changed since the build. A module not imported under its recorded name (a script run as __main__, a folder
        imported as a namespace package) is the kernel's own module when its file has the recorded name."""
        fn = jit.fn
        own = sys.modules.get(fn.__module__)
        fresh, stale = [], []
        for e in self.entries:
            module = sys.modules.get(e.module)
            if module is None and own is not None and os.path.basename(getattr(own, "__file__", "") or "") == os.path.basename(e.source):
                module = own
            if module is None or self.innermost(getattr(module, e.kernel, None)) is not jit:
                continue
            path = getattr(module, "__file__", None)
            now = self._sha256(path) if path and path.endswith(".py") else None  # a sourceless .pyc: nothing to compare
            if now is not None and now != e.source_sha256:
                stale.append(f"artifact {e.artifact} is not served: it was built from {e.source} with sha256 "
                             f"{e.source_sha256[:12]}..., and {path} now has {now[:12]}... (the kernel's file changed since the build)")
            else:
                fresh.append(e)
        return Served(f"{fn.__module__}:{fn.__qualname__}", self.directory, fresh, stale, self.tuning)

    def _sha256(self, path: str) -> str | None:
        if path not in self._sums:
            try:
                with open(path, "rb") as f:
                    self._sums[path] = hashlib.sha256(f.read()).hexdigest()
            except OSError:
                self._sums[path] = None  # nothing to compare (a zip import): served as recorded
        return self._sums[path]

    # -- launches -----------------------------------------------------------------------------------------------------
    def bind(self, obj: Any, grid: Any, *, getitem: Callable[[Any, Any], Any]) -> Any:
        """``obj[grid]`` where ``self.fast`` has no launcher for ``obj`` (``fast.hook_getitem``): the one :meth:`launcher`
        makes, else ``getitem`` (Triton's ``__getitem__``, which calls ``obj.run``: the general route)."""
        launcher = self.launcher(obj)
        return functools.partial(launcher, grid) if launcher is not None else getitem(obj, grid)

    def launcher(self, obj: Any) -> Callable[..., Any] | None:
        """``launcher(grid, *args, **kwargs)`` of ``obj``, made at its first ``obj[grid]`` (the artifacts load then) and
        kept in ``self.fast``; None where its launches go the general route (:meth:`run`)."""
        found = self.fast.get(id(obj))
        if found is None and id(obj) not in self._general:
            found = self._make_launcher(obj)
            if found is None:
                self._general.add(self._keep(obj))
            else:
                self.fast[self._keep(obj)] = found
        return found

    def _make_launcher(self, obj: Any) -> Callable[..., Any] | None:
        jit = self.innermost(obj)
        served = self.served(jit)
        if not served.entries:
            return None
        outer, inner = served.loaded()
        if obj is jit:
            kernels = [k for _, k in inner]
            return (chain(kernels, general_route(jit)) or trying(jit, tuple(kernels))) if kernels else None
        if outer:  # families that apply the wrappers themselves
            return trying(obj, tuple(k for _, k in outer))
        if hasattr(obj, "values"):  # @triton.heuristics: computed, then the launch of the function under it
            below = self.launcher(obj.fn)
            return with_heuristics(obj, below) if below is not None else None
        if isinstance(obj.fn, self.jit_types) and inner:  # @triton.autotune straight over the function: its configs
            return with_configs(obj, tuple(k for _, k in inner))
        return None  # @triton.autotune over another wrapper: the general route (_through)

    def run(self, obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any], grid: Any, warmup: bool,
            fallback: Callable[[], Any] | None) -> Any:
        """A launch of ``obj`` (a @triton.jit function or a wrapper of one) as ``obj[grid](*args, **kwargs)`` makes it;
        ``fallback()`` is Triton's own run of it (None without Triton)."""
        if faking.state.faking:
            return None  # torch_ops.custom_op derives an op's fake on FakeTensors: nothing launches, as a wrap()-ped kernel
        jit = self.innermost(obj)
        served = self.served(jit)
        if warmup and served.entries:
            return None  # nothing to compile: the artifacts load at the first launch
        reasons: list[str] = []
        tried: list[dict[str, Any]] = []
        if not warmup and served.entries:
            if obj is not jit and served.wraps and served.launch(0, grid, args, kwargs, reasons):
                return None
            if self._through(obj, grid, args, dict(kwargs), served, reasons, tried):
                return None
        # the call the @triton.jit function got, where the wrappers made one (heuristics computed); else as made
        return self._unserved(obj, jit, served, args, tried[0] if len(tried) == 1 else kwargs, reasons, fallback)

    def _through(self, obj: Any, grid: Any, args: tuple[Any, ...], kwargs: dict[str, Any], served: Served,
                 reasons: list[str], tried: list[dict[str, Any]]) -> bool:
        """The call through the Python of the wrappers down to the @triton.jit function, as Triton runs it: each
        @triton.heuristics value computed, the first @triton.autotune config an artifact serves (nothing to
        benchmark: the recorded configs are those the workload's autotuning chose)."""
        if isinstance(obj, self.jit_types):
            tried.append(kwargs)
            return served.launch(1, grid, args, kwargs, reasons)
        if hasattr(obj, "values"):  # Heuristics
            heuristics(obj, args, kwargs)
            return self._through(obj.fn, grid, args, kwargs, served, reasons, tried)
        for config in obj.configs:  # Autotuner
            given = {**kwargs, **config_call(config)}
            if getattr(config, "pre_hook", None) is not None:
                config.pre_hook({**dict(zip(obj.arg_names, args)), **given})
            if self._through(obj.fn, grid, args, given, served, reasons, tried):
                return True
        return False

    def _unserved(self, obj: Any, jit: Any, served: Served, args: tuple[Any, ...], kwargs: dict[str, Any], reasons: list[str],
                  fallback: Callable[[], Any] | None) -> Any:
        if self.mode == "fallback" and fallback is not None and obj is not jit:
            return fallback()  # Triton's wrapper runs the @triton.jit function, whose launches say what they compile
        from . import calls  # messages and pending lines only: not imported by serve()

        pairs, options = calls.entries(jit.fn, args, kwargs)
        spec = calls.specialization(pairs, options)
        why = "; ".join(([f"the artifacts built from it refuse it - {'; '.join(reasons)}"] if reasons else []) + served.stale) \
            or f"no artifact of {self.directory} was built from it (it was not recorded)"
        command = calls.record_command()
        facts = dict(kernel=served.name, specialization=spec, command=command)
        text = (f"{served.name}: no artifact serves this launch ({spec}): {why}. Record it with `{command}` and rebuild "
                f"with `tmlr-build --spec SPEC -o {self.directory}`")
        if self.mode == "fallback":
            self._pending(jit.fn, pairs, options)
        if self.mode == "strict" or fallback is None:
            more = "; or serve(..., mode='fallback') to let Triton's JIT compile what is not recorded" if fallback else ""
            raise UnservedKernelError(text + more, **facts)
        if (served.name, spec) not in self._warned:
            self._warned.add((served.name, spec))
            where = f" (and added to {self.pending_spec})" if self.pending_spec else ""
            warnings.warn(UnservedKernelWarning(f"{text}; Triton's JIT compiles it now{where}", **facts), stacklevel=4)
        return fallback()

    def _pending(self, fn: Any, pairs: list[tuple[str, str]], options: dict[str, Any]) -> None:
        """One line of the pending spec (JSON lines, each a spec's kernel entry) per kernel and specialization."""
        from . import calls

        line = json.dumps(calls.spec_entry(fn, pairs, options), sort_keys=True, default=str)
        with self._lock:
            if line in self._written or self.pending_spec is None:
                return
            self._written.add(line)
        try:
            with open(self.pending_spec, "a", encoding="utf-8") as f:
                f.write(line + "\n")
        except OSError as e:
            warnings.warn(UnservedKernelWarning(f"{self.pending_spec}: cannot append the pending spec line {line} ({e})",
                                                kernel=f"{fn.__module__}:{fn.__qualname__}"), stacklevel=5)

    # -- the hooks ----------------------------------------------------------------------------------------------------
    def close(self) -> None:
        """Undo what serve() did (Triton's methods back, the stand-in's import hook off); launches go to Triton again."""
        while self._undo:
            self._undo.pop()()
        from . import _forget  # serving/__init__: current() is None again

        _forget(self)

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Server({self.directory!r}, mode={self.mode!r}, kernels={len(self.entries)})"
