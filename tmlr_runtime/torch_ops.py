"""tmlr kernels as torch custom operators: eager, ``torch.compile(fullgraph=True)``, CUDA graphs, ``torch.export``
(the recipe: docs/torch.md). :func:`custom_op` registers a launch function and derives its fake implementation by
running it on FakeTensors with every :func:`wrap`-ped kernel call skipped. This module imports torch;
``import tmlr_runtime`` alone never does."""
from __future__ import annotations

import functools
from typing import Any, Callable, Iterable

import torch

from . import ArgumentError, Kernel, TmlrError
from .launch.faking import state as _state  # the faking flag: its one home

__all__ = ["OpKernel", "TorchOpError", "custom_op", "wrap"]


class TorchOpError(TmlrError):
    """A launch function cannot become a torch custom operator, or its fake implementation failed."""

    def __init__(self, message: str, op: str) -> None:
        super().__init__(message)
        self.op = op


class OpKernel:
    """A :class:`~tmlr_runtime.Kernel` or :class:`~tmlr_runtime.KernelFamily` for a launch function of
    :func:`custom_op`: called like the kernel (``k(grid, *args)``, ``k[grid](*args)``), it launches,
    except while torch derives the op's fake implementation, when it does nothing. Other attributes
    (``name``, ``signature``, ...) are the kernel's."""

    __slots__ = ("kernel",)

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel

    def __call__(self, grid: Any, *args: Any, **kwargs: Any) -> None:
        if _state.faking:
            return None
        return self.kernel(grid, *args, **kwargs)

    def __getitem__(self, grid: Any) -> Callable[..., None]:
        return functools.partial(self.__call__, grid)

    def __getattr__(self, name: str) -> Any:
        if name == "kernel":  # not set yet (copy, pickle): no recursion
            raise AttributeError(name)
        return getattr(self.kernel, name)

    def __repr__(self) -> str:
        return f"torch_ops.wrap({self.kernel!r})"


def wrap(kernel: Any) -> OpKernel:
    """``kernel`` (from ``tr.Kernel.load``), to be called inside a launch function of :func:`custom_op`."""
    from . import KernelFamily

    if isinstance(kernel, OpKernel):
        return kernel
    if not isinstance(kernel, (Kernel, KernelFamily)):
        raise ArgumentError(f"torch_ops.wrap takes a tmlr_runtime.Kernel or KernelFamily, got {type(kernel).__name__}; "
                            "pass what tr.Kernel.load(dir) returns", "kernel")
    return OpKernel(kernel)


def custom_op(name: str, launch: Callable[..., Any] | None = None, /, *, mutates_args: str | Iterable[str],
              fake: Callable[..., Any] | None = None, schema: str | None = None,
              device_types: str | Iterable[str] | None = None) -> Any:
    """Make ``launch`` (a function that allocates outputs and launches tmlr kernels) the torch custom operator
    ``name`` ("namespace::op") as ``torch.library.custom_op`` does, with its fake implementation (``fake``, else
    ``launch`` run on FakeTensors with :func:`wrap`-ped kernel calls skipped, and the launches ``tmlr_runtime.serve``
    serves); a decorator, or called with ``launch``.
    ``mutates_args`` names every tensor argument a kernel writes in place (docs/torch.md). Outputs must be new
    tensors, never an input or a view of one. Returns torch's ``CustomOpDef``."""
    if not hasattr(torch.library, "custom_op"):
        raise TorchOpError(f"torch_ops needs torch >= 2.4 (torch.library.custom_op); this is torch {torch.__version__}: "
                           "upgrade torch", name)

    def register(fn: Callable[..., Any]) -> Any:
        try:
            op = torch.library.custom_op(name, fn, mutates_args=mutates_args, schema=schema, device_types=device_types)
            op.register_fake(fake if fake is not None else _derived_fake(name, fn))
        except (RuntimeError, TypeError, ValueError) as e:
            raise TorchOpError(f"torch refused the custom op {name!r}: {e}; name it 'namespace::op', annotate every "
                               "parameter and the return (torch.Tensor, int, float, ...), and list in mutates_args "
                               "only parameter names", name) from e
        return op

    return register if launch is None else register(launch)


class _NoAddresses(torch.overrides.TorchFunctionMode):
    """Refuses ``Tensor.data_ptr()`` in the fake run: a FakeTensor's gives 0 (with a warning once per
    process), so a kernel launched on FakeTensors would run on address 0. tmlr's launcher reads
    addresses before it launches, so refusing the read stops the launch before the driver sees it."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name

    def __torch_function__(self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None) -> Any:
        if func is torch.Tensor.data_ptr:
            raise TorchOpError(f"{self.name}: the launch function read a tensor's address (data_ptr) while torch ran it on "
                               "FakeTensors to derive the op's fake implementation; there it may read shapes, dtypes and "
                               "strides but no addresses: call each tmlr kernel through torch_ops.wrap(tr.Kernel.load(...)), "
                               "which skips the launch, and no data_ptr(); or pass fake= to custom_op", self.name)
        return func(*args, **(kwargs or {}))


def _derived_fake(name: str, launch: Callable[..., Any]) -> Callable[..., Any]:
    """``launch`` on FakeTensors with wrapped kernels doing nothing: what torch calls for the outputs' metadata."""
    def fake(*args: Any, **kwargs: Any) -> Any:
        before = _state.faking
        _state.faking = True
        try:
            with _NoAddresses(name):
                return launch(*args, **kwargs)
        except TorchOpError:
            raise
        except TmlrError as e:  # an unwrapped kernel: its launcher reports the refused address as its own error
            raise TorchOpError(f"{name}: the launch function launched a tmlr kernel on the FakeTensors torch passes it to "
                               f"derive the op's fake implementation ({type(e).__name__}: {e}); call each kernel through "
                               "torch_ops.wrap(tr.Kernel.load(...)), which skips the launch there, or pass fake= to "
                               "custom_op", name) from e
        finally:
            _state.faking = before

    fake.__name__ = f"{getattr(launch, '__name__', 'launch')}_fake"
    return fake
