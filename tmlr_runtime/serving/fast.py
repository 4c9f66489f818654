"""The steady-state path of a served launch: ``kernel[grid](*args, **kwargs)`` once the kernel's artifacts are loaded
runs no Python of the server (docs/serving.md, "Steady-state launches").

``kernel[grid]`` of a @triton.jit function (Triton's class or the stand-in's: :func:`hook_getitem`) returns its first
artifact bound to ``grid``, as ``Kernel.__getitem__`` does: a :class:`ServedKernel`, which hands a call it refuses for
its specialization to the next artifact, and the last to the general route (``Server.run``: every artifact tried again
for the reasons, then the strict error or Triton's JIT). A wrapper (@triton.autotune / @triton.heuristics) built as a
family gets a launcher that tries its families in order (:func:`trying`); a @triton.heuristics wrapper over plain
artifacts computes its values, then launches as the function under it does (:func:`with_heuristics`); an
@triton.autotune wrapper straight over one adds each config's values until an artifact takes the call
(:func:`with_configs`); other wrappers go the general route (Server._through)."""
from __future__ import annotations

import functools
import threading
from typing import Any, Callable

from ..errors import (ConstexprMismatchError, DescriptorArgumentError, LaunchOptionMismatchError, NoCompatibleVariantError,
                      PointerArgumentError, ScalarArgumentError)
from ..launch import compiled, faking
from ..launch.execute import launch
from ..launch.kernel import Kernel

# What an artifact answers to a call of another specialization (Triton's JIT would compile one for it): the next
# artifact is tried. Any other error (argument count, grid, stream, driver) is the call's and is raised as it is.
NOT_THIS_SPECIALIZATION = (ConstexprMismatchError, LaunchOptionMismatchError, PointerArgumentError, ScalarArgumentError,
                           DescriptorArgumentError, NoCompatibleVariantError)

Launcher = Callable[..., Any]  # launcher(grid, *args, **kwargs): what kernel[grid] binds to the grid


def general_route(obj: Any) -> Launcher:
    """The general route of ``obj``'s launches as a launcher: ``obj.run`` (hooked: Server.run, every artifact asked again
    for the reasons, then the strict error or Triton's JIT)."""
    def route(grid: Any, *args: Any, **kwargs: Any) -> Any:
        return obj.run(*args, grid=grid, warmup=False, **kwargs)
    return route


def _launch_or_pass_on(kernel: ServedKernel, grid: Any, *args: Any, **kwargs: Any) -> Any:
    """A ServedKernel's Python executor: execute.launch's, or ``kernel.refused`` for a call of another specialization."""
    try:
        return launch(kernel, grid, *args, **kwargs)
    except NOT_THIS_SPECIALIZATION:
        pass
    return kernel.refused(grid, *args, **kwargs)  # outside the except block: its error is no consequence of this refusal


class ServedKernel(Kernel):
    """A plain artifact of a running @triton.jit function as ``kernel[grid](...)`` launches it: a :class:`Kernel` of the
    same artifact (its checks, the plans its first load made, and a compiled executor of its own, so that no Python
    runs on a call the executor finishes), except that a call it refuses for its specialization goes on to ``refused``
    instead of raising."""

    _python = staticmethod(_launch_or_pass_on)
    __call__ = compiled.method("_compiled", _launch_or_pass_on)

    def __init__(self, kernel: Kernel, refused: Launcher) -> None:
        self.refused = refused
        self.__dict__.update(kernel.__dict__)  # its plans (one per context), which a first launch made: not made again
        self._lock = threading.Lock()
        self._contexts = dict(kernel._contexts)
        self._executors = {handle: compiled.executor(plan, self._python) for handle, plan in self._contexts.items()}
        self._plan_for_current()


def chain(kernels: list[Any], route: Launcher) -> Launcher | None:
    """``kernels`` (loaded artifacts, in the order they are tried) as ServedKernels, each passing a refused call on to
    the next and the last to ``route``: the first's launcher (its bound ``__call__``: called as a method, straight
    into its compiled executor, where calling the kernel goes through its class's ``__call__`` slot first); None
    where one is no plain Kernel (a family, tuple parameters)."""
    if not kernels or any(type(k) is not Kernel for k in kernels):
        return None
    after = route
    for k in reversed(kernels):
        after = ServedKernel(k, after).__call__
    return after


def trying(obj: Any, kernels: tuple[Any, ...]) -> Launcher:
    """``launcher(grid, *args, **kwargs)``: the first of ``kernels`` that takes the call, else the general route; for
    kernels that cannot chain (families). The compiled path's ``Trying`` does the same from C."""
    route = general_route(obj)
    if compiled.enabled:  # bound __call__s, as chain's
        return compiled.fastlaunch.Trying(tuple(k.__call__ for k in kernels), NOT_THIS_SPECIALIZATION, route)

    def launcher(grid: Any, *args: Any, **kwargs: Any) -> Any:
        for kernel in kernels:
            try:
                return kernel(grid, *args, **kwargs)
            except NOT_THIS_SPECIALIZATION:
                pass
        return route(grid, *args, **kwargs)  # not in the except block (see _launch_or_pass_on)
    return launcher


def heuristics(obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """Each value of the @triton.heuristics wrapper ``obj`` computed into ``kwargs`` by the model's own function, in
    order, as Triton's wrapper does."""
    for name, heuristic in obj.values.items():
        kwargs[name] = heuristic({**dict(zip(obj.arg_names, args)), **kwargs})


def with_heuristics(obj: Any, below: Launcher) -> Launcher:
    """``launcher(grid, *args, **kwargs)`` of a @triton.heuristics wrapper: its values computed, then ``below``'s launch
    (the function under it: a call no artifact takes goes that function's general route, with the values)."""
    def launcher(grid: Any, *args: Any, **kwargs: Any) -> Any:
        heuristics(obj, args, kwargs)
        return below(grid, *args, **kwargs)
    return launcher


CONFIG_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg")  # a Config's launch options the runtime checks


def config_call(config: Any) -> dict[str, Any]:
    """What a ``triton.Config`` adds to a launch's keywords: its values and the launch options it sets."""
    options = {k: getattr(config, k, None) for k in CONFIG_OPTIONS}
    return {**config.kwargs, **{k: v for k, v in options.items() if v is not None}}


def with_configs(obj: Any, kernels: tuple[Any, ...]) -> Launcher | None:
    """``launcher(grid, *args, **kwargs)`` of a @triton.autotune wrapper straight over a @triton.jit function served
    by ``kernels`` (its artifacts, most specialized first): each config's keywords added to the call, the first config
    an artifact takes launching, as the general route's (Server._through) - except that the config that launched last
    is tried first (Triton's autotuner, too, keeps the config it chose), so that a steady state refuses nothing. A call
    none takes goes the general route. None where a config has a pre_hook: the general route runs it."""
    if any(getattr(c, "pre_hook", None) is not None for c in obj.configs):
        return None
    configs = [config_call(c) for c in obj.configs]
    calls = tuple(k.__call__ for k in kernels)  # bound __call__s, as chain's
    route = general_route(obj)
    order = [configs]  # the configs in the order tried: the one that launched last first

    def launcher(grid: Any, *args: Any, **kwargs: Any) -> Any:
        tried = order[0]
        for config in tried:
            given = {**kwargs, **config}
            for call in calls:
                try:
                    result = call(grid, *args, **given)
                except NOT_THIS_SPECIALIZATION:
                    continue
                if config is not tried[0]:
                    order[0] = [config, *(c for c in configs if c is not config)]
                return result
        return route(grid, *args, **kwargs)  # not in an except block (see _launch_or_pass_on)
    return launcher


def hook_getitem(server: Any, cls: type) -> None:
    """``obj[grid]`` of ``cls``'s kernel objects: ``partial(launcher, grid)``, the launcher being
    ``server.fast[id(obj)]`` (:func:`chain`'s, :func:`trying`'s, ...), else what ``server.bind``
    gives; ``server.close()`` puts the method back. The compiled path's ``Getitem`` does the same from C."""
    had = "__getitem__" in cls.__dict__
    original = cls.__getitem__  # type: ignore[attr-defined]
    bind = functools.partial(server.bind, getitem=original)
    if compiled.enabled:
        hook = compiled.fastlaunch.Getitem(server.fast, bind, faking.state, faking.nothing)
    else:
        hook = _python_getitem(server.fast, bind)
    cls.__getitem__ = hook  # type: ignore[attr-defined]
    server._undo.append(lambda: setattr(cls, "__getitem__", original) if had else delattr(cls, "__getitem__"))


def _python_getitem(fast: dict[int, Launcher], bind: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    partial, key, state, nothing = functools.partial, id, faking.state, faking.nothing

    def __getitem__(obj: Any, grid: Any) -> Any:
        if state.faking:  # torch_ops.custom_op derives a fake on FakeTensors: no launch (a launch would read no memory)
            return nothing
        launcher = fast.get(key(obj))
        return partial(launcher, grid) if launcher is not None else bind(obj, grid)
    return __getitem__
