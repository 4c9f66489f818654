"""The recorder: what each launch of a ``@triton.jit`` kernel tells the spec (runs beside Triton, in the workload).

:meth:`Recorder.observe` gets every ``JITFunction.run`` call (tmlr_build/record/hook.py patches it), so it sees
through ``@triton.autotune`` and ``@triton.heuristics``: the arguments come with the config's and the heuristics'
values filled in. It derives the call's specialization as Triton's JIT does (builder/jit_specialize.py, the one
home of that rule), leaves out what a config or a heuristic sets (a family builds those per variant) and adds the
launch to the kernel's family (record/family.py). :meth:`Recorder.autotuned` gets every ``Autotuner.run`` call
after it returned: the config Triton chose for the call's autotune key. Whenever the spec learns something new,
the recorder merges it into the spec file (so a server stopped by a signal loses nothing); nothing here ever
raises into the workload: a problem becomes a "not_recorded" report.
"""
from __future__ import annotations

import json
import os
import site
import sys
import threading
from typing import Any

from tmlr_runtime.artifact.family_index import Config
from tmlr_runtime.family.choose import autotune_key as runtime_autotune_key
from tmlr_runtime.objects import TritonObject, parse as parse_object, unwrap

from ..builder.jit_specialize import specialize
from ..common.arch import supported_capabilities
from ..common.errors import BuildError
from . import spec_doc, spec_file
from .family import Family
from .spec_doc import KernelSeen


class NotRecordable(Exception):
    """Why a kernel (or one call of it) cannot go into the spec; reported, never raised into the workload."""


class Recorder:
    """Records launches into the spec file ``path``, merging with what it holds; ``quiet``: print nothing (the
    ``tmlr-build record`` command reports for all its processes at the end)."""

    def __init__(self, path: str, quiet: bool = False) -> None:
        self.path = os.path.abspath(path)
        self.folder = os.path.dirname(self.path)
        self.quiet = quiet
        self.kernels: dict[int, KernelSeen | None] = {}  # id(JITFunction) -> its record; None: not recordable
        self._keep: list[Any] = []  # the JITFunctions of self.kernels (their ids stay theirs)
        self._facts: dict[int, dict[str, Any]] = {}
        self._seen: set[Any] = set()  # launches already taken (a cheap repeat test)
        self.not_recorded: list[dict[str, str]] = []
        self.arch: int | None = None
        self.error: str | None = None  # why the spec file could not be written (said once)
        self._lock = threading.RLock()

    # ---- the two hooks -------------------------------------------------------------------------------------
    def observe(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """One ``JITFunction.run(*args, **kwargs)`` call (``grid``/``warmup`` left out)."""
        self._safely(fn, "a call", self._take, fn, args, kwargs)

    def autotuned(self, tuner: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """One ``Autotuner.run(*args, **kwargs)`` call that returned: record the config Triton chose for its key."""
        self._safely(_jit_of(tuner), "an autotuned call", self._choice, tuner, args, kwargs)

    def _safely(self, fn: Any, what: str, step: Any, *args: Any) -> None:
        """``step(*args)``, then write when it learnt something; whatever it meets is reported, never raised into
        the workload."""
        try:
            with self._lock:
                if step(*args):
                    self.write()
        except NotRecordable as e:
            self._report(fn, str(e))
        except Exception as e:  # noqa: BLE001 - the workload goes on whatever the recorder meets
            self._report(fn, f"the recorder failed on {what}: {type(e).__name__}: {e}")

    # ---- launches ------------------------------------------------------------------------------------------
    def _take(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        seen = self._kernel(fn)
        if seen is None:
            return False
        facts = self._facts[id(fn)]
        try:
            spec = specialize(fn, args, kwargs)
        except BuildError as e:
            self._report(fn, f"a call's arguments: {e}")
            return False
        quick = (id(fn), spec.entries, repr(sorted(spec.options.items())),
                 tuple(repr(v) for n, v in zip(spec.names, spec.values) if n in facts["heuristics"]))
        if quick in self._seen:
            return False
        self._seen.add(quick)
        entries, constexprs, heuristics = [], {}, {}
        for p, name, entry, value in zip(fn.params, spec.names, spec.entries, spec.values):
            value = unwrap(value)
            if name in facts["heuristics"]:
                heuristics[name] = _json_value(name, value, "heuristic")
            elif name in facts["config_names"]:
                continue  # a config's kwargs: per variant
            elif p.is_constexpr:
                constexprs[name] = _constexpr_value(name, value)
            else:
                entries.append(entry)
        options = {k: v for k, v in spec.options.items() if k not in facts["config_options"]}
        _json_value("launch options", options, "options")
        self._device_arch()
        return seen.add(Family.of_launch(entries, options, constexprs, heuristics))

    def _kernel(self, fn: Any) -> KernelSeen | None:
        """The record of ``fn`` (made at its first call); None, reported once, when it cannot be recorded."""
        if id(fn) in self.kernels:
            return self.kernels[id(fn)]
        self._keep.append(fn)
        try:
            seen, facts = _locate(fn, self.folder)
        except NotRecordable as e:
            self.kernels[id(fn)] = None
            self._report(fn, str(e))
            return None
        self.kernels[id(fn)], self._facts[id(fn)] = seen, facts
        if seen.module == "__main__" and not self.quiet:
            print(f"tmlr-build record: {seen.kernel} is defined in the script {seen.source}: tmlr-build imports that "
                  "file to build it, so keep the script's work under `if __name__ == \"__main__\":`", file=sys.stderr)
        return seen

    # ---- autotune choices ----------------------------------------------------------------------------------
    def _choice(self, tuner: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        best = getattr(tuner, "best_config", None)
        fn = _jit_of(tuner)
        if best is None or len(tuner.configs) < 2 or fn is None:
            return False  # one config: nothing is tuned
        seen = self._kernel(fn)
        if seen is None:
            return False
        device = self._device_arch()
        if device is None:
            self._report(fn, "autotune choices: the device's name is not known (no GPU launch?), so they are not "
                             "recorded")
            return False
        key = _json_value("the autotune key", autotune_key(tuner, args, kwargs), "key")
        choice = {"device": device, "key": key, "config": _config(best)}
        ident = json.dumps([device, key])
        if seen.tuning.get(ident) == choice:
            return False
        seen.tuning[ident] = choice
        return True

    def _device_arch(self) -> str | None:
        """The current device's name (as the runtime keys tuning tables by it); sets :attr:`arch` on the way."""
        found = device()
        if found is not None and found[1] in supported_capabilities():
            self.arch = found[1]
        return None if found is None else found[0]

    # ---- the spec file -------------------------------------------------------------------------------------
    def write(self) -> None:
        """Merge what this recorder saw into the spec file (under its lock; nothing raised into the workload)."""
        with self._lock:
            kernels = [k for k in self.kernels.values() if k is not None]
            try:
                with spec_file.locked(self.path):
                    doc = spec_file.read(self.path)
                    if doc is None and not kernels and not self.not_recorded:
                        return  # a process that launched nothing makes no file
                    new = spec_doc.merge(doc, kernels, self.not_recorded, self.arch)
                    if new != doc:
                        spec_file.write(self.path, new)
            except Exception as e:  # noqa: BLE001 - never into the workload; said even when quiet (nothing else would)
                if self.error is None:
                    what = str(e) if isinstance(e, (BuildError, OSError)) else f"{type(e).__name__}: {e}"
                    print(f"tmlr-build record: nothing written to {self.path}: {what}", file=sys.stderr)
                self.error = str(e)

    def _report(self, fn: Any, reason: str) -> None:
        item = {"kernel": _label(fn), "reason": reason}
        code = getattr(getattr(fn, "fn", None), "__code__", None)
        if code is not None:
            item["file"] = code.co_filename
        if item in self.not_recorded:
            return
        self.not_recorded.append(item)
        if not self.quiet:
            print(f"tmlr-build record: not recorded: {item['kernel']}: {reason}", file=sys.stderr)
        self.write()


def device() -> tuple[str, int] | None:
    """(name, capability) of the device Triton launches on, as tmlr_runtime's driver names it; None without one."""
    try:
        from triton.runtime import driver

        from tmlr_runtime import driver as cuda

        info = cuda.device_info(int(driver.active.get_current_device()))
        return info.name, info.capability
    except Exception:  # noqa: BLE001 - no GPU, no driver: no name
        return None


def autotune_key(tuner: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
    """The autotune key of a call as the tmlr runtime makes it (tmlr_runtime.family.choose.autotune_key)."""
    from ..compile.triton_api import current

    position = {name: i for i, name in enumerate(tuner.arg_names)}
    return list(runtime_autotune_key(tuner.keys, position, args, kwargs, current().dtype_in_key))


def _config(config: Any) -> dict[str, Any]:
    """A triton.Config as a spec config object (the family index's form)."""
    from ..compile.triton_api import current

    f = current().config_fields(config)
    out = Config(f["kwargs"], f["num_warps"], f["num_stages"], f["num_ctas"], f["maxnreg"]).to_json()
    return _json_value("an autotune config", out, "config")


def _json_value(name: str, value: Any, what: str) -> Any:
    try:
        if json.loads(json.dumps(value)) == value and not isinstance(value, tuple):
            return value
    except (TypeError, ValueError):
        pass
    raise NotRecordable(f"{what} {name}={value!r} cannot be written in a spec (numbers, booleans, strings, null)")


def _constexpr_value(name: str, value: Any) -> Any:
    """A constexpr's value as a spec writes it: a Triton object (a dtype, a @triton.jit function; jit_specialize
    gives it as the build imports it) by its text, ``"tl.float16"`` / ``"module:qualname"``, which the spec reader
    reads back as the object (common/signature.py ``spec_constexpr``); a string that reads so is no string there."""
    if type(value) is TritonObject:
        return repr(value)  # as a signature entry writes it (tmlr_runtime/objects.py)
    if isinstance(value, str) and parse_object(value) is not None:
        raise NotRecordable(f"constexpr {name}={value!r}: a spec reads this string as the Triton object it names, not "
                            "as a string; pass the object itself, or a string that names none")
    return _json_value(name, value, "constexpr")


def _label(fn: Any) -> str:
    py = getattr(fn, "fn", fn)
    return f"{getattr(py, '__module__', '?')}:{getattr(py, '__qualname__', getattr(py, '__name__', '?'))}"


def _jit_of(obj: Any) -> Any:
    from ..compile.python_source import unwrap_kernel

    return unwrap_kernel(obj)


def _locate(fn: Any, folder: str) -> tuple[KernelSeen, dict[str, Any]]:
    """Where the spec finds ``fn`` (module form or a path relative to the spec's ``folder``), and what its wrappers
    set: NotRecordable when tmlr-build could not import it by name."""
    from ..compile.triton_api import current

    py = fn.fn
    module, qualname, name = py.__module__, py.__qualname__, py.__name__
    file = os.path.abspath(py.__code__.co_filename)
    if not os.path.isfile(file):
        raise NotRecordable(f"defined outside a file ({py.__code__.co_filename}: exec'd code or a notebook cell); "
                            "tmlr-build builds a kernel from its .py file: move it into a module")
    if qualname != name:
        raise NotRecordable(f"defined inside a function or class ({qualname}); tmlr-build imports a kernel by its "
                            "module-level name: define it at the top level of its module")
    obj = vars(sys.modules[module]).get(name) if module in sys.modules else None
    if obj is None or _jit_of(obj) is not fn:
        raise NotRecordable(f"{module}.{name} is not this kernel (it was renamed or redefined); tmlr-build imports a "
                            "kernel by its module-level name")
    facts: dict[str, Any] = {"heuristics": set(), "config_names": set(), "config_options": set()}
    configs = None
    for kind, wrapper in current().wrappers(obj):
        if kind == "heuristics":
            facts["heuristics"] |= set(current().heuristic_values(wrapper))
        elif len(wrapper.configs) > 0:
            configs = [_config(c) for c in wrapper.configs]
            facts["config_names"] |= {k for c in wrapper.configs for k in c.kwargs}
            facts["config_options"] |= {k for c in wrapper.configs for k in c.all_kwargs() if k not in c.kwargs}
    source = module if _module_form(module, file, folder) else os.path.relpath(file, folder)
    return KernelSeen(source, name, module, qualname, configs), facts


def _module_form(module: str, file: str, folder: str) -> bool:
    """Whether the spec names the kernel by its module: one tmlr-build finds by that name (from the spec's folder,
    or installed: in site-packages); else by its file, which any build finds (a package member is imported as one)."""
    if module == "__main__":
        return False
    rel = os.path.join(*module.split("."))
    for tail in (rel + ".py", os.path.join(rel, "__init__.py")):
        if file.endswith(os.sep + tail):
            root = os.path.realpath(file[:-len(tail) - 1])
            sites = [*site.getsitepackages(), site.getusersitepackages(), folder]
            return any(os.path.realpath(s) == root for s in sites)
    return False
