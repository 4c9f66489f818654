"""Binding a call's arguments to parameters, for kernels and families alike: imported by the first call that
gives keywords or another count of arguments, or that fails."""
from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence

from ..abi import Parameter
from ..errors import ArgumentCountError, ArgumentError

MISSING = object()  # a parameter the call did not give
# The launch options a call may name besides its parameters (num_warps=4, checked by options.py): the CUDAOptions fields
# of every Triton release tmlr builds with, and the JIT's debug, whatever an artifact records; and those it records
OPTION_NAMES = frozenset({"num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion", "launch_cooperative_grid",
                          "launch_pdl", "cluster_dims", "debug"})


def recorded_options(variant: Any) -> dict[str, Any]:
    """The compile options a variant's provenance records (``options``: Triton's, as the build passed them)."""
    options = variant.provenance.get("options")
    return options if isinstance(options, dict) else {}


def option_names(variants: Iterable[Any]) -> frozenset[str]:
    """The launch option names a call of these variants may pass."""
    return OPTION_NAMES | {k for v in variants for k in recorded_options(v)}


class Binder:
    """A call's positional and keyword arguments as values by parameter position."""

    __slots__ = ("name", "names", "kinds", "npos", "usage", "forbidden", "defaults", "options", "_index")

    def __init__(self, name: str, names: Sequence[str], kinds: Sequence[str], npos: int, usage: Callable[[], str],
                 forbidden: frozenset[str] = frozenset(), defaults: dict[int, Any] | None = None,
                 options: frozenset[str] = frozenset()) -> None:
        """``kinds``: each parameter's (a constexpr may be left out); ``npos``: the positional parameters of a
        plain call; ``usage()``: how to call it, for messages; ``forbidden``: names set by autotune configs;
        ``defaults``: the value of a constexpr left out, by position (else :data:`MISSING`); ``options``: the
        launch options a call may name besides the parameters (``num_warps``: options.py)."""
        self.name, self.names, self.kinds, self.npos, self.usage, self.forbidden = name, tuple(names), tuple(kinds), npos, usage, forbidden
        self.defaults, self.options = defaults or {}, options
        self._index: dict[str, int] | None = None

    def bind(self, args: tuple[Any, ...], kwargs: dict[str, Any], options: dict[str, Any] | None = None) -> list[Any]:
        """Every parameter's value, its default or :data:`MISSING` for a constexpr not given; typed errors for the rest.
        The launch options the call names go into ``options`` (refused where it is None)."""
        name, n = self.name, len(self.names)
        if len(args) > n:
            raise ArgumentCountError(f"{name}: takes {self.npos} positional arguments (up to {n} with constexprs), got {len(args)}; "
                                     f"call it as {self.usage()}")
        if self._index is None:
            self._index = {p: i for i, p in enumerate(self.names)}
        values: list[Any] = list(args) + [MISSING] * (n - len(args))
        for key, value in kwargs.items():
            i = self._index.get(key)
            if i is None:
                if key in self.forbidden:
                    raise self._forbidden(key)
                if key in self.options and options is not None:
                    options[key] = value
                    continue
                raise ArgumentCountError(f"{name}: unknown argument {key!r}; call it as {self.usage()}", key)
            if values[i] is not MISSING:
                raise ArgumentCountError(f"{name}: argument {key!r} given twice (by position and by keyword); pass it once", key)
            if key in self.forbidden:
                raise self._forbidden(key)
            values[i] = value
        for i, value in self.defaults.items():
            if values[i] is MISSING:
                values[i] = value
        missing = [p for p, kind, v in zip(self.names, self.kinds, values) if v is MISSING and kind != "constexpr"]
        if missing:
            raise ArgumentCountError(f"{name}: missing argument{'s' if len(missing) > 1 else ''} {', '.join(map(repr, missing))} "
                                     f"(got {len(args)} positional); call it as {self.usage()}", missing[0])
        return values

    def _forbidden(self, key: str) -> ArgumentError:
        return ArgumentError(f"{self.name}: {key!r} is set by the autotune configs; do not pass it (Triton refuses it too: "
                             "'Conflicting meta-parameters', or the keyword given twice)", key)


def usage(name: str, signature: tuple[Parameter, ...]) -> str:
    """How to call the kernel, for messages: ``add[grid](x_ptr: *fp32, ..., BLOCK=1024)``; with its tuples nested."""
    if any("[" in p.name or "." in p.name for p in signature):
        from .tuple_call import usage as tuple_usage

        return tuple_usage(name, signature)

    def one(p: Parameter) -> str:
        if p.kind == "constexpr":
            return f"{p.name}={p.value!r}"
        return f"{p.name}: {p.type}" + (" (must be 1)" if p.kind == "equal_to_1" else "")

    return f"{name}[grid]({', '.join(map(one, signature))})"
