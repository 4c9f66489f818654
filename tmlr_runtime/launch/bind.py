"""What a kernel and a family share about a call: binding its arguments to parameters, and calling a grid function."""
from __future__ import annotations

from typing import Any, Callable, Sequence

from ..errors import ArgumentCountError, ArgumentError, GridError

MISSING = object()  # a parameter the call did not give


class Binder:
    """A call's positional and keyword arguments as values by parameter position."""

    __slots__ = ("name", "names", "kinds", "npos", "usage", "forbidden", "_index")

    def __init__(self, name: str, names: Sequence[str], kinds: Sequence[str], npos: int, usage: Callable[[], str],
                 forbidden: frozenset[str] = frozenset()) -> None:
        """``kinds``: each parameter's (a constexpr may be left out); ``npos``: the positional parameters of a
        plain call; ``usage()``: how to call it, for messages; ``forbidden``: names set by autotune configs."""
        self.name, self.names, self.kinds, self.npos, self.usage, self.forbidden = name, tuple(names), tuple(kinds), npos, usage, forbidden
        self._index: dict[str, int] | None = None

    def bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
        """Every parameter's value, :data:`MISSING` for a constexpr not given; typed errors for the rest."""
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
                raise ArgumentCountError(f"{name}: unknown argument {key!r}; call it as {self.usage()}", key)
            if values[i] is not MISSING:
                raise ArgumentCountError(f"{name}: argument {key!r} given twice (by position and by keyword); pass it once", key)
            if key in self.forbidden:
                raise ArgumentError(f"{name}: {key!r} is set by the autotune configs; do not pass it (Triton refuses it too: "
                                    "'Conflicting meta-parameters')", key)
            values[i] = value
        missing = [p for p, kind, v in zip(self.names, self.kinds, values) if v is MISSING and kind != "constexpr"]
        if missing:
            raise ArgumentCountError(f"{name}: missing argument{'s' if len(missing) > 1 else ''} {', '.join(map(repr, missing))} "
                                     f"(got {len(args)} positional); call it as {self.usage()}", missing[0])
        return values


def call_grid(grid: Callable[[dict[str, Any]], Any], meta: dict[str, Any], receives: str) -> Any:
    """``grid(meta)``; what it raises becomes a :class:`GridError` saying that it ``receives`` ``meta``."""
    try:
        return grid(meta)
    except GridError:
        raise
    except Exception as e:  # the user's function: anything it raises is reported as its failure
        raise GridError(f"the grid callable raised {type(e).__name__}: {e}; it receives {receives}") from e
