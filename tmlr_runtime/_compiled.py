"""The compiled per-call path: which path launches, and the plan the C executor (``_fastlaunch.c``) runs.

``pip install`` builds ``tmlr_runtime._fastlaunch`` where a C compiler and Python's headers exist
(setup.py; nothing is ever compiled at run time). Where it is missing, or ``TMLR_PURE_PYTHON=1`` is
set, every launch runs the Python path (``_launcher.launch``), with the same results and errors.

The C executor reads a plain description of one variant's launch in one context (:class:`Plan`):
per positional argument an action code and the slots it fills, per slot its ``struct`` code and
offset, the launch shape, and the driver entry points cuda-python's ``cuGetProcAddress`` gives. It
declines any call it does not finish (another context current, a failed check, an argument it
does not read) *before* anything happens, and the Python path then runs that call: so errors are
the Python path's by construction. The helpers it calls for rare work (binding keywords, callable
grids, stream objects, conversions) are the Python path's own.
"""
from __future__ import annotations

import os
import sys
import weakref
from typing import Any, Callable

from . import _driver
from ._convert import BOOL, BF16, CONSTEXPR, DIV16, ONE, PTR, TENSORDESC, TMA, convert, stream_getter, stream_handle, torch_dtype
from .abi import TYPES

# Action codes per positional argument (the enum at the top of _fastlaunch.c)
A_TENSOR, A_RAW_POINTER, A_SCALAR, A_DIV16, A_CONVERT, A_CHECK, A_NONE = range(7)
_ACTIONS = {None: A_SCALAR, DIV16: A_DIV16, BOOL: A_CONVERT, BF16: A_CONVERT, TMA: A_CONVERT, TENSORDESC: A_CONVERT,
            CONSTEXPR: A_CHECK, ONE: A_CHECK}
# (symbol, the CUDA version of the prototype _fastlaunch.c declares for it), in the order it reads them
_ENTRY_POINTS = (("cuCtxGetCurrent", 4000), ("cuLaunchKernel", 4000), ("cuLaunchKernelEx", 11060),
                 ("cuMemAllocAsync", 11020), ("cuMemFreeAsync", 11020))
_LEGACY_STREAM = 1  # CU_GET_PROC_ADDRESS_LEGACY_STREAM: the symbols cuda-python itself calls (stream 0 is the legacy stream)


def _load() -> tuple[Any, str]:
    if os.environ.get("TMLR_PURE_PYTHON", "") not in ("", "0"):
        return None, "TMLR_PURE_PYTHON is set"
    try:
        from . import _fastlaunch
    except ImportError as e:
        return None, f"the extension tmlr_runtime._fastlaunch is not built ({e}); reinstall with a C compiler and Python headers"
    return _fastlaunch, ""


fastlaunch, why_not = _load()
enabled = fastlaunch is not None  # tests switch it off to plan kernels for the Python path


def describe() -> str:
    """Which launch path is active, for ``tmlr --version`` and ``tmlr doctor``."""
    if fastlaunch is None:
        return f"launch path: pure Python ({why_not})"
    return f"launch path: compiled ({os.path.basename(fastlaunch.__file__)})" + ("" if enabled else ", switched off")


def method(attribute: str, fallback: Callable[..., Any]) -> Any:
    """``Kernel.__call__`` / ``KernelFamily.__call__``: the compiled object in ``obj.<attribute>``
    runs the call, else ``fallback``; just ``fallback`` where the extension is not active."""
    return fastlaunch.Method(attribute, fallback) if fastlaunch is not None else fallback


# per bindings object (weakly: a test's fake driver goes away, and another may get its id); the
# addresses stay valid while the bindings live, which the plan that holds them keeps alive
_entry_points: weakref.WeakKeyDictionary[Any, tuple[int, ...] | None] = weakref.WeakKeyDictionary()


def entry_points(drv: Any) -> tuple[int, ...] | None:
    """The driver functions the executor calls, as addresses (0: not in this driver), from the
    bindings ``drv``; None when they cannot say (then kernels launch through Python)."""
    key = drv
    if key not in _entry_points:
        try:
            found = []
            for name, version in _ENTRY_POINTS:
                result = drv.cuGetProcAddress(name.encode(), version, _LEGACY_STREAM)
                found.append(int(result[1]) if not int(result[0]) else 0)
            _entry_points[key] = tuple(found)
        except Exception:  # bindings without cuGetProcAddress, or a driver older than CUDA 11.3
            _entry_points[key] = None
    return _entry_points[key]


class Plan:
    """What the executor reads, once, from named fields (see ``executor_new`` in _fastlaunch.c)."""

    __slots__ = ("context", "device", "function", "block", "shared", "max_grid", "cluster", "attrs", "scratch", "size",
                 "offsets", "slot_codes", "args", "entry_points", "tensor_type", "stream_getter", "fallback", "convert",
                 "bind", "grid3", "stream_handle", "fail", "what")


def executor(slow: Any, context: int, fallback: Callable[..., Any]) -> Any:
    """The compiled executor of the launch ``slow`` (a ``_launcher.Slow``) in ``context``; None when
    the compiled path is off or the driver cannot give its entry points."""
    fns = entry_points(slow.drv) if enabled else None
    if fns is None:
        return None
    layout, variant, sig = slow.layout, slow.variant, slow.signature
    p = Plan()
    p.context, p.device, p.fallback, p.entry_points = context, slow.device, fallback, fns
    p.function, p.block, p.shared = int(slow.function), variant.threads_per_block, variant.shared
    p.max_grid, p.cluster = tuple(slow.max_grid), tuple(slow.cluster)
    p.attrs = _attributes(slow.drv, variant) if slow.use_ex else ()
    p.scratch = slow.scratch
    p.size, p.offsets = layout.size, layout.offsets
    p.slot_codes = _slot_codes(slow)
    p.args = _arguments(slow)
    torch = sys.modules.get("torch")
    p.tensor_type = torch.Tensor if torch is not None else type(None)  # NoneType: never read as a tensor (None is converted)
    p.stream_getter, p.stream_handle, p.bind, p.grid3 = stream_getter(), stream_handle, slow.bind, slow.grid3
    codes = {i: c for i, c, _ in slow.work}

    def convert_at(i: int, value: Any) -> Any:
        return convert(codes[i], sig[i], value, slow.device, slow.checks)

    p.convert, p.fail, p.what = convert_at, _raise, slow.what
    return fastlaunch.Executor(p)


def _raise(code: int, what: str) -> None:
    raise _driver.error(code, what)


def _slot_codes(slow: Any) -> str:
    """The struct code of each runtime slot, as ``Layout.build`` packs it ("s": a 128-byte CUtensorMap)."""
    from ._launcher import param_slots

    types = [t for i in slow.kept for _, t in param_slots(slow.signature[i])]
    return "".join("Q" if t[0] == "*" else TYPES[t].code[-1] for t in types)


def _arguments(slow: Any) -> tuple[tuple[int, int, int, Any, int], ...]:
    """Per positional argument: (action, first slot, slots, torch dtype or None, alignment)."""
    codes = {i: c for i, c, _ in slow.work}
    out, slot = [], 0
    from ._launcher import param_slots

    for i, p in enumerate(slow.signature[: slow.npos]):
        count = len(param_slots(p)) if p.kind == "runtime" else 0
        c = codes.get(i)
        if p.kind != "runtime":
            action = A_CHECK if c is not None else A_NONE
        elif c == PTR:
            action = A_TENSOR if slow.checks else A_RAW_POINTER
        else:
            action = _ACTIONS[c]
        dtype = torch_dtype(p) if action == A_TENSOR else None
        out.append((action, slot, count, dtype, 16 if action == A_TENSOR and p.divisibility == 16 else 1))
        slot += count
    return tuple(out)


def _attributes(drv: Any, variant: Any) -> tuple[tuple[int, tuple[int, ...]], ...]:
    """The launch attributes of ``cuLaunchKernelEx`` as (id, the value's 32-bit words), the ids
    from the bindings' enum."""
    A, out = drv.CUlaunchAttributeID, []
    if variant.is_cluster_launch:
        out.append((int(A.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION), tuple(variant.cluster_dims)))
        spread = int(drv.CUclusterSchedulingPolicy.CU_CLUSTER_SCHEDULING_POLICY_SPREAD)
        out.append((int(A.CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE), (spread,)))
    if variant.cooperative:
        out.append((int(A.CU_LAUNCH_ATTRIBUTE_COOPERATIVE), (1,)))
    if variant.pdl:
        out.append((int(A.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION), (1,)))
    return tuple(out)


def family_key(parts: tuple[tuple[int, int], ...], npos: int, memo: dict[Any, Any], fallback: Callable[..., Any]) -> Any:
    """A family's dispatch key ``key(args)`` (``_choose.fast_key_parts``) made by compiled code, which also
    dispatches ``family(grid, *args)`` from ``memo``; None where the compiled path is not active."""
    return fastlaunch.FamilyKey(parts, npos, memo, fallback) if enabled else None
