"""Runs inside a compile worker: one kernel source, one target, from its stage down to a cubin.

This drives Triton's backend stages directly instead of calling ``triton.compile`` because
``triton.compile`` cannot start from .llir/.ptx, cannot stop after a stage, and drops the
ptxas report. The stage functions, the metadata they fill in and the ptxas flags are Triton's own,
so the cubin bytes are the same as ``triton.compile``'s (tests/build/test_build_stages.py checks this),
except that source file names are made machine-independent first (source_names.py).
Importing this module imports Triton; the parent process never does, except where the caller has imported
Triton already and a stage file is compiled in its process (builder/in_process.py, @tmlr_build.jit).
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
from typing import Any, ContextManager

import triton
from triton._C.libtriton import get_cache_invalidating_env_vars
from triton.backends.compiler import GPUTarget
from triton.compiler.compiler import make_backend

from ..common import signature as sig
from ..common.arch import check_supported
from ..common.errors import CompileError
from ..common.jobs import DIAGNOSTICS_FILE, STAGES, Job, JobResult
from ..common.tensordesc import descriptor_json, is_descriptor
from ..common.wording import words
from ..common.errors import MissingMetadataError, UnsupportedKernelError
from ..version import __version__ as tmlr_version
from . import abi_check, options as opts, ptxas, triton_api
from .build_driver import StandIn, standing_in
from .diagnostics import Diagnostics, captured_stderr, stage_failure
from .source_names import stable_text
from .stage_inputs import STARTS, Start, cubin_function


def run(job: Job, workdir: str) -> JobResult:
    """Compile ``job`` in a worker process (this changes cwd and environment); raises BuildError
    subclasses with messages fit for the user. ``workdir``: a scratch directory the caller removes."""
    triton_api.current()  # refuses an unsupported Triton
    # --arch was checked when parsed; an input's own target (ttg.target, ...) is here
    check_supported(job.target, words(job.from_call))
    line_info = job.line_info and bool(((job.sidecar or {}).get("options") or {}).get("line_info", True))
    opts.scrub_environment(line_info, os.path.join(workdir, "cache"))
    if job.dump_passes:  # --dump-passes: Triton prints the IR before each MLIR pass to this file
        os.environ.update(MLIR_ENABLE_DUMP="1", MLIR_DUMP_PATH=job.dump_passes)
    os.chdir(os.path.dirname(job.source))
    with captured_stderr(os.path.join(workdir, DIAGNOSTICS_FILE)) as diag, stand_in(job) as device:
        return _run(job, line_info, diag, device)


def stand_in(job: Job) -> ContextManager[StandIn | None]:
    """A Python kernel's import and compile answer device questions as the job's target and device profile
    (build_driver.py); a stage file's compile asks none, and may run in the caller's process (in_process.py)."""
    return standing_in(job.capability, job.device) if job.stage == "python" else contextlib.nullcontext()


def _run(job: Job, line_info: bool, diag: Diagnostics, device: StandIn | None) -> JobResult:
    backend = make_backend(GPUTarget("cuda", job.capability, 32))
    base = os.path.basename(job.source)
    with open(base, "rb") as f:
        raw = f.read()
    start = STARTS[job.stage](job, backend, base, raw, diag)
    metadata: dict[str, Any] = {
        "target": backend.target,
        **vars(start.options),
        **get_cache_invalidating_env_vars(),
        "triton_version": triton.__version__,
        **start.inherited,
    }
    texts = {start.input_ext: raw.decode("utf-8", errors="replace")} if start.input_ext else {}
    module = _lower(job, backend, start, metadata, texts, diag)
    cubin, resources, ptx_bytes = None, {}, None
    if start.first_stage == "done":
        cubin = start.module
        registers = cubin_function(job, base, cubin, start.name).registers
        resources = {"registers": registers} if registers is not None else {}
    elif job.stop_after is None:
        ptx = module if isinstance(module, str) else texts["ptx"]
        ptx_name = base if job.stage == "ptx" else f"{start.name}.ptx"
        done = ptxas.assemble(ptx, job.target, start.options, line_info, job.label, ptx_name)
        cubin, resources = done.cubin, done.resources
        ptx_bytes = stable_text(ptx).encode() if job.ptx else None  # the text ptxas was given
    # a user-given name wins; else the name an earlier build recorded beside the IR; else the kernel's
    name = job.name or (job.sidecar or {}).get("name") or start.name
    options_record = opts.record(start.options, line_info)
    result = _result(job, name, start.params, metadata, cubin, resources)
    if cubin is not None:
        abi_check.check(cubin, result.entry or "", result.signature, result.scratch["hidden_params"], job.label,
                        triton.__version__)
    result.provenance = _provenance(job, base, raw, options_record, start.dependencies, device)
    result.ptx = ptx_bytes
    if job.keep_ir or job.stop_after is not None:
        result.ir_files = _ir_folder(name, texts, metadata, start.params, options_record, job.capability)
    return result


def _lower(job: Job, backend: Any, start: Start, metadata: dict[str, Any], texts: dict[str, str],
           diag: Diagnostics) -> Any:
    """Run Triton's stages from ``start.first_stage`` up to the PTX (or --stop-after), keeping each text."""
    module = start.module
    stages: dict[str, Any] = {}
    api = triton_api.current()
    if start.gluon:
        api.add_gluon_stages(backend, stages, start.options)
    else:
        api.add_stages(backend, stages, start.options)
    order = list(stages)[:-1]  # the last stage (cubin) is ptxas, run by the caller
    if start.first_stage not in order or (job.stop_after and job.stop_after == start.input_ext):
        return module
    for ext in order[order.index(start.first_stage):]:
        if ext == "ptx":
            api.before_make_ptx()
        try:
            module = stages[ext](module, metadata)
        except Exception as e:
            raise CompileError(stage_failure(job, ext, e, diag)) from None
        if ext in STAGES:  # not Gluon's glir (3.9): the frontend's TTGIR as is, which tmlr takes no input of
            texts[ext] = stable_text(str(module))  # kept IR names no file of this machine
        if ext == job.stop_after:
            break
    return module


def _result(job: Job, name: str, params: list[sig.Parameter], metadata: dict[str, Any], cubin: bytes | None,
            resources: dict[str, int]) -> JobResult:
    api = triton_api.current()
    done = job.stop_after is None  # else the stages that fill in the launch facts may not have run
    if done:
        _check_launchable(job, metadata)
    return JobResult(
        name=name,
        signature=_signature(job, params, metadata) if done else [p.to_json() for p in params],
        target=job.target,
        entry=metadata.get("name") if done else None,
        cubin=cubin,
        launch={
            "num_warps": metadata["num_warps"],
            "num_ctas": metadata["num_ctas"],
            "cluster_dims": list(api.cluster_dims(metadata)) if done else [1, 1, 1],
            "shared": metadata.get("shared") or 0,
            "tmem_size": metadata.get("tmem_size") or 0,
            "launch_cooperative_grid": bool(metadata.get("launch_cooperative_grid", False)),
            "launch_pdl": bool(metadata.get("launch_pdl", False)),  # 3.4+ only
        },
        scratch={
            "global_scratch_size": metadata.get("global_scratch_size") or 0,
            "global_scratch_align": metadata.get("global_scratch_align") or 1,
            "hidden_params": list(api.hidden_params),
        },
        resources=resources,
        provenance={},
    )


def _check_launchable(job: Job, metadata: dict[str, Any]) -> None:
    """Refuse what tmlr_runtime cannot launch: it passes NULL for the profiler's scratch (3.5+)."""
    if (metadata.get("profile_scratch_size") or 0) > 0 or metadata.get("instrumentation_mode"):
        raise UnsupportedKernelError(
            f"{job.label}: instrumented builds are not supported (instrumentation_mode "
            f"{metadata.get('instrumentation_mode')!r}, profile scratch {metadata.get('profile_scratch_size')} "
            "bytes): tmlr_runtime passes no profiler buffer; build without instrumentation (proton, gsan)")


def _signature(job: Job, params: list[sig.Parameter], metadata: dict[str, Any]) -> list[dict[str, Any]]:
    """metadata.json's ``signature``: host tensor descriptors get their ``descriptor`` record."""
    descriptors = [p for p in params if is_descriptor(p)]
    if not descriptors:
        return [p.to_json() for p in params]
    api = triton_api.current()
    if "tensordesc_meta" not in metadata:
        raise MissingMetadataError(
            f"{job.label}: the Triton metadata JSON lacks tensordesc_meta, which says how the kernel's tensor "
            f"descriptors are passed (TMA or not); {words(job.from_call).give_metadata}")
    meta = metadata["tensordesc_meta"] or []
    if meta and (len(meta) != len(descriptors) or not all(isinstance(m, dict) for m in meta)):
        raise UnsupportedKernelError(
            f"{job.label}: Triton lowered {len(meta)} of the kernel's {len(descriptors)} tensor descriptors to TMA; "
            "a kernel whose descriptors are passed in different ways is not supported - use one kind of descriptor")
    by_name = dict(zip((p.name for p in descriptors), meta or [None] * len(descriptors)))
    fields = api.descriptor_fields(tma=bool(meta))
    return [descriptor_json(p, fields, by_name[p.name], job.label) if p.name in by_name else p.to_json()
            for p in params]


def _provenance(job: Job, base: str, raw: bytes, options_record: dict[str, Any], dependencies: list[dict[str, str]],
                device: StandIn | None) -> dict[str, Any]:
    provenance = {
        "triton_version": triton.__version__,
        "ptxas_version": ptxas.ptxas_version(job.capability),
        "source_stage": job.stage,
        "source_name": job.source_name,  # relative to the import root: no absolute path
        "source_sha256": hashlib.sha256(raw).hexdigest(),
        "options": options_record,
        "tmlr_version": tmlr_version,
    }
    if dependencies:  # only then: a kernel of one file builds the same metadata as before
        provenance["dependencies"] = dependencies
    if device is not None and device.answered:  # the file asked which GPU it runs on: the answer shaped the build
        provenance["device"] = device.profile.key
    return provenance


def _ir_folder(name: str, texts: dict[str, str], metadata: dict[str, Any], params: list[sig.Parameter],
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
