"""The library entry point: build kernel requests into artifact directories."""
from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Sequence

from ..common import devices
from ..common.arch import Target
from ..common.errors import (ArtifactWriteError, BuildError, BuildFailedError, PtxTargetError, UnsupportedKernelError,
                             UsageError, VariantsFailedError)
from ..common.ir_signature import import_note
from ..common.jobs import Job, JobResult
from ..common.kernel_facts import KernelFacts
from ..common.triton_check import check_triton_version, release_in_range
from . import in_process, serve_index, shards, variants
from .artifact import artifact_files, prepare_output, unrecord, write_directory
from .family import family_files
from .rebuild_edits import edits_on_rebuild, kept_note
from .rebuild_table import TABLE_FILE, table_on_rebuild
from .sources import (KernelRequest, check_input_kind, default_archs, device_profile, imported_without_constexprs,
                      make_jobs)
from .variants import FamilyPlan
from .workers import Task, run_jobs, run_task, run_tasks

CAPTURE_JOB = "tmlr_build.compile.capture:run"
PTXAS_JOB = "tmlr_build.compile.toolchain:ptxas_versions"
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
    shard: shards.ShardOrder | None = None  # --shard I/N: compile part I of N into the shard folder ``out``
    merge: shards.ShardSet | None = None  # tmlr-build merge: take every compile's outcome from these shards
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
    # the device profiles the Python kernels' imports answer as: "device profile: H100 (...) for sm_90a"
    devices: list[str] = field(default_factory=list)
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

    ``config.shard``: compile one part of the jobs into a shard folder instead; ``config.merge``: take every
    job's outcome from the shard folders instead of compiling it, then write as above (shards.py).
    """
    triton_version = check_triton_version()
    out = shards.prepare_shard_output(config.out) if config.shard else prepare_output(config.out)
    report = BuildReport(stopped_after=config.stop_after)
    errors: list[BuildError] = []
    chosen = _chosen(requests, config, triton_version, report, errors)
    unused: dict[int, str] = {}  # request -> what a plain build of an autotuned kernel leaves unused
    plans = _plan_families(chosen, config, report, errors, unused)
    jobs, owner = _jobs(chosen, plans, config, errors)
    _check_names(requests, chosen, plans, errors)
    if errors:
        report.not_written += [_label(req, plans.get(i)) for i, req, _ in chosen]
        raise _failure(errors, report)
    if config.dump_passes is not None:
        jobs = _with_pass_dump(jobs, config.dump_passes)
    report.devices = _device_lines(jobs)
    progress = on_progress or (_stderr_progress if config.progress and (len(jobs) > 2 or plans) else None)
    if config.shard is not None:
        record = shards.build_record(config.shard.args, requests, triton_version, jobs, config.shard.count)
        return _build_shard(out, config.shard, jobs, record, config, report, progress)
    if config.merge is not None:  # the outcomes of this very plan, compiled by the shards
        config.merge.check(shards.build_record(config.merge.args, requests, triton_version, jobs,
                                               len(config.merge.dirs)))
        outcomes = config.merge.outcomes(jobs)
    else:
        outcomes = _compile(jobs, config, progress)
    by_request: dict[int, list[tuple[str | None, JobResult | BuildError]]] = {}
    for (i, vid), outcome in zip(owner, outcomes):
        by_request.setdefault(i, []).append((vid, outcome))
    _write_all(requests, by_request, plans, unused, config, out, report, errors)
    if config.serve_index and config.stop_after is None and report.written:
        try:
            report.warnings += filter(None, [serve_index.write(out, report.serve_entries, report.written)])
        except BuildError as e:
            errors.append(e)
    if errors:
        raise _failure(errors, report)
    return report


def _compile(jobs: list[Job], config: BuildConfig, progress: Callable[..., None] | None) -> list[JobResult | BuildError]:
    if config.in_process and in_process.usable(jobs):
        return in_process.run_jobs(jobs, progress)
    return run_jobs(jobs, config.max_workers, progress,
                    while_waiting=_import_validation if config.stop_after is None else None)


def _build_shard(out: str, order: shards.ShardOrder, jobs: list[Job], record: dict[str, Any], config: BuildConfig,
                 report: BuildReport, progress: Callable[..., None] | None) -> BuildReport:
    """Compile this shard's part of ``jobs`` and write the shard folder ``out`` (shards.py), whatever failed:
    the merge reports a failed compile as the single build does."""
    mine = shards.positions(len(jobs), order.index, order.count)
    record["ptxas"] = run_task(Task(PTXAS_JOB, (sorted({job.capability for job in jobs}),), "ptxas --version"))
    if config.progress:
        print(f"tmlr-build: shard {order.index}/{order.count}: {len(mine)} of {len(jobs)} compiles", file=sys.stderr,
              flush=True)
    outcomes = _compile([jobs[p] for p in mine], config, progress) if mine else []
    report.written.append(shards.write_shard(out, order, record, mine, outcomes))
    report.built[out] = [f"shard {order.index}/{order.count}: {len(mine)} of {len(jobs)} compiles"]
    report.notes.append(f"merge the {order.count} shard folders into artifacts with: tmlr-build merge "
                        f"SHARD_FOLDER... -o OUT")
    failed = _unique([o for o in outcomes if isinstance(o, BuildError)])
    if failed:
        raise _failure(failed, report)
    return report


def _device_lines(jobs: list[Job]) -> list[str]:
    """One line per device profile the Python kernels' imports answer as, with the targets it answers for."""
    archs: dict[str, list[str]] = {}
    for job in sorted(jobs, key=lambda j: j.target):
        if job.device is not None and job.target.arch not in archs.setdefault(job.device, []):
            archs[job.device].append(job.target.arch)
    return [f"device profile: {devices.PROFILES[key].summary()} for {', '.join(on)}" for key, on in archs.items()]


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
            if req.device is not None and req.stage == "python":
                devices.check_runs_any(req.device, targets)
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
                   report: BuildReport, errors: list[BuildError], unused: dict[int, str]) -> dict[int, FamilyPlan]:
    """Read the wrappers of every Python kernel that may have autotune/heuristics (in workers, in parallel)
    and plan its variants; requests that fail here are left out of the build, their errors kept."""
    asked = [(i, req, targets) for i, req, targets in chosen if variants.may_be_wrapped(req)]
    # one read per target: a library may pick its configs from the GPU it imports on (its arch, its properties)
    tasks = [Task(CAPTURE_JOB, (job,), f"{req.source}:{req.kernel}")
             for _, req, targets in asked for job in make_jobs(req, targets, None, False, True)]
    with_options = [(i, req) for i, req, _ in chosen if set(req.options) - _OPTIONS_OF_EVERY_TRITON]
    if with_options:  # option names are Triton's: a worker checks them, beside the wrapper reads
        where = [(os.path.basename(req.source) + (f":{req.kernel}" if req.kernel else ""), req.options)
                 for _, req in with_options]
        tasks.append(Task(OPTIONS_JOB, (where,), "compile options"))
    outcomes = run_tasks(tasks, config.max_workers) if tasks else []
    facts, start = [], 0  # the wrappers of each asked request, read for each of its targets
    for _, _, targets in asked:
        facts.append(outcomes[start:start + len(targets)])
        start += len(targets)
    if with_options:
        checked = outcomes[-1]
        errors += [checked] if isinstance(checked, BuildError) else [e for e in checked if e is not None]
    plans: dict[int, FamilyPlan] = {}
    for (i, req, targets), read in zip(asked, facts):
        try:
            fact, found = _plan_one(req, targets, read, config.max_variants)
            if found is not None and config.stop_after is not None:
                raise UsageError(f"{found.name}: --stop-after writes the IR of one kernel, and this build makes "
                                 f"{len(found.variants)} variants; fix the types, configs and heuristic values")
        except BuildError as e:
            errors.append(e)
            report.not_written.append(_label(req))
            chosen[:] = [c for c in chosen if c[0] != i]
            continue
        if found is None:
            warning = variants.unused_configs_warning(req, fact)
            if warning is not None:
                unused[i] = warning  # said once the artifact is written (it says one was)
        else:
            plans[i] = found
            report.warnings += found.warnings
            if config.progress:
                print(f"tmlr-build: {found.count_line}", file=sys.stderr, flush=True)
    return plans


def _plan_one(req: KernelRequest, targets: tuple[Target, ...], reads: list[Any],
              max_variants: int) -> tuple[KernelFacts, FamilyPlan | None]:
    """The wrappers read for each target, and the family planned from them, which must agree: one family holds one
    set of variants."""
    failed = next((f for f in reads if isinstance(f, BuildError)), None)
    if failed is not None:
        raise failed
    plans = [variants.plan(req, fact, len(targets), max_variants) for fact in reads]
    if all((p and p.facts) == (plans[0] and plans[0].facts) for p in plans):  # the same family, or none of any
        return reads[0], plans[0]
    on = ", ".join(f"{device_profile(req, t)} for {t.arch}" for t in targets)
    raise UnsupportedKernelError(
        f"{_label(req)}: its @triton.autotune / @triton.heuristics differ between the GPUs it is built for ({on}): the "
        "library picks them from the GPU it is imported on, and one artifact holds one set of variants; build each "
        "arch into an artifact of its own (a spec entry per arch, each with its own \"arch\" and \"name\", or one "
        "run per --arch with its own -o)")


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
               plans: dict[int, FamilyPlan], unused: dict[int, str], config: BuildConfig, out: str, report: BuildReport,
               errors: list[BuildError]) -> None:
    """Write each request whose every job compiled: its artifact, or its family folder (without the variants that
    failed to compile, where others did: a :class:`VariantsFailedError` says so); ``unused``: the warnings of plain
    builds of autotuned kernels, said once the artifact is written."""
    names: dict[str, int] = {}
    for i, outs in sorted(by_request.items()):
        family = plans.get(i)
        lost = _failed_variants(outs) if family is not None else {}
        if family is not None and lost and len(lost) < len(family.variants):  # written without them (issue 31)
            family = replace(family, variants=tuple(v for v in family.variants if v.vid not in lost),
                             failed=tuple((v, _first_line(lost[v.vid])) for v in family.variants if v.vid in lost))
            outs = [(vid, o) for vid, o in outs if vid not in lost]
        failed = [o for _, o in outs if isinstance(o, BuildError)]
        if failed:
            errors += _unique(failed)
            report.not_written.append(_label(requests[i], family))
            continue
        results = [o for _, o in outs if isinstance(o, JobResult)]
        name = results[0].name
        try:
            if name in names:
                raise _same_name(name, requests[names[name]], requests[i])
            names[name] = i
            _write_one(requests, i, name, outs, results, family, config, out, report)
        except BuildError as e:
            errors.append(e)
            report.not_written.append(name)
            continue
        if family is not None and family.failed:
            errors.append(_variants_failed(report.written[-1], family, lost))
        elif i in unused:
            report.warnings.append(unused[i])


def _failed_variants(outs: list[tuple[str | None, Any]]) -> dict[str, BuildError]:
    """Each variant of which some job failed (any arch): its first error."""
    lost: dict[str, BuildError] = {}
    for vid, o in outs:
        if isinstance(o, BuildError) and vid is not None:
            lost.setdefault(vid, o)
    return lost


def _first_line(error: BuildError) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


def _variants_failed(path: str, family: FamilyPlan, lost: dict[str, BuildError]) -> VariantsFailedError:
    """The error of a family written without the variants that failed to compile: each one's first error line, and
    the first one's whole text (the same mistake usually fails them all alike)."""
    built, planned = len(family.variants), len(family.variants) + len(family.failed)
    lines = [f"  {v.vid} [{v.full_signature}]: {error}" for v, error in family.failed]
    first = str(lost[family.failed[0][0].vid])
    return VariantsFailedError(
        f"wrote {path} with {built} of {planned} variants; {len(family.failed)} failed to compile, and its index lists "
        f"{'it' if len(family.failed) == 1 else 'them'} under \"failed\" (a call that needs "
        f"{'it' if len(family.failed) == 1 else 'one'} is refused with VariantNotBuiltError naming its error):\n"
        + "\n".join(lines) + f"\nthe first failure in full:\n{first}",
        path, [(v.vid, error) for v, error in family.failed])


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
    if family is not None and family.failed:
        report.built[report.written[-1]].append(f"{len(family.variants)} of {len(family.variants) + len(family.failed)} "
                                                f"variants: {len(family.failed)} failed to compile")
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
