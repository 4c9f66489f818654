"""Serving without Triton: in-memory modules ``triton``, ``triton.language`` (and the few others model code imports)
that hold what model code touches at import time and in its Python wrappers - ``triton.jit``, ``autotune``,
``heuristics``, ``Config``, ``cdiv``, ``next_power_of_2``, ``tl.constexpr``, the ``tl`` dtypes - so that it imports
and its ``kernel[grid](...)`` launches go to the server. Kernel bodies never run.

Only the modules of the served kernels (their packages, or the files the artifacts were built from) and the
prefixes the user names get them: the hook on ``builtins.__import__`` answers their ``import triton`` and no one
else's, and nothing enters ``sys.modules``, so that code probing for a usable Triton (torch before Inductor
compiles, a library choosing its fallback, ``importlib.util.find_spec``, ``importlib.metadata``) finds none."""
from __future__ import annotations

import builtins
import functools
import os
import types
from collections import namedtuple
from typing import Any, Callable, Iterable

from .. import driver
from ..abi import TL_DTYPES, TYPES
from ..artifact.heuristics import cdiv, next_power_of_2
from . import fast
from .server import Server

_PREFIX = "tmlr_runtime.serve's stand-in for Triton"


class _Module(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError(f"{self.__name__}.{name}: {_PREFIX} has no {name} (it holds what model code uses at import "
                             "time and in its Python wrappers; kernel bodies never run); install Triton to run this code")


class _BodyOnly(_Module):
    """``libdevice`` and the like: their functions are called in kernel bodies only, which never run."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _body_only(f"{self.__name__}.{name}")


def _body_only(name: str) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"{name}: called outside a kernel body ({_PREFIX}: kernel bodies never run)")
    call.__name__ = call.__qualname__ = name.rsplit(".", 1)[-1]
    return call


# -- triton.language --------------------------------------------------------------------------------------------
# The classes whose objects a call passes as constexprs (a dtype, a @triton.jit function, tl.constexpr(...)) name as
# their module the one Triton's are of (triton.language..., triton.runtime.jit), which is also where the stand-in's
# modules hold them: tmlr_runtime.objects recognises Triton's objects by their type's module and name without
# importing Triton, and so recognises these by the same rules (a launch takes the stand-in's tl.bfloat16 where the
# artifact was built with Triton's).
class constexpr:
    """``tl.constexpr``: the annotation of a compile-time parameter (and a wrapper of a value, as Triton's)."""

    __module__ = "triton.language"

    def __init__(self, value: Any = None) -> None:
        self.value = value.value if isinstance(value, constexpr) else value

    def __repr__(self) -> str:
        return f"constexpr[{self.value!r}]"


class dtype:
    """A ``tl`` element type: ``tl.float16`` (``str()`` is Triton's short name, ``fp16``)."""

    __module__ = "triton.language"

    def __init__(self, name: str) -> None:
        self.name = name
        self.primitive_bitwidth = _BITS[name]

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"triton.language.{_ATTR[self.name]}"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, dtype) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)

    def is_floating(self) -> bool:
        return self.name.startswith(("fp", "bf"))


class tensor:
    """``tl.tensor``, for annotations; no value of it exists outside a kernel body."""


# triton.language's dtypes (abi.TL_DTYPES, the one table of them): attribute -> (Triton type, bits)
_DTYPES = {attr: (ty, 1 if ty == "i1" else TYPES[ty].size * 8) for attr, ty in TL_DTYPES.values()}
_BITS = {short: bits for short, bits in _DTYPES.values()}
_ATTR = {short: attr for attr, (short, _) in _DTYPES.items()}


# -- triton.runtime.driver: what libraries ask at import time to choose configs for the GPU --------------------------
class GPUTarget(namedtuple("GPUTarget", "backend arch warp_size")):  # collections', not typing's (see elf.Cubin)
    __slots__ = ()
    backend: str
    arch: int  # the capability: 90 for sm_90
    warp_size: int


class _ActiveDriver:
    """``triton.runtime.driver.active``: the current device (tmlr_runtime's driver: the current context's), as
    Triton's CUDA driver describes it; it compiles and benchmarks nothing."""

    def get_current_device(self) -> int:
        driver.current_context()  # device 0's primary context where none is current, as a launch takes
        return driver.current_device()

    def get_current_target(self) -> GPUTarget:
        return GPUTarget("cuda", driver.device_info(self.get_current_device()).capability, 32)

    def get_active_torch_device(self) -> Any:
        import torch  # code that asks for a torch device imports torch itself

        return torch.device("cuda", self.get_current_device())

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"triton.runtime.driver.active.{name}: {_PREFIX} answers get_current_target, "
                             "get_current_device and get_active_torch_device only; install Triton to run this code")


# -- triton: the decorators and their kernel objects -----------------------------------------------------------
class Config:
    def __init__(self, kwargs: dict[str, Any], num_warps: int = 4, num_stages: int = 3, num_ctas: int = 1,
                 maxnreg: int | None = None, pre_hook: Callable[..., Any] | None = None, **_: Any) -> None:
        self.kwargs, self.num_warps, self.num_stages, self.num_ctas = kwargs, num_warps, num_stages, num_ctas
        self.maxnreg, self.pre_hook = maxnreg, pre_hook

    def all_kwargs(self) -> dict[str, Any]:
        options = {"num_warps": self.num_warps, "num_ctas": self.num_ctas, "num_stages": self.num_stages}
        return {**self.kwargs, **options, **({"maxnreg": self.maxnreg} if self.maxnreg is not None else {})}

    def __repr__(self) -> str:
        return f"Config({self.kwargs}, num_warps={self.num_warps}, num_stages={self.num_stages})"


_SERVER: list[Server] = []  # the server of the last install(), which the kernel objects launch through


def _server() -> Server:
    if not _SERVER:
        raise RuntimeError(f"{_PREFIX}: the server was closed, and a kernel made by the stand-in has no Triton to "
                           "launch it; call tmlr_runtime.serve(...) again")
    return _SERVER[-1]


class KernelInterface:
    """``kernel[grid](*args, **kwargs)``: the launch goes to ``run``, as Triton's."""

    def __getitem__(self, grid: Any) -> Callable[..., Any]:
        return lambda *args, **kwargs: self.run(*args, grid=grid, warmup=False, **kwargs)

    def run(self, *args: Any, **kwargs: Any) -> Any:
        grid, warmup = kwargs.pop("grid", None), kwargs.pop("warmup", False)
        return _server().run(self, args, kwargs, grid, warmup, None)

    def warmup(self, *args: Any, grid: Any = None, **kwargs: Any) -> Any:
        return self.run(*args, grid=grid, warmup=True, **kwargs)


class JITFunction(KernelInterface):
    """What ``@triton.jit`` makes of a function: its launches are served; it never compiles."""

    __module__ = "triton.runtime.jit"

    def __init__(self, fn: Callable[..., Any], **options: Any) -> None:
        import inspect

        self.fn, self.options = fn, options
        self.arg_names = list(inspect.signature(fn).parameters)
        self.__name__, self.__qualname__, self.__module__ = fn.__name__, fn.__qualname__, fn.__module__
        self.__doc__, self.__globals__ = fn.__doc__, fn.__globals__

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("Cannot call @triton.jit'd outside of the scope of a kernel")

    def __repr__(self) -> str:
        return f"JITFunction({self.__module__}:{self.__qualname__})"


class Autotuner(KernelInterface):
    def __init__(self, fn: Any, configs: list[Config], key: list[str], **options: Any) -> None:
        self.fn, self.configs, self.keys, self.options = fn, configs or [Config({})], key, options
        self.arg_names = fn.arg_names
        self.base_fn = fn
        while not isinstance(self.base_fn, JITFunction) and hasattr(self.base_fn, "fn"):
            self.base_fn = self.base_fn.fn


class Heuristics(KernelInterface):
    def __init__(self, fn: Any, values: dict[str, Callable[[dict[str, Any]], Any]]) -> None:
        self.fn, self.values, self.arg_names = fn, values, fn.arg_names


def jit(fn: Any = None, **options: Any) -> Any:
    return JITFunction(fn, **options) if fn is not None else lambda f: JITFunction(f, **options)


def autotune(configs: list[Config], key: list[str], **options: Any) -> Any:
    return lambda fn: Autotuner(fn, configs, key, **options)


def heuristics(values: dict[str, Callable[[dict[str, Any]], Any]]) -> Any:
    return lambda fn: Heuristics(fn, values)


def _module(name: str, kind: type = _Module, **attrs: Any) -> types.ModuleType:
    m = kind(name, f"{_PREFIX} ({name})")
    m.__dict__.update(attrs)
    return m


@functools.lru_cache(maxsize=None)
def modules() -> dict[str, types.ModuleType]:
    """The stand-in's modules by name, made once per process (model code keeps what it imported across serve() calls)."""
    dtypes = {attr: dtype(short) for attr, (short, _) in _DTYPES.items()}
    libdevice = _module("triton.language.extra.libdevice", _BodyOnly)
    cuda = _module("triton.language.extra.cuda", _BodyOnly, libdevice=libdevice)
    extra = _module("triton.language.extra", _BodyOnly, libdevice=libdevice, cuda=cuda)
    math = _module("triton.language.math", _BodyOnly)
    language = _module("triton.language", constexpr=constexpr, dtype=dtype, tensor=tensor, extra=extra, math=math, **dtypes)
    decorators = dict(jit=jit, autotune=autotune, heuristics=heuristics, Config=Config, KernelInterface=KernelInterface,
                      JITFunction=JITFunction, Autotuner=Autotuner, Heuristics=Heuristics)
    jit_module = _module("triton.runtime.jit", jit=jit, JITFunction=JITFunction, KernelInterface=KernelInterface)
    autotuner = _module("triton.runtime.autotuner", autotune=autotune, heuristics=heuristics, Config=Config,
                        Autotuner=Autotuner, Heuristics=Heuristics)
    active = _ActiveDriver()
    driver_config = types.SimpleNamespace(active=active, default=active)
    driver_module = _module("triton.runtime.driver", driver=driver_config)
    runtime = _module("triton.runtime", **{**decorators, "jit": jit_module, "autotuner": autotuner, "driver": driver_config})
    triton = _module("triton", language=language, runtime=runtime, cdiv=cdiv, next_power_of_2=next_power_of_2, **decorators)
    found = [triton, language, runtime, jit_module, autotuner, driver_module, extra, cuda, libdevice, math]
    return {m.__name__: m for m in found} | {"triton.language.extra.cuda.libdevice": libdevice}


def install(server: Server, extra: Iterable[str] = ()) -> None:
    """Answer ``import triton`` (and its submodules above) of the served kernels' modules, and of modules under the
    ``extra`` prefixes, with the stand-in; ``server.close()`` takes the hook off."""
    found = modules()
    server.jit_types = (JITFunction,)
    packages = {e.module.split(".")[0] for e in server.entries} | set(extra)
    files = {os.path.basename(e.source) for e in server.entries}
    original = builtins.__import__

    def model_code(importer: Any) -> bool:
        name = importer.get("__name__") if isinstance(importer, dict) else None
        if not isinstance(name, str):
            return False
        if name.split(".")[0] in packages or any(name.startswith(p + ".") for p in extra):
            return True
        return os.path.basename(str(importer.get("__file__") or "")) in files

    def stand_in_import(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:
        if level == 0 and (name == "triton" or name.startswith("triton.")) and model_code(globals):
            module = found.get(name)
            if module is None:
                raise ModuleNotFoundError(f"No module named {name!r} ({_PREFIX} has no {name}; install Triton to run this "
                                          "code)", name=name)
            return module if fromlist else found["triton"]
        try:
            return original(name, globals, locals, fromlist, level)
        except ModuleNotFoundError as e:
            if e.name is None or e.name.split(".")[0] != "triton" or level != 0:
                raise
            importer = globals.get("__name__") if isinstance(globals, dict) else None
            raise ModuleNotFoundError(f"{e} ({_PREFIX} answers the modules of the served kernels and those under the "
                                      f"stand_in_triton=[...] prefixes; {importer} is neither)", name=e.name) from None

    def uninstall() -> None:
        if builtins.__import__ is stand_in_import:  # not over a hook installed after it
            builtins.__import__ = original
        if server in _SERVER:
            _SERVER.remove(server)

    builtins.__import__ = stand_in_import
    fast.hook_getitem(server, KernelInterface)
    _SERVER.append(server)
    server._undo.append(uninstall)
