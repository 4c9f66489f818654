"""The call of a kernel with tuple parameters (schema v5): the tuples are flattened into the leaves the launch plan
takes, then the kernel launches as any other; imported by the first load of such a kernel."""
from __future__ import annotations

import functools
from typing import Any

from ..abi import format_entry
from ..tuples import Flattener, TupleParam, call_params, describe


class TupleCalls:
    """Mixed into a kernel class (before it) for a kernel with tuple parameters: ``kernel(grid, ptrs, n)`` with
    ``ptrs`` a tuple, list or NamedTuple, each element checked as a parameter of its own (errors name ``ptrs[1]``)."""

    def __init__(self, metadata: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(metadata, *args, **kwargs)  # type: ignore[call-arg]
        self._flattener = Flattener(metadata.name, call_params(p.name for p in metadata.signature))

    def __call__(self, grid: Any, *args: Any, stream: Any = None, **kwargs: Any) -> None:
        leaves, named = self._flattener.flatten(args, kwargs)
        super().__call__(grid, *leaves, stream=stream, **named)  # type: ignore[misc]

    def __getitem__(self, grid: Any) -> Any:
        return functools.partial(self.__call__, grid)

    def usage(self) -> str:
        """How to call it: ``tuple_add[grid](ptrs: (*fp32:16, *fp32:16), n: i32, BLOCK=1024)``."""
        return usage(self.metadata.name, self.metadata.signature)


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
def tuple_class(cls: type) -> type:
    """``cls`` with tuple calls (one class per kernel class)."""
    return type(cls.__name__, (TupleCalls, cls), {"__module__": cls.__module__, "__qualname__": cls.__qualname__})
