"""``Kernel``: an artifact loaded once and launched often."""
from __future__ import annotations

import functools
import os
import threading
from typing import TYPE_CHECKING, Any, Callable

from .. import driver
from ..errors import ArgumentError, ArtifactError, short_repr
from . import compiled
from .execute import launch
from .plan import LaunchPlan

if TYPE_CHECKING:
    from ..artifact.metadata import ArtifactMetadata, Variant
    from .modules import LoadedFunction

# The artifact reader and the module cache, imported by the first load that reads (:func:`_import_reader`), not by
# `import tmlr_runtime`; bound here once, as a function-level import would cost every load a microsecond or more.
read = open_cubin = read_ptx = modules = None


def _import_reader() -> None:
    global read, open_cubin, read_ptx, modules
    from ..artifact.metadata import open_cubin, read_ptx
    from ..artifact.read import read
    from . import modules


class Kernel:
    """A tmlr artifact (cubin + metadata.json written by tmlr-build), launched without Triton.

    1. ``Kernel.load(dir)`` reads and validates ``metadata.json``.
    2. It takes the current context (device 0's primary context, the one torch uses, when none
       is), picks the variant for that device by CUDA's rules (an exact cubin, else a compatible
       one, else PTX, which the driver compiles: ``artifact/targets.py``) and refuses what the
       device cannot run.
    3. It checks the cubin's (or PTX's) size and sha256, and that the cubin is whole and built for the variant's
       target, and loads it (once per context and sha256).
    4. It plans the launch of that variant (a :class:`~.plan.LaunchPlan`), whose parameters must be those the
       cubin's kernel takes.
    5. ``kernel(grid, *args, stream=None)`` or ``kernel[grid](*args)`` checks and packs the
       arguments and calls ``cuLaunchKernel`` (``cuLaunchKernelEx`` for clusters, cooperative and
       PDL launches). A launch while another context is current repeats steps 2-4 once for it.

    ``checks=False`` skips the per-call argument checks (device, dtype, alignment, divisibility,
    specialized values); argument count and scalar ranges are still enforced.
    """

    def __init__(self, metadata: ArtifactMetadata, directory: str, *, checks: bool = True,
                 stats: dict[str, os.stat_result] | None = None) -> None:
        self.metadata, self.name, self.signature = metadata, metadata.name, metadata.signature
        self.directory = directory
        self.checks = checks
        self._contexts: dict[int, LaunchPlan] = {}  # context handle -> its plan
        self._lock = threading.Lock()
        self._read_stats = {} if stats is None else stats  # path -> fstat of each file read
        self._fast: tuple[Any, ...] = ()  # .fast of the plan of the context planned for last, which a launch checks first
        self._executors: dict[int, Any] = {}  # context handle -> the compiled executor of its plan, or None
        self._compiled: Any = None  # that of the plan planned for last, which a call runs when there is one
        self._plan_for_current()

    # -- loading ---------------------------------------------------------------------------------
    @classmethod
    def load(cls, path: str | os.PathLike[str], *, checks: bool = True, tuning: str = "tune", fallback: str = "nearest") -> Any:
        """Load the artifact directory ``path`` for the current device; the same unchanged directory again gives the
        same ``Kernel`` without reading anything. A family directory gives a :class:`~tmlr_runtime.KernelFamily`,
        called the same way, whose autotune mode ``tuning`` and ``fallback`` choose (docs/variants.md)."""
        try:
            directory = os.path.abspath(os.fsdecode(os.fspath(path)))
        except TypeError:
            raise ArgumentError(f"Kernel.load needs the artifact directory as a str or os.PathLike, got {short_repr(path)} "
                                f"({type(path).__name__}); pass the directory tmlr-build wrote, e.g. Kernel.load('build/add')",
                                "path") from None
        process = driver.PROCESS
        hit = process.cached((directory, checks)) or process.cached((directory, checks, tuning, fallback))
        if hit is not None:
            return hit
        if read is None:
            _import_reader()
        stats: dict[str, Any] = {}
        try:
            found = read(directory, stats)
        except ArtifactError:
            from ..artifact.output_folder import artifacts_in, output_folder_error

            given = os.fsdecode(os.fspath(path))
            inside = artifacts_in(given)
            if inside:
                raise output_folder_error(given, inside, f"load one of them, e.g. Kernel.load({inside[0]!r})") from None
            raise
        if found.kind == "family":
            # The family machinery is imported when a family is met, so a service of single kernels never
            # imports it; it makes its variants' kernels with this class (it imports nothing of launch/kernel).
            from ..family.dispatch import open_family

            family = open_family(found, cls, checks=checks, tuning=tuning, fallback=fallback, stats=stats)
            process.remember((directory, checks, tuning, fallback), stats, family)
            return family
        kernel = (tuple_kernel(cls) if found.tuples else cls)(found, directory, checks=checks, stats=stats)
        process.remember((directory, checks), stats, kernel)
        return kernel

    def _plan_for_current(self) -> LaunchPlan:
        """The plan of the current context; the module is loaded and the launch planned the first time."""
        handle = driver.current_context()
        with self._lock:
            plan = self._contexts.get(handle)
            if plan is None:
                if modules is None:  # a Kernel made from metadata read elsewhere
                    _import_reader()
                dev = driver.device_info(driver.current_device())
                variant, ptx = self.metadata.pick(dev.major, dev.minor)
                read_image = read_ptx if ptx else open_cubin
                loaded = modules.get_function(handle, dev.ordinal, self.name, variant,
                                              lambda: read_image(self.directory, variant, self._read_stats), ptx)
                plan = LaunchPlan(self.name, self.signature, variant, loaded, self.checks)
                modules.check_params(plan.layout, loaded.params, os.path.join(self.directory, variant.cubin_file),
                                     variant.entry)
                self._contexts[handle] = plan
                # kept apart from the plan: the executor refers to it (its helpers), so no cycle
                self._executors[handle] = compiled.executor(plan, self._python)
        self._fast, self._compiled = plan.fast, self._executors[handle]
        return plan

    # -- launching -------------------------------------------------------------------------------
    # kernel(grid, *args, stream=None, **kwargs): launch on grid (an int, up to 3 ints, or
    # lambda meta: ...) with args in signature order; constexprs may be omitted or passed by keyword;
    # the plan's compiled executor runs it when there is one, else (and what it declines) the Python executor,
    # execute.launch (a subclass may put another there: serving's ServedKernel)
    _python = staticmethod(launch)
    __call__ = compiled.method("_compiled", launch)

    def __getitem__(self, grid: Any) -> Callable[..., None]:
        """Triton-style ``kernel[grid](*args, stream=None)``."""
        return functools.partial(self.__call__, grid)

    # -- introspection ---------------------------------------------------------------------------
    @property
    def plan(self) -> LaunchPlan:
        """The launch plan of the current context."""
        return self._plan_for_current()

    @property
    def variant(self) -> Variant:
        """The variant serving the current context."""
        return self._plan_for_current().variant

    @property
    def function(self) -> LoadedFunction:
        """The loaded function (module, registers, static shared memory) in the current context."""
        return self._plan_for_current().loaded

    def __repr__(self) -> str:
        archs = ",".join(v.arch for v in self.metadata.variants)
        return f"Kernel({self.name!r}, archs={archs}, dir={self.directory!r}, checks={self.checks})"


def tuple_kernel(cls: type) -> type:
    """``cls`` for a kernel with tuple parameters: its calls pass tuples, flattened into the leaves the plan takes
    (tuple_call.py), so that a kernel without any keeps the plain call."""
    from .tuple_call import tuple_class

    return tuple_class(cls)
