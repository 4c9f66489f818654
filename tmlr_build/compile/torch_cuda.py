"""torch.cuda answering as a device profile while a compile worker imports and builds a kernel file.

Why: kernel libraries ask torch at import which GPU they run on (fla's ``torch.cuda.get_device_capability()``,
its shared-memory probe, gemlite's ``get_device_name()``) and pick configs from the answer. A build has no GPU
(and on a machine with one must not depend on it), so torch.cuda's device questions are answered from the
build's profile (common/devices.py), and whatever else would reach the CUDA runtime (``mem_get_info``,
``synchronize``, a stream) fails with a :class:`DeviceQueryError` that names it. Libraries also make small tensors on
the GPU at import (gemlite's lookup tables, one per device): such a tensor is made on torch's meta device instead
(its shape and dtype, no memory and no values), which is all a build can use of it; code that reads its values at
import fails, and the import error says why.

torch is patched only once the kernel file imports it (a meta path hook on ``torch.cuda``), so a kernel that
never imports torch costs no torch import; :meth:`TorchCudaStandIn.restore` puts torch.cuda back. A function of
the stand-in that a module kept (``from torch.cuda import get_device_name``) calls torch's own once restored.
"""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types
from typing import Any, Callable, NoReturn

from ..common.devices import DeviceProfile

# the torch.cuda functions the stand-in answers; every other one that needs the CUDA runtime goes through _lazy_init
ANSWERED = ("is_available", "device_count", "current_device", "get_device_name", "get_device_capability",
            "get_device_properties")


class DeviceQueryError(RuntimeError):
    """A device question the build's profile does not answer (the kernel file asked it while being built)."""


def refuse(what: str, profile: DeviceProfile, why: str = "") -> NoReturn:
    raise DeviceQueryError(
        f"{what} was asked while tmlr-build imported the kernel file, and the device profile {profile.key} does not "
        f"answer it{why}: a build runs no GPU code and answers only what a GPU's properties say (torch.cuda's "
        f"{', '.join(ANSWERED)}; Triton's get_current_target and utils.get_device_properties) - move that call out of "
        "import time, into the code that launches")


class DeviceProperties:
    """What torch.cuda.get_device_properties() returns, for a profile: its attributes, and for any other an error
    naming it."""

    def __init__(self, profile: DeviceProfile) -> None:
        self._profile = profile
        for name, value in profile.torch_properties().items():
            if value is not None:
                setattr(self, name, value)

    def __getattr__(self, name: str) -> NoReturn:  # only called for attributes the profile did not set
        if name.startswith("__"):
            raise AttributeError(name)
        refuse(f"torch.cuda.get_device_properties().{name}", self._profile)

    def __repr__(self) -> str:
        p = self._profile
        return (f"_CudaDeviceProperties(name='{p.name}', major={p.major}, minor={p.minor}, "
                f"total_memory={p.total_memory >> 20}MB, multi_processor_count={p.multi_processor_count}) "
                f"[tmlr-build device profile {p.key}]")


class TorchCudaStandIn:
    """Patches torch.cuda (now, or when it is first imported) to answer as ``profile``; ``answered`` collects the
    names of the questions answered."""

    def __init__(self, profile: DeviceProfile) -> None:
        self.profile = profile
        self.active = True
        self.answered: set[str] = set()
        self._originals: dict[str, Any] = {}
        self._module: types.ModuleType | None = None
        self._hook = _AfterImport("torch.cuda", self._patch)
        self._meta: Any = None  # the torch function mode that makes GPU tensors on the meta device, once torch is in
        self._torch_hook = _AfterImport("torch", self._make_gpu_tensors_meta)
        if "torch.cuda" in sys.modules:
            self._patch(sys.modules["torch.cuda"])
        else:
            sys.meta_path.insert(0, self._hook)
        if "torch" in sys.modules:
            self._make_gpu_tensors_meta(sys.modules["torch"])
        else:
            sys.meta_path.insert(0, self._torch_hook)

    def restore(self) -> None:
        """torch.cuda as it was (and no hook); the stand-in's functions call torch's own from now on."""
        self.active = False
        for hook in (self._hook, self._torch_hook):
            if hook in sys.meta_path:
                sys.meta_path.remove(hook)
        for name, original in self._originals.items():
            setattr(self._module, name, original)
        if self._meta is not None:
            self._meta.__exit__(None, None, None)
            self._meta = None

    def _make_gpu_tensors_meta(self, torch: types.ModuleType) -> None:
        """From now until :meth:`restore`, a tensor asked for on the GPU is made on the meta device (entered once
        torch has finished importing: its function modes need the whole of torch)."""
        if self._torch_hook in sys.meta_path:
            sys.meta_path.remove(self._torch_hook)
        self._meta = _gpu_tensors_on_meta(torch)
        self._meta.__enter__()

    def _patch(self, cuda: types.ModuleType) -> None:
        if self._hook in sys.meta_path:
            sys.meta_path.remove(self._hook)
        self._module = cuda
        props = DeviceProperties(self.profile)
        answers: dict[str, Callable[..., Any]] = {
            "is_available": lambda: True,
            "device_count": lambda: 1,
            "current_device": lambda: 0,
            "get_device_properties": lambda device=None: self._device(device, props),
            "get_device_capability": lambda device=None: self._device(device, self.profile.capability),
            "get_device_name": lambda device=None: self._device(device, self.profile.name),
        }
        for name, answer in answers.items():
            self._originals[name] = getattr(cuda, name)
            setattr(cuda, name, self._answering(name, answer, self._originals[name]))
        self._originals["_lazy_init"] = cuda._lazy_init
        setattr(cuda, "_lazy_init", self._guarding(cuda._lazy_init))

    def _answering(self, name: str, answer: Callable[..., Any], original: Callable[..., Any]) -> Callable[..., Any]:
        def stand_in(*args: Any, **kwargs: Any) -> Any:
            if not self.active:
                return original(*args, **kwargs)
            self.answered.add(f"torch.cuda.{name}")
            return answer(*args, **kwargs)
        stand_in.__name__ = stand_in.__qualname__ = name
        return stand_in

    def _guarding(self, original: Callable[[], None]) -> Callable[[], None]:
        def _lazy_init() -> None:  # what reaches the CUDA runtime: mem_get_info, synchronize, a stream ...
            if not self.active:
                return original()
            refuse(_torch_caller(), self.profile)
        return _lazy_init

    def _device(self, device: Any, answer: Any) -> Any:
        if _device_index(device) not in (None, 0):
            refuse(f"device {device!r}", self.profile, " (the build answers as one GPU, device 0)")
        return answer


def _gpu_tensors_on_meta(torch: types.ModuleType) -> Any:
    """A torch function mode under which factory functions given a CUDA ``device``, ``Tensor.to(<cuda>)`` and
    ``Tensor.cuda()`` make their tensor on the meta device."""
    from torch.overrides import TorchFunctionMode

    class GpuTensorsOnMeta(TorchFunctionMode):  # type: ignore[misc]
        def __torch_function__(self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None) -> Any:
            kwargs = kwargs or {}
            if _is_gpu(kwargs.get("device")):
                kwargs = {**kwargs, "device": "meta"}
            elif func is torch.Tensor.cuda:
                return args[0].to("meta")
            elif func is torch.Tensor.to and len(args) > 1 and _is_gpu(args[1]):
                args = (args[0], "meta", *args[2:])
            return func(*args, **kwargs)

    return GpuTensorsOnMeta()


def _is_gpu(device: Any) -> bool:
    """Whether torch takes ``device`` (a factory's ``device=`` or ``Tensor.to``'s first argument) for a CUDA device."""
    if isinstance(device, str):
        return device.split(":")[0] == "cuda"
    if isinstance(device, int) and not isinstance(device, bool):
        return True  # torch reads a bare index as a CUDA device
    return getattr(device, "type", None) == "cuda"


def _device_index(device: Any) -> int | None:
    """The index torch.cuda takes ``device`` for: None (the current one), 0, ...; -1 for what is no CUDA device."""
    if device is None or isinstance(device, int):
        return device
    if isinstance(device, str):
        kind, _, index = device.partition(":")
        return int(index or 0) if kind == "cuda" and (index or "0").isdigit() else -1
    return getattr(device, "index", None) if getattr(device, "type", None) == "cuda" else -1


def _torch_caller() -> str:
    """The outermost torch.cuda function on the stack (``torch.cuda.mem_get_info``), else the CUDA runtime."""
    frame, found = sys._getframe(2), None
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module == "torch.cuda" or module.startswith("torch.cuda."):
            found = f"{module}.{frame.f_code.co_name}"
        elif found is not None:
            break
        frame = frame.f_back
    return found or "the CUDA runtime (a torch call that needs a GPU)"


class _AfterImport(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Runs ``then(module)`` right after module ``name`` is first imported (found by the finders after this one)."""

    def __init__(self, name: str, then: Callable[[types.ModuleType], None]) -> None:
        self.name, self.then = name, then
        self._loader: Any = None

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.name:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return None
        self._loader, spec.loader = spec.loader, self
        return spec

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        module.__loader__ = module.__spec__.loader = self._loader  # inspect and linecache read the source through it
        self._loader.exec_module(module)
        self.then(module)
