"""Triton compile options: merging their sources, and recording them without machine-specific paths.

Sources, later wins: Triton metadata JSON of an earlier compile < tmlr sidecar < the .ttgir's own
module attributes < explicit command-line/spec options (which must not contradict the .ttgir).
"""
from __future__ import annotations

import os
from typing import Any

from ..common.build_env import affects_build
from ..common.errors import OptionError
from ..common.wording import CLI, Words

# Fields that parse_options derives from the target (or that hold a path); taking them from a
# metadata file made for another arch, or another machine, would change or break the build.
_DERIVED = frozenset({"arch", "extern_libs", "supported_fp8_dtypes", "deprecated_fp8_dtypes",
                      "deprecated_fp8_dot_operand_dtypes", "max_num_imprecise_acc_default", "backend_name"})
# options a .ttgir carries as module attributes (ttg.maxnreg: Triton 3.4+ writes it; 3.3 loses the option)
_TTGIR_ATTRS = {"num_warps": "ttg.num-warps", "num_ctas": "ttg.num-ctas", "maxnreg": "ttg.maxnreg"}



def cuda_option_fields() -> tuple[str, ...]:
    return tuple(cuda_option_defaults())


def cuda_option_defaults() -> dict[str, Any]:
    """Every CUDAOptions field and its dataclass default (``dataclasses.MISSING`` for a default_factory)."""
    from triton.backends.nvidia.compiler import CUDAOptions

    return {k: f.default for k, f in CUDAOptions.__dataclass_fields__.items()}


def _as_tuples(value: Any) -> Any:
    # CUDAOptions is hashed through lru_cache: lists read back from JSON must become tuples again.
    if isinstance(value, list):
        return tuple(_as_tuples(v) for v in value)
    return value


def _as_lists(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_as_lists(v) for v in value]
    return value


def rebuildable(options: dict[str, Any] | None) -> dict[str, Any]:
    """The options of a recorded compile that may be passed again to parse_options."""
    if not options:
        return {}
    fields = set(cuda_option_fields())
    return {k: _as_tuples(v) for k, v in options.items() if k in fields and k not in _DERIVED and v is not None}


def check_known(options: dict[str, Any], where: str) -> None:
    settable = [f for f in cuda_option_fields() if f not in _DERIVED]
    unknown = sorted(set(options) - set(settable))
    if unknown:
        derived = [k for k in unknown if k in _DERIVED]
        why = (f" ({', '.join(derived)} follow from --arch, and extern libraries other than libdevice are not "
               "supported)") if derived else ""
        import triton

        raise OptionError(f"{where}: cannot set Triton option(s) {', '.join(unknown)}{why}; Triton "
                          f"{triton.__version__}'s settable CUDAOptions are {', '.join(settable)}")


def check_requests(requests: list[tuple[str, dict[str, Any]]], workdir: str) -> list[OptionError | None]:
    """A worker task run before any compile: for each ``(where, options)`` the OptionError of an option
    this Triton does not know, else None (the parent never imports Triton, which knows the names)."""
    out: list[OptionError | None] = []
    for where, options in requests:
        try:
            check_known(options, where)
            out.append(None)
        except OptionError as e:
            out.append(e)
    return out


def merge(explicit: dict[str, Any], recorded: list[dict[str, Any] | None], ttgir_attrs: dict[str, object],
          where: str, words: Words = CLI) -> dict[str, Any]:
    """Merge option sources (see the module docstring) into the dict given to parse_options; ``words``: how the
    explicit options were given (flags, or a jit call's keywords)."""
    check_known(explicit, where)
    merged: dict[str, Any] = {}
    for rec in recorded:
        merged.update(rebuildable(rec))
    for opt, attr in _TTGIR_ATTRS.items():
        if attr in ttgir_attrs:
            have = ttgir_attrs[attr]
            if opt in explicit and explicit[opt] != have:
                raise OptionError(f"{where}: {words.option(opt, explicit[opt])} contradicts the .ttgir, which was made "
                                  f"with {attr} = {have}; drop {words.option(opt)} or build again from the .ttir/.py")
            merged[opt] = have
    merged.update({k: _as_tuples(v) for k, v in explicit.items() if v is not None})
    return merged


def record(options: Any, line_info: bool) -> dict[str, Any]:
    """CUDAOptions as JSON for provenance: lists for tuples, extern libraries by name only."""
    out = {k: _as_lists(v) for k, v in sorted(vars(options).items()) if k != "extern_libs"}
    out["extern_libs"] = sorted(name for name, _path in (options.extern_libs or ()))
    # Not a CUDAOptions field, but it changes the cubin bytes (ptxas -suppress-debug-info).
    out["line_info"] = line_info
    return out


def scrub_environment(line_info: bool, cache_dir: str) -> None:
    """Make this (worker) process's Triton independent of the user's shell and cache."""
    for key in list(os.environ):
        if affects_build(key):
            del os.environ[key]
    os.environ["TRITON_CACHE_DIR"] = cache_dir
    if not line_info:
        os.environ["TRITON_DISABLE_LINE_INFO"] = "1"
