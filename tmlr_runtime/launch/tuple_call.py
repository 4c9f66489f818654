"""The call of a kernel or family with tuple parameters (schema v5): the tuples are flattened into the leaves the launch
plan takes, then the kernel launches (or the family dispatches) as any other; imported by the first load of one."""
from __future__ import annotations

import functools
from typing import Any, Callable

from ..abi import format_entry
from ..tuples import Flattener, TupleParam, call_params, describe


class TupleCalls:
    """Mixed into a kernel class (before it) for a kernel with tuple parameters: ``kernel(grid, ptrs, n)`` with
    ``ptrs`` a tuple, list or NamedTuple, each element checked as a parameter of its own (errors name ``ptrs[1]``).
    A grid callable's dict holds each element by its path (``meta["ptrs[1]"]``) and each tuple as passed (``meta["ptrs"]``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[call-arg]
        self._flattener = Flattener(self.name, call_params(self._leaf_names()))  # type: ignore[attr-defined]

    def _leaf_names(self) -> list[str]:
        return [p.name for p in self.metadata.signature]  # type: ignore[attr-defined]

    def __call__(self, grid: Any, *args: Any, stream: Any = None, **kwargs: Any) -> None:
        grid, leaves, named = self._flat_call(grid, args, kwargs)
        super().__call__(grid, *leaves, stream=stream, **named)  # type: ignore[misc]

    def _flat_call(self, grid: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, list[Any], dict[str, Any]]:
        """A launching call's grid (a callable also sees the tuples as passed) and its flattened arguments."""
        leaves, named = self._flattener.flatten(args, kwargs)
        if callable(grid):
            grid = _with_tuples(grid, self._flattener.tuples(args, kwargs))
        return grid, leaves, named

    def __getitem__(self, grid: Any) -> Any:
        return functools.partial(self.__call__, grid)

    def usage(self) -> str:
        """How to call it: ``tuple_add[grid](ptrs: (*fp32:16, *fp32:16), n: i32, BLOCK=1024)``."""
        return usage(self.metadata.name, self.metadata.signature)  # type: ignore[attr-defined]


def _with_tuples(grid: Callable[[dict[str, Any]], Any], tuples: dict[str, Any]) -> Callable[[dict[str, Any]], Any]:
    return lambda meta: grid({**meta, **tuples})


class TupleFamilyCalls(TupleCalls):
    """Mixed into ``KernelFamily`` for a family of a kernel with tuple parameters: a call (and ``choose``, ``key_of``,
    ``variant``, ``tune``) passes the tuples; their elements, flattened, choose the variant by their own patterns."""

    def _leaf_names(self) -> list[str]:
        return list(self.names)  # type: ignore[attr-defined]

    def usage(self) -> str:
        """How to call it: ``tuple_add[grid](ptrs: (ptrs[0], ptrs[1]), n, BLOCK=...)``."""
        kinds = dict(self.params)  # type: ignore[attr-defined]
        words = {n: n if kinds[n] == "runtime" else f"{n}=..." for n in kinds}
        parts = [words[p] if isinstance(p, str) else f"{p.name}: {describe(p, words)}" for p in call_params(kinds)]
        return f"{self.name}[grid]({', '.join(parts)})"  # type: ignore[attr-defined]

    def choose(self, *args: Any, **kwargs: Any) -> Any:
        leaves, named = self._flattener.flatten(args, kwargs)
        return super().choose(*leaves, **named)  # type: ignore[misc]

    def key_of(self, *args: Any, **kwargs: Any) -> Any:
        leaves, named = self._flattener.flatten(args, kwargs)
        return super().key_of(*leaves, **named)  # type: ignore[misc]

    def variant(self, config: int, *args: Any, **kwargs: Any) -> Any:
        leaves, named = self._flattener.flatten(args, kwargs)
        return super().variant(config, *leaves, **named)  # type: ignore[misc]

    def tune(self, grid: Any, *args: Any, stream: Any = None, **kwargs: Any) -> Any:
        grid, leaves, named = self._flat_call(grid, args, kwargs)
        return super().tune(grid, *leaves, stream=stream, **named)  # type: ignore[misc]


def usage(name: str, signature: Any) -> str:
    """The call with its tuples: ``k[grid](ptrs: (*fp32:16, *fp32:16), n: i32, BLOCK=1024)``."""
    by_name = {p.name: p for p in signature}
    types = {p.name: format_entry(p) for p in signature}

    def one(item: str | TupleParam) -> str:
        if isinstance(item, TupleParam):
            return f"{item.name}: {describe(item, types)}"
        p = by_name[item]
        if p.kind == "constexpr":
            return f"{p.name}={p.value!r}"
        return f"{p.name}: {p.type}" + (" (must be 1)" if p.kind == "equal_to_1" else "")

    return f"{name}[grid]({', '.join(map(one, call_params(by_name)))})"


@functools.lru_cache(maxsize=None)
def tuple_class(cls: type, mixin: type = TupleCalls) -> type:
    """``cls`` with tuple calls (one class per kernel or family class)."""
    return type(cls.__name__, (mixin, cls), {"__module__": cls.__module__, "__qualname__": cls.__qualname__})


def tuple_family(cls: type) -> type:
    """``KernelFamily`` with tuple calls."""
    return tuple_class(cls, TupleFamilyCalls)
