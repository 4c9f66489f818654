"""Runs inside a compile worker: read a Python kernel's @triton.autotune / @triton.heuristics wrappers.

The parent never imports Triton, so it asks a worker: import the kernel file (as a compile would) and
return the kernel's parameters, its autotuner's configs and settings, and its heuristics as
expressions where they are simple enough (common/heuristics.py) - a KernelFacts record.
"""
from __future__ import annotations

import builtins
import inspect
import json
import os
from typing import Any

from tmlr_runtime.objects import of

from ..common import heuristics as heur
from ..common.errors import UnsupportedKernelError
from ..common.jobs import Job
from ..common.kernel_facts import AutotuneFact, ConfigFact, HeuristicFact, KernelFacts, ParamFact
from . import options as opts, python_source, triton_api
from .build_driver import standing_in


def run(job: Job, workdir: str) -> KernelFacts:
    """The facts of ``job``'s kernel (its source, module and kernel name; the target only answers import-time
    questions of the file)."""
    api = triton_api.current()
    opts.scrub_environment(True, os.path.join(workdir, "cache"))
    with standing_in(job.capability, job.device):
        return _facts(api, job)


def _facts(api: triton_api.TritonAPI, job: Job) -> KernelFacts:
    module, fn = python_source.load_job_kernel(job)
    params = tuple(_param(p) for p in fn.params)
    autotune, found, inside = None, [], False
    for kind, wrapper in api.wrappers(getattr(module, job.kernel)):
        if kind == "autotune":
            autotune, inside = _autotune(api, wrapper, job.label), True
        else:
            found += [_heuristic(h_name, f, inside) for h_name, f in api.heuristic_values(wrapper).items()]
    return KernelFacts(params, autotune, tuple(found))


def _param(p: Any) -> ParamFact:
    if not p.has_default:
        return ParamFact(p.name, bool(p.is_constexpr))
    if of(p.default) is not None:  # a Triton object (tl.float32): its record
        return ParamFact(p.name, bool(p.is_constexpr), True, of(p.default))
    try:
        json.dumps(p.default)
        return ParamFact(p.name, bool(p.is_constexpr), True, p.default)
    except (TypeError, ValueError):
        return ParamFact(p.name, bool(p.is_constexpr), True)


def _autotune(api: triton_api.TritonAPI, tuner: Any, label: str) -> AutotuneFact:
    fields = api.autotune_fields(tuner)
    defaults = opts.cuda_option_defaults()
    configs = tuple(_config(api, c, i, label, defaults) for i, c in enumerate(fields["configs"]))
    hooks = fields["user_hooks"] or any(c.has_pre_hook for c in configs)
    return AutotuneFact(tuple(fields["key"]), configs, tuple(fields["reset_to_zero"]), tuple(fields["restore_value"]),
                        hooks, tuple(fields["pruning"]), api.dtype_in_key)


def _config(api: triton_api.TritonAPI, config: Any, index: int, label: str, defaults: dict[str, Any]) -> ConfigFact:
    f = api.config_fields(config)
    if f["other"].get("ir_override") is not None:
        raise UnsupportedKernelError(f"{label}: autotune config {index} sets ir_override; tmlr-build compiles the "
                                     "kernel's source: drop ir_override, or build that IR file as its own input")
    other = {k: v for k, v in f["other"].items() if k in defaults and v != defaults[k]}
    try:
        json.dumps(f["kwargs"])
    except (TypeError, ValueError):
        raise UnsupportedKernelError(f"{label}: autotune config {index} has kwargs {f['kwargs']!r}; only numbers, "
                                     "booleans, strings and None can be recorded as constexprs") from None
    return ConfigFact(f["kwargs"], f["num_warps"], f["num_stages"], f["num_ctas"], f["maxnreg"], other, f["pre_hook"])


def _heuristic(name: str, function: Any, after_config: bool) -> HeuristicFact:
    found = _expression(function)
    if found.expr is None:
        return HeuristicFact(name, None, found.why, after_config, False)
    return HeuristicFact(name, found.expr, None, after_config, heur.is_bool_expression(found.expr))


def _expression(function: Any) -> heur.Extracted:
    code = getattr(function, "__code__", None)
    if code is None:
        return heur.Extracted(None, f"it is a {type(function).__name__}, not a lambda or def")
    try:
        lines, _ = inspect.findsource(function)
    except (OSError, TypeError):
        return heur.Extracted(None, "its source is not available")
    found = heur.extract("".join(lines), code)
    wrong = [n for n in found.globals_used if not _is_what_it_looks_like(function.__globals__, n)]
    if found.expr is not None and wrong:
        return heur.Extracted(None, f"{wrong[0]!r} is not Triton's or Python's own in its module")
    return found


def _is_what_it_looks_like(module_globals: dict[str, Any], name: str) -> bool:
    import triton

    if name in heur.TRITON_FUNCTIONS:
        return module_globals.get(name) is getattr(triton, name)
    if name in heur.FUNCTIONS:
        return name not in module_globals or module_globals[name] is getattr(builtins, name)
    return module_globals.get(name) is triton
