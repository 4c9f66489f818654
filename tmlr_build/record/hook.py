"""Where the recorder meets Triton: ``JITFunction.run`` (every launch, also under @autotune / @heuristics) and
``Autotuner.run`` (the config chosen per key) are wrapped while a :class:`~.recorder.Recorder` is active.

Kept small and free of Triton at import: the ``sitecustomize`` of ``tmlr-build record`` imports it in every
Python process of the recorded command, most of which may never import Triton; there the wrappers go in when
Triton's package has been imported (a meta path finder wraps its loader), so that such a process pays nothing.
"""
from __future__ import annotations

import atexit
import importlib.abc
import importlib.util
import os
import sys
from typing import Any

ACTIVE: list[Any] = []  # the active Recorders: each launch goes to all
_ORIGINAL: dict[str, Any] = {}  # "jit" / "autotune": Triton's own run methods while they are wrapped


def start(recorder: Any) -> None:
    """Make ``recorder`` active: wrap Triton now if it is imported, else when it is."""
    ACTIVE.append(recorder)
    if "triton" in sys.modules:
        _wrap()
    elif not any(isinstance(f, _AfterTriton) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterTriton())


def stop(recorder: Any) -> None:
    """Deactivate ``recorder``; Triton's methods are given back when no recorder is left."""
    if recorder in ACTIVE:
        ACTIVE.remove(recorder)
    if not ACTIVE:
        _unwrap()
        sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _AfterTriton)]


def record_process(path: str) -> None:
    """Record this whole process into the spec ``path`` (what ``tmlr-build record``'s sitecustomize calls)."""
    from .recorder import Recorder

    recorder = Recorder(path, quiet=os.environ.get("TMLR_RECORD_QUIET") == "1")
    start(recorder)
    atexit.register(recorder.write)


def _run(self: Any, *args: Any, **kwargs: Any) -> Any:
    call = {k: v for k, v in kwargs.items() if k not in ("grid", "warmup")}
    for recorder in list(ACTIVE):
        recorder.observe(self, args, call)
    return _ORIGINAL["jit"](self, *args, **kwargs)


def _autotune_run(self: Any, *args: Any, **kwargs: Any) -> Any:
    out = _ORIGINAL["autotune"](self, *args, **kwargs)
    for recorder in list(ACTIVE):
        recorder.autotuned(self, args, kwargs)
    return out


def _classes() -> dict[str, tuple[Any, Any]]:
    from triton.runtime.autotuner import Autotuner
    from triton.runtime.jit import JITFunction

    return {"jit": (JITFunction, _run), "autotune": (Autotuner, _autotune_run)}


def _wrap() -> None:
    for name, (cls, wrapper) in _classes().items():
        if name not in _ORIGINAL:
            _ORIGINAL[name] = cls.run
            cls.run = wrapper


def _unwrap() -> None:
    if not _ORIGINAL:
        return
    for name, (cls, wrapper) in _classes().items():
        if name in _ORIGINAL and cls.__dict__.get("run") is wrapper:  # (else another wrapper calls ours: keep it working)
            cls.run = _ORIGINAL.pop(name)


class _AfterTriton(importlib.abc.MetaPathFinder):
    """Wraps Triton's methods once the ``triton`` package has been imported (its ``__init__`` imports both).

    It stays on ``sys.meta_path`` until Triton's ``__init__`` has run, not only until the first ``find_spec``: code
    that probes for Triton without importing it (torch does, ``importlib.util.find_spec("triton")``) would otherwise
    take the patched spec away, and the real import would get a fresh, unwrapped loader."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "triton":
            return None
        at = sys.meta_path.index(self)
        del sys.meta_path[at]
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(at, self)
        loader = getattr(spec, "loader", None)
        if loader is not None and hasattr(loader, "exec_module"):
            run = loader.exec_module

            def exec_then_wrap(module: Any) -> None:
                run(module)
                sys.meta_path[:] = [f for f in sys.meta_path if f is not self]
                if ACTIVE:
                    _wrap()

            loader.exec_module = exec_then_wrap
        return spec
