"""``KernelFamily``: one kernel built as many variants, dispatched per call like Triton's JIT (the steps of a call
and the fast memo of calls seen before: docs/variants.md, "A call")."""
from __future__ import annotations

import contextlib
import functools
import os
from typing import Any, Callable

from .. import driver
from ..launch import compiled
from ..artifact.family_index import FAMILY_FAILED_VERSION, FAMILY_TUPLE_VERSION, FAMILY_VERSION, Config, FamilyIndex
from ..artifact.heuristics import HeuristicLimitError, names_used, short_text
from ..errors import ArgumentCountError, ArgumentError, IntegrityError, NoCompatibleVariantError, VariantNotBuiltError
from ..launch.bind import MISSING, Binder, option_names
from ..launch.execute import call_grid
from ..launch.convert import same_constexpr
from ..launch.options import members_with, recorded, same, shown
from ..objects import unwrap
from .bench import GRID_META, benchmark
from .choose import accepts, autotune_key, dtype_name, exact, fast_key, fast_key_parts, int_entry, pointer_entry, specialization
from .members import Member, failed_params, leaf_params, read_members
from .tuning import Key, Tuner

_FAST_ENTRIES = 4096
_NOT_IN_FAST_MEMO = (KeyError, AttributeError, TypeError)  # not seen yet; a pointer given as an int, a CuPy array...


def _config_options(configs: tuple[Config, ...]) -> frozenset[str]:
    """The launch options autotune configs set (Triton passes Config.all_kwargs(): num_warps, num_stages and num_ctas
    always, maxnreg where set), which a call may not pass as well."""
    return frozenset({"num_warps", "num_stages", "num_ctas"} | ({"maxnreg"} if any(c.maxnreg is not None for c in configs) else set())
                     if configs else ())


def _device_name() -> str:
    driver.current_context()
    return driver.device_info(driver.current_device()).name


class KernelFamily:
    """A family artifact; called like a :class:`Kernel`."""

    def __init__(self, index: FamilyIndex, kernel_type: Any, *, checks: bool = True, tuning: str = "tune", fallback: str = "nearest",
                 stats: dict[str, os.stat_result | None] | None = None, members: list[Member] | None = None) -> None:
        """``kernel_type`` makes the variants' kernels (``Kernel``); ``stats`` gets the stat of the shipped table;
        ``members``: the variants read already (:func:`open_family`)."""
        self.index, self.name, self.directory, self.checks = index, index.name, index.directory, checks
        self.members = read_members(index, checks, kernel_type) if members is None else members
        # the parameters the variants' kernels take: the index's, a tuple's elements in the place of the tuple
        self.params = tuple(leaf_params(self.members[0].meta))
        # the variants that failed to compile, read back once: a refusal (under serve, each launch tried here) looks at them
        self._failed = [(f, failed_params(f, self.params)) for f in self.index.failed]
        self.names = tuple(n for n, _ in self.params)
        runtime = [i for i, (_, k) in enumerate(self.params) if k == "runtime"]
        self.npos = runtime[-1] + 1 if runtime else 0
        self._fixed = self._fixed_constexprs()
        self._positional_constexprs = any(self.params[i][1] == "constexpr" for i in range(self.npos))
        self._position = {n: i for i, n in enumerate(self.names)}
        self._dist = self._distinguishing(runtime)
        at = index.autotune
        self.configs: tuple[Config, ...] = at.configs if at else ()
        self._config_names = frozenset(k for c in self.configs for k in c.kwargs)
        self._binder = Binder(self.name, self.names, [k for _, k in self.params], self.npos, self.usage,
                              self._config_names | _config_options(self.configs),
                              options=option_names(v for m in self.members for v in m.meta.variants))
        self._key_pos = tuple(self._position[n] for n in at.key if n in self._position) if at else ()
        self._dtypes = at.dtype_in_key if at else False
        self.tuner = Tuner(self.name, self.directory, index.sha256, len(self.configs), _device_name(), tuning, fallback, stats) \
            if at else None
        self._choice: dict[Key, int] = self.tuner.memory if self.tuner else {}
        self._memo: dict[Any, tuple[Any, dict[str, Any], Member]] = {}
        self._fast: dict[tuple[Any, ...], tuple[Any, Any, dict[str, Any]]] = {}  # fast key -> (launch, sub-kernel, grid meta base)
        parts = None if self._positional_constexprs else self._fast_key_parts()
        # the compiled path's key also dispatches a call from the memo (__call__); else the Python key
        self._fast_call = None if parts is None else compiled.family_key(parts, self.npos, self._fast, KernelFamily._call_python)
        self._fast_key_of = self._fast_call or (None if parts is None else fast_key(parts))
        self._fast_n = -1 if self._fast_key_of is None else self.npos  # the argument count the fast path takes

    def _fixed_constexprs(self) -> dict[str, Any]:
        """The constexprs every variant has one value for: fixed at build, so known to heuristics and grids."""
        names = [n for n, k in self.params if k == "constexpr"]
        return {n: self.members[0].constexprs[n] for n in names
                if len({repr(m.constexprs.get(n)) for m in self.members}) == 1 and n in self.members[0].constexprs}

    def _distinguishing(self, runtime: list[int]) -> tuple[int, ...]:
        """The runtime parameters whose pattern differs between variants."""
        return tuple(i for i in runtime if len({(p.kind, p.type, p.divisibility) for p in (m.meta.signature[i] for m in self.members)}) > 1)

    def _fast_key_parts(self) -> tuple[tuple[int, int], ...] | None:
        """See ``choose.fast_key_parts``; None when a heuristic reads a pointer or a constexpr not fixed at build (only the general path knows)."""
        sig = self.members[0].meta.signature
        raw = [i for i in self._key_pos if i < self.npos] if self.tuner is not None else []
        derived = self._config_names | {"num_warps", "num_stages", "num_ctas", "maxnreg"} | {h.name for h in self.index.heuristics} \
            | self._fixed.keys()
        for h in self.index.heuristics:
            if h.expr is None:
                return None
            for name in names_used(h.expr):
                i = self._position.get(name, self.npos)
                if i < self.npos and sig[i].kind != "constexpr" and not sig[i].is_pointer:
                    raw.append(i)
                elif name not in derived:
                    return None
        differ = lambda i, field: len({getattr(m.meta.signature[i], field) for m in self.members}) > 1  # noqa: E731
        pointers = [i for i in self._dist if sig[i].is_pointer]
        dtypes = [i for i in range(self.npos) if sig[i].is_pointer and (self._dtypes or differ(i, "type"))]
        ints = [i for i in self._dist if not sig[i].is_pointer]
        if any(differ(i, "type") for i in ints):
            raw += ints  # int types differ (i32 / i64): the value decides
        return fast_key_parts(dtypes, [i for i in pointers if differ(i, "divisibility")], ints, sorted(set(raw)))

    def _call_python(self, grid: Any, *args: Any, stream: Any = None, **kwargs: Any) -> None:
        """``family(grid, *args, stream=None, **constexprs)``: choose the variant, then launch it."""
        if len(args) == self._fast_n and not kwargs:
            try:
                launch, kernel, base = self._fast[self._fast_key_of(args)]
            except _NOT_IN_FAST_MEMO:  # the general path
                return self._call(grid, args, kwargs, stream)
            if callable(grid):
                grid = call_grid(grid, {**base, **dict(zip(self.names, args))}, GRID_META)
            return launch(kernel, grid, *args, stream=stream)
        return self._call(grid, args, kwargs, stream)

    # the compiled key's dispatch (a call the memo knows, with no callable grid) runs it, else _call_python
    __call__ = compiled.method("_fast_call", _call_python)

    def _call(self, grid: Any, args: tuple[Any, ...], kwargs: dict[str, Any], stream: Any) -> None:
        """A call the fast memo does not know: every step of a call (docs/variants.md)."""
        given: dict[str, Any] = {}
        plain = not kwargs and len(args) == self.npos and not self._positional_constexprs
        if not plain:
            args, given = self._bind(args, kwargs)
        config = None
        if self.tuner is not None:
            key = self._key(args, given)
            config = self._choice.get(key)
            if config is None:
                config = self._config_for(key, grid, args, given, stream)
        heur = self._heuristics(args, given, config) if self.index.heuristics else ()
        memo_key = (config, heur, tuple(given.items()), tuple(self.call_key(args).values()))
        hit = self._memo.get(memo_key)
        if hit is None:
            hit = self._memo[memo_key] = self._resolve(config, heur, args, given)
        if plain and self._fast_key_of is not None:
            with contextlib.suppress(*_NOT_IN_FAST_MEMO):
                if len(self._fast) >= _FAST_ENTRIES:  # bounded: the autotune key's values are in it
                    self._fast.clear()
                self._fast[self._fast_key_of(args)] = (type(hit[0]).__call__, hit[0], hit[1])
        kernel, base, _ = hit
        if callable(grid):
            grid = call_grid(grid, {**base, **dict(zip(self.names, args)), **given}, GRID_META)
        kernel(grid, *args, stream=stream)

    def __getitem__(self, grid: Any) -> Callable[..., None]:
        """Triton-style ``family[grid](*args, stream=None)``."""
        return functools.partial(self.__call__, grid)

    # -- binding, keys, heuristics -----------------------------------------------------------------
    def usage(self) -> str:
        return f"{self.name}[grid]({', '.join(n if k == 'runtime' else n + '=...' for n, k in self.params)})"

    def _bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """(the positional values up to the last runtime parameter, the constexprs and launch options given by name)."""
        given: dict[str, Any] = {}  # the launch options (num_warps=...: as Triton, heuristics see them), then the constexprs
        values = self._binder.bind(args, kwargs, given)
        # a tl.constexpr(...) as the value it holds: heuristics compute with it, and the memo's key holds it
        given.update((n, unwrap(v)) for (n, k), v in zip(self.params, values) if k == "constexpr" and v is not MISSING)
        for i in range(self.npos):
            if values[i] is MISSING:
                values[i] = self._only_value(self.names[i])
        return tuple(values[: self.npos]), given

    def _only_value(self, name: str) -> Any:
        """The value every variant has for constexpr ``name`` (one before a runtime parameter, not passed)."""
        found = {repr(m.constexprs[name]): m.constexprs[name] for m in self.members}
        if len(found) != 1:
            raise ArgumentCountError(f"{self.name}: pass {name}=... - the family has variants for {', '.join(sorted(found))}", name)
        return next(iter(found.values()))

    def _key(self, args: tuple[Any, ...], given: dict[str, Any]) -> Key:
        """The autotune key, as Triton's Autotuner.run builds it (dtypes as Triton type names)."""
        return autotune_key(self.index.autotune.key, self._position, args, given, self._dtypes)  # type: ignore[union-attr]

    def _heuristics(self, args: tuple[Any, ...], given: dict[str, Any], config: int | None) -> tuple[Any, ...]:
        """The heuristic values of a call: those outside @autotune first, then (after the config's kwargs) those inside."""
        scope = {**self._fixed, **dict(zip(self.names, args)), **given}
        values = {}
        for inside in (False, True):
            if inside and config is not None:
                scope.update(self.configs[config].meta())
            for h in self.index.heuristics:
                if h.after_config != inside:
                    continue
                if h.expr is None:
                    if h.name not in given and h.name in self._fixed:
                        given = {**given, h.name: self._fixed[h.name]}
                    if h.name not in given:
                        raise ArgumentError(f"{self.name}: pass {h.name}=... by keyword: its @triton.heuristics function could not be "
                                            "recorded as an expression tmlr evaluates (see `tmlr inspect`), and tmlr never guesses it", h.name)
                    value = given[h.name]
                else:
                    value = self._evaluate(h, scope)
                scope[h.name] = values[h.name] = value
        return tuple(values[h.name] for h in self.index.heuristics)

    def _evaluate(self, h: Any, scope: dict[str, Any]) -> Any:
        try:
            return h.evaluate(scope)
        except KeyError as e:
            raise ArgumentError(f"{self.name}: heuristic {h.name} = {h.expr} reads args[{e}], which this call does not give; "
                                f"pass {e.args[0]}=... by keyword", h.name) from None
        except HeuristicLimitError as e:
            raise ArgumentError(f"{self.name}: heuristic {h.name} = {short_text(h.expr)} is refused: {e}; check the arguments "
                                "it reads, or rebuild the family with tmlr-build if its index was edited", h.name) from None
        except Exception as e:
            raise ArgumentError(f"{self.name}: heuristic {h.name} = {h.expr} raised {type(e).__name__}: {e}; check the "
                                "arguments it reads", h.name) from None

    # -- choosing the variant ----------------------------------------------------------------------
    def _wanted(self, config: int | None, heur: tuple[Any, ...], given: dict[str, Any]) -> dict[str, Any]:
        """The constexpr values a call fixes: given by name, the config's kwargs, the heuristics'."""
        want = dict(given)
        if config is not None:
            want.update(self.configs[config].kwargs)
        want.update(zip((h.name for h in self.index.heuristics), heur))
        return want

    def _resolve(self, config: int | None, heur: tuple[Any, ...], args: tuple[Any, ...], given: dict[str, Any]) -> tuple[Any, dict[str, Any], Member]:
        """The variant serving a call (see ``_choose``): exact pattern first, else the most specialized compatible one."""
        want = self._wanted(config, heur, given)
        fits = [m for m in self.members if (config is None or m.config == config)
                and all(same_constexpr(v, m.constexprs[n]) for n, v in want.items() if n in m.constexprs)]
        options = {n: v for n, v in given.items() if n not in self._position}  # launch options the call names
        if options:
            fits = members_with(self.name, fits, options)
        for name in {n for m in fits for n in m.constexprs} - want.keys():
            if len({repr(m.constexprs[name]) for m in fits}) > 1:
                raise ArgumentError(f"{self.name}: pass {name}=... - the family has variants for "
                                    f"{', '.join(sorted({repr(m.constexprs[name]) for m in fits}))}", name)
        calls = self.call_key(args)
        for i, call in calls.items():
            if call.startswith("*?") and len({m.meta.signature[i].type for m in fits}) > 1:
                raise ArgumentError(f"{self.name}: argument {self.names[i]!r} is an address without a dtype, and the family has "
                                    "variants for several dtypes; pass a tensor (or an object with __cuda_array_interface__)", self.names[i])
        fits = [m for m in fits if all(accepts(m.meta.signature[i], c) for i, c in calls.items())]
        if not fits:
            self._refuse_not_built(config, want, args)
            raise NoCompatibleVariantError(self._no_variant(calls, want, config))
        best = max(fits, key=lambda m: (sum(exact(m.meta.signature[i], c) for i, c in calls.items()),
                                        sum(specialization(m.meta.signature[i]) for i in calls), -m.number))
        base = {"num_warps": best.meta.variants[0].num_warps, **best.constexprs,
                **(self.configs[config].meta() if config is not None else {})}
        return best.kernel, base, best

    def _refuse_not_built(self, config: int | None, want: dict[str, Any], args: tuple[Any, ...]) -> None:
        """Raise :class:`VariantNotBuiltError` when a variant that failed to compile (the index's "failed") would serve
        a call that no built variant serves: its constexprs are the call's, its patterns take the arguments."""
        for f, params in self._failed:
            if params is None or config is not None and f.config != config:
                continue
            if all(same_constexpr(want[p.name], p.value) for p in params if p.kind == "constexpr" and p.name in want) and \
                    all(accepts(p, (pointer_entry if p.is_pointer else int_entry)(args[i]))
                        for i, p in enumerate(params[: self.npos]) if p.kind != "constexpr"):
                raise VariantNotBuiltError(
                    f"{self.name}: the variant for this call, {f.vid} [{f.signature}], failed to compile when the family was "
                    f"built, and the family was written without it: {f.error}. Fix the kernel (or what the build gave it) and "
                    "rebuild the family with tmlr-build, or call with arguments another variant serves", f.vid, f.error)

    def call_key(self, args: tuple[Any, ...]) -> dict[int, str]:
        """The call's specialization key: position -> Triton entry of each distinguishing parameter."""
        return {i: (pointer_entry if self.members[0].meta.signature[i].is_pointer else int_entry)(args[i]) for i in self._dist}

    def _no_variant(self, calls: dict[int, str], want: dict[str, Any], config: int | None) -> str:
        def misses(m: Member) -> list[str]:
            out = [] if config is None or m.config == config else [f"config {m.config}"]
            out += [f"{n}={m.constexprs[n]!r}" for n, v in want.items() if n in m.constexprs and not same_constexpr(v, m.constexprs[n])]
            out += [shown(m.meta.variants[0], n) for n, v in want.items()  # launch options
                    if n not in self._position and not all(same(v, recorded(x, n)) for x in m.meta.variants)]
            return out + [f"{self.names[i]}: {m.meta.signature[i].type}" + (":16" if m.meta.signature[i].divisibility == 16 else "")
                          for i, c in calls.items() if not accepts(m.meta.signature[i], c)]

        key = ", ".join([f"{self.names[i]}={c}" for i, c in calls.items()] + [f"{n}={v!r}" for n, v in want.items()])
        near = sorted(self.members, key=lambda m: (len(misses(m)), m.number))[:3]
        lines = "; ".join(f"{m.vid} [{m.signature}] differs in {', '.join(misses(m))}" for m in near)
        cfg = "" if config is None else f" with config {config} ({self.configs[config].describe()})"
        return (f"{self.name}: no variant serves this call{cfg}: key {key or '(no distinguishing parameters)'}; nearest variants: "
                f"{lines}. Rebuild the family with these patterns (tmlr-build --types / ':16?' / configs / heuristics values), "
                "or pass arguments one of the variants accepts")

    # -- autotuning ----------------------------------------------------------------------------------
    def _known_config(self, key: Key) -> int | None:
        """The config of autotune key ``key`` without benchmarking: chosen before, the only one, or the
        table's / cache's; None when unknown."""
        config = self._choice.get(key)
        if config is None:
            config = 0 if len(self.configs) == 1 else self.tuner.known(key)  # type: ignore[union-attr]
        return config

    def _config_for(self, key: Key, grid: Any, args: tuple[Any, ...], given: dict[str, Any], stream: Any) -> int:
        """The config of an autotune key not in memory: one config needs no choice; else the table, the
        cache, a benchmark (mode "tune") or the fallback."""
        tuner = self.tuner
        config = self._known_config(key)
        if config is None:
            if tuner.mode == "tune":  # type: ignore[union-attr]
                config, times = benchmark(self, key, grid, args, given, stream)
                tuner.record(key, config, times)  # type: ignore[union-attr]
            else:
                config = tuner.unseen(key)  # type: ignore[union-attr]
        self._choice[key] = config
        return config

    def tune(self, grid: Any, *args: Any, stream: Any = None, **kwargs: Any) -> tuple[int, list[float]]:
        """Benchmark every config for this call's key, whatever the mode and what is known; remember the
        fastest (in memory, and in the cache file unless tuning="strict"); ``(config, median ms per config)``."""
        if self.tuner is None:
            raise ArgumentError(f"{self.name}: the kernel has no @triton.autotune configs to tune")
        args, given = self._bind(args, kwargs)
        key = self._key(args, given)
        config, times = benchmark(self, key, grid, args, given, stream)
        self._fast.clear()  # it may hold the variant of the config known before
        if self.tuner.mode == "strict":
            self.tuner.memory[key] = config
        else:
            self.tuner.record(key, config, times)
        return config, times

    def key_of(self, *args: Any, **kwargs: Any) -> Key:
        """The autotune key of a call (what tuning tables are keyed by); () without @triton.autotune."""
        args, given = self._bind(args, kwargs)
        return self._key(args, given) if self.tuner is not None else ()

    def choose(self, *args: Any, **kwargs: Any) -> Member:
        """The variant a call with these arguments would launch, without launching or benchmarking: for an
        autotune key not known yet, the fallback's config (config 0 in mode "tune", where a call would benchmark)."""
        args, given = self._bind(args, kwargs)
        config = None
        if self.tuner is not None:
            key = self._key(args, given)
            config = self._known_config(key)
            if config is None:
                config = self.tuner.unseen(key) if self.tuner.mode != "tune" else 0
        return self._resolve(config, self._heuristics(args, given, config), args, given)[2]

    def variant(self, config: int, *args: Any, **kwargs: Any) -> Member:
        """The variant that config ``config`` launches for these arguments (what tuning times for it)."""
        args, given = self._bind(args, kwargs)
        return self._resolve(config, self._heuristics(args, given, config), args, given)[2]

    def __repr__(self) -> str:
        return f"KernelFamily({self.name!r}, variants={len(self.members)}, configs={len(self.configs)}, dir={self.directory!r})"


def open_family(index: FamilyIndex, kernel_type: Any, *, checks: bool = True, **options: Any) -> KernelFamily:
    """The family of ``index``; for a kernel with tuple parameters, one whose calls pass the tuples (flattened into
    their elements, then dispatched as any family's call: launch/tuple_call.py)."""
    members = read_members(index, checks, kernel_type)
    if index.schema_version != FAMILY_FAILED_VERSION and bool(members[0].meta.tuples) != (index.schema_version == FAMILY_TUPLE_VERSION):
        raise IntegrityError(f"{index.directory}: the family index says schema_version {index.schema_version}, but its variants "
                             f"{'have' if members[0].meta.tuples else 'have no'} tuple parameters (an index of tuple variants says "
                             f"{FAMILY_TUPLE_VERSION}, any other {FAMILY_VERSION}; {FAMILY_FAILED_VERSION} either, with variants that failed to "
                             "compile); rebuild the family with tmlr-build")
    cls: type[KernelFamily] = KernelFamily
    if members[0].meta.tuples:
        from ..launch.tuple_call import tuple_family

        cls = tuple_family(KernelFamily)
    return cls(index, kernel_type, checks=checks, members=members, **options)
