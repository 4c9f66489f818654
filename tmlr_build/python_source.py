"""Loading a kernel from a Python file so that the cubin does not depend on where the file lives.

Triton embeds the function's ``co_filename`` in the IR locations, which ``-lineinfo`` carries into
the cubin. Compiling the file under its base name (from inside its directory) keeps the bytes the
same wherever the source tree is checked out.
"""
from __future__ import annotations

import linecache
import os
import sys
import traceback
import types
from typing import Any

from .errors import InputError, KernelNotFoundError


def load_module(base_name: str) -> types.ModuleType:
    """Execute ``base_name`` (in the current directory) as a fresh module."""
    with open(base_name, encoding="utf-8") as f:
        text = f.read()
    stem = os.path.splitext(base_name)[0]
    module = types.ModuleType(stem)
    module.__file__ = base_name
    sys.modules[stem] = module
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
