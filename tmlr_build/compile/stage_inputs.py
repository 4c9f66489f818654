"""The starting points of a compile: a Python kernel, a .ttir/.ttgir module, .llir/.ptx text or
a cubin, each turned into the first module of the pipeline, its full signature and its options.

Runs inside a compile worker (imports Triton).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

import triton
from tmlr_runtime.abi import TYPES
from tmlr_runtime.objects import of
from triton._C.libtriton import ir
from triton.compiler.compiler import ASTSource

from ..common import ir_signature, mlir_text, signature as sig
from ..common.arch import triton_target
from ..common.errors import (ArchMismatchError, CompileError, InputError, IRParseError, MissingMetadataError,
                             OptionError, SignatureError, TritonReleaseMismatchError)
from ..common.jobs import STAGES, Job
from ..common.tensordesc import is_descriptor, parse_type as parse_descriptor_type, read_sidecar_entry
from ..common.wording import words
from . import dependencies, options as opts, python_source, triton_api
from .diagnostics import Diagnostics, compiler_style, stage_failure


@dataclass
class Start:
    """A source turned into the first module of the pipeline."""

    name: str
    params: list[sig.Parameter]
    options: Any  # CUDAOptions
    module: Any  # MLIR module, LLVM IR text, PTX text or cubin bytes
    first_stage: str  # the first stage to run ("cubin": none but ptxas, "done": nothing)
    inherited: dict[str, Any]  # Triton metadata computed by stages that are not rerun
    input_ext: str | None  # stage whose text is the input file itself (for the ir/ folder)
    gluon: bool = False  # a @gluon.jit kernel: Triton's Gluon stages (no ttir; 3.9 adds glir before ttgir)
    # a Python kernel: the other modules its code comes from (dependencies.py), for the provenance
    dependencies: list[dict[str, str]] = field(default_factory=list)


# --- starting points -----------------------------------------------------------------------------
def _from_python(job: Job, backend: Any, base: str, raw: bytes, diag: Diagnostics) -> Start:
    name = job.source_name  # what Triton sees as the file name (co_filename): never an absolute path
    module, fn = python_source.load_job_kernel(job)
    defaults = {p.name: of(p.default) or p.default for p in fn.params if p.has_default}  # tl.float32: its record
    constexpr_params = {p.name for p in fn.params if p.is_constexpr}
    if job.signature is None:
        _check_signature_needed(f"{name}:{job.kernel}", fn.arg_names, job.constexprs, defaults, constexpr_params)
    entries = sig.parse_signature(job.signature or "")
    params = sig.bind_python_signature(f"{name}:{job.kernel}", fn.arg_names, entries, dict(job.constexprs),
                                       defaults, constexpr_params)
    _check_descriptors(job, params)
    options = _parse_options(backend, opts.merge(job.options, [], {}, job.label, words(job.from_call)), job)
    gluon = bool(getattr(fn, "is_gluon", lambda: False)())
    if not gluon:
        _check_no_layouts(job, params)
    real = python_source.with_triton_objects(params, module, job.label)  # what Triton takes: tl.float32, not its record
    src = _gluon_source(job, fn, real) if gluon else ASTSource(fn, *sig.to_triton(real))
    context = ir.context()
    ir.load_dialects(context)
    backend.load_dialects(context)
    try:
        mod = triton_api.current().make_ir(src, backend.target, options, backend.get_codegen_implementation(options),
                                           backend.get_module_map(), context)
    except Exception as e:
        message = stage_failure(job, "python -> ttir", e, diag)
        raise CompileError(f"{_python_location(fn, e, name)}: {message}") from None
    return Start(job.kernel, params, options, mod, src.ext if gluon else "ttir", {}, None, gluon,
                 dependencies.other_sources(fn, job.source))


def _check_no_layouts(job: Job, params: list[sig.Parameter]) -> None:
    named = [p.name for p in params if is_descriptor(p) and parse_descriptor_type(p.type).layout]  # type: ignore[union-attr]
    if named:
        raise SignatureError(f"{job.label}: {', '.join(named)}: a descriptor type with a layout is for @gluon.jit "
                             "kernels; a @triton.jit kernel's descriptor is written without one: tensordesc<fp16[64, 64]>")


def _gluon_source(job: Job, fn: Any, params: list[sig.Parameter]) -> Any:
    """A @gluon.jit kernel (Triton 3.4+): its frontend writes TTGIR, so there is no ttir stage; a host
    descriptor's type names its shared-memory layout (the default NVMMA layout when the signature gives none)."""
    api = triton_api.current()
    if job.stop_after == "ttir":
        raise OptionError(f"{job.label}: --stop-after ttir: a Gluon kernel has no TTIR stage (its frontend writes "
                          "TTGIR); stop after ttgir, llir or ptx")
    signature, constexprs, attrs = sig.to_triton(params)
    for p in params:
        desc = parse_descriptor_type(p.type) if is_descriptor(p) else None
        if desc is None:
            continue
        signature[p.name] = api.gluon_descriptor(desc.dtype, desc.block_shape, desc.layout) or ""
        if not signature[p.name]:
            raise SignatureError(
                f"{job.label}: parameter {p.name}: Triton {triton.__version__} has no default layout for a Gluon "
                "descriptor (NVMMASharedLayout.get_default_for came in 3.5): write it in the signature, e.g. "
                f"'tensordesc<{desc.dtype}[{', '.join(map(str, desc.block_shape))}],NVMMASharedLayout("
                f"swizzle_byte_width=128, element_bitwidth={8 * TYPES[desc.dtype].size}, rank={len(desc.block_shape)})>'")
    return api.gluon_source(fn, signature, constexprs, attrs)


def _check_signature_needed(kernel: str, arg_names: list[str], constexprs: dict[str, Any], defaults: dict[str, Any],
                            constexpr_params: set[str]) -> None:
    """No --signature: fine only when --constexpr and defaults give every parameter."""
    open_names = [n for n in arg_names if n not in constexprs]
    if all(n in defaults and n in constexpr_params for n in open_names):
        return
    listing = ", ".join(f"{n} (tl.constexpr)" if n in constexpr_params else n for n in open_names)
    raise SignatureError(
        f"{kernel}: --signature is missing (a spec entry: \"signature\"); the kernel's parameters are {listing}. "
        "Give one entry per parameter, in order: a type for each runtime parameter ('*fp32:16' a pointer to fp32 "
        "aligned to 16 bytes, 'i32' an int, 'i32:16' one divisible by 16) and a bare value for each tl.constexpr, e.g. "
        "--signature '*fp32:16, *fp32:16, i32, 1024'")


def _python_location(fn: Any, e: Exception, name: str) -> str:
    """``file.py:LINE`` of a frontend error; Triton reports lines relative to the ``def``."""
    node = getattr(e, "node", None)
    if getattr(e, "src", None) != fn.src or not hasattr(node, "lineno"):
        return name
    return f"{name}:{triton_api.current().def_line(fn) + node.lineno - 1}"


def _from_mlir(job: Job, backend: Any, base: str, raw: bytes, diag: Diagnostics) -> Start:
    text = raw.decode("utf-8", errors="replace")
    fn = mlir_text.read_function(text, base)
    attrs = mlir_text.module_attributes(text) if job.stage == "ttgir" else {}
    if job.stage == "ttgir":
        _check_ttgir_target(job, base, attrs)
    params = _ir_params(job, base, fn.name, fn)
    recorded = [job.triton_metadata, (job.sidecar or {}).get("options")]
    options = _parse_options(backend, opts.merge(job.options, recorded, attrs, job.label, words(job.from_call)), job)
    context = ir.context()
    ir.load_dialects(context)
    backend.load_dialects(context)
    try:
        module = ir.parse_mlir_module(base, context)
    except Exception:
        raise IRParseError(f"{base}: not valid {job.stage.upper()} for Triton {triton.__version__}:\n"
                           f"{compiler_style(diag.text(), text)}\nFix the IR at the line shown (file:line:column)") from None
    module.context = context
    inherited = _ttgir_metadata(job, module, options) if job.stage == "ttgir" else {}
    next_stage = "ttgir" if job.stage == "ttir" else "llir"
    return Start(fn.name, params, options, module, next_stage, inherited, job.stage)


def _from_text(job: Job, backend: Any, base: str, raw: bytes, diag: Diagnostics) -> Start:
    """.llir and .ptx: triton.compile() cannot start here (3.3-3.9), so run the later stages ourselves."""
    meta = _require_metadata(job, base)
    text = raw.decode("utf-8", errors="replace")
    name = meta.get("name") or _symbol(job.stage, text, base)
    params = _ir_params(job, base, name, None)
    recorded = [meta, (job.sidecar or {}).get("options")]
    options = _parse_options(backend, opts.merge(job.options, recorded, {}, job.label, words(job.from_call)), job)
    inherited = _inherit(job, _lost_upto(job.stage), required=True, why="")
    first = "ptx" if job.stage == "llir" else "cubin"
    return Start(name, params, options, text, first, inherited, job.stage)


def _from_cubin(job: Job, backend: Any, base: str, raw: bytes, diag: Diagnostics) -> Start:
    meta = _require_metadata(job, base)
    name = meta.get("name")
    if not name:
        raise MissingMetadataError(f"{job.triton_metadata_path}: has no 'name' (the cubin's kernel symbol); pass the "
                                   "metadata JSON Triton wrote beside this cubin")
    params = _ir_params(job, base, name, None)
    options = _parse_options(backend, opts.merge(job.options, [meta], {}, job.label, words(job.from_call)), job)
    inherited = _inherit(job, _lost_upto("cubin"), required=True, why="")
    return Start(name, params, options, raw, "done", inherited, None)


STARTS = {"python": _from_python, "ttir": _from_mlir, "ttgir": _from_mlir, "llir": _from_text, "ptx": _from_text,
          "cubin": _from_cubin}


# --- helpers -------------------------------------------------------------------------------------
def _parse_options(backend: Any, merged: dict[str, Any], job: Job) -> Any:
    num_ctas = merged.get("num_ctas") or 1
    if isinstance(num_ctas, int) and num_ctas > 1 and job.capability < 90:
        # Triton 3.3 aborts the process on this, later releases word it their own way
        raise OptionError(f"{job.label}: num_ctas = {num_ctas} (thread-block clusters) needs capability 90 "
                          f"or newer; build this kernel with {words(job.from_call).arch(90, spec=True)}")
    try:
        return backend.parse_options(merged)
    except (AssertionError, TypeError, ValueError) as e:
        raise OptionError(f"{job.label}: invalid compile options {merged}: {e or type(e).__name__}") from None


def _check_ttgir_target(job: Job, base: str, attrs: dict[str, object]) -> None:
    have = attrs.get("ttg.target")
    made_for = triton_target(have)
    if have is not None and made_for != job.target:
        raise ArchMismatchError(
            f"{base}: this .ttgir was made for {have} (ttg.target) but is being built for cuda:{job.capability}; a "
            f".ttgir is architecture-specific: build it with "
            f"{words(job.from_call).arch(made_for.capability if made_for else have)}, or "
            f"build for {job.capability} from the .ttir/.py")
    if attrs.get("ttg.threads-per-warp", 32) != 32:
        raise OptionError(f"{base}: ttg.threads-per-warp = {attrs['ttg.threads-per-warp']}; CUDA warps have 32 threads")


def _require_metadata(job: Job, base: str) -> dict[str, Any]:
    if job.triton_metadata is None:
        stem = os.path.splitext(base)[0]
        raise MissingMetadataError(
            f"{base}: a .{job.stage} input needs the Triton metadata JSON of the compile that produced it "
            f"(shared memory, scratch and launch sizes cannot be recovered from the {job.stage}): keep {stem}.json "
            f"beside it (as Triton's cache and tmlr-build --keep-ir do){words(job.from_call).or_metadata}")
    made_by = job.triton_metadata.get("triton_version")
    if isinstance(made_by, str) and not triton_api.current().same_release(made_by):
        raise TritonReleaseMismatchError(
            f"{base}: was made by Triton {made_by} (its metadata JSON says so), but Triton {triton.__version__} is "
            f"installed; a .{job.stage} keeps the parameter list of the release that made it (hidden pointers, "
            f"descriptor layout), so build it with Triton {made_by} (tmlr-build --python PATH: an interpreter with "
            "it), or build again from the .py/.ttir")
    have = (job.triton_metadata.get("target") or {}).get("arch")
    if have is not None and int(have) != job.capability:
        raise ArchMismatchError(
            f"{base}: was compiled for capability {have} (its metadata JSON says so) but is being built for "
            f"{job.capability}; build it with {words(job.from_call).arch(have)}, or build for {job.capability} from "
            "the .ttir/.py")
    return job.triton_metadata


def _lost_upto(stage: str) -> tuple[str, ...]:
    """Triton metadata that the stages up to ``stage`` computed and an input of that stage cannot give back."""
    api = triton_api.current()
    lost = {"ttgir": api.lost_with_ttgir(), "llir": api.lost_with_llir(), "ptx": ("name",)}
    return tuple(k for s, keys in lost.items() if STAGES.index(s) <= STAGES.index(stage) for k in keys)


def _ttgir_metadata(job: Job, module: Any, options: Any) -> dict[str, Any]:
    """What make_ttgir put in the metadata of the compile that wrote this .ttgir: the cluster shape (taken
    from its metadata JSON, Triton 3.3-3.5) and the TMA descriptors' encodings (read from the module)."""
    api = triton_api.current()
    keys = tuple(k for k in api.lost_with_ttgir() if k != "tensordesc_meta")
    out = _inherit(job, keys, required=options.num_ctas > 1,
                   why=f"its ttg.num-ctas = {options.num_ctas} needs the cluster shape")
    if api.host_descriptors:  # triton.compile("x.ttgir") drops these; the module still says them
        out["tensordesc_meta"] = module.get_tensordesc_metadata()
    return out


def _check_descriptors(job: Job, params: list[sig.Parameter]) -> None:
    names = [p.name for p in params if is_descriptor(p)]
    if names and not triton_api.current().host_descriptors:
        raise SignatureError(f"{job.label}: {', '.join(names)}: host tensor descriptor parameters (tensordesc<...>) "
                             f"need Triton 3.4 or newer; Triton {triton.__version__} is installed (tmlr-build --python "
                             "PATH builds with another interpreter's Triton)")


# Needed only by some kernels: the pipeline refuses a descriptor kernel without tensordesc_meta, and
# profile scratch is absent (0) unless the compile was instrumented.
_WHEN_PRESENT = ("tensordesc_meta", "profile_scratch_size", "profile_scratch_align")


def _inherit(job: Job, keys: tuple[str, ...], required: bool, why: str) -> dict[str, Any]:
    meta = job.triton_metadata or {}
    missing = [k for k in keys if k not in meta and k not in _WHEN_PRESENT]
    if required and missing:
        source = job.triton_metadata_path or "the metadata JSON"
        raise MissingMetadataError(
            f"{os.path.basename(job.source)}: {source} lacks {', '.join(missing)} ({why or 'computed by earlier stages'}); "
            f"{words(job.from_call).give_metadata}")
    out = {k: meta[k] for k in keys if k in meta}
    if "cluster_dims" in out:
        out["cluster_dims"] = tuple(out["cluster_dims"])
    return out


def _symbol(stage: str, text: str, base: str) -> str:
    pattern = r"\.visible\s+\.entry\s+([A-Za-z_][A-Za-z0-9_]*)" if stage == "ptx" else r"define\s+[^@]*@([A-Za-z_][A-Za-z0-9_]*)\s*\("
    m = re.search(pattern, text)
    if m is None:
        raise IRParseError(f"{base}: no kernel entry found; is this a {stage} file written by Triton?")
    return m.group(1)


def _ir_params(job: Job, base: str, name: str, ir: mlir_text.IRFunction | None) -> list[sig.Parameter]:
    """The full signature of an IR input: --signature, then the sidecar, then the IR's own types and names;
    --arg-names and --constexpr restore the kernel's names and constexprs (common/ir_signature.py)."""
    if ir is None and job.sibling_ir is not None:
        ir = _sibling_function(job, base)
    if job.signature is not None:
        entries = sig.parse_signature(job.signature)
        params = ir_signature.from_signature(base, entries, job.arg_names, dict(job.constexprs), ir)
        if ir is not None:
            sig.check_against_ir(base, params, ir.params, words(job.from_call))
        return params
    if job.sidecar and job.sidecar.get("signature") is not None:
        where = f"{os.path.splitext(base)[0]}.tmlr.json"
        params = [read_sidecar_entry(p, where) for p in job.sidecar["signature"]]
        ir_signature.check_recorded_constexprs(where, params, dict(job.constexprs))
        return params
    if ir is None:
        stem = os.path.splitext(base)[0]
        raise SignatureError(
            f"{base}: the parameter types of {name} cannot be recovered from a .{job.stage}; pass --signature "
            f"'*fp16:16, i32, ...' (and --arg-names), or keep {stem}.tmlr.json or {stem}.ttir beside it")
    return ir_signature.from_ir(base, ir, job.arg_names, dict(job.constexprs))


def _sibling_function(job: Job, base: str) -> mlir_text.IRFunction:
    """The parameters of the .ttgir/.ttir beside a .llir/.ptx/.cubin input (a Triton cache entry keeps both)."""
    sibling = job.sibling_ir_name or "the .ttgir/.ttir beside it"
    try:
        return mlir_text.read_function(job.sibling_ir or "", sibling)
    except IRParseError as e:
        raise IRParseError(f"{e} tmlr-build reads {sibling}, which lies beside {base}, for the parameter types of "
                           f"{base}: fix it or move it away (then pass --signature, or keep "
                           f"{os.path.splitext(base)[0]}.tmlr.json beside {base})") from None


def cubin_function(job: Job, base: str, cubin: bytes, entry: str) -> Any:
    """The entry's record in an imported cubin; the metadata JSON must belong to this cubin."""
    from tmlr_runtime import IntegrityError
    from tmlr_runtime.artifact.elf import functions

    try:
        found = functions(cubin, base)
    except IntegrityError:
        raise InputError(f"{base}: not a cubin (not a 64-bit ELF file); pass the .cubin Triton wrote") from None
    if entry not in found:
        raise InputError(f"{base}: has no kernel {entry!r}, which {job.triton_metadata_path} names; it has "
                         f"{', '.join(sorted(found)) or 'no functions'} - pass the metadata JSON of this very cubin")
    return found[entry]
