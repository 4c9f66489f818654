"""Everything that differs between the supported Triton releases (3.3 to 3.9), in one place.

Compile side: this imports Triton. :func:`current` describes the installed Triton once per process.
What Triton's code states is read from it (the signatures of ``ASTSource.make_ir`` and
``add_stages``, the ``CUDAOptions`` fields, the JIT's type for a bool, the ptxas binary Triton picks
for an arch, where a kernel's ``def`` line is kept); a small table holds what only its source says
(the hidden trailing parameters, extra ptxas flags, how a host tensor descriptor is passed without
TMA). No other module of tmlr-build compares Triton versions: each asks this one.
"""
from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass
from typing import Any

from ..common.errors import SignatureError
from ..common.triton_check import check_triton_version, release_of


@dataclass(frozen=True)
class _Release:
    """Facts of one release that its installed files do not say in a form that can be asked."""

    hidden_params: tuple[str, ...]  # pointers the launcher appends after the kernel's own parameters
    ptxas_flags: tuple[str, ...]  # what make_cubin adds to the ptxas command beyond 3.3's flags
    pointer_descriptor: tuple[str, ...] | None  # a host TensorDescriptor's kernel params without TMA; None: none
    # Autotuner.run appends str(arg.dtype) of every argument that has a dtype to the tuning key (3.3-3.9 alike)
    dtype_in_key: bool = True
    # Whether a compile gives the same bytes whatever the process compiled before. Not in 3.3: make_ptx turns
    # on LLVM's global nvptx-short-ptr option after make_llir has laid out the module without it, so every
    # compile after a process's first gets another data layout (3.4-3.8 set it before, 3.9 passes it along).
    compiles_alike_in_one_process: bool = True


_ONE = ("global_scratch",)
_TWO = ("global_scratch", "profile_scratch")  # 3.5 added the profiler's scratch pointer
_REG_ALLOC = ("--regAllocOptLevel=2",)  # 3.7+ make_cubin: "work around ptxas 13.x bug"
# make_tensordesc_arg (3.4-3.7 driver.py) / decompose_descriptor (3.8+ backends/driver.py)
_POINTER_34 = ("base", "shape:i64", "strides:i64", "shape:i32", "strides:i64")
_POINTER_35 = ("base", "shape:i64", "strides:i64", "padding:i1", "shape:i32", "strides:i64")
_POINTER_37 = ("base", "shape:i64", "strides:i64", "padding:i1", "round_f32_to_tf32:i1", "shape:i32", "strides:i64")
_RELEASES = {
    "3.3": _Release(_ONE, (), None, compiles_alike_in_one_process=False),
    "3.4": _Release(_ONE, (), _POINTER_34),
    "3.5": _Release(_TWO, (), _POINTER_35),
    "3.6": _Release(_TWO, (), _POINTER_35),
    "3.7": _Release(_TWO, _REG_ALLOC, _POINTER_37),
    "3.8": _Release(_TWO, _REG_ALLOC, _POINTER_37),
    "3.9": _Release(_TWO, _REG_ALLOC, _POINTER_37),
}

# A descriptor lowered to TMA (metadata tensordesc_meta has its entry): the same in every release.
TMA_DESCRIPTOR = ("tensormap", "shape:i32", "strides:i64")


@dataclass(frozen=True)
class TritonAPI:
    """What tmlr-build needs to know about the installed Triton; see :func:`current`."""

    version: str  # triton.__version__
    release: str  # "3.9"
    hidden_params: tuple[str, ...]
    ptxas_flags: tuple[str, ...]
    pointer_descriptor: tuple[str, ...] | None
    make_ir_takes_target: bool  # 3.5+: ASTSource.make_ir(target, options, ...)
    language: Any  # add_stages' third argument (Language.TRITON, 3.4+), or None where it takes two
    cluster_dims_option: bool  # 3.3-3.5: CUDAOptions.cluster_dims, and make_ttgir records metadata cluster_dims
    bool_type: str  # what the JIT makes of a Python bool: "i1" (3.3) or "u1"
    dtype_in_key: bool  # see _Release
    compiles_alike_in_one_process: bool  # see _Release

    @property
    def host_descriptors(self) -> bool:
        """Whether kernels take host TensorDescriptor arguments (3.4+)."""
        return self.pointer_descriptor is not None

    def same_release(self, version: str) -> bool:
        """Whether Triton ``version`` is this release (its kernels take the same parameters)."""
        return release_of(version) == self.release

    def make_ir(self, src: Any, target: Any, options: Any, codegen_fns: Any, module_map: Any, context: Any) -> Any:
        if self.make_ir_takes_target:
            return src.make_ir(target, options, codegen_fns, module_map, context)
        return src.make_ir(options, codegen_fns, module_map, context)

    def add_stages(self, backend: Any, stages: dict[str, Any], options: Any) -> None:
        if self.language is None:
            backend.add_stages(stages, options)
        else:
            backend.add_stages(stages, options, self.language)

    def before_make_ptx(self) -> None:
        """Set what make_llir sets process-wide and make_ptx relies on (a .llir input skips make_llir)."""
        from triton._C.libtriton import llvm, nvidia

        llvm.init_targets()  # without it make_ptx segfaults
        if hasattr(nvidia, "set_short_ptr"):  # 3.4-3.8: nvptx-short-ptr is a global LLVM option, not a make_ptx flag
            nvidia.set_short_ptr()

    def cluster_dims(self, metadata: dict[str, Any]) -> tuple[int, int, int]:
        """The launch's cluster shape. 3.6+ records only num_ctas; its launcher launches grid x num_ctas CTAs
        in clusters of (num_ctas, 1, 1), the same as grid x cluster_dims with cluster_dims (num_ctas, 1, 1)."""
        if self.cluster_dims_option:
            return tuple(metadata["cluster_dims"])  # type: ignore[return-value]
        return (int(metadata["num_ctas"]), 1, 1)

    def descriptor_fields(self, tma: bool) -> tuple[str, ...]:
        """The kernel parameters one host TensorDescriptor argument becomes (see the schema's ``fields``)."""
        if self.pointer_descriptor is None:
            raise SignatureError(f"Triton {self.version} has no host tensor descriptors (tensordesc parameters); "
                                 "they need Triton 3.4 or newer")
        return TMA_DESCRIPTOR if tma else self.pointer_descriptor

    def lost_with_ttgir(self) -> tuple[str, ...]:
        """Triton metadata that make_ttgir computes and a later stage cannot recover from its input."""
        return (("cluster_dims",) if self.cluster_dims_option else ()) + (
            ("tensordesc_meta",) if self.host_descriptors else ())

    def lost_with_llir(self) -> tuple[str, ...]:
        """The same for make_llir."""
        base = ("num_warps", "shared", "tmem_size", "global_scratch_size", "global_scratch_align")
        return base + (("profile_scratch_size", "profile_scratch_align") if "profile_scratch" in self.hidden_params
                       else ())

    def ptxas_path(self, capability: int) -> str:
        """The ptxas binary Triton's make_cubin runs for ``capability``."""
        tool = _call_with_arch(_nvidia().get_ptxas, capability)
        return tool[0] if isinstance(tool, tuple) else tool.path

    def ptxas_version_text(self, capability: int) -> str:
        return str(_call_with_arch(_nvidia().get_ptxas_version, capability))

    def specialize(self, arg: Any, is_const: bool = False, specialize_value: bool = True,
                   align: bool = True) -> tuple[Any, Any]:
        """Triton's JIT's own (type, key) for one argument of a call: key "D" is divisible by 16."""
        from triton.backends.compiler import BaseBackend
        from triton.runtime import jit

        if hasattr(jit, "native_specialize_impl"):  # 3.6+: in C++
            return jit.native_specialize_impl(BaseBackend, arg, is_const, specialize_value, align)
        if inspect.signature(jit.create_specialize_impl).parameters:  # 3.4-3.5
            impl = jit.create_specialize_impl(BaseBackend.get_arg_specialization)
            return impl(arg, is_const, specialize_value, align)
        impl = jit.create_specialize_impl()
        return impl(arg, BaseBackend.get_arg_specialization, is_const, specialize_value, align)

    def def_line(self, fn: Any) -> int:
        """The line of a @triton.jit function's ``def`` in its file."""
        from triton.runtime import jit

        if hasattr(jit, "get_jit_fn_file_line"):  # before 3.8
            return int(jit.get_jit_fn_file_line(fn)[1])
        return int(fn.def_file_line_number)

    # ---- @triton.autotune / @triton.heuristics (runtime/autotuner.py; the same attributes in 3.3-3.9) ----
    def wrappers(self, obj: Any) -> list[tuple[str, Any]]:
        """("autotune" | "heuristics", wrapper) of a kernel object, outermost first, down to its JITFunction."""
        from triton.runtime.autotuner import Autotuner, Heuristics
        from triton.runtime.jit import JITFunction

        found: list[tuple[str, Any]] = []
        for _ in range(16):
            if isinstance(obj, JITFunction) or not hasattr(obj, "fn"):
                break
            if isinstance(obj, (Autotuner, Heuristics)):
                found.append(("autotune" if isinstance(obj, Autotuner) else "heuristics", obj))
            obj = obj.fn
        return found

    def autotune_fields(self, tuner: Any) -> dict[str, Any]:
        """An Autotuner's configs, key, reset/restore lists, whether user hooks or pruning were given."""
        user_hooks = bool(getattr(tuner, "user_defined_pre_hook", False) or getattr(tuner, "user_defined_post_hook",
                                                                                     False))
        return {"configs": list(tuner.configs), "key": list(tuner.keys), "reset_to_zero": list(tuner.reset_to_zero),
                "restore_value": list(tuner.restore_value), "user_hooks": user_hooks,
                "pruning": [n for n in ("early_config_prune", "perf_model") if getattr(tuner, n, None) is not None]}

    def config_fields(self, config: Any) -> dict[str, Any]:
        """A triton.Config: kwargs, the four launch options, other compile options it sets (3.3's warp
        specialization fields, 3.4+'s ir_override), and whether it has a pre_hook."""
        standard = ("num_warps", "num_stages", "num_ctas", "maxnreg")
        other = {k: v for k, v in config.all_kwargs().items() if k not in config.kwargs and k not in standard}
        return {"kwargs": dict(config.kwargs), **{k: getattr(config, k) for k in standard}, "other": other,
                "pre_hook": config.pre_hook is not None}

    def heuristic_values(self, heuristics: Any) -> dict[str, Any]:
        """A Heuristics wrapper's {name: function}, in the order Heuristics.run applies them."""
        return dict(heuristics.values)

    # ---- pass dumps (--split-dump resume) and Gluon kernels: read from the installed Triton ----
    def pass_modules(self) -> list[Any]:
        """Every module of pass-adding bindings (``add_*``) in ``passes`` and ``nvidia.passes``: make_ttgir
        calls more of them in later releases (3.4 ``nvidia.passes.hopper``, 3.5 ``passes.gluon``)."""
        from triton._C.libtriton import nvidia, passes

        found = [getattr(parent, name) for parent in (passes, nvidia.passes) for name in sorted(dir(parent))
                 if not name.startswith("_")]
        return [m for m in found if inspect.ismodule(m) and any(n.startswith("add_") for n in dir(m))]

    def stage_function(self, backend: Any, stage: str) -> Any:
        """The backend method that runs pass-dump stage ``stage`` as f(module, metadata, options, capability):
        ``"ttgir"`` make_ttgir; ``"gluon"`` a Gluon kernel's TTGIR stage (``gluon_to_ttgir``, ``ttgir_opt`` in 3.4)."""
        if stage == "gluon":
            return getattr(backend, "gluon_to_ttgir", None) or backend.ttgir_opt
        return backend.make_ttgir

    @property
    def has_gluon(self) -> bool:
        """Whether ``triton.experimental.gluon`` exists (3.4+)."""
        try:
            import triton.experimental.gluon  # noqa: F401
        except ImportError:
            return False
        return True

    def gluon_source(self, fn: Any, signature: dict[str, str], constexprs: Any, attrs: Any) -> Any:
        """Gluon's ASTSource. Its ``ext`` names the stage its module is: ``ttgir`` (3.4-3.8: the frontend builds
        TTGIR) or ``glir`` (3.9: an identity stage before ``ttgir``)."""
        from triton.experimental.gluon._runtime import GluonASTSource

        return GluonASTSource(fn, signature, constexprs, attrs)

    def add_gluon_stages(self, backend: Any, stages: dict[str, Any], options: Any) -> None:
        from triton.backends.compiler import Language

        backend.add_stages(stages, options, Language.GLUON)

    def gluon_descriptor(self, dtype: str, block_shape: tuple[int, ...], layout: str | None) -> str | None:
        """Triton's type text of a Gluon host descriptor, ``tensordesc<fp16[64, 64],NVMMASharedLayout(...)>``.
        ``layout`` None: ``NVMMASharedLayout.get_default_for`` (3.5+), as Gluon's examples pick it; None when
        the release lacks it (3.4: the layout must be written out)."""
        if layout is None:
            from triton.experimental.gluon.language import NVMMASharedLayout
            from triton.language import str_to_ty

            if not hasattr(NVMMASharedLayout, "get_default_for"):
                return None
            layout = repr(NVMMASharedLayout.get_default_for(list(block_shape), str_to_ty(dtype, None)))
        return f"tensordesc<{dtype}[{', '.join(map(str, block_shape))}],{layout}>"


def _nvidia() -> Any:
    from triton.backends.nvidia import compiler

    return compiler


def _call_with_arch(fn: Any, capability: int) -> Any:
    # get_ptxas/get_ptxas_version take the arch in 3.3 and 3.6+, nothing in 3.4-3.5 (one ptxas for all)
    return fn(capability) if inspect.signature(fn).parameters else fn()


@functools.lru_cache(maxsize=1)
def current() -> TritonAPI:
    """The installed Triton, described once per process; TritonVersionError when it is not supported."""
    import triton
    from triton.compiler.compiler import ASTSource
    from triton.runtime.jit import mangle_type

    version = check_triton_version(triton.__version__)
    nvidia = _nvidia()
    release = _RELEASES[release_of(version)]
    make_ir_params = list(inspect.signature(ASTSource.make_ir).parameters)
    fields = tuple(nvidia.CUDAOptions.__dataclass_fields__)
    return TritonAPI(
        version=version, release=release_of(version), hidden_params=release.hidden_params,
        ptxas_flags=release.ptxas_flags, pointer_descriptor=release.pointer_descriptor,
        make_ir_takes_target=make_ir_params[1:2] == ["target"], language=_language(nvidia),
        cluster_dims_option="cluster_dims" in fields, bool_type=mangle_type(True),
        dtype_in_key=release.dtype_in_key, compiles_alike_in_one_process=release.compiles_alike_in_one_process)


def _language(nvidia: Any) -> Any:
    if "language" not in inspect.signature(nvidia.CUDABackend.add_stages).parameters:
        return None
    from triton.backends.compiler import Language

    return Language.TRITON

