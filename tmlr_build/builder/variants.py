"""Variant expansion: one Python kernel request -> the variants of a family artifact (issue 14).

Factors: type variables (``"types": {"T": ["fp16", "bf16"]}``, ``*T:16`` in the signature), ``:16?``
entries (divisible by 16 and not; inside tuples too: ``(*T:16?, *T:16?), i32:16?``), autotune configs, and heuristic values (bool-valued heuristics
build True and False; others the values the spec lists). Constexprs that a config or a heuristic
sets are filled per variant, so the user's signature leaves them out. A heuristic value that the variant's
signature rules out (common/heuristics.py, ``decided``) is not planned (issue 31). Pure planning: no Triton.
"""
from __future__ import annotations

import hashlib
import itertools
import re
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

from tmlr_runtime.abi import PARAM_TYPES, SCALAR_TYPES, TL_DTYPES, TL_NAMES, format_signature, split_top_level
from tmlr_runtime.artifact.heuristics import names_used

from ..common import heuristics as heur
from ..common import signature as sig
from ..common.errors import MaxVariantsError, OptionError, SignatureError, SpecError
from ..common.kernel_facts import ConfigFact, HeuristicFact, KernelFacts
from .sources import KernelRequest

DEFAULT_MAX_VARIANTS = 256
MAYBE_16 = ":16?"
_TUPLE_ENTRY = re.compile(r"^([A-Za-z_]\w*)?\((?!\)$)")  # a tuple or NamedTuple entry (signature.parse_tuple); () is a constexpr
_TYPE_VAR = re.compile(r"^(\*?)([A-Za-z_]\w*)(:.*)?$")
_DTYPE_VAR = re.compile(r"^(?:tl|triton\.language)\.([A-Za-z_]\w*)$")  # tl.T: the dtype constexpr of type variable T


@dataclass(frozen=True)
class Variant:
    vid: str  # its folder under v/: c<config>-<12 hex of the signature text's sha256> (v-... without a config)
    config: int | None  # index into FamilyPlan.configs
    signature: str  # what the compile job gets: the user's entries with types and patterns chosen
    constexprs: dict[str, Any]  # the user's, plus the config's kwargs and the heuristic values
    options: dict[str, Any]
    full_signature: str  # every parameter, constexpr values included (the index records it)


@dataclass(frozen=True)
class FamilyPlan:
    name: str
    facts: KernelFacts
    configs: tuple[ConfigFact, ...] | None  # the configs built (None: no autotune in this family)
    variants: tuple[Variant, ...]
    count_line: str  # "matmul: 2 types x 1 pattern x 4 configs x 2 EVEN_K x 1 arch = 16 variants"
    warnings: tuple[str, ...]
    failed: tuple[tuple[Variant, str], ...] = ()  # variants that failed to compile, each with its error's first line

    @property
    def has_tuples(self) -> bool:
        """Whether the kernel has tuple parameters (its index then says schema version 6)."""
        return any(_TUPLE_ENTRY.match(e) for e in split_top_level(self.variants[0].signature))


def wants_family(req: KernelRequest) -> bool:
    """Whether the request asks for variants itself (types, :16?, configs or heuristic values)."""
    return bool(req.types or req.configs is not None or req.heuristics or MAYBE_16 in (req.signature or ""))


def may_be_wrapped(req: KernelRequest) -> bool:
    """Whether a worker must read the kernel's wrappers: it asks for variants, or its file names autotune or
    heuristics (a file that never does cannot apply them, and is built as before, without the extra import)."""
    if req.stage != "python":
        return False
    if wants_family(req):
        return True
    with open(req.source, encoding="utf-8", errors="replace") as f:
        text = f.read()
    return "autotune" in text or "heuristics" in text


def plan(req: KernelRequest, facts: KernelFacts, archs: int, max_variants: int) -> FamilyPlan | None:
    """The family to build for ``req``, or None: a single artifact, as without variants."""
    label = str(req.kernel)
    filled, problems = _filled_names(facts, label)
    entries = split_top_level(req.signature) if req.signature and req.signature.strip() else []
    open_all = [p.name for p in facts.params if p.name not in req.constexprs]
    family_open = [n for n in open_all if n not in filled]
    # more entries than the family takes: they are positional over every parameter, the filled ones included
    by_signature = set(open_all[:len(entries)]) if len(entries) > len(family_open) else set()
    fixed = set(filled) <= set(req.constexprs) | by_signature
    # configs that set launch options only (num_warps, num_stages, maxnreg) are never fixed by a constexpr: they
    # make a family of one variant per config, whatever the user fixed
    launch_only = facts.autotune is not None and not any(c.kwargs for c in facts.autotune.configs)
    if fixed and not launch_only and not wants_family(req):
        return None  # the user fixed every constexpr a config or heuristic sets: one kernel, as before
    configs: tuple[ConfigFact, ...] | None = None
    heuristics: list[HeuristicFact] = []
    if not fixed:
        if problems:
            raise SpecError(problems[0])
        config_names = sorted(n for n, whence in filled.items() if whence == "config" and n in req.constexprs)
        if config_names:
            raise SpecError(f"{label}: {', '.join(config_names)} come from the autotune configs; leave them out of "
                            "the constexprs and narrow the configs with \"configs\" (--configs), or fix every "
                            "config and heuristic constexpr to build one kernel")
        _check_entries(label, facts, set(req.constexprs) | set(filled), entries)
        heuristics = [h for h in facts.heuristics if h.name not in req.constexprs]
    if facts.autotune is not None and (not fixed or launch_only):
        configs = _configs(req, facts, label)
    if req.configs is not None and configs is None:
        why = "has no @triton.autotune" if facts.autotune is None else "gets every config constexpr from you"
        raise SpecError(f"{label}: \"configs\" (--configs) given, but the kernel {why}; drop it")
    unknown = sorted(set(req.heuristics or {}) - {h.name for h in heuristics})
    if unknown:
        raise SpecError(f"{label}: \"heuristics\" names {', '.join(unknown)}, which is no @triton.heuristics value "
                        f"built per variant (those are: {', '.join(h.name for h in heuristics) or 'none'})")
    named = open_all if fixed else family_open  # the parameters the entries give
    _check_tuples(label, facts, {n for n, e in zip(named, entries) if _TUPLE_ENTRY.match(e)}, configs is not None)
    return _expand(req, facts, configs, heuristics, entries, archs, max_variants)


def unused_configs_warning(req: KernelRequest, facts: KernelFacts) -> str | None:
    """What to say when :func:`plan` builds an autotuned kernel as one plain artifact: the user fixed every
    constexpr its configs set, so none of the configs' options (num_warps, num_stages) was applied."""
    if facts.autotune is None:
        return None
    filled, _ = _filled_names(facts, str(req.kernel))
    names = ", ".join(sorted(n for n, whence in filled.items() if whence == "config"))
    options = {k: v for k, v in req.options.items() if k in ("num_warps", "num_stages", "num_ctas", "maxnreg")}
    used = ", ".join(f"{k}={v}" for k, v in options.items()) or "Triton's defaults"
    return (f"{req.kernel}: every constexpr the {len(facts.autotune.configs)} @triton.autotune configs set ({names}) is "
            f"fixed by the signature or --constexpr, so one plain artifact was built with {used}: the autotune configs "
            f"(their num_warps, num_stages) were not used; to build them as a family, leave {names} out of the "
            "signature (--configs I,J picks some)")


def _filled_names(facts: KernelFacts, label: str) -> tuple[dict[str, str], list[str]]:
    """Constexprs a config or a heuristic sets (name -> "config" | "heuristic"), and what cannot be built per
    variant (an error only when the user does not fix those names)."""
    params = {p.name: p for p in facts.params}
    filled: dict[str, str] = {}
    problems = []
    for config in facts.autotune.configs if facts.autotune else ():
        filled.update((k, "config") for k in config.kwargs)
    for h in facts.heuristics:
        if h.name in filled:
            problems.append(f"{label}: {h.name} is set by more than one config/heuristic; tmlr-build cannot tell "
                            "which value a call gets - set it in one place")
        filled[h.name] = "heuristic"
    for name, whence in filled.items():
        if name not in params or not params[name].constexpr:
            what = "not a parameter" if name not in params else "not a tl.constexpr parameter"
            problems.append(f"{label}: the {whence} sets {name}, which is {what} of the kernel; tmlr-build builds "
                            "constexprs per variant only (compile options such as num_warps come from configs)")
    return filled, problems


def _check_entries(label: str, facts: KernelFacts, filled: set[str], entries: Sequence[str]) -> None:
    """The signature gives one entry per parameter that no constexpr, config or heuristic sets."""
    open_names = [p for p in facts.params if p.name not in filled]
    rest = open_names[len(entries):]
    if len(entries) <= len(open_names) and all(p.constexpr and p.has_default for p in rest):
        return
    names = [p.name for p in open_names]
    optional = sig.optional_tail(names, {p.name for p in open_names if p.constexpr and p.has_default}.__contains__)
    per_variant = [n for n in (p.name for p in facts.params) if n in filled]
    set_elsewhere = (f"; {', '.join(per_variant)} {'is' if len(per_variant) == 1 else 'are'} set per variant by the "
                     "autotune configs, the heuristics or the constexprs - leave them out") if per_variant else ""
    raise SignatureError(
        f"{label}: the signature has {len(entries)} entries but the variants expect {len(open_names)}, one for each "
        f"of {', '.join(names) or '(none)'} in this order{sig.may_leave_out(names, optional)}{set_elsewhere}")


def _check_tuples(label: str, facts: KernelFacts, tuples: set[str], tuned: bool) -> None:
    """The autotune key, reset_to_zero, restore_value (``tuned``: the index records them) and the heuristic expressions
    name plain parameters (not ``tuples``): the runtime reads them by name among a call's flattened elements."""
    tune = facts.autotune
    uses = [("the autotune key", tune.key), ("reset_to_zero", tune.reset_to_zero),
            ("restore_value", tune.restore_value)] if tune is not None and tuned else []
    uses += [(f"heuristic {h.name} ({h.expr})", names_used(h.expr)) for h in facts.heuristics if h.expr is not None]
    for what, names in uses:
        bad = sorted(tuples & set(names))
        if bad:
            raise SpecError(f"{label}: {what} reads {bad[0]}, a tuple parameter; a family of a kernel with tuple "
                            "parameters reads plain parameters there: name a plain parameter (e.g. a size), or fix "
                            "the value with --constexpr and build without it")


def _configs(req: KernelRequest, facts: KernelFacts, label: str) -> tuple[ConfigFact, ...]:
    assert facts.autotune is not None  # the caller checked
    available = facts.autotune.configs
    if req.configs is None or req.configs == "all":
        return available
    if isinstance(req.configs, list) and all(isinstance(c, int) and not isinstance(c, bool) for c in req.configs):
        bad = [i for i in req.configs if not 0 <= i < len(available)]
        if bad or not req.configs or len(set(req.configs)) != len(req.configs):
            raise SpecError(f"{label}: \"configs\" {req.configs}: give distinct indices from 0 to "
                            f"{len(available) - 1} (the kernel's @triton.autotune has {len(available)} configs)")
        return tuple(available[i] for i in req.configs)
    if isinstance(req.configs, list) and req.configs and all(isinstance(c, dict) for c in req.configs):
        return tuple(config_from_dict(c, f"{label}: \"configs\"[{i}]") for i, c in enumerate(req.configs))
    raise SpecError(f'{label}: "configs" must be "all", a list of config indices like [0, 2], or a list of config '
                    'objects like {"kwargs": {"BLOCK": 128}, "num_warps": 4}')


def config_from_dict(doc: dict[str, Any], where: str) -> ConfigFact:
    """A config written in a spec: the family index's form, with triton.Config's defaults."""
    allowed = {"kwargs", "num_warps", "num_stages", "num_ctas", "maxnreg"}
    unknown = sorted(set(doc) - allowed)
    if unknown or not isinstance(doc.get("kwargs", {}), dict):
        raise SpecError(f"{where}: a config is {{\"kwargs\": {{...}}, \"num_warps\": 4, \"num_stages\": 3, "
                        f"\"num_ctas\": 1, \"maxnreg\": null}}; unknown keys: {', '.join(unknown) or 'none'}")
    return ConfigFact(dict(doc.get("kwargs", {})), int(doc.get("num_warps", 4)), int(doc.get("num_stages", 3)),
                      int(doc.get("num_ctas", 1)), doc.get("maxnreg"))


def _type_choices(req: KernelRequest, entries: Sequence[str], label: str) -> list[dict[str, str]]:
    types = req.types or {}
    leaves = [leaf for e in entries for leaf in _leaves(e)]
    used = {m.group(2) for m in map(_TYPE_VAR.match, leaves) if m}
    dtypes = {m.group(1) for m in map(_DTYPE_VAR.match, leaves) if m and m.group(1) in types}
    used |= dtypes
    undeclared = sorted(n for n in used - set(types) if n not in PARAM_TYPES and n not in ("True", "False", "None"))
    if undeclared:
        raise SpecError(f"{label}: {undeclared[0]} in the signature is no type; as a type variable, declare it: "
                        f"\"types\": {{\"{undeclared[0]}\": [\"fp16\", \"bf16\"]}} (--types {undeclared[0]}=fp16,bf16)")
    for var, values in types.items():
        if var in PARAM_TYPES or var in ("True", "False", "None") or not var.isidentifier():
            raise SpecError(f"{label}: type variable {var!r}: pick a name that is no type (T, DTYPE, ...)")
        if var not in used:
            raise SpecError(f"{label}: type variable {var} is not used in the signature; write it as *{var}:16 or {var}")
        bad = [v for v in values if v not in SCALAR_TYPES]
        if bad or not values or len(set(values)) != len(values):
            raise SpecError(f"{label}: type variable {var}: {list(values)}: give distinct element types from "
                            f"{', '.join(SCALAR_TYPES)}")
        if var in dtypes and any(v not in TL_NAMES for v in values):
            raise SpecError(f"{label}: type variable {var} is a dtype constexpr (tl.{var}), but Triton has no dtype for "
                            f"{', '.join(v for v in values if v not in TL_NAMES)}; drop it from {var}'s types")
    return [dict(zip(types, combo)) for combo in itertools.product(*types.values())]


def _leaves(entry: str) -> list[str]:
    """The leaf entries of a signature entry: itself, or a tuple's elements at any depth."""
    found: list[str] = []
    sig.map_leaves(entry, lambda leaf: found.append(leaf) or leaf)
    return found


def _entry_text(entry: str, at: int, types: dict[str, str], divisible: dict[tuple[int, int], bool]) -> str:
    """Entry number ``at`` with its type variables and ``:16?`` leaves chosen (``divisible``: by (entry, leaf))."""
    leaf_number = itertools.count()
    return sig.map_leaves(entry, lambda leaf: _leaf_text(leaf, types, divisible.get((at, next(leaf_number)))))


def _leaf_text(text: str, types: dict[str, str], divisible: bool | None) -> str:
    if divisible is not None:
        text = text[:-len(MAYBE_16)] + (":16" if divisible else "")
    m = _TYPE_VAR.match(text)
    if m and m.group(2) in types:
        text = f"{m.group(1)}{types[m.group(2)]}{m.group(3) or ''}"
    d = _DTYPE_VAR.match(text)
    if d and d.group(1) in types:  # tl.T: the dtype of T's type, as a constexpr value (tl.bfloat16 for bf16)
        text = f"tl.{TL_DTYPES[TL_NAMES[types[d.group(1)]]][0]}"
    return text


def _asked_values(req: KernelRequest, h: HeuristicFact, label: str) -> list[Any] | None:
    """The values to build of heuristic ``h`` where the signature does not decide it; None: no list (the build
    refuses such a heuristic unless the signature decides it, see :func:`_needs_values`)."""
    given = (req.heuristics or {}).get(h.name)
    if given is not None:
        if not isinstance(given, list) or not given or len({repr(v) for v in given}) != len(given) or not all(
                isinstance(v, (int, float, bool, str)) for v in given):
            raise SpecError(f"{label}: \"heuristics\" {h.name}: give a list of distinct values, e.g. [256, 512]")
        return list(given)
    return [True, False] if h.is_bool else None


def _needs_values(h: HeuristicFact, label: str) -> SpecError:
    why = f"its function is not a plain expression ({h.why})" if h.expr is None else f"{h.expr!r} is not bool-valued"
    return SpecError(f"{label}: heuristic {h.name}: {why}; give the values to build: \"heuristics\": "
                     f"{{\"{h.name}\": [...]}} in the spec, or --heuristic {h.name}=V1,V2")


_ENUMERATE_ALL = 1 << 16  # combinations counted one by one (beyond: stop once over --max-variants)


def _expand(req: KernelRequest, facts: KernelFacts, configs: tuple[ConfigFact, ...] | None,
            heuristics: list[HeuristicFact], entries: Sequence[str], archs: int, max_variants: int) -> FamilyPlan:
    label = str(req.kernel)
    type_choices = _type_choices(req, entries, label)
    maybe = [(i, j) for i, e in enumerate(entries) for j, leaf in enumerate(_leaves(e)) if leaf.endswith(MAYBE_16)]
    asked = [_asked_values(req, h, label) for h in heuristics]
    config_indices: list[int | None] = list(range(len(configs))) if configs is not None else [None]
    factors = [(len(type_choices), "type"), (2 ** len(maybe), "pattern"),
               *([(len(configs), "config")] if configs is not None else []),
               *((len(a) if a else 1, h.name) for a, h in zip(asked, heuristics)), (archs, "arch")]
    total = 1
    for n, _ in factors:
        total *= n
    words = " x ".join(f"{n} {what}{'s' if n != 1 and what in ('type', 'pattern', 'config', 'arch') else ''}"
                       for n, what in factors)
    choices: list[tuple[str, int | None, dict[str, Any]]] = []  # (signature text, config, heuristic values)
    decided: set[str] = set()
    bases = itertools.product(type_choices, itertools.product((True, False), repeat=len(maybe)), config_indices)
    for types, bits, config in bases:
        divisible = dict(zip(maybe, bits))
        text = ", ".join(_entry_text(e, i, types, divisible) for i, e in enumerate(entries))
        known = _known(req, facts, configs, config, text, {h.name for h in heuristics})
        meta = configs[config].meta() if configs is not None and config is not None else {}
        for values in _possible(heuristics, asked, known, meta, label, decided):
            choices.append((text, config, values))
            if total > _ENUMERATE_ALL and len(choices) * archs > max_variants:
                raise MaxVariantsError(f"{req.name or label}: {words} = {total} combinations, more than {max_variants} "
                                       f"of them possible, over --max-variants {max_variants}: {_NARROW}")
    count = len(choices) * archs
    line = f"{req.name or label}: {words} = {total} variants"
    if count != total:
        line = (f"{req.name or label}: {words} = {total} combinations; the signature decides "
                f"{', '.join(h.name for h in heuristics if h.name in decided)} where it fixes what "
                f"{'they read' if len(decided) > 1 else 'it reads'}, so {count} variants")
    if count > max_variants:
        raise MaxVariantsError(f"{line}, over --max-variants {max_variants}: {_NARROW}")
    variants = [_variant(req, facts, configs, config, text, values) for text, config, values in choices]
    _check_distinct(label, variants)
    return FamilyPlan(req.name or label, facts, configs, tuple(variants), line, _warnings(facts, configs, label))


_NARROW = "narrow the configs (--configs), types or heuristic values, drop :16? entries, or raise --max-variants"


def _known(req: KernelRequest, facts: KernelFacts, configs: tuple[ConfigFact, ...] | None, config: int | None,
           text: str, expanded: set[str]) -> dict[str, Any]:
    """What a variant's signature fixes of the arguments a heuristic reads: each constexpr's value, 1 for an ``:1``
    integer, and for a runtime argument what its pattern promises (never None; divisible by 16 for ``i32:16``).
    The configs' constexprs are left out: a heuristic inside @autotune sees its config's (``_possible``); so are
    the ``expanded`` heuristics' (planned per variant, so not in the signature)."""
    by_config = {k for c in configs or () for k in c.kwargs}
    placeholders = dict.fromkeys(expanded)
    chosen = configs[config] if configs is not None and config is not None else None
    constexprs = {**req.constexprs, **_config_constexprs(facts, configs, chosen, str(req.kernel)), **placeholders}
    params = sig.bind_python_signature(str(req.kernel), [p.name for p in facts.params], sig.parse_signature(text),
                                       constexprs, {p.name: p.default for p in facts.params if p.has_default},
                                       {p.name for p in facts.params if p.constexpr})
    known: dict[str, Any] = {}
    for p in params:
        if p.name in by_config or p.name in placeholders:
            continue
        if p.kind == "runtime":
            known[p.name] = heur.Unknown(runtime=True, divisor=1 if p.is_pointer else p.divisibility)
        else:
            known[p.name] = p.value  # a constexpr's value; 1 for an equal_to_1 integer
    return known


def _possible(heuristics: list[HeuristicFact], asked: list[list[Any] | None], known: dict[str, Any],
              meta: dict[str, Any], label: str, decided: set[str], at: int = 0) -> Iterator[dict[str, Any]]:
    """Each combination of heuristic values a call can meet, in application order: a value the signature decides is
    the only one built (``decided`` gets the names it narrowed); any other takes each value asked for."""
    if at == len(heuristics):
        yield {}
        return
    h, values = heuristics[at], asked[at]
    scope = {**known, **meta} if h.after_config else known  # as Triton: inside @autotune a heuristic sees the config
    found, value = heur.decided(h.expr, scope) if h.expr is not None else (False, None)
    if found:
        if values is not None and not any(type(v) is type(value) and v == value for v in values):
            raise SpecError(f"{label}: heuristic {h.name} = {h.expr} is {value!r} for every call this signature takes, "
                            f"and the values to build are {values}: add {value!r}, or change the signature")
        if values is None or len(values) > 1:
            decided.add(h.name)
        values = [value]
    elif values is None:
        raise _needs_values(h, label)
    for v in values:
        for rest in _possible(heuristics, asked, {**known, h.name: v}, meta, label, decided, at + 1):
            yield {h.name: v, **rest}


def _variant(req: KernelRequest, facts: KernelFacts, configs: tuple[ConfigFact, ...] | None, index: int | None,
             text: str, heuristic_values: dict[str, Any]) -> Variant:
    config = configs[index] if configs is not None and index is not None else None
    constexprs = {**req.constexprs, **_config_constexprs(facts, configs, config, str(req.kernel)), **heuristic_values}
    options = dict(req.options)
    if config is not None:
        for key, value in config.compile_options().items():
            # a spec's top-level default yields to the config, as Triton's config wins over a launch default
            if key in options and options[key] != value and key not in req.default_options:
                raise OptionError(f"{req.kernel}: option {key}={options[key]!r} contradicts autotune config {index}'s "
                                  f"{key}={value!r}; each config sets its own - drop the option (or pick configs)")
            options[key] = value
    defaults = {p.name: p.default for p in facts.params if p.has_default}
    params = sig.bind_python_signature(str(req.kernel), [p.name for p in facts.params], sig.parse_signature(text),
                                       constexprs, defaults, {p.name for p in facts.params if p.constexpr})
    full = format_signature(params)
    digest = hashlib.sha256(full.encode()).hexdigest()[:12]
    return Variant(f"c{index}-{digest}" if index is not None else f"v-{digest}", index, text, constexprs, options, full)


def _config_constexprs(facts: KernelFacts, configs: tuple[ConfigFact, ...] | None, config: ConfigFact | None,
                       label: str) -> dict[str, Any]:
    """The config's kwargs, and the kernel's default for a name that only other configs set."""
    if config is None or configs is None:
        return {}
    out = dict(config.kwargs)
    params = {p.name: p for p in facts.params}
    for name in {k for c in configs for k in c.kwargs} - set(out):
        if not params[name].has_default:
            raise SpecError(f"{label}: some autotune configs set {name} and others do not, and {name} has no default")
        out[name] = params[name].default
    return out


def _check_distinct(label: str, variants: list[Variant]) -> None:
    seen: dict[str, Variant] = {}
    for v in variants:
        if v.vid in seen:
            raise SpecError(f"{label}: two variants are the same kernel ({v.full_signature}, config {v.config}); "
                            "remove the repeated type, config or value")
        seen[v.vid] = v


def _warnings(facts: KernelFacts, configs: tuple[ConfigFact, ...] | None, label: str) -> tuple[str, ...]:
    tune = facts.autotune
    if tune is None or configs is None:
        return ()
    out = []
    if tune.pruning:
        out.append(f"{label}: prune_configs_by ({', '.join(tune.pruning)}) needs the call's arguments: pruning "
                   "skipped, all configs built")
    if tune.has_pre_hook:
        out.append(f"{label}: the autotuner has a user pre_hook/post_hook or a Config.pre_hook, which cannot run "
                   "without Triton: tuning at run time refuses this kernel; ship a tuning table (tmlr tune)")
    return tuple(out)
