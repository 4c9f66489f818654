"""Finishing a mid-``make_ttgir`` dump: run only the passes that had not run yet (in a compile worker).

:func:`finish` parses a file that ``--split-dump`` wrote from inside make_ttgir (or a Gluon kernel's
TTGIR stage, gluon_to_ttgir) and runs that stage itself with the ``add_*`` calls that already ran
skipped, so the pass list, its order and its arguments are the installed Triton's own (fence
insertion after pipelining is never skipped when the dump was taken before it). The result is a
finished TTGIR that builds like any ``.ttgir``. The dump must come from the same Triton release:
:func:`check_same_pipeline` refuses one whose passes differ.
"""
from __future__ import annotations

import os
import re
from typing import Any, Callable

from tmlr_runtime.abi import split_top_level

from ..common.arch import triton_target
from ..common.errors import BuildError, CompileError, TritonReleaseMismatchError
from ..common.jobs import DIAGNOSTICS_FILE
from ..common.mlir_text import module_attributes
from . import triton_api
from .diagnostics import captured_stderr
from .options import scrub_environment


def _top_level(pipeline: str) -> list[str]:
    """``any(a{x=1},b)`` -> ``["a", "b"]``: the passes one ``add_*`` call put at the top level."""
    inner = pipeline[pipeline.index("(") + 1:pipeline.rindex(")")] if "(" in pipeline else pipeline
    return [re.split(r"[{(]", part, 1)[0].strip() for part in split_top_level(inner, "{(", "") if part]


def calls_to_skip(calls: list[list[str]], dumped: list[str], own: str) -> int:
    """How many ``add_*`` calls of make_ttgir fully ran before the dump entry of pass ``own``.

    ``dumped`` are the pass arguments of the stage's dump entries before the file. An entry that is
    not the next top-level pass was dumped from a pipeline nested inside the previous pass (e.g. the
    canonicalize run inside tritongpu-optimize-dot-operands): that pass had not finished, so a file
    dumped there re-runs it from its start instead of skipping it.
    """
    flat = [(i, name) for i, names in enumerate(calls) for name in names]
    j = 0
    for arg in dumped:
        if j < len(flat) and flat[j][1] == arg:
            j += 1
    if j < len(flat) and flat[j][1] == own:
        return flat[j][0]
    return flat[j - 1][0] if j else 0


def _patched(record: list[list[str]] | None, skip: int, context: Any) -> Callable[[], None]:
    """Wrap every pass-adding binding: record each call's passes, or drop the first ``skip`` calls."""
    from triton._C.libtriton import ir

    state = {"seen": 0}
    undo: list[tuple[Any, str, Any]] = []
    for mod in triton_api.current().pass_modules():
        for name in dir(mod):
            if not name.startswith("add_"):
                continue
            original = getattr(mod, name)

            def wrapper(pm: Any, *args: Any, _f: Any = original) -> Any:
                state["seen"] += 1
                if record is not None:
                    scratch = ir.pass_manager(context)
                    _f(scratch, *args)
                    record.append(_top_level(scratch.get_pipeline_str()))
                    return None
                return None if state["seen"] <= skip else _f(pm, *args)

            setattr(mod, name, wrapper)
            undo.append((mod, name, original))
    return lambda: [setattr(m, n, f) for m, n, f in undo] and None


def check_same_pipeline(path: str, calls: list[list[str]], stage_args: list[str], complete: bool) -> None:
    """Refuse a dump whose stage ran other passes than the installed Triton's stage would.

    Every top-level pass of the stage is dumped, in order (nested pipelines add more entries), so the
    installed pass list must be a subsequence of the dump's. ``complete``: the log holds the whole stage
    (a compile that failed partway does not).
    """
    flat = [name for names in calls for name in names]
    j = 0
    for arg in stage_args:
        if j < len(flat) and flat[j] == arg:
            j += 1
    if j == len(flat) or not complete:
        return
    raise TritonReleaseMismatchError(
        f"{path}: the dump's stage ran other passes than the installed Triton {triton_api.current().version} would "
        f"(from {flat[j]!r} on, for these options), so which of them already ran cannot be told: resume it with "
        "the Triton release (and the --num-stages, --num-warps) of the compile that wrote the dump "
        "(tmlr-build --python PATH builds with another interpreter's Triton)")


def _load(path: str, stage: str, num_stages: int | None) -> tuple[Any, Any, Any, int, Any]:
    """(the stage's function, the parsed module, options, capability, MLIR context) for a dumped TTGIR file."""
    from triton._C.libtriton import ir
    from triton.backends.compiler import GPUTarget
    from triton.backends.nvidia.compiler import CUDABackend

    with open(path, encoding="utf-8") as f:
        attrs = module_attributes(f.read())
    target = triton_target(attrs.get("ttg.target"))
    if target is None or "ttg.num-warps" not in attrs:
        raise CompileError(f"{path}: finishing the {stage} stage failed: no ttg.num-warps or CUDA ttg.target "
                           "attribute: not TTGIR (build a TTIR dump as .ttir)")
    backend = CUDABackend(GPUTarget("cuda", target.capability, 32))
    opts = {"num_warps": int(attrs["ttg.num-warps"]), "num_ctas": int(attrs.get("ttg.num-ctas", 1))}
    if num_stages is not None:
        opts["num_stages"] = num_stages
    context = ir.context()
    ir.load_dialects(context)
    backend.load_dialects(context)
    module = ir.parse_mlir_module(path, context)
    module.context = context
    run_stage = triton_api.current().stage_function(backend, stage)
    return run_stage, module, backend.parse_options(opts), target.capability, context


def stage_calls(path: str, stage: str, num_stages: int | None = None) -> list[list[str]]:
    """The passes each ``add_*`` call of the stage adds for the file's target and options (nothing runs)."""
    run_stage, module, options, capability, context = _load(path, stage, num_stages)
    calls: list[list[str]] = []
    undo = _patched(calls, 0, context)
    try:
        run_stage(module, {}, options, capability)
    finally:
        undo()
    return calls


def resume(path: str, stage: str, stage_args: list[str], position: int, out: str, num_stages: int | None = None,
           complete: bool = True) -> int:
    """Finish make_ttgir (``stage`` "ttgir") or a Gluon kernel's TTGIR stage ("gluon") on ``path``.

    ``stage_args``: the pass args of all the stage's dump entries, ``path`` being entry ``position``.
    Returns how many of the stage's ``add_*`` calls were skipped.
    """
    calls = stage_calls(path, stage, num_stages)
    check_same_pipeline(path, calls, stage_args, complete)
    skip = calls_to_skip(calls, stage_args[:position], stage_args[position])
    run_stage, module, options, capability, context = _load(path, stage, num_stages)
    undo = _patched(None, skip, context)
    try:
        run_stage(module, {}, options, capability)
    finally:
        undo()
    with open(out, "w", encoding="utf-8") as f:
        f.write(str(module))
    return skip


def finish(path: str, stage: str, stage_args: list[str], position: int, out: str, num_stages: int | None,
           complete: bool, workdir: str) -> int:
    """:func:`resume` as a worker task: the user's TRITON_*/MLIR_* settings are dropped (an exported
    MLIR_DUMP_PATH would be overwritten by these passes' dumps) and MLIR's diagnostics are kept for
    the message."""
    scrub_environment(True, os.path.join(workdir, "cache"))
    with captured_stderr(os.path.join(workdir, DIAGNOSTICS_FILE)) as diag:
        try:
            return resume(path, stage, stage_args, position, out, num_stages, complete)
        except BuildError:
            raise
        except Exception as e:  # MLIR has printed its diagnostics (file:line) on fd 2
            said = f"{diag.text()}\n{type(e).__name__}: {e}".strip()
            raise CompileError(f"{path}: finishing the {stage} stage failed:\n{said[-2000:]}") from None
