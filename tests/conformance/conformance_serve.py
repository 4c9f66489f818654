"""A launch of Triton's JIT served by tmlr: the cache entry Triton compiled for the call, built by tmlr-build as a
user would build it, and launched by tmlr_runtime with the very call the test made.

For one ``kernel[grid](*args, **kwargs)`` (``JITFunction.run(*args, grid=grid, warmup=False, **kwargs)``):

1. Triton's JIT compiles as usual: the original ``run`` with ``warmup=True`` (compile errors stay Triton's);
2. its cache entry (the folder of the compiled kernel's metadata JSON, beside its .cubin/.ttir/.ttgir) is
   built with tmlr_build's API, as ``tmlr-build ENTRY --constexpr NAME=VALUE ... --arg-names ...`` would: the
   constexprs Triton left out of the IR (the parameters its signature marks ``constexpr``: ``tl.constexpr``
   ones, and those the call passes as ``None`` or ``1``) valued as the call binds them, defaults included. A
   kernel with tuple parameters takes a ``--signature`` instead (a tuple's constexpr elements cannot be given
   with ``--constexpr``, docs/spec-format.md), the one tmlr_build derives from the call; so does a kernel Triton
   compiled with unsigned types (``*u8``, ``u64``): the IR has none, and the signature gives them back;
3. ``Kernel.load(artifact)[grid](*args, **kwargs)``: the same grid (callable or not), arguments and keywords.

Builds are kept per (entry hash, constexprs, signature) for the process. A failure at any step is recorded with
its stage and raised as it is: the test fails with tmlr's error, never falls back to Triton's launch.
"""
from __future__ import annotations

import inspect
import os
import re
from dataclasses import dataclass, field
from typing import Any, Callable

from tmlr_runtime.objects import unwrap  # a tl.constexpr(...) argument as the plain value a user writes

STAGES = ("build", "load", "launch")


class ConformanceError(RuntimeError):
    """The runner could not find what it needs in Triton's compile (not a tmlr error)."""


@dataclass(frozen=True)
class BuildInputs:
    """What a user passes tmlr-build for one cache entry."""
    entry: str  # the cache entry folder
    constexprs: dict[str, Any]  # --constexpr NAME=VALUE
    arg_names: tuple[str, ...]  # --arg-names: every parameter, in the kernel's order
    signature: str | None = None  # --signature (kernels with tuple parameters)

    @property
    def key(self) -> tuple[str, str, str | None]:
        return (os.path.basename(self.entry), repr(sorted(self.constexprs.items())), self.signature)


@dataclass
class Failure:
    stage: str  # one of STAGES
    error: BaseException


def cache_entry(kernel: Any) -> str:
    """The folder of Triton's cache that holds ``kernel`` (a CompiledKernel): where its metadata JSON lies (Triton
    3.5+ keeps the paths in ``metadata_group``; before, the cache manager of the kernel's hash names the folder)."""
    group = getattr(kernel, "metadata_group", None)
    if group is None:
        from triton.runtime.cache import get_cache_manager

        folder = getattr(get_cache_manager(kernel.hash), "cache_dir", None)
        group = {f"{kernel.name}.json": os.path.join(folder, f"{kernel.name}.json")} if folder else {}
    path = group.get(f"{kernel.name}.json")
    if path is None or not os.path.isfile(path):
        raise ConformanceError(f"Triton's compiled kernel {kernel.name!r} has no metadata JSON in a cache folder "
                               f"({path or 'none named'}); is Triton's file cache switched off?")
    return os.path.dirname(os.fspath(path))


def bound_arguments(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """The call's argument of each kernel parameter, defaults included (keywords that name no parameter are
    Triton's launch options, left aside)."""
    sig = inspect.signature(fn.fn)
    bound = sig.bind(*args, **{k: v for k, v in kwargs.items() if k in sig.parameters})
    bound.apply_defaults()
    return dict(bound.arguments)


def unsigned(ty: Any) -> bool:
    """Whether a Triton type of a compiled signature (a tuple's: any element) is one the IR cannot tell from the signed
    (``u8``..``u64``, ``*u8``..; ``u1``, Triton's bool, is taken as the IR's ``i1`` is)."""
    if isinstance(ty, tuple):
        return any(unsigned(t) for t in ty)
    return re.fullmatch(r"\*?k?u(8|16|32|64)", ty) is not None


def build_inputs(fn: Any, kernel: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> BuildInputs:
    """What tmlr-build takes for the cache entry of ``kernel``, compiled by ``fn[grid](*args, **kwargs)``."""
    names = tuple(inspect.signature(fn.fn).parameters)
    compiled: dict[str, Any] = kernel.src.signature  # name -> Triton type, "constexpr", or a tuple of them
    if any(not isinstance(ty, str) or unsigned(ty) for ty in compiled.values()):
        from tmlr_build.builder.jit_specialize import specialize

        spec = specialize(fn, args, kwargs)
        return BuildInputs(cache_entry(kernel), {}, spec.names, spec.signature)
    bound = bound_arguments(fn, args, kwargs)
    constexprs = {name: unwrap(bound[name]) for name in names if compiled.get(name) == "constexpr"}
    return BuildInputs(cache_entry(kernel), constexprs, names)


def build_artifact(inputs: BuildInputs, out: str) -> str:
    """Build the cache entry into ``out`` with tmlr_build's API (in this process where it can); the artifact folder."""
    from tmlr_build import BuildConfig, build, request

    req = request(inputs.entry, signature=inputs.signature, constexprs=inputs.constexprs, arg_names=inputs.arg_names)
    report = build([req], BuildConfig(out=out, progress=False, in_process=True))
    return report.written[0]


@dataclass
class Server:
    """Serves the launches of one pytest process with tmlr; counts them and keeps the failures of the current test."""
    work: str  # artifacts are built under work/artifacts/<pid>-<n>
    load: Callable[[str], Any] | None = None  # Kernel.load (a stand-in in the CPU tests)
    served: int = 0
    failures: list[Failure] = field(default_factory=list)
    _built: dict[tuple[str, str, str | None], str] = field(default_factory=dict)

    def artifact(self, inputs: BuildInputs) -> str:
        found = self._built.get(inputs.key)
        if found is None:
            # one folder per build and process: the processes of a pass share the work folder
            out = os.path.join(self.work, "artifacts", f"{os.getpid()}-{len(self._built):05d}")
            found = self._built[inputs.key] = build_artifact(inputs, out)
        return found

    def serve(self, original: Callable[..., Any], fn: Any, args: tuple[Any, ...], grid: Any,
              kwargs: dict[str, Any]) -> Any:
        """``fn[grid](*args, **kwargs)``: Triton compiles, tmlr builds and launches; returns Triton's compiled kernel
        (tests read its ``asm``), as Triton's ``run`` does."""
        kernel = original(fn, *args, grid=grid, warmup=True, **kwargs)
        if kernel is None:  # a jit_cache_hook asked Triton not to compile: Triton launches nothing either
            return None
        if hasattr(kernel, "result"):  # an async compile's future
            kernel = kernel.result()
        stage = "build"
        try:
            path = self.artifact(build_inputs(fn, kernel, args, kwargs))
            stage = "load"
            if self.load is None:
                from tmlr_runtime import Kernel

                self.load = Kernel.load
            launcher = self.load(path)
            stage = "launch"
            launcher[grid](*args, **kwargs)
        except Exception as e:
            self.failures.append(Failure(stage, e))
            raise
        self.served += 1
        return kernel
