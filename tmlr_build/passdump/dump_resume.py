"""Building a kernel from one file that ``tmlr-build --split-dump`` wrote (see README, "Resuming from a pass dump")."""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from typing import Any

from ..builder.build import BuildConfig, BuildReport, build
from ..builder.sources import request
from ..builder.workers import Task, run_task
from ..common.arch import Target
from ..common.errors import InputError
from ..common.triton_check import check_triton_version

# llir-lowering passes before this one still see TTGIR; make_llir re-runs them from the start.
_FIRST_LLVM_PASS = "convert-scf-to-cf"
_FINISH_TTGIR = "tmlr_build.compile.resume_ttgir:finish"  # runs in a compile worker


def _entry(path: str) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """The index entry of ``path``, the entries before it and those after it."""
    index = os.path.join(os.path.dirname(os.path.abspath(path)), "index.json")
    try:
        with open(index, encoding="utf-8") as f:
            passes = json.load(f)["passes"]
    except (OSError, ValueError, KeyError) as e:
        raise InputError(f"{index}: cannot read the --split-dump index ({e}); split the log again with "
                         "tmlr-build --split-dump LOG -o DIR") from None
    for i, p in enumerate(passes):
        if p["file"] == os.path.basename(path):
            return p, passes[:i], passes[i + 1:]
    raise InputError(f"{path}: not listed in {index}; pass a file that --split-dump wrote")


def _refuse_unbuildable(path: str, entry: dict[str, Any]) -> None:
    if entry.get("internal"):
        raise InputError(f"{path}: {entry['pass_name']}'s own dump from inside a pass ({entry['pass_arg']}): the pass "
                         "had not finished, so no pipeline can continue from it; take the file of the next pass")
    if not entry["buildable"]:
        raise InputError(f"{path}: dumped by a nested pass manager for one {entry['operation']} (the inliner's "
                         "per-function canonicalize, LLVM's per-function passes), not a module; take a later file")


def _stage_input(path: str, work: str, num_stages: int | None) -> str:
    """The .ttir/.ttgir that continues the pipeline where ``path`` was dumped."""
    entry, before, after = _entry(path)
    name = os.path.join(work, os.path.splitext(os.path.basename(path))[0])
    _refuse_unbuildable(path, entry)
    llvm_started = any(p["pass_arg"] == _FIRST_LLVM_PASS for p in before)  # the file is before its own pass
    if entry["stage"] == "ttir" or (entry["stage"] == "ttgir" and not any(p["stage"] == "ttgir" for p in before)):
        if entry["pass_arg"] == "inline":
            raise InputError(f"{path}: the IR before the inliner still holds un-inlined callee signatures "
                             "tmlr cannot parse as TTIR; take a later file")
        shutil.copy(path, name + ".ttir")  # make_ttir's passes map TTIR to TTIR: re-running the stage is safe
        return name + ".ttir"
    if entry["stage"] == "llir-lowering" and not llvm_started:
        shutil.copy(path, name + ".ttgir")
        return name + ".ttgir"
    if entry["stage"] == "llir-lowering":
        raise InputError(f"{path}: dumped after {_FIRST_LLVM_PASS} (LLVM dialect); tmlr cannot resume there: "
                         "take a file from before that pass")
    out = name + ".ttgir"
    stage = [p for p in before + [entry] + after if p["stage"] == entry["stage"] and not p.get("internal")]
    complete = any(p["stage"] != entry["stage"] for p in after)  # the log goes on past this stage
    task = (os.path.abspath(path), entry["stage"], [p["pass_arg"] for p in stage], stage.index(entry), out,
            num_stages, complete)
    run_task(Task(_FINISH_TTGIR, task, path))
    return out


def build_from_dump(path: str, out: str, archs: tuple[Target, ...] | None, options: dict[str, Any] | None = None,
                    name: str | None = None, *, signature: str | None = None,
                    constexprs: dict[str, Any] | None = None, arg_names: tuple[str, ...] | None = None,
                    ptx: bool = False, **config: Any) -> BuildReport:
    """Build the split-dump file ``path`` into ``out/<name>/`` (``options`` as the original compile's).

    ``archs`` None: the file's own (``ttg.target``; a TTIR file needs archs). ``signature``/``constexprs``/
    ``arg_names`` as for a .ttir/.ttgir input; ``ptx`` as --ptx; ``config``: other BuildConfig fields (keep_ir, stop_after, ...).
    This is what ``tmlr-build DIR/NN-Pass.mlir`` calls.
    """
    check_triton_version()
    options = dict(options or {})
    with tempfile.TemporaryDirectory(prefix="tmlr-resume-") as work:
        source = _stage_input(path, work, options.get("num_stages"))
        req = request(source, signature=signature, constexprs=constexprs, arg_names=arg_names, options=options,
                      name=name, ptx=ptx)
        return build([req], BuildConfig(out=out, archs=archs, **{"progress": False, **config}))
