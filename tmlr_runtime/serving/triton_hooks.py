"""Serving with Triton installed: the ``run`` of Triton's ``JITFunction``, ``Autotuner`` and ``Heuristics`` (what
``kernel[grid](...)`` calls) hands each launch to the server first; Triton's own ``run`` is called only for what the
server lets fall back. Imported by ``serve()`` alone, which imports Triton for it."""
from __future__ import annotations

from typing import Any, Callable

from . import fast
from .server import Server


def install(server: Server) -> None:
    """Patch the classes (every kernel object, made before or after, takes the patched ``run``); ``server.close()``
    puts Triton's methods back."""
    from triton.runtime import autotuner, jit

    server.jit_types = (jit.JITFunction,)
    _patch(server, jit.JITFunction, "run", _jit_run)
    _patch(server, autotuner.Autotuner, "run", _wrapper_run)
    _patch(server, autotuner.Heuristics, "run", _wrapper_run)
    for cls in (jit.JITFunction, autotuner.Autotuner, autotuner.Heuristics):
        fast.hook_getitem(server, cls)
    if "get_benchmarker" in autotuner.Autotuner.__init__.__code__.co_names:
        _patch(server, autotuner.Autotuner, "__init__", _no_driver_at_decoration)


def _patch(server: Server, cls: type, name: str, make: Callable[[Server, Any], Any]) -> None:
    original = cls.__dict__[name]
    setattr(cls, name, make(server, original))
    server._undo.append(lambda: setattr(cls, name, original))


def _no_driver_at_decoration(server: Server, original: Any) -> Any:
    """Triton 3.3's ``@triton.autotune`` asks the active driver for its benchmarker when it decorates, which builds
    Triton's driver module with the host compiler into the cache directory: it is asked when a benchmark runs
    instead (a served kernel never benchmarks in Triton)."""
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if kwargs.get("do_bench") is None:
            kwargs["do_bench"] = _benchmark
        original(self, *args, **kwargs)
    return __init__


def _benchmark(*args: Any, **kwargs: Any) -> Any:
    from triton.runtime.driver import driver

    return driver.active.get_benchmarker()(*args, **kwargs)


def _jit_run(server: Server, original: Any) -> Any:
    def run(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
        return server.run(self, args, kwargs, grid, warmup,
                          lambda: original(self, *args, grid=grid, warmup=warmup, **kwargs))
    run.__wrapped__ = original  # type: ignore[attr-defined]
    return run


def _wrapper_run(server: Server, original: Any) -> Any:
    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        grid, warmup = kwargs.pop("grid", None), kwargs.pop("warmup", False)
        return server.run(self, args, kwargs, grid, warmup,
                          lambda: original(self, *args, grid=grid, warmup=warmup, **kwargs))
    run.__wrapped__ = original  # type: ignore[attr-defined]
    return run
