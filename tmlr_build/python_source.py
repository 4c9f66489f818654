"""Loading a kernel from a Python file so that the cubin does not depend on where the file lives.

Triton embeds the function's ``co_filename`` in the IR locations, which ``-lineinfo`` carries into
the cubin. Compiling the file under its base name (from inside its directory) keeps the bytes the
same wherever the source tree is checked out.
"""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import linecache
import os
import sys
import traceback
import types
from typing import Any

from .errors import InputError, KernelNotFoundError


class _RelativeSourceFinder(importlib.abc.MetaPathFinder):
    """Imports modules that sit beside the kernel file under relative paths.

    The default path finder makes every file name absolute, which would put the checkout's
    location into the cubin of any kernel that calls a @triton.jit helper from a sibling module.
    """

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> importlib.machinery.ModuleSpec | None:
        rel = os.path.join(*fullname.split("."))
        for candidate, is_package in ((rel + ".py", False), (os.path.join(rel, "__init__.py"), True)):
            if os.path.isfile(candidate):
                loader = importlib.machinery.SourceFileLoader(fullname, candidate)
                return importlib.util.spec_from_file_location(
                    fullname, candidate, loader=loader, submodule_search_locations=[rel] if is_package else None)
        return None


def load_module(base_name: str) -> types.ModuleType:
    """Execute ``base_name`` (in the current directory) as a fresh module."""
    sys.dont_write_bytecode = True  # never leave __pycache__ in the user's source tree
    if not any(isinstance(f, _RelativeSourceFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _RelativeSourceFinder())
    with open(base_name, encoding="utf-8") as f:
        text = f.read()
    stem = os.path.splitext(base_name)[0]
    module = types.ModuleType(stem)
    module.__file__ = base_name
    # Named after the file like Triton's own AOT tool (helper names in the IR carry it), but never
    # replacing a module already imported: a kernel file called ast.py must not break Triton.
    sys.modules.setdefault(stem, module)
    if "" not in sys.path and "." not in sys.path:
        sys.path.insert(0, ".")  # sibling imports, as Triton's own AOT tool allows
    linecache.cache.pop(base_name, None)
    try:
        code = compile(text, base_name, "exec")
        exec(code, module.__dict__)
    except SyntaxError as e:
        raise InputError(f"{base_name}:{e.lineno}: syntax error: {e.msg}; fix the Python source") from None
    except Exception as e:
        tb = traceback.extract_tb(e.__traceback__)
        where = next((f"{fr.filename}:{fr.lineno}" for fr in reversed(tb) if fr.filename == base_name), base_name)
        raise InputError(f"{where}: importing the kernel file failed: {type(e).__name__}: {e}; the file must import "
                         "cleanly with only triton installed") from None
    return module


def _unwrap(obj: Any) -> Any:
    # @triton.autotune / @triton.heuristics wrap the JITFunction in .fn
    from triton.runtime.jit import JITFunction

    seen = 0
    while not isinstance(obj, JITFunction) and hasattr(obj, "fn") and seen < 8:
        obj, seen = obj.fn, seen + 1
    return obj if isinstance(obj, JITFunction) else None


def find_kernel(module: types.ModuleType, name: str, base_name: str) -> Any:
    """The @triton.jit function ``name`` of the module."""
    kernels = sorted(k for k, v in vars(module).items() if _unwrap(v) is not None and not k.startswith("_"))
    fn = _unwrap(getattr(module, name, None))
    if fn is None:
        listing = ", ".join(kernels) if kernels else "none"
        raise KernelNotFoundError(f"{base_name}: no @triton.jit kernel named {name!r}; kernels in this file: {listing}. "
                                  f"Write the input as {base_name}:<kernel_name>")
    return fn
