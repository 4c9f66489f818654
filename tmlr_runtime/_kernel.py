"""``Kernel``: an artifact loaded once and launched often."""
from __future__ import annotations

import functools
import operator
import os
import threading
from typing import TYPE_CHECKING, Any, Callable

from . import _driver, _launcher, _modules
from ._errors import ArgumentError, short_repr
from ._metadata import ArtifactMetadata, Parameter, Variant, read_cubin_stat, read_metadata

Launch = Callable[..., None]  # launch(grid, *args, stream=None, **kwargs)

_loaded_lock = threading.Lock()
_loaded: dict[tuple[str, bool], tuple[tuple[Any, ...], "Kernel"]] = {}


def _stamp(paths: list[str], known: dict[str, os.stat_result] | None = None) -> tuple[Any, ...]:
    """What identifies the files' contents: (mtime, size, inode) each; ``known``: stats already
    taken (by fstat of the very file read), by path."""
    out = []
    for p in paths:
        st = known.get(p) if known else None
        if st is None:
            try:
                st = os.stat(p)
            except OSError:
                return ()
        out.append((st.st_mtime_ns, st.st_size, st.st_ino))
    return tuple(out)


class Kernel:
    """A tmlr artifact (cubin + metadata.json written by tmlr-build), launched without Triton.

    Workflow:

    1. ``Kernel.load(dir)`` reads ``metadata.json`` and validates it against the schema.
    2. It initialises the driver and takes the current context (device 0's primary context, the
       one torch uses, when none is current), picks the variant for that device's compute
       capability and refuses what the device cannot run (shared memory, clusters, threads).
    3. It checks the cubin's size and sha256, loads it with ``cuModuleLoadData`` (once per context:
       modules are cached by context and sha256) and opts into large shared memory once.
    4. It builds the launcher for that variant: argument types, the packing layout and the
       ``void**`` are fixed now, per thread buffers are made on first use.
    5. ``kernel(grid, *args, stream=None)`` or ``kernel[grid](*args)`` checks and packs the
       arguments by the recorded signature and calls ``cuLaunchKernel`` (``cuLaunchKernelEx`` for
       clusters, cooperative and PDL launches). A launch while another device's context is current
       repeats steps 2-4 once for that context.

    ``checks=False`` skips the per-call argument checks (device, dtype, alignment, divisibility,
    specialized values) for the fastest path; argument count and scalar ranges are still enforced.
    """

    def __init__(self, metadata: ArtifactMetadata, directory: str, *, checks: bool = True) -> None:
        self.metadata = metadata
        self.directory = directory
        self.checks = checks
        self._launchers: dict[int, Launch] = {}
        self._variants: dict[int, Variant] = {}
        self._functions: dict[int, _modules.LoadedFunction] = {}
        self._bind_lock = threading.Lock()
        self._read_stats: dict[str, os.stat_result] = {}  # cubin path -> fstat when it was read
        self._get_context = _driver.init().cuCtxGetCurrent
        # What ``kernel(...)`` runs: the launcher of the context bound last. Each launcher checks
        # that its context is current and hands the call to _other_context otherwise.
        self._call: Launch = self._bind_current()

    # -- loading ---------------------------------------------------------------------------------
    @classmethod
    def load(cls, path: str | os.PathLike[str], *, checks: bool = True) -> "Kernel":
        """Load the artifact directory ``path`` for the current device (see the class docstring).

        Loading the same unchanged directory again returns the same ``Kernel`` without reading or
        hashing anything.
        """
        try:
            directory = os.path.abspath(os.fsdecode(os.fspath(path)))
        except TypeError:
            raise ArgumentError(f"Kernel.load needs the artifact directory as a str or os.PathLike, got {short_repr(path)} "
                                f"({type(path).__name__}); pass the directory tmlr-build wrote, e.g. Kernel.load('build/add')",
                                "path") from None
        key = (directory, checks)
        hit = _loaded.get(key)
        if hit is not None:
            stamp, kernel = hit
            if stamp and _stamp(kernel._watched()) == stamp:
                return kernel
        metadata, meta_stat = read_metadata(directory)
        kernel = cls(metadata, directory, checks=checks)
        known = dict(kernel._read_stats)
        known[os.path.join(directory, "metadata.json")] = meta_stat
        with _loaded_lock:
            _loaded[key] = (_stamp(kernel._watched(), known), kernel)
        return kernel

    def _watched(self) -> list[str]:
        files = [os.path.join(self.directory, "metadata.json")]
        files += [os.path.join(self.directory, v.cubin_file) for v in self.metadata.variants]
        return files

    def _bind_current(self) -> Launch:
        """Load into the current context and generate its launcher (once per context)."""
        handle, _ctx = _driver.current_context()
        launch = self._launchers.get(handle)
        if launch is not None:
            return launch
        with self._bind_lock:
            launch = self._launchers.get(handle)
            if launch is not None:
                return launch
            drv = _driver.api()
            ordinal = int(_driver.check(drv.cuCtxGetDevice(), "cuCtxGetDevice"))
            dev = _driver.device_info(ordinal)
            variant = self.metadata.select_variant(dev.major, dev.minor)

            def read() -> bytes:
                data, st = read_cubin_stat(self.directory, variant)
                self._read_stats[os.path.join(self.directory, variant.cubin_file)] = st
                return data

            loaded = _modules.get_function(handle, ordinal, self.metadata.name, variant, None, read)
            target = _launcher.LaunchTarget(
                device=ordinal,
                max_grid=dev.max_grid,
                function=loaded.function,
                launch=drv.cuLaunchKernel,
                launch_ex=drv.cuLaunchKernelEx,
                make_config=functools.partial(_launch_config, drv, variant),
                on_error=_launch_error,
            )
            context = (handle, self._get_context, self._other_context)
            launch = _launcher.build(self.metadata.name, self.metadata.signature, variant, target, self.checks, context)
            self._variants[handle] = variant
            self._functions[handle] = loaded
            self._launchers[handle] = launch
            return launch

    # -- launching -------------------------------------------------------------------------------
    if TYPE_CHECKING:

        def __call__(self, grid: Any, *args: Any, stream: Any = None, **kwargs: Any) -> None: ...

    else:
        # ``kernel(grid, *args, stream=None, **kwargs)`` calls the current launcher directly: the
        # property hands it over from C, so a launch runs one Python frame, not a method that
        # forwards to the launcher.
        __call__ = property(
            operator.attrgetter("_call"),
            doc="""Launch on ``grid`` (int, tuple of up to 3 ints, or ``lambda meta: ...``) with ``args``
        in signature order; constexprs may be omitted or passed by keyword.""",
        )

    def _other_context(self, grid: Any, args: tuple[Any, ...], kwargs: dict[str, Any], stream: Any) -> None:
        """A launch found another context current than its launcher's: bind that one and launch."""
        launch = self._bind_current()
        self._call = launch
        launch(grid, *args, stream=stream, **kwargs)

    def __getitem__(self, grid: Any) -> Callable[..., None]:
        """Triton-style ``kernel[grid](*args, stream=None)``."""
        return functools.partial(self.__call__, grid)

    # -- introspection ---------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def signature(self) -> tuple[Parameter, ...]:
        return self.metadata.signature

    @property
    def variant(self) -> Variant:
        """The variant serving the current context."""
        handle, _ = _driver.current_context()
        self._bind_current()
        return self._variants[handle]

    @property
    def function(self) -> _modules.LoadedFunction:
        """The loaded function (module, registers, static shared memory) in the current context."""
        handle, _ = _driver.current_context()
        self._bind_current()
        return self._functions[handle]

    def launcher_source(self) -> str:
        """What the launcher of the current context does per parameter, for debugging."""
        return _launcher.describe(self._bind_current())

    def __repr__(self) -> str:
        archs = ",".join(v.arch for v in self.metadata.variants)
        return f"Kernel({self.name!r}, archs={archs}, dir={self.directory!r}, checks={self.checks})"


def _launch_error(code: Any, what: str) -> Exception:
    c = int(code)
    return _driver.DriverError(_driver.error_message(c, what), _driver.error_name(c))


def _launch_config(drv: Any, variant: Variant) -> Any:
    """A ``CUlaunchConfig`` with the variant's fixed parts and attributes; grid and stream are set
    per launch (one config per thread, so concurrent launches never share it)."""
    config = drv.CUlaunchConfig()
    config.blockDimX, config.blockDimY, config.blockDimZ = variant.threads_per_block, 1, 1
    config.sharedMemBytes = variant.shared
    A = drv.CUlaunchAttributeID
    attrs = []
    if variant.is_cluster_launch:
        a = drv.CUlaunchAttribute()
        a.id = A.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
        a.value.clusterDim.x, a.value.clusterDim.y, a.value.clusterDim.z = variant.cluster_dims
        attrs.append(a)
        a = drv.CUlaunchAttribute()
        a.id = A.CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE
        a.value.clusterSchedulingPolicyPreference = drv.CUclusterSchedulingPolicy.CU_CLUSTER_SCHEDULING_POLICY_SPREAD
        attrs.append(a)
    if variant.cooperative:
        a = drv.CUlaunchAttribute()
        a.id = A.CU_LAUNCH_ATTRIBUTE_COOPERATIVE
        a.value.cooperative = 1
        attrs.append(a)
    if variant.pdl:
        a = drv.CUlaunchAttribute()
        a.id = A.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
        a.value.programmaticStreamSerializationAllowed = 1
        attrs.append(a)
    config.attrs = attrs
    config.numAttrs = len(attrs)
    return config
