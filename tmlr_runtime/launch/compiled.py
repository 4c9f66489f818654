"""The compiled per-call path: which path launches, and the C executor (``_fastlaunch.c``) of a plan, which
declines any call it does not finish *before* anything happens, so the Python executor's errors stay the
only ones (docs/contributing.md, "The launch plan")."""
from __future__ import annotations

import contextlib
import functools
import importlib.util
import os
import sys
import weakref
from typing import Any, Callable

from .. import driver
from .convert import convert
from .execute import bind, grid3
from .plan import LaunchPlan
from .streams import stream_handle

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
        if importlib.util.find_spec(f"{__package__}._fastlaunch") is None:
            return None, "the extension tmlr_runtime.launch._fastlaunch is not built; reinstall where a C compiler and Python headers exist"
        return None, f"the extension tmlr_runtime.launch._fastlaunch does not load ({e}); reinstall tmlr"
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
    if not hasattr(drv, "cuGetProcAddress"):  # bindings that cannot say (a test's fake): no exception to pay per load
        return None
    try:
        return _entry_points[drv]
    except (KeyError, TypeError):  # not asked yet; or bindings that take no weak reference: asked each time
        pass
    try:
        found = tuple(_address(drv.cuGetProcAddress(name.encode(), version, _LEGACY_STREAM)) for name, version in _ENTRY_POINTS)
    except Exception:  # a driver older than CUDA 11.3
        found = None
    with contextlib.suppress(TypeError):
        _entry_points[drv] = found
    return found


def _address(result: tuple[Any, ...]) -> int:
    return int(result[1]) if not int(result[0]) else 0


class Extras:
    """What the executor reads besides the plan (see ``executor_new`` in _fastlaunch.c)."""

    __slots__ = ("entry_points", "attrs", "fallback", "convert", "bind", "grid3", "stream_handle", "fail")


def executor(plan: LaunchPlan, fallback: Callable[..., Any]) -> Any:
    """The compiled executor of ``plan``, which runs ``fallback(kernel, grid, *args, **kwargs)`` (the
    Python executor) for the calls it declines; None when the compiled path is off or the driver
    cannot give its entry points."""
    fns = entry_points(plan.drv) if enabled else None
    if fns is None:
        return None
    x = Extras()
    x.entry_points, x.attrs, x.fallback, x.stream_handle, x.fail = fns, (), fallback, stream_handle, _raise
    if plan.use_ex:
        from .attributes import attribute_words

        x.attrs = attribute_words(plan.drv, plan.variant)
    x.bind, x.grid3 = functools.partial(bind, plan), functools.partial(grid3, plan)
    sig, device, checks = plan.signature, plan.device, plan.checks
    x.convert = lambda code, i, value: convert(code, sig[i], value, device, checks)
    try:  # its helpers hold the plan, and so the bindings whose entry points it calls
        return fastlaunch.Executor(plan, x)
    except (TypeError, ValueError, OverflowError):  # a plan it cannot read (bindings whose handles are no ints): Python runs it
        return None


def _raise(code: int, what: str) -> None:
    raise driver.error(code, what)


def family_key(parts: tuple[tuple[int, int], ...], npos: int, memo: dict[Any, Any], fallback: Callable[..., Any]) -> Any:
    """A family's dispatch key ``key(args)`` (``_choose.fast_key_parts``) made by compiled code, which also
    dispatches ``family(grid, *args)`` from ``memo``; None where the compiled path is not active."""
    torch = sys.modules.get("torch")  # its tensors' dtype and data_ptr() are read through their C functions
    return fastlaunch.FamilyKey(parts, npos, memo, fallback, torch.Tensor if torch is not None else type(None)) if enabled else None
