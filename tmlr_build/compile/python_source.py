"""Loading a kernel from a Python file so that the cubin does not depend on where the file lives.

Triton embeds the function's ``co_filename`` in the IR locations, which ``-lineinfo`` carries into
the cubin. Compiling a file under its base name (from inside its directory), or a package member
under its path from the package root's parent (``pkg/ops/norm.py``), keeps the bytes the same
wherever the source tree is checked out.
"""
from __future__ import annotations

import functools
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import linecache
import os
import sys
import traceback
import types
from typing import Any

from tmlr_runtime import records
from tmlr_runtime.abi import TL_DTYPES
from tmlr_runtime.objects import DTYPE, JIT_FUNCTION, TritonObject, of

from ..common.errors import InputError, KernelNotFoundError, SignatureError
from ..common.jobs import Job
from .diagnostics import chain
from .torch_cuda import DeviceQueryError


class _RelativeSourceFinder(importlib.abc.MetaPathFinder):
    """Imports the user's modules under paths relative to the current directory.

    The default path finder makes every file name absolute, which would put the checkout's
    location into the cubin of any kernel that calls a @triton.jit helper from a sibling module.
    ``roots``: (relative folder, the one top-level package to take from it or None for any name), in
    order. For a package member: the package root's parent, for that package only (it may be
    site-packages, whose other packages must import as usual), then the member's own folder, so that
    a sibling imported without the package prefix is still found.
    """

    def __init__(self, roots: list[tuple[str, str | None]]) -> None:
        self.roots = roots

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> importlib.machinery.ModuleSpec | None:
        for root, only in self.roots:
            if only is not None and fullname.split(".")[0] != only:
                continue
            rel = os.path.join(root, *fullname.split("."))
            for candidate, is_package in ((rel + ".py", False), (os.path.join(rel, "__init__.py"), True)):
                if os.path.isfile(candidate):
                    loader = importlib.machinery.SourceFileLoader(fullname, candidate)
                    return importlib.util.spec_from_file_location(
                        fullname, candidate, loader=loader, submodule_search_locations=[rel] if is_package else None)
        return None


def load_module(file_name: str, module_name: str | None) -> types.ModuleType:
    """Import the kernel file ``file_name`` (relative to the current directory, which is the package
    root's parent for a package member ``module_name``, else the file's own directory), inside
    build_driver.standing_in (which answers the file's device questions)."""
    sys.dont_write_bytecode = True  # never leave __pycache__ in the user's source tree
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _RelativeSourceFinder)]
    roots: list[tuple[str, str | None]] = [("", None)]
    if module_name is not None:
        roots = [("", module_name.split(".")[0]), (os.path.dirname(file_name), None)]
    sys.meta_path.insert(0, _RelativeSourceFinder(roots))
    if "" not in sys.path and "." not in sys.path:
        sys.path.insert(0, ".")  # sibling imports, as Triton's own AOT tool allows
    try:
        if module_name is not None:
            return importlib.import_module(module_name)  # runs the package's __init__ files, as Python would
        return _run_file(file_name)
    except SyntaxError as e:
        raise InputError(f"{e.filename or file_name}:{e.lineno}: syntax error: {e.msg}; fix the Python source") from None
    except Exception as e:
        raise InputError(_import_failure(file_name, e)) from None


def _run_file(file_name: str) -> types.ModuleType:
    """A file outside any package: executed as a fresh module named after the file."""
    with open(file_name, encoding="utf-8") as f:
        text = f.read()
    stem = os.path.splitext(os.path.basename(file_name))[0]
    module = types.ModuleType(stem)
    module.__file__ = file_name
    # Named after the file like Triton's own AOT tool (helper names in the IR carry it), but never
    # replacing a module already imported: a kernel file called ast.py must not break Triton.
    sys.modules.setdefault(stem, module)
    linecache.cache.pop(file_name, None)
    exec(compile(text, file_name, "exec"), module.__dict__)
    return module


def _import_failure(file_name: str, e: Exception) -> str:
    # The innermost frame of the user's own files: those have relative names (see the finder).
    tb = traceback.extract_tb(e.__traceback__)
    where = next((f"{fr.filename}:{fr.lineno}" for fr in reversed(tb)
                  if not os.path.isabs(fr.filename) and not fr.filename.startswith("<")), file_name)
    failed = f"{where}: importing the kernel file failed"
    if isinstance(e, ImportError) and "no known parent package" in str(e):
        return (f"{failed}: {type(e).__name__}: {e}; {file_name} uses a relative import but its folder has no "
                "__init__.py, so it is not part of a package: add the package's __init__.py files, or name the kernel "
                "as a module (pkg.mod:kernel) from the folder that holds the package")
    if isinstance(e, ModuleNotFoundError) and e.name:
        return f"{failed}: {_missing_module(e.name)}"
    refused = next((c for c in [e, *chain(e, suppressed=True)] if isinstance(c, DeviceQueryError)), None)
    if refused is not None:
        return f"{failed}: {refused}"
    if "meta tensor" in str(e):  # torch's words for reading what torch_cuda.py made on the meta device
        return (f"{failed}: {type(e).__name__}: {e}; a tensor the file makes on the GPU at import is made on torch's "
                "meta device while tmlr-build imports it (its shape and dtype, no values): move the code that reads its "
                "values out of import time, into the code that launches")
    return (f"{failed}: {type(e).__name__}: {e}; the file (and what it imports) must import on this machine as it "
            "is, without a GPU: tmlr-build answers only the device questions its device profile knows")


def _missing_module(name: str) -> str:
    """What to install for ``ModuleNotFoundError(name=name)``: the package, or another version of it."""
    top = name.split(".")[0]
    if top != name and importlib.util.find_spec(top) is not None:
        return (f"No module named {name!r}: the installed {top} has no {name}; the kernel's library needs another "
                f"version of {top} (see its requirements)")
    return (f"No module named {name!r}: the kernel file or a module it imports needs the package {top}, which is not "
            f"installed where tmlr-build runs; install it (pip install {top}, or the name its project gives) and build "
            "again")


def unwrap_kernel(obj: Any) -> Any:
    """The @triton.jit function of a kernel object (under @triton.autotune / @triton.heuristics too), or None."""
    # @triton.autotune / @triton.heuristics wrap the JITFunction in .fn
    from triton.runtime.jit import JITFunction

    seen = 0
    while not isinstance(obj, JITFunction) and hasattr(obj, "fn") and seen < 8:
        obj, seen = obj.fn, seen + 1
    return obj if isinstance(obj, JITFunction) else None


def load_job_kernel(job: Job) -> tuple[types.ModuleType, Any]:
    """The module of a Python ``job`` and its @triton.jit kernel, imported from the job's import root
    (this process stays in that folder, as the compile needs)."""
    name = job.source_name
    if not job.kernel:
        raise SignatureError(f"{name}: name the kernel as {name}:<kernel_name>")
    os.chdir(job.import_root)
    module = load_module(name, job.module)
    return module, find_kernel(module, job.kernel, name)


def with_triton_objects(params: list[Any], module: types.ModuleType, label: str) -> list[Any]:
    """``params`` with each constexpr that is a recorded Triton object (tmlr_runtime/objects.py) made the real one, as
    Triton takes it: the triton.language dtype, or the @triton.jit function imported by its module:qualname."""
    return [records.replace(p, value=_real(p.name, p.value, module, label)) if type(p.value) is TritonObject else p
            for p in params]


def _real(name: str, value: TritonObject, module: types.ModuleType, label: str) -> Any:
    if value.object == DTYPE:
        import triton.language as tl

        return getattr(tl, TL_DTYPES[value.text][0])
    module_name, _, qualname = value.text.partition(":")
    fix = (f"write a @triton.jit function as module:qualname, where it is defined (this kernel's module is "
           f"{module.__name__}: {module.__name__}:<function>)")
    try:
        home = module if module_name == module.__name__ else importlib.import_module(module_name)
        found = functools.reduce(getattr, qualname.split("."), home)
    except Exception as e:  # ImportError, AttributeError, or the module's own failure
        raise SignatureError(f"{label}: constexpr {name} = {value.text}: {type(e).__name__}: {e}; {fix}") from None
    text = of(found)
    if text is None or text.object != JIT_FUNCTION:
        raise SignatureError(f"{label}: constexpr {name} = {value.text} is a {type(found).__name__}, not a @triton.jit function; {fix}")
    if text != value:  # one imported from elsewhere: a call passes it as where it is defined
        raise SignatureError(f"{label}: constexpr {name} = {value.text} is {text.text}, defined there; write {text.text}")
    return found


def find_kernel(module: types.ModuleType, name: str, source_name: str) -> Any:
    """The @triton.jit function ``name`` of the module (also under @triton.autotune / @triton.heuristics)."""
    kernels = sorted(k for k, v in vars(module).items() if unwrap_kernel(v) is not None and not k.startswith("_"))
    fn = unwrap_kernel(getattr(module, name, None))
    if fn is None:
        listing = ", ".join(kernels) if kernels else "none"
        raise KernelNotFoundError(f"{source_name}: no @triton.jit kernel named {name!r}; kernels in this file: {listing}. "
                                  f"Write the input as {source_name}:<kernel_name>")
    return fn
