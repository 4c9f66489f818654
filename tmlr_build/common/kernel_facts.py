"""What a compile worker reads off a Python kernel's @triton.autotune / @triton.heuristics wrappers.

Plain picklable records: the worker (compile/capture.py, which imports Triton) fills them, the parent
plans the variants from them (builder/variants.py) and writes them into the family index.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tmlr_runtime.artifact.family_index import Config


@dataclass(frozen=True)
class ParamFact:
    name: str
    constexpr: bool
    has_default: bool = False
    default: Any = None  # JSON-able defaults only; None for others


class ConfigFact(Config):
    """One triton.Config: the runtime's record (what the index holds, ``to_json``) and what only the build needs
    (a frozen record as the runtime's, not a dataclass)."""

    options: dict[str, Any] = {}  # compile options beyond the four above (3.3 warp-spec); never changed in place
    has_pre_hook: bool = False

    def compile_options(self) -> dict[str, Any]:
        out = {"num_warps": self.num_warps, "num_stages": self.num_stages, "num_ctas": self.num_ctas,
               **self.options}
        if self.maxnreg is not None:
            out["maxnreg"] = self.maxnreg
        return out


@dataclass(frozen=True)
class AutotuneFact:
    key: tuple[str, ...]
    configs: tuple[ConfigFact, ...]
    reset_to_zero: tuple[str, ...]
    restore_value: tuple[str, ...]
    has_pre_hook: bool  # a user pre_hook or post_hook, or a Config.pre_hook: cannot run without Triton
    pruning: tuple[str, ...]  # prune_configs_by keys given (early_config_prune, perf_model): not applied
    dtype_in_key: bool  # the autotuner appends str(arg.dtype) of each argument with a dtype to the key


@dataclass(frozen=True)
class HeuristicFact:
    name: str
    expr: str | None  # see common/heuristics.py; None: the caller passes the value
    why: str | None  # why expr is None
    after_config: bool  # applied inside @triton.autotune (sees the config's kwargs)
    is_bool: bool  # expr always gives a bool: both values are built


@dataclass(frozen=True)
class KernelFacts:
    params: tuple[ParamFact, ...]
    autotune: AutotuneFact | None
    heuristics: tuple[HeuristicFact, ...]
