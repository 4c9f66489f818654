"""The library entry point: build kernel requests into artifact directories."""
from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Sequence

from ..common.arch import Target
from ..common.errors import ArtifactWriteError, BuildError, BuildFailedError, PtxTargetError, UsageError
from ..common.ir_signature import import_note
from ..common.jobs import Job, JobResult
from ..common.triton_check import check_triton_version, release_in_range
from . import in_process, serve_index, variants
from .artifact import artifact_files, prepare_output, unrecord, write_directory
from .family import family_files
from .rebuild_edits import edits_on_rebuild, kept_note
from .rebuild_table import TABLE_FILE, table_on_rebuild
from .sources import KernelRequest, check_input_kind, default_archs, imported_without_constexprs, make_jobs
from .variants import FamilyPlan
from .workers import Task, run_jobs, run_tasks

CAPTURE_JOB = "tmlr_build.compile.capture:run"
OPTIONS_JOB = "tmlr_build.compile.options:check_requests"
# CUDAOptions fields of every Triton release tmlr-build supports (3.3-3.9), which the command line's flags set:
# only other names need a worker (which imports Triton) to check them before compiling
_OPTIONS_OF_EVERY_TRITON = frozenset({"num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion",
                                      "launch_cooperative_grid", "debug"})


@dataclass(frozen=True)
class BuildConfig:
    out: str
    archs: tuple[Target, ...] | None = None  # None: each input's own arch (ttgir/llir/ptx/cubin)
    stop_after: str | None = None
    keep_ir: bool = False
    line_info: bool = True
    max_workers: int | None = None
    progress: bool = True
    dump_passes: str | None = None  # write Triton's MLIR pass dump of the (single) job to this file
    max_variants: int = variants.DEFAULT_MAX_VARIANTS  # a family build over this many variants is refused
    # compile stage files in this process where Triton is imported already (in_process.py; @tmlr_build.jit)
    in_process: bool = False
    # write OUT/serve.json (serve_index.py): which Python kernel each artifact serves; the CLI's --spec builds do
    serve_index: bool = False


@dataclass
class BuildReport:
    written: list[str] = field(default_factory=list)
    # each written folder: the targets built ("sm_80", "sm_90a"), then why an asked-for arch was not ("sm_80 not
    # built: its "arch" is [90]"), so that the summary says in one line what became of the kernel
    built: dict[str, list[str]] = field(default_factory=dict)
    # (name, why) of each request not built: no arch in common with the build's, or written for another Triton
    skipped: list[tuple[str, str]] = field(default_factory=list)
    stopped_after: str | None = None  # --stop-after: ``written`` holds only ir/<arch>/ folders, no artifact
    warnings: list[str] = field(default_factory=list)  # e.g. autotune pruning that the build cannot apply
    notes: list[str] = field(default_factory=list)  # what a rebuild kept (a tuning table re-stamped)
    # files under ir/ or v/ that tmlr-build did not write as they are, kept by a rebuild (rebuild_edits.py):
    # {"artifact": dir, "folder": the edited-<sha> folder they were copied to, "files": {path: "edited"|"not recorded"}}
    kept: list[dict[str, Any]] = field(default_factory=list)
    not_written: list[str] = field(default_factory=list)  # names of the requests a failed build did not write
    # the serve.json entry of each written artifact built from a Python kernel (serve_index.entry)
    serve_entries: list[dict[str, Any]] = field(default_factory=list)


def _asked(req: KernelRequest, config: BuildConfig) -> tuple[Target, ...]:
    """The targets the build asks of ``req`` (--arch, a spec's "arch", an input's own), before its own "arch" list."""
    wanted = config.archs or default_archs(req)
    if wanted is None and req.archs is not None:  # no --arch, no spec-wide "arch": the kernel's own list
        return req.archs
    if wanted is None:
        what = "a Python kernel" if req.stage == "python" else f"a .{req.stage} file"
        raise UsageError(f"{os.path.basename(req.source)}: pass --arch (e.g. --arch 80,90, or \"arch\" in a spec); "
                         f"{what} does not say which GPU architecture to build for")
    return wanted


def _stderr_progress(done: int, total: int, job: Job, outcome: JobResult | BuildError, seconds: float) -> None:
    status = "failed" if isinstance(outcome, BuildError) else "ok"
    print(f"tmlr-build: [{done}/{total}] {job.label}: {status} ({seconds:.1f}s)", file=sys.stderr, flush=True)


def build(requests: Sequence[KernelRequest], config: BuildConfig,
          on_progress: Callable[..., None] | None = None) -> BuildReport:
    """Compile every request for its archs and write ``config.out/<name>/``.

    Every check that needs no compile (inputs, archs, variant plans and their options, names) runs
    first, for every request: one refusal and nothing is compiled or written. Then kernels whose every
    arch (and every variant) compiled are written (atomically, one directory each). A failure is raised
    as itself, several as a BuildFailedError listing each; either carries ``report`` (what was written,
    what was not).
    """
    triton_version = check_triton_version()
    out = prepare_output(config.out)
    report = BuildReport(stopped_after=config.stop_after)
    errors: list[BuildError] = []
    chosen = _chosen(requests, config, triton_version, report, errors)
    plans = _plan_families(chosen, config, report, errors)
    jobs, owner = _jobs(chosen, plans, config, errors)
    _check_names(requests, chosen, plans, errors)
    if errors:
        report.not_written += [_label(req, plans.get(i)) for i, req, _ in chosen]
        raise _failure(errors, report)
    if config.dump_passes is not None:
        jobs = _with_pass_dump(jobs, config.dump_passes)
    progress = on_progress or (_stderr_progress if config.progress and (len(jobs) > 2 or plans) else None)
    if config.in_process and in_process.usable(jobs):
        outcomes = in_process.run_jobs(jobs, progress)
    else:
        outcomes = run_jobs(jobs, config.max_workers, progress,
                            while_waiting=_import_validation if config.stop_after is None else None)
    by_request: dict[int, list[tuple[str | None, JobResult | BuildError]]] = {}
    for (i, vid), outcome in zip(owner, outcomes):
        by_request.setdefault(i, []).append((vid, outcome))
    _write_all(requests, by_request, plans, config, out, report, errors)
    if config.serve_index and config.stop_after is None and report.written:
        try:
            report.warnings += filter(None, [serve_index.write(out, report.serve_entries, report.written)])
        except BuildError as e:
            errors.append(e)
    if errors:
        raise _failure(errors, report)
    return report


def _failure(errors: list[BuildError], report: BuildReport) -> BuildError:
    error = errors[0] if len(errors) == 1 else BuildFailedError("\n".join(str(e) for e in errors), errors)
    error.report = report  # type: ignore[attr-defined]  # the CLI lists what was written and what was not
    return error


def _label(req: KernelRequest, family: FamilyPlan | None = None) -> str:
    return family.name if family else req.name or req.kernel or os.path.basename(req.source)


def _chosen(requests: Sequence[KernelRequest], config: BuildConfig, triton_version: str, report: BuildReport,
            errors: list[BuildError]) -> list[tuple[int, KernelRequest, tuple[Target, ...]]]:
    """The requests to build, each with its targets; a request that fails a check is left out, its error kept."""
    chosen: list[tuple[int, KernelRequest, tuple[Target, ...]]] = []
    for i, req in enumerate(requests):
        label = _label(req)
        if req.triton is not None and not release_in_range(triton_version, req.triton):
            report.skipped.append((label, f"written for Triton {req.triton}, and {triton_version} is installed"))
            continue
        try:
            check_input_kind(req)
            asked = _asked(req, config)
            targets = tuple(t for t in asked if req.archs is None or t in req.archs)
            _check_ptx(req, targets, config)
        except BuildError as e:
            errors.append(e)
            report.not_written.append(label)
            continue
        if targets:
            chosen.append((i, req, targets))
        else:
            asked_for = ", ".join(t.arch for t in asked)
            report.skipped.append((label, f"{_own_archs(req)}, and this build is for {asked_for}"))
    return chosen


def _own_archs(req: KernelRequest) -> str:
    return f'its "arch" is [{", ".join(str(t.capability) for t in req.archs or ())}]'


def _built(req: KernelRequest, results: list[JobResult], config: BuildConfig) -> list[str]:
    """The targets a written kernel has, and the asked-for ones its own "arch" list left out."""
    have = sorted({r.target for r in results}, key=lambda t: t.capability)
    left_out = [t.arch for t in config.archs or () if t not in have]
    not_built = [f"{', '.join(left_out)} not built: {_own_archs(req)}"] if left_out else []
    return [", ".join(t.arch for t in have)] + not_built


def _check_ptx(req: KernelRequest, targets: tuple[Target, ...], config: BuildConfig) -> None:
    """--ptx keeps the PTX of each portable target (sm_80, not sm_90a); refuse it where there is none to keep."""
    if not req.ptx or not targets:
        return
    label = _label(req)
    if req.stage == "cubin":
        raise PtxTargetError(f"{label}: --ptx keeps the PTX that the cubin is assembled from, and a .cubin input has none; "
                             "build from the .py, an IR file or the .ptx, or drop --ptx")
    if config.stop_after is not None:
        raise PtxTargetError(f"{label}: --ptx goes into the artifact, and --stop-after {config.stop_after} writes none; "
                             "drop one of them")
    if all(t.arch_specific for t in targets):
        raise PtxTargetError(
            f"{label}: --ptx for {', '.join(t.arch for t in targets)} only: the PTX of an arch-specific target runs on "
            "that GPU alone (the driver cannot compile it for a newer one); add a portable target to the --arch list, "
            "e.g. --arch 80 (its PTX runs on 8.0 and every newer GPU), or drop --ptx")


def _check_names(requests: Sequence[KernelRequest], chosen: list[tuple[int, KernelRequest, tuple[Target, ...]]],
                 plans: dict[int, FamilyPlan], errors: list[BuildError]) -> None:
    """Two requests that would write the same directory (when their names are known before compiling)."""
    names: dict[str, int] = {}
    for i, req, _ in chosen:
        name = plans[i].name if i in plans else req.name or (req.kernel if req.stage == "python" else None)
        if name is None:
            continue
        if name in names:
            errors.append(_same_name(name, requests[names[name]], req))
        names.setdefault(name, i)


def _same_name(name: str, first: KernelRequest, second: KernelRequest) -> ArtifactWriteError:
    return ArtifactWriteError(
        f"two inputs build a kernel named {name!r} ({os.path.basename(first.source)} and "
        f"{os.path.basename(second.source)}); give one another name (--name or the spec's \"name\")")


def _plan_families(chosen: list[tuple[int, KernelRequest, tuple[Target, ...]]], config: BuildConfig,
                   report: BuildReport, errors: list[BuildError]) -> dict[int, FamilyPlan]:
    """Read the wrappers of every Python kernel that may have autotune/heuristics (in workers, in parallel)
    and plan its variants; requests that fail here are left out of the build, their errors kept."""
    asked = [(i, req, targets) for i, req, targets in chosen if variants.may_be_wrapped(req)]
    tasks = [Task(CAPTURE_JOB, (make_jobs(req, targets[:1], None, False, True)[0],), f"{req.source}:{req.kernel}")
             for _, req, targets in asked]
    with_options = [(i, req) for i, req, _ in chosen if set(req.options) - _OPTIONS_OF_EVERY_TRITON]
    if with_options:  # option names are Triton's: a worker checks them, beside the wrapper reads
        where = [(os.path.basename(req.source) + (f":{req.kernel}" if req.kernel else ""), req.options)
                 for _, req in with_options]
        tasks.append(Task(OPTIONS_JOB, (where,), "compile options"))
    outcomes = run_tasks(tasks, config.max_workers) if tasks else []
    facts = outcomes[:len(asked)]
    if with_options:
        checked = outcomes[-1]
        errors += [checked] if isinstance(checked, BuildError) else [e for e in checked if e is not None]
    plans: dict[int, FamilyPlan] = {}
    for (i, req, targets), fact in zip(asked, facts):
        try:
            if isinstance(fact, BuildError):
                raise fact
            found = variants.plan(req, fact, len(targets), config.max_variants)
            if found is not None and config.stop_after is not None:
                raise UsageError(f"{found.name}: --stop-after writes the IR of one kernel, and this build makes "
                                 f"{len(found.variants)} variants; fix the types, configs and heuristic values")
        except BuildError as e:
            errors.append(e)
            report.not_written.append(_label(req))
            chosen[:] = [c for c in chosen if c[0] != i]
            continue
        if found is None:
            report.warnings += filter(None, [variants.unused_configs_warning(req, fact)])
        else:
            plans[i] = found
            report.warnings += found.warnings
            if config.progress:
                print(f"tmlr-build: {found.count_line}", file=sys.stderr, flush=True)
    return plans


def _jobs(chosen: list[tuple[int, KernelRequest, tuple[Target, ...]]], plans: dict[int, FamilyPlan],
          config: BuildConfig, errors: list[BuildError]) -> tuple[list[Job], list[tuple[int, str | None]]]:
    """Every compile job, and for each the request (and variant) it belongs to; a request whose jobs cannot
    be made (its metadata JSON unreadable, --stop-after before its stage) adds its error instead."""
    jobs: list[Job] = []
    owner: list[tuple[int, str | None]] = []
    for i, req, targets in chosen:
        family = plans.get(i)
        try:
            for v in family.variants if family else [None]:
                one = req if v is None else replace(req, signature=v.signature, constexprs=v.constexprs,
                                                    options=v.options)
                new = make_jobs(one, targets, config.stop_after, config.keep_ir, config.line_info)
                if v is not None:
                    new = [replace(job, variant=v.vid) for job in new]
                jobs += new
                owner += [(i, v.vid if v else None)] * len(new)
        except BuildError as e:
            errors.append(e)
    return jobs, owner


def _write_all(requests: Sequence[KernelRequest], by_request: dict[int, list[tuple[str | None, Any]]],
               plans: dict[int, FamilyPlan], config: BuildConfig, out: str, report: BuildReport,
               errors: list[BuildError]) -> None:
    """Write each request whose every job compiled: its artifact, or its family folder."""
    names: dict[str, int] = {}
    for i, outs in sorted(by_request.items()):
        failed = [o for _, o in outs if isinstance(o, BuildError)]
        if failed:
            errors += _unique(failed)
            report.not_written.append(_label(requests[i], plans.get(i)))
            continue
        results = [o for _, o in outs if isinstance(o, JobResult)]
        name = results[0].name
        try:
            if name in names:
                raise _same_name(name, requests[names[name]], requests[i])
            names[name] = i
            _write_one(requests, i, name, outs, results, plans.get(i), config, out, report)
        except BuildError as e:
            errors.append(e)
            report.not_written.append(name)


def _write_one(requests: Sequence[KernelRequest], i: int, name: str, outs: list[tuple[str | None, Any]],
               results: list[JobResult], family: FamilyPlan | None, config: BuildConfig, out: str,
               report: BuildReport) -> None:
    final = os.path.join(out, name)
    drop: list[str] = []
    if family is not None:
        grouped: dict[str, list[JobResult]] = {}
        for vid, o in outs:
            grouped.setdefault(str(vid), []).append(o)
        files = family_files(family, grouped)
        added, drop, note = table_on_rebuild(final, name, files)
        files.update(added)
        if note is not None:
            (report.notes if TABLE_FILE in added else report.warnings).append(note)
    else:
        files = artifact_files(name, results, with_metadata=config.stop_after is None)
        if imported_without_constexprs(requests[i]):
            report.notes.append(import_note(name, requests[i].stage, results[0].signature))
    carry = _inputs_inside(requests, final)
    unrecord(files, carry)
    copies, kept = edits_on_rebuild(final, name, files, carry)
    files.update(copies)
    report.written.append(write_directory(out, name, files, carry, drop))
    report.serve_entries += filter(None, [serve_index.entry(requests[i], name, results)])
    report.built[report.written[-1]] = _built(requests[i], results, config)
    if kept is not None:
        report.notes.append(kept_note(name, final, kept))
        report.kept.append({"artifact": final, "folder": os.path.join(final, kept.folder), "files": kept.files})


def _import_validation() -> None:
    # Writing metadata.json validates it with jsonschema (a slow import): done while the
    # workers compile, it is off the critical path.
    try:
        import jsonschema  # noqa: F401
    except ImportError:
        pass


def _with_pass_dump(jobs: list[Job], path: str) -> list[Job]:
    if len(jobs) != 1:
        raise UsageError(f"--dump-passes {path}: dumps one compile, but this build has {len(jobs)} "
                         f"({', '.join(j.label for j in jobs) or 'none'}); name one SRC and one --arch")
    if jobs[0].stage in ("llir", "ptx", "cubin"):
        raise UsageError(f"--dump-passes {path}: a .{jobs[0].stage} input runs no MLIR pass; dump from the .py, "
                         ".ttir or .ttgir")
    try:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    except OSError as e:
        raise UsageError(f"--dump-passes {path}: cannot create its folder ({e}); name another file") from None
    return [replace(jobs[0], dump_passes=os.path.abspath(path))]


def _inputs_inside(requests: Sequence[KernelRequest], directory: str) -> list[str]:
    """Folders of ``directory`` holding an input of this build, and the inputs themselves (relative paths,
    '/'-separated): an input edited in place stays where it is, whatever the rebuild writes beside it."""
    inside = []
    for req in requests:
        rel = os.path.relpath(os.path.dirname(req.source), directory)
        if rel != "." and not rel.startswith(".."):
            rel = rel.replace(os.sep, "/")
            inside += [rel, f"{rel}/{os.path.basename(req.source)}"]
    return inside


def _unique(errors: list[BuildError]) -> list[BuildError]:
    # The same mistake usually fails every arch alike; report it once.
    seen: dict[str, BuildError] = {}
    for e in errors:
        seen.setdefault(re.sub(r" for capability \d+", "", str(e)), e)
    return list(seen.values())
