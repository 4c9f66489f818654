"""A launch grid as three positive ints within the device's limits."""
from __future__ import annotations

import operator
from typing import Any, Callable, Mapping

from ._errors import GridError, short_repr


def _axis(v: Any, i: int) -> int:
    if not isinstance(v, bool):
        try:
            return operator.index(v)
        except Exception:  # no __index__, or one that fails (a numpy array, a tensor of several elements)
            pass
    raise GridError(f"grid[{i}] must be an int, got {type(v).__name__} {short_repr(v)}; use math.ceil / triton.cdiv-style integer division")


def normalize(grid: Any, limits: tuple[int, int, int], cluster: tuple[int, int, int],
              meta: Callable[[tuple[Any, ...]], Mapping[str, Any]], args: tuple[Any, ...]) -> tuple[int, int, int]:
    """``grid`` (an int, 1 to 3 ints, or a callable given ``meta(args)``) as ``(x, y, z)`` programs;
    raises :class:`GridError` unless they fit the device's ``limits``, ``cluster`` multiplied in."""
    if type(grid) is tuple and len(grid) == 1 and type(grid[0]) is int and 0 < grid[0] * cluster[0] <= limits[0]:
        return grid[0], 1, 1  # (n,): the common form
    if callable(grid):
        try:
            grid = grid(dict(meta(args)))
        except GridError:
            raise
        except Exception as e:
            raise GridError(f"the grid callable raised {type(e).__name__}: {e}; it receives a dict of the kernel's arguments and constexprs by name") from e
    if isinstance(grid, (tuple, list)):
        if not 1 <= len(grid) <= 3:
            raise GridError(f"grid must have 1 to 3 dimensions, got {len(grid)}: {short_repr(tuple(grid))}; pass (x,), (x, y) or (x, y, z)")
        dims = [_axis(v, i) for i, v in enumerate(grid)] + [1] * (3 - len(grid))
    else:
        dims = [_axis(grid, 0), 1, 1]
    for i, (v, c, lim) in enumerate(zip(dims, cluster, limits)):
        if v < 1:
            raise GridError(f"grid[{i}] is {short_repr(v)}; every grid dimension must be >= 1 - skip the launch when there is no work")
        if v * c > lim:
            extra = f" ({short_repr(v)} programs x cluster {c})" if c > 1 else ""
            raise GridError(f"grid[{i}] = {short_repr(v * c)}{extra} exceeds this device's limit of {lim}; split the work or fold it into another grid axis")
    return dims[0], dims[1], dims[2]
