"""Runs inside a compile worker: one kernel source, one target, from its stage down to a cubin.

This drives Triton 3.3.1's backend stages directly instead of calling ``triton.compile`` because
``triton.compile`` cannot start from .llir/.ptx, cannot stop after a stage, and drops the
ptxas report. The stage functions, the metadata they fill in and the ptxas flags are Triton's own,
so the cubin bytes are the same as ``triton.compile``'s (tests/test_build_stages.py checks this).
Importing this module imports Triton; the parent process never does.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from dataclasses import dataclass
from typing import Any, Iterator

import triton
from triton._C.libtriton import get_cache_invalidating_env_vars, ir, llvm
from triton.backends.compiler import GPUTarget
from triton.compiler.compiler import ASTSource, make_backend

from . import __version__ as tmlr_version
from . import mlir_text, options as opts, ptxas, python_source, signature as sig
from .arch import target_for
from .errors import (ArchMismatchError, CompileError, InputError, IRParseError, MissingMetadataError, OptionError,
                     SignatureError)
from .jobs import DIAGNOSTICS_FILE, IR_STAGES, Job, JobResult
from .triton_check import check_triton_version

# Triton metadata keys each stage computes; a build that starts after that stage must take them
# from the metadata JSON of the original compile (they cannot be recovered from the IR text).
_PRODUCED_BY = {
    "ttgir": ("cluster_dims",),
    "llir": ("num_warps", "shared", "tmem_size", "global_scratch_size", "global_scratch_align"),
    "ptx": ("name",),
}
_HIDDEN_PARAMS = ["global_scratch"]  # Triton 3.3.x appends one trailing pointer


class _Diagnostics:
    """MLIR/LLVM print their diagnostics on fd 2; keep them to put into error messages."""

    def __init__(self, path: str) -> None:
        self.path = path

    def text(self) -> str:
        with open(self.path, encoding="utf-8", errors="replace") as f:
            return f.read().strip()


@contextlib.contextmanager
def _captured_stderr(path: str) -> Iterator[_Diagnostics]:
    saved = os.dup(2)
    with open(path, "wb") as f:
        os.dup2(f.fileno(), 2)
    try:
        yield _Diagnostics(path)
    finally:
        os.dup2(saved, 2)
        os.close(saved)


@dataclass
class _Start:
    """A source turned into the first module of the pipeline."""

    name: str
    params: list[sig.Param]
    options: Any  # CUDAOptions
    module: Any  # MLIR module, LLVM IR text, PTX text or cubin bytes
    first_stage: str  # the first stage to run ("cubin": none but ptxas, "done": nothing)
    inherited: dict[str, Any]  # Triton metadata computed by stages that are not rerun
    input_ext: str | None  # stage whose text is the input file itself (for the ir/ folder)


def run(job: Job, workdir: str) -> JobResult:
    """Compile ``job`` in a worker process (this changes cwd and environment); raises BuildError
    subclasses with messages fit for the user. ``workdir``: a scratch directory the caller removes."""
    check_triton_version()
    line_info = job.line_info and bool(((job.sidecar or {}).get("options") or {}).get("line_info", True))
    opts.scrub_environment(line_info, os.path.join(workdir, "cache"))
    os.chdir(os.path.dirname(job.source))
    with _captured_stderr(os.path.join(workdir, DIAGNOSTICS_FILE)) as diag:
        return _run(job, line_info, diag)


def _run(job: Job, line_info: bool, diag: _Diagnostics) -> JobResult:
    backend = make_backend(GPUTarget("cuda", job.capability, 32))
    base = os.path.basename(job.source)
    with open(base, "rb") as f:
        raw = f.read()
    start = _START[job.stage](job, backend, base, raw, diag)
    metadata: dict[str, Any] = {
        "target": backend.target,
        **vars(start.options),
        **get_cache_invalidating_env_vars(),
        "triton_version": triton.__version__,
        **start.inherited,
    }
    texts = {start.input_ext: raw.decode("utf-8", errors="replace")} if start.input_ext else {}
    module = _lower(job, backend, start, metadata, texts, diag)
    cubin, resources = None, {}
    if start.first_stage == "done":
        cubin = start.module
        registers = _cubin_function(job, base, cubin, start.name).registers
        resources = {"registers": registers} if registers is not None else {}
    elif job.stop_after is None:
        ptx = module if isinstance(module, str) else texts["ptx"]
        ptx_name = base if job.stage == "ptx" else f"{start.name}.ptx"
        done = ptxas.assemble(ptx, job.capability, target_for(job.capability).arch, start.options.enable_fp_fusion,
                              line_info, job.label, ptx_name)
        cubin, resources = done.cubin, done.resources
    # a user-given name wins; else the name an earlier build recorded beside the IR; else the kernel's
    name = job.name or (job.sidecar or {}).get("name") or start.name
    options_record = opts.record(start.options, line_info)
    result = _result(job, name, start.params, metadata, cubin, resources)
    result.provenance = _provenance(job, base, raw, options_record)
    if job.keep_ir or job.stop_after is not None:
        result.ir_files = _ir_folder(name, texts, metadata, start.params, options_record, job.capability)
    return result


def _lower(job: Job, backend: Any, start: _Start, metadata: dict[str, Any], texts: dict[str, str],
           diag: _Diagnostics) -> Any:
    """Run Triton's stages from ``start.first_stage`` up to the PTX (or --stop-after), keeping each text."""
    module = start.module
    stages: dict[str, Any] = {}
    backend.add_stages(stages, start.options)
    order = list(stages)[:-1]  # the last stage (cubin) is ptxas, run by the caller
    if start.first_stage not in order or (job.stop_after and job.stop_after == start.input_ext):
        return module
    for ext in order[order.index(start.first_stage):]:
        if ext == "ptx":
            llvm.init_targets()  # make_llir normally does this; without it make_ptx segfaults
        try:
            module = stages[ext](module, metadata)
        except Exception as e:
            raise CompileError(_stage_failure(job, ext, e, diag)) from None
        texts[ext] = str(module)
        if ext == job.stop_after:
            break
    return module


def _result(job: Job, name: str, params: list[sig.Param], metadata: dict[str, Any], cubin: bytes | None,
            resources: dict[str, int]) -> JobResult:
    return JobResult(
        name=name,
        signature=[p.to_json() for p in params],
        capability=job.capability,
        arch=target_for(job.capability).arch,
        entry=metadata.get("name") if job.stop_after is None else None,
        cubin=cubin,
        launch={
            "num_warps": metadata["num_warps"],
            "num_ctas": metadata["num_ctas"],
            "cluster_dims": list(metadata["cluster_dims"]),
            "shared": metadata.get("shared") or 0,
            "tmem_size": metadata.get("tmem_size") or 0,
            "launch_cooperative_grid": bool(metadata.get("launch_cooperative_grid", False)),
            "launch_pdl": bool(metadata.get("launch_pdl", False)),  # 3.4+ only
        },
        scratch={
            "global_scratch_size": metadata.get("global_scratch_size") or 0,
            "global_scratch_align": metadata.get("global_scratch_align") or 1,
            "hidden_params": list(_HIDDEN_PARAMS),
        },
        resources=resources,
        provenance={},
    )


def _provenance(job: Job, base: str, raw: bytes, options_record: dict[str, Any]) -> dict[str, Any]:
    return {
        "triton_version": triton.__version__,
        "ptxas_version": ptxas.ptxas_version(job.capability),
        "source_stage": job.stage,
        "source_name": base,
        "source_sha256": hashlib.sha256(raw).hexdigest(),
        "options": options_record,
        "tmlr_version": tmlr_version,
    }


def _cubin_function(job: Job, base: str, cubin: bytes, entry: str) -> Any:
    """The entry's record in an imported cubin; the metadata JSON must belong to this cubin."""
    from tmlr_runtime import IntegrityError
    from tmlr_runtime._elf import functions

    try:
        found = functions(cubin, base)
    except IntegrityError:
        raise InputError(f"{base}: not a cubin (not a 64-bit ELF file); pass the .cubin Triton wrote") from None
    if entry not in found:
        raise InputError(f"{base}: has no kernel {entry!r}, which {job.triton_metadata_path} names; it has "
                         f"{', '.join(sorted(found)) or 'no functions'} - pass the metadata JSON of this very cubin")
    return found[entry]


def _compiler_style(diagnostics: str, source: str) -> str:
    """``loc("k.ttir":3:10): error: ...`` as ``k.ttir:3:10: error: ...`` plus the offending line."""
    lines = source.splitlines()
    out = []
    for line in diagnostics.splitlines():
        m = re.match(r'loc\("([^"]+)":(\d+):(\d+)\):\s*(.*)', line)
        if m is None:
            out.append(line)
            continue
        file, row, col, msg = m.group(1), int(m.group(2)), int(m.group(3)), m.group(4)
        out.append(f"{file}:{row}:{col}: {msg}")
        if 0 < row <= len(lines) and os.path.basename(file) == file:
            out += [f"    {lines[row - 1]}", "    " + " " * max(col - 1, 0) + "^"]
    return "\n".join(out)


def _stage_failure(job: Job, ext: str, e: Exception, diag: _Diagnostics) -> str:
    detail = str(e).strip() or type(e).__name__
    notes = diag.text()
    where = f"{job.label}: Triton failed in stage {ext} ({type(e).__name__}): {detail}"
    if notes:
        where += "\n" + "\n".join(notes.splitlines()[-40:])
    return where + "\nFix the kernel or the options; --stop-after and --keep-ir write the IR up to the failing stage"


# --- starting points -----------------------------------------------------------------------------
def _from_python(job: Job, backend: Any, base: str, raw: bytes, diag: _Diagnostics) -> _Start:
    if not job.kernel:
        raise SignatureError(f"{base}: name the kernel as {base}:<kernel_name>")
    module = python_source.load_module(base)
    fn = python_source.find_kernel(module, job.kernel, base)
    defaults = {p.name: p.default for p in fn.params if p.has_default}
    constexpr_params = {p.name for p in fn.params if p.is_constexpr}
    entries = sig.parse_signature(job.signature or "")
    params = sig.bind_python_signature(f"{base}:{job.kernel}", fn.arg_names, entries, dict(job.constexprs),
                                       defaults, constexpr_params)
    options = _parse_options(backend, opts.merge(job.options, [], {}, job.label), job)
    signature, constexprs, attrs = sig.to_triton(params)
    src = ASTSource(fn, signature, constexprs, attrs)
    context = ir.context()
    ir.load_dialects(context)
    backend.load_dialects(context)
    try:
        mod = src.make_ir(options, backend.get_codegen_implementation(options), backend.get_module_map(), context)
    except Exception as e:
        message = _stage_failure(job, "python -> ttir", e, diag)
        raise CompileError(f"{_python_location(fn, e, base)}: {message}") from None
    return _Start(job.kernel, params, options, mod, "ttir", {}, None)


def _python_location(fn: Any, e: Exception, base: str) -> str:
    """``file.py:LINE`` of a frontend error; Triton reports lines relative to the ``def``."""
    node = getattr(e, "node", None)
    if getattr(e, "src", None) != fn.src or not hasattr(node, "lineno"):
        return base
    from triton.runtime.jit import get_jit_fn_file_line

    _file, def_line = get_jit_fn_file_line(fn)
    return f"{base}:{def_line + node.lineno - 1}"



def _from_mlir(job: Job, backend: Any, base: str, raw: bytes, diag: _Diagnostics) -> _Start:
    text = raw.decode("utf-8", errors="replace")
    fn = mlir_text.read_function(text, base)
    attrs = mlir_text.module_attributes(text) if job.stage == "ttgir" else {}
    if job.stage == "ttgir":
        _check_ttgir_target(job, base, attrs)
    params = _ir_params(job, base, fn.name, list(fn.params))
    recorded = [job.triton_metadata, (job.sidecar or {}).get("options")]
    options = _parse_options(backend, opts.merge(job.options, recorded, attrs, job.label), job)
    context = ir.context()
    ir.load_dialects(context)
    backend.load_dialects(context)
    try:
        module = ir.parse_mlir_module(base, context)
    except Exception:
        raise IRParseError(f"{base}: not valid {job.stage.upper()} for Triton {triton.__version__}:\n"
                           f"{_compiler_style(diag.text(), text)}\nFix the IR at the line shown (file:line:column)") from None
    module.context = context
    inherited = {}
    if job.stage == "ttgir":
        inherited = _inherit(job, "ttgir", required=options.num_ctas > 1,
                             why=f"its ttg.num-ctas = {options.num_ctas} needs the cluster shape")
    next_stage = "ttgir" if job.stage == "ttir" else "llir"
    return _Start(fn.name, params, options, module, next_stage, inherited, job.stage)


def _from_text(job: Job, backend: Any, base: str, raw: bytes, diag: _Diagnostics) -> _Start:
    """.llir and .ptx: Triton 3.3.1's compile() cannot start here, so run the later stages ourselves."""
    meta = _require_metadata(job, base)
    text = raw.decode("utf-8", errors="replace")
    name = meta.get("name") or _symbol(job.stage, text, base)
    params = _ir_params(job, base, name, None)
    recorded = [meta, (job.sidecar or {}).get("options")]
    options = _parse_options(backend, opts.merge(job.options, recorded, {}, job.label), job)
    inherited = _inherit(job, job.stage, required=True, why="")
    first = "ptx" if job.stage == "llir" else "cubin"
    return _Start(name, params, options, text, first, inherited, job.stage)


def _from_cubin(job: Job, backend: Any, base: str, raw: bytes, diag: _Diagnostics) -> _Start:
    meta = _require_metadata(job, base)
    name = meta.get("name")
    if not name:
        raise MissingMetadataError(f"{job.triton_metadata_path}: has no 'name' (the cubin's kernel symbol); pass the "
                                   "metadata JSON Triton wrote beside this cubin")
    params = _ir_params(job, base, name, None)
    options = _parse_options(backend, opts.merge(job.options, [meta], {}, job.label), job)
    inherited = _inherit(job, "ptx", required=True, why="")
    return _Start(name, params, options, raw, "done", inherited, None)


_START = {"python": _from_python, "ttir": _from_mlir, "ttgir": _from_mlir, "llir": _from_text, "ptx": _from_text,
          "cubin": _from_cubin}


# --- helpers -------------------------------------------------------------------------------------
def _parse_options(backend: Any, merged: dict[str, Any], job: Job) -> Any:
    try:
        options = backend.parse_options(merged)
    except (AssertionError, TypeError, ValueError) as e:
        raise OptionError(f"{job.label}: invalid compile options {merged}: {e or type(e).__name__}") from None
    if options.num_ctas > 1 and job.capability < 90:
        # Triton 3.3.1 aborts the process on this instead of reporting it
        raise OptionError(f"{job.label}: num_ctas = {options.num_ctas} (thread-block clusters) needs capability 90 "
                          "or newer; build this kernel with --arch 90 (a spec entry can say \"arch\": [90])")
    return options


def _check_ttgir_target(job: Job, base: str, attrs: dict[str, object]) -> None:
    want = f"cuda:{job.capability}"
    have = attrs.get("ttg.target")
    if have is not None and have != want:
        made_for = str(have).split(":")[-1]
        raise ArchMismatchError(
            f"{base}: this .ttgir was made for {have} (ttg.target) but is being built for {want}; a .ttgir is "
            f"architecture-specific: build it with --arch {made_for}, or build for {job.capability} from the .ttir/.py")
    if attrs.get("ttg.threads-per-warp", 32) != 32:
        raise OptionError(f"{base}: ttg.threads-per-warp = {attrs['ttg.threads-per-warp']}; CUDA warps have 32 threads")


def _require_metadata(job: Job, base: str) -> dict[str, Any]:
    if job.triton_metadata is None:
        stem = os.path.splitext(base)[0]
        raise MissingMetadataError(
            f"{base}: a .{job.stage} input needs the Triton metadata JSON of the compile that produced it "
            f"(shared memory, scratch and launch sizes cannot be recovered from the {job.stage}): keep {stem}.json "
            f"beside it (as Triton's cache and tmlr-build --keep-ir do) or pass --metadata FILE")
    have = (job.triton_metadata.get("target") or {}).get("arch")
    if have is not None and int(have) != job.capability:
        raise ArchMismatchError(
            f"{base}: was compiled for capability {have} (its metadata JSON says so) but is being built for "
            f"{job.capability}; build it with --arch {have}, or build for {job.capability} from the .ttir/.py")
    return job.triton_metadata


def _inherit(job: Job, upto: str, required: bool, why: str) -> dict[str, Any]:
    keys = [k for stage, ks in _PRODUCED_BY.items() if IR_STAGES.index(stage) <= IR_STAGES.index(upto) for k in ks]
    meta = job.triton_metadata or {}
    missing = [k for k in keys if k not in meta]
    if required and missing:
        source = job.triton_metadata_path or "the metadata JSON"
        raise MissingMetadataError(
            f"{os.path.basename(job.source)}: {source} lacks {', '.join(missing)} ({why or 'computed by earlier stages'}); "
            "pass the metadata JSON Triton (or tmlr-build --keep-ir) wrote for this exact compile with --metadata FILE")
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


def _ir_params(job: Job, base: str, name: str, ir_params: list[sig.Param] | None) -> list[sig.Param]:
    """The full signature of an IR input: sidecar, then --signature, then the IR's own types."""
    if ir_params is None and job.sibling_ir is not None:
        ir_params = list(mlir_text.read_function(job.sibling_ir, base).params)
    if job.signature is not None:
        entries = sig.parse_signature(job.signature)
        names = list(job.arg_names or [f"arg{i}" for i in range(len(entries))])
        if len(names) != len(entries):
            raise SignatureError(f"{base}: --arg-names has {len(names)} names but the signature {len(entries)} entries")
        params = [e.named(n) for n, e in zip(names, entries)]
        if ir_params is not None:
            sig.check_against_ir(base, params, ir_params)
        return params
    if job.sidecar and job.sidecar.get("signature") is not None:
        return [sig.Param.from_json(p) for p in job.sidecar["signature"]]
    if ir_params is None:
        stem = os.path.splitext(base)[0]
        raise SignatureError(
            f"{base}: the parameter types of {name} cannot be recovered from a .{job.stage}; pass --signature "
            f"'*fp16:16, i32, ...' (and --arg-names), or keep {stem}.tmlr.json or {stem}.ttir beside it")
    if job.arg_names is not None:
        if len(job.arg_names) != len(ir_params):
            raise SignatureError(f"{base}: --arg-names has {len(job.arg_names)} names but {name} has "
                                 f"{len(ir_params)} parameters ({sig.describe(ir_params)})")
        return [sig.Param(n, p.kind, p.type, p.divisibility) for n, p in zip(job.arg_names, ir_params)]
    return ir_params


def _ir_folder(name: str, texts: dict[str, str], metadata: dict[str, Any], params: list[sig.Param],
               options_record: dict[str, Any], capability: int) -> dict[str, str | bytes]:
    """Every stage's text plus what a later build from any of them needs (ir/<arch>/)."""
    files: dict[str, str | bytes] = {f"{name}.{ext}": text for ext, text in texts.items()}
    meta = dict(metadata)
    # Triton's JSON holds libdevice's absolute path; keep only the file name (see options.record).
    meta["extern_libs"] = [[lib, os.path.basename(path)] for lib, path in meta.get("extern_libs", ())]
    files[f"{name}.json"] = json.dumps(meta, default=vars, sort_keys=True, indent=1) + "\n"
    sidecar = {"name": name, "capability": capability, "signature": [p.to_json() for p in params],
               "options": options_record}
    files[f"{name}.tmlr.json"] = json.dumps(sidecar, sort_keys=True, indent=1) + "\n"
    return files
