"""The Python executor of a :class:`~.plan.LaunchPlan` (``Kernel.__call__``): :func:`launch` handles a common
call inline; what it never needs (keywords, other grids, scratch, ``cuLaunchKernelEx``, errors) follows it."""
from __future__ import annotations

import operator
import struct
from typing import Any, Callable

from .. import driver
from ..abi import SCALAR_TYPES
from ..errors import ArgumentError, GridError, TmlrError, short_repr
from .convert import check_constexpr, convert
from .plan import DIV16, IGNORED, PTR, SCALAR, LaunchPlan
from .streams import stream_handle


def launch(kernel: Any, grid: Any, *args: Any, stream: Any = None, **kwargs: Any) -> None:
    """``kernel(grid, *args, stream=None, **kwargs)``, by the plan of the current context."""
    fast = kernel._fast  # the plan of the context planned for last, as LaunchPlan.fast
    if fast[0]()[1] != fast[1]:  # another context is current: launch by its plan (made once)
        fast = kernel._plan_for_current().fast
    (_, _, npos, current_stream, device, storage, pointers, unchecked, div16, rest, tensor, pack, max_x, launch_fn, function, block,
     shared, plan) = fast
    if kwargs or len(args) != npos:
        args = bind(plan, args, kwargs)
    if stream is None:
        stream = current_stream(device)
    elif type(stream) is not int or stream < 0 or stream >= 18446744073709551616:
        stream = stream_handle(stream)
    try:
        buf, kp, config = storage.slot
    except AttributeError:  # this thread's first launch
        buf, kp, config = plan.new_slot()
    if npos:
        try:
            values = [buf, 0, *args]  # pack_into's first arguments too: pack(*values) then copies once
            for i, dtype, mask in pointers:
                a = values[i]
                if type(a) is tensor and a.get_device() == device and a.dtype is dtype:
                    values[i] = v = a.data_ptr()
                    if v & mask:
                        raise error(plan, args, None)
                else:
                    values[i] = convert(PTR, plan.signature[i - 2], a, device, True)
            if unchecked:  # checks=False (a loop over an empty tuple still makes an iterator)
                for i in unchecked:
                    a = values[i]
                    values[i] = a.data_ptr() if type(a) is tensor else convert(PTR, plan.signature[i - 2], a, device, False)
            if div16 and values[div16] % 16:
                raise error(plan, args, None)
            if rest:
                convert_rest(plan, values, args)
            pack(*values)
        except TmlrError:
            raise
        except Exception as e:  # name the argument: data_ptr() of a sparse tensor raises, so does the struct, so may any __index__
            raise error(plan, args, e) from None
    if type(grid) is int and grid > 0 and grid <= max_x:  # not chained: a chained comparison costs more
        r = launch_fn(function, grid, 1, 1, block, 1, 1, shared, stream, kp, 0)
    else:
        r = launch_general(plan, grid, args, buf, kp, config, stream)
    if r[0]:
        driver.check(r, plan.what)  # raises


def bind(plan: LaunchPlan, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """The positional values of a call with keywords, or another count of arguments; constexprs
    left out take their compiled value, those given are checked against it, and so are launch options (num_warps=...)."""
    options: dict[str, Any] = {}
    values = plan.binder.bind(args, kwargs, options)
    if plan.checks:
        for i, p in enumerate(plan.signature):
            if p.kind == "constexpr" and (i < len(args) or p.name in kwargs):
                check_constexpr(p, values[i])
        if options:
            from .options import check  # the first call that names a launch option

            check(plan.name, plan.variant, options)
    return tuple(values[: plan.npos])


def error(plan: LaunchPlan, args: tuple[Any, ...], exc: Exception | None) -> Exception:
    """The typed error naming the argument that made conversion or packing fail (raise ``exc``)."""
    for c, i, *_ in plan.steps:
        try:
            if c != SCALAR and c != IGNORED:
                convert(c, plan.signature[i], args[i], plan.device, plan.checks)
        except TmlrError as err:
            return err
    from .diagnose import diagnose_scalar

    for p, v in zip(plan.signature, args):
        err = diagnose_scalar(p, v) if p.kind == "runtime" and p.type in SCALAR_TYPES else None
        if err is not None:
            return err
    return ArgumentError(f"{plan.name}: arguments could not be packed ({exc}); call it as {plan.binder.usage()}")


def convert_rest(plan: LaunchPlan, values: list[Any], args: tuple[Any, ...]) -> None:
    """What a launch converts off its common path, in its ``values`` (position + 2): i1, bf16, TMA
    descriptors, tensor descriptors, constexprs and ints specialized to 1 passed by position, and the
    ints assumed divisible by 16 after the first."""
    for c, i, *_ in plan.steps:
        if c == DIV16 and values[i + 2] % 16:
            raise error(plan, args, None)
        if c != PTR and c != DIV16 and c != SCALAR and c != IGNORED:
            values[i + 2] = convert(c, plan.signature[i], values[i + 2], plan.device, plan.checks)


def call_grid(grid: Callable[[dict[str, Any]], Any], meta: dict[str, Any], receives: str) -> Any:
    """``grid(meta)``; what it raises becomes a :class:`GridError` saying that it ``receives`` ``meta``."""
    try:
        return grid(meta)
    except GridError:
        raise
    except Exception as e:  # the user's function: anything it raises is reported as its failure
        raise GridError(f"the grid callable raised {type(e).__name__}: {e}; it receives {receives}") from e


def grid3(plan: LaunchPlan, grid: Any, args: tuple[Any, ...]) -> tuple[int, int, int]:
    """``grid`` (an int, 1 to 3 ints, or a callable given the arguments and constexprs by name) as
    ``(x, y, z)`` programs; raises :class:`GridError` unless they fit the device, the cluster multiplied in
    (a dimension of 0 fits: the launch does nothing)."""
    if callable(grid):
        grid = call_grid(grid, {**{p.name: p.value for p in plan.signature if p.kind == "constexpr"}, **dict(zip(plan.binder.names, args))},
                         "a dict of the kernel's arguments and constexprs by name")
    if isinstance(grid, (tuple, list)):
        if not 1 <= len(grid) <= 3:
            raise GridError(f"grid must have 1 to 3 dimensions, got {len(grid)}: {short_repr(tuple(grid))}; pass (x,), (x, y) or (x, y, z)")
        dims = [_axis(v, i) for i, v in enumerate(grid)] + [1] * (3 - len(grid))
    else:
        dims = [_axis(grid, 0), 1, 1]
    for i, (v, c, lim) in enumerate(zip(dims, plan.cluster, plan.max_grid)):
        if v < 0:
            raise GridError(f"grid[{i}] is {short_repr(v)}; every grid dimension must be >= 0 (0: no programs, nothing launched) - "
                            "compute it with triton.cdiv-style integer division of a size")
        if v * c > lim:
            extra = f" ({short_repr(v)} programs x cluster {c})" if c > 1 else ""
            raise GridError(f"grid[{i}] = {short_repr(v * c)}{extra} exceeds this device's limit of {lim}; split the work or fold it into another grid axis")
    return dims[0], dims[1], dims[2]


def _axis(v: Any, i: int) -> int:
    if not isinstance(v, bool):
        try:
            return operator.index(v)
        except Exception:  # no __index__, or one that fails (a numpy array, a tensor of several elements)
            pass
    raise GridError(f"grid[{i}] must be an int, got {type(v).__name__} {short_repr(v)}; use math.ceil / triton.cdiv-style integer division")


def launch_general(plan: LaunchPlan, grid: Any, args: tuple[Any, ...], buf: Any, kp: int, config: Any, stream: int) -> Any:
    """A launch on any grid but an int in range, with global scratch (allocated for the grid, freed
    whatever the launch does), or through ``cuLaunchKernelEx`` (clusters, cooperative, PDL); on an empty
    grid (a dimension 0), as in Triton's launcher, nothing after the checks."""
    if type(grid) is tuple and len(grid) == 1 and type(grid[0]) is int and 0 < grid[0] * plan.cluster[0] <= plan.max_grid[0]:
        gx, gy, gz = grid[0], 1, 1  # (n,): the common form after an int
    else:
        gx, gy, gz = grid3(plan, grid, args)
        if not gx * gy * gz:
            return _NOTHING
    if plan.scratch is not None:
        per_program, align, offset = plan.scratch
        address, raw = scratch_alloc(gx * gy * gz * per_program, align, stream)
    try:
        if plan.scratch is not None:
            struct.pack_into("<Q", buf, offset, address)
        if not plan.use_ex:
            return plan.launch_fn(plan.function, gx, gy, gz, plan.block, 1, 1, plan.shared, stream, kp, 0)
        cx, cy, cz = plan.cluster
        config.gridDimX, config.gridDimY, config.gridDimZ, config.hStream = gx * cx, gy * cy, gz * cz, stream
        return plan.drv.cuLaunchKernelEx(config, plan.function, kp, 0)
    finally:
        if plan.scratch is not None:
            scratch_free(raw, stream)


_NOTHING = (0,)  # what a launch on an empty grid returns: CUDA_SUCCESS, as the driver's calls do


# Global scratch (device-side TMA descriptors and the like) is allocated per launch with
# cuMemAllocAsync on the launch stream and freed with cuMemFreeAsync right after it: stream-ordered,
# so no synchronisation, correct on several streams, and allocation/free nodes under graph capture.
_POOL_ALIGN = 256  # memory-pool allocations are at least this aligned; larger alignments over-allocate


def scratch_alloc(nbytes: int, align: int, stream: int) -> tuple[int, int]:
    """``(aligned address, raw address)`` of ``nbytes`` of stream-ordered device memory."""
    extra = align - 1 if align > _POOL_ALIGN else 0
    raw = int(driver.check(driver.api().cuMemAllocAsync(nbytes + extra, stream), "cuMemAllocAsync (global scratch)"))
    return raw + (-raw % align), raw


def scratch_free(raw: int, stream: int) -> None:
    driver.check(driver.api().cuMemFreeAsync(raw, stream), "cuMemFreeAsync (global scratch)")
